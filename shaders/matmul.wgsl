// Batched GEMM: C[z] = alpha * A[z] @ B[z] + beta * C[z] for z < batch, with
// A[z] (m x k) and B[z] (k x n) strided views (transposed and stride-0
// broadcast operands need no copy) and C contiguous (row stride n).
// Float kernels use T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params (Rust twin: backend/gpu/matmul.rs):
//   m, n, k, batch: u32
//   a_off, a_bs, a_rs, a_cs: u32   element offset, batch / row / column strides
//   b_off, b_bs, b_rs, b_cs: u32
//   c_off, c_bs: u32               C's row stride is n, its column stride 1
//   alpha, beta: f32               beta == 0 never reads C (it may hold NaN garbage)
struct Params {
    m: u32, n: u32, k: u32, batch: u32,
    a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
    b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
    c_off: u32, c_bs: u32,
    alpha: f32, beta: f32,
}

// Both entry points: bindings 0 a (T, read), 1 b (T, read), 2 c (T, read_write),
// 3 params. matmul_vec4 views the same buffers as vec4<T> (a different entry
// point, so the aliased bindings never meet in one pipeline).
@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> c: array<T>;
@group(0) @binding(3) var<storage, read> p: Params;
@group(0) @binding(0) var<storage, read> a4: array<vec4<T>>;
@group(0) @binding(1) var<storage, read> b4: array<vec4<T>>;
@group(0) @binding(2) var<storage, read_write> c4: array<vec4<T>>;

// Tiling (both entries): a workgroup of 256 threads computes a 128 x 128
// tile of C, each thread 8 x 8 outputs held in 16 named vec4 variables. Not
// an array (indexed in loops, it ran at 1.9 TFLOP/s on an H100), nor a struct
// updated through a pointer (26 TFLOP/s): named variables ran at 32, so each
// entry spells out its multiply loop.
// K advances in slices of 8 through double-buffered workgroup tiles: one
// barrier per slice, the next slice's global loads in flight meanwhile.
// Each operand is read along its contiguous dimension, so that a warp's loads
// are coalesced:
//   A: k-fast unless a_rs == 1 != a_cs (m-fast, e.g. A = X^T);
//   B: n-fast unless b_rs == 1 != b_cs (k-fast, e.g. B = W^T).
// Grid: (ceil(n / 128), ceil(m / 128), batch), batch <= 65535.
const VT: u32 = 128u; // tile side
const VK: u32 = 8u;   // K slice
const VR: u32 = 32u;  // vec4s per k-row of a tile
var<workgroup> Ta: array<vec4<f32>, 512>; // 2 buffers x VK k-rows x VR: Ta[k][m]
var<workgroup> Tb: array<vec4<f32>, 512>; // Tb[k][n]

fn a_kfast() -> bool {
    return p.a_cs == 1u || p.a_rs != 1u;
}
fn b_nfast() -> bool {
    return p.b_cs == 1u || p.b_rs != 1u;
}

// Each thread loads 4 consecutive elements along the fast dimension per slice:
// A k-fast: row t/2, k (t%2)*4 + 0..3; m-fast: k-row t/32, rows (t%32)*4 + 0..3.
// B n-fast: k-row t/32, columns (t%32)*4 + 0..3; k-fast: column t/2, k (t%2)*4 + 0..3.
// The tile coordinates of the first of the four: (m or n, k).
fn a_pos(t: u32) -> vec2<u32> {
    if (a_kfast()) {
        return vec2<u32>(t >> 1u, (t & 1u) * 4u);
    }
    return vec2<u32>((t & 31u) * 4u, t >> 5u);
}
fn b_pos(t: u32) -> vec2<u32> {
    if (b_nfast()) {
        return vec2<u32>((t & 31u) * 4u, t >> 5u);
    }
    return vec2<u32>(t >> 1u, (t & 1u) * 4u);
}

// Writes a thread's 4 loaded values into buffer `buf` of a k-major tile:
// one vec4 when they run along m (or n), 4 transposing scalar stores when along k.
fn store_a_slice(t: u32, buf: u32, v: vec4<f32>) {
    let q = a_pos(t);
    if (a_kfast()) {
        let i = buf + q.y * VR + (q.x >> 2u);
        let j = q.x & 3u;
        Ta[i][j] = v.x;
        Ta[i + VR][j] = v.y;
        Ta[i + 2u * VR][j] = v.z;
        Ta[i + 3u * VR][j] = v.w;
    } else {
        Ta[buf + q.y * VR + (q.x >> 2u)] = v;
    }
}
fn store_b_slice(t: u32, buf: u32, v: vec4<f32>) {
    let q = b_pos(t);
    if (b_nfast()) {
        Tb[buf + q.y * VR + (q.x >> 2u)] = v;
    } else {
        let i = buf + q.y * VR + (q.x >> 2u);
        let j = q.x & 3u;
        Tb[i][j] = v.x;
        Tb[i + VR][j] = v.y;
        Tb[i + 2u * VR][j] = v.z;
        Tb[i + 3u * VR][j] = v.w;
    }
}

// `matmul`: the general strided kernel; any strides (including 0), offsets and sizes.
fn load_a(i: u32, ok: bool) -> f32 {
    // A branch, not select: select would read out of bounds.
    if (ok) { return f32(a[i]); }
    return 0.0;
}
fn load_b(i: u32, ok: bool) -> f32 {
    if (ok) { return f32(b[i]); }
    return 0.0;
}
// The thread's 4 elements of the A (B) slice at k0, zero outside the matrix.
fn load_a_slice(t: u32, row0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = a_pos(t);
    let m = row0 + q.x;
    let k = k0 + q.y;
    let i = base + m * p.a_rs + k * p.a_cs;
    if (a_kfast()) {
        let ok = m < p.m;
        return vec4<f32>(load_a(i, ok && k < p.k), load_a(i + p.a_cs, ok && k + 1u < p.k),
                         load_a(i + 2u * p.a_cs, ok && k + 2u < p.k), load_a(i + 3u * p.a_cs, ok && k + 3u < p.k));
    }
    let ok = k < p.k;
    return vec4<f32>(load_a(i, ok && m < p.m), load_a(i + p.a_rs, ok && m + 1u < p.m),
                     load_a(i + 2u * p.a_rs, ok && m + 2u < p.m), load_a(i + 3u * p.a_rs, ok && m + 3u < p.m));
}
fn load_b_slice(t: u32, col0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = b_pos(t);
    let n = col0 + q.x;
    let k = k0 + q.y;
    let i = base + k * p.b_rs + n * p.b_cs;
    if (b_nfast()) {
        let ok = k < p.k;
        return vec4<f32>(load_b(i, ok && n < p.n), load_b(i + p.b_cs, ok && n + 1u < p.n),
                         load_b(i + 2u * p.b_cs, ok && n + 2u < p.n), load_b(i + 3u * p.b_cs, ok && n + 3u < p.n));
    }
    let ok = n < p.n;
    return vec4<f32>(load_b(i, ok && k < p.k), load_b(i + p.b_rs, ok && k + 1u < p.k),
                     load_b(i + 2u * p.b_rs, ok && k + 2u < p.k), load_b(i + 3u * p.b_rs, ok && k + 3u < p.k));
}
// Stores columns col..col+3 and col+64..col+67 of output row `row`, inside C only.
fn store_c_row(row: u32, col: u32, c_base: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let i = c_base + row * p.n + col;
    for (var j = 0u; j < 8u; j++) {
        let jj = select(j, 60u + j, j >= 4u); // columns 0..3, then 64..67
        if (col + jj < p.n) {
            var o = select(v0[j & 3u], v1[j & 3u], j >= 4u) * p.alpha;
            // beta == 0 never reads C (it may hold NaN garbage).
            if (p.beta != 0.0) {
                o += p.beta * f32(c[i + jj]);
            }
            c[i + jj] = T(o);
        }
    }
}

@compute @workgroup_size(256)
fn matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tx = t & 15u;
    let ty = t >> 4u;
    let row0 = wid.y * VT;
    let col0 = wid.x * VT;
    let a_base = p.a_off + wid.z * p.a_bs;
    let b_base = p.b_off + wid.z * p.b_bs;
    // Thread (tx, ty) owns rows h*64 + ty*4 + 0..3 and columns h*64 + tx*4 + 0..3,
    // h in {0, 1}. acc<i><h>: row ty*4 + i (i < 4) or 64 + ty*4 + i - 4, column half h.
    var acc00 = vec4<f32>(0.0); var acc01 = vec4<f32>(0.0);
    var acc10 = vec4<f32>(0.0); var acc11 = vec4<f32>(0.0);
    var acc20 = vec4<f32>(0.0); var acc21 = vec4<f32>(0.0);
    var acc30 = vec4<f32>(0.0); var acc31 = vec4<f32>(0.0);
    var acc40 = vec4<f32>(0.0); var acc41 = vec4<f32>(0.0);
    var acc50 = vec4<f32>(0.0); var acc51 = vec4<f32>(0.0);
    var acc60 = vec4<f32>(0.0); var acc61 = vec4<f32>(0.0);
    var acc70 = vec4<f32>(0.0); var acc71 = vec4<f32>(0.0);
    store_a_slice(t, 0u, load_a_slice(t, row0, 0u, a_base));
    store_b_slice(t, 0u, load_b_slice(t, col0, 0u, b_base));
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = 0u; k0 < p.k; k0 += VK) {
        let k1 = k0 + VK;
        let more = k1 < p.k;
        var ra = vec4<f32>(0.0);
        var rb = vec4<f32>(0.0);
        if (more) {
            ra = load_a_slice(t, row0, k1, a_base);
            rb = load_b_slice(t, col0, k1, b_base);
        }
        for (var kk = cur; kk < cur + VK * VR; kk += VR) {
            let a0 = Ta[kk + ty];
            let a1 = Ta[kk + 16u + ty];
            let b0 = Tb[kk + tx];
            let b1 = Tb[kk + 16u + tx];
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
        cur = VK * VR - cur;
        if (more) {
            store_a_slice(t, cur, ra);
            store_b_slice(t, cur, rb);
        }
        workgroupBarrier();
    }
    let c_base = p.c_off + wid.z * p.c_bs;
    let r0 = row0 + ty * 4u;
    let col = col0 + tx * 4u;
    store_c_row(r0, col, c_base, acc00, acc01);
    store_c_row(r0 + 1u, col, c_base, acc10, acc11);
    store_c_row(r0 + 2u, col, c_base, acc20, acc21);
    store_c_row(r0 + 3u, col, c_base, acc30, acc31);
    store_c_row(r0 + 64u, col, c_base, acc40, acc41);
    store_c_row(r0 + 65u, col, c_base, acc50, acc51);
    store_c_row(r0 + 66u, col, c_base, acc60, acc61);
    store_c_row(r0 + 67u, col, c_base, acc70, acc71);
}

// `matmul_vec4`: the same, loading whole vec4s and storing C as vec4. The
// caller may use it only when n % 4 == 0, c_off % 4 == 0, and for each operand
// its fast dimension (k or m for A, n or k for B) is a multiple of 4 and its
// offset and other strides are multiples of 4: then every vec4 is aligned and
// lies wholly inside or outside the matrix.
fn load_a4_slice(t: u32, row0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = a_pos(t);
    let m = row0 + q.x;
    let k = k0 + q.y;
    if (m < p.m && k < p.k) {
        return vec4<f32>(a4[(base + m * p.a_rs + k * p.a_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}
fn load_b4_slice(t: u32, col0: u32, k0: u32, base: u32) -> vec4<f32> {
    let q = b_pos(t);
    let n = col0 + q.x;
    let k = k0 + q.y;
    if (n < p.n && k < p.k) {
        return vec4<f32>(b4[(base + k * p.b_rs + n * p.b_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}
fn store_c4_row(row: u32, col: u32, c_base: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let i = (c_base + row * p.n + col) >> 2u;
    if (col < p.n) {
        var o = v0 * p.alpha;
        if (p.beta != 0.0) {
            o += p.beta * vec4<f32>(c4[i]);
        }
        c4[i] = vec4<T>(o);
    }
    if (col + 64u < p.n) {
        var o = v1 * p.alpha;
        if (p.beta != 0.0) {
            o += p.beta * vec4<f32>(c4[i + 16u]);
        }
        c4[i + 16u] = vec4<T>(o);
    }
}

@compute @workgroup_size(256)
fn matmul_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tx = t & 15u;
    let ty = t >> 4u;
    let row0 = wid.y * VT;
    let col0 = wid.x * VT;
    let a_base = p.a_off + wid.z * p.a_bs;
    let b_base = p.b_off + wid.z * p.b_bs;
    // Thread (tx, ty) owns rows h*64 + ty*4 + 0..3 and columns h*64 + tx*4 + 0..3,
    // h in {0, 1}. acc<i><h>: row ty*4 + i (i < 4) or 64 + ty*4 + i - 4, column half h.
    var acc00 = vec4<f32>(0.0); var acc01 = vec4<f32>(0.0);
    var acc10 = vec4<f32>(0.0); var acc11 = vec4<f32>(0.0);
    var acc20 = vec4<f32>(0.0); var acc21 = vec4<f32>(0.0);
    var acc30 = vec4<f32>(0.0); var acc31 = vec4<f32>(0.0);
    var acc40 = vec4<f32>(0.0); var acc41 = vec4<f32>(0.0);
    var acc50 = vec4<f32>(0.0); var acc51 = vec4<f32>(0.0);
    var acc60 = vec4<f32>(0.0); var acc61 = vec4<f32>(0.0);
    var acc70 = vec4<f32>(0.0); var acc71 = vec4<f32>(0.0);
    store_a_slice(t, 0u, load_a4_slice(t, row0, 0u, a_base));
    store_b_slice(t, 0u, load_b4_slice(t, col0, 0u, b_base));
    workgroupBarrier();
    var cur = 0u;
    for (var k0 = 0u; k0 < p.k; k0 += VK) {
        let k1 = k0 + VK;
        let more = k1 < p.k;
        var ra = vec4<f32>(0.0);
        var rb = vec4<f32>(0.0);
        if (more) {
            ra = load_a4_slice(t, row0, k1, a_base);
            rb = load_b4_slice(t, col0, k1, b_base);
        }
        for (var kk = cur; kk < cur + VK * VR; kk += VR) {
            let a0 = Ta[kk + ty];
            let a1 = Ta[kk + 16u + ty];
            let b0 = Tb[kk + tx];
            let b1 = Tb[kk + 16u + tx];
            acc00 = fma(vec4<f32>(a0.x), b0, acc00); acc01 = fma(vec4<f32>(a0.x), b1, acc01);
            acc10 = fma(vec4<f32>(a0.y), b0, acc10); acc11 = fma(vec4<f32>(a0.y), b1, acc11);
            acc20 = fma(vec4<f32>(a0.z), b0, acc20); acc21 = fma(vec4<f32>(a0.z), b1, acc21);
            acc30 = fma(vec4<f32>(a0.w), b0, acc30); acc31 = fma(vec4<f32>(a0.w), b1, acc31);
            acc40 = fma(vec4<f32>(a1.x), b0, acc40); acc41 = fma(vec4<f32>(a1.x), b1, acc41);
            acc50 = fma(vec4<f32>(a1.y), b0, acc50); acc51 = fma(vec4<f32>(a1.y), b1, acc51);
            acc60 = fma(vec4<f32>(a1.z), b0, acc60); acc61 = fma(vec4<f32>(a1.z), b1, acc61);
            acc70 = fma(vec4<f32>(a1.w), b0, acc70); acc71 = fma(vec4<f32>(a1.w), b1, acc71);
        }
        cur = VK * VR - cur;
        if (more) {
            store_a_slice(t, cur, ra);
            store_b_slice(t, cur, rb);
        }
        workgroupBarrier();
    }
    let c_base = p.c_off + wid.z * p.c_bs;
    let r0 = row0 + ty * 4u;
    let col = col0 + tx * 4u;
    store_c4_row(r0, col, c_base, acc00, acc01);
    store_c4_row(r0 + 1u, col, c_base, acc10, acc11);
    store_c4_row(r0 + 2u, col, c_base, acc20, acc21);
    store_c4_row(r0 + 3u, col, c_base, acc30, acc31);
    store_c4_row(r0 + 64u, col, c_base, acc40, acc41);
    store_c4_row(r0 + 65u, col, c_base, acc50, acc51);
    store_c4_row(r0 + 66u, col, c_base, acc60, acc61);
    store_c4_row(r0 + 67u, col, c_base, acc70, acc71);
}
