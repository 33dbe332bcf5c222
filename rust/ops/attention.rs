//! Fused (flash) scaled-dot-product attention over (B, H, L, E) tensors:
//! validate, run the CPU or GPU kernel, record the backward. The forward
//! keeps only the output and the row logsumexp; the backward recomputes the
//! scores block by block, so no (B, H, L, S) tensor is ever allocated. Under
//! create_graph the backward is written with recorded ops instead (it
//! materializes the scores and the dropout factors, as a double backward of
//! attention must).
//! rumus.nn.functional.scaled_dot_product_attention decides when to come here.

use super::copy::{contiguous, to_device};
use super::elementwise::{unary, Unary};
use super::Operand;
use crate::autograd::{self, math, mode, Backward, Node, SavedTensor};
use crate::backend::cpu::attention::{Dropout, Heads, Problem};
use crate::backend::cpu::random::default_generator;
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::tensor::layout::fmt_shape;
use crate::tensor::{DType, Scalar, Tensor};
use std::sync::Arc;

/// Everything but the tensors: sizes, scale, masks, dropout.
#[derive(Clone, Copy)]
pub struct Spec {
    pub b: usize,
    pub h: usize,
    pub l: usize,
    pub s: usize,
    pub d: usize,
    pub dv: usize,
    pub scale: f64,
    pub causal: bool,
    /// The additive mask's (batch, head, row, col) strides, 0 where broadcast.
    pub mask_strides: [usize; 4],
    pub dropout: Option<Dropout>,
}

impl Spec {
    fn problem<T>(&self, mask: Option<&Tensor>) -> Result<Problem<T>>
    where
        T: crate::tensor::dtype::Element,
    {
        let st = self.mask_strides.map(|x| x as isize);
        Ok(Problem {
            n: self.b * self.h,
            heads: self.h,
            l: self.l,
            s: self.s,
            d: self.d,
            dv: self.dv,
            scale: self.scale,
            causal: self.causal,
            mask: mask.map(|m| m.ptr::<T>().map(|p| (P(p), st))).transpose()?,
            dropout: self.dropout,
        })
    }
}

/// `t` itself where the kernels read it in place (columns contiguous; no
/// negative stride, for the GPU's unsigned offsets), else a contiguous copy:
/// the head-split views of a projection go in without a transposing copy.
fn heads_operand(t: &Tensor) -> Result<Tensor> {
    let l = t.layout();
    if (l.shape[3] <= 1 || l.strides[3] == 1) && l.strides.iter().all(|&s| s >= 0) {
        Ok(t.clone())
    } else {
        contiguous(t)
    }
}

/// An uninitialized (B, H, rows, cols) result laid out in memory as `like`
/// is (its columns innermost): the output of head-split views of a
/// (B, L, H, E) projection is itself (B, L, H, E) in memory, so merging its
/// heads back is a view, and so are the gradients of such views.
fn like_heads(like: &Tensor, shape: [usize; 4]) -> Result<Tensor> {
    let mut order = like.layout().memory_order();
    order.retain(|&d| d != 3);
    order.push(3);
    Tensor::empty_in_order(&shape, &order, like.dtype(), like.device())
}

/// The CPU kernels' view of a (B, H, rows, cols) tensor.
fn heads<T: crate::tensor::dtype::Element>(t: &Tensor) -> Result<Heads<T>> {
    let st = &t.layout().strides;
    Ok(Heads { p: P(t.ptr::<T>()?), sb: st[0], sh: st[1], sr: st[2] })
}

fn dropout_of(p: f64, seed: u64) -> Dropout {
    Dropout {
        thresh: (p * 4_294_967_296.0).min(u32::MAX as f64) as u32,
        seed: [seed as u32, (seed >> 32) as u32],
        rp: 1.0 / (1.0 - p),
    }
}

/// softmax(q kᵀ · scale + mask) v with q (B, H, L, E), k (B, H, S, E),
/// v (B, H, S, Ev); `mask` is additive, of q's dtype, each dim 1 or the full
/// size of (B, H, L, S); dropout with `dropout_p` from `seed` (drawn from the
/// default generator when None). float32 and float64 on the CPU, float32 on the GPU.
#[allow(clippy::too_many_arguments)]
pub fn flash_attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    dropout_p: f64,
    causal: bool,
    scale: f64,
    seed: Option<u64>,
) -> Result<Tensor> {
    let op = "_flash_attention";
    let mut all = vec![q, k, v];
    all.extend(mask);
    let dev = super::same_device(op, &all)?;
    let dt = q.dtype();
    let ok = if dev.is_gpu() { dt == DType::F32 } else { matches!(dt, DType::F32 | DType::F64) };
    if !ok || all.iter().any(|t| t.dtype() != dt) {
        bail!(
            Runtime,
            "{}: unsupported dtypes {} on {:?}",
            op,
            all.iter().map(|t| t.dtype().name()).collect::<Vec<_>>().join(", "),
            dev
        );
    }
    let (qs, ks, vs) = (q.shape(), k.shape(), v.shape());
    if qs.len() != 4
        || ks.len() != 4
        || vs.len() != 4
        || qs[..2] != ks[..2]
        || ks[..3] != vs[..3]
        || qs[3] != ks[3]
    {
        bail!(Runtime, "{}: query {}, key {} and value {} must be (B, H, L, E), (B, H, S, E) and (B, H, S, Ev)", op, fmt_shape(qs), fmt_shape(ks), fmt_shape(vs));
    }
    if !(0.0..1.0).contains(&dropout_p) {
        bail!(Runtime, "{}: dropout_p must be in [0, 1), got {}", op, dropout_p);
    }
    let full = [qs[0], qs[1], qs[2], ks[2]];
    let mut mask_strides = [0usize; 4];
    let mask = match mask {
        Some(m) => {
            if m.ndim() != 4 || m.shape().iter().zip(full).any(|(&a, b)| a != 1 && a != b) {
                bail!(
                    Runtime,
                    "{}: attn_mask {} does not broadcast to {}",
                    op,
                    fmt_shape(m.shape()),
                    fmt_shape(&full)
                );
            }
            let mut st = 1;
            for i in (0..4).rev() {
                mask_strides[i] = if m.shape()[i] == 1 { 0 } else { st };
                st *= m.shape()[i];
            }
            Some(contiguous(m)?)
        }
        None => None,
    };
    let dropout = (dropout_p > 0.0).then(|| {
        dropout_of(
            dropout_p,
            seed.unwrap_or_else(|| crate::tensor::lock(&default_generator()).next_key()),
        )
    });
    let spec = Spec {
        b: qs[0],
        h: qs[1],
        l: qs[2],
        s: ks[2],
        d: qs[3],
        dv: vs[3],
        scale,
        causal,
        mask_strides,
        dropout,
    };
    let lse_slot = std::sync::Mutex::new(None);
    autograd::record(
        &[q, k, v],
        || {
            let (qc, kc, vc) = (heads_operand(q)?, heads_operand(k)?, heads_operand(v)?);
            let out = like_heads(&qc, [spec.b, spec.h, spec.l, spec.dv])?;
            let lse = Tensor::empty_on(&[spec.b, spec.h, spec.l], dt, dev)?;
            if dev.is_gpu() {
                crate::backend::gpu::attention::forward(
                    &spec,
                    &qc,
                    &kc,
                    &vc,
                    mask.as_ref(),
                    &out,
                    &lse,
                )?;
            } else {
                crate::dispatch_float!(dt, T => {
                    let pb = spec.problem::<T>(mask.as_ref())?;
                    let [qh, kh, vh, oh] = [&qc, &kc, &vc, &out].map(heads::<T>);
                    // SAFETY: tensors of the shapes validated above; out and lse are fresh.
                    unsafe { pb.forward(qh?, kh?, vh?, oh?, P(lse.ptr::<T>()?)) };
                });
            }
            *crate::tensor::lock(&lse_slot) = Some(lse);
            Ok(out)
        },
        |out| {
            Ok(FlashAttentionBackward {
                q: SavedTensor::input(q),
                k: SavedTensor::input(k),
                v: SavedTensor::input(v),
                out: SavedTensor::output(out, 0),
                lse: crate::tensor::lock(&lse_slot).take().expect("forward ran"),
                mask: mask.clone(),
                spec,
            }
            .into())
        },
    )
}

#[derive(Clone)]
pub struct FlashAttentionBackward {
    q: SavedTensor,
    k: SavedTensor,
    v: SavedTensor,
    out: SavedTensor,
    lse: Tensor,
    mask: Option<Tensor>,
    spec: Spec,
}

impl FlashAttentionBackward {
    /// The gradients written with recorded ops, for create_graph (the scores
    /// are materialized here). Rows with every key masked have zero weights.
    fn composite(&self, q: &Tensor, k: &Tensor, v: &Tensor, g: &Tensor) -> Result<[Tensor; 3]> {
        use super::linalg::matmul;
        use super::shape::transpose;
        let sp = &self.spec;
        let dead = math::reshape(&unary(Unary::IsInf, &self.lse)?, &[sp.b, sp.h, sp.l, 1])?;
        let mut s = math::scale(&matmul(q, &transpose(k, -2, -1)?)?, sp.scale)?;
        if let Some(m) = &self.mask {
            let zero = Operand::S(Scalar::Float(0.0));
            s = math::add(&s, &super::elementwise::where_(&dead, &zero, &Operand::T(m.clone()))?)?;
        }
        if sp.causal {
            let above: Vec<bool> = (0..sp.l).flat_map(|i| (0..sp.s).map(move |j| j > i)).collect();
            let above = to_device(&Tensor::from_vec(above, &[sp.l, sp.s])?, q.device())?;
            s = super::elementwise::masked_fill(
                &s,
                &above,
                &Operand::S(Scalar::Float(f64::NEG_INFINITY)),
                false,
            )?;
        }
        let p = super::softmax::softmax(&s, -1, None, false)?;
        let p = super::elementwise::masked_fill(&p, &dead, &Operand::S(Scalar::Float(0.0)), false)?;
        // The forward's dropout factors, regenerated from the same hash.
        let fac = match sp.dropout {
            Some(d) => {
                let f = Tensor::from_vec(
                    d.factors(sp.b * sp.h, sp.l, sp.s),
                    &[sp.b, sp.h, sp.l, sp.s],
                )?;
                Some(to_device(&super::copy::to_dtype(&f, q.dtype())?, q.device())?)
            }
            None => None,
        };
        let pd = match &fac {
            Some(f) => math::mul(&p, f)?,
            None => p.clone(),
        };
        let dv = matmul(&transpose(&pd, -2, -1)?, g)?;
        let mut dp = matmul(g, &transpose(v, -2, -1)?)?;
        if let Some(f) = &fac {
            dp = math::mul(&dp, f)?;
        }
        let row = super::reduce::sum(&math::mul(&dp, &p)?, Some(&[-1]), true, None)?;
        let ds = math::scale(&math::mul(&p, &math::sub(&dp, &row)?)?, sp.scale)?;
        Ok([matmul(&ds, k)?, matmul(&transpose(&ds, -2, -1)?, q)?, dv])
    }
}

impl Backward for FlashAttentionBackward {
    fn name(&self) -> String {
        "ScaledDotProductFlashAttentionBackward0".into()
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let (q, k, v) = (self.q.unpack(node)?, self.k.unpack(node)?, self.v.unpack(node)?);
        let g = super::copy::to_dtype(&grads[0], q.dtype())?;
        if mode::is_grad_enabled() {
            return Ok(self.composite(&q, &k, &v, &g)?.into_iter().map(Some).collect());
        }
        let out = self.out.unpack(node)?;
        let [qc, kc, vc, gc] = [&q, &k, &v, &g].map(heads_operand);
        let (qc, kc, vc, gc) = (qc?, kc?, vc?, gc?);
        let (dt, dev) = (q.dtype(), q.device());
        let shape4 = |t: &Tensor| [t.shape()[0], t.shape()[1], t.shape()[2], t.shape()[3]];
        let dq = like_heads(&qc, shape4(&qc))?;
        let dk = like_heads(&kc, shape4(&kc))?;
        let dv = like_heads(&vc, shape4(&vc))?;
        if dev.is_gpu() {
            crate::backend::gpu::attention::backward(
                &self.spec,
                [&qc, &kc, &vc, &out, &self.lse, &gc],
                self.mask.as_ref(),
                [&dq, &dk, &dv],
            )?;
        } else {
            crate::dispatch_float!(dt, T => {
                let pb = self.spec.problem::<T>(self.mask.as_ref())?;
                let [qh, kh, vh, oh, gh] = [&qc, &kc, &vc, &out, &gc].map(heads::<T>);
                let [dqh, dkh, dvh] = [&dq, &dk, &dv].map(heads::<T>);
                // SAFETY: tensors of the forward's shapes; dq, dk, dv are fresh.
                unsafe {
                    pb.backward([qh?, kh?, vh?, oh?, gh?], P(self.lse.ptr::<T>()?), [dqh?, dkh?, dvh?])
                };
            });
        }
        Ok(vec![Some(dq), Some(dk), Some(dv)])
    }
}
