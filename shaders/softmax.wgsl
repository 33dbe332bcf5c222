// softmax / log_softmax along one dim of a contiguous (outer, n, inner)
// tensor, forward and backward (rust/backend/cpu/softmax.rs). Element k of
// row (o, j) is at off + (o·n + k)·inner + j.
//
// Two layouts of the work, same results:
// - row entries (softmax, log_softmax, *_backward): a workgroup of 256 per
//   row, strided loops and tree reductions. For inner == 1 (the last dim);
//   they accept inner > 1 but then read strided.
// - cols entries (softmax_cols, ...): a thread per row, adjacent threads on
//   adjacent j, so inner > 1 reads are coalesced. For inner > 1, or for many
//   short rows (n below ~64) with inner == 1.
//
// Semantics as the CPU: the maximum is taken with NaN winning; a row whose
// maximum is not finite (all -inf, a +inf, or a NaN) gives NaN everywhere.
// Backward: softmax gx = y·(g - Σ g·y); log_softmax gx = g - e^y·Σ g.
alias T = f32;

// Bindings (every entry): 0 a (T, read), 1 b (T, read; backward only),
// 2 o (T, read_write), 3 params. Forward: a = x, o = y. Backward: a = y (the
// forward's output), b = g (its gradient), o = gx.
// Params: outer, n, inner (sizes around the dim), a_off, b_off, o_off
// (element offsets where each tensor starts; b_off unused forward).
struct Params {
    outer: u32, n: u32, inner: u32,
    a_off: u32, b_off: u32, o_off: u32,
}

@group(0) @binding(0) var<storage, read> a: array<T>;
@group(0) @binding(1) var<storage, read> b: array<T>;
@group(0) @binding(2) var<storage, read_write> o: array<T>;
@group(0) @binding(3) var<storage, read> p: Params;

const WG: u32 = 256u;

// Bit tests: drivers may fold x != x and infinity checks away under fast math.
fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}
fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}
fn nan() -> f32 {
    return bitcast<f32>(0x7fc00000u);
}
fn neg_inf() -> f32 {
    return bitcast<f32>(0xff800000u);
}

// Online softmax state (m, s): running maximum (NaN wins) and Σ e^(v - m).
// Once m is not finite the row's result is NaN and s no longer matters.
fn push(st: vec2<f32>, v: f32) -> vec2<f32> {
    if (v > st.x) {
        return vec2<f32>(v, st.y * exp(st.x - v) + 1.0);
    }
    if (is_nan(v)) {
        return vec2<f32>(v, 0.0);
    }
    if (bitcast<u32>(v) == 0xff800000u) {
        return st; // e^(-inf - m) = 0; also avoids -inf - -inf before any finite v
    }
    return vec2<f32>(st.x, st.y + exp(v - st.x));
}
fn merge(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
    if (is_nan(x.x) || is_nan(y.x)) {
        return vec2<f32>(nan(), 0.0);
    }
    let m = max(x.x, y.x);
    if (!is_finite(m)) {
        return vec2<f32>(m, 0.0);
    }
    return vec2<f32>(m, x.y * exp(x.x - m) + y.y * exp(y.x - m));
}

var<workgroup> red2: array<vec2<f32>, WG>;
var<workgroup> red1: array<f32, WG>;

// Workgroup tree reductions; every invocation gets the result. The trailing
// barrier lets the next reduction reuse the array.
fn reduce_state(v: vec2<f32>, tid: u32) -> vec2<f32> {
    red2[tid] = v;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (tid < s) {
            red2[tid] = merge(red2[tid], red2[tid + s]);
        }
        workgroupBarrier();
    }
    let r = red2[0];
    workgroupBarrier();
    return r;
}
fn reduce_sum(v: f32, tid: u32) -> f32 {
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

// Element offset (relative to a tensor's start) of element 0 of row r.
fn row_base(r: u32) -> u32 {
    if (p.inner == 1u) {
        return r * p.n;
    }
    let q = r / p.inner;
    return q * p.n * p.inner + (r - q * p.inner);
}

fn write_forward(base: u32, k0: u32, step: u32, st: vec2<f32>, is_log: bool) {
    let n = p.n;
    let inner = p.inner;
    let m = st.x;
    if (!is_finite(m)) {
        for (var k = k0; k < n; k += step) {
            o[p.o_off + base + k * inner] = T(nan());
        }
        return;
    }
    if (is_log) {
        // (x - m) first: m + ln s would lose x's low bits when |m| is large.
        let l = log(st.y);
        for (var k = k0; k < n; k += step) {
            o[p.o_off + base + k * inner] = T((f32(a[p.a_off + base + k * inner]) - m) - l);
        }
    } else {
        let r = 1.0 / st.y;
        for (var k = k0; k < n; k += step) {
            o[p.o_off + base + k * inner] = T(exp(f32(a[p.a_off + base + k * inner]) - m) * r);
        }
    }
}

fn row_forward(row: u32, tid: u32, is_log: bool) {
    let base = row_base(row);
    var st = vec2<f32>(neg_inf(), 0.0);
    for (var k = tid; k < p.n; k += WG) {
        st = push(st, f32(a[p.a_off + base + k * p.inner]));
    }
    st = reduce_state(st, tid);
    write_forward(base, tid, WG, st, is_log);
}

// y = softmax(x) over rows. Grid: a workgroup per row, rows = outer·inner:
// (min(rows, 65535), ceil(rows / 65535), 1).
@compute @workgroup_size(256)
fn softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
           @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.outer * p.inner) { return; }
    row_forward(row, tid, false);
}

// y = log_softmax(x) over rows. Grid as softmax.
@compute @workgroup_size(256)
fn log_softmax(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
               @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.outer * p.inner) { return; }
    row_forward(row, tid, true);
}

fn write_backward(base: u32, k0: u32, step: u32, s: f32, is_log: bool) {
    let inner = p.inner;
    for (var k = k0; k < p.n; k += step) {
        let i = base + k * inner;
        let y = f32(a[p.a_off + i]);
        let g = f32(b[p.b_off + i]);
        o[p.o_off + i] = T(select(y * (g - s), g - exp(y) * s, is_log));
    }
}

fn row_backward(row: u32, tid: u32, is_log: bool) {
    let base = row_base(row);
    var s = 0.0;
    for (var k = tid; k < p.n; k += WG) {
        let i = base + k * p.inner;
        let g = f32(b[p.b_off + i]);
        s += select(g * f32(a[p.a_off + i]), g, is_log);
    }
    s = reduce_sum(s, tid);
    write_backward(base, tid, WG, s, is_log);
}

// gx = y·(g - Σ g·y) over rows. Grid as softmax.
@compute @workgroup_size(256)
fn softmax_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                    @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.outer * p.inner) { return; }
    row_backward(row, tid, false);
}

// gx = g - e^y·Σ g over rows (y is log_softmax's output). Grid as softmax.
@compute @workgroup_size(256)
fn log_softmax_backward(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
                        @builtin(local_invocation_index) tid: u32) {
    let row = wid.x + wid.y * nwg.x;
    if (row >= p.outer * p.inner) { return; }
    row_backward(row, tid, true);
}

// ---- a thread per row (coalesced across j when inner > 1) ----

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

fn col_forward(row: u32, is_log: bool) {
    let base = row_base(row);
    var st = vec2<f32>(neg_inf(), 0.0);
    for (var k = 0u; k < p.n; k++) {
        st = push(st, f32(a[p.a_off + base + k * p.inner]));
    }
    write_forward(base, 0u, 1u, st, is_log);
}

fn col_backward(row: u32, is_log: bool) {
    let base = row_base(row);
    var s = 0.0;
    for (var k = 0u; k < p.n; k++) {
        let i = base + k * p.inner;
        let g = f32(b[p.b_off + i]);
        s += select(g * f32(a[p.a_off + i]), g, is_log);
    }
    write_backward(base, 0u, 1u, s, is_log);
}

// softmax with a thread per row. Grid: 1-D over rows = outer·inner,
// groups_1d(rows) (256 per workgroup, spilling into y).
@compute @workgroup_size(256)
fn softmax_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = flat(gid, nwg);
    if (row >= p.outer * p.inner) { return; }
    col_forward(row, false);
}

// log_softmax with a thread per row. Grid as softmax_cols.
@compute @workgroup_size(256)
fn log_softmax_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = flat(gid, nwg);
    if (row >= p.outer * p.inner) { return; }
    col_forward(row, true);
}

// softmax_backward with a thread per row. Grid as softmax_cols.
@compute @workgroup_size(256)
fn softmax_cols_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = flat(gid, nwg);
    if (row >= p.outer * p.inner) { return; }
    col_backward(row, false);
}

// log_softmax_backward with a thread per row. Grid as softmax_cols.
@compute @workgroup_size(256)
fn log_softmax_cols_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let row = flat(gid, nwg);
    if (row >= p.outer * p.inner) { return; }
    col_backward(row, true);
}
