// Indexing (rust/ops/index.rs, rust/backend/cpu/index.rs): take/put by
// element offsets, index_select, gather, scatter, scatter_add, one_hot.
// Index tensors are i32 here, already wrapped and range-checked by the caller.
// Entries named *_x32 move raw 32-bit words (int32/int64-as-i32 tensors and
// bool/uint8 stored one per u32 word; float32 works too); the others use T.
alias T = f32;

// Bindings follow one pattern: 0 data input (read), 1 index (i32, read),
// 2 output (read_write), 3 params; one_hot alone is 0 index, 1 out, 2 params.
//
// Grid (every entry): ceil(n / 256) workgroups of 256, one output (or one
// written element) per invocation, spilling into y past 65,535 (README).
// n: take/put: the number of offsets; index_select/gather/scatter(_add):
// outer·k·inner; one_hot: rows·classes.

// take / put params. take: out[out_off + i] = src[src_off + offs[offs_off + i]];
// put: dst[out_off + offs[offs_off + i]] = vals[src_off + i]. Offsets are i32,
// relative to the base offset (so they may be negative), and so are src_off
// (take) and out_off (put) when the indexed tensor is bound as a window of a
// larger buffer: elements outside [0, lim) of the binding are skipped, left to
// the dispatch over another window (lim = 0xffffffff: bound whole).
struct Flat { n: u32, src_off: u32, offs_off: u32, out_off: u32, lim: u32 }

// index_select / gather / scatter params. The "big" tensor (src of
// index_select and gather, dst of scatter) is addressed as
//   big_off + o·st_outer + v·st_dim + i·st_inner
// for (o, v, i) in [outer, dim size, inner] (a contiguous tensor has
// st_dim = inner, st_outer = dim size · inner, st_inner = 1; strided views of
// that form work as they are). The "small" side (out of index_select and
// gather, vals of scatter) and gather/scatter's index are contiguous
// [outer, k, inner] at small_off / idx_off; index_select's index is [k].
// Where an index tensor is smaller than the big tensor in a dim after `dim`,
// the caller passes the big tensor narrowed to it and made contiguous.
struct Along {
    n: u32, k: u32, inner: u32, idx_off: u32,
    small_off: u32, big_off: u32, st_outer: u32, st_dim: u32,
    st_inner: u32,
}

// one_hot params: out[out_off + r·classes + c] = (idx[idx_off + r] == c).
struct OneHot { n: u32, classes: u32, idx_off: u32, out_off: u32 }

@group(0) @binding(0) var<storage, read> src_t: array<T>;
@group(0) @binding(0) var<storage, read> src_x: array<u32>;
@group(0) @binding(0) var<storage, read> src_f: array<f32>;
@group(0) @binding(0) var<storage, read> src_i: array<i32>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(1) var<storage, read_write> oh_out: array<i32>;
@group(0) @binding(2) var<storage, read_write> out_t: array<T>;
@group(0) @binding(2) var<storage, read_write> out_x: array<u32>;
// Accumulation targets: WGSL has no float atomics, so f32 adds are a
// compare-exchange loop on the bits (add_f32).
@group(0) @binding(2) var<storage, read_write> acc_f: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> acc_i: array<atomic<i32>>;
@group(0) @binding(2) var<storage, read> poh: OneHot;
@group(0) @binding(3) var<storage, read> pf: Flat;
@group(0) @binding(3) var<storage, read> pa: Along;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn add_f32(a: u32, v: f32) {
    var old = atomicLoad(&acc_f[a]);
    loop {
        let r = atomicCompareExchangeWeak(&acc_f[a], old, bitcast<u32>(bitcast<f32>(old) + v));
        if (r.exchanged) { break; }
        old = r.old_value;
    }
}

// Element `base + rel` of the indexed tensor's binding, or -1 outside its window.
fn in_window(base: u32, rel: i32) -> i32 {
    let e = i32(base) + rel;
    if (e < 0 || u32(e) >= pf.lim) { return -1; }
    return e;
}

// ---- take / take_x32 ----
// out[out_off + i] = src[src_off + offs[offs_off + i]].
// Bindings: 0 src (T | u32, read), 1 offs (i32, read), 2 out (T | u32, read_write), 3 params (Flat).
@compute @workgroup_size(256)
fn take(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.src_off, idx[pf.offs_off + i]);
    if (e >= 0) { out_t[pf.out_off + i] = src_t[e]; }
}

@compute @workgroup_size(256)
fn take_x32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.src_off, idx[pf.offs_off + i]);
    if (e >= 0) { out_x[pf.out_off + i] = src_x[e]; }
}

// ---- put / put_x32 / put_add (f32) / put_add_i32 ----
// dst[out_off + offs[offs_off + i]] = vals[src_off + i] (put); += (put_add).
// put with a repeated offset stores one of the values, which one is
// unspecified (the CPU's sequential loop keeps the last). put_add accumulates
// every value, in an unspecified order. float16 has no accumulating entry
// (the CPU refuses half too).
// Bindings: 0 vals (T | u32 | f32 | i32, read), 1 offs (i32, read),
// 2 dst (T | u32 | atomic f32 bits | atomic i32, read_write), 3 params (Flat).
@compute @workgroup_size(256)
fn put(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.out_off, idx[pf.offs_off + i]);
    if (e >= 0) { out_t[e] = src_t[pf.src_off + i]; }
}

@compute @workgroup_size(256)
fn put_x32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.out_off, idx[pf.offs_off + i]);
    if (e >= 0) { out_x[e] = src_x[pf.src_off + i]; }
}

@compute @workgroup_size(256)
fn put_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.out_off, idx[pf.offs_off + i]);
    if (e >= 0) { add_f32(u32(e), src_f[pf.src_off + i]); }
}

@compute @workgroup_size(256)
fn put_add_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= pf.n) { return; }
    let e = in_window(pf.out_off, idx[pf.offs_off + i]);
    if (e >= 0) { atomicAdd(&acc_i[e], src_i[pf.src_off + i]); }
}

// ---- index_select / gather / scatter family ----
// Element e of the small side is (o, j, i) with e = (o·k + j)·inner + i.
// Two divisions per element (no modulo); a flat grid keeps adjacent threads
// on adjacent inner elements for any inner (including inner = 1, dim = last),
// and the kernels are bound by the gather's memory traffic, not the divides.
// Returns the big tensor's element for index value v.
fn big_at(e: u32, v: i32) -> u32 {
    let r = e / pa.inner;
    let i = e - r * pa.inner;
    let o = r / pa.k;
    return pa.big_off + o * pa.st_outer + u32(v) * pa.st_dim + i * pa.st_inner;
}

// index_select's index is [k]: the value for element e is idx[j].
fn select_at(e: u32) -> u32 {
    let r = e / pa.inner;
    let i = e - r * pa.inner;
    let o = r / pa.k;
    let j = r - o * pa.k;
    return pa.big_off + o * pa.st_outer + u32(idx[pa.idx_off + j]) * pa.st_dim + i * pa.st_inner;
}

// index_select(src, dim, index): out[o, j, i] = src[o, index[j], i].
// Bindings: 0 src (T | u32, read), 1 index (i32 [k], read), 2 out (T | u32, read_write), 3 params (Along).
@compute @workgroup_size(256)
fn index_select(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_t[pa.small_off + e] = src_t[select_at(e)];
}

@compute @workgroup_size(256)
fn index_select_x32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_x[pa.small_off + e] = src_x[select_at(e)];
}

// gather(src, dim, index): out[o, j, i] = src[o, index[o, j, i], i].
// Bindings: 0 src (T | u32, read), 1 index (i32 [outer, k, inner], read),
// 2 out (T | u32, read_write), 3 params (Along).
@compute @workgroup_size(256)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_t[pa.small_off + e] = src_t[big_at(e, idx[pa.idx_off + e])];
}

@compute @workgroup_size(256)
fn gather_x32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_x[pa.small_off + e] = src_x[big_at(e, idx[pa.idx_off + e])];
}

// scatter(dst, dim, index, vals): dst[o, index[o, j, i], i] = vals[o, j, i];
// scatter_add adds instead (f32 by compare-exchange, i32 by atomicAdd).
// Embedding backward is scatter_add with dim 0. As for put, a repeated
// target in scatter stores one unspecified value. vals must be contiguous
// with the index's shape (the caller narrows and copies src, or fills a
// scalar, as the CPU op does).
// Bindings: 0 vals (T | u32 | f32 | i32, read), 1 index (i32 [outer, k, inner], read),
// 2 dst (T | u32 | atomic f32 bits | atomic i32, read_write), 3 params (Along).
@compute @workgroup_size(256)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_t[big_at(e, idx[pa.idx_off + e])] = src_t[pa.small_off + e];
}

@compute @workgroup_size(256)
fn scatter_x32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    out_x[big_at(e, idx[pa.idx_off + e])] = src_x[pa.small_off + e];
}

@compute @workgroup_size(256)
fn scatter_add(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    add_f32(big_at(e, idx[pa.idx_off + e]), src_f[pa.small_off + e]);
}

@compute @workgroup_size(256)
fn scatter_add_i32(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pa.n) { return; }
    atomicAdd(&acc_i[big_at(e, idx[pa.idx_off + e])], src_i[pa.small_off + e]);
}

// ---- one_hot ----
// out[r, c] = (idx[r] == c) as i32, every element written (no fill needed).
// Bindings: 0 index (i32, read), 1 out (i32, read_write), 2 params (OneHot: n = rows·classes).
@compute @workgroup_size(256)
fn one_hot(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= poh.n) { return; }
    let r = e / poh.classes;
    let c = e - r * poh.classes;
    oh_out[poh.out_off + e] = select(0, 1, idx_row(r) == i32(c));
}

fn idx_row(r: u32) -> i32 {
    return src_i[poh.idx_off + r];
}

// ---- check_range: device-side index validation ----
// Index values stay on the GPU, so they are checked here: any value outside
// [lo, hi) raises the status word to `code` (atomicMax), which the host reads
// with its next readback and turns into an error naming the op.
// Bindings: 0 index (i32, read), 1 status (atomic u32, read_write), 2 params (Range).
struct Range { n: u32, idx_off: u32, lo: i32, hi: i32, code: u32 }
@group(0) @binding(1) var<storage, read_write> status: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read> pr: Range;

@compute @workgroup_size(256)
fn check_range(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let e = flat(gid, nwg);
    if (e >= pr.n) { return; }
    let v = src_i[pr.idx_off + e];
    if (v < pr.lo || v >= pr.hi) {
        atomicMax(&status[0], pr.code);
    }
}
