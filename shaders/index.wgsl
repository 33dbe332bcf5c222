// Indexing (rust/ops/index.rs, rust/backend/gpu/index.rs): take/put by
// element offsets (the host computes them for every indexing op), put_add
// for the adjoints, and device-side range checks of index values.
// Index tensors are i32 here, already wrapped and range-checked by the caller.
// Entries named *_x32 move raw 32-bit words (int32/int64-as-i32 tensors and
// bool/uint8 stored one per u32 word; float32 works too); the others use T.
alias T = f32;

// Bindings follow one pattern: 0 data input (read), 1 index (i32, read),
// 2 output (read_write), 3 params.
//
// Grid (every entry): ceil(n / 256) workgroups of 256, one output (or one
// written element) per invocation, spilling into y past 65,535 (README).
// n: the number of offsets.

// take / put params. take: out[out_off + i] = src[src_off + offs[offs_off + i]];
// put: dst[out_off + offs[offs_off + i]] = vals[src_off + i]. Offsets are i32,
// relative to the base offset (so they may be negative), and so are src_off
// (take) and out_off (put) when the indexed tensor is bound as a window of a
// larger buffer: elements outside [0, lim) of the binding are skipped, left to
// the dispatch over another window (lim = 0xffffffff: bound whole).
struct Flat { n: u32, src_off: u32, offs_off: u32, out_off: u32, lim: u32 }

@group(0) @binding(0) var<storage, read> src_t: array<T>;
@group(0) @binding(0) var<storage, read> src_x: array<u32>;
@group(0) @binding(0) var<storage, read> src_f: array<f32>;
@group(0) @binding(0) var<storage, read> src_i: array<i32>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> out_t: array<T>;
@group(0) @binding(2) var<storage, read_write> out_x: array<u32>;
// Accumulation targets: WGSL has no float atomics, so f32 adds are a
// compare-exchange loop on the bits (add_f32).
@group(0) @binding(2) var<storage, read_write> acc_f: array<atomic<u32>>;
@group(0) @binding(2) var<storage, read_write> acc_i: array<atomic<i32>>;
@group(0) @binding(3) var<storage, read> pf: Flat;

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
