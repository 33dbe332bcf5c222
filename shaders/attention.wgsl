// Fused scaled-dot-product attention (rust/backend/cpu/attention.rs has the
// same schedule on the CPU). N = batch × heads problems of L queries and S
// keys, q/k head dim d, v head dim dv (both ≤ DMAX), all contiguous.
// Forward: a workgroup per 64 query rows, a thread per row; K/V tiles of bc
// keys go through workgroup memory, the softmax is online (running max and
// sum), and only the output and the row logsumexp are written. Backward
// (FlashAttention-2): D_i = dO_i · O_i, then dK/dV (a thread per key, Q/dO
// tiles shared) and dQ (a thread per query, K/V tiles shared), the scores
// recomputed from the logsumexp. Dropout regenerates its mask from a hash of
// (seed, problem, row, col), the same hash as the CPU kernel's.
alias T = f32;

// Params (Rust twin: backend/gpu/attention.rs): sizes; bc: keys (or query
// rows) per shared tile; flags: ATTN_CAUSAL, ATTN_MASK, ATTN_DROPOUT; scale;
// rp = 1 / (1 - dropout_p); thresh: hashes below it drop; seed0/1; the
// additive mask's (batch, head, row, col) strides (0 where broadcast); the
// element offsets of q, k, v, mask, g (dO), o and lse. dd, ga, gb start at 0.
struct Params {
    n: u32, heads: u32, l: u32, s: u32, d: u32, dv: u32, bc: u32, flags: u32,
    scale: f32, rp: f32, thresh: u32, seed0: u32, seed1: u32,
    m_sb: u32, m_sh: u32, m_sl: u32, m_ss: u32,
    q_off: u32, k_off: u32, v_off: u32, m_off: u32, g_off: u32, o_off: u32, lse_off: u32,
}

const WG: u32 = 64u;
const DMAX: u32 = 128u;
// Floats per shared tile: two tiles plus two rows of 64 stay under 16 KiB.
const TILE: u32 = 1920u;
// Scores below this are masked (-inf, or the running max's start value).
const MASKED: f32 = -1e30;
const NEG: f32 = -3e38;

// Bindings: 0 q, 1 k, 2 v, 3 mask, 4 g (T, read); 5 o, 6 lse (T,
// read_write: written forward, read backward); 7 dd (f32: D_i), 8 ga (dq or
// dk), 9 gb (dv) (read_write); 10 params. Unused ones get any small buffer.
@group(0) @binding(0) var<storage, read> q: array<T>;
@group(0) @binding(1) var<storage, read> k: array<T>;
@group(0) @binding(2) var<storage, read> v: array<T>;
@group(0) @binding(3) var<storage, read> mk: array<T>;
@group(0) @binding(4) var<storage, read> g: array<T>;
@group(0) @binding(5) var<storage, read_write> o: array<T>;
@group(0) @binding(6) var<storage, read_write> lse: array<T>;
@group(0) @binding(7) var<storage, read_write> dd: array<f32>;
@group(0) @binding(8) var<storage, read_write> ga: array<T>;
@group(0) @binding(9) var<storage, read_write> gb: array<T>;
@group(0) @binding(10) var<storage, read> p: Params;

var<workgroup> ta: array<f32, TILE>;
var<workgroup> tb: array<f32, TILE>;
var<workgroup> ra: array<f32, WG>;
var<workgroup> rb: array<f32, WG>;

fn mix(x0: u32) -> u32 {
    var x = x0;
    x ^= x >> 16u;
    x *= 0x7feb352du;
    x ^= x >> 15u;
    x *= 0x846ca68bu;
    return x ^ (x >> 16u);
}
fn drop_row(n: u32, i: u32) -> u32 {
    return mix(mix(p.seed0 ^ mix(p.seed1 ^ n)) ^ i);
}
// The factor of weight (i, j): 0 if dropped, 1 / (1 - p) if kept, 1 without dropout.
fn keep_factor(row: u32, j: u32) -> f32 {
    if ((p.flags & ATTN_DROPOUT) == 0u) { return 1.0; }
    if (mix(row + j) >= p.thresh) { return p.rp; }
    return 0.0;
}
// scale · dot + mask, very negative above the causal diagonal.
fn score(dot: f32, n: u32, i: u32, j: u32) -> f32 {
    if ((p.flags & ATTN_CAUSAL) != 0u && j > i) { return NEG; }
    var s = dot * p.scale;
    if ((p.flags & ATTN_MASK) != 0u) {
        let b = n / p.heads;
        let h = n % p.heads;
        s += f32(mk[p.m_off + b * p.m_sb + h * p.m_sh + i * p.m_sl + j * p.m_ss]);
    }
    return s;
}
fn group_index(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// o = softmax(scores) · v, lse = row logsumexp (-inf and o = 0 for a row
// with every key masked). Grid: a workgroup per (problem, 64 rows), flat.
@compute @workgroup_size(64)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.l + WG - 1u) / WG;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let i_first = (grp % blocks) * WG;
    let i_last = min(i_first + WG, p.l) - 1u;
    let i = i_first + lid;
    let live = i < p.l;
    var qr: array<f32, DMAX>;
    var acc: array<f32, DMAX>;
    var sc: array<f32, WG>;
    if (live) {
        for (var c = 0u; c < p.d; c++) { qr[c] = f32(q[p.q_off + (n * p.l + i) * p.d + c]); }
    }
    for (var c = 0u; c < p.dv; c++) { acc[c] = 0.0; }
    var m = NEG;
    var sum = 0.0;
    let row = drop_row(n, i);
    for (var j0 = 0u; j0 < p.s; j0 += p.bc) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 > i_last) { break; }
        let cols = min(p.bc, p.s - j0);
        workgroupBarrier();
        for (var t = lid; t < cols * p.d; t += WG) { ta[t] = f32(k[p.k_off + (n * p.s + j0) * p.d + t]); }
        for (var t = lid; t < cols * p.dv; t += WG) { tb[t] = f32(v[p.v_off + (n * p.s + j0) * p.dv + t]); }
        workgroupBarrier();
        // Non-live threads skip the work but not the barriers (uniform control flow).
        if (live) {
            var tmax = NEG;
            for (var jj = 0u; jj < cols; jj++) {
                var dot = 0.0;
                for (var c = 0u; c < p.d; c++) { dot += qr[c] * ta[jj * p.d + c]; }
                let s = score(dot, n, i, j0 + jj);
                sc[jj] = s;
                tmax = max(tmax, s);
            }
            let mn = max(m, tmax);
            if (mn >= MASKED) {
                let alpha = exp(m - mn);
                for (var c = 0u; c < p.dv; c++) { acc[c] *= alpha; }
                var t = 0.0;
                for (var jj = 0u; jj < cols; jj++) {
                    let e = exp(sc[jj] - mn);
                    t += e;
                    let w = e * keep_factor(row, j0 + jj);
                    if (w == 0.0) { continue; }
                    for (var c = 0u; c < p.dv; c++) { acc[c] += w * tb[jj * p.dv + c]; }
                }
                sum = sum * alpha + t;
                m = mn;
            }
        }
    }
    if (!live) { return; }
    let r = n * p.l + i;
    var inv = 0.0;
    if (sum > 0.0) { inv = 1.0 / sum; }
    for (var c = 0u; c < p.dv; c++) { o[p.o_off + r * p.dv + c] = T(acc[c] * inv); }
    var ls = bitcast<f32>(0xff800000u);
    if (sum > 0.0) { ls = m + log(sum); }
    lse[p.lse_off + r] = T(ls);
}

// dd[r] = g_r · o_r over the N·L rows. 1-D grid.
@compute @workgroup_size(256)
fn attention_backward_dot(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * 256u;
    if (r >= p.n * p.l) { return; }
    var s = 0.0;
    for (var c = 0u; c < p.dv; c++) {
        s += f32(g[p.g_off + r * p.dv + c]) * f32(o[p.o_off + r * p.dv + c]);
    }
    dd[r] = s;
}

// dk (ga) and dv (gb): a workgroup per (problem, 64 keys), a thread per key;
// Q and dO tiles of bc rows (with their lse and D) shared.
@compute @workgroup_size(64)
fn attention_backward_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.s + WG - 1u) / WG;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let j_first = (grp % blocks) * WG;
    let j = j_first + lid;
    let live = j < p.s;
    var kr: array<f32, DMAX>;
    var vr: array<f32, DMAX>;
    var dk: array<f32, DMAX>;
    var dv: array<f32, DMAX>;
    if (live) {
        for (var c = 0u; c < p.d; c++) { kr[c] = f32(k[p.k_off + (n * p.s + j) * p.d + c]); dk[c] = 0.0; }
        for (var c = 0u; c < p.dv; c++) { vr[c] = f32(v[p.v_off + (n * p.s + j) * p.dv + c]); dv[c] = 0.0; }
    }
    for (var i0 = 0u; i0 < p.l; i0 += p.bc) {
        let rows = min(p.bc, p.l - i0);
        // Rows before the block's first key see none of its keys under the causal mask.
        if ((p.flags & ATTN_CAUSAL) != 0u && i0 + rows <= j_first) { continue; }
        workgroupBarrier();
        for (var t = lid; t < rows * p.d; t += WG) { ta[t] = f32(q[p.q_off + (n * p.l + i0) * p.d + t]); }
        for (var t = lid; t < rows * p.dv; t += WG) { tb[t] = f32(g[p.g_off + (n * p.l + i0) * p.dv + t]); }
        if (lid < rows) {
            ra[lid] = f32(lse[p.lse_off + n * p.l + i0 + lid]);
            rb[lid] = dd[n * p.l + i0 + lid];
        }
        workgroupBarrier();
        if (live) {
            for (var ii = 0u; ii < rows; ii++) {
                let i = i0 + ii;
                let ls = ra[ii];
                if (ls < MASKED) { continue; }
                var dot = 0.0;
                for (var c = 0u; c < p.d; c++) { dot += ta[ii * p.d + c] * kr[c]; }
                let s = score(dot, n, i, j);
                if (s < MASKED) { continue; }
                let pr = exp(s - ls);
                let f = keep_factor(drop_row(n, i), j);
                var dp = 0.0;
                for (var c = 0u; c < p.dv; c++) {
                    let gi = tb[ii * p.dv + c];
                    dv[c] += pr * f * gi;
                    dp += gi * vr[c];
                }
                let ds = pr * (dp * f - rb[ii]) * p.scale;
                for (var c = 0u; c < p.d; c++) { dk[c] += ds * ta[ii * p.d + c]; }
            }
        }
    }
    if (!live) { return; }
    for (var c = 0u; c < p.d; c++) { ga[(n * p.s + j) * p.d + c] = T(dk[c]); }
    for (var c = 0u; c < p.dv; c++) { gb[(n * p.s + j) * p.dv + c] = T(dv[c]); }
}

// dq (ga): a workgroup per (problem, 64 rows), a thread per row; K and V
// tiles of bc keys shared.
@compute @workgroup_size(64)
fn attention_backward_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.l + WG - 1u) / WG;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let i_first = (grp % blocks) * WG;
    let i_last = min(i_first + WG, p.l) - 1u;
    let i = i_first + lid;
    let live = i < p.l;
    var qr: array<f32, DMAX>;
    var gr: array<f32, DMAX>;
    var dq: array<f32, DMAX>;
    var ls = 0.0;
    var di = 0.0;
    if (live) {
        let r = n * p.l + i;
        for (var c = 0u; c < p.d; c++) { qr[c] = f32(q[p.q_off + r * p.d + c]); dq[c] = 0.0; }
        for (var c = 0u; c < p.dv; c++) { gr[c] = f32(g[p.g_off + r * p.dv + c]); }
        ls = f32(lse[p.lse_off + r]);
        di = dd[r];
    }
    let row = drop_row(n, i);
    for (var j0 = 0u; j0 < p.s; j0 += p.bc) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 > i_last) { break; }
        let cols = min(p.bc, p.s - j0);
        workgroupBarrier();
        for (var t = lid; t < cols * p.d; t += WG) { ta[t] = f32(k[p.k_off + (n * p.s + j0) * p.d + t]); }
        for (var t = lid; t < cols * p.dv; t += WG) { tb[t] = f32(v[p.v_off + (n * p.s + j0) * p.dv + t]); }
        workgroupBarrier();
        if (live && ls >= MASKED) {
            for (var jj = 0u; jj < cols; jj++) {
                var dot = 0.0;
                for (var c = 0u; c < p.d; c++) { dot += qr[c] * ta[jj * p.d + c]; }
                let s = score(dot, n, i, j0 + jj);
                if (s < MASKED) { continue; }
                let pr = exp(s - ls);
                var dp = 0.0;
                for (var c = 0u; c < p.dv; c++) { dp += gr[c] * tb[jj * p.dv + c]; }
                let ds = pr * (dp * keep_factor(row, j0 + jj) - di) * p.scale;
                for (var c = 0u; c < p.d; c++) { dq[c] += ds * ta[jj * p.d + c]; }
            }
        }
    }
    if (!live) { return; }
    for (var c = 0u; c < p.d; c++) { ga[(n * p.l + i) * p.d + c] = T(dq[c]); }
}
