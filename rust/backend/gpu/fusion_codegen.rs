//! WGSL for the fusion layer (fusion.rs): one kernel evaluates the DAGs of a
//! group of pending results of one size and writes each of them. The math is
//! `unary_op` / `binary_op` of shaders/elementwise.wgsl (the eager kernels'
//! functions, prepended as a library), so fused and eager results agree.
//!
//! Each invocation handles four consecutive elements (vec4 stores; vec4
//! loads of contiguous leaves that start at a multiple of 4) as float32 (a
//! float16 buffer is read and written as f16, converted in registers) in a
//! grid-stride loop over a capped grid. Lanes past the end compute garbage
//! that is written only into the output buffer's padding: pool buffers are
//! multiples of 256 bytes. The kernel text after the library depends only on
//! the DAG's structure (op codes, leaf kinds, bindings), never on scalar
//! values or offsets, which travel in the params: it is the cache key.

use super::exec::{self, Bind};
use super::fusion::{LeafKind, Node, Op, FUSED_DISPATCHES};
use super::shaders::{source, ELEMENTWISE, RANDOM};
use crate::error::Result;
use crate::tensor::storage::Storage;
use crate::tensor::{lock, DType};
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::sync::{Arc, LazyLock, Mutex};

/// Slots of the params' u32 and f32 arrays (FusedParams below).
const SLOTS: usize = 64;
/// Storage bindings of one kernel (inputs and outputs).
const MAX_BINDINGS: usize = 12;
/// Workgroups of one dispatch; larger outputs loop (grid-stride).
const MAX_GROUPS: usize = 4096;

const PRELUDE: &str = "
struct FusedParams { n: u32, nvec: u32, pad0: u32, pad1: u32, u: array<u32, 64>, f: array<f32, 64> }
// Element of a broadcast leaf whose (off, d, m, st) start at params slot s.
fn fz_at(e: u32, s: u32) -> u32 {
    return fp.u[s] + ((e / fp.u[s + 1u]) % fp.u[s + 2u]) * fp.u[s + 3u];
}
// x rounded to the nearest float16 (ties to even), kept in float32, in integer
// arithmetic on the bits: a compiler may fold an f32 -> f16 -> f32 round trip
// away (NVIDIA's does). Normal range: round the mantissa to 10 bits; below
// 2^-14, to a multiple of 2^-24; from 65520 up, infinity; NaN as is.
fn fz_half(x: vec4<f32>) -> vec4<f32> {
    let bits = bitcast<vec4<u32>>(x);
    let mag = bits & vec4<u32>(0x7fffffffu);
    let lsb = (bits >> vec4<u32>(13u)) & vec4<u32>(1u);
    var r = bitcast<vec4<f32>>((bits + vec4<u32>(0xfffu) + lsb) & vec4<u32>(0xffffe000u));
    let tiny = round(x * 16777216.0) * (1.0 / 16777216.0);
    r = select(r, tiny, mag < vec4<u32>(0x38800000u));
    let inf = bitcast<vec4<f32>>((bits & vec4<u32>(0x80000000u)) | vec4<u32>(0x7f800000u));
    r = select(r, inf, mag >= vec4<u32>(0x477ff000u));
    return select(r, x, mag > vec4<u32>(0x7f800000u));
}
";

/// Kernel keys compiled so far (the tests validate their sources).
static KEYS: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// Philox and `unit` from shaders/random.wgsl (masks draw its numbers).
fn philox() -> &'static str {
    let src = RANDOM.source;
    let start = src.find("fn mulhilo").expect("random.wgsl defines mulhilo");
    let end = src.find("// ---- uniform").expect("random.wgsl's uniform section");
    &src[start..end]
}

/// The complete WGSL of a generated kernel from its key.
pub fn full_source(key: &str) -> String {
    let lib = source(&ELEMENTWISE, exec::Variant::F32) + philox() + PRELUDE + key;
    if key.contains("f16") {
        format!("enable f16;\n{}", lib)
    } else {
        lib
    }
}

/// The WGSL scalar type of a buffer of `s`'s elements (float32 or float16).
fn scalar(s: &Storage) -> &'static str {
    if s.dtype() == DType::F16 {
        "f16"
    } else {
        "f32"
    }
}

/// How many generated kernels were compiled.
pub fn sources_count() -> usize {
    lock(&KEYS).len()
}

/// Every generated kernel's source compiled so far.
pub fn sources() -> Vec<String> {
    let mut keys: Vec<String> = lock(&KEYS).iter().cloned().collect();
    keys.sort();
    keys.iter().map(|k| full_source(k)).collect()
}

#[derive(Default)]
struct Gen {
    body: String,
    /// Node address -> temporary.
    memo: HashMap<*const Node, usize>,
    /// (storage, kind, off, d, m, st) -> temporary: a leaf read twice loads once.
    leaf_memo: HashMap<(usize, LeafKind, u32, u32, u32, u32), usize>,
    /// Bindings: (storage, read as vec4).
    binds: Vec<(Arc<Storage>, bool)>,
    u: Vec<u32>,
    f: Vec<f32>,
    tmp: usize,
}

impl Gen {
    fn bind(&mut self, s: &Arc<Storage>, vec: bool) -> usize {
        let found = self.binds.iter().position(|(b, v)| Arc::ptr_eq(b, s) && *v == vec);
        found.unwrap_or_else(|| {
            self.binds.push((s.clone(), vec));
            self.binds.len() - 1
        })
    }
    fn fslot(&mut self, v: f32) -> String {
        self.f.push(v);
        format!("fp.f[{}]", self.f.len() - 1)
    }
    fn next(&mut self) -> usize {
        self.tmp += 1;
        self.tmp - 1
    }
    /// Emits `node` and returns its temporary (a vec4<f32> of four lanes).
    fn emit(&mut self, node: &Arc<Node>) -> usize {
        let key = Arc::as_ptr(node);
        if let Some(&t) = self.memo.get(&key) {
            return t;
        }
        let t = match &node.op {
            Op::Leaf(l) => {
                let lk = (Arc::as_ptr(&l.storage) as usize, l.kind, l.off, l.d, l.m, l.st);
                if let Some(&t) = self.leaf_memo.get(&lk) {
                    self.memo.insert(key, t);
                    return t;
                }
                let vec = l.kind == LeafKind::Contiguous && l.off.is_multiple_of(4);
                let b = self.bind(&l.storage, vec);
                let s = self.u.len();
                let t = self.next();
                let lanes = |at: &dyn Fn(u32) -> String| {
                    let lane = |k| format!("f32(fz{}[{}])", b, at(k));
                    (0..4).map(lane).collect::<Vec<_>>().join(", ")
                };
                let line = match l.kind {
                    LeafKind::Contiguous if vec => {
                        self.u.push(l.off / 4);
                        format!("vec4<f32>(fz{}[fp.u[{}] + j])", b, s)
                    }
                    LeafKind::Contiguous => {
                        self.u.push(l.off);
                        format!("vec4<f32>({})", lanes(&|k| format!("fp.u[{}] + e + {}u", s, k)))
                    }
                    LeafKind::Broadcast => {
                        self.u.extend([l.off, l.d, l.m, l.st]);
                        format!("vec4<f32>({})", lanes(&|k| format!("fz_at(e + {}u, {}u)", k, s)))
                    }
                    LeafKind::Scalar => {
                        self.u.push(l.off);
                        format!("vec4<f32>(f32(fz{}[fp.u[{}]]))", b, s)
                    }
                };
                let _ = writeln!(self.body, "        let t{} = {};", t, line);
                self.leaf_memo.insert(lk, t);
                t
            }
            Op::Scalar(v) => {
                let f = self.fslot(*v);
                let t = self.next();
                let _ = writeln!(self.body, "        let t{} = vec4<f32>({});", t, f);
                t
            }
            Op::Mask { key, keep, scale } => {
                let s = self.u.len();
                self.u.extend([*key as u32, (*key >> 32) as u32]);
                let (keep, scale) = (self.fslot(*keep), self.fslot(*scale));
                let t = self.next();
                // Element 4j + k is word k of Philox block j, as in bernoulli_mask.
                let _ = writeln!(
                    self.body,
                    "        let w{} = block_words(j, fp.u[{}], fp.u[{}], 0u, 0u);",
                    t,
                    s,
                    s + 1
                );
                let lanes: Vec<String> = ["x", "y", "z", "w"]
                    .iter()
                    .map(|c| format!("select(0.0, {}, unit(w{}.{}) < {})", scale, t, c, keep))
                    .collect();
                let _ =
                    writeln!(self.body, "        let t{} = vec4<f32>({});", t, lanes.join(", "));
                t
            }
            Op::Half(x) => {
                let x = self.emit(x);
                let t = self.next();
                let _ = writeln!(self.body, "        let t{} = fz_half(t{});", t, x);
                t
            }
            Op::Unary { code, args, x } => {
                let x = self.emit(x);
                let (a0, a1) = match args {
                    Some([a, b]) => (self.fslot(*a), self.fslot(*b)),
                    None => ("0.0".into(), "0.0".into()),
                };
                let t = self.next();
                let lanes: Vec<String> = ["x", "y", "z", "w"]
                    .iter()
                    .map(|c| format!("unary_op({}u, t{}.{}, {}, {})", code, x, c, a0, a1))
                    .collect();
                let _ =
                    writeln!(self.body, "        let t{} = vec4<f32>({});", t, lanes.join(", "));
                t
            }
            Op::Binary { code, alpha, a, b } => {
                let a = self.emit(a);
                let b = self.emit(b);
                let al = match alpha {
                    Some(v) => self.fslot(*v),
                    None => "1.0".into(),
                };
                let t = self.next();
                let lanes: Vec<String> = ["x", "y", "z", "w"]
                    .iter()
                    .map(|c| format!("binary_op({}u, t{}.{}, t{}.{}, {})", code, a, c, b, c, al))
                    .collect();
                let _ =
                    writeln!(self.body, "        let t{} = vec4<f32>({});", t, lanes.join(", "));
                t
            }
        };
        self.memo.insert(key, t);
        t
    }
}

/// A generated kernel for `outputs` (storages of `n` elements): its key
/// (the WGSL after the library), bindings and params.
struct Kernel {
    key: String,
    binds: Vec<Arc<Storage>>,
    params: Vec<u8>,
    /// Whether the bindings and params slots fit one kernel.
    fits: bool,
}

fn generate(outputs: &[(Arc<Storage>, Arc<Node>)], n: usize) -> Kernel {
    let mut g = Gen::default();
    let roots: Vec<usize> = outputs.iter().map(|(_, node)| g.emit(node)).collect();
    let mut key = String::new();
    for (i, (s, vec)) in g.binds.iter().enumerate() {
        let ty = if *vec { format!("vec4<{}>", scalar(s)) } else { scalar(s).to_string() };
        let _ =
            writeln!(key, "@group(0) @binding({}) var<storage, read> fz{}: array<{}>;", i, i, ty);
    }
    let nb = g.binds.len();
    for (o, (s, _)) in outputs.iter().enumerate() {
        let _ = writeln!(
            key,
            "@group(0) @binding({}) var<storage, read_write> fzo{}: array<vec4<{}>>;",
            nb + o,
            o,
            scalar(s)
        );
    }
    let _ = writeln!(
        key,
        "@group(0) @binding({}) var<storage, read> fp: FusedParams;",
        nb + outputs.len()
    );
    key.push_str(
        "@compute @workgroup_size(256)
fn fused(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let stride = nwg.x * 256u;
    for (var j = gid.x; j < fp.nvec; j = j + stride) {
        let e = j * 4u;
",
    );
    key.push_str(&g.body);
    for (o, ((s, _), t)) in outputs.iter().zip(&roots).enumerate() {
        let _ = writeln!(key, "        fzo{}[j] = vec4<{}>(t{});", o, scalar(s), t);
    }
    key.push_str("    }\n}\n");
    let fits =
        g.binds.len() + outputs.len() <= MAX_BINDINGS && g.u.len() <= SLOTS && g.f.len() <= SLOTS;
    let mut params = Vec::with_capacity(16 + 8 * SLOTS);
    let nvec = n.div_ceil(4) as u32;
    for w in [n as u32, nvec, 0, 0] {
        params.extend_from_slice(&w.to_ne_bytes());
    }
    for i in 0..SLOTS {
        params.extend_from_slice(&g.u.get(i).copied().unwrap_or(0).to_ne_bytes());
    }
    for i in 0..SLOTS {
        params.extend_from_slice(&g.f.get(i).copied().unwrap_or(0.0).to_ne_bytes());
    }
    let mut binds: Vec<Arc<Storage>> = g.binds.into_iter().map(|(s, _)| s).collect();
    binds.extend(outputs.iter().map(|(s, _)| s.clone()));
    Kernel { key, binds, params, fits }
}

/// Writes `group` (live pending results of `n` elements) with as few
/// kernels as the binding and params limits allow.
pub fn run(group: &[(Arc<Storage>, Arc<Node>)], n: usize) -> Result<()> {
    let mut start = 0;
    while start < group.len() {
        // The longest run from `start` that fits (one result always does:
        // fusion.rs bounds each expression).
        let mut end = start + 1;
        let mut k = generate(&group[start..end], n);
        while end < group.len() {
            let bigger = generate(&group[start..end + 1], n);
            if !bigger.fits {
                break;
            }
            (k, end) = (bigger, end + 1);
        }
        dispatch(&k, n)?;
        start = end;
    }
    Ok(())
}

fn dispatch(k: &Kernel, n: usize) -> Result<()> {
    let buffers = k.binds.iter().map(|s| s.gpu_buffer_unwritten()).collect::<Result<Vec<_>>>()?;
    let binds: Vec<Bind> = buffers.iter().map(|b| Bind::whole(b)).collect();
    let groups = n.div_ceil(4).div_ceil(256).clamp(1, MAX_GROUPS) as u32;
    exec::dispatch_generated(
        &k.key,
        || {
            lock(&KEYS).insert(k.key.clone());
            full_source(&k.key)
        },
        "fused",
        &binds,
        &k.params,
        [groups, 1, 1],
    )?;
    FUSED_DISPATCHES.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::fusion::{Leaf, LeafKind, Node, Op};
    use super::{full_source, generate};
    use crate::backend::gpu::exec::used_bindings;
    use crate::ops::elementwise::{Binary, UnaryCode};
    use crate::tensor::storage::Storage;
    use crate::tensor::DType;
    use std::sync::Arc;

    fn leaf(s: &Arc<Storage>, kind: LeafKind, off: u32) -> Arc<Node> {
        Node::new(Op::Leaf(Leaf { storage: s.clone(), kind, off, d: 3, m: 5, st: 1 }))
    }

    /// Generated kernels (every leaf kind, float16 leaves, roundings and
    /// outputs, shared subexpressions, two outputs, scalar slots) validate
    /// with naga and bind what they declare.
    #[test]
    fn generated_kernels_validate() {
        let x = Arc::new(Storage::zeros(DType::F32, 64).unwrap());
        let y = Arc::new(Storage::zeros(DType::F32, 64).unwrap());
        let out = |n| Arc::new(Storage::zeros(DType::F32, n).unwrap());
        let un = |code: UnaryCode, x: &Arc<Node>, args| {
            Node::new(Op::Unary { code: code as u32, args, x: x.clone() })
        };
        let bin = |code: Binary, a: &Arc<Node>, b: &Arc<Node>, alpha| {
            Node::new(Op::Binary { code: code as u32, alpha, a: a.clone(), b: b.clone() })
        };
        let xv = leaf(&x, LeafKind::Contiguous, 0);
        let xc = leaf(&x, LeafKind::Contiguous, 3);
        let yb = leaf(&y, LeafKind::Broadcast, 1);
        let ys = leaf(&y, LeafKind::Scalar, 7);
        let point5 = Node::new(Op::Scalar(0.5));
        // gelu as a composite: 0.5 x (1 + erf(x / sqrt 2)).
        let inner =
            un(UnaryCode::Erf, &bin(Binary::Mul, &xv, &Node::new(Op::Scalar(0.7)), None), None);
        let gelu = bin(
            Binary::Mul,
            &bin(Binary::Mul, &xv, &point5, None),
            &bin(Binary::Add, &inner, &Node::new(Op::Scalar(1.0)), None),
            None,
        );
        let mask = Node::new(Op::Mask { key: 42, keep: 0.9, scale: 1.0 / 0.9 });
        let dropped = bin(Binary::Add, &bin(Binary::Mul, &xv, &mask, None), &yb, None);
        let mixed = bin(
            Binary::Sub,
            &un(UnaryCode::LeakyRelu, &xc, Some([0.1, 0.0])),
            &bin(Binary::Mul, &yb, &ys, None),
            Some(2.0),
        );
        // float16: a vec4 and a scalar-lane leaf, a rounding, float16 and float32 outputs.
        let x16 = Arc::new(Storage::zeros(DType::F16, 64).unwrap());
        let out16 = Arc::new(Storage::zeros(DType::F16, 64).unwrap());
        let hv = leaf(&x16, LeafKind::Contiguous, 0);
        let hc = leaf(&x16, LeafKind::Contiguous, 1);
        let rounded = Node::new(Op::Half(bin(Binary::Add, &hv, &xv, None)));
        let half = vec![(out16, rounded.clone()), (out(64), bin(Binary::Mul, &rounded, &hc, None))];
        let cases = vec![
            half,
            vec![(out(64), gelu.clone())],
            vec![(out(64), mixed.clone())],
            vec![(out(64), dropped)],
            vec![(out(64), gelu), (out(64), inner), (out(64), mixed)],
        ];
        for outputs in cases {
            let k = generate(&outputs, 61);
            assert!(k.fits);
            let src = full_source(&k.key);
            let used = used_bindings(&src, "fused").unwrap_or_else(|e| panic!("{}\n{}", e, k.key));
            assert_eq!(used, (0..=k.binds.len() as u32).collect::<Vec<_>>(), "{}", k.key);
            assert_eq!(k.params.len(), 16 + 8 * super::SLOTS);
        }
    }
}
