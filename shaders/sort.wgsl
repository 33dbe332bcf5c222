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

// Bindings: 0 x (u32 words, read), 1 keys (u32, read_write), 2 idx (u32,
// read_write), 3 vals (u32 words, read_write), 4 inds (i32, read_write),
// 5 params. sort_rows: x, vals, inds; sort_blocks: x, keys, idx;
// sort_step, sort_merge: keys, idx; sort_write: x, idx, vals, inds.
// Params: rows, n, npad; desc (1: descending); kind (KIND_* of x); x_off;
// k, j (the stage and step of sort_step; the stage of sort_merge).
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

const WG: u32 = 256u;
// Elements sorted in workgroup memory (8 KiB of keys and indices).
const BLOCK: u32 = 1024u;
const PAD: u32 = 0xffffffffu;

var<workgroup> sk: array<u32, 1024>;
var<workgroup> si: array<u32, 1024>;

fn key_of(w: u32) -> u32 {
    var k = w;
    if (p.kind == KIND_F32) {
        let mag = w & 0x7fffffffu;
        if (mag > 0x7f800000u) {
            k = 0xffffffffu; // NaN: above +inf
        } else if (mag == 0u) {
            k = 0x80000000u; // -0.0 == 0.0
        } else if ((w & 0x80000000u) != 0u) {
            k = ~w;
        } else {
            k = w | 0x80000000u;
        }
    } else if (p.kind == KIND_I32) {
        k = w ^ 0x80000000u;
    }
    if (p.desc != 0u) {
        k = ~k;
    }
    return k;
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
