// Fused gate kernels of the recurrent layers on the GPU (rust/ops/rnn_gpu.rs):
// one dispatch per time step after the recurrent GEMM computes every gate
// nonlinearity and the new state; one per step of backward through time turns
// the state gradients into pre-activation gate gradients. The math and the
// saved values follow the CPU loops (rust/backend/cpu/rnn.rs). Gate order is
// PyTorch's: LSTM i, f, g, o; GRU r, z, n.
//
// Per row (one live sequence) of a step, widths in units of H (hidden):
// - a, b: the input and recurrent projections (G·H each, G gates; b includes
//   b_hh, a includes b_ih);
// - s: the state read (LSTM c_prev, GRU h_prev; H);
// - saved (S·H): RNN h (S = 1); LSTM i, f, g, o activated and tanh(c_new)
//   (S = 5); GRU r, z, n activated and W_hn h + b_hn (S = 4).
alias T = f32;

// Bindings: 0..3 read-only inputs, 4..6 outputs, 7 params; which tensor each
// binding holds is in each entry point's header. Params (Rust twin:
// backend/gpu/rnn.rs): rows (live sequences this step), hidden, relu (RNN:
// 1 for relu, 0 for tanh), then the element offset where the tensor of each
// binding 0..6 starts.
struct Params {
    rows: u32, hidden: u32, relu: u32,
    off: array<u32, 7>,
}

@group(0) @binding(0) var<storage, read> in0: array<T>;
@group(0) @binding(1) var<storage, read> in1: array<T>;
@group(0) @binding(2) var<storage, read> in2: array<T>;
@group(0) @binding(3) var<storage, read> in3: array<T>;
@group(0) @binding(4) var<storage, read_write> out4: array<T>;
@group(0) @binding(5) var<storage, read_write> out5: array<T>;
@group(0) @binding(6) var<storage, read_write> out6: array<T>;
@group(0) @binding(7) var<storage, read> p: Params;

const WG: u32 = 256u;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WG;
}

// tanh through expm1, accurate near 0 (drivers' exp is only accurate in
// absolute terms there) and exactly ±1 far out (no inf / inf).
fn expm1_(x: f32) -> f32 {
    if (abs(x) < 0.35) {
        return x * (1.0 + x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0 + x * (1.0 / 120.0 + x * (1.0 / 720.0 + x * (1.0 / 5040.0 + x * (1.0 / 40320.0))))))));
    }
    return exp(x) - 1.0;
}
fn tanh_(x: f32) -> f32 {
    if (abs(x) > 9.0) { return sign(x); }
    let e = expm1_(2.0 * x);
    return e / (e + 2.0);
}
fn sig(x: f32) -> f32 {
    return 1.0 / (1.0 + exp(-x));
}

// Element (row, gate k, unit j) of a G·H-wide tensor starting at `o`.
fn at(o: u32, g: u32, row: u32, k: u32, j: u32) -> u32 {
    return o + (row * g + k) * p.hidden + j;
}

// h = act(a + b). Bindings 0 a, 1 b, 4 h, 6 saved (h again). Grid: 1-D over
// rows·H: grid_1d.
@compute @workgroup_size(256)
fn rnn_cell(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let v = f32(in0[p.off[0] + id]) + f32(in1[p.off[1] + id]);
    let h = select(tanh_(v), max(v, 0.0), p.relu != 0u);
    out4[p.off[4] + id] = T(h);
    out6[p.off[6] + id] = T(h);
}

// c = f·c_prev + i·g, m = o·tanh(c) (h, or the input of the projection).
// Bindings 0 a, 1 b, 2 c_prev, 4 m, 5 c, 6 saved. Grid: 1-D over rows·H.
@compute @workgroup_size(256)
fn lstm_cell(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let row = id / p.hidden;
    let j = id - row * p.hidden;
    var act: array<f32, 4>;
    for (var k = 0u; k < 4u; k++) {
        let v = f32(in0[at(p.off[0], 4u, row, k, j)]) + f32(in1[at(p.off[1], 4u, row, k, j)]);
        act[k] = select(sig(v), tanh_(v), k == 2u);
    }
    let c = act[1] * f32(in2[p.off[2] + id]) + act[0] * act[2];
    let tc = tanh_(c);
    out4[p.off[4] + id] = T(act[3] * tc);
    out5[p.off[5] + id] = T(c);
    for (var k = 0u; k < 4u; k++) {
        out6[at(p.off[6], 5u, row, k, j)] = T(act[k]);
    }
    out6[at(p.off[6], 5u, row, 4u, j)] = T(tc);
}

// r = σ(a_r + b_r), z = σ(a_z + b_z), n = tanh(a_n + r·b_n),
// h = (1 - z)·n + z·h_prev. Bindings 0 a, 1 b, 2 h_prev, 4 h, 6 saved.
// Grid: 1-D over rows·H.
@compute @workgroup_size(256)
fn gru_cell(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let row = id / p.hidden;
    let j = id - row * p.hidden;
    let ia = p.off[0];
    let ib = p.off[1];
    let r = sig(f32(in0[at(ia, 3u, row, 0u, j)]) + f32(in1[at(ib, 3u, row, 0u, j)]));
    let z = sig(f32(in0[at(ia, 3u, row, 1u, j)]) + f32(in1[at(ib, 3u, row, 1u, j)]));
    let hn = f32(in1[at(ib, 3u, row, 2u, j)]);
    let n = tanh_(f32(in0[at(ia, 3u, row, 2u, j)]) + r * hn);
    out4[p.off[4] + id] = T((1.0 - z) * n + z * f32(in2[p.off[2] + id]));
    let o = p.off[6];
    out6[at(o, 4u, row, 0u, j)] = T(r);
    out6[at(o, 4u, row, 1u, j)] = T(z);
    out6[at(o, 4u, row, 2u, j)] = T(n);
    out6[at(o, 4u, row, 3u, j)] = T(hn);
}

// The pre-activation gradient d = dh·act'(h) (the same for a and b).
// Bindings 0 saved, 2 dh, 4 d. Grid: 1-D over rows·H.
@compute @workgroup_size(256)
fn rnn_cell_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let h = f32(in0[p.off[0] + id]);
    let dh = f32(in2[p.off[2] + id]);
    out4[p.off[4] + id] = T(select(dh * (1.0 - h * h), select(0.0, dh, h > 0.0), p.relu != 0u));
}

// Gate gradients from dm and dc (of the outputs m and c): the pre-activation
// gradients of i, f, g, o (the same for a and b) and dc_prev = dc_total·f.
// Bindings 0 saved, 1 c_prev, 2 dm, 3 dc, 4 d (4H), 6 dc_prev. Grid: 1-D
// over rows·H.
@compute @workgroup_size(256)
fn lstm_cell_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let row = id / p.hidden;
    let j = id - row * p.hidden;
    let s = p.off[0];
    let ig = f32(in0[at(s, 5u, row, 0u, j)]);
    let fg = f32(in0[at(s, 5u, row, 1u, j)]);
    let cg = f32(in0[at(s, 5u, row, 2u, j)]);
    let og = f32(in0[at(s, 5u, row, 3u, j)]);
    let tc = f32(in0[at(s, 5u, row, 4u, j)]);
    let dm = f32(in2[p.off[2] + id]);
    let dc = f32(in3[p.off[3] + id]) + dm * og * (1.0 - tc * tc);
    let d = p.off[4];
    out4[at(d, 4u, row, 0u, j)] = T(dc * cg * ig * (1.0 - ig));
    out4[at(d, 4u, row, 1u, j)] = T(dc * f32(in1[p.off[1] + id]) * fg * (1.0 - fg));
    out4[at(d, 4u, row, 2u, j)] = T(dc * ig * (1.0 - cg * cg));
    out4[at(d, 4u, row, 3u, j)] = T(dm * tc * og * (1.0 - og));
    out6[p.off[6] + id] = T(dc * fg);
}

// Gate gradients from dh: da (r, z, n pre-activations of the input side),
// db (the recurrent side: the n gate sees r·b_n) and the direct part of
// dh_prev, z·dh. Bindings 0 saved, 1 h_prev, 2 dh, 4 da, 5 db, 6 dh_prev.
// Grid: 1-D over rows·H.
@compute @workgroup_size(256)
fn gru_cell_backward(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let id = flat(gid, nwg);
    if (id >= p.rows * p.hidden) { return; }
    let row = id / p.hidden;
    let j = id - row * p.hidden;
    let s = p.off[0];
    let r = f32(in0[at(s, 4u, row, 0u, j)]);
    let z = f32(in0[at(s, 4u, row, 1u, j)]);
    let n = f32(in0[at(s, 4u, row, 2u, j)]);
    let hn = f32(in0[at(s, 4u, row, 3u, j)]);
    let dh = f32(in2[p.off[2] + id]);
    let dn = dh * (1.0 - z) * (1.0 - n * n);
    let dz = dh * (f32(in1[p.off[1] + id]) - n) * z * (1.0 - z);
    let dr = dn * hn * r * (1.0 - r);
    let da = p.off[4];
    let db = p.off[5];
    out4[at(da, 3u, row, 0u, j)] = T(dr);
    out4[at(da, 3u, row, 1u, j)] = T(dz);
    out4[at(da, 3u, row, 2u, j)] = T(dn);
    out5[at(db, 3u, row, 0u, j)] = T(dr);
    out5[at(db, 3u, row, 1u, j)] = T(dz);
    out5[at(db, 3u, row, 2u, j)] = T(dn * r);
    out6[p.off[6] + id] = T(dh * z);
}
