// sort (and argsort, topk, kthvalue, median) on the GPU: a bitonic sort of
// every row of a contiguous (rows, n) tensor that carries each element's
// index (launched by rust/backend/gpu/sort.rs; rust/backend/cpu/sort.rs is
// the CPU twin). Element i of row r is x[x_off + r·n + i].
//
// Elements are compared as (key, index) pairs. The key is a u32 whose order
// is the values' order (floats: -0.0 == 0.0 and NaN above +inf, as PyTorch;
// int32: the sign bit flipped; bool and uint8 words as they are), inverted
// for descending. Equal keys keep index order, so the sort is stable. Rows
// are padded to npad (a power of two) with (MAX, MAX) pairs, which sort last.
//
// - sort_rows: rows of at most BLOCK elements; a workgroup per row runs the
//   whole network in workgroup memory and writes the results.
// - longer rows go through scratch keys/idx of rows·npad words each:
//   sort_blocks sorts every BLOCK-chunk in workgroup memory (directions
//   alternating as the network wants); then for each stage k = 2·BLOCK ..
//   npad, sort_step runs the steps j >= BLOCK (a thread per pair, global
//   memory) and sort_merge the steps j < BLOCK (workgroup memory);
//   sort_write writes the first n pairs of every row as values and indices.
//
// Values move as raw 32-bit words: the launcher passes float16 as float32.
//
// Beside the sort, on the same order keys:
// - mode_rows: the most frequent value of each sorted row and its last index;
// - search: searchsorted's binary search of values in sorted boundaries.

// Bindings: 0 x (u32 words, read), 1 keys (u32, read_write), 2 idx (u32,
// read_write), 3 vals (u32 words, read_write), 4 inds (i32, read_write),
// 5 params. sort_rows: x, vals, inds; sort_blocks: x, keys, idx;
// sort_step, sort_merge: keys, idx; sort_write: x, idx, vals, inds.
// mode_rows: x (sorted values), idx (their indices), vals, inds.
// Params: rows, n, npad; desc (1: descending); kind (KIND_* of x); x_off;
// k, j (the stage and step of sort_step; the stage of sort_merge).
// search: 0 x (boundaries), 1 sv (values, read), 4 inds, 5 ps (Search).
struct Params {
    rows: u32, n: u32, npad: u32, desc: u32,
    kind: u32, x_off: u32, k: u32, j: u32,
}

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> keys: array<u32>;
@group(0) @binding(2) var<storage, read_write> idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> vals: array<u32>;
@group(0) @binding(4) var<storage, read_write> inds: array<i32>;
@group(0) @binding(5) var<storage, read> p: Params;
@group(0) @binding(1) var<storage, read> sv: array<u32>;
@group(0) @binding(5) var<storage, read> ps: Search;

// searchsorted: rows of n sorted boundaries (rows 1: one sequence for all
// values; else row r serves values r·m .. r·m + m - 1), `total` values; right
// (1: count boundaries <= v, else < v); kind (KIND_* of both); where the
// boundaries and the values start.
struct Search {
    rows: u32, n: u32, m: u32, total: u32,
    right: u32, kind: u32, seq_off: u32, val_off: u32,
}

const WG: u32 = 256u;
// Elements sorted in workgroup memory (8 KiB of keys and indices).
const BLOCK: u32 = 1024u;
const PAD: u32 = 0xffffffffu;

var<workgroup> sk: array<u32, 1024>;
var<workgroup> si: array<u32, 1024>;

// The place of a 32-bit word of kind `kind` in the value order (see the top).
fn order_key(w: u32, kind: u32) -> u32 {
    if (kind == KIND_F32) {
        let mag = w & 0x7fffffffu;
        if (mag > 0x7f800000u) {
            return 0xffffffffu; // NaN: above +inf
        }
        if (mag == 0u) {
            return 0x80000000u; // -0.0 == 0.0
        }
        if ((w & 0x80000000u) != 0u) {
            return ~w;
        }
        return w | 0x80000000u;
    }
    if (kind == KIND_I32) {
        return w ^ 0x80000000u;
    }
    return w;
}

fn key_of(w: u32) -> u32 {
    let k = order_key(w, p.kind);
    return select(k, ~k, p.desc != 0u);
}

fn less(ka: u32, ia: u32, kb: u32, ib: u32) -> bool {
    return ka < kb || (ka == kb && ia < ib);
}

// Loads elements base .. base + len of row `row` from x as (key, index) pairs.
fn load_x(row: u32, base: u32, len: u32, lid: u32) {
    for (var t = lid; t < len; t += WG) {
        let i = base + t;
        if (i < p.n) {
            sk[t] = key_of(x[p.x_off + row * p.n + i]);
            si[t] = i;
        } else {
            sk[t] = PAD;
            si[t] = PAD;
        }
    }
}

// The steps j0, j0/2, .. 1 of stage k on the `len` pairs in workgroup memory,
// which sit at position `base` of their row (the direction of a pair depends
// on its position in the row: ascending where (i & k) == 0).
fn local_steps(len: u32, base: u32, k: u32, j0: u32, lid: u32) {
    var j = j0;
    loop {
        if (j == 0u) {
            break;
        }
        for (var q = lid; q < len / 2u; q += WG) {
            let i = 2u * j * (q / j) + (q % j);
            let l = i + j;
            let ka = sk[i];
            let ia = si[i];
            let kb = sk[l];
            let ib = si[l];
            let up = ((base + i) & k) == 0u;
            if (select(less(ka, ia, kb, ib), less(kb, ib, ka, ia), up)) {
                sk[i] = kb;
                si[i] = ib;
                sk[l] = ka;
                si[l] = ia;
            }
        }
        workgroupBarrier();
        j = j / 2u;
    }
}

fn flat_group(wid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(256)
fn sort_rows(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let row = flat_group(wid, nwg);
    if (row >= p.rows) {
        return;
    }
    load_x(row, 0u, p.npad, lid);
    workgroupBarrier();
    for (var k = 2u; k <= p.npad; k = k * 2u) {
        local_steps(p.npad, 0u, k, k / 2u, lid);
    }
    for (var t = lid; t < p.n; t += WG) {
        let src = si[t];
        vals[row * p.n + t] = x[p.x_off + row * p.n + src];
        inds[row * p.n + t] = i32(src);
    }
}

@compute @workgroup_size(256)
fn sort_blocks(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_group(wid, nwg);
    let nb = p.npad / BLOCK;
    if (g >= p.rows * nb) {
        return;
    }
    let row = g / nb;
    let base = (g % nb) * BLOCK;
    load_x(row, base, BLOCK, lid);
    workgroupBarrier();
    for (var k = 2u; k <= BLOCK; k = k * 2u) {
        local_steps(BLOCK, base, k, k / 2u, lid);
    }
    for (var t = lid; t < BLOCK; t += WG) {
        keys[row * p.npad + base + t] = sk[t];
        idx[row * p.npad + base + t] = si[t];
    }
}

@compute @workgroup_size(256)
fn sort_step(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = gid.x + gid.y * nwg.x * WG;
    let half = p.npad / 2u;
    if (t >= p.rows * half) {
        return;
    }
    let row = t / half;
    let q = t % half;
    let i = 2u * p.j * (q / p.j) + (q % p.j);
    let a = row * p.npad + i;
    let b = a + p.j;
    let ka = keys[a];
    let ia = idx[a];
    let kb = keys[b];
    let ib = idx[b];
    let up = (i & p.k) == 0u;
    if (select(less(ka, ia, kb, ib), less(kb, ib, ka, ia), up)) {
        keys[a] = kb;
        idx[a] = ib;
        keys[b] = ka;
        idx[b] = ia;
    }
}

@compute @workgroup_size(256)
fn sort_merge(
    @builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let g = flat_group(wid, nwg);
    let nb = p.npad / BLOCK;
    if (g >= p.rows * nb) {
        return;
    }
    let row = g / nb;
    let base = (g % nb) * BLOCK;
    for (var t = lid; t < BLOCK; t += WG) {
        sk[t] = keys[row * p.npad + base + t];
        si[t] = idx[row * p.npad + base + t];
    }
    workgroupBarrier();
    local_steps(BLOCK, base, p.k, BLOCK / 2u, lid);
    for (var t = lid; t < BLOCK; t += WG) {
        keys[row * p.npad + base + t] = sk[t];
        idx[row * p.npad + base + t] = si[t];
    }
}

@compute @workgroup_size(256)
fn sort_write(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = gid.x + gid.y * nwg.x * WG;
    if (t >= p.rows * p.n) {
        return;
    }
    let row = t / p.n;
    let src = idx[row * p.npad + t % p.n];
    vals[t] = x[p.x_off + row * p.n + src];
    inds[t] = i32(src);
}

// mode_rows: row r of the sorted values x and their indices idx (n each,
// idx from its start): the value of its longest run of equal keys (the first, so the
// smallest, of equally long runs; NaNs form one run) and the last index of
// that run (the highest, the sort being stable). One thread per row.
@compute @workgroup_size(256)
fn mode_rows(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let row = gid.x + gid.y * nwg.x * WG;
    if (row >= p.rows) {
        return;
    }
    let base = row * p.n;
    var best = 0u;
    var best_len = 0u;
    var start = 0u;
    var k0 = key_of(x[p.x_off + base]);
    for (var i = 1u; i <= p.n; i++) {
        var k = 0u;
        if (i < p.n) {
            k = key_of(x[p.x_off + base + i]);
        }
        if (i == p.n || k != k0) {
            if (i - start > best_len) {
                best = i - 1u;
                best_len = i - start;
            }
            start = i;
            k0 = k;
        }
    }
    vals[row] = x[p.x_off + base + best];
    inds[row] = i32(idx[base + best]);
}

// search: inds[t] = the position of value t among its row's boundaries, by
// binary search (PyTorch's !(b >= v) / !(b > v) on sorted boundaries). One
// thread per value.
@compute @workgroup_size(256)
fn search(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let t = gid.x + gid.y * nwg.x * WG;
    if (t >= ps.total) {
        return;
    }
    let row = select(0u, t / ps.m, ps.rows > 1u);
    let base = ps.seq_off + row * ps.n;
    let kv = order_key(sv[ps.val_off + t], ps.kind);
    var lo = 0u;
    var hi = ps.n;
    while (lo < hi) {
        let mid = lo + (hi - lo) / 2u;
        let kb = order_key(x[base + mid], ps.kind);
        if (kb < kv || (ps.right != 0u && kb == kv)) {
            lo = mid + 1u;
        } else {
            hi = mid;
        }
    }
    inds[t] = i32(lo);
}
