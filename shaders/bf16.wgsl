// bfloat16 storage: casts and strided copies between bfloat16 tensors and
// every other element kind, and fill. A bfloat16 tensor is packed two per u32
// word (element e in the low half of word e / 2 when e is even, the high half
// when odd); float16 tensors are read and written the same way here (as
// unpack2x16float / pack2x16float pairs), so this file needs no f16 support.
// Values are computed in float32; float32 -> bfloat16 rounds to nearest even
// and keeps NaNs NaN (the half crate's rule, so the CPU and GPU agree).
//
// Bindings: 0 a (input words), 3 o (output: packed halves, or words), 4 p.
// Params (Rust twin: backend/gpu/bf16.rs; the same layout as elementwise's):
// n elements, ndim (<= 8), op (source kind | destination kind << 4), flags
// (ELEM_CONTIGUOUS, ELEM_A_SCALAR: a is the scalar s0), s0 (float32 bits),
// the output shape, then offset and strides (elements) of o, a, b, c.
struct Params {
    n: u32, ndim: u32, op: u32, flags: u32,
    s0: u32, s1: u32, alpha: u32, pad: u32,
    shape: array<u32, 8>,
    o_off: u32, a_off: u32, b_off: u32, c_off: u32,
    o_st: array<i32, 8>,
    a_st: array<i32, 8>,
    b_st: array<i32, 8>,
    c_st: array<i32, 8>,
}

@group(0) @binding(0) var<storage, read> wa: array<u32>;
@group(0) @binding(3) var<storage, read_write> ho: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> wo: array<u32>;
@group(0) @binding(4) var<storage, read> p: Params;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// Element offsets of output element i in o and a.
fn offsets(i: u32) -> vec2<u32> {
    if ((p.flags & ELEM_CONTIGUOUS) != 0u) {
        return vec2<u32>(p.o_off + i, p.a_off + i);
    }
    var rem = i;
    var o = vec2<i32>(i32(p.o_off), i32(p.a_off));
    for (var d = i32(p.ndim) - 1; d >= 0; d--) {
        let size = p.shape[d];
        let c = i32(rem % size);
        rem = rem / size;
        o += c * vec2<i32>(p.o_st[d], p.a_st[d]);
    }
    return vec2<u32>(o);
}

// The 16 bits of packed element e of a.
fn half_bits(e: u32) -> u32 {
    return (wa[e >> 1u] >> ((e & 1u) * 16u)) & 0xffffu;
}

fn bf16_to_f32(bits: u32) -> f32 {
    return bitcast<f32>(bits << 16u);
}

// Round to nearest even; NaN stays a (quiet) NaN with its sign.
fn f32_to_bf16(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    if ((b & 0x7fffffffu) > 0x7f800000u) {
        return (b >> 16u) | 0x40u;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}

// Element e of a (kind k) as float32; the scalar s0 when a is a scalar.
fn load(k: u32, e: u32) -> f32 {
    if ((p.flags & ELEM_A_SCALAR) != 0u) {
        return bitcast<f32>(p.s0);
    }
    switch k {
        case KIND_F32: { return bitcast<f32>(wa[e]); }
        case KIND_I32: { return f32(bitcast<i32>(wa[e])); }
        case KIND_HALF: { return unpack2x16float(half_bits(e)).x; }
        case KIND_BF16: { return bf16_to_f32(half_bits(e)); }
        default: { return f32(wa[e]); }
    }
}

// Writes the 16 bits of element e of o. Atomics: the other half of the word
// may be another invocation's element.
fn store_half(e: u32, bits: u32) {
    let sh = (e & 1u) * 16u;
    atomicAnd(&ho[e >> 1u], ~(0xffffu << sh));
    atomicOr(&ho[e >> 1u], bits << sh);
}

// The 16 bits of o's kind (op >> 4) for the element of a at offset e.
fn encode(e: u32) -> u32 {
    let src = p.op & 15u;
    let to = p.op >> 4u;
    if (src == to && (p.flags & ELEM_A_SCALAR) == 0u) {
        return half_bits(e);
    }
    if (to == KIND_BF16) {
        return f32_to_bf16(load(src, e));
    }
    return pack2x16float(vec2<f32>(load(src, e), 0.0)) & 0xffffu;
}

// o (bfloat16 or float16: kind op >> 4) = a (any kind: op & 15, or the scalar
// s0). Same 16-bit kinds copy the bits (NaN payloads survive). Contiguous
// runs write whole words: the invocation of each even element also does the
// odd one after it; only a run's odd first and even last elements share
// their word with other data.
@compute @workgroup_size(256)
fn store16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    if ((p.flags & ELEM_CONTIGUOUS) != 0u) {
        let odd = (off.x & 1u) == 1u;
        if (odd && i > 0u) { return; }
        if (!odd && i + 1u < p.n) {
            atomicStore(&ho[off.x >> 1u], encode(off.y) | (encode(off.y + 1u) << 16u));
            return;
        }
    }
    store_half(off.x, encode(off.y));
}

// o (a word kind: op >> 4 = float32, int32, bool or uint8) = a (bfloat16),
// with PyTorch's conversions (truncation toward zero; NaN is true).
@compute @workgroup_size(256)
fn load16(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= p.n) { return; }
    let off = offsets(i);
    let bits = half_bits(off.y);
    let x = bf16_to_f32(bits);
    var r: u32;
    switch p.op >> 4u {
        case KIND_F32: { r = bitcast<u32>(x); }
        case KIND_BOOL: { r = u32((bits & 0x7fffu) != 0u); }
        default: {
            let v = bitcast<u32>(i32(trunc(x)));
            r = select(v, v & 255u, (p.op >> 4u) == KIND_U8);
        }
    }
    wo[off.x] = r;
}
