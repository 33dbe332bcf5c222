// 2-D pooling over contiguous (planes, H, W) data (rust/backend/cpu/pool.rs);
// 1-D pooling is H = 1. Windows are described per axis, as the CPU's Span:
// - sliding: output o reads first + t·d for t < k, first = o·s - pad; taps
//   outside [0, size) are padding and skipped;
// - adaptive (POOL_ADAPTIVE): [floor(o·size/out), ceil((o+1)·size/out)).
// Average divisors per axis (the output's divisor is their product):
// adaptive: the window length; sliding: with count_include_pad (POOL_INCLUDE_PAD) the
// window clipped to [-pad, size + pad), else clipped to [0, size); at least 1.
// divisor_override (POOL_DIVISOR) replaces the product by `divisor`.
alias T = f32;

// Bindings: 0 x (T, read; the gradient g for avg_pool_adjoint), 1 out (T,
// read_write), 2 idx (i32, read_write; max_pool only), 3 params. Entry points
// use the subset they need; avg entries leave binding 2 unbound.
// Params (Rust twin: backend/gpu/pool.rs): planes, h, w (input), oh, ow
// (output), flags (POOL_*), kh, kw, sh, sw, ph, pw,
// dh, dw (sliding windows; ignored when adaptive), divisor (f32), then
// element offsets where x, out and idx start.
struct Params {
    planes: u32, h: u32, w: u32, oh: u32,
    ow: u32, flags: u32, kh: u32, kw: u32,
    sh: u32, sw: u32, ph: u32, pw: u32,
    dh: u32, dw: u32, divisor: f32, x_off: u32,
    o_off: u32, idx_off: u32,
}

@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<storage, read_write> idx: array<i32>;
@group(0) @binding(3) var<storage, read> p: Params;

const WG: u32 = 256u;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}
fn adaptive() -> bool {
    return (p.flags & POOL_ADAPTIVE) != 0u;
}

// One axis's window of output o: first position, tap count, tap step.
struct Span {
    first: i32,
    count: u32,
    step: u32,
}

fn span(o: u32, size: u32, n_out: u32, k: u32, s: u32, pad: u32, d: u32) -> Span {
    if (adaptive()) {
        let start = o * size / n_out;
        let end = ((o + 1u) * size + n_out - 1u) / n_out;
        return Span(i32(start), end - start, 1u);
    }
    return Span(i32(o * s) - i32(pad), k, d);
}

// The average divisor factor of output o along one axis (see the file header).
fn axis_div(o: u32, size: u32, n_out: u32, k: u32, s: u32, pad: u32) -> f32 {
    if (adaptive()) {
        let start = o * size / n_out;
        return f32(((o + 1u) * size + n_out - 1u) / n_out - start);
    }
    let first = i32(o * s) - i32(pad);
    let end_pad = min(first + i32(k), i32(size + pad));
    var d = end_pad - first;
    if ((p.flags & POOL_INCLUDE_PAD) == 0u) {
        d = min(end_pad, i32(size)) - max(first, 0);
    }
    return f32(max(d, 1));
}

fn divisor(oy: u32, ox: u32) -> f32 {
    if ((p.flags & POOL_DIVISOR) != 0u) {
        return p.divisor;
    }
    return axis_div(oy, p.h, p.oh, p.kh, p.sh, p.ph) * axis_div(ox, p.w, p.ow, p.kw, p.sw, p.pw);
}

// (plane, oy, ox) of output element id.
fn out_pos(id: u32) -> vec3<u32> {
    let t = id / p.ow;
    let ox = id - t * p.ow;
    let plane = t / p.oh;
    return vec3<u32>(plane, t - plane * p.oh, ox);
}

// val = max over each window, idx = its flat position iy·W + ix within the
// plane. Window order (rows, then columns); ties keep the first element, NaN
// wins (a later NaN replaces an earlier one), as the CPU kernels. A window of
// padding only would give -inf and -1 (sliding windows never are).
// Bindings 0 x, 1 val, 2 idx, 3 params. Grid: 1-D over planes·OH·OW: groups_1d.
@compute @workgroup_size(256)
fn max_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.planes * p.oh * p.ow) { return; }
    let q = out_pos(id);
    let ry = span(q.y, p.h, p.oh, p.kh, p.sh, p.ph, p.dh);
    let rx = span(q.z, p.w, p.ow, p.kw, p.sw, p.pw, p.dw);
    let base = p.x_off + q.x * p.h * p.w;
    var best = bitcast<f32>(0xff800000u);
    var at = -1;
    for (var ty = 0u; ty < ry.count; ty++) {
        let iy = ry.first + i32(ty * ry.step);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        let row = u32(iy) * p.w;
        for (var tx = 0u; tx < rx.count; tx++) {
            let ix = rx.first + i32(tx * rx.step);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            let pos = row + u32(ix);
            let v = f32(x[base + pos]);
            // A NaN best stays (by bits: a driver may turn `v > best` into a max).
            if (at < 0 || is_nan(v) || (!is_nan(best) && v > best)) {
                best = v;
                at = i32(pos);
            }
        }
    }
    out[p.o_off + id] = T(best);
    idx[p.idx_off + id] = at;
}

// out = window sum / divisor, summed in f32 in window order.
// Bindings 0 x, 1 out, 3 params. Grid: 1-D over planes·OH·OW: groups_1d.
@compute @workgroup_size(256)
fn avg_pool(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.planes * p.oh * p.ow) { return; }
    let q = out_pos(id);
    let ry = span(q.y, p.h, p.oh, p.kh, p.sh, p.ph, p.dh);
    let rx = span(q.z, p.w, p.ow, p.kw, p.sw, p.pw, p.dw);
    let base = p.x_off + q.x * p.h * p.w;
    var s = 0.0;
    for (var ty = 0u; ty < ry.count; ty++) {
        let iy = ry.first + i32(ty * ry.step);
        if (iy < 0 || iy >= i32(p.h)) { continue; }
        let row = base + u32(iy) * p.w;
        for (var tx = 0u; tx < rx.count; tx++) {
            let ix = rx.first + i32(tx * rx.step);
            if (ix < 0 || ix >= i32(p.w)) { continue; }
            s += f32(x[row + u32(ix)]);
        }
    }
    out[p.o_off + id] = T(s / divisor(q.y, q.z));
}

// The outputs [lo, hi] along one axis whose windows contain input position i
// (hi < lo when none). Sliding windows with dilation also need the tap test
// in `hits`.
fn covering(i: u32, size: u32, n_out: u32, k: u32, s: u32, pad: u32, d: u32) -> vec2<i32> {
    if (adaptive()) {
        let lo = i * n_out / size;
        let hi = min(((i + 1u) * n_out + size - 1u) / size, n_out) - 1u;
        return vec2<i32>(i32(lo), i32(hi));
    }
    // o·s ∈ [i + pad - (k-1)·d, i + pad]
    let top = i32(i + pad);
    let bottom = top - i32((k - 1u) * d);
    let lo = select(0, (bottom + i32(s) - 1) / i32(s), bottom > 0);
    let hi = min(top / i32(s), i32(n_out) - 1);
    return vec2<i32>(lo, hi);
}
fn hits(i: u32, o: u32, s: u32, pad: u32, d: u32) -> bool {
    if (d == 1u || adaptive()) { return true; }
    return (i + pad - o * s) % d == 0u;
}

// The adjoint of avg_pool (its backward): out[i] = Σ g[o] / divisor(o) over
// the outputs o whose window holds input element i, as a gather (a thread
// per input element), in output order as the CPU's scatter adds them.
// out is overwritten. Bindings 0 g (planes·OH·OW), 1 out (planes·H·W), 3 params.
// Grid: 1-D over planes·H·W: groups_1d.
@compute @workgroup_size(256)
fn avg_pool_adjoint(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.planes * p.h * p.w) { return; }
    let t = id / p.w;
    let ix = id - t * p.w;
    let plane = t / p.h;
    let iy = t - plane * p.h;
    let cy = covering(iy, p.h, p.oh, p.kh, p.sh, p.ph, p.dh);
    let cx = covering(ix, p.w, p.ow, p.kw, p.sw, p.pw, p.dw);
    let base = p.x_off + plane * p.oh * p.ow;
    var s = 0.0;
    for (var oy = cy.x; oy <= cy.y; oy++) {
        if (!hits(iy, u32(oy), p.sh, p.ph, p.dh)) { continue; }
        for (var ox = cx.x; ox <= cx.y; ox++) {
            if (!hits(ix, u32(ox), p.sw, p.pw, p.dw)) { continue; }
            s += f32(x[base + u32(oy) * p.ow + u32(ox)]) / divisor(u32(oy), u32(ox));
        }
    }
    out[p.o_off + id] = T(s);
}
