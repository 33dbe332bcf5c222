// grid_sample (rust/ops/sample.rs), mirroring rust/backend/cpu/sample.rs: an
// output point reads the input at the product of per-axis taps (2 for linear,
// 1 for nearest, 4 for bicubic) with per-axis weights. 2-D is 3-D with depth
// 1, whose depth axis is one tap of weight 1. A thread per (batch, point)
// loops over the channels, so the taps are computed once per point.
//
// The input gradient is a scatter (points sharing a tap add into it): WGSL
// has atomics on i32/u32 only, so each add is a compare-and-swap loop on the
// float32 bits (a gather would need, per input element, the points whose taps
// reach it: unbounded for an arbitrary grid). The order of the adds is not
// fixed, so the sums may differ in the last bits from run to run.
alias T = f32;

// Bindings: 0 x (input, N·C·plane), 1 grid (N·pts·nd), 2 go (output
// gradient, backward), 3 gx (input gradient, f32 bits, zeroed; backward),
// 4 out (forward) / gg (grid gradient, backward), 5 params.
// Params (Rust twin: backend/gpu/sample.rs): n (batches this dispatch), c,
// d, h, w (input sizes; d = 1 in 2-D), pts (output points per batch), nd
// (2 or 3), mode (GRID_MODE_*), pad (GRID_PAD_*), align (align_corners),
// need (bit 0: gx, bit 1: gg), then the element offsets of bindings 0..4.
struct Params {
    n: u32, c: u32, d: u32, h: u32,
    w: u32, pts: u32, nd: u32, mode: u32,
    pad: u32, align: u32, need: u32, x_off: u32,
    g_off: u32, go_off: u32, gx_off: u32, o_off: u32,
}

@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read> grid: array<T>;
@group(0) @binding(2) var<storage, read> go: array<T>;
@group(0) @binding(3) var<storage, read_write> gx: array<atomic<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<T>;
@group(0) @binding(5) var<storage, read> p: Params;

const WG: u32 = 256u;
const A: f32 = -0.75; // PyTorch's bicubic convolution coefficient

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// The taps of one axis: count, positions (-1: out of range, reads 0),
// weights and the weights' derivatives w.r.t. the grid coordinate.
struct Axis {
    k: u32,
    pos: vec4<i32>,
    w: vec4<f32>,
    dw: vec4<f32>,
}

// Clamp into [0, size - 1], gradient 1 strictly inside: (value, gradient); NaN goes to 0.
fn clip(x: f32, size: u32) -> vec2<f32> {
    let hi = f32(size - 1u);
    if (!(x > 0.0)) { return vec2<f32>(0.0, 0.0); }
    if (x >= hi) { return vec2<f32>(hi, 0.0); }
    return vec2<f32>(x, 1.0);
}

// Reflection into [lo2 / 2, hi2 / 2] (bounds doubled, as PyTorch).
fn reflect(x: f32, lo2: f32, hi2: f32) -> vec2<f32> {
    if (lo2 == hi2) { return vec2<f32>(0.0, 0.0); }
    let lo = lo2 / 2.0;
    let span = (hi2 - lo2) / 2.0;
    var d = x - lo;
    var sign = 1.0;
    if (d < 0.0) {
        sign = -1.0;
        d = -d;
    }
    let flips = floor(d / span);
    let extra = d - flips * span;
    if (flips - 2.0 * floor(flips / 2.0) == 0.0) {
        return vec2<f32>(extra + lo, sign);
    }
    return vec2<f32>(span - extra + lo, -sign);
}

fn pad_coord(x: f32, size: u32) -> vec2<f32> {
    if (p.pad == GRID_PAD_BORDER) { return clip(x, size); }
    if (p.pad == GRID_PAD_REFLECTION) {
        let s = f32(size);
        var r: vec2<f32>;
        if (p.align != 0u) {
            r = reflect(x, 0.0, 2.0 * (s - 1.0));
        } else {
            r = reflect(x, -1.0, 2.0 * s - 1.0);
        }
        let c = clip(r.x, size);
        return vec2<f32>(c.x, r.y * c.y);
    }
    return vec2<f32>(x, 1.0);
}

fn near(x: f32) -> f32 { return ((A + 2.0) * x - (A + 3.0)) * x * x + 1.0; }
fn dnear(x: f32) -> f32 { return 3.0 * (A + 2.0) * x * x - 2.0 * (A + 3.0) * x; }
fn far(x: f32) -> f32 { return ((A * x - 5.0 * A) * x + 8.0 * A) * x - 4.0 * A; }
fn dfar(x: f32) -> f32 { return 3.0 * A * x * x - 10.0 * A * x + 8.0 * A; }

fn tap(x: f32, size: u32) -> i32 {
    if (x >= 0.0 && x <= f32(size - 1u)) { return i32(x); }
    return -1;
}

// The taps of grid coordinate g along an axis of `size`.
fn axis(g: f32, size: u32) -> Axis {
    let s = f32(size);
    var u: f32;
    var mu: f32;
    if (p.align != 0u) {
        mu = (s - 1.0) / 2.0;
        u = (g + 1.0) * mu;
    } else {
        mu = s / 2.0;
        u = ((g + 1.0) * s - 1.0) / 2.0;
    }
    var a: Axis;
    if (p.mode == GRID_MODE_BILINEAR) {
        let c = pad_coord(u, size);
        let x0 = floor(c.x);
        let f = c.x - x0;
        a.k = 2u;
        a.pos = vec4<i32>(tap(x0, size), tap(x0 + 1.0, size), -1, -1);
        a.w = vec4<f32>(1.0 - f, f, 0.0, 0.0);
        a.dw = vec4<f32>(-c.y * mu, c.y * mu, 0.0, 0.0);
    } else if (p.mode == GRID_MODE_NEAREST) {
        // WGSL's round is half to even, as PyTorch's nearbyint.
        a.k = 1u;
        a.pos = vec4<i32>(tap(round(pad_coord(u, size).x), size), -1, -1, -1);
        a.w = vec4<f32>(1.0, 0.0, 0.0, 0.0);
        a.dw = vec4<f32>(0.0);
    } else {
        let x0 = floor(u);
        let t = u - x0;
        a.k = 4u;
        for (var k = 0u; k < 4u; k++) {
            a.pos[k] = tap(round(pad_coord(x0 + f32(k) - 1.0, size).x), size);
        }
        a.w = vec4<f32>(far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t));
        a.dw = vec4<f32>(dfar(t + 1.0), dnear(t), -dnear(1.0 - t), -dfar(2.0 - t)) * mu;
    }
    return a;
}

fn unit() -> Axis {
    var a: Axis;
    a.k = 1u;
    a.pos = vec4<i32>(0, -1, -1, -1);
    a.w = vec4<f32>(1.0, 0.0, 0.0, 0.0);
    a.dw = vec4<f32>(0.0);
    return a;
}

// out (N, C, pts) = samples of x at the grid. Bindings 0 x, 1 grid, 4 out.
// Grid: 1-D over n·pts: grid_1d.
@compute @workgroup_size(256)
fn grid_sample(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.n * p.pts) { return; }
    let b = id / p.pts;
    let q = id - b * p.pts;
    let gb = p.g_off + id * p.nd;
    var ad = unit();
    if (p.nd == 3u) { ad = axis(f32(grid[gb + 2u]), p.d); }
    let ah = axis(f32(grid[gb + 1u]), p.h);
    let aw = axis(f32(grid[gb]), p.w);
    let plane = p.d * p.h * p.w;
    for (var ch = 0u; ch < p.c; ch++) {
        let src = p.x_off + (b * p.c + ch) * plane;
        var s = 0.0;
        for (var i = 0u; i < ad.k; i++) {
            if (ad.pos[i] < 0) { continue; }
            for (var j = 0u; j < ah.k; j++) {
                if (ah.pos[j] < 0) { continue; }
                let row = src + (u32(ad.pos[i]) * p.h + u32(ah.pos[j])) * p.w;
                for (var k = 0u; k < aw.k; k++) {
                    if (aw.pos[k] < 0) { continue; }
                    s += ad.w[i] * ah.w[j] * aw.w[k] * f32(x[row + u32(aw.pos[k])]);
                }
            }
        }
        out[p.o_off + (b * p.c + ch) * p.pts + q] = T(s);
    }
}

fn add_f32(i: u32, v: f32) {
    var old = atomicLoad(&gx[i]);
    loop {
        let r = atomicCompareExchangeWeak(&gx[i], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}

// Gradients from go (N, C, pts): the grid's into gg (N, pts, nd) when
// need bit 1, the input's added into gx (zeroed by the launcher) when need
// bit 0. Bindings 0 x, 1 grid, 2 go, 3 gx, 4 gg. Grid: 1-D over n·pts.
@compute @workgroup_size(256)
fn grid_sample_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.n * p.pts) { return; }
    let b = id / p.pts;
    let q = id - b * p.pts;
    let gb = p.g_off + id * p.nd;
    var ad = unit();
    if (p.nd == 3u) { ad = axis(f32(grid[gb + 2u]), p.d); }
    let ah = axis(f32(grid[gb + 1u]), p.h);
    let aw = axis(f32(grid[gb]), p.w);
    let plane = p.d * p.h * p.w;
    var acc = vec3<f32>(0.0);
    for (var ch = 0u; ch < p.c; ch++) {
        let base = (b * p.c + ch) * plane;
        let g = f32(go[p.go_off + (b * p.c + ch) * p.pts + q]);
        for (var i = 0u; i < ad.k; i++) {
            if (ad.pos[i] < 0) { continue; }
            for (var j = 0u; j < ah.k; j++) {
                if (ah.pos[j] < 0) { continue; }
                let row = base + (u32(ad.pos[i]) * p.h + u32(ah.pos[j])) * p.w;
                for (var k = 0u; k < aw.k; k++) {
                    if (aw.pos[k] < 0) { continue; }
                    let at = row + u32(aw.pos[k]);
                    if ((p.need & 1u) != 0u) {
                        add_f32(p.gx_off + at, g * ad.w[i] * ah.w[j] * aw.w[k]);
                    }
                    let v = g * f32(x[p.x_off + at]);
                    acc += v * vec3<f32>(
                        ad.dw[i] * ah.w[j] * aw.w[k],
                        ad.w[i] * ah.dw[j] * aw.w[k],
                        ad.w[i] * ah.w[j] * aw.dw[k],
                    );
                }
            }
        }
    }
    if ((p.need & 2u) != 0u) {
        // Grid components are (x, y[, z]): width, height, depth.
        let o = p.o_off + id * p.nd;
        out[o] = T(acc.z);
        out[o + 1u] = T(acc.y);
        if (p.nd == 3u) { out[o + 2u] = T(acc.x); }
    }
}
