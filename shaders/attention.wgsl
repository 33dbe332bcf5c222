// Fused scaled-dot-product attention (rust/backend/cpu/attention.rs has the
// same schedule on the CPU), tiled as FlashAttention-2. N = batch × heads
// problems of L queries and S keys, q/k head dim d, v head dim dv (both ≤ 128).
// q, k, v, dO, o and the gradients are (B, H, rows, cols) with contiguous
// columns and any batch, head and row strides (head-split views of a packed
// projection are read and written in place). A workgroup of 128 threads owns a block of BR = 64 rows (query
// rows forward and for dQ, keys for dK/dV) and walks tiles of BC = 32 of the
// other side. Every tile product is register-blocked: thread (ty, tx) =
// (lid / 8, lid % 8) holds rows 4ty..4ty+3 of the block, against tile columns
// 4tx..4tx+3 for the scores and output columns 4(tx + 8h)..+3 (h < 4) for the
// accumulators. Operands go through workgroup memory (14.5 KiB, under
// WebGPU's 16 KiB default): scores in d-chunks of 16, the P-like tile whole.
// Forward: online softmax, only the output and the row logsumexp written.
// Backward: D_i = dO_i · O_i, then dK/dV and dQ, the scores recomputed from
// the logsumexp. Dropout regenerates its mask from a hash of (seed, problem,
// row, col), the same hash as the CPU kernel's.
alias T = f32;

// Params (Rust twin: backend/gpu/attention.rs): sizes; flags: ATTN_CAUSAL,
// ATTN_MASK, ATTN_DROPOUT; scale; rp = 1 / (1 - dropout_p); thresh: hashes
// below it drop; seed0/1; the additive mask's (batch, head, row, col) strides
// (0 where broadcast) and the element offsets of the mask and lse; then per
// strided tensor t (TQ, TK, TV, TG, TO, TA: ga, TB: gb), lay[4t..4t+3] = its
// element offset and batch, head and row strides. dd starts at 0.
struct Params {
    n: u32, heads: u32, l: u32, s: u32, d: u32, dv: u32, flags: u32,
    scale: f32, rp: f32, thresh: u32, seed0: u32, seed1: u32,
    m_sb: u32, m_sh: u32, m_sl: u32, m_ss: u32, m_off: u32, lse_off: u32,
    lay: array<u32, 28>,
}

const WG: u32 = 128u;
// Rows of a workgroup's block, rows of a tile, columns of a score chunk.
const BR: u32 = 64u;
const BC: u32 = 32u;
const DK: u32 = 16u;
// Scores below this are masked (-inf, or the running max's start value).
const MASKED: f32 = -1e30;
const NEG: f32 = -3e38;
// Operand sources of the staging loads, and the strided tensors' slots in p.lay.
const SRC_Q: u32 = 0u;
const SRC_K: u32 = 1u;
const SRC_V: u32 = 2u;
const SRC_G: u32 = 3u;
const TO: u32 = 4u;
const TA: u32 = 5u;
const TB: u32 = 6u;

// Bindings: 0 q, 1 k, 2 v, 3 mask, 4 g (T, read); 5 o, 6 lse (T,
// read_write: written forward, read backward); 7 dd (f32: D_i), 8 ga (dq or
// dk), 9 gb (dv) (read_write); 10 params. Unused ones get any small buffer,
// but the forward names g (the loaders are shared, it never reads it): it
// gets a read-only input.
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

// Staging: a score chunk (the block's rows transposed, [DK][BR], then the
// tile's, [DK][BC]), or rows of a tile operand, or per-thread row partials.
var<workgroup> st: array<vec4<f32>, 384>;
// The P-like tile transposed, [BC][BR], its rows padded to 68 floats so the
// threads' vec4 stores spread over the banks.
var<workgroup> pt: array<vec4<f32>, 544>;
const PT_ROW: u32 = 17u;

// Accumulators of output columns (oa: o, dq, dk; ob: dv): [h] column r holds
// row 4ty + r's columns 4(tx + 8h)..+3.
var<private> oa: array<mat4x4<f32>, 4>;
var<private> ob: array<mat4x4<f32>, 4>;

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
// scale · dot + mask, very negative above the causal diagonal and outside the problem.
fn score(dot: f32, n: u32, i: u32, j: u32) -> f32 {
    if (i >= p.l || j >= p.s) { return NEG; }
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
// Element offset of row i of problem n of strided tensor t, and its row stride.
fn at(t: u32, n: u32, i: u32) -> u32 {
    return p.lay[4u * t] + (n / p.heads) * p.lay[4u * t + 1u] + (n % p.heads) * p.lay[4u * t + 2u]
        + i * p.lay[4u * t + 3u];
}
fn rs(t: u32) -> u32 {
    return p.lay[4u * t + 3u];
}
fn ld(src: u32, i: u32) -> f32 {
    switch src {
        case 0u: { return f32(q[i]); }
        case 1u: { return f32(k[i]); }
        case 2u: { return f32(v[i]); }
        default: { return f32(g[i]); }
    }
}

// Element (r, c) of an operand's rows from element x0 (0 past n rows or dim columns).
fn fetch(src: u32, x0: u32, n: u32, r: u32, c: u32, dim: u32) -> f32 {
    if (r < n && c < dim) { return ld(src, x0 + r * rs(src) + c); }
    return 0.0;
}
// A thread's share of a score chunk at columns c0.., four neighbouring
// threads reading four consecutive floats of a row: with r = lid / 4 and
// c = c0 + lid % 4, block rows r and r + 32 at columns c and c + 4 (call again
// at c0 + 8 for the rest), tile row r at columns c, c + 4, c + 8, c + 12.
fn fetch_a(sa: u32, a0: u32, na: u32, c0: u32, dim: u32, lid: u32) -> vec4<f32> {
    let r = lid / 4u;
    let c = c0 + lid % 4u;
    return vec4<f32>(fetch(sa, a0, na, r, c, dim), fetch(sa, a0, na, r + 32u, c, dim),
                     fetch(sa, a0, na, r, c + 4u, dim), fetch(sa, a0, na, r + 32u, c + 4u, dim));
}
fn fetch_b(sb: u32, b0: u32, nb: u32, c0: u32, dim: u32, lid: u32) -> vec4<f32> {
    let r = lid / 4u;
    let c = c0 + lid % 4u;
    return vec4<f32>(fetch(sb, b0, nb, r, c, dim), fetch(sb, b0, nb, r, c + 4u, dim),
                     fetch(sb, b0, nb, r, c + 8u, dim), fetch(sb, b0, nb, r, c + 12u, dim));
}
// Stores the fetched share transposed: [column][row] (block at 0, tile at 256).
fn stage_dot(xa0: vec4<f32>, xa1: vec4<f32>, xb: vec4<f32>, lid: u32) {
    let r = lid / 4u;
    let c = lid % 4u;
    let lo = r / 4u;
    let hi = (r + 32u) / 4u;
    let k = r % 4u;
    st[c * 16u + lo][k] = xa0.x;
    st[c * 16u + hi][k] = xa0.y;
    st[(c + 4u) * 16u + lo][k] = xa0.z;
    st[(c + 4u) * 16u + hi][k] = xa0.w;
    st[(c + 8u) * 16u + lo][k] = xa1.x;
    st[(c + 8u) * 16u + hi][k] = xa1.y;
    st[(c + 12u) * 16u + lo][k] = xa1.z;
    st[(c + 12u) * 16u + hi][k] = xa1.w;
    st[256u + c * 8u + lo][k] = xb.x;
    st[256u + (c + 4u) * 8u + lo][k] = xb.y;
    st[256u + (c + 8u) * 8u + lo][k] = xb.z;
    st[256u + (c + 12u) * 8u + lo][k] = xb.w;
}

// Dot products of the block's rows (na of them from element a0 of source sa)
// with the tile's (nb from b0 of sb), each dim long: [r][c] = a_(4ty+r) · b_(4tx+c).
// Rows past na or nb give 0. The next chunk's loads are issued before the
// current chunk's products, so their latency hides behind them. Call in
// uniform control flow (barriers).
fn block_dot(sa: u32, a0: u32, na: u32, sb: u32, b0: u32, nb: u32, dim: u32, lid: u32) -> array<vec4<f32>, 4> {
    let ty = lid / 8u;
    let tx = lid % 8u;
    var acc = array<vec4<f32>, 4>();
    var xa0 = fetch_a(sa, a0, na, 0u, dim, lid);
    var xa1 = fetch_a(sa, a0, na, 8u, dim, lid);
    var xb = fetch_b(sb, b0, nb, 0u, dim, lid);
    // At least one chunk: its barriers order the caller's pt stores after the last tile's reads.
    let chunks = max((dim + DK - 1u) / DK, 1u);
    for (var ch = 0u; ch < chunks; ch++) {
        workgroupBarrier();
        stage_dot(xa0, xa1, xb, lid);
        workgroupBarrier();
        let c1 = (ch + 1u) * DK;
        if (c1 < dim) {
            xa0 = fetch_a(sa, a0, na, c1, dim, lid);
            xa1 = fetch_a(sa, a0, na, c1 + 8u, dim, lid);
            xb = fetch_b(sb, b0, nb, c1, dim, lid);
        }
        for (var kk = 0u; kk < DK; kk++) {
            let a = st[kk * (BR / 4u) + ty];
            let b = st[256u + kk * (BC / 4u) + tx];
            acc[0] += a.x * b;
            acc[1] += a.y * b;
            acc[2] += a.z * b;
            acc[3] += a.w * b;
        }
    }
    return acc;
}

// Row r's vec4 of columns is column r of an accumulator matrix: x ⊗ p adds
// p[r] · x to each row r.
fn outer(x: vec4<f32>, pr: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(x * pr.x, x * pr.y, x * pr.z, x * pr.w);
}

// Staging of x rows for block_pv: thread lid's element t is flat element
// lid + 128t of a chunk of rows × 4w floats, at (row, column) c_t; c_(t+1) =
// step(c_t) adds (128 / 4w, 128 % 4w) with a carry, no division per element.
fn step(c: vec2<u32>, d: vec2<u32>, w4: u32) -> vec2<u32> {
    let r = c + d;
    if (r.y >= w4) { return vec2<u32>(r.x + 1u, r.y - w4); }
    return r;
}
fn pv_fetch(sx: u32, x0: u32, nx: u32, j0: u32, rows: u32, c: vec2<u32>, dim: u32) -> f32 {
    if (c.x < rows && j0 + c.x < nx && c.y < dim) { return ld(sx, x0 + (j0 + c.x) * rs(sx) + c.y); }
    return 0.0;
}
fn pv_fetch4(sx: u32, x0: u32, nx: u32, j0: u32, rows: u32, c: array<vec2<u32>, 4>, dim: u32) -> vec4<f32> {
    return vec4<f32>(pv_fetch(sx, x0, nx, j0, rows, c[0], dim), pv_fetch(sx, x0, nx, j0, rows, c[1], dim),
                     pv_fetch(sx, x0, nx, j0, rows, c[2], dim), pv_fetch(sx, x0, nx, j0, rows, c[3], dim));
}
fn steps4(c: vec2<u32>, d: vec2<u32>, w4: u32) -> array<vec2<u32>, 4> {
    let c1 = step(c, d, w4);
    let c2 = step(c1, d, w4);
    return array<vec2<u32>, 4>(c, c1, c2, step(c2, d, w4));
}

// acc[h][r] += Σ_j P[4ty + r][j] · x_j[4(tx + 8h)..+3] with P the tile in pt
// (stored by every thread before the call) and x_j the nx rows of source sx
// from element x0 (its row stride apart), dim long (rows past nx have P = 0 and are skipped). A
// chunk's loads are issued before the barrier that precedes its staging (the
// next chunk's before the current one's products). Every private index is a
// constant: a dynamic one would put the accumulators in local memory.
fn block_pv(acc: ptr<private, array<mat4x4<f32>, 4>>, sx: u32, x0: u32, nx: u32, dim: u32, lid: u32) {
    let ty = lid / 8u;
    let tx = lid % 8u;
    let w = max((dim + 3u) / 4u, 1u);
    // Rows of x per staged chunk (at most 12 floats a thread): 12 at dim 128,
    // the whole tile from dim 48 down.
    let rows = min(BC, 384u / w);
    let w4 = 4u * w;
    let d = vec2<u32>(WG / w4, WG % w4);
    let ca = steps4(vec2<u32>(lid / w4, lid % w4), d, w4);
    let cb = steps4(step(ca[3], d, w4), d, w4);
    let cc = steps4(step(cb[3], d, w4), d, w4);
    var v0 = pv_fetch4(sx, x0, nx, 0u, rows, ca, dim);
    var v1 = pv_fetch4(sx, x0, nx, 0u, rows, cb, dim);
    var v2 = pv_fetch4(sx, x0, nx, 0u, rows, cc, dim);
    let e = lid / 4u;
    let k = lid % 4u;
    for (var j0 = 0u; j0 < nx; j0 += rows) {
        workgroupBarrier();
        st[e][k] = v0.x;
        st[e + 32u][k] = v0.y;
        st[e + 64u][k] = v0.z;
        st[e + 96u][k] = v0.w;
        st[e + 128u][k] = v1.x;
        st[e + 160u][k] = v1.y;
        st[e + 192u][k] = v1.z;
        st[e + 224u][k] = v1.w;
        st[e + 256u][k] = v2.x;
        st[e + 288u][k] = v2.y;
        st[e + 320u][k] = v2.z;
        st[e + 352u][k] = v2.w;
        workgroupBarrier();
        let j1 = j0 + rows;
        if (j1 < nx) {
            v0 = pv_fetch4(sx, x0, nx, j1, rows, ca, dim);
            v1 = pv_fetch4(sx, x0, nx, j1, rows, cb, dim);
            v2 = pv_fetch4(sx, x0, nx, j1, rows, cc, dim);
        }
        let jn = min(rows, nx - j0);
        for (var jj = 0u; jj < jn; jj++) {
            let pv = pt[(j0 + jj) * PT_ROW + ty];
            let xb = jj * w + tx;
            if (tx < w) { (*acc)[0] += outer(st[xb], pv); }
            if (tx + 8u < w) { (*acc)[1] += outer(st[xb + 8u], pv); }
            if (tx + 16u < w) { (*acc)[2] += outer(st[xb + 16u], pv); }
            if (tx + 24u < w) { (*acc)[3] += outer(st[xb + 24u], pv); }
        }
    }
}

// Stores the thread's P-like values (pr: block row 4ty + r, component c:
// tile column 4tx + c) transposed into pt.
fn store_pt(p0: vec4<f32>, p1: vec4<f32>, p2: vec4<f32>, p3: vec4<f32>, lid: u32) {
    let at = 4u * (lid % 8u) * PT_ROW + lid / 8u;
    pt[at] = vec4<f32>(p0.x, p1.x, p2.x, p3.x);
    pt[at + PT_ROW] = vec4<f32>(p0.y, p1.y, p2.y, p3.y);
    pt[at + 2u * PT_ROW] = vec4<f32>(p0.z, p1.z, p2.z, p3.z);
    pt[at + 3u * PT_ROW] = vec4<f32>(p0.w, p1.w, p2.w, p3.w);
}

// Row partials of the 8 threads sharing a row, combined: max or sum.
fn row_reduce(x: vec4<f32>, is_max: bool, lid: u32) -> vec4<f32> {
    let ty = lid / 8u;
    let tx = lid % 8u;
    workgroupBarrier();
    st[tx * (BR / 4u) + ty] = x;
    workgroupBarrier();
    var y = st[ty];
    for (var t = 1u; t < 8u; t++) {
        let z = st[t * (BR / 4u) + ty];
        if (is_max) { y = max(y, z); } else { y += z; }
    }
    return y;
}

// Scores of row i against columns j..j+3 (dots d), and of rows i..i+3 against column j.
fn score_row(d: vec4<f32>, n: u32, i: u32, j: u32) -> vec4<f32> {
    return vec4<f32>(score(d.x, n, i, j), score(d.y, n, i, j + 1u), score(d.z, n, i, j + 2u), score(d.w, n, i, j + 3u));
}
fn score_col(d: vec4<f32>, n: u32, i: u32, j: u32) -> vec4<f32> {
    return vec4<f32>(score(d.x, n, i, j), score(d.y, n, i + 1u, j), score(d.z, n, i + 2u, j), score(d.w, n, i + 3u, j));
}
// Dropout factors of row hash h at columns j..j+3, and of row hashes hs at column j.
fn keep_row(h: u32, j: u32) -> vec4<f32> {
    return vec4<f32>(keep_factor(h, j), keep_factor(h, j + 1u), keep_factor(h, j + 2u), keep_factor(h, j + 3u));
}
fn keep_col(hs: vec4<u32>, j: u32) -> vec4<f32> {
    return vec4<f32>(keep_factor(hs.x, j), keep_factor(hs.y, j), keep_factor(hs.z, j), keep_factor(hs.w, j));
}
fn rows_hash(n: u32, i: u32) -> vec4<u32> {
    return vec4<u32>(drop_row(n, i), drop_row(n, i + 1u), drop_row(n, i + 2u), drop_row(n, i + 3u));
}
// lse and D of rows i..i+3 (-3e38 and 0 past the last row).
fn lse_at(n: u32, i: u32) -> f32 {
    if (i >= p.l) { return NEG; }
    return f32(lse[p.lse_off + n * p.l + i]);
}
fn dd_at(n: u32, i: u32) -> f32 {
    if (i >= p.l) { return 0.0; }
    return dd[n * p.l + i];
}
fn lse4(n: u32, i: u32) -> vec4<f32> {
    return vec4<f32>(lse_at(n, i), lse_at(n, i + 1u), lse_at(n, i + 2u), lse_at(n, i + 3u));
}
fn dd4(n: u32, i: u32) -> vec4<f32> {
    return vec4<f32>(dd_at(n, i), dd_at(n, i + 1u), dd_at(n, i + 2u), dd_at(n, i + 3u));
}
fn hmax(x: vec4<f32>) -> f32 {
    return max(max(x.x, x.y), max(x.z, x.w));
}
fn scale_rows(a: mat4x4<f32>, s: vec4<f32>) -> mat4x4<f32> {
    return mat4x4<f32>(a[0] * s.x, a[1] * s.y, a[2] * s.z, a[3] * s.w);
}

// o = softmax(scores) · v, lse = row logsumexp (-inf and o = 0 for a row
// with every key masked). Grid: a workgroup per (problem, 64 rows), flat.
@compute @workgroup_size(128)
fn attention_forward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                     @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.l + BR - 1u) / BR;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let i0 = (grp % blocks) * BR;
    let rows = min(BR, p.l - i0);
    let ty = lid / 8u;
    let tx = lid % 8u;
    let ib = i0 + 4u * ty;
    let hr = rows_hash(n, ib);
    // Running max and the thread's part of the running sum, per row.
    var m = vec4<f32>(NEG);
    var sum = vec4<f32>(0.0);
    let qa = at(SRC_Q, n, i0);
    for (var j0 = 0u; j0 < p.s; j0 += BC) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 >= i0 + rows) { break; }
        let cols = min(BC, p.s - j0);
        let dots = block_dot(SRC_Q, qa, rows, SRC_K, at(SRC_K, n, j0), cols, p.d, lid);
        let jc = j0 + 4u * tx;
        let s0 = score_row(dots[0], n, ib, jc);
        let s1 = score_row(dots[1], n, ib + 1u, jc);
        let s2 = score_row(dots[2], n, ib + 2u, jc);
        let s3 = score_row(dots[3], n, ib + 3u, jc);
        let tm = vec4<f32>(hmax(s0), hmax(s1), hmax(s2), hmax(s3));
        let mn = max(m, row_reduce(tm, true, lid));
        // A row whose scores so far are all masked keeps its state (weights 0).
        let live = mn >= vec4<f32>(MASKED);
        let alpha = select(vec4<f32>(1.0), exp(m - mn), live);
        let e0 = select(vec4<f32>(0.0), exp(s0 - mn.x), live.x);
        let e1 = select(vec4<f32>(0.0), exp(s1 - mn.y), live.y);
        let e2 = select(vec4<f32>(0.0), exp(s2 - mn.z), live.z);
        let e3 = select(vec4<f32>(0.0), exp(s3 - mn.w), live.w);
        let one = vec4<f32>(1.0);
        sum = sum * alpha + vec4<f32>(dot(e0, one), dot(e1, one), dot(e2, one), dot(e3, one));
        m = select(m, mn, live);
        oa[0] = scale_rows(oa[0], alpha);
        oa[1] = scale_rows(oa[1], alpha);
        oa[2] = scale_rows(oa[2], alpha);
        oa[3] = scale_rows(oa[3], alpha);
        store_pt(e0 * keep_row(hr.x, jc), e1 * keep_row(hr.y, jc), e2 * keep_row(hr.z, jc), e3 * keep_row(hr.w, jc), lid);
        block_pv(&oa, SRC_V, at(SRC_V, n, j0), cols, p.dv, lid);
    }
    let tot = row_reduce(sum, false, lid);
    let inv = select(vec4<f32>(0.0), 1.0 / tot, tot > vec4<f32>(0.0));
    let ls = select(vec4<f32>(bitcast<f32>(0xff800000u)), m + log(tot), tot > vec4<f32>(0.0));
    // Dynamic indices from here on: a copy takes them.
    let fin = oa;
    for (var r = 0u; r < 4u; r++) {
        let i = ib + r;
        if (i >= p.l) { continue; }
        if (tx == 0u) { lse[p.lse_off + n * p.l + i] = T(ls[r]); }
        let oi = at(TO, n, i);
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (col < p.dv) { o[oi + col] = T(fin[h][r][c] * inv[r]); }
            }
        }
    }
}

// dd[r] = g_r · o_r over the N·L rows. 1-D grid.
@compute @workgroup_size(256)
fn attention_backward_dot(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let r = gid.x + gid.y * nwg.x * 256u;
    if (r >= p.n * p.l) { return; }
    let gi = at(SRC_G, r / p.l, r % p.l);
    let oi = at(TO, r / p.l, r % p.l);
    var s = 0.0;
    for (var c = 0u; c < p.dv; c++) {
        s += f32(g[gi + c]) * f32(o[oi + c]);
    }
    dd[r] = s;
}

// dk (ga) and dv (gb): a workgroup per (problem, 64 keys), tiles of 32 query
// rows: Pᵀ and dSᵀ recomputed, then dV += (P∘f)ᵀ dO and dK += dSᵀ Q.
@compute @workgroup_size(128)
fn attention_backward_kv(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                         @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.s + BR - 1u) / BR;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let j0 = (grp % blocks) * BR;
    let keys = min(BR, p.s - j0);
    let ty = lid / 8u;
    let tx = lid % 8u;
    let jb = j0 + 4u * ty;
    let ka = at(SRC_K, n, j0);
    let va = at(SRC_V, n, j0);
    let zero = vec4<f32>(0.0);
    let cut = vec4<f32>(MASKED);
    for (var i0 = 0u; i0 < p.l; i0 += BC) {
        let rows = min(BC, p.l - i0);
        // Rows before the block's first key see none of its keys under the causal mask.
        if ((p.flags & ATTN_CAUSAL) != 0u && i0 + rows <= j0) { continue; }
        let qa = at(SRC_Q, n, i0);
        let gr = at(SRC_G, n, i0);
        let dots = block_dot(SRC_K, ka, keys, SRC_Q, qa, rows, p.d, lid);
        let dps = block_dot(SRC_V, va, keys, SRC_G, gr, rows, p.dv, lid);
        // Thread's queries ic..ic+3 (components) against its keys jb + r.
        let ic = i0 + 4u * tx;
        let ls = lse4(n, ic);
        let di = dd4(n, ic);
        let hs = rows_hash(n, ic);
        let s0 = score_col(dots[0], n, ic, jb);
        let s1 = score_col(dots[1], n, ic, jb + 1u);
        let s2 = score_col(dots[2], n, ic, jb + 2u);
        let s3 = score_col(dots[3], n, ic, jb + 3u);
        let f0 = keep_col(hs, jb);
        let f1 = keep_col(hs, jb + 1u);
        let f2 = keep_col(hs, jb + 2u);
        let f3 = keep_col(hs, jb + 3u);
        let p0 = exp(s0 - ls);
        let p1 = exp(s1 - ls);
        let p2 = exp(s2 - ls);
        let p3 = exp(s3 - ls);
        let ok = ls >= cut;
        let k0 = ok & (s0 >= cut);
        let k1 = ok & (s1 >= cut);
        let k2 = ok & (s2 >= cut);
        let k3 = ok & (s3 >= cut);
        store_pt(select(zero, p0 * f0, k0), select(zero, p1 * f1, k1), select(zero, p2 * f2, k2), select(zero, p3 * f3, k3), lid);
        block_pv(&ob, SRC_G, gr, rows, p.dv, lid);
        workgroupBarrier();
        store_pt(select(zero, p0 * (dps[0] * f0 - di) * p.scale, k0),
                 select(zero, p1 * (dps[1] * f1 - di) * p.scale, k1),
                 select(zero, p2 * (dps[2] * f2 - di) * p.scale, k2),
                 select(zero, p3 * (dps[3] * f3 - di) * p.scale, k3), lid);
        block_pv(&oa, SRC_Q, qa, rows, p.d, lid);
    }
    // Dynamic indices from here on: copies take them.
    let fa = oa;
    let fb = ob;
    for (var r = 0u; r < 4u; r++) {
        let j = jb + r;
        if (j >= p.s) { continue; }
        let ai = at(TA, n, j);
        let bi = at(TB, n, j);
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (col < p.d) { ga[ai + col] = T(fa[h][r][c]); }
                if (col < p.dv) { gb[bi + col] = T(fb[h][r][c]); }
            }
        }
    }
}

// dq (ga): a workgroup per (problem, 64 rows), tiles of 32 keys: dS
// recomputed, then dQ += dS K.
@compute @workgroup_size(128)
fn attention_backward_q(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) lid: u32) {
    let blocks = (p.l + BR - 1u) / BR;
    let grp = group_index(wid, nwg);
    if (grp >= p.n * blocks) { return; }
    let n = grp / blocks;
    let i0 = (grp % blocks) * BR;
    let rows = min(BR, p.l - i0);
    let ty = lid / 8u;
    let tx = lid % 8u;
    let ib = i0 + 4u * ty;
    let hr = rows_hash(n, ib);
    let ls = lse4(n, ib);
    let di = dd4(n, ib);
    let ok = ls >= vec4<f32>(MASKED);
    let zero = vec4<f32>(0.0);
    let cut = vec4<f32>(MASKED);
    let qa = at(SRC_Q, n, i0);
    let gr = at(SRC_G, n, i0);
    for (var j0 = 0u; j0 < p.s; j0 += BC) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 >= i0 + rows) { break; }
        let cols = min(BC, p.s - j0);
        let ka = at(SRC_K, n, j0);
        let dots = block_dot(SRC_Q, qa, rows, SRC_K, ka, cols, p.d, lid);
        let dps = block_dot(SRC_G, gr, rows, SRC_V, at(SRC_V, n, j0), cols, p.dv, lid);
        let jc = j0 + 4u * tx;
        let s0 = score_row(dots[0], n, ib, jc);
        let s1 = score_row(dots[1], n, ib + 1u, jc);
        let s2 = score_row(dots[2], n, ib + 2u, jc);
        let s3 = score_row(dots[3], n, ib + 3u, jc);
        let d0 = exp(s0 - ls.x) * (dps[0] * keep_row(hr.x, jc) - di.x) * p.scale;
        let d1 = exp(s1 - ls.y) * (dps[1] * keep_row(hr.y, jc) - di.y) * p.scale;
        let d2 = exp(s2 - ls.z) * (dps[2] * keep_row(hr.z, jc) - di.z) * p.scale;
        let d3 = exp(s3 - ls.w) * (dps[3] * keep_row(hr.w, jc) - di.w) * p.scale;
        store_pt(select(zero, d0, vec4<bool>(ok.x) & (s0 >= cut)), select(zero, d1, vec4<bool>(ok.y) & (s1 >= cut)),
                 select(zero, d2, vec4<bool>(ok.z) & (s2 >= cut)), select(zero, d3, vec4<bool>(ok.w) & (s3 >= cut)), lid);
        block_pv(&oa, SRC_K, ka, cols, p.d, lid);
    }
    // Dynamic indices from here on: a copy takes them.
    let fin = oa;
    for (var r = 0u; r < 4u; r++) {
        let i = ib + r;
        if (i >= p.l) { continue; }
        let ai = at(TA, n, i);
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (col < p.d) { ga[ai + col] = T(fin[h][r][c]); }
            }
        }
    }
}
