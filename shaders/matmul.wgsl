// Batched GEMM: C[z] = epilogue(alpha * A[z] @ B[z] + beta * C[z]) for z <
// batch, with A[z] (m x k) and B[z] (k x n) strided views (transposed and
// stride-0 broadcast operands need no copy) and C contiguous (row stride n).
// Float kernels use T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params (Rust twin: backend/gpu/matmul.rs):
//   m, n, k, batch: u32
//   a_off, a_bs, a_rs, a_cs: u32   element offset, batch / row / column strides
//   b_off, b_bs, b_rs, b_cs: u32
//   c_off, c_bs: u32               C's row stride is n, its column stride 1
//   alpha, beta: f32               beta == 0 never reads C (it may hold NaN garbage)
//   bias_off: u32                  bias[bias_off + column], added when epi bit 0
//   res_off, res_bs: u32           residual laid out like C (row stride n), added last when epi bit 1
//   epi: u32                       bit 0 bias, bit 1 residual, bits 2..4 activation (act below)
struct Params {
    m: u32, n: u32, k: u32, batch: u32,
    a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
    b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
    c_off: u32, c_bs: u32,
    alpha: f32, beta: f32,
    bias_off: u32, res_off: u32, res_bs: u32, epi: u32,
}

// Every entry point: bindings 0 a (T, read), 1 b (T, read), 2 c (T,
// read_write), 3 bias (T, read), 4 residual (T, read), 5 params. The _vec4
// entries view a, b, c as vec4<T> (other entry points, so the aliased
// bindings never meet in one pipeline).
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;
@group(0) @binding(3) var<storage, read> bias: array<T>;
@group(0) @binding(4) var<storage, read> res: array<T>;
@group(0) @binding(5) var<storage, read> p: Params;
@group(0) @binding(0) var<storage, read> a4: array<vec4<T>>;
@group(0) @binding(1) var<storage, read> b4: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> c4: array<vec4<T>>;

// Tiling: a workgroup of tm·tn/64 threads computes a tm x tn tile of C
// (tm, tn in {64, 128}: one entry point per shape, chosen per shape class by
// backend/gpu/autotune.rs), each thread 8 x 8 outputs held in 16 named vec4
// variables. Not an array (indexed in loops, it ran at 1.9 TFLOP/s on an
// H100), nor a struct updated through a pointer (26 TFLOP/s): named
// variables ran at 32, so the multiply loop is spelled out (once for scalar
// and once for vec4 loads). The tile sides are constant arguments of the
// entry points' one call, which the driver folds.
// K advances in slices of 8 through double-buffered workgroup tiles: one
// barrier per slice, the next slice's global loads in flight meanwhile.
// Each operand is read along its contiguous dimension, so that a warp's loads
// are coalesced:
//   A: k-fast unless a_rs == 1 != a_cs (m-fast, e.g. A = X^T);
//   B: n-fast unless b_rs == 1 != b_cs (k-fast, e.g. B = W^T).
// Grid: (ceil(n / tn), ceil(m / tm), batch), batch <= 65535.
const VK: u32 = 8u; // K slice
// 2 buffers x VK k-rows x tm/4 vec4s: Ta[buf][k][m / 4] (Tb: [buf][k][n / 4]).
var<workgroup> Ta: array<vec4<f32>, 512>;
var<workgroup> Tb: array<vec4<f32>, 512>;

fn a_kfast() -> bool {
    return p.a_cs == 1u || p.a_rs != 1u;
}
fn b_nfast() -> bool {
    return p.b_cs == 1u || p.b_rs != 1u;
}

// A slice of an operand (side rows/columns x VK) is loaded as 2·side groups of
// 4 consecutive elements along the fast dimension; group g's tile coordinates
// (m or n, k) of its first element:
//   along k: (g / 2, (g % 2) * 4); along m or n: ((g % (side/4)) * 4, g / (side/4)).
fn pos(g: u32, side: u32, kfast: bool) -> vec2<u32> {
    if (kfast) {
        return vec2<u32>(g >> 1u, (g & 1u) * 4u);
    }
    let q = side >> 2u;
    return vec2<u32>((g % q) * 4u, g / q);
}

// Writes group g's 4 values into buffer `buf` of the k-major tile Ta: one vec4
// when they run along m, 4 transposing scalar stores when along k.
fn store_a_group(g: u32, tm: u32, buf: u32, v: vec4<f32>) {
    let kf = a_kfast();
    let q = pos(g, tm, kf);
    let vr = tm >> 2u;
    let i = buf + q.y * vr + (q.x >> 2u);
    if (kf) {
        let j = q.x & 3u;
        Ta[i][j] = v.x;
        Ta[i + vr][j] = v.y;
        Ta[i + 2u * vr][j] = v.z;
        Ta[i + 3u * vr][j] = v.w;
    } else {
        Ta[i] = v;
    }
}
fn store_b_group(g: u32, tn: u32, buf: u32, v: vec4<f32>) {
    let kf = !b_nfast();
    let q = pos(g, tn, kf);
    let vr = tn >> 2u;
    let i = buf + q.y * vr + (q.x >> 2u);
    if (kf) {
        let j = q.x & 3u;
        Tb[i][j] = v.x;
        Tb[i + vr][j] = v.y;
        Tb[i + 2u * vr][j] = v.z;
        Tb[i + 3u * vr][j] = v.w;
    } else {
        Tb[i] = v;
    }
}

// Scalar loads: any strides (including 0), offsets and sizes.
fn load_a(i: u32, ok: bool) -> f32 {
    // A branch, not select: select would read out of bounds.
    if (ok) { return f32(a[i]); }
    return 0.0;
}
fn load_b(i: u32, ok: bool) -> f32 {
    if (ok) { return f32(b[i]); }
    return 0.0;
}
// Group g of the A (B) slice at k0, zero outside the matrix.
fn load_a_group(g: u32, tm: u32, row0: u32, k0: u32, base: u32) -> vec4<f32> {
    let kf = a_kfast();
    let q = pos(g, tm, kf);
    let m = row0 + q.x;
    let k = k0 + q.y;
    let i = base + m * p.a_rs + k * p.a_cs;
    if (kf) {
        let ok = m < p.m;
        return vec4<f32>(load_a(i, ok && k < p.k), load_a(i + p.a_cs, ok && k + 1u < p.k),
                         load_a(i + 2u * p.a_cs, ok && k + 2u < p.k), load_a(i + 3u * p.a_cs, ok && k + 3u < p.k));
    }
    let ok = k < p.k;
    return vec4<f32>(load_a(i, ok && m < p.m), load_a(i + p.a_rs, ok && m + 1u < p.m),
                     load_a(i + 2u * p.a_rs, ok && m + 2u < p.m), load_a(i + 3u * p.a_rs, ok && m + 3u < p.m));
}
fn load_b_group(g: u32, tn: u32, col0: u32, k0: u32, base: u32) -> vec4<f32> {
    let kf = !b_nfast();
    let q = pos(g, tn, kf);
    let n = col0 + q.x;
    let k = k0 + q.y;
    let i = base + k * p.b_rs + n * p.b_cs;
    if (!kf) {
        let ok = k < p.k;
        return vec4<f32>(load_b(i, ok && n < p.n), load_b(i + p.b_cs, ok && n + 1u < p.n),
                         load_b(i + 2u * p.b_cs, ok && n + 2u < p.n), load_b(i + 3u * p.b_cs, ok && n + 3u < p.n));
    }
    let ok = n < p.n;
    return vec4<f32>(load_b(i, ok && k < p.k), load_b(i + p.b_rs, ok && k + 1u < p.k),
                     load_b(i + 2u * p.b_rs, ok && k + 2u < p.k), load_b(i + 3u * p.b_rs, ok && k + 3u < p.k));
}
// vec4 loads, for the _vec4 entries: the caller uses them only when n % 4 ==
// 0, c_off % 4 == 0, and for each operand its fast dimension (k or m for A, n
// or k for B) is a multiple of 4 and its offset and other strides are
// multiples of 4: then every vec4 is aligned and wholly inside or outside.
fn load_a4_group(g: u32, tm: u32, row0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = pos(g, tm, a_kfast());
    let m = row0 + q.x;
    let k = k0 + q.y;
    if (m < p.m && k < p.k) {
        return vec4<f32>(a4[(base + m * p.a_rs + k * p.a_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}
fn load_b4_group(g: u32, tn: u32, col0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = pos(g, tn, !b_nfast());
    let n = col0 + q.x;
    let k = k0 + q.y;
    if (n < p.n && k < p.k) {
        return vec4<f32>(b4[(base + k * p.b_rs + n * p.b_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}

// The epilogue's activations (codes: backend/gpu/matmul.rs Act).
// erfc with relative error < 1.2e-7 (a Chebyshev fit, Numerical Recipes 6.2).
fn erfc_(x: f32) -> f32 {
    let z = abs(x);
    let t = 1.0 / (1.0 + 0.5 * z);
    let r = t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806
        + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))));
    return select(r, 2.0 - r, x < 0.0);
}
fn act(x: f32, code: u32) -> f32 {
    switch code {
        case 1u: { return select(x, 0.0, x < 0.0); } // relu (NaN stays NaN)
        case 2u: { return 0.5 * x * erfc_(-x * 0.70710678118654752); } // gelu
        case 3u: {
            // gelu, tanh approximation; tanh's argument clamped where it is ±1 in f32
            let u = clamp(0.79788456080286536 * (x + 0.044715 * x * x * x), -15.0, 15.0);
            return 0.5 * x * (1.0 + tanh(u));
        }
        case 4u: { return x / (1.0 + exp(-x)); } // silu
        default: { return x; }
    }
}
// alpha·acc (+ beta·C) (+ bias) -> activation (+ residual), for C's element
// `i` (relative to the batch's c_base) in column `col` of batch `z`.
fn epilogue(acc: f32, old: f32, col: u32, i: u32, z: u32) -> T {
    var o = acc * p.alpha;
    // beta == 0 never reads C (it may hold NaN garbage).
    if (p.beta != 0.0) {
        o += p.beta * old;
    }
    if ((p.epi & 1u) != 0u) {
        o += f32(bias[p.bias_off + col]);
    }
    o = act(o, (p.epi >> 2u) & 7u);
    if ((p.epi & 2u) != 0u) {
        o += f32(res[p.res_off + z * p.res_bs + i]);
    }
    return T(o);
}

// Stores columns col..col+3 and col+h..col+h+3 of output row `row`, inside C only.
fn store_c_row(row: u32, col: u32, h: u32, z: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let base = p.c_off + z * p.c_bs;
    let i = row * p.n + col;
    for (var j = 0u; j < 8u; j++) {
        let jj = select(j, h - 4u + j, j >= 4u); // columns 0..3, then h..h+3
        if (col + jj < p.n) {
            var old = 0.0;
            if (p.beta != 0.0) {
                old = f32(c[base + i + jj]);
            }
            c[base + i + jj] = epilogue(select(v0[j & 3u], v1[j & 3u], j >= 4u), old, col + jj, i + jj, z);
        }
    }
}
fn store_c4(i: u32, col: u32, z: u32, v: vec4<f32>) {
    let base = p.c_off + z * p.c_bs;
    var old = vec4<f32>(0.0);
    if (p.beta != 0.0) {
        old = vec4<f32>(c4[(base + i) >> 2u]);
    }
    c4[(base + i) >> 2u] = vec4<T>(epilogue(v.x, old.x, col, i, z), epilogue(v.y, old.y, col + 1u, i + 1u, z),
                                   epilogue(v.z, old.z, col + 2u, i + 2u, z), epilogue(v.w, old.w, col + 3u, i + 3u, z));
}
fn store_c4_row(row: u32, col: u32, h: u32, z: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let i = row * p.n + col;
    if (col < p.n) {
        store_c4(i, col, z, v0);
    }
    if (col + h < p.n) {
        store_c4(i + h, col + h, z, v1);
    }
}

// One tm x tn tile with scalar loads. Thread (tx, ty) owns rows
// hm*tm/2 + ty*4 + 0..3 and columns hn*tn/2 + tx*4 + 0..3, hm, hn in {0, 1};
// acc<i><hn>: row ty*4 + i (i < 4) or tm/2 + ty*4 + i - 4, column half hn.
// Each thread loads 128/tn groups of A and 128/tm of B per slice.
fn gemm_tile(wid: vec3<u32>, t: u32, tm: u32, tn: u32) {
    let sn = tn >> 3u;
    let tx = t % sn;
    let ty = t / sn;
    let nt = (tm * tn) >> 6u;
    let row0 = wid.y * tm;
    let col0 = wid.x * tn;
    let a_base = p.a_off + wid.z * p.a_bs;
    let b_base = p.b_off + wid.z * p.b_bs;
    let two_a = tn == 64u;
    let two_b = tm == 64u;
    let va = tm >> 2u;
    let vb = tn >> 2u;
    var acc00 = vec4<f32>(0.0); var acc01 = vec4<f32>(0.0);
    var acc10 = vec4<f32>(0.0); var acc11 = vec4<f32>(0.0);
    var acc20 = vec4<f32>(0.0); var acc21 = vec4<f32>(0.0);
    var acc30 = vec4<f32>(0.0); var acc31 = vec4<f32>(0.0);
    var acc40 = vec4<f32>(0.0); var acc41 = vec4<f32>(0.0);
    var acc50 = vec4<f32>(0.0); var acc51 = vec4<f32>(0.0);
    var acc60 = vec4<f32>(0.0); var acc61 = vec4<f32>(0.0);
    var acc70 = vec4<f32>(0.0); var acc71 = vec4<f32>(0.0);
    store_a_group(t, tm, 0u, load_a_group(t, tm, row0, 0u, a_base));
    store_b_group(t, tn, 0u, load_b_group(t, tn, col0, 0u, b_base));
    if (two_a) { store_a_group(t + nt, tm, 0u, load_a_group(t + nt, tm, row0, 0u, a_base)); }
    if (two_b) { store_b_group(t + nt, tn, 0u, load_b_group(t + nt, tn, col0, 0u, b_base)); }
    workgroupBarrier();
    var cur = 0u; // 0 or 1: the buffer this slice reads
    for (var k0 = 0u; k0 < p.k; k0 += VK) {
        let k1 = k0 + VK;
        let more = k1 < p.k;
        var ra0 = vec4<f32>(0.0); var ra1 = vec4<f32>(0.0);
        var rb0 = vec4<f32>(0.0); var rb1 = vec4<f32>(0.0);
        if (more) {
            ra0 = load_a_group(t, tm, row0, k1, a_base);
            rb0 = load_b_group(t, tn, col0, k1, b_base);
            if (two_a) { ra1 = load_a_group(t + nt, tm, row0, k1, a_base); }
            if (two_b) { rb1 = load_b_group(t + nt, tn, col0, k1, b_base); }
        }
        var ia = cur * VK * va + ty;
        var ib = cur * VK * vb + tx;
        for (var kk = 0u; kk < VK; kk++) {
            let a0 = Ta[ia];
            let a1 = Ta[ia + (tm >> 3u)];
            let b0 = Tb[ib];
            let b1 = Tb[ib + (tn >> 3u)];
            ia += va;
            ib += vb;
            acc00 = fma(vec4<f32>(a0.x), b0, acc00); acc01 = fma(vec4<f32>(a0.x), b1, acc01);
            acc10 = fma(vec4<f32>(a0.y), b0, acc10); acc11 = fma(vec4<f32>(a0.y), b1, acc11);
            acc20 = fma(vec4<f32>(a0.z), b0, acc20); acc21 = fma(vec4<f32>(a0.z), b1, acc21);
            acc30 = fma(vec4<f32>(a0.w), b0, acc30); acc31 = fma(vec4<f32>(a0.w), b1, acc31);
            acc40 = fma(vec4<f32>(a1.x), b0, acc40); acc41 = fma(vec4<f32>(a1.x), b1, acc41);
            acc50 = fma(vec4<f32>(a1.y), b0, acc50); acc51 = fma(vec4<f32>(a1.y), b1, acc51);
            acc60 = fma(vec4<f32>(a1.z), b0, acc60); acc61 = fma(vec4<f32>(a1.z), b1, acc61);
            acc70 = fma(vec4<f32>(a1.w), b0, acc70); acc71 = fma(vec4<f32>(a1.w), b1, acc71);
        }
        // The other buffer was last read before the previous barrier: fill it now.
        cur = 1u - cur;
        if (more) {
            store_a_group(t, tm, cur * VK * va, ra0);
            store_b_group(t, tn, cur * VK * vb, rb0);
            if (two_a) { store_a_group(t + nt, tm, cur * VK * va, ra1); }
            if (two_b) { store_b_group(t + nt, tn, cur * VK * vb, rb1); }
        }
        workgroupBarrier();
    }
    let r0 = row0 + ty * 4u;
    let r1 = r0 + (tm >> 1u);
    let col = col0 + tx * 4u;
    let h = tn >> 1u;
    store_c_row(r0, col, h, wid.z, acc00, acc01);
    store_c_row(r0 + 1u, col, h, wid.z, acc10, acc11);
    store_c_row(r0 + 2u, col, h, wid.z, acc20, acc21);
    store_c_row(r0 + 3u, col, h, wid.z, acc30, acc31);
    store_c_row(r1, col, h, wid.z, acc40, acc41);
    store_c_row(r1 + 1u, col, h, wid.z, acc50, acc51);
    store_c_row(r1 + 2u, col, h, wid.z, acc60, acc61);
    store_c_row(r1 + 3u, col, h, wid.z, acc70, acc71);
}

// The same with vec4 loads and stores.
fn gemm_tile4(wid: vec3<u32>, t: u32, tm: u32, tn: u32) {
    let sn = tn >> 3u;
    let tx = t % sn;
    let ty = t / sn;
    let nt = (tm * tn) >> 6u;
    let row0 = wid.y * tm;
    let col0 = wid.x * tn;
    let a_base = p.a_off + wid.z * p.a_bs;
    let b_base = p.b_off + wid.z * p.b_bs;
    let two_a = tn == 64u;
    let two_b = tm == 64u;
    let va = tm >> 2u;
    let vb = tn >> 2u;
    var acc00 = vec4<f32>(0.0); var acc01 = vec4<f32>(0.0);
    var acc10 = vec4<f32>(0.0); var acc11 = vec4<f32>(0.0);
    var acc20 = vec4<f32>(0.0); var acc21 = vec4<f32>(0.0);
    var acc30 = vec4<f32>(0.0); var acc31 = vec4<f32>(0.0);
    var acc40 = vec4<f32>(0.0); var acc41 = vec4<f32>(0.0);
    var acc50 = vec4<f32>(0.0); var acc51 = vec4<f32>(0.0);
    var acc60 = vec4<f32>(0.0); var acc61 = vec4<f32>(0.0);
    var acc70 = vec4<f32>(0.0); var acc71 = vec4<f32>(0.0);
    store_a_group(t, tm, 0u, load_a4_group(t, tm, row0, 0u, a_base));
    store_b_group(t, tn, 0u, load_b4_group(t, tn, col0, 0u, b_base));
    if (two_a) { store_a_group(t + nt, tm, 0u, load_a4_group(t + nt, tm, row0, 0u, a_base)); }
    if (two_b) { store_b_group(t + nt, tn, 0u, load_b4_group(t + nt, tn, col0, 0u, b_base)); }
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = 0u; k0 < p.k; k0 += VK) {
        let k1 = k0 + VK;
        let more = k1 < p.k;
        var ra0 = vec4<f32>(0.0); var ra1 = vec4<f32>(0.0);
        var rb0 = vec4<f32>(0.0); var rb1 = vec4<f32>(0.0);
        if (more) {
            ra0 = load_a4_group(t, tm, row0, k1, a_base);
            rb0 = load_b4_group(t, tn, col0, k1, b_base);
            if (two_a) { ra1 = load_a4_group(t + nt, tm, row0, k1, a_base); }
            if (two_b) { rb1 = load_b4_group(t + nt, tn, col0, k1, b_base); }
        }
        var ia = cur * VK * va + ty;
        var ib = cur * VK * vb + tx;
        for (var kk = 0u; kk < VK; kk++) {
            let a0 = Ta[ia];
            let a1 = Ta[ia + (tm >> 3u)];
            let b0 = Tb[ib];
            let b1 = Tb[ib + (tn >> 3u)];
            ia += va;
            ib += vb;
            acc00 = fma(vec4<f32>(a0.x), b0, acc00); acc01 = fma(vec4<f32>(a0.x), b1, acc01);
            acc10 = fma(vec4<f32>(a0.y), b0, acc10); acc11 = fma(vec4<f32>(a0.y), b1, acc11);
            acc20 = fma(vec4<f32>(a0.z), b0, acc20); acc21 = fma(vec4<f32>(a0.z), b1, acc21);
            acc30 = fma(vec4<f32>(a0.w), b0, acc30); acc31 = fma(vec4<f32>(a0.w), b1, acc31);
            acc40 = fma(vec4<f32>(a1.x), b0, acc40); acc41 = fma(vec4<f32>(a1.x), b1, acc41);
            acc50 = fma(vec4<f32>(a1.y), b0, acc50); acc51 = fma(vec4<f32>(a1.y), b1, acc51);
            acc60 = fma(vec4<f32>(a1.z), b0, acc60); acc61 = fma(vec4<f32>(a1.z), b1, acc61);
            acc70 = fma(vec4<f32>(a1.w), b0, acc70); acc71 = fma(vec4<f32>(a1.w), b1, acc71);
        }
        cur = 1u - cur;
        if (more) {
            store_a_group(t, tm, cur * VK * va, ra0);
            store_b_group(t, tn, cur * VK * vb, rb0);
            if (two_a) { store_a_group(t + nt, tm, cur * VK * va, ra1); }
            if (two_b) { store_b_group(t + nt, tn, cur * VK * vb, rb1); }
        }
        workgroupBarrier();
    }
    let r0 = row0 + ty * 4u;
    let r1 = r0 + (tm >> 1u);
    let col = col0 + tx * 4u;
    let h = tn >> 1u;
    store_c4_row(r0, col, h, wid.z, acc00, acc01);
    store_c4_row(r0 + 1u, col, h, wid.z, acc10, acc11);
    store_c4_row(r0 + 2u, col, h, wid.z, acc20, acc21);
    store_c4_row(r0 + 3u, col, h, wid.z, acc30, acc31);
    store_c4_row(r1, col, h, wid.z, acc40, acc41);
    store_c4_row(r1 + 1u, col, h, wid.z, acc50, acc51);
    store_c4_row(r1 + 2u, col, h, wid.z, acc60, acc61);
    store_c4_row(r1 + 3u, col, h, wid.z, acc70, acc71);
}

// Entry points: matmul[_<tm>x<tn>][_vec4]; the unsuffixed shape is 128 x 128.
@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile(w, t, 128u, 128u); }
@compute @workgroup_size(256)
fn matmul_vec4(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile4(w, t, 128u, 128u); }
@compute @workgroup_size(128)
fn matmul_128x64(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile(w, t, 128u, 64u); }
@compute @workgroup_size(128)
fn matmul_128x64_vec4(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile4(w, t, 128u, 64u); }
@compute @workgroup_size(128)
fn matmul_64x128(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile(w, t, 64u, 128u); }
@compute @workgroup_size(128)
fn matmul_64x128_vec4(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile4(w, t, 64u, 128u); }
@compute @workgroup_size(64)
fn matmul_64x64(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile(w, t, 64u, 64u); }
@compute @workgroup_size(64)
fn matmul_64x64_vec4(@builtin(workgroup_id) w: vec3<u32>, @builtin(local_invocation_index) t: u32) { gemm_tile4(w, t, 64u, 64u); }
