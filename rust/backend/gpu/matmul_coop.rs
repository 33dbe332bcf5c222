//! Tensor-core GEMM for float16 (shaders/matmul_coop.wgsl): where the adapter
//! offers cooperative matrices with float16 inputs, `matmul::gemm` hands its
//! float16 products here; everywhere else (lavapipe, GPUs without them,
//! `RUMUS_GPU_DISABLE_COOP=1`) the portable kernels run.
//!
//! The template is specialized per adapter: fragment side 16 (NVIDIA, AMD) or
//! 8 (Apple), an f32 accumulator where offered (f16 otherwise), and the
//! adapter's subgroup size, which must be fixed (one subgroup per 2 x 2 cell of
//! the workgroup tile).

use super::context::{self, Context};
use super::exec::{self, Bind, Variant};
use super::matmul::Mat;
use super::shaders::Shader;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use wgpu::{CooperativeMatrixProperties, CooperativeScalarType, Features};

const TEMPLATE: &str = include_str!("../../../shaders/matmul_coop.wgsl");

/// Subgroups per workgroup along m and n (the template's WM, WN).
const WM: u32 = 2;
const WN: u32 = 2;

/// Which tensor-core kernel: `Staged` copies each K slice through workgroup
/// memory (any shape and layout); `Direct` loads fragments from the buffers
/// (whole tiles only, else it runs as `Staged`). The autotuner times both.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Coop {
    Staged,
    Direct,
}

impl Coop {
    pub const ALL: [Coop; 2] = [Coop::Staged, Coop::Direct];

    /// The name in the autotuner's cache and `RUMUS_GPU_MATMUL_VARIANT`.
    pub fn name(self) -> &'static str {
        match self {
            Coop::Staged => "coop",
            Coop::Direct => "coop_direct",
        }
    }
}

/// One specialization of the template.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Config {
    /// Fragment side: M = N = K (WGSL has square cooperative matrices only).
    pub frag: u32,
    /// Accumulate in f16 (where the adapter has no f32 accumulator).
    pub acc_f16: bool,
    /// Subgroup size.
    pub sg: u32,
    /// Fragments per subgroup along m and n (the template's FM, FN): 4 x 4
    /// unless `RUMUS_GPU_COOP_FRAGS` (e.g. `2x4`) says otherwise.
    pub fm: u32,
    pub fn_: u32,
}

impl Config {
    /// The default shape for a fragment side, accumulator and subgroup size.
    pub fn new(frag: u32, acc_f16: bool, sg: u32) -> Config {
        Config { frag, acc_f16, sg, fm: 4, fn_: 4 }
    }
    /// Output tile of one workgroup: rows, columns.
    pub fn tile(&self) -> (u32, u32) {
        (WM * self.fm * self.frag, WN * self.fn_ * self.frag)
    }
    pub fn invocations(&self) -> u32 {
        WM * WN * self.sg
    }
    /// Whether each invocation stages whole runs of 8 halves of A and B (the
    /// wide entry's condition): the tile's A_PER and B_PER are multiples of 8.
    pub fn runs_of_eight(&self) -> bool {
        let (bm, bn) = self.tile();
        let per = |rows: u32| rows * 2 * self.frag / self.invocations();
        per(bm).is_multiple_of(8) && per(bn).is_multiple_of(8)
    }
    /// Bytes of workgroup memory: two staged A and B slices, the scratch.
    pub fn workgroup_bytes(&self) -> u32 {
        let ((bm, bn), bk) = (self.tile(), 2 * self.frag);
        let stages = 2 * (bm * (bk + 8) + bk * (bn + 8)) * 2;
        stages + WM * WN * self.frag * self.frag * if self.acc_f16 { 2 } else { 4 }
    }
}

/// The configuration to use on an adapter with these features, cooperative
/// matrix configurations, subgroup sizes and workgroup limits (invocations,
/// bytes), or None for the portable kernels. Prefers side 16 to 8 and an f32
/// accumulator to f16 (float16 sums lose digits over long k).
pub fn choose(
    features: Features,
    props: &[CooperativeMatrixProperties],
    subgroup: (u32, u32),
    limits: (u32, u32),
) -> Option<Config> {
    let needed =
        Features::EXPERIMENTAL_COOPERATIVE_MATRIX | Features::SUBGROUP | Features::SHADER_F16;
    let (sg, sg_max) = subgroup;
    // A varying subgroup size would leave the WM x WN cells unassigned or shared.
    if !features.contains(needed)
        || sg != sg_max
        || !sg.is_power_of_two()
        || !(4..=128).contains(&sg)
    {
        return None;
    }
    let offered = |frag: u32, acc: CooperativeScalarType| {
        props.iter().any(|p| {
            p.m_size == frag
                && p.n_size == frag
                && p.k_size == frag
                && p.ab_type == CooperativeScalarType::F16
                && p.cr_type == acc
        })
    };
    [(16, false), (8, false), (16, true), (8, true)]
        .into_iter()
        .filter(|&(frag, acc_f16)| {
            let acc = if acc_f16 { CooperativeScalarType::F16 } else { CooperativeScalarType::F32 };
            offered(frag, acc)
        })
        .map(|(frag, acc_f16)| Config::new(frag, acc_f16, sg))
        .find(|c| c.invocations() <= limits.0 && c.workgroup_bytes() <= limits.1)
}

/// The WGSL of one configuration (without `enable f16;`, which the float16
/// variant prepends).
pub fn source(cfg: Config) -> String {
    let f = cfg.frag;
    let mut s = TEMPLATE
        .replace("coop_mat16x16", &format!("coop_mat{f}x{f}"))
        .replacen("const F: u32 = 16u;", &format!("const F: u32 = {f}u;"), 1)
        .replacen("const SG: u32 = 32u;", &format!("const SG: u32 = {}u;", cfg.sg), 1)
        .replacen("const FM: u32 = 4u;", &format!("const FM: u32 = {}u;", cfg.fm), 1)
        .replacen("const FN: u32 = 4u;", &format!("const FN: u32 = {}u;", cfg.fn_), 1);
    if cfg.acc_f16 {
        s = s.replacen("alias ACC = f32;", "alias ACC = f16;", 1);
    }
    let (fm, fn_) = (cfg.fm, cfg.fn_);
    let cells = || (0..fm).flat_map(|i| (0..fn_).map(move |j| (i, j)));
    let mut init = String::new();
    let mut mma = String::new();
    let mut store = String::new();
    for (i, j) in cells() {
        init += &format!("    var c{i}{j} = coopLoadT<FragC>(&sc[cb], F);\n");
        store += &format!(
            "    coopStoreT(c{i}{j}, &sc[cb], F);\n    workgroupBarrier();\n    \
             emit(z, r0 + {i}u * F, c0 + {j}u * F, cb, lane);\n    workgroupBarrier();\n"
        );
    }
    for s in 0..2 {
        let kk = if s == 0 { "0u".to_string() } else { "F".to_string() };
        for i in 0..fm {
            mma += &format!(
                "        let a{s}{i} = coopLoadT<FragA>(&sa[ab + {i}u * F * LDA + {kk}], LDA);\n"
            );
        }
        for j in 0..fn_ {
            mma += &format!(
                "        let b{s}{j} = coopLoadT<FragB>(&sb[bb + {kk} * LDB + {j}u * F], LDB);\n"
            );
        }
        for (i, j) in cells() {
            mma += &format!("        c{i}{j} = coopMultiplyAdd(a{s}{i}, b{s}{j}, c{i}{j});\n");
        }
    }
    let s = s.replacen("    // @INIT\n", &init, 1).replacen("        // @MMA\n", &mma, 1).replacen(
        "    // @STORE\n",
        &store,
        1,
    );
    let (s, direct) = s.split_at(s.find("// @DIRECT_KERNEL").expect("the direct body"));
    let direct = &direct[direct.find("fn gemm_direct(").expect("fn gemm_direct")..];
    let direct = direct.replacen("    // @INIT\n", &init, 1).replacen("    // @STORE\n", &store, 1);
    // gemm8: gemm (the template's last staged function) staging 8 halves at a time.
    let body = &s[s.find("fn gemm(").expect("fn gemm in the template")..];
    let wide = body
        .replacen("fn gemm(", "fn gemm8(", 1)
        .replace("fetch(", "fetch8(")
        .replace("stash(", "stash8(");
    let mut out = format!("{}\n{}", s, wide);
    // One direct entry per layout of A and B: r (row-major, unit column
    // stride) loads with coopLoadT along the row stride, c with coopLoad.
    for (a_row, b_row) in [(true, true), (true, false), (false, true), (false, false)] {
        let tag = |row: bool| if row { "r" } else { "c" };
        let name = format!("{}{}", tag(a_row), tag(b_row));
        let (la, sa) = if a_row { ("coopLoadT", "p.a_rs") } else { ("coopLoad", "p.a_cs") };
        let (lb, sb) = if b_row { ("coopLoadT", "p.b_rs") } else { ("coopLoad", "p.b_cs") };
        // Fragment loads of the slice at k (an expression).
        let loads = |k: &str| {
            let mut l = String::new();
            for i in 0..fm {
                l += &format!(
                    "        let a{i} = {la}<FragA>(&a[ab + {i}u * F * p.a_rs + {k} * p.a_cs], {sa});\n"
                );
            }
            for j in 0..fn_ {
                l += &format!(
                    "        let b{j} = {lb}<FragB>(&b[bb + {k} * p.b_rs + {j}u * F * p.b_cs], {sb});\n"
                );
            }
            l
        };
        let mut mma = String::new();
        for (i, j) in cells() {
            mma += &format!("        c{i}{j} = coopMultiplyAdd(a{i}, b{j}, c{i}{j});\n");
        }
        let body =
            format!("    for (var k0 = 0u; k0 < p.k; k0 += F) {{\n{}{}    }}\n", loads("k0"), mma);
        out += &format!(
            "\n@compute @workgroup_size(WG)\nfn matmul_coop_direct_{name}(\n    \
             @builtin(workgroup_id) wg: vec3<u32>,\n    \
             @builtin(local_invocation_index) lid: u32,\n    \
             @builtin(subgroup_id) sg: u32,\n    \
             @builtin(subgroup_invocation_id) lane: u32,\n) {{\n    \
             gemm_direct_{name}(wg, lid, sg, lane);\n}}\n"
        );
        out += &direct.replacen("fn gemm_direct(", &format!("fn gemm_direct_{name}("), 1).replacen(
            "    // @DIRECT\n",
            &body,
            1,
        );
    }
    out
}

/// The shader of a configuration, generated once and kept for the process
/// (the kernel cache keys pipelines by shader name).
fn shader(cfg: Config) -> &'static Shader {
    static SHADERS: LazyLock<Mutex<HashMap<Config, &'static Shader>>> =
        LazyLock::new(Default::default);
    let mut all = crate::tensor::lock(&SHADERS);
    all.entry(cfg).or_insert_with(|| {
        let acc = if cfg.acc_f16 { "f16" } else { "f32" };
        let name = format!("matmul_coop_{}_{}_sg{}_{}x{}", cfg.frag, acc, cfg.sg, cfg.fm, cfg.fn_);
        Box::leak(Box::new(Shader {
            name: Box::leak(name.into_boxed_str()),
            source: Box::leak(source(cfg).into_boxed_str()),
            codes: Vec::new,
        }))
    })
}

/// The adapter's configuration (None without tensor cores).
fn adapter_config(ctx: &Context) -> Option<Config> {
    let l = &ctx.limits;
    let limits = (l.max_compute_invocations_per_workgroup, l.max_compute_workgroup_storage_size);
    let sg = (ctx.info.subgroup_min_size, ctx.info.subgroup_max_size);
    let cfg = choose(ctx.features, &ctx.coop, sg, limits)?;
    Some(shaped(cfg, std::env::var("RUMUS_GPU_COOP_FRAGS").ok().as_deref(), limits))
}

/// `cfg` with `frags` fragments per subgroup (`FMxFN`, 1 to 8 each) where
/// given; a value that does not parse, or a shape beyond the workgroup
/// memory, keeps the default.
fn shaped(mut cfg: Config, frags: Option<&str>, limits: (u32, u32)) -> Config {
    let parsed = frags.and_then(|f| {
        let (m, n) = f.trim().split_once('x')?;
        let (m, n) = (m.parse::<u32>().ok()?, n.parse::<u32>().ok()?);
        ((1..=8).contains(&m) && (1..=8).contains(&n)).then_some((m, n))
    });
    if let Some((fm, fn_)) = parsed {
        let c = Config { fm, fn_, ..cfg };
        if c.workgroup_bytes() <= limits.1 {
            cfg = c;
        }
    }
    cfg
}

/// The configuration float16 products use now: None where the adapter has no
/// tensor cores or `RUMUS_GPU_DISABLE_COOP=1`.
pub fn active(ctx: &Context) -> Option<Config> {
    if context::coop_disabled() {
        return None;
    }
    adapter_config(ctx)
}

/// What `rumus.gpu.adapter_info()` reports as the tensor-core kernel.
pub fn describe(ctx: &Context) -> Option<String> {
    active(ctx).map(|c| {
        let acc = if c.acc_f16 { "f16" } else { "f32" };
        format!(
            "{0}x{0}x{0} f16->{1}, subgroup {2}, {3}x{4} fragments",
            c.frag, acc, c.sg, c.fm, c.fn_
        )
    })
}

/// The params of shaders/matmul_coop.wgsl.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct Params {
    m: u32,
    n: u32,
    k: u32,
    batch: u32,
    a_off: u32,
    a_bs: u32,
    a_rs: u32,
    a_cs: u32,
    b_off: u32,
    b_bs: u32,
    b_rs: u32,
    b_cs: u32,
    c_off: u32,
    c_bs: u32,
    a_mfast: u32,
    b_kfast: u32,
}

/// C[i] = A[i] · B[i] (float16, C contiguous m x n from `c_off`) on the
/// tensor cores. Ok(false): not taken (no tensor cores, disabled, or a shape
/// the portable kernel's chunking handles: operands beyond one binding, more
/// than 65,535 batches, offsets or strides beyond 32 bits).
#[allow(clippy::too_many_arguments)]
pub fn try_gemm(
    kernel: Coop,
    m: usize,
    n: usize,
    k: usize,
    batch: usize,
    a: Mat,
    b: Mat,
    c: &wgpu::Buffer,
    c_off: usize,
) -> crate::error::Result<bool> {
    let ctx = context::get()?;
    let Some(cfg) = active(ctx) else {
        return Ok(false);
    };
    let limit = ctx.binding_limit();
    if [a.buf, b.buf, c].iter().any(|buf| buf.size() > limit) {
        return Ok(false);
    }
    let w = |v: isize| u32::try_from(v).ok();
    let wu = |v: usize| u32::try_from(v).ok();
    let (tile_m, tile_n) = (cfg.tile().0 as usize, cfg.tile().1 as usize);
    let groups = [n.div_ceil(tile_n), m.div_ceil(tile_m), batch];
    let max = ctx.limits.max_compute_workgroups_per_dimension as usize;
    if groups.iter().any(|&g| g > max.min(65_535)) {
        return Ok(false);
    }
    let fields = [
        wu(m),
        wu(n),
        wu(k),
        wu(batch),
        wu(a.off),
        w(a.bs),
        w(a.rs),
        w(a.cs),
        wu(b.off),
        w(b.bs),
        w(b.rs),
        w(b.cs),
        wu(c_off),
        wu(m * n),
    ];
    let Some(f) = fields.into_iter().collect::<Option<Vec<u32>>>() else {
        return Ok(false);
    };
    // Stage along the contiguous dimension, as shaders/matmul.wgsl reads.
    let a_mfast = a.rs == 1 && a.cs != 1;
    let b_kfast = b.rs == 1 && b.cs != 1;
    let p = Params {
        m: f[0],
        n: f[1],
        k: f[2],
        batch: f[3],
        a_off: f[4],
        a_bs: f[5],
        a_rs: f[6],
        a_cs: f[7],
        b_off: f[8],
        b_bs: f[9],
        b_rs: f[10],
        b_cs: f[11],
        c_off: f[12],
        c_bs: f[13],
        a_mfast: a_mfast as u32,
        b_kfast: b_kfast as u32,
    };
    // 16-byte loads where each operand's contiguous extent, offset and other
    // strides are multiples of 8 halves (every run of 8 wholly in or out) and
    // every invocation stages whole runs.
    let eights = |v: &[isize]| v.iter().all(|x| x % 8 == 0);
    let wide_a = if a_mfast {
        eights(&[m as isize, a.off as isize, a.cs, a.bs])
    } else {
        a.cs == 1 && eights(&[k as isize, a.off as isize, a.rs, a.bs])
    };
    let wide_b = if b_kfast {
        eights(&[k as isize, b.off as isize, b.cs, b.bs])
    } else {
        b.cs == 1 && eights(&[n as isize, b.off as isize, b.rs, b.bs])
    };
    let sized = a.buf.size().is_multiple_of(16) && b.buf.size().is_multiple_of(16);
    // Direct: whole tiles, each operand row- or column-major (a unit stride)
    // with its other strides and offset on 16 bytes (cooperative loads).
    let layout = |rs: isize, cs: isize, off: usize, bs: isize| {
        let aligned = eights(&[off as isize, bs]);
        if cs == 1 && aligned && eights(&[rs]) {
            Some(true)
        } else if rs == 1 && aligned && eights(&[cs]) {
            Some(false)
        } else {
            None
        }
    };
    let whole = m.is_multiple_of(tile_m)
        && n.is_multiple_of(tile_n)
        && k.is_multiple_of(cfg.frag as usize)
        && k > 0;
    let direct = match (layout(a.rs, a.cs, a.off, a.bs), layout(b.rs, b.cs, b.off, b.bs)) {
        (Some(la), Some(lb)) if kernel == Coop::Direct && whole => Some((la, lb)),
        _ => None,
    };
    let entry = match direct {
        Some((true, true)) => "matmul_coop_direct_rr",
        Some((true, false)) => "matmul_coop_direct_rc",
        Some((false, true)) => "matmul_coop_direct_cr",
        Some((false, false)) => "matmul_coop_direct_cc",
        None if wide_a && wide_b && sized && cfg.runs_of_eight() => "matmul_coop_wide",
        None => "matmul_coop",
    };
    let binds = [Bind::whole(a.buf), Bind::whole(b.buf), Bind::whole(c)];
    let g = groups.map(|g| g as u32);
    exec::dispatch_shader(shader(cfg), entry, Variant::F16, &binds, bytemuck::bytes_of(&p), g)?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use naga::valid::{Capabilities, ValidationFlags, Validator};

    fn prop(
        side: u32,
        ab: CooperativeScalarType,
        cr: CooperativeScalarType,
    ) -> CooperativeMatrixProperties {
        CooperativeMatrixProperties {
            m_size: side,
            n_size: side,
            k_size: side,
            ab_type: ab,
            cr_type: cr,
            saturating_accumulation: false,
        }
    }

    const ALL: Features = Features::EXPERIMENTAL_COOPERATIVE_MATRIX
        .union(Features::SUBGROUP)
        .union(Features::SHADER_F16);
    const LIMITS: (u32, u32) = (1024, 49_152);
    use CooperativeScalarType::{F16, F32};

    /// Every configuration `choose` can return parses and validates with
    /// naga (cooperative matrices, subgroups and f16 enabled, as the device
    /// validates it), with the params struct the Rust twin's size.
    #[test]
    fn every_variant_validates() {
        for frag in [8, 16] {
            for acc_f16 in [false, true] {
                for (sg, fm, fn_) in [
                    (4, 4, 4),
                    (8, 4, 4),
                    (16, 2, 4),
                    (32, 4, 4),
                    (32, 2, 4),
                    (32, 4, 2),
                    (32, 8, 4),
                    (64, 4, 4),
                    (128, 4, 4),
                ] {
                    let cfg = Config { frag, acc_f16, sg, fm, fn_ };
                    if cfg.invocations() > LIMITS.0 || cfg.workgroup_bytes() > LIMITS.1 {
                        continue;
                    }
                    let src = format!("enable f16;\n{}", source(cfg));
                    let module = naga::front::wgsl::parse_str(&src)
                        .unwrap_or_else(|e| panic!("{:?}: {}", cfg, e.emit_to_string(&src)));
                    let caps = Capabilities::COOPERATIVE_MATRIX
                        | Capabilities::SUBGROUP
                        | Capabilities::SHADER_FLOAT16;
                    Validator::new(ValidationFlags::all(), caps)
                        .subgroup_stages(naga::valid::ShaderStages::COMPUTE)
                        .subgroup_operations(naga::valid::SubgroupOperationSet::all())
                        .validate(&module)
                        .unwrap_or_else(|e| panic!("{:?}: {}", cfg, e.emit_to_string(&src)));
                    let params = module
                        .types
                        .iter()
                        .find(|(_, t)| t.name.as_deref() == Some("Params"))
                        .expect("Params");
                    assert_eq!(
                        params.1.inner.size(module.to_ctx()) as usize,
                        std::mem::size_of::<Params>()
                    );
                    let direct =
                        ["rr", "rc", "cr", "cc"].map(|l| format!("matmul_coop_direct_{l}"));
                    let staged = ["matmul_coop", "matmul_coop_wide"].map(String::from);
                    for entry in staged.iter().chain(&direct) {
                        let used = exec::used_bindings(&src, entry).unwrap();
                        assert_eq!(used, vec![0, 1, 2, 3], "{:?}", cfg);
                    }
                }
            }
        }
    }

    /// Without the cooperative-matrix capability naga refuses the kernel (the
    /// validation above is not vacuous), and with it the SPIR-V writer (what
    /// wgpu runs for Vulkan) emits every variant.
    #[cfg(target_os = "linux")]
    #[test]
    fn spirv_is_written_and_capability_is_required() {
        use naga::back::spv;
        for (frag, acc_f16) in [(16, false), (16, true), (8, false), (8, true)] {
            let cfg = Config { fm: 2, ..Config::new(frag, acc_f16, 32) };
            let src = format!("enable f16;\n{}", source(cfg));
            let module = naga::front::wgsl::parse_str(&src).unwrap();
            let without = Capabilities::SUBGROUP | Capabilities::SHADER_FLOAT16;
            assert!(Validator::new(ValidationFlags::all(), without).validate(&module).is_err());
            let info = Validator::new(ValidationFlags::all(), Capabilities::all())
                .validate(&module)
                .unwrap();
            let options = spv::Options { lang_version: (1, 6), ..Default::default() };
            let words = spv::write_vec(&module, &info, &options, None)
                .unwrap_or_else(|e| panic!("{:?}: {}", cfg, e));
            // OpTypeCooperativeMatrixKHR (4456) and OpCooperativeMatrixMulAddKHR (4459).
            let ops: Vec<u32> = words.iter().map(|w| w & 0xffff).collect();
            assert!(ops.contains(&4456) && ops.contains(&4459), "{:?}", cfg);
        }
    }

    #[test]
    fn choose_prefers_16_and_f32_accumulation() {
        let nvidia = [prop(16, F16, F16), prop(16, F16, F32), prop(8, F16, F32)];
        let c = choose(ALL, &nvidia, (32, 32), LIMITS).unwrap();
        assert_eq!(c, Config::new(16, false, 32));
        assert_eq!(c.tile(), (128, 128));
        assert!(c.workgroup_bytes() <= 48 * 1024);
        let apple = [prop(8, F32, F32), prop(8, F16, F16), prop(8, F16, F32)];
        assert_eq!(choose(ALL, &apple, (32, 32), LIMITS).unwrap(), Config::new(8, false, 32));
        let f16_only = [prop(16, F16, F16)];
        assert_eq!(choose(ALL, &f16_only, (64, 64), LIMITS).unwrap(), Config::new(16, true, 64));
    }

    #[test]
    fn choose_falls_back_without_tensor_cores() {
        let nvidia = [prop(16, F16, F32)];
        // lavapipe: no feature, no configurations.
        assert_eq!(choose(Features::SHADER_F16 | Features::SUBGROUP, &[], (8, 8), LIMITS), None);
        // The feature without float16 configurations (8x8 f32 only).
        assert_eq!(choose(ALL, &[prop(8, F32, F32)], (32, 32), LIMITS), None);
        // Missing one of the needed features.
        assert_eq!(choose(ALL - Features::SUBGROUP, &nvidia, (32, 32), LIMITS), None);
        assert_eq!(choose(ALL - Features::SHADER_F16, &nvidia, (32, 32), LIMITS), None);
        // Varying subgroup size (Intel 8..32).
        assert_eq!(choose(ALL, &nvidia, (8, 32), LIMITS), None);
        // Too little workgroup memory or too few invocations.
        assert_eq!(choose(ALL, &nvidia, (32, 32), (1024, 16 * 1024)), None);
        assert_eq!(choose(ALL, &nvidia, (128, 128), (256, 49_152)), None);
    }

    #[test]
    fn shape_knobs() {
        let base = Config::new(16, false, 32);
        let got = shaped(base, Some("2x4"), LIMITS);
        assert_eq!((got.fm, got.fn_), (2, 4));
        assert_eq!(got.tile(), (64, 128));
        assert!(got.runs_of_eight());
        for bad in ["", "4", "0x4", "9x1", "ax4", "4x4x4"] {
            assert_eq!(shaped(base, Some(bad), LIMITS), base, "{bad}");
        }
        // Beyond the workgroup memory: the default stays.
        assert_eq!(shaped(base, Some("8x8"), (1024, 16 * 1024)), base);
    }

    #[test]
    fn disable_flag_values() {
        assert!(context::disables_coop(Some("1")));
        assert!(context::disables_coop(Some("yes")));
        assert!(!context::disables_coop(Some("0")));
        assert!(!context::disables_coop(Some("")));
        assert!(!context::disables_coop(None));
    }
}
