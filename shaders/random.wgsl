// Counter-based random numbers: Philox4x32-10 (Salmon et al., "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011). Results need not match the
// CPU generator, except bernoulli_mask's: the CPU's dropout masks
// (backend/cpu/random.rs) compute the same Philox words from the same key.
alias T = f32;

// Streams. Each invocation encrypts one 128-bit counter
//   (block, 0, offset_lo, offset_hi)
// under the 64-bit key (seed_lo, seed_hi) and turns its four 32-bit words into
// output elements 4·block .. 4·block + 3. Different (seed, offset) pairs
// therefore use disjoint counters: a caller that advances the offset by the
// number of values used (or by anything >= 1) between dispatches never repeats
// a stream, and a dispatch may hold up to 2^34 elements.
//
// Params (every entry): n elements, out_off (element offset of out),
// seed_lo, seed_hi, offset_lo, offset_hi, then two f32 arguments a, b,
// then block0: the block of the first
// element (invocation i encrypts block block0 + i), so a fill split into
// several dispatches (each from a multiple of 4 elements) draws the numbers
// of one dispatch. uniform also takes cut (f32): see there.
// Grid (every entry): ceil(ceil(n / 4) / 256) workgroups of 256 (one Philox
// block, four elements, per invocation), spilling into y past 65,535 (README).
struct RngF { n: u32, out_off: u32, seed_lo: u32, seed_hi: u32, off_lo: u32, off_hi: u32, a: f32, b: f32, block0: u32, cut: f32 }

@group(0) @binding(0) var<storage, read_write> out_t: array<T>;
@group(0) @binding(1) var<storage, read> pf: RngF;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

// High and low words of the 64-bit product a·b (WGSL has no 64-bit integers).
fn mulhilo(a: u32, b: u32) -> vec2<u32> {
    let al = a & 0xffffu;
    let ah = a >> 16u;
    let bl = b & 0xffffu;
    let bh = b >> 16u;
    let ll = al * bl;
    let lh = al * bh;
    let hl = ah * bl;
    let mid = (ll >> 16u) + (lh & 0xffffu) + (hl & 0xffffu);
    let hi = ah * bh + (lh >> 16u) + (hl >> 16u) + (mid >> 16u);
    return vec2<u32>(hi, a * b);
}

fn philox(ctr: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
    var c = ctr;
    var k = key;
    for (var r = 0u; r < 10u; r++) {
        let p0 = mulhilo(0xD2511F53u, c.x);
        let p1 = mulhilo(0xCD9E8D57u, c.z);
        c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
        k += vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
    }
    return c;
}

fn block_words(b: u32, seed_lo: u32, seed_hi: u32, off_lo: u32, off_hi: u32) -> vec4<u32> {
    return philox(vec4<u32>(b, 0u, off_lo, off_hi), vec2<u32>(seed_lo, seed_hi));
}

// [0, 1) with 24 random bits: every value is exact in f32.
fn unit(w: u32) -> f32 {
    return f32(w >> 8u) * (1.0 / 16777216.0);
}

// ---- uniform: out = U[a, b) ----
// Bindings: 0 out (T, read_write), 1 params (RngF: a = lo, b = hi, cut).
// A value that would round up to hi is replaced by lo, as PyTorch does, so
// results stay in [lo, hi). The host passes cut, the least f32 that rounds to
// hi or above in the stored dtype (hi itself for f32): the test is on the f32
// value before its one conversion, so neither FMA contraction nor a driver
// folding a float16 round trip can let hi through (rounding is monotonic).
@compute @workgroup_size(256)
fn uniform(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = pf;
    let b = flat(gid, nwg);
    let e0 = b * 4u;
    if (e0 >= q.n) { return; }
    let w = block_words(q.block0 + b, q.seed_lo, q.seed_hi, q.off_lo, q.off_hi);
    let span = q.b - q.a;
    for (var k = 0u; k < 4u; k++) {
        if (e0 + k < q.n) {
            let v = q.a + span * unit(w[k]);
            out_t[q.out_off + e0 + k] = T(select(v, q.a, v >= q.cut));
        }
    }
}

// ---- normal: out = N(a, b²) (mean a, std b) by Box-Muller ----
// Words (w0, w1) and (w2, w3) each give a pair: r = sqrt(-2 ln u1) with u1 in
// (0, 1] (never ln 0), angle pi(2 u2 - 1) in [-pi, pi) where GPU sin/cos
// are accurate; z = (r cos, r sin).
// Bindings: 0 out (T, read_write), 1 params (RngF: a = mean, b = std).
@compute @workgroup_size(256)
fn normal(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = pf;
    let b = flat(gid, nwg);
    let e0 = b * 4u;
    if (e0 >= q.n) { return; }
    let w = block_words(q.block0 + b, q.seed_lo, q.seed_hi, q.off_lo, q.off_hi);
    var z: array<f32, 4>;
    for (var h = 0u; h < 2u; h++) {
        let u1 = f32((w[2u * h] >> 8u) + 1u) * (1.0 / 16777216.0);
        let th = 3.14159265358979 * (2.0 * unit(w[2u * h + 1u]) - 1.0);
        let r = sqrt(-2.0 * log(u1));
        z[2u * h] = r * cos(th);
        z[2u * h + 1u] = r * sin(th);
    }
    for (var k = 0u; k < 4u; k++) {
        if (e0 + k < q.n) {
            out_t[q.out_off + e0 + k] = T(q.a + q.b * z[k]);
        }
    }
}

// ---- bernoulli_mask: out = u < keep ? scale : 0 (dropout masks) ----
// u has 24 bits, so P(scale) = keep rounded down to a multiple of 2^-24
// (keep = 1 always keeps, keep = 0 never does).
// Bindings: 0 out (T, read_write), 1 params (RngF: a = keep probability, b = scale).
@compute @workgroup_size(256)
fn bernoulli_mask(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = pf;
    let b = flat(gid, nwg);
    let e0 = b * 4u;
    if (e0 >= q.n) { return; }
    let w = block_words(q.block0 + b, q.seed_lo, q.seed_hi, q.off_lo, q.off_hi);
    for (var k = 0u; k < 4u; k++) {
        if (e0 + k < q.n) {
            out_t[q.out_off + e0 + k] = T(select(0.0, q.b, unit(w[k]) < q.a));
        }
    }
}
