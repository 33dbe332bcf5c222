// Tensor-core GEMM through cooperative matrices (issue 18): C[z] = A[z] @ B[z]
// for z < batch, float16 A (m x k) and B (k x n) as strided views (transposed
// and broadcast operands need no copy, as in shaders/matmul.wgsl) and C
// float16, contiguous (row stride n).
//
// A template, not compiled as written: backend/gpu/matmul_coop.rs substitutes
// the fragment side (coop_mat16x16 / F = 16u, or 8), the accumulator type ACC
// (f32, or f16 where the adapter offers only that), the adapter's subgroup
// size SG, and writes the unrolled fragment code at the `// @` lines (WGSL
// cannot index an array of cooperative matrices without spilling it).
enable wgpu_cooperative_matrix;

alias ACC = f32;
alias FragA = coop_mat16x16<f16, A>;
alias FragB = coop_mat16x16<f16, B>;
alias FragC = coop_mat16x16<ACC, C>;

const F: u32 = 16u;  // fragment side (M = N = K)
const SG: u32 = 32u; // subgroup size: one subgroup per WM x WN cell
const WM: u32 = 2u;  // subgroups along m
const WN: u32 = 2u;  // subgroups along n
const FM: u32 = 4u;  // fragments per subgroup along m
const FN: u32 = 4u;  // fragments per subgroup along n
const BM: u32 = WM * FM * F; // workgroup tile: BM x BN of C, BK of K per stage
const BN: u32 = WN * FN * F;
const BK: u32 = 2u * F;
const WG: u32 = WM * WN * SG;
// Staged rows are padded by 8 halves: row strides stay 16-byte multiples (the
// cooperative loads want that) and successive rows change banks.
const LDA: u32 = BK + 8u;
const LDB: u32 = BN + 8u;
const A_TILE: u32 = BM * LDA;
const B_TILE: u32 = BK * LDB;
const A_PER: u32 = BM * BK / WG; // staged elements per invocation
const B_PER: u32 = BK * BN / WG;

// Params (Rust twin: backend/gpu/matmul_coop.rs): sizes, element offsets and
// batch / row / column strides of A and B, C's offset and batch stride; a_mfast
// and b_kfast pick the staging order along the operand's contiguous dimension
// (m for A = X^T, k for B = W^T), so that global loads coalesce.
struct Params {
    m: u32, n: u32, k: u32, batch: u32,
    a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
    b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
    c_off: u32, c_bs: u32,
    a_mfast: u32, b_kfast: u32,
}

@group(0) @binding(0) var<storage, read> a: array<f16>;
@group(0) @binding(1) var<storage, read> b: array<f16>;
@group(0) @binding(2) var<storage, read_write> c: array<f16>;
@group(0) @binding(3) var<storage, read> p: Params;
// matmul_coop_wide views A and B as 8 halves per 16-byte mat2x4 (columns:
// halves 0-3, 4-7), for 16-byte loads; a different entry point, so the
// aliased bindings never meet in a pipeline.
@group(0) @binding(0) var<storage, read> a8: array<mat2x4<f16>>;
@group(0) @binding(1) var<storage, read> b8: array<mat2x4<f16>>;

// Double-buffered stages (row-major, padded): while the fragments multiply one,
// the next K slice travels from global memory through registers into the other.
var<workgroup> sa: array<f16, 2u * A_TILE>;
var<workgroup> sb: array<f16, 2u * B_TILE>;
// One F x F accumulator-typed scratch per subgroup: zeros to start the
// accumulators from, then each result fragment on its way to C.
var<workgroup> sc: array<ACC, WM * WN * F * F>;
var<private> ra: array<f16, A_PER>;
var<private> rb: array<f16, B_PER>;
var<private> ra8: array<mat2x4<f16>, max(A_PER / 8u, 1u)>;
var<private> rb8: array<mat2x4<f16>, max(B_PER / 8u, 1u)>;

// The K slice from k0 into registers; rows and columns past the matrix read 0
// (the padding that makes partial tiles exact).
fn fetch(z: u32, m0: u32, n0: u32, k0: u32, lid: u32) {
    for (var i = 0u; i < A_PER; i++) {
        let e = lid + i * WG;
        var r = e / BK;
        var kk = e % BK;
        if p.a_mfast != 0u {
            r = e % BM;
            kk = e / BM;
        }
        var v = f16(0.0);
        if m0 + r < p.m && k0 + kk < p.k {
            v = a[p.a_off + z * p.a_bs + (m0 + r) * p.a_rs + (k0 + kk) * p.a_cs];
        }
        ra[i] = v;
    }
    for (var i = 0u; i < B_PER; i++) {
        let e = lid + i * WG;
        var kk = e / BN;
        var col = e % BN;
        if p.b_kfast != 0u {
            kk = e % BK;
            col = e / BK;
        }
        var v = f16(0.0);
        if k0 + kk < p.k && n0 + col < p.n {
            v = b[p.b_off + z * p.b_bs + (k0 + kk) * p.b_rs + (n0 + col) * p.b_cs];
        }
        rb[i] = v;
    }
}

// The registers into stage `s`, in the order `fetch` read them.
fn stash(s: u32, lid: u32) {
    for (var i = 0u; i < A_PER; i++) {
        let e = lid + i * WG;
        var r = e / BK;
        var kk = e % BK;
        if p.a_mfast != 0u {
            r = e % BM;
            kk = e / BM;
        }
        sa[s * A_TILE + r * LDA + kk] = ra[i];
    }
    for (var i = 0u; i < B_PER; i++) {
        let e = lid + i * WG;
        var kk = e / BN;
        var col = e % BN;
        if p.b_kfast != 0u {
            kk = e % BK;
            col = e / BK;
        }
        sb[s * B_TILE + kk * LDB + col] = rb[i];
    }
}

// fetch and stash, 8 halves at a time along each operand's contiguous
// dimension, whose extent, offset and other strides are multiples of 8 (the
// launcher checks), so that a run of 8 is wholly inside or outside the matrix.
fn fetch8(z: u32, m0: u32, n0: u32, k0: u32, lid: u32) {
    for (var i = 0u; i < A_PER / 8u; i++) {
        let e = lid + i * WG;
        var r = e / (BK / 8u);
        var kk = (e % (BK / 8u)) * 8u;
        if p.a_mfast != 0u {
            r = (e % (BM / 8u)) * 8u;
            kk = e / (BM / 8u);
        }
        var v = mat2x4<f16>();
        if m0 + r < p.m && k0 + kk < p.k {
            v = a8[(p.a_off + z * p.a_bs + (m0 + r) * p.a_rs + (k0 + kk) * p.a_cs) / 8u];
        }
        ra8[i] = v;
    }
    for (var i = 0u; i < B_PER / 8u; i++) {
        let e = lid + i * WG;
        var kk = e / (BN / 8u);
        var col = (e % (BN / 8u)) * 8u;
        if p.b_kfast != 0u {
            kk = (e % (BK / 8u)) * 8u;
            col = e / (BK / 8u);
        }
        var v = mat2x4<f16>();
        if k0 + kk < p.k && n0 + col < p.n {
            v = b8[(p.b_off + z * p.b_bs + (k0 + kk) * p.b_rs + (n0 + col) * p.b_cs) / 8u];
        }
        rb8[i] = v;
    }
}

fn stash8(s: u32, lid: u32) {
    for (var i = 0u; i < A_PER / 8u; i++) {
        let e = lid + i * WG;
        var h = ra8[i];
        // The run of 8 goes along k (k-fast) or down the rows (m-fast).
        var at = s * A_TILE + (e / (BK / 8u)) * LDA + (e % (BK / 8u)) * 8u;
        var step = 1u;
        if p.a_mfast != 0u {
            at = s * A_TILE + (e % (BM / 8u)) * 8u * LDA + e / (BM / 8u);
            step = LDA;
        }
        for (var j = 0u; j < 8u; j++) {
            sa[at + j * step] = h[j / 4u][j % 4u];
        }
    }
    for (var i = 0u; i < B_PER / 8u; i++) {
        let e = lid + i * WG;
        var h = rb8[i];
        var at = s * B_TILE + (e / (BN / 8u)) * LDB + (e % (BN / 8u)) * 8u;
        var step = 1u;
        if p.b_kfast != 0u {
            at = s * B_TILE + (e % (BK / 8u)) * 8u * LDB + e / (BK / 8u);
            step = LDB;
        }
        for (var j = 0u; j < 8u; j++) {
            sb[at + j * step] = h[j / 4u][j % 4u];
        }
    }
}

// A subgroup's fragment, parked in its scratch at `base`, into C at (r0, c0).
fn emit(z: u32, r0: u32, c0: u32, base: u32, lane: u32) {
    for (var e = lane; e < F * F; e += SG) {
        let r = r0 + e / F;
        let col = c0 + e % F;
        if r < p.m && col < p.n {
            c[p.c_off + z * p.c_bs + r * p.n + col] = f16(sc[base + e]);
        }
    }
}

// Grid: (ceil(n / BN), ceil(m / BM), batch). Subgroup s computes the
// FM x FN fragments at row block s / WN, column block s % WN of the tile.
@compute @workgroup_size(WG)
fn matmul_coop(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    gemm(wg, lid, sg, lane);
}

@compute @workgroup_size(WG)
fn matmul_coop_wide(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_id) sg: u32,
    @builtin(subgroup_invocation_id) lane: u32,
) {
    gemm8(wg, lid, sg, lane);
}

// matmul_coop's body. The launcher appends a copy, gemm8, that stages through
// fetch8 and stash8 for matmul_coop_wide (one function with a flag would put
// both views of A and B in each entry point, which WGSL forbids).
// The launcher also appends the direct entry points after it.
fn gemm(wg: vec3<u32>, lid: u32, sg: u32, lane: u32) {
    let z = wg.z;
    let m0 = wg.y * BM;
    let n0 = wg.x * BN;
    let cb = sg * F * F;
    for (var i = lid; i < WM * WN * F * F; i += WG) {
        sc[i] = ACC(0.0);
    }
    let tiles = (p.k + BK - 1u) / BK;
    fetch(z, m0, n0, 0u, lid);
    stash(0u, lid);
    workgroupBarrier();
    // @INIT
    for (var t = 0u; t < tiles; t++) {
        let cur = t % 2u;
        if t + 1u < tiles {
            fetch(z, m0, n0, (t + 1u) * BK, lid);
        }
        let ab = cur * A_TILE + (sg / WN) * FM * F * LDA;
        let bb = cur * B_TILE + (sg % WN) * FN * F;
        // @MMA
        if t + 1u < tiles {
            stash(1u - cur, lid);
        }
        workgroupBarrier();
    }
    let r0 = m0 + (sg / WN) * FM * F;
    let c0 = n0 + (sg % WN) * FN * F;
    // @STORE
}

// @DIRECT_KERNEL (the launcher cuts the template here)
// The direct kernel (Coop::Direct): each subgroup loads its fragments straight
// from the storage buffers, with no staging through workgroup memory and its
// barriers; the caches serve the reuse between subgroups. The launcher turns
// this body into matmul_coop_direct_{r,c}{r,c}, with A and B read row- or
// column-major (coopLoadT / coopLoad) in the loop over k it writes at
// `// @DIRECT`, and takes it only for
// whole tiles (m and n multiples of BM and BN, k of F) whose strided rows start
// on 16 bytes.
fn gemm_direct(wg: vec3<u32>, lid: u32, sg: u32, lane: u32) {
    let z = wg.z;
    let r0 = wg.y * BM + (sg / WN) * FM * F;
    let c0 = wg.x * BN + (sg % WN) * FN * F;
    let cb = sg * F * F;
    for (var i = lid; i < WM * WN * F * F; i += WG) {
        sc[i] = ACC(0.0);
    }
    workgroupBarrier();
    // @INIT
    let ab = p.a_off + z * p.a_bs + r0 * p.a_rs;
    let bb = p.b_off + z * p.b_bs + c0 * p.b_cs;
    // @DIRECT
    // @STORE
}
