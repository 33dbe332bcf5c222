// Fused optimizer steps (rust/optim/mod.rs): one dispatch per parameter
// tensor updates the parameter and its state in place with PyTorch's update
// rules. Per-element math in f32; p, grad and state are T.
alias T = f32;

// ---- Parameters: one layout for every entry point ----
// The caller passes the same Opt (Rust twin: rust/optim/mod.rs) to the
// `advance*` entry and the update entry of one parameter tensor.
//   n           elements of the parameter
//   *_off       element offsets of grad, param, state tensors s0..s2 (in the
//               Rust rule's state order), the step scalar and NAdam's mu_product
//   beta1/beta2 Adam-family betas; RMSprop: beta1 = alpha; SGD: beta1 = momentum
//   omb1/omb2   1 - beta1, 1 - beta2 computed by the caller in f64 (so bias
//               corrections near beta = 1 keep their precision); RMSprop: omb1 = 1 - alpha
//   extra       SGD: dampening; RMSprop: momentum; Adagrad: lr_decay;
//               NAdam: momentum_decay; unused otherwise
//   flags       OPT_MAXIMIZE; OPT_NESTEROV (SGD) or OPT_DECOUPLED weight
//               decay (Adam(W), NAdam, RAdam), one bit; OPT_FRESH (SGD: the
//               momentum buffer was just created and becomes the gradient)
//   eta_off     ASGD: element offset of eta (mu_off is its mu)
struct Opt {
    n: u32, g_off: u32, p_off: u32, s0_off: u32,
    s1_off: u32, s2_off: u32, step_off: u32, mu_off: u32,
    lr: f32, beta1: f32, beta2: f32, omb1: f32,
    omb2: f32, eps: f32, wd: f32, extra: f32,
    flags: u32, eta_off: u32,
}

// ---- Step scalars ----
// `step` (every rule but SGD) and NAdam's `mu_product` are 0-d float32
// tensors that stay on the GPU. Every thread of the update needs the new
// values while one thread writes them, which no single dispatch can order, so
// the caller first dispatches `advance` (or `advance_nadam`) on the same
// params, then the update entry, which reads the advanced scalars. The
// step-dependent coefficients are computed once per workgroup (thread 0, into
// workgroup memory), not per element.

// Binding globals: one per (binding, type); each entry uses one per binding.
@group(0) @binding(0) var<storage, read> gr: array<T>;
@group(0) @binding(0) var<storage, read_write> step_w: array<f32>;
@group(0) @binding(1) var<storage, read_write> mu_w: array<f32>;
@group(0) @binding(1) var<storage, read> step_r: array<f32>;
@group(0) @binding(2) var<storage, read> mu_r: array<f32>;
@group(0) @binding(1) var<storage, read> eta_r: array<f32>;
@group(0) @binding(2) var<storage, read_write> eta_w: array<f32>;
@group(0) @binding(1) var<storage, read_write> w1: array<T>;
@group(0) @binding(2) var<storage, read_write> w2: array<T>;
@group(0) @binding(3) var<storage, read_write> w3: array<T>;
@group(0) @binding(4) var<storage, read_write> w4: array<T>;
@group(0) @binding(5) var<storage, read_write> w5: array<T>;
@group(0) @binding(1) var<storage, read> q1: Opt;
@group(0) @binding(2) var<storage, read> q2: Opt;
@group(0) @binding(3) var<storage, read> q3: Opt;
@group(0) @binding(4) var<storage, read> q4: Opt;
@group(0) @binding(5) var<storage, read> q5: Opt;
@group(0) @binding(6) var<storage, read> q6: Opt;

// Step coefficients shared by a workgroup.
var<workgroup> wk: array<f32, 4>;

fn flat(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * 256u;
}

fn is_nan(x: f32) -> bool {
    // Bit test: drivers may fold x != x away.
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// Rust's f32::max (the CPU kernel's): a NaN operand yields the other one.
fn fmax_(a: f32, b: f32) -> f32 {
    if (is_nan(a)) { return b; }
    if (is_nan(b)) { return a; }
    return max(a, b);
}

// log(1 - e) for e in (0, 1). GPU log is only accurate in absolute terms near
// 1, so small e uses 2 atanh(s), s = -e / (2 - e), as a series.
fn log1m(e: f32) -> f32 {
    if (e <= 0.25) {
        let s = -e / (2.0 - e);
        let s2 = s * s;
        return 2.0 * s * (1.0 + s2 * (1.0 / 3.0 + s2 * (0.2 + s2 * (1.0 / 7.0 + s2 * (1.0 / 9.0 + s2 * (1.0 / 11.0))))));
    }
    return log(1.0 - e);
}

// exp(y) - 1 without the cancellation of exp near 0 (Taylor series there).
fn expm1_(y: f32) -> f32 {
    if (abs(y) < 0.5) {
        var s = 1.0 / 3628800.0;
        s = 1.0 / 362880.0 + y * s;
        s = 1.0 / 40320.0 + y * s;
        s = 1.0 / 5040.0 + y * s;
        s = 1.0 / 720.0 + y * s;
        s = 1.0 / 120.0 + y * s;
        s = 1.0 / 24.0 + y * s;
        s = 1.0 / 6.0 + y * s;
        s = 0.5 + y * s;
        s = 1.0 + y * s;
        return y * s;
    }
    return exp(y) - 1.0;
}

// 1 - beta^t from omb = 1 - beta, accurate when beta is close to 1.
fn one_minus_pow(omb: f32, t: f32) -> f32 {
    if (omb >= 1.0) { return 1.0; }
    return -expm1_(t * log1m(omb));
}

fn decay_of(q: Opt) -> f32 {
    return select(1.0, 1.0 - q.lr * q.wd, (q.flags & OPT_DECOUPLED) != 0u);
}

// The gradient with maximize and coupled weight decay applied; as on the CPU
// it always adds w·p (a zero decay adds 0·p, so an infinite p gives NaN there too).
fn grad_of(q: Opt, g: f32, p: f32, coupled: bool) -> f32 {
    let sign = select(1.0, -1.0, (q.flags & OPT_MAXIMIZE) != 0u);
    let w = select(0.0, q.wd, coupled);
    return sign * g + w * p;
}

// ---- advance: step += 1 ----
// Bindings: 0 step (f32, read_write), 1 params (Opt: step_off).
// Grid: (1, 1, 1). Dispatch before adam/adamw, adagrad, adamax, radam, rmsprop.
@compute @workgroup_size(1)
fn advance() {
    let q = q1;
    step_w[q.step_off] = step_w[q.step_off] + 1.0;
}

// ---- advance_nadam: step += 1; mu_product *= mu(step) ----
// mu(t) = beta1 (1 - 0.5 * 0.96^(t * momentum_decay)).
// Bindings: 0 step (f32, read_write), 1 mu_product (f32, read_write),
// 2 params (Opt: step_off, mu_off, beta1, extra = momentum_decay).
// Grid: (1, 1, 1). Dispatch before nadam.
@compute @workgroup_size(1)
fn advance_nadam() {
    let q = q2;
    let t = step_w[q.step_off] + 1.0;
    step_w[q.step_off] = t;
    mu_w[q.mu_off] = mu_w[q.mu_off] * nadam_mu(q, t);
}

const LN_096: f32 = -0.040821994520255166;

fn nadam_mu(q: Opt, t: f32) -> f32 {
    return q.beta1 * (1.0 - 0.5 * exp(t * q.extra * LN_096));
}

// ---- sgd / sgd_momentum ----
// d = ±g + wd·p; momentum: buf = fresh ? d : momentum·buf + (1 - dampening)·d,
// p -= lr·(nesterov ? d + momentum·buf : buf); without momentum p -= lr·d.
// Bindings sgd: 0 grad (T, read), 1 param (T, read_write), 2 params.
// Bindings sgd_momentum: 0 grad, 1 param, 2 momentum_buffer (T, read_write), 3 params.
// Params: n, g_off, p_off, s0_off (buffer), lr, beta1 = momentum,
// extra = dampening, wd, flags (maximize, nesterov, fresh).
// Grid: ceil(n / 256) workgroups, spilling into y past 65,535 (README).
@compute @workgroup_size(256)
fn sgd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q2;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    w1[q.p_off + i] = T(pv - q.lr * d);
}

@compute @workgroup_size(256)
fn sgd_momentum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q3;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let fresh = (q.flags & OPT_FRESH) != 0u;
    let nesterov = (q.flags & OPT_NESTEROV) != 0u;
    let keep = select(q.beta1, 0.0, fresh);
    let take = select(1.0 - q.extra, 1.0, fresh);
    let kd = select(0.0, 1.0, nesterov);
    let km = select(1.0, q.beta1, nesterov);
    let pv = f32(w1[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    let m = keep * f32(w2[q.s0_off + i]) + take * d;
    w2[q.s0_off + i] = T(m);
    w1[q.p_off + i] = T(pv - q.lr * (kd * d + km * m));
}

// ---- rmsprop (+ _momentum, _centered, _centered_momentum) ----
// sq = alpha·sq + (1 - alpha)·d²; centered: ga += (d - ga)(1 - alpha),
// avg = sqrt(sq - ga²) + eps, else sqrt(sq) + eps; momentum: buf = mom·buf
// + d / avg, p -= lr·buf; else p -= lr·d / avg.
// Bindings: 0 grad (T, read), 1 param (T, read_write), then the state
// (T, read_write) in the rule's order: square_avg, [momentum_buffer], [grad_avg];
// then params. rmsprop: 2 sq, 3 params; rmsprop_momentum: 2 sq, 3 buf,
// 4 params; rmsprop_centered: 2 sq, 3 grad_avg, 4 params;
// rmsprop_centered_momentum: 2 sq, 3 buf, 4 grad_avg, 5 params.
// Params: n, g_off, p_off, s0_off..s2_off (state in that order), lr,
// beta1 = alpha, omb1 = 1 - alpha, eps, wd, extra = momentum, flags (maximize).
// Also dispatch `advance` first: RMSprop keeps a step count it does not use.
// Grid: ceil(n / 256) workgroups (1-D, README).
struct Rms { sq: f32, ga: f32, d: f32, avg: f32 }

fn rms_core(q: Opt, g: f32, pv: f32, sq: f32, ga: f32, centered: bool) -> Rms {
    var r: Rms;
    r.d = grad_of(q, g, pv, true);
    r.sq = q.beta1 * sq + q.omb1 * r.d * r.d;
    if (centered) {
        r.ga = ga + (r.d - ga) * q.omb1;
        r.avg = sqrt(r.sq - r.ga * r.ga) + q.eps;
    } else {
        r.ga = 0.0;
        r.avg = sqrt(r.sq) + q.eps;
    }
    return r;
}

@compute @workgroup_size(256)
fn rmsprop(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q3;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let r = rms_core(q, f32(gr[q.g_off + i]), pv, f32(w2[q.s0_off + i]), 0.0, false);
    w2[q.s0_off + i] = T(r.sq);
    w1[q.p_off + i] = T(pv - q.lr * r.d / r.avg);
}

@compute @workgroup_size(256)
fn rmsprop_momentum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q4;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let r = rms_core(q, f32(gr[q.g_off + i]), pv, f32(w2[q.s0_off + i]), 0.0, false);
    w2[q.s0_off + i] = T(r.sq);
    let b = q.extra * f32(w3[q.s1_off + i]) + r.d / r.avg;
    w3[q.s1_off + i] = T(b);
    w1[q.p_off + i] = T(pv - q.lr * b);
}

@compute @workgroup_size(256)
fn rmsprop_centered(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q4;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let r = rms_core(q, f32(gr[q.g_off + i]), pv, f32(w2[q.s0_off + i]), f32(w3[q.s1_off + i]), true);
    w2[q.s0_off + i] = T(r.sq);
    w3[q.s1_off + i] = T(r.ga);
    w1[q.p_off + i] = T(pv - q.lr * r.d / r.avg);
}

@compute @workgroup_size(256)
fn rmsprop_centered_momentum(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q5;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let r = rms_core(q, f32(gr[q.g_off + i]), pv, f32(w2[q.s0_off + i]), f32(w4[q.s2_off + i]), true);
    w2[q.s0_off + i] = T(r.sq);
    w4[q.s2_off + i] = T(r.ga);
    let b = q.extra * f32(w3[q.s1_off + i]) + r.d / r.avg;
    w3[q.s1_off + i] = T(b);
    w1[q.p_off + i] = T(pv - q.lr * b);
}

// ---- adam / adam_amsgrad (Adam, and AdamW with flags bit 1) ----
// t = step (already advanced); p *= 1 - lr·wd if decoupled; d = ±g (+ wd·p
// if coupled); m += (d - m)(1 - b1); v = b2·v + (1 - b2)·d²; amsgrad:
// vmax = max(vmax, v) (NaN-ignoring, as Rust's max), used in place of v;
// p -= lr / (1 - b1^t) · m / (sqrt(v) / sqrt(1 - b2^t) + eps).
// Bindings adam: 0 grad (T, read), 1 step (f32, read), 2 param, 3 exp_avg,
// 4 exp_avg_sq (T, read_write), 5 params.
// Bindings adam_amsgrad: the same plus 5 max_exp_avg_sq (T, read_write), 6 params.
// Params: n, g_off, p_off, s0_off (m), s1_off (v), s2_off (vmax), step_off,
// lr, beta1, beta2, omb1, omb2, eps, wd, flags (maximize, decoupled).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance` first.
fn adam_coef(q: Opt, t: f32) {
    wk[0] = q.lr / one_minus_pow(q.omb1, t);
    wk[1] = sqrt(one_minus_pow(q.omb2, t));
}

@compute @workgroup_size(256)
fn adam(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q5;
    if (li == 0u) { adam_coef(q, step_r[q.step_off]); }
    workgroupBarrier();
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let step_size = wk[0];
    let bc2_sqrt = wk[1];
    let pv = f32(w2[q.p_off + i]) * decay_of(q);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, (q.flags & OPT_DECOUPLED) == 0u);
    var m = f32(w3[q.s0_off + i]);
    m = m + (d - m) * q.omb1;
    let v = q.beta2 * f32(w4[q.s1_off + i]) + q.omb2 * d * d;
    w3[q.s0_off + i] = T(m);
    w4[q.s1_off + i] = T(v);
    w2[q.p_off + i] = T(pv - step_size * m / (sqrt(v) / bc2_sqrt + q.eps));
}

@compute @workgroup_size(256)
fn adam_amsgrad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q6;
    if (li == 0u) { adam_coef(q, step_r[q.step_off]); }
    workgroupBarrier();
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let step_size = wk[0];
    let bc2_sqrt = wk[1];
    let pv = f32(w2[q.p_off + i]) * decay_of(q);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, (q.flags & OPT_DECOUPLED) == 0u);
    var m = f32(w3[q.s0_off + i]);
    m = m + (d - m) * q.omb1;
    let v = q.beta2 * f32(w4[q.s1_off + i]) + q.omb2 * d * d;
    let vm = fmax_(f32(w5[q.s2_off + i]), v);
    w3[q.s0_off + i] = T(m);
    w4[q.s1_off + i] = T(v);
    w5[q.s2_off + i] = T(vm);
    w2[q.p_off + i] = T(pv - step_size * m / (sqrt(vm) / bc2_sqrt + q.eps));
}

// ---- adagrad ----
// sum += d²; p -= lr / (1 + (t - 1)·lr_decay) · d / (sqrt(sum) + eps).
// Bindings: 0 grad (T, read), 1 step (f32, read), 2 param, 3 sum (T, read_write), 4 params.
// Params: n, g_off, p_off, s0_off (sum), step_off, lr, eps, wd,
// extra = lr_decay, flags (maximize).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance` first.
@compute @workgroup_size(256)
fn adagrad(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q4;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    // One division per thread: no transcendental, so no workgroup sharing.
    let clr = q.lr / (1.0 + (step_r[q.step_off] - 1.0) * q.extra);
    let pv = f32(w2[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    let s = f32(w3[q.s0_off + i]) + d * d;
    w3[q.s0_off + i] = T(s);
    w2[q.p_off + i] = T(pv - clr * d / (sqrt(s) + q.eps));
}

// ---- adamax ----
// m += (d - m)(1 - b1); u = max(b2·u, |d| + eps) (NaN-ignoring);
// p -= lr / (1 - b1^t) · m / u.
// Bindings: 0 grad (T, read), 1 step (f32, read), 2 param, 3 exp_avg,
// 4 exp_inf (T, read_write), 5 params.
// Params: n, g_off, p_off, s0_off (m), s1_off (u), step_off, lr, beta1,
// beta2, omb1, eps, wd, flags (maximize).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance` first.
@compute @workgroup_size(256)
fn adamax(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q5;
    if (li == 0u) { wk[0] = q.lr / one_minus_pow(q.omb1, step_r[q.step_off]); }
    workgroupBarrier();
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let clr = wk[0];
    let pv = f32(w2[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    var m = f32(w3[q.s0_off + i]);
    m = m + (d - m) * q.omb1;
    let u = fmax_(q.beta2 * f32(w4[q.s1_off + i]), abs(d) + q.eps);
    w3[q.s0_off + i] = T(m);
    w4[q.s1_off + i] = T(u);
    w2[q.p_off + i] = T(pv - clr * m / u);
}

// ---- nadam ----
// mu_t, mu_{t+1} as in advance_nadam; P = mu_product (already advanced);
// p *= 1 - lr·wd if decoupled; m, v as Adam; denom = sqrt(v / (1 - b2^t)) + eps;
// p -= lr(1 - mu_t)/(1 - P) · d / denom + lr·mu_{t+1}/(1 - P·mu_{t+1}) · m / denom.
// Bindings: 0 grad (T, read), 1 step (f32, read), 2 mu_product (f32, read),
// 3 param, 4 exp_avg, 5 exp_avg_sq (T, read_write), 6 params.
// Params: n, g_off, p_off, s0_off (m), s1_off (v), step_off, mu_off, lr,
// beta1, beta2, omb1, omb2, eps, wd, extra = momentum_decay, flags (maximize, decoupled).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance_nadam` first.
@compute @workgroup_size(256)
fn nadam(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q6;
    if (li == 0u) {
        let t = step_r[q.step_off];
        let mp = mu_r[q.mu_off];
        let mu = nadam_mu(q, t);
        let mu_next = nadam_mu(q, t + 1.0);
        wk[0] = one_minus_pow(q.omb2, t);
        wk[1] = q.lr * (1.0 - mu) / (1.0 - mp);
        wk[2] = q.lr * mu_next / (1.0 - mp * mu_next);
    }
    workgroupBarrier();
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let bc2 = wk[0];
    let k1 = wk[1];
    let k2 = wk[2];
    let pv = f32(w3[q.p_off + i]) * decay_of(q);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, (q.flags & OPT_DECOUPLED) == 0u);
    var m = f32(w4[q.s0_off + i]);
    m = m + (d - m) * q.omb1;
    let v = q.beta2 * f32(w5[q.s1_off + i]) + q.omb2 * d * d;
    w4[q.s0_off + i] = T(m);
    w5[q.s1_off + i] = T(v);
    let denom = sqrt(v / bc2) + q.eps;
    w3[q.p_off + i] = T(pv - k1 * d / denom - k2 * m / denom);
}

// ---- radam ----
// rho_inf = 2 / (1 - b2) - 1, rho_t = rho_inf - 2t·b2^t / (1 - b2^t); if
// rho_t > 5, p -= lr·r·sqrt(1 - b2^t) · mhat / (sqrt(v) + eps) with the
// rectification r = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)),
// else p -= lr·mhat; mhat = m / (1 - b1^t); m, v and weight decay as Adam.
// Bindings: 0 grad (T, read), 1 step (f32, read), 2 param, 3 exp_avg,
// 4 exp_avg_sq (T, read_write), 5 params.
// Params: n, g_off, p_off, s0_off (m), s1_off (v), step_off, lr, beta1,
// beta2, omb1, omb2, eps, wd, flags (maximize, decoupled).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance` first.

// rho_t: the direct formula loses ~2/(1 - b2) to cancellation (rho_t ≈ t
// while both terms are ≈ 2000 for b2 = 0.999) right where the rho_t > 5 test
// is decided, so with e = 1 - b2, L = -log(b2), x = tL it is evaluated as
//   rho_t = (2/e - 1 - 2/L) + (2/L)(1 - x / expm1(x)),
// each bracket by its series when small.
fn radam_rho_t(e: f32, t: f32) -> f32 {
    if (e >= 1.0) { return 1.0; }
    let l = -log1m(e);
    var dd: f32;
    if (e < 0.1) {
        dd = e * (1.0 / 6.0 + e * (1.0 / 12.0 + e * (19.0 / 360.0 + e * (3.0 / 80.0))));
    } else {
        dd = 2.0 / e - 1.0 - 2.0 / l;
    }
    let x = t * l;
    var ob: f32;
    if (x < 0.5) {
        let x2 = x * x;
        ob = x * (0.5 - x * (1.0 / 12.0 - x2 * (1.0 / 720.0 - x2 * (1.0 / 30240.0))));
    } else {
        ob = 1.0 - x / expm1_(x);
    }
    return dd + (2.0 / l) * ob;
}

@compute @workgroup_size(256)
fn radam(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q5;
    if (li == 0u) {
        let t = step_r[q.step_off];
        let bc2 = one_minus_pow(q.omb2, t);
        let rho_inf = 2.0 / q.omb2 - 1.0;
        let rho_t = radam_rho_t(q.omb2, t);
        wk[0] = one_minus_pow(q.omb1, t);
        if (rho_t > 5.0) {
            let r = sqrt((rho_t - 4.0) * (rho_t - 2.0) * rho_inf / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t));
            wk[1] = q.lr * r * sqrt(bc2);
            wk[2] = 1.0;
        } else {
            wk[1] = q.lr;
            wk[2] = 0.0;
        }
    }
    workgroupBarrier();
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let bc1 = wk[0];
    let k = wk[1];
    let rect = wk[2] != 0.0;
    let pv = f32(w2[q.p_off + i]) * decay_of(q);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, (q.flags & OPT_DECOUPLED) == 0u);
    var m = f32(w3[q.s0_off + i]);
    m = m + (d - m) * q.omb1;
    let v = q.beta2 * f32(w4[q.s1_off + i]) + q.omb2 * d * d;
    w3[q.s0_off + i] = T(m);
    w4[q.s1_off + i] = T(v);
    let mhat = m / bc1;
    var upd: f32;
    if (rect) {
        upd = mhat * k / (sqrt(v) + q.eps);
    } else {
        upd = mhat * k;
    }
    w2[q.p_off + i] = T(pv - upd);
}

// ---- adadelta ----
// sq = rho·sq + (1 - rho)·d²; delta = sqrt(acc + eps) / sqrt(sq + eps) · d;
// acc = rho·acc + (1 - rho)·delta²; p -= lr·delta.
// Bindings: 0 grad (T, read), 1 param, 2 square_avg, 3 acc_delta (T, read_write), 4 params.
// Params: n, g_off, p_off, s0_off (square_avg), s1_off (acc_delta), lr,
// beta1 = rho, omb1 = 1 - rho, eps, wd, flags (maximize).
// Grid: ceil(n / 256) workgroups (1-D, README). Also dispatch `advance`
// first: Adadelta keeps a step count it does not use.
@compute @workgroup_size(256)
fn adadelta(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q4;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let pv = f32(w1[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    let sq = q.beta1 * f32(w2[q.s0_off + i]) + q.omb1 * d * d;
    var acc = f32(w3[q.s1_off + i]);
    let delta = sqrt(acc + q.eps) / sqrt(sq + q.eps) * d;
    acc = q.beta1 * acc + q.omb1 * delta * delta;
    w2[q.s0_off + i] = T(sq);
    w3[q.s1_off + i] = T(acc);
    w1[q.p_off + i] = T(pv - q.lr * delta);
}

// ---- asgd ----
// With eta and mu as stored before this step: p = p·(1 - lambd·eta) - eta·d;
// ax = p if mu == 1, else ax + (p - ax)·mu. Then dispatch `advance_asgd`.
// Bindings: 0 grad (T, read), 1 eta (f32, read), 2 mu (f32, read), 3 param,
// 4 ax (T, read_write), 5 params.
// Params: n, g_off, p_off, s0_off (ax), eta_off, mu_off, wd, extra = lambd, flags (maximize).
// Grid: ceil(n / 256) workgroups (1-D, README).
@compute @workgroup_size(256)
fn asgd(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q5;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    let eta = eta_r[q.eta_off];
    let mu = mu_r[q.mu_off];
    var pv = f32(w3[q.p_off + i]);
    let d = grad_of(q, f32(gr[q.g_off + i]), pv, true);
    pv = pv * (1.0 - q.extra * eta) - eta * d;
    let ax = f32(w4[q.s0_off + i]);
    w4[q.s0_off + i] = T(select(ax + (pv - ax) * mu, pv, mu == 1.0));
    w3[q.p_off + i] = T(pv);
}

// ---- advance_asgd: step += 1; eta = lr / (1 + lambd·lr·step)^alpha; mu = 1 / max(1, step - t0) ----
// Bindings: 0 step, 1 mu, 2 eta (f32, read_write), 3 params (Opt: step_off,
// mu_off, eta_off, lr, beta1 = alpha, beta2 = t0, extra = lambd).
// Grid: (1, 1, 1). Dispatch after asgd.
@compute @workgroup_size(1)
fn advance_asgd() {
    let q = q4;
    let t = step_w[q.step_off] + 1.0;
    step_w[q.step_off] = t;
    eta_w[q.eta_off] = q.lr / pow(1.0 + q.extra * q.lr * t, q.beta1);
    mu_w[q.mu_off] = 1.0 / max(1.0, t - q.beta2);
}

// ---- rprop ----
// s = d·prev; f = eta_plus if s > 0, eta_minus if s < 0, else 1;
// size = clamp(size·f, step_min, step_max); d = 0 where f == eta_minus;
// p -= sign(d)·size; prev = d.
// Bindings: 0 grad (T, read), 1 param, 2 prev, 3 step_size (T, read_write), 4 params.
// Params: n, g_off, p_off, s0_off (prev), s1_off (step_size), beta1 = eta_minus,
// beta2 = eta_plus, omb1 = step_min, omb2 = step_max, flags (maximize).
// Grid: ceil(n / 256) workgroups (1-D, README); dispatch `advance` first.
@compute @workgroup_size(256)
fn rprop(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let q = q4;
    let i = flat(gid, nwg);
    if (i >= q.n) { return; }
    var d = grad_of(q, f32(gr[q.g_off + i]), 0.0, false);
    let s = d * f32(w2[q.s0_off + i]);
    var f = 1.0;
    if (s > 0.0) { f = q.beta2; } else if (s < 0.0) { f = q.beta1; }
    let size = min(max(f32(w3[q.s1_off + i]) * f, q.omb1), q.omb2);
    if (f == q.beta1) { d = 0.0; }
    w3[q.s1_off + i] = T(size);
    w2[q.s0_off + i] = T(d);
    w1[q.p_off + i] = T(f32(w1[q.p_off + i]) - sign(d) * size);
}

// ---- amp_unscale: GradScaler's check and unscale of one gradient (rust/optim/amp.rs) ----
// Bindings: 0 found_inf (f32, read_write), 1 inv_scale (f32), 2 grad (T,
// read_write), 3 params (Opt: n, g_off; s0_off: found_inf's offset, s1_off:
// inv_scale's). Grid: exec::grid_1d(n). Every gradient of a step is one
// dispatch into the same found_inf; threads that see inf or NaN all store the
// same 1.0, so their racing writes agree.
@compute @workgroup_size(256)
fn amp_unscale(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = flat(gid, nwg);
    if (i >= q3.n) { return; }
    let g = f32(w2[q3.g_off + i]);
    if ((bitcast<u32>(g) & 0x7f800000u) == 0x7f800000u) {
        step_w[q3.s0_off] = 1.0;
    }
    w2[q3.g_off + i] = T(g * step_r[q3.s1_off]);
}
