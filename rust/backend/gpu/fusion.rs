//! Lazy elementwise fusion. A float32 or float16 unary or binary op on the
//! GPU, or a cast between the two, whose operands are contiguous, scalars, or
//! broadcast along one run of dims does not dispatch: it allocates its output
//! (so memory statistics are those of the eager path), marks the storage
//! pending and records an expression node. Values flow as float32 inside the
//! kernel; a float16 result is rounded where the eager kernel rounds it (its
//! store), so an inlined float16 intermediate keeps its rounding.
//! An operand that is itself a whole pending tensor of the output's shape is
//! inlined (its node becomes a child), so a chain grows into one DAG.
//!
//! Pending storages are written by `flush`, which compiles each group of live
//! pending results into one generated kernel (fusion_codegen.rs) that reads
//! the leaves once and writes every live result. Anything that needs the data
//! flushes first: `Storage::gpu_buffer` (every other kernel, copies, host
//! reads, in-place writes of the result), and `before_dispatch` when a kernel
//! may write a buffer a pending node still reads (in-place writes of an
//! input). Leaves hold their storages, so their buffers are not recycled
//! while pending. `RUMUS_GPU_FUSION=0` turns the layer off.

use super::context;
use super::fusion_codegen;
use crate::error::Result;
use crate::ops::elementwise::{Binary, UnaryCode};
use crate::tensor::layout::{contiguous_strides, Layout};
use crate::tensor::storage::Storage;
use crate::tensor::{lock, DType, Device, Tensor};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, Weak};

/// Bounds on one result's expression (counted as a tree, so an upper bound
/// on the DAG): larger chains are split by materializing the operand.
const MAX_NODES: u32 = 48;
const MAX_LEAVES: u32 = 6;
const MAX_SCALARS: u32 = 40;
/// Pending entries before dead ones are pruned (and, if all live, flushed).
const MAX_PENDING: usize = 256;

/// How a leaf is read at output element e.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum LeafKind {
    /// off + e.
    Contiguous,
    /// off + ((e / d) % m) * st: one run of dims with stride st, broadcast
    /// over the rest (a bias over rows, a per-channel scale).
    Broadcast,
    /// off (one element broadcast everywhere).
    Scalar,
}

pub struct Leaf {
    pub storage: Arc<Storage>,
    pub kind: LeafKind,
    pub off: u32,
    pub d: u32,
    pub m: u32,
    pub st: u32,
}

pub enum Op {
    Leaf(Leaf),
    /// A Python number, in float32.
    Scalar(f32),
    /// `unary_op` of shaders/elementwise.wgsl; args (s0, s1) when not zero.
    Unary {
        code: u32,
        args: Option<[f32; 2]>,
        x: Arc<Node>,
    },
    /// `binary_op`; alpha when not 1.
    Binary {
        code: u32,
        alpha: Option<f32>,
        a: Arc<Node>,
        b: Arc<Node>,
    },
    /// A dropout mask: scale where a Philox draw under `key` is below keep,
    /// else 0 (element e draws what random.wgsl's bernoulli_mask gives it).
    Mask {
        key: u64,
        keep: f32,
        scale: f32,
    },
    /// x rounded to float16 (a float16 result's store).
    Half(Arc<Node>),
}

pub struct Node {
    pub op: Op,
    nodes: u32,
    leaves: u32,
    scalars: u32,
}

impl Node {
    pub fn new(op: Op) -> Arc<Node> {
        let (mut nodes, mut leaves, mut scalars) = (1, 0, 0);
        let mut add = |c: &Node| {
            nodes += c.nodes;
            leaves += c.leaves;
            scalars += c.scalars;
        };
        match &op {
            Op::Leaf(_) => leaves = 1,
            Op::Scalar(_) => scalars = 1,
            Op::Mask { .. } => scalars = 2,
            Op::Unary { args, x, .. } => {
                add(x);
                scalars += 2 * args.is_some() as u32;
            }
            Op::Half(x) => add(x),
            Op::Binary { alpha, a, b, .. } => {
                add(a);
                add(b);
                scalars += alpha.is_some() as u32;
            }
        }
        Arc::new(Node { op, nodes, leaves, scalars })
    }
    fn fits(&self) -> bool {
        self.nodes <= MAX_NODES && self.leaves <= MAX_LEAVES && self.scalars <= MAX_SCALARS
    }
}

#[derive(Default)]
struct State {
    /// Pending results in recording order: the storage (weak: a result
    /// nobody holds is never written) and its expression.
    pending: Vec<(Weak<Storage>, Arc<Node>)>,
    /// Buffers the pending expressions read.
    leaf_buffers: HashSet<wgpu::Buffer>,
}

/// Each device's pending work.
static STATE: LazyLock<[Mutex<State>; context::MAX_GPUS]> = LazyLock::new(Default::default);
/// Whether a device's `STATE.pending` may be non-empty (a lock-free fast path).
static ANY: [AtomicBool; context::MAX_GPUS] = [const { AtomicBool::new(false) }; context::MAX_GPUS];
static ENABLED: LazyLock<AtomicBool> = LazyLock::new(|| {
    AtomicBool::new(std::env::var("RUMUS_GPU_FUSION").map_or(true, |v| v.trim() != "0"))
});
/// Fused kernels dispatched (rumus.gpu.kernel_stats()).
pub static FUSED_DISPATCHES: AtomicU64 = AtomicU64::new(0);

pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns fusion on or off (tests' A/B runs); returns the previous setting.
pub fn set_enabled(on: bool) -> Result<bool> {
    flush()?;
    Ok(ENABLED.swap(on, Ordering::Relaxed))
}

/// A fusible operand: a float32 or float16 GPU tensor, or a number.
pub enum In<'a> {
    T(&'a Tensor),
    S(f32),
}

/// Whether results of `dtype` can be pending.
fn fusible(dtype: DType) -> Result<bool> {
    Ok(dtype == DType::F32 || (dtype == DType::F16 && context::get()?.has_f16()))
}

/// `node` as a result of `dtype`: float16 results round.
fn typed(node: Arc<Node>, dtype: DType) -> Arc<Node> {
    if dtype == DType::F16 {
        Node::new(Op::Half(node))
    } else {
        node
    }
}

/// Records `op(x)` (a float unary op, `args` its s0 and s1; the result has
/// x's dtype), or None when the eager kernel must run.
pub fn unary(code: u32, args: [f32; 2], x: &Tensor) -> Result<Option<Tensor>> {
    if !enabled() || !x.is_gpu() || !fusible(x.dtype())? {
        return Ok(None);
    }
    let shape = x.shape().to_vec();
    let Some(xn) = operand(In::T(x), &shape)? else { return Ok(None) };
    let args = (args != [0.0; 2]).then_some(args);
    record(typed(Node::new(Op::Unary { code, args, x: xn }), x.dtype()), &shape, x.dtype())
}

/// Records `a op b` (a float binary op with alpha's bits, tensor operands of
/// `dtype`, the result's) over `shape`, or None when the eager kernel must run.
pub fn binary(
    code: u32,
    alpha: f32,
    a: In,
    b: In,
    shape: &[usize],
    dtype: DType,
) -> Result<Option<Tensor>> {
    if !enabled() || !fusible(dtype)? {
        return Ok(None);
    }
    let (Some(an), Some(bn)) = (operand(a, shape)?, operand(b, shape)?) else { return Ok(None) };
    let alpha = (alpha != 1.0).then_some(alpha);
    record(typed(Node::new(Op::Binary { code, alpha, a: an, b: bn }), dtype), shape, dtype)
}

/// Records `x.to(dtype)` between float32 and float16, or None when the
/// eager cast must run.
pub fn cast(x: &Tensor, dtype: DType) -> Result<Option<Tensor>> {
    if !enabled() || !x.is_gpu() || !fusible(x.dtype())? || !fusible(dtype)? {
        return Ok(None);
    }
    let shape = x.shape().to_vec();
    let Some(xn) = operand(In::T(x), &shape)? else { return Ok(None) };
    record(typed(xn, dtype), &shape, dtype)
}

/// A float32 dropout mask of `shape` on the GPU: `scale` with probability
/// `keep`, else 0. Pending (computed inside the kernel that consumes it)
/// when fusion is on; else one bernoulli_mask fill, which draws the same numbers.
pub fn dropout_mask(shape: &[usize], keep: f32, scale: f32) -> Result<Tensor> {
    let key = lock(&crate::backend::cpu::random::default_generator()).next_key();
    if enabled() {
        if let Some(t) = record(Node::new(Op::Mask { key, keep, scale }), shape, DType::F32)? {
            return Ok(t);
        }
    }
    let out = Tensor::empty_on(shape, DType::F32, Device::Gpu(context::active() as u8))?;
    // bernoulli_mask does not read uniform's cut.
    super::random::fill("bernoulli_mask", &out, key, keep, scale, 0.0)?;
    Ok(out)
}

/// Training batch_norm's normalize pass, y = (x - mean) · rstd · w + b with
/// rstd = rsqrt(var + eps) (bn_apply's arithmetic), as a pending result:
/// `stats` is (2, C) float32 (mean, biased variance), x (N, C, S), x, w, b
/// contiguous. None when the eager kernel must run.
pub fn batch_norm_apply(
    x: &Tensor,
    w: Option<&Tensor>,
    b: Option<&Tensor>,
    stats: &Tensor,
    [_, c, s]: [usize; 3],
    eps: f32,
) -> Result<Option<Tensor>> {
    if !enabled() || x.dtype() != DType::F32 {
        return Ok(None);
    }
    let shape = x.shape().to_vec();
    // Element e of channel (e / S) % C of a per-channel vector starting at `off`.
    let channel = |t: &Tensor, off: usize| -> Result<Option<Arc<Node>>> {
        let buf = t.storage().gpu_buffer()?;
        if t.dtype() != DType::F32 || buf.size() > context::get()?.binding_limit() {
            return Ok(None);
        }
        let (off, d, m) = (t.layout().offset + off, s, c);
        let leaf = Leaf {
            storage: t.storage().clone(),
            kind: LeafKind::Broadcast,
            off: off as u32,
            d: d as u32,
            m: m as u32,
            st: 1,
        };
        Ok(Some(Node::new(Op::Leaf(leaf))))
    };
    let bin = |code: Binary, a: Arc<Node>, b: Arc<Node>| {
        Node::new(Op::Binary { code: code as u32, alpha: None, a, b })
    };
    let (Some(xn), Some(mean), Some(var)) =
        (operand(In::T(x), &shape)?, channel(stats, 0)?, channel(stats, c)?)
    else {
        return Ok(None);
    };
    let var_eps = bin(Binary::Add, var, Node::new(Op::Scalar(eps)));
    let rstd = Node::new(Op::Unary { code: UnaryCode::Rsqrt as u32, args: None, x: var_eps });
    let mut y = bin(Binary::Mul, bin(Binary::Sub, xn, mean), rstd);
    if let Some(w) = w {
        let Some(wn) = channel(w, 0)? else { return Ok(None) };
        y = bin(Binary::Mul, y, wn);
    }
    if let Some(b) = b {
        let Some(bn) = channel(b, 0)? else { return Ok(None) };
        y = bin(Binary::Add, y, bn);
    }
    record(y, &shape, DType::F32)
}

/// The node reading `x` at each element of an output of `shape`.
fn operand(x: In, shape: &[usize]) -> Result<Option<Arc<Node>>> {
    let t = match x {
        In::S(v) => return Ok(Some(Node::new(Op::Scalar(v)))),
        In::T(t) => t,
    };
    if !t.is_gpu() || !fusible(t.dtype())? {
        return Ok(None);
    }
    let s = t.storage();
    if s.is_pending()
        && t.layout().offset == 0
        && t.shape().as_slice() == shape
        && t.is_contiguous()
        && t.numel() == s.len()
    {
        let st = lock(context::here(&STATE));
        if let Some((_, n)) =
            st.pending.iter().rev().find(|(w, _)| std::ptr::eq(w.as_ptr(), Arc::as_ptr(s)))
        {
            return Ok(Some(n.clone()));
        }
    }
    leaf(t, shape)
}

fn leaf(t: &Tensor, shape: &[usize]) -> Result<Option<Arc<Node>>> {
    // Materializes a pending tensor read through a view.
    let buf = t.storage().gpu_buffer()?;
    if buf.size() > context::get()?.binding_limit() || buf.size() / 4 > u32::MAX as u64 / 2 {
        return Ok(None);
    }
    let strides = t.layout().broadcast_strides(shape)?;
    let out = contiguous_strides(shape);
    let (cshape, [_, ls]) = Layout::coalesce(shape, [&out, &strides]);
    let moving: Vec<usize> = (0..cshape.len()).filter(|&d| ls[d] != 0).collect();
    let off = t.layout().offset as u32;
    let (kind, d, m, st) = match moving.as_slice() {
        [] => (LeafKind::Scalar, 1, 1, 0),
        &[k] if ls[k] > 0 => {
            let d: usize = cshape[k + 1..].iter().product();
            if cshape.len() == 1 && ls[k] == 1 {
                (LeafKind::Contiguous, 1, cshape[k], 1)
            } else {
                (LeafKind::Broadcast, d, cshape[k], ls[k] as usize)
            }
        }
        _ => return Ok(None),
    };
    let leaf =
        Leaf { storage: t.storage().clone(), kind, off, d: d as u32, m: m as u32, st: st as u32 };
    Ok(Some(Node::new(Op::Leaf(leaf))))
}

/// A pending result of `node` over `shape`, of `dtype` (float32 or float16).
fn record(node: Arc<Node>, shape: &[usize], dtype: DType) -> Result<Option<Tensor>> {
    let n: usize = shape.iter().product();
    let ctx = context::get()?;
    if !node.fits() || n == 0 || n > (u32::MAX / 2) as usize || (n * 4) as u64 > ctx.binding_limit()
    {
        return Ok(None);
    }
    let out = Tensor::empty_on(shape, dtype, Device::Gpu(context::active() as u8))?;
    let mut st = lock(context::here(&STATE));
    if st.pending.len() >= MAX_PENDING {
        st.pending.retain(|(w, _)| w.strong_count() > 0);
        if st.pending.len() >= MAX_PENDING {
            drop(st);
            flush()?;
            st = lock(context::here(&STATE));
        }
    }
    add_leaf_buffers(&mut st, &node)?;
    out.storage().set_pending(true);
    st.pending.push((Arc::downgrade(out.storage()), node));
    context::here(&ANY).store(true, Ordering::Release);
    Ok(Some(out))
}

/// Notes the buffers `node` reads (all of them: a flush in between may have
/// cleared those of inlined children).
fn add_leaf_buffers(st: &mut State, node: &Node) -> Result<()> {
    match &node.op {
        Op::Leaf(l) => {
            st.leaf_buffers.insert(l.storage.gpu_buffer_unwritten()?.clone());
        }
        Op::Scalar(_) | Op::Mask { .. } => {}
        Op::Unary { x, .. } | Op::Half(x) => add_leaf_buffers(st, x)?,
        Op::Binary { a, b, .. } => {
            add_leaf_buffers(st, a)?;
            add_leaf_buffers(st, b)?;
        }
    }
    Ok(())
}

/// Drops the expression of a pending storage being dropped, releasing the
/// inputs it holds.
pub fn forget(storage: &Storage) {
    let Some(device) = storage.gpu_index() else { return };
    let dead = {
        let mut st = lock(&STATE[device]);
        let i = st.pending.iter().position(|(w, _)| std::ptr::eq(w.as_ptr(), storage));
        i.map(|i| st.pending.remove(i))
    };
    drop(dead);
}

/// Writes every live pending result (see the module doc).
pub fn flush() -> Result<()> {
    // Held until the kernels are recorded: a thread that finds its storage
    // pending must not run ahead of the flush that writes it.
    static FLUSHING: Mutex<()> = Mutex::new(());
    let _flushing = lock(&FLUSHING);
    if !context::here(&ANY).swap(false, Ordering::AcqRel) {
        return Ok(());
    }
    let live: Vec<(Arc<Storage>, Arc<Node>)> = {
        let mut st = lock(context::here(&STATE));
        st.leaf_buffers.clear();
        st.pending.drain(..).filter_map(|(w, n)| w.upgrade().map(|s| (s, n))).collect()
    };
    for (s, _) in &live {
        s.set_pending(false);
    }
    // One kernel per output size (all nodes of a result share its size).
    let mut sizes: Vec<usize> = live.iter().map(|(s, _)| s.len()).collect();
    sizes.dedup();
    let mut done = HashSet::new();
    for n in sizes {
        if !done.insert(n) {
            continue;
        }
        let group: Vec<_> = live.iter().filter(|(s, _)| s.len() == n).cloned().collect();
        fusion_codegen::run(&group, n)?;
    }
    Ok(())
}

/// Flushes when a kernel about to run binds a buffer pending results read
/// (it may write it).
pub fn before_dispatch<'a>(buffers: impl Iterator<Item = &'a wgpu::Buffer>) -> Result<()> {
    if !context::here(&ANY).load(Ordering::Acquire) {
        return Ok(());
    }
    let hit = {
        let st = lock(context::here(&STATE));
        let mut buffers = buffers;
        buffers.any(|b| st.leaf_buffers.contains(b))
    };
    if hit {
        flush()?;
    }
    Ok(())
}
