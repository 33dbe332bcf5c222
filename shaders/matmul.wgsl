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
// i: element index, a multiple of 4.
fn load_a4(i: u32, ok: bool) -> vec4<f32> {
    if (ok) { return vec4<f32>(a4[i >> 2u]); }
    return vec4<f32>(0.0);
}
fn load_b4(i: u32, ok: bool) -> vec4<f32> {
    if (ok) { return vec4<f32>(b4[i >> 2u]); }
    return vec4<f32>(0.0);
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

// `matmul_vec4`: same result, loading A along k, B along n and storing C as vec4.
// The caller may use it only when all of these hold:
//   a_cs == 1, b_cs == 1, k % 4 == 0, n % 4 == 0, and
//   a_off, a_bs, a_rs, b_off, b_bs, b_rs, c_off are multiples of 4
// (then every vec4 is aligned and lies wholly inside or outside the matrix;
// c_bs = m * n is then a multiple of 4 as well).
@compute @workgroup_size(64)
fn matmul_vec4(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let tx = t & 7u;
    let ty = t >> 3u;
    let row0 = wid.y * TM;
    let col0 = wid.x * TN;
    let z = wid.z;
    let a_base = p.a_off + z * p.a_bs;
    let b_base = p.b_off + z * p.b_bs;
    // A slice: 64 rows x 4 vec4s; thread t takes row (t >> 2) + 16r, vec4 t & 3.
    let am0 = t >> 2u;
    let ak = (t & 3u) * 4u;
    // B slice: 16 k-rows x 16 vec4s; thread t takes k-row (t >> 4) + 4r, vec4 t & 15.
    let bk0 = t >> 4u;
    let bn = (t & 15u) * 4u;

    var ra: array<vec4<f32>, 4>;
    var rb: array<vec4<f32>, 4>;
    var acc: array<vec4<f32>, 16>;
    for (var i = 0u; i < 16u; i++) {
        acc[i] = vec4<f32>(0.0);
    }

    var k0 = 0u;
    for (var r = 0u; r < 4u; r++) {
        let am = row0 + am0 + r * 16u;
        ra[r] = load_a4(a_base + am * p.a_rs + k0 + ak, am < p.m && k0 + ak < p.k);
        let bk = k0 + bk0 + r * 4u;
        rb[r] = load_b4(b_base + bk * p.b_rs + col0 + bn, bk < p.k && col0 + bn < p.n);
    }
    for (; k0 < p.k; k0 += BK) {
        workgroupBarrier();
        for (var r = 0u; r < 4u; r++) {
            let am = am0 + r * 16u;
            for (var j = 0u; j < 4u; j++) {
                As[(ak + j) * ROW + (am >> 2u)][am & 3u] = ra[r][j];
            }
            Bs[(bk0 + r * 4u) * ROW + (bn >> 2u)] = rb[r];
        }
        workgroupBarrier();
        let k1 = k0 + BK;
        if (k1 < p.k) {
            for (var r = 0u; r < 4u; r++) {
                let am = row0 + am0 + r * 16u;
                ra[r] = load_a4(a_base + am * p.a_rs + k1 + ak, am < p.m && k1 + ak < p.k);
                let bk = k1 + bk0 + r * 4u;
                rb[r] = load_b4(b_base + bk * p.b_rs + col0 + bn, bk < p.k && col0 + bn < p.n);
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
            let col = col0 + h * 32u + tx * 4u;
            if (col < p.n) {
                let i = (c_base + row * p.n + col) >> 2u;
                var o = acc[2u * r + h] * p.alpha;
                if (p.beta != 0.0) {
                    o += p.beta * vec4<f32>(c4[i]);
                }
                c4[i] = vec4<T>(o);
            }
        }
    }
}
