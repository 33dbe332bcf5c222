// Batched GEMM on bfloat16 operands: C[b] (float32, m x n, contiguous) =
// A[b] (m x k) · B[b] (k x n), A and B packed two bfloat16 per u32 word
// (shaders/bf16.wgsl) with arbitrary non-negative strides. The loads widen to
// float32 in registers (a bfloat16 is the top half of a float32) and the
// products accumulate in float32, so no float32 copy of A or B is made.
//
// Bindings: 0 a (words), 1 b (words), 2 c (f32), 3 p.
// Params (Rust twin: backend/gpu/matmul_bf16.rs): sizes, then element offset
// and batch / row / column strides of A and B, C's offset and batch stride.
// Grid: (⌈n/64⌉, ⌈m/64⌉, batch); 16 x 16 invocations, 4 x 4 outputs each.
struct Params {
    m: u32, n: u32, k: u32, batch: u32,
    a_off: u32, a_bs: u32, a_rs: u32, a_cs: u32,
    b_off: u32, b_bs: u32, b_rs: u32, b_cs: u32,
    c_off: u32, c_bs: u32, pad0: u32, pad1: u32,
}

@group(0) @binding(0) var<storage, read> a: array<u32>;
@group(0) @binding(1) var<storage, read> b: array<u32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(0) @binding(3) var<storage, read> p: Params;

const TILE: u32 = 64u;
const TK: u32 = 16u;

// Tiles of A (k-major: [k][m]) and B ([k][n]) in float32.
var<workgroup> ta: array<f32, 1024>;
var<workgroup> tb: array<f32, 1024>;

fn widen(w: u32, e: u32) -> f32 {
    return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (e & 1u) == 1u));
}

@compute @workgroup_size(16, 16)
fn matmul_bf16(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
    let row0 = wg.y * TILE;
    let col0 = wg.x * TILE;
    let a0 = p.a_off + wg.z * p.a_bs;
    let b0 = p.b_off + wg.z * p.b_bs;
    let tid = lid.y * 16u + lid.x;
    var acc: array<vec4<f32>, 4>;
    for (var k0 = 0u; k0 < p.k; k0 += TK) {
        for (var r = 0u; r < 4u; r++) {
            let idx = tid + r * 256u;
            // A: k fastest across invocations (coalesced for row-major A).
            let am = idx / TK;
            let ak = idx % TK;
            var va = 0.0;
            if (row0 + am < p.m && k0 + ak < p.k) {
                let e = a0 + (row0 + am) * p.a_rs + (k0 + ak) * p.a_cs;
                va = widen(a[e >> 1u], e);
            }
            ta[ak * TILE + am] = va;
            // B: n fastest (coalesced for row-major B).
            let bk = idx / TILE;
            let bn = idx % TILE;
            var vb = 0.0;
            if (k0 + bk < p.k && col0 + bn < p.n) {
                let e = b0 + (k0 + bk) * p.b_rs + (col0 + bn) * p.b_cs;
                vb = widen(b[e >> 1u], e);
            }
            tb[bk * TILE + bn] = vb;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < TK; kk++) {
            let ra = kk * TILE + lid.y * 4u;
            let rb = kk * TILE + lid.x * 4u;
            let av = vec4<f32>(ta[ra], ta[ra + 1u], ta[ra + 2u], ta[ra + 3u]);
            let bv = vec4<f32>(tb[rb], tb[rb + 1u], tb[rb + 2u], tb[rb + 3u]);
            acc[0] += av.x * bv;
            acc[1] += av.y * bv;
            acc[2] += av.z * bv;
            acc[3] += av.w * bv;
        }
        workgroupBarrier();
    }
    let c0 = p.c_off + wg.z * p.c_bs;
    for (var i = 0u; i < 4u; i++) {
        let row = row0 + lid.y * 4u + i;
        if (row >= p.m) { break; }
        for (var j = 0u; j < 4u; j++) {
            let col = col0 + lid.x * 4u + j;
            if (col < p.n) {
                c[c0 + row * p.n + col] = acc[i][j];
            }
        }
    }
}
