// Training-mode batch_norm over x (N, C, S) contiguous (rust/backend/gpu/batch_norm.rs),
// in the fewest passes the math allows: forward = one statistics sweep + one
// normalize sweep, backward = one sweep for Σg and Σg·(x - mean) + one for dx.
// Statistics are f32 (2, C) tensors; sums are shifted by each channel's first
// element so that the one-sweep variance does not cancel catastrophically.
alias T = f32;

// Params (Rust twin: backend/gpu/batch_norm.rs): sizes n, c, s (N, C and the
// spatial extent); flags: 1 weight, 2 bias; eps; element offsets of the
// bindings in their windows.
struct Params {
    n: u32, c: u32, s: u32, flags: u32,
    eps: f32, x_off: u32, g_off: u32, w_off: u32,
    b_off: u32, out_off: u32, _pad0: u32, _pad1: u32,
}

const WG: u32 = 256u;

// Bindings (all entries): 0 x (T, read), 1 g (T, read; dy, a dummy in the
// forward), 2 w (T, read), 3 b (T, read), 4 stats (f32, read_write: (2, C)
// mean and biased variance), 5 gstats (f32, read_write: (2, C) Σg and
// Σg·(x - mean)), 6 out (T, read_write: y or dx), 7 params.
@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read> g: array<T>;
@group(0) @binding(2) var<storage, read> w: array<T>;
@group(0) @binding(3) var<storage, read> b: array<T>;
@group(0) @binding(4) var<storage, read_write> stats: array<f32>;
@group(0) @binding(5) var<storage, read_write> gstats: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<T>;
@group(0) @binding(7) var<storage, read> p: Params;

var<workgroup> red: array<vec2<f32>, WG>;

// Workgroup tree sum; every invocation gets the total.
fn reduce2(v: vec2<f32>, tid: u32) -> vec2<f32> {
    red[tid] = v;
    workgroupBarrier();
    for (var k = WG / 2u; k > 0u; k >>= 1u) {
        if (tid < k) {
            red[tid] += red[tid + k];
        }
        workgroupBarrier();
    }
    return red[0];
}

// Element index of the i-th value (i < N·S) of channel ch.
fn at(ch: u32, i: u32) -> u32 {
    let img = i / p.s;
    return (img * p.c + ch) * p.s + i - img * p.s;
}

// The channel of a workgroup: grid_rows(C).
fn channel(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

// stats[ch] = mean, stats[C + ch] = biased variance. A workgroup per channel.
@compute @workgroup_size(256)
fn bn_stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
            @builtin(local_invocation_index) tid: u32) {
    let ch = channel(wid, nwg);
    if (ch >= p.c) { return; } // uniform per workgroup
    let m = p.n * p.s;
    let k = f32(x[p.x_off + at(ch, 0u)]);
    var acc = vec2<f32>(0.0);
    for (var i = tid; i < m; i += WG) {
        let v = f32(x[p.x_off + at(ch, i)]) - k;
        acc += vec2<f32>(v, v * v);
    }
    let t = reduce2(acc, tid) / f32(m);
    if (tid == 0u) {
        stats[ch] = k + t.x;
        stats[p.c + ch] = max(t.y - t.x * t.x, 0.0);
    }
}

// The channel of element e of x.
fn chan(e: u32) -> u32 {
    return (e / p.s) % p.c;
}

fn rstd(ch: u32) -> f32 {
    return inverseSqrt(stats[p.c + ch] + p.eps);
}

fn weight(ch: u32) -> f32 {
    if ((p.flags & 1u) != 0u) { return f32(w[p.w_off + ch]); }
    return 1.0;
}

// y = (x - mean) · rstd · w + b. Grid: groups_1d(N·C·S).
@compute @workgroup_size(256)
fn bn_apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * WG;
    if (e >= p.n * p.c * p.s) { return; }
    let ch = chan(e);
    var v = (f32(x[p.x_off + e]) - stats[ch]) * rstd(ch) * weight(ch);
    if ((p.flags & 2u) != 0u) { v += f32(b[p.b_off + ch]); }
    out[p.out_off + e] = T(v);
}

// gstats[ch] = Σ g, gstats[C + ch] = Σ g · (x - mean). A workgroup per channel.
@compute @workgroup_size(256)
fn bn_grad_stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                 @builtin(local_invocation_index) tid: u32) {
    let ch = channel(wid, nwg);
    if (ch >= p.c) { return; }
    let m = p.n * p.s;
    let mu = stats[ch];
    var acc = vec2<f32>(0.0);
    for (var i = tid; i < m; i += WG) {
        let e = at(ch, i);
        let gv = f32(g[p.g_off + e]);
        acc += vec2<f32>(gv, gv * (f32(x[p.x_off + e]) - mu));
    }
    let t = reduce2(acc, tid);
    if (tid == 0u) {
        gstats[ch] = t.x;
        gstats[p.c + ch] = t.y;
    }
}

// dx = w · rstd · (g - Σg / M - (x - mean) · rstd² · Σg(x - mean) / M), M = N·S.
// Grid: groups_1d(N·C·S).
@compute @workgroup_size(256)
fn bn_grad_apply(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = gid.x + gid.y * nwg.x * WG;
    if (e >= p.n * p.c * p.s) { return; }
    let ch = chan(e);
    let r = rstd(ch);
    let inv_m = 1.0 / f32(p.n * p.s);
    let xc = f32(x[p.x_off + e]) - stats[ch];
    let v = f32(g[p.g_off + e]) - gstats[ch] * inv_m - xc * r * r * gstats[p.c + ch] * inv_m;
    out[p.out_off + e] = T(weight(ch) * r * v);
}
