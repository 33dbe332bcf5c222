// Quantized inference kernels (rust/backend/cpu/qgemm.rs has the CPU twins).
//
// int8 GEMM of dynamically quantized Linear layers: `quantize_rows` turns
// each float32 row of x into 7-bit asymmetric codes (0..127, packed four per
// word, rows zero-padded to kw words) with a scale and zero point per row;
// `qgemm` takes dot4I8Packed of those words with the int8 weight rows (codes
// <= 127 read the same as int8) and applies the scales, the zero point
// correction and the bias in its epilogue; `qgemm_s32` writes the raw int32
// sums instead (tests compare them with an exact integer reference).
//
// Q8 block format (the seed's `Q8 { block_size }`): blocks of bs int8 codes,
// each led by a word whose low 16 bits are the block's float16 scale, so
// every block starts on a word. `q8_matmul` dequantizes weight rows on read;
// `q8_dequantize` expands a whole tensor.
//
// Bindings (shared by every entry; each uses a subset):
//   0 x (f32, read): float input            1 aw (u32, read): activation codes
//   2 ainfo (f32, read): (scale, zero point) per row
//   3 ww (u32, read): weight words          4 wscale (f32, read): per-channel scales
//   5 wsum (i32, read): per-channel sums of the weight codes
//   6 bias (f32, read)                      7 o (u32, read_write): output words
//   8 o2 (f32, read_write): quantize_rows' per-row info    9 params
// Params: m, n, k (rows, output columns, row length), kw (words per packed
// row), bs (Q8 block size), has_bias.
struct Params {
    m: u32, n: u32, k: u32, kw: u32, bs: u32, has_bias: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> aw: array<u32>;
@group(0) @binding(2) var<storage, read> ainfo: array<f32>;
@group(0) @binding(3) var<storage, read> ww: array<u32>;
@group(0) @binding(4) var<storage, read> wscale: array<f32>;
@group(0) @binding(5) var<storage, read> wsum: array<i32>;
@group(0) @binding(6) var<storage, read> bias: array<f32>;
@group(0) @binding(7) var<storage, read_write> o: array<u32>;
@group(0) @binding(8) var<storage, read_write> o2: array<f32>;
@group(0) @binding(9) var<storage, read> p: Params;

const WG: u32 = 256u;
const A_MAX: f32 = 127.0;

var<workgroup> lo_s: array<f32, 256>;
var<workgroup> hi_s: array<f32, 256>;

// A workgroup per row (bindings 0, 7, 8): o[row·kw ..] = packed codes,
// o2[2·row] = scale, o2[2·row + 1] = zero point.
@compute @workgroup_size(256)
fn quantize_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) t: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.m) {
        return;
    }
    let base = row * p.k;
    var lo = 0.0;
    var hi = 0.0;
    for (var i = t; i < p.k; i += WG) {
        lo = min(lo, x[base + i]);
        hi = max(hi, x[base + i]);
    }
    lo_s[t] = lo;
    hi_s[t] = hi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            lo_s[t] = min(lo_s[t], lo_s[t + s]);
            hi_s[t] = max(hi_s[t], hi_s[t + s]);
        }
        workgroupBarrier();
    }
    var scale = (hi_s[0] - lo_s[0]) / A_MAX;
    // Not (scale > 0 and finite): an all-zero row (or non-finite input).
    if (!(scale > 0.0) || (bitcast<u32>(scale) & 0x7f800000u) == 0x7f800000u) {
        scale = 1.0;
    }
    let zp = clamp(round(-lo_s[0] / scale), 0.0, A_MAX);
    if (t == 0u) {
        o2[2u * row] = scale;
        o2[2u * row + 1u] = zp;
    }
    for (var w = t; w < p.kw; w += WG) {
        var word = 0u;
        for (var b = 0u; b < 4u; b++) {
            let i = w * 4u + b;
            if (i < p.k) {
                let q = u32(clamp(round(x[base + i] / scale) + zp, 0.0, A_MAX));
                word |= q << (8u * b);
            }
        }
        o[row * p.kw + w] = word;
    }
}

// The int32 sum of row i of the activation codes with weight row j.
fn dot_row(i: u32, j: u32) -> i32 {
    var acc = 0i;
    let a0 = i * p.kw;
    let w0 = j * p.kw;
    for (var w = 0u; w < p.kw; w++) {
        acc += dot4I8Packed(aw[a0 + w], ww[w0 + w]);
    }
    return acc;
}

// A thread per output (x: column j, y: row i); bindings 1..7.
// o[i·n + j] = f32 bits of (sum - zp·wsum[j]) · scale_i · wscale[j] + bias[j].
@compute @workgroup_size(16, 16)
fn qgemm(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (i >= p.m || j >= p.n) {
        return;
    }
    let zp = i32(ainfo[2u * i + 1u]);
    let acc = dot_row(i, j) - zp * wsum[j];
    var v = f32(acc) * (ainfo[2u * i] * wscale[j]);
    if (p.has_bias != 0u) {
        v += bias[j];
    }
    o[i * p.n + j] = bitcast<u32>(v);
}

// As qgemm, writing the raw int32 sums (bindings 1, 3, 7).
@compute @workgroup_size(16, 16)
fn qgemm_s32(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (i >= p.m || j >= p.n) {
        return;
    }
    o[i * p.n + j] = bitcast<u32>(dot_row(i, j));
}

// The float16 scale of the Q8 block starting at word `w`.
fn block_scale(w: u32) -> f32 {
    return unpack2x16float(ww[w] & 0xffffu).x;
}

// A thread per output (x: column j, y: row i); bindings 0, 3, 6, 7.
// o[i·n + j] = f32 bits of Σ_k x[i, k] · W[j, k] (+ bias[j]), W's rows being
// ⌈k / bs⌉ Q8 blocks each.
@compute @workgroup_size(16, 16)
fn q8_matmul(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let i = gid.y;
    if (i >= p.m || j >= p.n) {
        return;
    }
    let bw = 1u + p.bs / 4u;
    let nb = (p.k + p.bs - 1u) / p.bs;
    var acc = 0.0;
    for (var b = 0u; b < nb; b++) {
        let w0 = (j * nb + b) * bw;
        let k0 = b * p.bs;
        var part = 0.0;
        for (var c = 0u; c < p.bs / 4u; c++) {
            let q = vec4<f32>(unpack4xI8(ww[w0 + 1u + c]));
            let kk = k0 + 4u * c;
            var xv = vec4<f32>(0.0);
            for (var e = 0u; e < 4u; e++) {
                if (kk + e < p.k) {
                    xv[e] = x[i * p.k + kk + e];
                }
            }
            part += dot(xv, q);
        }
        acc += part * block_scale(w0);
    }
    if (p.has_bias != 0u) {
        acc += bias[j];
    }
    o[i * p.n + j] = bitcast<u32>(acc);
}

// A thread per element (bindings 3, 7): o[e] = f32 bits of code · scale for
// the e < m elements of rows of k values, ⌈k / bs⌉ blocks per row.
@compute @workgroup_size(256)
fn q8_dequantize(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * WG;
    if (e >= p.m) {
        return;
    }
    let c = e % p.k;
    let b = (e / p.k) * ((p.k + p.bs - 1u) / p.bs) + c / p.bs;
    let r = c % p.bs;
    let w0 = b * (1u + p.bs / 4u);
    let q = unpack4xI8(ww[w0 + 1u + r / 4u]);
    o[e] = bitcast<u32>(f32(q[r % 4u]) * block_scale(w0));
}
