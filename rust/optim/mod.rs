//! Fused optimizer steps: one pass over each parameter updates it and its
//! state in place, with PyTorch's update rules (the single-tensor forms of
//! torch.optim). Scalars that depend on the step count are computed once per
//! tensor here, not per element.

pub mod amp;

use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Tensor};
use num_traits::Float;

crate::wgsl_flags! {
    /// Bits of `Opt::flags`. NESTEROV (SGD) and DECOUPLED (weight decay of
    /// Adam(W), NAdam, RAdam) share a bit; FRESH: SGD's momentum buffer was
    /// just created and becomes the gradient.
    pub struct OptFlags = "OPT" { MAXIMIZE = 1, NESTEROV = 2, DECOUPLED = 2, FRESH = 4 }
}

crate::wgsl_params! {
    /// The params of every entry of shaders/optim.wgsl (described there): n,
    /// element offsets of grad, param, state s0..s2, step and mu_product (NAdam,
    /// ASGD), the hyperparameters, `OptFlags`, ASGD's eta.
    pub struct Opt in crate::backend::gpu::shaders::OPTIM {
        n: u32, g_off: u32, p_off: u32, s0_off: u32,
        s1_off: u32, s2_off: u32, step_off: u32, mu_off: u32,
        lr: f32, beta1: f32, beta2: f32, omb1: f32,
        omb2: f32, eps: f32, wd: f32, extra: f32,
        flags: u32, eta_off: u32,
    }
}

/// One optimizer's hyperparameters (per param group).
#[derive(Clone, Debug)]
pub enum Rule {
    Sgd {
        lr: f64,
        momentum: f64,
        dampening: f64,
        nesterov: bool,
        wd: f64,
        maximize: bool,
    },
    /// Adam, and AdamW when `decoupled`.
    Adam {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
        amsgrad: bool,
        maximize: bool,
        decoupled: bool,
    },
    RmsProp {
        lr: f64,
        alpha: f64,
        eps: f64,
        wd: f64,
        momentum: f64,
        centered: bool,
        maximize: bool,
    },
    Adagrad {
        lr: f64,
        lr_decay: f64,
        wd: f64,
        eps: f64,
        maximize: bool,
    },
    Adamax {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
        maximize: bool,
    },
    NAdam {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
        momentum_decay: f64,
        decoupled: bool,
        maximize: bool,
    },
    RAdam {
        lr: f64,
        b1: f64,
        b2: f64,
        eps: f64,
        wd: f64,
        decoupled: bool,
        maximize: bool,
    },
    Adadelta {
        lr: f64,
        rho: f64,
        eps: f64,
        wd: f64,
        maximize: bool,
    },
    /// Scalars: step, eta, mu (the update uses eta and mu as stored, then advances them).
    Asgd {
        lr: f64,
        lambd: f64,
        alpha: f64,
        t0: f64,
        wd: f64,
        maximize: bool,
    },
    /// State: prev, step_size (starts at lr, set by the caller).
    Rprop {
        eta_minus: f64,
        eta_plus: f64,
        step_min: f64,
        step_max: f64,
        maximize: bool,
    },
}

impl Rule {
    /// How many state tensors (shaped like the parameter) the rule uses.
    pub fn n_state(&self) -> usize {
        match *self {
            Rule::Sgd { momentum, .. } => (momentum != 0.0) as usize,
            Rule::Adam { amsgrad, .. } => 2 + amsgrad as usize,
            Rule::RmsProp { momentum, centered, .. } => {
                1 + (momentum > 0.0) as usize + centered as usize
            }
            Rule::Adagrad { .. } | Rule::Asgd { .. } => 1,
            Rule::Adamax { .. }
            | Rule::NAdam { .. }
            | Rule::RAdam { .. }
            | Rule::Adadelta { .. }
            | Rule::Rprop { .. } => 2,
        }
    }
    /// How many 0-d float32 scalars of state it keeps: step (all but SGD),
    /// NAdam's mu_product, ASGD's eta and mu.
    pub fn n_scalars(&self) -> usize {
        match self {
            Rule::Sgd { .. } => 0,
            Rule::NAdam { .. } => 2,
            Rule::Asgd { .. } => 3,
            _ => 1,
        }
    }
}

const CHUNK: usize = 1 << 14;

/// Whether one tensor's update is split over the thread team.
pub fn splits(n: usize) -> bool {
    crate::backend::cpu::parallel(n)
}

/// Runs `f(start, end)` over [0, n) in chunks, in parallel when large.
fn chunks(n: usize, f: impl Fn(usize, usize) + Sync + Send) {
    if splits(n) {
        crate::backend::cpu::team::for_each(n.div_ceil(CHUNK), |c| {
            f(c * CHUNK, ((c + 1) * CHUNK).min(n))
        });
    } else {
        f(0, n);
    }
}

fn read_scalar(t: &Tensor) -> Result<f64> {
    if t.numel() != 1 {
        bail!(
            Runtime,
            "optimizer step: a step counter must have one element, got shape {}",
            fmt_shape(t.shape())
        );
    }
    // SAFETY: one element of the tensor's own dtype.
    Ok(match t.dtype() {
        DType::F32 => unsafe { *t.ptr::<f32>()? as f64 },
        DType::F64 => unsafe { *t.ptr::<f64>()? },
        _ => crate::ops::copy::to_dtype(t, DType::F64)?.to_vec::<f64>()?[0],
    })
}

fn write_scalar(t: &Tensor, v: f64) -> Result<()> {
    t.check_writable("optimizer step")?;
    // SAFETY: as above.
    match t.dtype() {
        DType::F32 => unsafe { *t.ptr::<f32>()? = v as f32 },
        DType::F64 => unsafe { *t.ptr::<f64>()? = v },
        _ => return crate::ops::copy::fill_(t, crate::tensor::Scalar::Float(v)),
    }
    t.storage().bump_version();
    Ok(())
}

/// Updates `p` (and `state`, `scalars`) in place from its gradient `g`.
/// `p` and `state` may be strided; all must have p's shape and dtype.
/// `fresh`: the state was just created (SGD's momentum buffer starts as the gradient).
pub fn step(
    rule: &Rule,
    p: &Tensor,
    g: &Tensor,
    state: &[Tensor],
    scalars: &[Tensor],
    fresh: bool,
) -> Result<()> {
    if !matches!(p.dtype(), DType::F32 | DType::F64) {
        bail!(
            Runtime,
            "optimizer step: parameters must be float32 or float64, got {}",
            p.dtype().name()
        );
    }
    if state.len() != rule.n_state() || scalars.len() != rule.n_scalars() {
        bail!(
            Runtime,
            "optimizer step: expected {} state tensors and {} scalars, got {} and {}",
            rule.n_state(),
            rule.n_scalars(),
            state.len(),
            scalars.len()
        );
    }
    for (what, t) in std::iter::once(("grad", g)).chain(state.iter().map(|s| ("state", s))) {
        if t.shape() != p.shape() || t.dtype() != p.dtype() {
            bail!(
                Runtime,
                "optimizer step: {} of shape {} and dtype {} does not match the parameter's shape {} and dtype {}",
                what,
                fmt_shape(t.shape()),
                t.dtype().name(),
                fmt_shape(p.shape()),
                p.dtype().name()
            );
        }
    }
    p.check_writable("optimizer step")?;
    if p.is_gpu() {
        return gpu_step(rule, p, g, state, scalars, fresh);
    }
    // Strided parameters or state are updated in contiguous copies, written back after.
    let dense = |t: &Tensor| {
        if t.is_contiguous() {
            Ok(t.clone())
        } else {
            crate::ops::copy::contiguous_clone(t)
        }
    };
    let originals: Vec<&Tensor> = std::iter::once(p).chain(state).collect();
    let work: Vec<Tensor> = originals.iter().map(|t| dense(t)).collect::<Result<_>>()?;
    let (p_work, state) = (&work[0], &work[1..]);
    let g = crate::ops::copy::contiguous(g)?;
    // Step-dependent scalars, advanced once per tensor.
    let mut k = [0f64; 3];
    for (i, s) in scalars.iter().enumerate() {
        k[i] = read_scalar(s)?;
    }
    if rule.n_scalars() > 0 {
        k[0] += 1.0;
        write_scalar(&scalars[0], k[0])?;
    }
    // NAdam: the new mu_product; ASGD: (eta, mu) as stored before this step.
    let mut extra = [0.0, k[1], k[2]];
    match *rule {
        Rule::NAdam { b1, momentum_decay, .. } => {
            let mu = b1 * (1.0 - 0.5 * 0.96f64.powf(k[0] * momentum_decay));
            write_scalar(&scalars[1], k[1] * mu)?;
            // Read back: the update uses the product as stored (float32), as PyTorch does.
            extra[0] = read_scalar(&scalars[1])?;
        }
        Rule::Asgd { lr, lambd, alpha, t0, .. } => {
            write_scalar(&scalars[1], lr / (1.0 + lambd * lr * k[0]).powf(alpha))?;
            write_scalar(&scalars[2], 1.0 / (k[0] - t0).max(1.0))?;
        }
        _ => {}
    }
    crate::dispatch_float!(p.dtype(), T => {
        let ptrs: Vec<P<T>> = state.iter().map(|s| s.ptr::<T>().map(P)).collect::<Result<_>>()?;
        // SAFETY: p, g and state are contiguous with p.numel() elements each (checked above).
        unsafe { update::<T>(rule, P(p_work.ptr::<T>()?), P(g.ptr::<T>()?), &ptrs, p.numel(), k[0], extra, fresh) };
    });
    for (orig, w) in originals.iter().zip(&work) {
        if orig.is_contiguous() {
            orig.storage().bump_version();
        } else {
            crate::ops::copy::copy_into(orig, w)?;
            orig.storage().bump_version();
        }
    }
    Ok(())
}

/// The GPU step: shaders/optim.wgsl, one dispatch per tensor (plus one that
/// advances the step scalars, which stay on the GPU).
fn gpu_step(
    rule: &Rule,
    p: &Tensor,
    g: &Tensor,
    state: &[Tensor],
    scalars: &[Tensor],
    fresh: bool,
) -> Result<()> {
    use crate::backend::gpu::codes::flag as bit;
    use crate::backend::gpu::exec::{self, Bind, Variant};
    let all: Vec<&Tensor> = [p, g].into_iter().chain(state).chain(scalars).collect();
    crate::ops::same_device("optimizer step", &all)?;
    if p.dtype() != DType::F32 || scalars.iter().any(|s| s.dtype() != DType::F32 || s.numel() != 1)
    {
        bail!(Runtime, "optimizer step on the GPU: parameters and step counters must be float32");
    }
    let dense = |t: &Tensor| {
        if t.is_contiguous() {
            Ok(t.clone())
        } else {
            crate::ops::copy::contiguous_clone(t)
        }
    };
    let originals: Vec<&Tensor> = std::iter::once(p).chain(state).collect();
    let work: Vec<Tensor> = originals.iter().map(|t| dense(t)).collect::<Result<_>>()?;
    let g = dense(g)?;
    let off = |t: &Tensor| t.layout().offset as u32;
    let s_off = |i: usize| work.get(1 + i).map_or(0, off);
    let (max, dec) = (OptFlags::MAXIMIZE, OptFlags::DECOUPLED);
    // (lr, beta1, beta2, omb1, omb2, eps, wd, extra): see the Opt struct.
    let (entry, h, flags): (&'static str, [f64; 8], u32) = match *rule {
        Rule::Sgd { lr, momentum, dampening, nesterov, wd, maximize } => (
            if momentum != 0.0 { "sgd_momentum" } else { "sgd" },
            [lr, momentum, 0.0, 0.0, 0.0, 0.0, wd, dampening],
            bit(maximize, max) | bit(nesterov, OptFlags::NESTEROV) | bit(fresh, OptFlags::FRESH),
        ),
        Rule::Adam { lr, b1, b2, eps, wd, amsgrad, maximize, decoupled } => (
            if amsgrad { "adam_amsgrad" } else { "adam" },
            [lr, b1, b2, 1.0 - b1, 1.0 - b2, eps, wd, 0.0],
            bit(maximize, max) | bit(decoupled, dec),
        ),
        Rule::RmsProp { lr, alpha, eps, wd, momentum, centered, maximize } => (
            match (momentum > 0.0, centered) {
                (false, false) => "rmsprop",
                (true, false) => "rmsprop_momentum",
                (false, true) => "rmsprop_centered",
                (true, true) => "rmsprop_centered_momentum",
            },
            [lr, alpha, 0.0, 1.0 - alpha, 0.0, eps, wd, momentum],
            bit(maximize, max),
        ),
        Rule::Adagrad { lr, lr_decay, wd, eps, maximize } => {
            ("adagrad", [lr, 0.0, 0.0, 0.0, 0.0, eps, wd, lr_decay], bit(maximize, max))
        }
        Rule::Adamax { lr, b1, b2, eps, wd, maximize } => {
            ("adamax", [lr, b1, b2, 1.0 - b1, 1.0 - b2, eps, wd, 0.0], bit(maximize, max))
        }
        Rule::NAdam { lr, b1, b2, eps, wd, momentum_decay, decoupled, maximize } => (
            "nadam",
            [lr, b1, b2, 1.0 - b1, 1.0 - b2, eps, wd, momentum_decay],
            bit(maximize, max) | bit(decoupled, dec),
        ),
        Rule::RAdam { lr, b1, b2, eps, wd, decoupled, maximize } => (
            "radam",
            [lr, b1, b2, 1.0 - b1, 1.0 - b2, eps, wd, 0.0],
            bit(maximize, max) | bit(decoupled, dec),
        ),
        Rule::Adadelta { lr, rho, eps, wd, maximize } => {
            ("adadelta", [lr, rho, 0.0, 1.0 - rho, 0.0, eps, wd, 0.0], bit(maximize, max))
        }
        Rule::Asgd { lr, lambd, alpha, t0, wd, maximize } => {
            ("asgd", [lr, alpha, t0, 0.0, 0.0, 0.0, wd, lambd], bit(maximize, max))
        }
        Rule::Rprop { eta_minus, eta_plus, step_min, step_max, maximize } => (
            "rprop",
            [0.0, eta_minus, eta_plus, step_min, step_max, 0.0, 0.0, 0.0],
            bit(maximize, max),
        ),
    };
    let n = p.numel();
    let is_asgd = matches!(rule, Rule::Asgd { .. });
    let [lr, beta1, beta2, omb1, omb2, eps, wd, extra] = h.map(|v| v as f32);
    let params = Opt {
        n: n as u32,
        g_off: off(&g),
        p_off: off(&work[0]),
        s0_off: s_off(0),
        s1_off: s_off(1),
        s2_off: s_off(2),
        step_off: scalars.first().map_or(0, off),
        mu_off: scalars.get(if is_asgd { 2 } else { 1 }).map_or(0, off),
        eta_off: if is_asgd { off(&scalars[1]) } else { 0 },
        lr,
        beta1,
        beta2,
        omb1,
        omb2,
        eps,
        wd,
        extra,
        flags,
    };
    fn buf(t: &Tensor) -> Result<&wgpu::Buffer> {
        t.storage().gpu_buffer()
    }
    // Step scalars first: every thread of the update reads the advanced values
    // (ASGD reads eta and mu as they were, and advances them after its update).
    match scalars {
        _ if is_asgd => {}
        [] => {}
        [step] => exec::dispatch("advance", Variant::F32, &[buf(step)?], &params, [1, 1, 1])?,
        [step, mu, ..] => exec::dispatch(
            "advance_nadam",
            Variant::F32,
            &[buf(step)?, buf(mu)?],
            &params,
            [1, 1, 1],
        )?,
    }
    // Bindings: grad, then the step scalars the rule reads (RMSprop, Adadelta
    // and Rprop count steps but do not use them; ASGD reads eta and mu), then
    // param and state. Tensors beyond the binding limit are updated in chunks
    // of elements, each bound as windows (each with its offset in its window).
    let scalars_read: &[Tensor] = match rule {
        Rule::RmsProp { .. } | Rule::Adadelta { .. } | Rule::Rprop { .. } => &[],
        Rule::Asgd { .. } => &scalars[1..],
        _ => scalars,
    };
    let dense_args: Vec<&Tensor> = std::iter::once(&g).chain(&work).collect();
    let mut chunk = n;
    for t in &dense_args {
        while chunk > 1 && !exec::fits(buf(t)?, chunk, 4)? {
            chunk = chunk.div_ceil(2);
        }
    }
    for start in (0..n).step_by(chunk.max(1)) {
        let len = chunk.min(n - start);
        let mut binds = Vec::new();
        let mut chunk_params = Opt { n: len as u32, ..params };
        let c = &mut chunk_params;
        let offsets = [&mut c.g_off, &mut c.p_off, &mut c.s0_off, &mut c.s1_off, &mut c.s2_off];
        for (i, t) in dense_args.iter().enumerate() {
            let lo = t.layout().offset + start;
            let (bind, base) = Bind::window(buf(t)?, lo, lo + len - 1, 4)?;
            *offsets[i] = (lo - base) as u32;
            binds.push(bind);
        }
        binds.splice(
            1..1,
            scalars_read.iter().map(|s| buf(s).map(Bind::whole)).collect::<Result<Vec<_>>>()?,
        );
        exec::dispatch_binds(entry, Variant::F32, &binds, &chunk_params, exec::grid_1d(len))?;
    }
    if let [step, eta, mu] = scalars {
        let b = [buf(step)?, buf(mu)?, buf(eta)?];
        exec::dispatch("advance_asgd", Variant::F32, &b, &params, [1, 1, 1])?;
    }
    for s in scalars {
        s.storage().bump_version();
    }
    for (orig, w) in originals.iter().zip(&work) {
        if !orig.is_contiguous() {
            crate::ops::copy::copy_into(orig, w)?;
        }
        orig.storage().bump_version();
    }
    Ok(())
}

/// The elementwise update of each rule, over slices so the loops vectorize.
///
/// # Safety
/// Every pointer is valid for `n` elements and they do not alias.
#[allow(clippy::too_many_arguments)]
unsafe fn update<T: Float + Send + Sync>(
    rule: &Rule,
    p: P<T>,
    g: P<T>,
    s: &[P<T>],
    n: usize,
    step: f64,
    extra: [f64; 3],
    fresh: bool,
) {
    let mu_product = extra[0];
    let c = |v: f64| T::from(v).unwrap_or(T::zero());
    chunks(n, |a, b| {
        crate::backend::cpu::simd(
            #[inline(always)]
            || {
                let len = b - a;
                // SAFETY: [a, b) is this chunk's own range of every buffer.
                let sl = |q: P<T>| unsafe { std::slice::from_raw_parts_mut(q.at(a as isize), len) };
                let (p, g) = (sl(p), &*sl(g));
                let mut st: Vec<&mut [T]> = s.iter().map(|&q| sl(q)).collect();
                // The gradient with maximize and (coupled) weight decay applied; the
                // constants are converted once, outside the loops.
                // Branch-free so the loops vectorize (a zero weight decay adds 0·p).
                let grad = |maximize: bool, wd: f64| {
                    let (sign, w) = (if maximize { -T::one() } else { T::one() }, c(wd));
                    move |gv: T, pv: T| sign * gv + w * pv
                };
                match *rule {
                    Rule::Sgd { lr, momentum, dampening, nesterov, wd, maximize } => {
                        let gd = grad(maximize, wd);
                        let (lr, mo, damp) = (c(lr), c(momentum), c(1.0 - dampening));
                        match st.first_mut() {
                            None => {
                                for i in 0..len {
                                    p[i] = p[i] - lr * gd(g[i], p[i]);
                                }
                            }
                            Some(buf) => {
                                let buf = &mut buf[..len];
                                // A fresh buffer (zeros) becomes the gradient itself; nesterov
                                // steps by d + momentum·buf, plain momentum by buf.
                                let (keep, take) =
                                    if fresh { (T::zero(), T::one()) } else { (mo, damp) };
                                let (kd, km) =
                                    if nesterov { (T::one(), mo) } else { (T::zero(), T::one()) };
                                for i in 0..len {
                                    let d = gd(g[i], p[i]);
                                    let m = keep * buf[i] + take * d;
                                    buf[i] = m;
                                    p[i] = p[i] - lr * (kd * d + km * m);
                                }
                            }
                        }
                    }
                    Rule::Adam { lr, b1, b2, eps, wd, amsgrad, maximize, decoupled } => {
                        let (bc1, bc2) = (1.0 - b1.powf(step), 1.0 - b2.powf(step));
                        let (step_size, bc2_sqrt) = (c(lr / bc1), c(bc2.sqrt()));
                        let decay = c(if decoupled { 1.0 - lr * wd } else { 1.0 });
                        let (k1, b2, k2, eps) = (c(1.0 - b1), c(b2), c(1.0 - b2), c(eps));
                        let gd = grad(maximize, if decoupled { 0.0 } else { wd });
                        let (m, rest) = st.split_first_mut().expect("adam state");
                        let (v, rest) = rest.split_first_mut().expect("adam state");
                        let (m, v) = (&mut m[..len], &mut v[..len]);
                        match rest.first_mut().filter(|_| amsgrad) {
                            None => {
                                for i in 0..len {
                                    p[i] = p[i] * decay;
                                    let d = gd(g[i], p[i]);
                                    m[i] = m[i] + (d - m[i]) * k1;
                                    v[i] = b2 * v[i] + k2 * d * d;
                                    p[i] = p[i] - step_size * m[i] / (v[i].sqrt() / bc2_sqrt + eps);
                                }
                            }
                            Some(vm) => {
                                let vm = &mut vm[..len];
                                for i in 0..len {
                                    p[i] = p[i] * decay;
                                    let d = gd(g[i], p[i]);
                                    m[i] = m[i] + (d - m[i]) * k1;
                                    v[i] = b2 * v[i] + k2 * d * d;
                                    vm[i] = vm[i].max(v[i]);
                                    p[i] =
                                        p[i] - step_size * m[i] / (vm[i].sqrt() / bc2_sqrt + eps);
                                }
                            }
                        }
                    }
                    Rule::RmsProp { lr, alpha, eps, wd, momentum, centered, maximize } => {
                        let gd = grad(maximize, wd);
                        let (lr, al, k, mo, eps) =
                            (c(lr), c(alpha), c(1.0 - alpha), c(momentum), c(eps));
                        let mut it = st.iter_mut();
                        let sq = &mut it.next().expect("rmsprop state")[..len];
                        let mut buf =
                            if momentum > 0.0 { it.next().map(|x| &mut x[..len]) } else { None };
                        let mut ga = if centered { it.next().map(|x| &mut x[..len]) } else { None };
                        for i in 0..len {
                            let d = gd(g[i], p[i]);
                            sq[i] = al * sq[i] + k * d * d;
                            let avg = match ga.as_deref_mut() {
                                Some(ga) => {
                                    ga[i] = ga[i] + (d - ga[i]) * k;
                                    (sq[i] - ga[i] * ga[i]).sqrt() + eps
                                }
                                None => sq[i].sqrt() + eps,
                            };
                            match buf.as_deref_mut() {
                                Some(buf) => {
                                    buf[i] = mo * buf[i] + d / avg;
                                    p[i] = p[i] - lr * buf[i];
                                }
                                None => p[i] = p[i] - lr * d / avg,
                            }
                        }
                    }
                    Rule::Adagrad { lr, lr_decay, wd, eps, maximize } => {
                        let gd = grad(maximize, wd);
                        let (clr, eps) = (c(lr / (1.0 + (step - 1.0) * lr_decay)), c(eps));
                        let sum = &mut st[0][..len];
                        for i in 0..len {
                            let d = gd(g[i], p[i]);
                            sum[i] = sum[i] + d * d;
                            p[i] = p[i] - clr * d / (sum[i].sqrt() + eps);
                        }
                    }
                    Rule::Adamax { lr, b1, b2, eps, wd, maximize } => {
                        let gd = grad(maximize, wd);
                        let (clr, k1, b2, eps) =
                            (c(lr / (1.0 - b1.powf(step))), c(1.0 - b1), c(b2), c(eps));
                        let (m, rest) = st.split_first_mut().expect("adamax state");
                        let (m, u) = (&mut m[..len], &mut rest[0][..len]);
                        for i in 0..len {
                            let d = gd(g[i], p[i]);
                            m[i] = m[i] + (d - m[i]) * k1;
                            u[i] = (b2 * u[i]).max(d.abs() + eps);
                            p[i] = p[i] - clr * m[i] / u[i];
                        }
                    }
                    Rule::NAdam { lr, b1, b2, eps, wd, momentum_decay, decoupled, maximize } => {
                        let bc2 = c(1.0 - b2.powf(step));
                        let mu = b1 * (1.0 - 0.5 * 0.96f64.powf(step * momentum_decay));
                        let mu_next =
                            b1 * (1.0 - 0.5 * 0.96f64.powf((step + 1.0) * momentum_decay));
                        let (k1, k2) = (
                            c(lr * (1.0 - mu) / (1.0 - mu_product)),
                            c(lr * mu_next / (1.0 - mu_product * mu_next)),
                        );
                        let decay = c(if decoupled { 1.0 - lr * wd } else { 1.0 });
                        let (kb1, b2, kb2, eps) = (c(1.0 - b1), c(b2), c(1.0 - b2), c(eps));
                        let gd = grad(maximize, if decoupled { 0.0 } else { wd });
                        let (m, rest) = st.split_first_mut().expect("nadam state");
                        let (m, v) = (&mut m[..len], &mut rest[0][..len]);
                        for i in 0..len {
                            p[i] = p[i] * decay;
                            let d = gd(g[i], p[i]);
                            m[i] = m[i] + (d - m[i]) * kb1;
                            v[i] = b2 * v[i] + kb2 * d * d;
                            let denom = (v[i] / bc2).sqrt() + eps;
                            p[i] = p[i] - k1 * d / denom - k2 * m[i] / denom;
                        }
                    }
                    Rule::RAdam { lr, b1, b2, eps, wd, decoupled, maximize } => {
                        let (bc1, bc2) = (1.0 - b1.powf(step), 1.0 - b2.powf(step));
                        let rho_inf = 2.0 / (1.0 - b2) - 1.0;
                        let rho_t = rho_inf - 2.0 * step * b2.powf(step) / bc2;
                        let rect = (rho_t > 5.0).then(|| {
                            ((rho_t - 4.0) * (rho_t - 2.0) * rho_inf
                                / ((rho_inf - 4.0) * (rho_inf - 2.0) * rho_t))
                                .sqrt()
                        });
                        let decay = c(if decoupled { 1.0 - lr * wd } else { 1.0 });
                        let (kb1, cb2, kb2, ceps, cbc1) =
                            (c(1.0 - b1), c(b2), c(1.0 - b2), c(eps), c(bc1));
                        let (kr, klr) = (rect.map(|r| c(lr * r * bc2.sqrt())), c(lr));
                        let gd = grad(maximize, if decoupled { 0.0 } else { wd });
                        let (m, rest) = st.split_first_mut().expect("radam state");
                        let (m, v) = (&mut m[..len], &mut rest[0][..len]);
                        for i in 0..len {
                            p[i] = p[i] * decay;
                            let d = gd(g[i], p[i]);
                            m[i] = m[i] + (d - m[i]) * kb1;
                            v[i] = cb2 * v[i] + kb2 * d * d;
                            let mhat = m[i] / cbc1;
                            p[i] = p[i]
                                - match kr {
                                    Some(kr) => mhat * kr / (v[i].sqrt() + ceps),
                                    None => mhat * klr,
                                };
                        }
                    }
                    Rule::Adadelta { lr, rho, eps, wd, maximize } => {
                        let gd = grad(maximize, wd);
                        let (lr, rho, k, eps) = (c(lr), c(rho), c(1.0 - rho), c(eps));
                        let (sq, rest) = st.split_first_mut().expect("adadelta state");
                        let (sq, acc) = (&mut sq[..len], &mut rest[0][..len]);
                        for i in 0..len {
                            let d = gd(g[i], p[i]);
                            sq[i] = rho * sq[i] + k * d * d;
                            let delta = (acc[i] + eps).sqrt() / (sq[i] + eps).sqrt() * d;
                            acc[i] = rho * acc[i] + k * delta * delta;
                            p[i] = p[i] - lr * delta;
                        }
                    }
                    Rule::Asgd { lambd, wd, maximize, .. } => {
                        // eta and mu from before this step, as PyTorch reads them.
                        let (eta, mu) = (extra[1], extra[2]);
                        let gd = grad(maximize, wd);
                        let (decay, ceta, cmu) = (c(1.0 - lambd * eta), c(eta), c(mu));
                        let ax = &mut st[0][..len];
                        for i in 0..len {
                            let d = gd(g[i], p[i]);
                            p[i] = p[i] * decay - ceta * d;
                        }
                        if mu == 1.0 {
                            ax.copy_from_slice(p);
                        } else {
                            for i in 0..len {
                                ax[i] = ax[i] + (p[i] - ax[i]) * cmu;
                            }
                        }
                    }
                    Rule::Rprop { eta_minus, eta_plus, step_min, step_max, maximize } => {
                        let sign = if maximize { -T::one() } else { T::one() };
                        let (em, ep) = (c(eta_minus), c(eta_plus));
                        let (lo, hi) = (c(step_min), c(step_max));
                        let (prev, rest) = st.split_first_mut().expect("rprop state");
                        let (prev, size) = (&mut prev[..len], &mut rest[0][..len]);
                        for i in 0..len {
                            let d = sign * g[i];
                            let s = d * prev[i];
                            let f = if s > T::zero() {
                                ep
                            } else if s < T::zero() {
                                em
                            } else {
                                T::one()
                            };
                            size[i] = (size[i] * f).max(lo).min(hi);
                            // PyTorch zeroes the gradient where the factor is eta_minus.
                            let d = if f == em { T::zero() } else { d };
                            let sg = if d > T::zero() {
                                T::one()
                            } else if d < T::zero() {
                                -T::one()
                            } else {
                                T::zero()
                            };
                            p[i] = p[i] - sg * size[i];
                            prev[i] = d;
                        }
                    }
                }
            },
        )
    });
}
