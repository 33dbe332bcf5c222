// Reductions over the middle axis of a contiguous [outer, n, inner] view of
// the input (from element in_off) into a contiguous [outer, inner] output
// (from out_off), and inclusive scans along that axis. Semantics follow
// rust/ops/reduce.rs: NaN propagates through amax/amin; argmax/argmin pick the
// first index of the extreme, a NaN counting as the extreme.
// Float kernels read T and accumulate in f32 (shaders/README.md).
alias T = f32;

// Params of every entry point: outer, n, inner, in_off, out_off: u32, then
// scale: f32 (multiplies the result of sum only; mean = sum with scale 1/n).
struct Params {
    outer: u32, n: u32, inner: u32, in_off: u32, out_off: u32,
    scale: f32,
}

// Bindings by entry point (inputs, outputs, then the params last):
//   float entries          0 x: T (read),   1 y: T (read_write),      2 params
//   argmax/argmin          0 x: T (read),   1 yi: i32 (read_write),   2 params
//   max_idx/min_idx        0 x: T (read),   1 y: T, 2 yidx: i32 (read_write), 3 params
//   any/all                0 xb: u32 (read), 1 yb: u32 (read_write), 2 params
//   other *_i32 entries    0 xi: i32 (read), 1 yi: i32 (read_write), 2 params
//   max_idx_i32/min_idx_i32 0 xi: i32 (read), 1 yi: i32, 2 yidx: i32 (read_write), 3 params
// Variables sharing a binding belong to different entry points.
@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(0) var<storage, read> xb: array<u32>;
@group(0) @binding(0) var<storage, read> xi: array<i32>;
@group(0) @binding(1) var<storage, read_write> y: array<T>;
@group(0) @binding(1) var<storage, read_write> yb: array<u32>;
@group(0) @binding(1) var<storage, read_write> yi: array<i32>;
@group(0) @binding(2) var<storage, read> p: Params;
@group(0) @binding(2) var<storage, read_write> yidx: array<i32>;
@group(0) @binding(3) var<storage, read> p3: Params;

// Grids:
//   *_rows (inner == 1): one 256-thread workgroup per output row;
//     (x, y, 1) with x = min(outer, 65535), y = ceil(outer / x); row = wid.x + wid.y * nwg.x.
//   *_cols (any inner, also valid for inner == 1): one thread per output (o, i);
//     groups_1d(outer * inner): id = gid.x + gid.y * nwg.x * 256.
//   cumsum, cumprod (and _i32): one thread per (o, i), sequential over n; groups_1d(outer * inner).
// The rows form wants long rows; for inner == 1 and short n (below ~64) the
// cols form wastes fewer threads.

const WG: u32 = 256u;
// Index of a lane that saw no element (n < 256 in the rows form).
const NONE: u32 = 0xffffffffu;

var<workgroup> shf: array<f32, 256>;
var<workgroup> shu: array<u32, 256>;

fn is_nan(v: f32) -> bool {
    // Bit test: drivers may fold v != v away under fast math.
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

fn row_id(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}
fn flat_id(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// ---- float folds: op 0 sum, 1 prod, 2 amax, 3 amin (op is a constant per entry) ----

fn identity(op: u32) -> f32 {
    switch op {
        case 0u: { return 0.0; }
        case 1u: { return 1.0; }
        case 2u: { return bitcast<f32>(0xff800000u); }
        default: { return bitcast<f32>(0x7f800000u); }
    }
}

fn fold(op: u32, acc: f32, v: f32) -> f32 {
    switch op {
        case 0u: { return acc + v; }
        case 1u: { return acc * v; }
        // select, not max/min: their NaN behaviour is unspecified. A NaN in
        // acc is tested by bits too: drivers may turn `select(acc, v, v > acc)`
        // into a max, which would drop it.
        case 2u: { return select(acc, v, is_nan(v) || (!is_nan(acc) && v > acc)); }
        default: { return select(acc, v, is_nan(v) || (!is_nan(acc) && v < acc)); }
    }
}

fn finish(op: u32, acc: f32, q: Params) -> f32 {
    return select(acc, acc * q.scale, op == 0u);
}

// Strided per-thread fold, then a tree over the workgroup; every thread gets the result.
fn rows_float(op: u32, q: Params, row: u32, lid: u32) -> f32 {
    let base = q.in_off + row * q.n;
    var acc = identity(op);
    for (var j = lid; j < q.n; j += WG) {
        acc = fold(op, acc, f32(x[base + j]));
    }
    shf[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            shf[lid] = fold(op, shf[lid], shf[lid + s]);
        }
        workgroupBarrier();
    }
    return shf[0];
}

fn cols_float(op: u32, q: Params, id: u32) -> f32 {
    let o = id / q.inner;
    var idx = q.in_off + o * q.n * q.inner + (id - o * q.inner);
    var acc = identity(op);
    if (op == 0u) {
        // Kahan summation: one thread adds up the whole column.
        var comp = 0.0;
        for (var j = 0u; j < q.n; j++) {
            let v = f32(x[idx]) - comp;
            let t = acc + v;
            comp = (t - acc) - v;
            acc = t;
            idx += q.inner;
        }
        return acc;
    }
    for (var j = 0u; j < q.n; j++) {
        acc = fold(op, acc, f32(x[idx]));
        idx += q.inner;
    }
    return acc;
}

// sum_rows / sum_cols: y[o, i] = scale * sum_j x[o, j, i] (f32 accumulation).
// Bindings 0 x (T, read), 1 y (T, read_write), 2 params. Grid: rows / cols form above.
@compute @workgroup_size(256)
fn sum_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_float(0u, p, row, lid);
    if (lid == 0u) { y[p.out_off + row] = T(finish(0u, r, p)); }
}
@compute @workgroup_size(256)
fn sum_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    y[p.out_off + id] = T(finish(0u, cols_float(0u, p, id), p));
}

// prod_rows / prod_cols: y[o, i] = prod_j x[o, j, i].
// Bindings 0 x (T, read), 1 y (T, read_write), 2 params. Grid: rows / cols form.
@compute @workgroup_size(256)
fn prod_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_float(1u, p, row, lid);
    if (lid == 0u) { y[p.out_off + row] = T(r); }
}
@compute @workgroup_size(256)
fn prod_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    y[p.out_off + id] = T(cols_float(1u, p, id));
}

// amax_rows / amax_cols: y[o, i] = max_j x[o, j, i], NaN if any element is NaN.
// Bindings 0 x (T, read), 1 y (T, read_write), 2 params. Grid: rows / cols form.
@compute @workgroup_size(256)
fn amax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_float(2u, p, row, lid);
    if (lid == 0u) { y[p.out_off + row] = T(r); }
}
@compute @workgroup_size(256)
fn amax_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    y[p.out_off + id] = T(cols_float(2u, p, id));
}

// amin_rows / amin_cols: y[o, i] = min_j x[o, j, i], NaN if any element is NaN.
// Bindings 0 x (T, read), 1 y (T, read_write), 2 params. Grid: rows / cols form.
@compute @workgroup_size(256)
fn amin_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_float(3u, p, row, lid);
    if (lid == 0u) { y[p.out_off + row] = T(r); }
}
@compute @workgroup_size(256)
fn amin_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    y[p.out_off + id] = T(cols_float(3u, p, id));
}

// ---- extremes with their index: argmax/argmin, max_idx/min_idx ----

// Whether (vb, ib) replaces (va, ia) as the running extreme: a NaN beats any
// number, and between equals (or two NaNs) the lower index wins.
fn takes(is_max: bool, va: f32, ia: u32, vb: f32, ib: u32) -> bool {
    if (ib == NONE) { return false; }
    if (ia == NONE) { return true; }
    let na = is_nan(va);
    let nb = is_nan(vb);
    if (na || nb) { return nb && (!na || ib < ia); }
    let better = select(va > vb, vb > va, is_max);
    return better || (vb == va && ib < ia);
}

// Sequential folds visit increasing indices, so only a strictly better value moves the index.
fn beats(is_max: bool, v: f32, cur: f32) -> bool {
    if (is_nan(cur)) { return false; }
    return is_nan(v) || select(cur > v, v > cur, is_max);
}

// Leaves the row's (value, index) in shf[0], shu[0].
fn rows_arg(is_max: bool, q: Params, row: u32, lid: u32) {
    let base = q.in_off + row * q.n;
    var best = 0.0;
    var bi = NONE;
    for (var j = lid; j < q.n; j += WG) {
        let v = f32(x[base + j]);
        if (bi == NONE || beats(is_max, v, best)) {
            best = v;
            bi = j;
        }
    }
    shf[lid] = best;
    shu[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s && takes(is_max, shf[lid], shu[lid], shf[lid + s], shu[lid + s])) {
            shf[lid] = shf[lid + s];
            shu[lid] = shu[lid + s];
        }
        workgroupBarrier();
    }
}

struct Best {
    v: f32,
    i: u32,
}

// n >= 1 (the caller rejects empty reductions for these ops).
fn cols_arg(is_max: bool, q: Params, id: u32) -> Best {
    let o = id / q.inner;
    var idx = q.in_off + o * q.n * q.inner + (id - o * q.inner);
    var best = Best(f32(x[idx]), 0u);
    for (var j = 1u; j < q.n; j++) {
        idx += q.inner;
        let v = f32(x[idx]);
        if (beats(is_max, v, best.v)) {
            best = Best(v, j);
        }
    }
    return best;
}

// argmax_* / argmin_*: yi[o, i] = first j of the extreme (first NaN if any).
// Bindings 0 x (T, read), 1 yi (i32, read_write), 2 params. Grid: rows / cols form;
// n >= 1.
@compute @workgroup_size(256)
fn argmax_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    rows_arg(true, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = i32(shu[0]); }
}
@compute @workgroup_size(256)
fn argmax_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = i32(cols_arg(true, p, id).i);
}
@compute @workgroup_size(256)
fn argmin_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    rows_arg(false, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = i32(shu[0]); }
}
@compute @workgroup_size(256)
fn argmin_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = i32(cols_arg(false, p, id).i);
}

// max_idx_* / min_idx_*: the extreme and its first index, as argmax/argmin.
// Bindings 0 x (T, read), 1 y (T, read_write), 2 yidx (i32, read_write), 3 params;
// both outputs start at out_off. Grid: rows / cols form; n >= 1.
@compute @workgroup_size(256)
fn max_idx_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = p3;
    let row = row_id(wid, nwg);
    if (row >= q.outer) { return; }
    rows_arg(true, q, row, lid);
    if (lid == 0u) {
        y[q.out_off + row] = T(shf[0]);
        yidx[q.out_off + row] = i32(shu[0]);
    }
}
@compute @workgroup_size(256)
fn max_idx_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = p3;
    let id = flat_id(gid, nwg);
    if (id >= q.outer * q.inner) { return; }
    let b = cols_arg(true, q, id);
    y[q.out_off + id] = T(b.v);
    yidx[q.out_off + id] = i32(b.i);
}
@compute @workgroup_size(256)
fn min_idx_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = p3;
    let row = row_id(wid, nwg);
    if (row >= q.outer) { return; }
    rows_arg(false, q, row, lid);
    if (lid == 0u) {
        y[q.out_off + row] = T(shf[0]);
        yidx[q.out_off + row] = i32(shu[0]);
    }
}
@compute @workgroup_size(256)
fn min_idx_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = p3;
    let id = flat_id(gid, nwg);
    if (id >= q.outer * q.inner) { return; }
    let b = cols_arg(false, q, id);
    y[q.out_off + id] = T(b.v);
    yidx[q.out_off + id] = i32(b.i);
}

// ---- integer folds on u32 words: op 0 any, 1 all (nonzero = true); on i32
// values (in u32 bits): 2 sum and 3 prod (both wrapping), 4 max, 5 min ----

fn identity_u(op: u32) -> u32 {
    switch op {
        case 1u, 3u: { return 1u; }
        case 4u: { return 0x80000000u; } // i32 minimum
        case 5u: { return 0x7fffffffu; } // i32 maximum
        default: { return 0u; }
    }
}

fn fold_u(op: u32, acc: u32, v: u32) -> u32 {
    switch op {
        case 0u: { return select(acc, 1u, v != 0u); }
        case 1u: { return select(acc, 0u, v == 0u); }
        case 2u: { return acc + v; } // two's complement: the i32 sum, wrapping
        case 3u: { return acc * v; } // the low 32 bits of the product, signed or not
        case 4u: { return bitcast<u32>(max(bitcast<i32>(acc), bitcast<i32>(v))); }
        default: { return bitcast<u32>(min(bitcast<i32>(acc), bitcast<i32>(v))); }
    }
}

// Workgroup tree over every thread's partial result; every thread gets the total.
fn tree_u(op: u32, acc: u32, lid: u32) -> u32 {
    shu[lid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s) {
            shu[lid] = fold_u(op, shu[lid], shu[lid + s]);
        }
        workgroupBarrier();
    }
    return shu[0];
}

// The bool (xb) and i32 (xi) inputs are separate functions: an entry point
// must not even reference two variables at one binding.
fn rows_bool(op: u32, q: Params, row: u32, lid: u32) -> u32 {
    let base = q.in_off + row * q.n;
    var acc = identity_u(op);
    for (var j = lid; j < q.n; j += WG) {
        acc = fold_u(op, acc, xb[base + j]);
    }
    return tree_u(op, acc, lid);
}

fn cols_bool(op: u32, q: Params, id: u32) -> u32 {
    let o = id / q.inner;
    var idx = q.in_off + o * q.n * q.inner + (id - o * q.inner);
    var acc = identity_u(op);
    for (var j = 0u; j < q.n; j++) {
        acc = fold_u(op, acc, xb[idx]);
        idx += q.inner;
    }
    return acc;
}

fn rows_i32(op: u32, q: Params, row: u32, lid: u32) -> i32 {
    let base = q.in_off + row * q.n;
    var acc = identity_u(op);
    for (var j = lid; j < q.n; j += WG) {
        acc = fold_u(op, acc, bitcast<u32>(xi[base + j]));
    }
    return bitcast<i32>(tree_u(op, acc, lid));
}

fn cols_i32(op: u32, q: Params, id: u32) -> i32 {
    let o = id / q.inner;
    var idx = q.in_off + o * q.n * q.inner + (id - o * q.inner);
    var acc = identity_u(op);
    for (var j = 0u; j < q.n; j++) {
        acc = fold_u(op, acc, bitcast<u32>(xi[idx]));
        idx += q.inner;
    }
    return bitcast<i32>(acc);
}

// ---- int32 extremes with their index: argmax_i32/argmin_i32, max_idx_i32/min_idx_i32 ----

var<workgroup> shi: array<i32, 256>;

fn better_i32(is_max: bool, v: i32, cur: i32) -> bool {
    return select(cur > v, v > cur, is_max);
}

// Whether value vb at index ib replaces va at ia: a strictly better value, or
// an equal one at a lower index.
fn takes_i32(is_max: bool, va: i32, ia: u32, vb: i32, ib: u32) -> bool {
    if (ib == NONE) { return false; }
    if (ia == NONE) { return true; }
    return better_i32(is_max, vb, va) || (vb == va && ib < ia);
}

// Leaves the row's (value, index) in shi[0], shu[0].
fn rows_arg_i32(is_max: bool, q: Params, row: u32, lid: u32) {
    let base = q.in_off + row * q.n;
    var best = 0;
    var bi = NONE;
    for (var j = lid; j < q.n; j += WG) {
        let v = xi[base + j];
        if (bi == NONE || better_i32(is_max, v, best)) {
            best = v;
            bi = j;
        }
    }
    shi[lid] = best;
    shu[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if (lid < s && takes_i32(is_max, shi[lid], shu[lid], shi[lid + s], shu[lid + s])) {
            shi[lid] = shi[lid + s];
            shu[lid] = shu[lid + s];
        }
        workgroupBarrier();
    }
}

struct BestI32 {
    v: i32,
    i: u32,
}

// n >= 1.
fn cols_arg_i32(is_max: bool, q: Params, id: u32) -> BestI32 {
    let o = id / q.inner;
    var idx = q.in_off + o * q.n * q.inner + (id - o * q.inner);
    var best = BestI32(xi[idx], 0u);
    for (var j = 1u; j < q.n; j++) {
        idx += q.inner;
        let v = xi[idx];
        if (better_i32(is_max, v, best.v)) {
            best = BestI32(v, j);
        }
    }
    return best;
}

// argmax_i32_* / argmin_i32_*: yi[o, i] = first j of the extreme of xi[o, j, i].
// Bindings 0 xi (i32, read), 1 yi (i32, read_write), 2 params. Grid: rows / cols form; n >= 1.
@compute @workgroup_size(256)
fn argmax_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    rows_arg_i32(true, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = i32(shu[0]); }
}
@compute @workgroup_size(256)
fn argmax_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = i32(cols_arg_i32(true, p, id).i);
}
@compute @workgroup_size(256)
fn argmin_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    rows_arg_i32(false, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = i32(shu[0]); }
}
@compute @workgroup_size(256)
fn argmin_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = i32(cols_arg_i32(false, p, id).i);
}

// max_idx_i32_* / min_idx_i32_*: the extreme and its first index, as argmax_i32.
// Bindings 0 xi (i32, read), 1 yi (i32, read_write), 2 yidx (i32, read_write), 3 params;
// both outputs start at out_off. Grid: rows / cols form; n >= 1.
@compute @workgroup_size(256)
fn max_idx_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = p3;
    let row = row_id(wid, nwg);
    if (row >= q.outer) { return; }
    rows_arg_i32(true, q, row, lid);
    if (lid == 0u) {
        yi[q.out_off + row] = shi[0];
        yidx[q.out_off + row] = i32(shu[0]);
    }
}
@compute @workgroup_size(256)
fn max_idx_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = p3;
    let id = flat_id(gid, nwg);
    if (id >= q.outer * q.inner) { return; }
    let b = cols_arg_i32(true, q, id);
    yi[q.out_off + id] = b.v;
    yidx[q.out_off + id] = i32(b.i);
}
@compute @workgroup_size(256)
fn min_idx_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let q = p3;
    let row = row_id(wid, nwg);
    if (row >= q.outer) { return; }
    rows_arg_i32(false, q, row, lid);
    if (lid == 0u) {
        yi[q.out_off + row] = shi[0];
        yidx[q.out_off + row] = i32(shu[0]);
    }
}
@compute @workgroup_size(256)
fn min_idx_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = p3;
    let id = flat_id(gid, nwg);
    if (id >= q.outer * q.inner) { return; }
    let b = cols_arg_i32(false, q, id);
    yi[q.out_off + id] = b.v;
    yidx[q.out_off + id] = i32(b.i);
}

// any_* / all_*: yb[o, i] = 1 if any / every x[o, j, i] != 0, else 0 (n == 0: 0 / 1).
// Bindings 0 xb (u32, read), 1 yb (u32, read_write), 2 params. Grid: rows / cols form.
@compute @workgroup_size(256)
fn any_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_bool(0u, p, row, lid);
    if (lid == 0u) { yb[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn any_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yb[p.out_off + id] = cols_bool(0u, p, id);
}
@compute @workgroup_size(256)
fn all_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_bool(1u, p, row, lid);
    if (lid == 0u) { yb[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn all_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yb[p.out_off + id] = cols_bool(1u, p, id);
}

// sum_i32_*, prod_i32_* (both wrapping), amax_i32_*, amin_i32_*: yi[o, i] = the fold
// of xi[o, j, i] over j (int32 words; int64 tensors hold 32-bit values); scale ignored.
// Bindings 0 xi (i32, read), 1 yi (i32, read_write), 2 params. Grid: rows / cols form.
@compute @workgroup_size(256)
fn sum_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_i32(2u, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn sum_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = cols_i32(2u, p, id);
}
@compute @workgroup_size(256)
fn prod_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_i32(3u, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn prod_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = cols_i32(3u, p, id);
}
@compute @workgroup_size(256)
fn amax_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_i32(4u, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn amax_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = cols_i32(4u, p, id);
}
@compute @workgroup_size(256)
fn amin_i32_rows(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let row = row_id(wid, nwg);
    if (row >= p.outer) { return; }
    let r = rows_i32(5u, p, row, lid);
    if (lid == 0u) { yi[p.out_off + row] = r; }
}
@compute @workgroup_size(256)
fn amin_i32_cols(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    yi[p.out_off + id] = cols_i32(5u, p, id);
}

// ---- inclusive scans along n: output [outer, n, inner] contiguous at out_off ----

fn scan(product: bool, id: u32) {
    let o = id / p.inner;
    let start = o * p.n * p.inner + (id - o * p.inner);
    var acc = select(0.0, 1.0, product);
    for (var j = 0u; j < p.n; j++) {
        let e = start + j * p.inner;
        let v = f32(x[p.in_off + e]);
        acc = select(acc + v, acc * v, product);
        y[p.out_off + e] = T(acc);
    }
}

// cumsum / cumprod: y[o, j, i] = sum / product of x[o, 0..=j, i], running value in
// f32 (sequential, as the CPU scan); scale ignored. Output [outer, n, inner] at out_off.
// Bindings 0 x (T, read), 1 y (T, read_write), 2 params. Grid: groups_1d(outer * inner).
@compute @workgroup_size(256)
fn cumsum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    scan(false, id);
}
@compute @workgroup_size(256)
fn cumprod(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    scan(true, id);
}

fn scan_i32(product: bool, id: u32) {
    let o = id / p.inner;
    let i = id - o * p.inner;
    var acc = select(0u, 1u, product);
    for (var j = 0u; j < p.n; j++) {
        let e = (o * p.n + j) * p.inner + i;
        let v = bitcast<u32>(xi[p.in_off + e]);
        acc = select(acc + v, acc * v, product);
        yi[p.out_off + e] = bitcast<i32>(acc);
    }
}

// cumsum_i32 / cumprod_i32: the integer scans (int32 words, wrapping), as cumsum.
// Bindings 0 xi (i32, read), 1 yi (i32, read_write), 2 params. Grid: groups_1d(outer * inner).
@compute @workgroup_size(256)
fn cumsum_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    scan_i32(false, id);
}
@compute @workgroup_size(256)
fn cumprod_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat_id(gid, nwg);
    if (id >= p.outer * p.inner) { return; }
    scan_i32(true, id);
}
