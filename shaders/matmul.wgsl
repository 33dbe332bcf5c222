// Batched GEMM: C[z] = alpha * A[z] @ B[z] + beta * C[z] for z < batch, with
// A[z] (m x k) and B[z] (k x n) strided views (transposed and stride-0
// broadcast operands need no copy) and C contiguous (row stride n).
// Float kernels use T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params, packed in this order (all 4-byte words):
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

// Tiling: a workgroup computes a TM x TN = 64 x 64 tile of C with 64 threads,
// each holding 8 x 8 outputs in registers (rows ty*4+i and 32+ty*4+i, columns
// tx*4+j and 32+tx*4+j, so that a warp's C stores and shared reads cover
// contiguous runs). K advances in slices of BK = 16: the next slice is loaded
// from global memory into registers while the current one is multiplied out of
// workgroup memory. 8 x 8 per thread gives 64 FMAs per 4 vec4 shared loads,
// which keeps shared-memory bandwidth below the FMA rate.
// Grid (both entries): (ceil(n / 64), ceil(m / 64), batch), batch <= 65535.
const TM: u32 = 64u;
const TN: u32 = 64u;
const BK: u32 = 16u;
// Shared tiles are k-major (As[k][m], Bs[k][n]) in vec4s, so the inner loop
// reads 4 rows of A or 4 columns of B per load; rows are padded by one vec4
// to spread the transposing stores of A over more banks.
const ROW: u32 = 17u;
var<workgroup> As: array<vec4<f32>, 272>; // BK * ROW
var<workgroup> Bs: array<vec4<f32>, 272>;

// acc[2r + h]: output row (r < 4 ? ty*4+r : 32+ty*4+r-4), columns h*32 + tx*4 + 0..3.
fn multiply_slice(acc: ptr<function, array<vec4<f32>, 16>>, tx: u32, ty: u32) {
    for (var kk = 0u; kk < BK; kk++) {
        let a0 = As[kk * ROW + ty];
        let a1 = As[kk * ROW + 8u + ty];
        let b0 = Bs[kk * ROW + tx];
        let b1 = Bs[kk * ROW + 8u + tx];
        for (var i = 0u; i < 4u; i++) {
            (*acc)[2u * i] = fma(vec4<f32>(a0[i]), b0, (*acc)[2u * i]);
            (*acc)[2u * i + 1u] = fma(vec4<f32>(a0[i]), b1, (*acc)[2u * i + 1u]);
            (*acc)[8u + 2u * i] = fma(vec4<f32>(a1[i]), b0, (*acc)[8u + 2u * i]);
            (*acc)[9u + 2u * i] = fma(vec4<f32>(a1[i]), b1, (*acc)[9u + 2u * i]);
        }
    }
}

// Guarded loads (a branch, not select: select would read out of bounds).
fn load_a(i: u32, ok: bool) -> f32 {
    if (ok) { return f32(a[i]); }
    return 0.0;
}
fn load_b(i: u32, ok: bool) -> f32 {
    if (ok) { return f32(b[i]); }
    return 0.0;
}
fn tile_row(r: u32, ty: u32) -> u32 {
    return select(ty * 4u + r, 32u + ty * 4u + r - 4u, r >= 4u);
}

// `matmul`: the general strided kernel; any strides (including 0), offsets and sizes.
// Each thread stages 16 elements of A and 16 of B per slice. The walk order
// follows the operand's unit stride so that a warp's loads are contiguous:
// along k when A is row-major (else along m), along n when B is row-major
// (else along k, e.g. B = W^T of a linear layer).
@compute @workgroup_size(64)
fn matmul(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tx = t & 7u;
    let ty = t >> 3u;
    let row0 = wid.y * TM;
    let col0 = wid.x * TN;
    let z = wid.z;
    let a_base = p.a_off + z * p.a_bs;
    let b_base = p.b_off + z * p.b_bs;

    // Element r of this thread's share: A at (row0 + am0 + r*ams, k0 + ak0 + r*aks).
    let a_mfast = p.a_rs == 1u && p.a_cs != 1u;
    let am0 = select(t >> 4u, t, a_mfast);
    let ams = select(4u, 0u, a_mfast);
    let ak0 = select(t & 15u, 0u, a_mfast);
    let aks = select(0u, 1u, a_mfast);
    // B at (k0 + bk0 + r*bks, col0 + bn0 + r*bns).
    let b_kfast = p.b_rs == 1u && p.b_cs != 1u;
    let bn0 = select(t, t >> 4u, b_kfast);
    let bns = select(0u, 4u, b_kfast);
    let bk0 = select(0u, t & 15u, b_kfast);
    let bks = select(1u, 0u, b_kfast);

    var ra: array<f32, 16>;
    var rb: array<f32, 16>;
    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<f32>(0.0);
    }

    var k0 = 0u;
    // Prefetch slice 0.
    for (var r = 0u; r < 16u; r++) {
        let am = row0 + am0 + r * ams;
        let ak = k0 + ak0 + r * aks;
        ra[r] = load_a(a_base + am * p.a_rs + ak * p.a_cs, am < p.m && ak < p.k);
        let bk = k0 + bk0 + r * bks;
        let bn = col0 + bn0 + r * bns;
        rb[r] = load_b(b_base + bk * p.b_rs + bn * p.b_cs, bk < p.k && bn < p.n);
    }
    for (; k0 < p.k; k0 += BK) {
        workgroupBarrier(); // the previous slice is consumed
        for (var r = 0u; r < 16u; r++) {
            let am = am0 + r * ams;
            let ak = ak0 + r * aks;
            As[ak * ROW + (am >> 2u)][am & 3u] = ra[r];
            let bk = bk0 + r * bks;
            let bn = bn0 + r * bns;
            Bs[bk * ROW + (bn >> 2u)][bn & 3u] = rb[r];
        }
        workgroupBarrier();
        let k1 = k0 + BK;
        if (k1 < p.k) {
            for (var r = 0u; r < 16u; r++) {
                let am = row0 + am0 + r * ams;
                let ak = k1 + ak0 + r * aks;
                ra[r] = load_a(a_base + am * p.a_rs + ak * p.a_cs, am < p.m && ak < p.k);
                let bk = k1 + bk0 + r * bks;
                let bn = col0 + bn0 + r * bns;
                rb[r] = load_b(b_base + bk * p.b_rs + bn * p.b_cs, bk < p.k && bn < p.n);
            }
        }
        multiply_slice(&acc, tx, ty);
    }

    let c_base = p.c_off + z * p.c_bs;
    for (var r = 0u; r < 8u; r++) {
        let row = row0 + tile_row(r, ty);
        if (row >= p.m) {
            continue;
        }
        for (var h = 0u; h < 2u; h++) {
            let v = acc[2u * r + h] * p.alpha;
            for (var j = 0u; j < 4u; j++) {
                let col = col0 + h * 32u + tx * 4u + j;
                if (col < p.n) {
                    let i = c_base + row * p.n + col;
                    var o = v[j];
                    if (p.beta != 0.0) {
                        o += p.beta * f32(c[i]);
                    }
                    c[i] = T(o);
                }
            }
        }
    }
}

// `matmul_vec4`: same result, for operands whose unit-stride dimension holds
// whole aligned vec4s. A workgroup of 256 threads computes a 128 x 128 tile
// of C, each thread 8 x 8 outputs in 16 named vec4 accumulators: plain
// variables, not an array, so that no driver spills them to local memory
// (the array form above ran at 1.9 TFLOP/s on an H100, this one at 26).
// K advances in slices of 8 through double-buffered workgroup tiles: one
// barrier per slice, the next slice's global loads in flight meanwhile.
// Each operand is read along whichever dimension is contiguous:
//   A: k-fast when a_cs == 1 (row-major), else m-fast (a_rs == 1, e.g. A = X^T);
//   B: n-fast when b_cs == 1 (row-major), else k-fast (b_rs == 1, e.g. B = W^T).
// The caller may use it only when C's n % 4 == 0 and c_off % 4 == 0, and each
// operand's fast dimension (k, m or n) is a multiple of 4 with its offset and
// other strides multiples of 4: then every vec4 is aligned and lies wholly
// inside or outside the matrix.
// Grid: (ceil(n / 128), ceil(m / 128), batch), batch <= 65535.
const VT: u32 = 128u; // tile side
const VK: u32 = 8u;   // K slice
const VR: u32 = 32u;  // vec4s per k-row of a tile
var<workgroup> Ta: array<vec4<f32>, 512>; // 2 buffers x VK k-rows x VR: Ta[k][m]
var<workgroup> Tb: array<vec4<f32>, 512>; // Tb[k][n]

// One vec4 of the A slice at k0 for thread t, and where it goes in Ta.
// k-fast: rows t/2, k (t%2)*4..+3, stored transposed (4 scalars);
// m-fast: k-row t/32, rows (t%32)*4..+3, stored as one vec4.
fn load_a_slice(t: u32, row0: u32, k0: u32, base: u32) -> vec4<f32> {
    var m: u32;
    var k: u32;
    if (p.a_cs == 1u) {
        m = row0 + (t >> 1u);
        k = k0 + (t & 1u) * 4u;
    } else {
        m = row0 + (t & 31u) * 4u;
        k = k0 + (t >> 5u);
    }
    if (m < p.m && k < p.k) {
        return vec4<f32>(a4[(base + m * p.a_rs + k * p.a_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}
fn store_a_slice(t: u32, buf: u32, v: vec4<f32>) {
    if (p.a_cs == 1u) {
        let m = t >> 1u;
        let k = buf + (t & 1u) * 4u * VR + (m >> 2u);
        Ta[k][m & 3u] = v.x;
        Ta[k + VR][m & 3u] = v.y;
        Ta[k + 2u * VR][m & 3u] = v.z;
        Ta[k + 3u * VR][m & 3u] = v.w;
    } else {
        Ta[buf + (t >> 5u) * VR + (t & 31u)] = v;
    }
}
// B likewise: n-fast: k-row t/32, columns (t%32)*4..+3; k-fast: column t/2, k (t%2)*4..+3.
fn load_b_slice(t: u32, col0: u32, k0: u32, base: u32) -> vec4<f32> {
    var n: u32;
    var k: u32;
    if (p.b_cs == 1u) {
        n = col0 + (t & 31u) * 4u;
        k = k0 + (t >> 5u);
    } else {
        n = col0 + (t >> 1u);
        k = k0 + (t & 1u) * 4u;
    }
    if (n < p.n && k < p.k) {
        return vec4<f32>(b4[(base + k * p.b_rs + n * p.b_cs) >> 2u]);
    }
    return vec4<f32>(0.0);
}
fn store_b_slice(t: u32, buf: u32, v: vec4<f32>) {
    if (p.b_cs == 1u) {
        Tb[buf + (t >> 5u) * VR + (t & 31u)] = v;
    } else {
        let n = t >> 1u;
        let k = buf + (t & 1u) * 4u * VR + (n >> 2u);
        Tb[k][n & 3u] = v.x;
        Tb[k + VR][n & 3u] = v.y;
        Tb[k + 2u * VR][n & 3u] = v.z;
        Tb[k + 3u * VR][n & 3u] = v.w;
    }
}

// Stores output row `row` (columns col and col + 64) of the tile.
fn store_c_row(row: u32, col: u32, c_base: u32, v0: vec4<f32>, v1: vec4<f32>) {
    if (row >= p.m) {
        return;
    }
    let i = c_base + row * p.n + col;
    if (col < p.n) {
        var o = v0 * p.alpha;
        if (p.beta != 0.0) {
            o += p.beta * vec4<f32>(c4[i >> 2u]);
        }
        c4[i >> 2u] = vec4<T>(o);
    }
    if (col + 64u < p.n) {
        var o = v1 * p.alpha;
        if (p.beta != 0.0) {
            o += p.beta * vec4<f32>(c4[(i + 64u) >> 2u]);
        }
        c4[(i + 64u) >> 2u] = vec4<T>(o);
    }
}

@compute @workgroup_size(256)
fn matmul_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    // Thread (tx, ty) owns rows h*64 + ty*4 + 0..3 and columns h*64 + tx*4 + 0..3, h in {0, 1}.
    let tx = t & 15u;
    let ty = t >> 4u;
    let row0 = wid.y * VT;
    let col0 = wid.x * VT;
    let a_base = p.a_off + wid.z * p.a_bs;
    let b_base = p.b_off + wid.z * p.b_bs;
    // acc<r><c>: output row r (0..7: rows ty*4 + r, then 64 + ty*4 + r - 4), column half c.
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
