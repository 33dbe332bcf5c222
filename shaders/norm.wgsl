// layer_norm over contiguous rows of m elements (rust/backend/cpu/norm.rs):
// forward saving the per-row mean and 1/std (f32), backward as gx per row
// (the weight/bias gradients are column sums, left to reduce.wgsl).
// Mean and variance are two passes (the CPU's numerics), the variance
// divides by m, rstd = 1 / sqrt(var + eps).
alias T = f32;

// Params (all entries; each reads the fields it needs; Rust twin:
// backend/gpu/norm.rs): rows, m: row count and length; flags: NORM_WEIGHT,
// NORM_BIAS (layer_norm; layer_norm_backward reads NORM_WEIGHT); eps (f32);
// element offsets where each tensor starts: x_off, g_off, w_off, b_off,
// mean_off, rstd_off, out_off (y / gx).
struct Params {
    rows: u32, m: u32, flags: u32, eps: f32,
    x_off: u32, g_off: u32, w_off: u32, b_off: u32,
    mean_off: u32, rstd_off: u32, out_off: u32,
}

const WG: u32 = 256u;

var<workgroup> red1: array<f32, WG>;
var<workgroup> red2: array<vec2<f32>, WG>;

// Workgroup tree sums; every invocation gets the total. The trailing barrier
// lets the next reduction reuse the array.
fn reduce1(v: f32, tid: u32) -> f32 {
    red1[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red1[tid] += red1[tid + s];
        }
        workgroupBarrier();
    }
    let r = red1[0];
    workgroupBarrier();
    return r;
}
fn reduce2(v: vec2<f32>, tid: u32) -> vec2<f32> {
    red2[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red2[tid] += red2[tid + s];
        }
        workgroupBarrier();
    }
    let r = red2[0];
    workgroupBarrier();
    return r;
}

// ---- layer_norm ----
// Bindings: 0 x (T, read), 1 w (T, read), 2 b (T, read), 3 y (T, read_write),
// 4 mean (f32, read_write), 5 rstd (f32, read_write), 6 params.
// w and b are read only when flagged; bind any small buffer when absent.
@group(0) @binding(0) var<storage, read> f_x: array<T>;
@group(0) @binding(1) var<storage, read> f_w: array<T>;
@group(0) @binding(2) var<storage, read> f_b: array<T>;
@group(0) @binding(3) var<storage, read_write> f_y: array<T>;
@group(0) @binding(4) var<storage, read_write> f_mean: array<f32>;
@group(0) @binding(5) var<storage, read_write> f_rstd: array<f32>;
@group(0) @binding(6) var<storage, read> p: Params;

// y = (x - mean)·rstd·w + b per row; mean[r], rstd[r] written for the backward.
// Grid: a workgroup per row: (min(rows, 65535), ceil(rows / 65535), 1).
@compute @workgroup_size(256)
fn layer_norm(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
              @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.rows) { return; }
    let m = p.m;
    let xb = p.x_off + row * m;
    let mf = f32(m);
    var s = 0.0;
    for (var j = tid; j < m; j += WG) {
        s += f32(f_x[xb + j]);
    }
    let mu = reduce1(s, tid) / mf;
    var q = 0.0;
    for (var j = tid; j < m; j += WG) {
        let d = f32(f_x[xb + j]) - mu;
        q += d * d;
    }
    let var_ = reduce1(q, tid) / mf;
    let rs = 1.0 / sqrt(var_ + p.eps);
    if (tid == 0u) {
        f_mean[p.mean_off + row] = mu;
        f_rstd[p.rstd_off + row] = rs;
    }
    let has_w = (p.flags & NORM_WEIGHT) != 0u;
    let has_b = (p.flags & NORM_BIAS) != 0u;
    let yb = p.out_off + row * m;
    for (var j = tid; j < m; j += WG) {
        var v = (f32(f_x[xb + j]) - mu) * rs;
        if (has_w) { v *= f32(f_w[p.w_off + j]); }
        if (has_b) { v += f32(f_b[p.b_off + j]); }
        f_y[yb + j] = T(v);
    }
}

// ---- layer_norm_backward ----
// Bindings: 0 x (T, read), 1 g (T, read), 2 w (T, read; only with flags bit 0,
// else bind any small buffer), 3 mean (f32, read), 4 rstd (f32, read),
// 5 gx (T, read_write), 6 params.
@group(0) @binding(1) var<storage, read> b_g: array<T>;
@group(0) @binding(2) var<storage, read> b_w: array<T>;
@group(0) @binding(3) var<storage, read> b_mean: array<f32>;
@group(0) @binding(4) var<storage, read> b_rstd: array<f32>;
@group(0) @binding(5) var<storage, read_write> b_gx: array<T>;

// gx = rstd·(ĝ - mean(ĝ) - x̂·mean(ĝ·x̂)) per row, ĝ = g·w, x̂ = (x - mean)·rstd.
// Grid: a workgroup per row, as layer_norm.
@compute @workgroup_size(256)
fn layer_norm_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                       @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.rows) { return; }
    let m = p.m;
    let xb = p.x_off + row * m;
    let gb = p.g_off + row * m;
    let mu = b_mean[p.mean_off + row];
    let rs = b_rstd[p.rstd_off + row];
    let has_w = (p.flags & NORM_WEIGHT) != 0u;
    var s = vec2<f32>(0.0);
    for (var j = tid; j < m; j += WG) {
        let xh = (f32(f_x[xb + j]) - mu) * rs;
        var gh = f32(b_g[gb + j]);
        if (has_w) { gh *= f32(b_w[p.w_off + j]); }
        s += vec2<f32>(gh, gh * xh);
    }
    let ab = reduce2(s, tid) / f32(m);
    let ob = p.out_off + row * m;
    for (var j = tid; j < m; j += WG) {
        let xh = (f32(f_x[xb + j]) - mu) * rs;
        var gh = f32(b_g[gb + j]);
        if (has_w) { gh *= f32(b_w[p.w_off + j]); }
        b_gx[ob + j] = T(rs * (gh - ab.x - xh * ab.y));
    }
}
