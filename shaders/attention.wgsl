// Fused scaled-dot-product attention (rust/backend/cpu/attention.rs has the
// same schedule on the CPU), tiled as FlashAttention-2. N = batch × heads
// problems of L queries and S keys, q/k head dim d, v head dim dv (both ≤ 128),
// all contiguous. A workgroup of 128 threads owns a block of BR = 64 rows (query
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
// (0 where broadcast); the element offsets of q, k, v, mask, g (dO), o and
// lse. dd, ga, gb start at 0.
struct Params {
    n: u32, heads: u32, l: u32, s: u32, d: u32, dv: u32, flags: u32,
    scale: f32, rp: f32, thresh: u32, seed0: u32, seed1: u32,
    m_sb: u32, m_sh: u32, m_sl: u32, m_ss: u32,
    q_off: u32, k_off: u32, v_off: u32, m_off: u32, g_off: u32, o_off: u32, lse_off: u32,
}

const WG: u32 = 128u;
// Rows of a workgroup's block, rows of a tile, columns of a score chunk.
const BR: u32 = 64u;
const BC: u32 = 32u;
const DK: u32 = 16u;
// Scores below this are masked (-inf, or the running max's start value).
const MASKED: f32 = -1e30;
const NEG: f32 = -3e38;
// Operand sources of the staging loads.
const SRC_Q: u32 = 0u;
const SRC_K: u32 = 1u;
const SRC_V: u32 = 2u;
const SRC_G: u32 = 3u;

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

// Accumulators of output columns: [4 rows][4 column groups] (oa: o, dq, dk; ob: dv).
var<private> oa: array<vec4<f32>, 16>;
var<private> ob: array<vec4<f32>, 16>;

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
fn ld(src: u32, i: u32) -> f32 {
    switch src {
        case 0u: { return f32(q[i]); }
        case 1u: { return f32(k[i]); }
        case 2u: { return f32(v[i]); }
        default: { return f32(g[i]); }
    }
}

// Dot products of the block's rows (na of them from element a0 of source sa)
// with the tile's (nb from b0 of sb), each dim long: [r][c] = a_(4ty+r) · b_(4tx+c).
// Rows past na or nb give 0. Call in uniform control flow (barriers).
fn block_dot(sa: u32, a0: u32, na: u32, sb: u32, b0: u32, nb: u32, dim: u32, lid: u32) -> array<vec4<f32>, 4> {
    let ty = lid / 8u;
    let tx = lid % 8u;
    var acc = array<vec4<f32>, 4>();
    // At least one chunk: its barriers order the caller's pt stores after the last tile's reads.
    let chunks = max((dim + DK - 1u) / DK, 1u);
    for (var ch = 0u; ch < chunks; ch++) {
        let c0 = ch * DK;
        workgroupBarrier();
        // Four neighbouring threads read four consecutive floats of a row.
        for (var t = 0u; t < 8u; t++) {
            let e = lid + t * WG;
            let r = (e / 4u) % BR;
            let c = (e / (4u * BR)) * 4u + e % 4u;
            var x = 0.0;
            if (r < na && c0 + c < dim) { x = ld(sa, a0 + r * dim + c0 + c); }
            st[c * (BR / 4u) + r / 4u][r % 4u] = x;
        }
        for (var t = 0u; t < 4u; t++) {
            let e = lid + t * WG;
            let r = (e / 4u) % BC;
            let c = (e / (4u * BC)) * 4u + e % 4u;
            var x = 0.0;
            if (r < nb && c0 + c < dim) { x = ld(sb, b0 + r * dim + c0 + c); }
            st[256u + c * (BC / 4u) + r / 4u][r % 4u] = x;
        }
        workgroupBarrier();
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

// acc[4r + h] += Σ_j P[4ty + r][j] · x_j[4(tx + 8h)..+3] with P the tile in pt
// (stored by every thread before the call) and x_j the nx rows of source sx
// from element x0, dim long (rows past nx have P = 0 and are skipped).
fn block_pv(acc: ptr<private, array<vec4<f32>, 16>>, sx: u32, x0: u32, nx: u32, dim: u32, lid: u32) {
    let ty = lid / 8u;
    let tx = lid % 8u;
    let w = max((dim + 3u) / 4u, 1u);
    // Rows of x per staged chunk: 12 at dim 128, the whole tile from dim 48 down.
    let rows = min(BC, 384u / w);
    for (var j0 = 0u; j0 < nx; j0 += rows) {
        workgroupBarrier();
        let cnt = rows * w * 4u;
        for (var e = lid; e < cnt; e += WG) {
            let j = e / (w * 4u);
            let c = e % (w * 4u);
            var x = 0.0;
            if (j0 + j < nx && c < dim) { x = ld(sx, x0 + (j0 + j) * dim + c); }
            st[e / 4u][e % 4u] = x;
        }
        workgroupBarrier();
        let jn = min(rows, nx - j0);
        for (var jj = 0u; jj < jn; jj++) {
            let pv = pt[(j0 + jj) * PT_ROW + ty];
            for (var h = 0u; h < 4u; h++) {
                let cv = tx + 8u * h;
                if (cv < w) {
                    let xv = st[jj * w + cv];
                    (*acc)[h] += pv.x * xv;
                    (*acc)[4u + h] += pv.y * xv;
                    (*acc)[8u + h] += pv.z * xv;
                    (*acc)[12u + h] += pv.w * xv;
                }
            }
        }
    }
}

// Stores the thread's P-like values ([r][c]: block row 4ty + r, tile column
// 4tx + c) transposed into pt.
fn store_pt(x: array<vec4<f32>, 4>, lid: u32) {
    let ty = lid / 8u;
    let tx = lid % 8u;
    for (var c = 0u; c < 4u; c++) {
        pt[(4u * tx + c) * PT_ROW + ty] = vec4<f32>(x[0][c], x[1][c], x[2][c], x[3][c]);
    }
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
    var hr = vec4<u32>();
    for (var r = 0u; r < 4u; r++) { hr[r] = drop_row(n, i0 + 4u * ty + r); }
    // Running max and the thread's part of the running sum, per row.
    var m = vec4<f32>(NEG);
    var sum = vec4<f32>(0.0);
    let qa = p.q_off + (n * p.l + i0) * p.d;
    for (var j0 = 0u; j0 < p.s; j0 += BC) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 >= i0 + rows) { break; }
        let cols = min(BC, p.s - j0);
        let dots = block_dot(SRC_Q, qa, rows, SRC_K, p.k_off + (n * p.s + j0) * p.d, cols, p.d, lid);
        var sc = array<vec4<f32>, 4>();
        var tm = vec4<f32>(NEG);
        for (var r = 0u; r < 4u; r++) {
            for (var c = 0u; c < 4u; c++) {
                let s = score(dots[r][c], n, i0 + 4u * ty + r, j0 + 4u * tx + c);
                sc[r][c] = s;
                tm[r] = max(tm[r], s);
            }
        }
        let mn = max(m, row_reduce(tm, true, lid));
        for (var r = 0u; r < 4u; r++) {
            var pr = vec4<f32>(0.0);
            if (mn[r] >= MASKED) {
                let alpha = exp(m[r] - mn[r]);
                for (var h = 0u; h < 4u; h++) { oa[4u * r + h] *= alpha; }
                var t = 0.0;
                for (var c = 0u; c < 4u; c++) {
                    let e = exp(sc[r][c] - mn[r]);
                    t += e;
                    pr[c] = e * keep_factor(hr[r], j0 + 4u * tx + c);
                }
                sum[r] = sum[r] * alpha + t;
                m[r] = mn[r];
            }
            sc[r] = pr;
        }
        store_pt(sc, lid);
        block_pv(&oa, SRC_V, p.v_off + (n * p.s + j0) * p.dv, cols, p.dv, lid);
    }
    let tot = row_reduce(sum, false, lid);
    var inv = vec4<f32>(0.0);
    for (var r = 0u; r < 4u; r++) {
        if (tot[r] > 0.0) { inv[r] = 1.0 / tot[r]; }
        let i = i0 + 4u * ty + r;
        if (tx == 0u && i < p.l) {
            var ls = bitcast<f32>(0xff800000u);
            if (tot[r] > 0.0) { ls = m[r] + log(tot[r]); }
            lse[p.lse_off + n * p.l + i] = T(ls);
        }
    }
    // Each thread's rows 4ty + r, columns 4(tx + 8h) + c (the stores stay in
    // each entry point: a shared one would bind every output to every kernel).
    let obase = p.o_off + (n * p.l + i0) * p.dv;
    for (var r = 0u; r < 4u; r++) {
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (4u * ty + r < rows && col < p.dv) {
                    o[obase + (4u * ty + r) * p.dv + col] = T(oa[4u * r + h][c] * inv[r]);
                }
            }
        }
    }
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
    let ka = p.k_off + (n * p.s + j0) * p.d;
    let va = p.v_off + (n * p.s + j0) * p.dv;
    for (var i0 = 0u; i0 < p.l; i0 += BC) {
        let rows = min(BC, p.l - i0);
        // Rows before the block's first key see none of its keys under the causal mask.
        if ((p.flags & ATTN_CAUSAL) != 0u && i0 + rows <= j0) { continue; }
        let qa = p.q_off + (n * p.l + i0) * p.d;
        let gr = p.g_off + (n * p.l + i0) * p.dv;
        let dots = block_dot(SRC_K, ka, keys, SRC_Q, qa, rows, p.d, lid);
        let dps = block_dot(SRC_V, va, keys, SRC_G, gr, rows, p.dv, lid);
        // Initialized explicitly: naga zeroes an initializer-less var once per call, not per iteration.
        var pf = array<vec4<f32>, 4>();
        var ds = array<vec4<f32>, 4>();
        for (var c = 0u; c < 4u; c++) {
            let i = i0 + 4u * tx + c;
            if (i >= p.l) { continue; }
            let ls = f32(lse[p.lse_off + n * p.l + i]);
            if (ls < MASKED) { continue; }
            let di = dd[n * p.l + i];
            let hrow = drop_row(n, i);
            for (var r = 0u; r < 4u; r++) {
                let j = j0 + 4u * ty + r;
                let s = score(dots[r][c], n, i, j);
                if (s < MASKED) { continue; }
                let pr = exp(s - ls);
                let f = keep_factor(hrow, j);
                pf[r][c] = pr * f;
                ds[r][c] = pr * (dps[r][c] * f - di) * p.scale;
            }
        }
        store_pt(pf, lid);
        block_pv(&ob, SRC_G, gr, rows, p.dv, lid);
        workgroupBarrier();
        store_pt(ds, lid);
        block_pv(&oa, SRC_Q, qa, rows, p.d, lid);
    }
    for (var r = 0u; r < 4u; r++) {
        let j = 4u * ty + r;
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (j < keys && col < p.d) { ga[(n * p.s + j0 + j) * p.d + col] = T(oa[4u * r + h][c]); }
                if (j < keys && col < p.dv) { gb[(n * p.s + j0 + j) * p.dv + col] = T(ob[4u * r + h][c]); }
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
    var hr = vec4<u32>();
    var ls = vec4<f32>(NEG);
    var di = vec4<f32>(0.0);
    for (var r = 0u; r < 4u; r++) {
        let i = i0 + 4u * ty + r;
        hr[r] = drop_row(n, i);
        if (i < p.l) {
            ls[r] = f32(lse[p.lse_off + n * p.l + i]);
            di[r] = dd[n * p.l + i];
        }
    }
    let qa = p.q_off + (n * p.l + i0) * p.d;
    let gr = p.g_off + (n * p.l + i0) * p.dv;
    for (var j0 = 0u; j0 < p.s; j0 += BC) {
        if ((p.flags & ATTN_CAUSAL) != 0u && j0 >= i0 + rows) { break; }
        let cols = min(BC, p.s - j0);
        let ka = p.k_off + (n * p.s + j0) * p.d;
        let dots = block_dot(SRC_Q, qa, rows, SRC_K, ka, cols, p.d, lid);
        let dps = block_dot(SRC_G, gr, rows, SRC_V, p.v_off + (n * p.s + j0) * p.dv, cols, p.dv, lid);
        var ds = array<vec4<f32>, 4>();
        for (var r = 0u; r < 4u; r++) {
            if (ls[r] < MASKED) { continue; }
            for (var c = 0u; c < 4u; c++) {
                let j = j0 + 4u * tx + c;
                let s = score(dots[r][c], n, i0 + 4u * ty + r, j);
                if (s < MASKED) { continue; }
                let pr = exp(s - ls[r]);
                ds[r][c] = pr * (dps[r][c] * keep_factor(hr[r], j) - di[r]) * p.scale;
            }
        }
        store_pt(ds, lid);
        block_pv(&oa, SRC_K, ka, cols, p.d, lid);
    }
    for (var r = 0u; r < 4u; r++) {
        let i = 4u * ty + r;
        for (var h = 0u; h < 4u; h++) {
            for (var c = 0u; c < 4u; c++) {
                let col = 4u * (tx + 8u * h) + c;
                if (i < rows && col < p.d) { ga[(n * p.l + i0 + i) * p.d + col] = T(oa[4u * r + h][c]); }
            }
        }
    }
}
