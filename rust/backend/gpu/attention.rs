//! Launcher for shaders/attention.wgsl: fused attention forward (output and
//! row logsumexp) and its three backward passes. q, k, v, dO, the output and
//! the gradients go in with their strides (columns contiguous). Every tensor
//! is bound as one window, so a tensor beyond the binding limit is refused.

use super::codes::flag;
use super::exec::{self, Bind, Variant};
use super::shaders::ATTENTION;
use crate::bail;
use crate::error::Result;
use crate::ops::attention::Spec;
use crate::tensor::{DType, Tensor};

crate::wgsl_flags! {
    /// Bits of `Params::flags`.
    pub struct AttnFlags = "ATTN" { CAUSAL = 1, MASK = 2, DROPOUT = 4 }
}

crate::wgsl_params! {
    /// Sizes, `AttnFlags`, scale and dropout, the mask's strides and offset,
    /// lse's offset, then each strided tensor's offset and batch, head and
    /// row strides (see shaders/attention.wgsl).
    pub struct Params in ATTENTION {
        n: u32, heads: u32, l: u32, s: u32, d: u32, dv: u32, flags: u32,
        scale: f32, rp: f32, thresh: u32, seed0: u32, seed1: u32,
        m_sb: u32, m_sh: u32, m_sl: u32, m_ss: u32, m_off: u32, lse_off: u32,
        lay: [u32; 28],
    }
}

/// Slots of the strided tensors in `Params::lay`.
#[derive(Clone, Copy)]
enum Slot {
    Q,
    K,
    V,
    G,
    O,
    /// ga: dk (dK/dV pass) or dq (dQ pass).
    A,
    /// gb: dv.
    B,
}

/// Output columns a workgroup's 8 threads per row hold (4 groups of 4 each).
pub const MAX_HEAD_DIM: usize = 128;
/// Rows (query rows, or keys for dK/dV) of a workgroup's block.
const BR: usize = 64;

/// Whether the GPU kernels take these head dims.
pub fn supports(d: usize, dv: usize) -> bool {
    d.max(dv) <= MAX_HEAD_DIM
}

/// The binding of `t` (all of its elements) and the element it starts at in it.
fn bind(t: &Tensor) -> Result<(Bind<'_>, u32)> {
    let (lo, hi) = t.layout().span();
    let (lo, hi) = (lo as usize, (hi as usize).max(lo as usize + 1));
    let (b, base) = Bind::window(t.storage().gpu_buffer()?, lo, hi - 1, 4)?;
    Ok((b, (t.layout().offset - base) as u32))
}

/// Binds a (B, H, rows, cols) tensor (non-negative strides, contiguous
/// columns) and records its offset and strides in its slot.
fn bind_strided<'a>(p: &mut Params, slot: Slot, t: &'a Tensor) -> Result<Bind<'a>> {
    let (b, off) = bind(t)?;
    let st = &t.layout().strides;
    let at = 4 * slot as usize;
    p.lay[at..at + 4].copy_from_slice(&[off, st[0] as u32, st[1] as u32, st[2] as u32]);
    Ok(b)
}

fn params(sp: &Spec) -> Result<Params> {
    if !supports(sp.d, sp.dv) {
        bail!(
            NotImplemented,
            "scaled_dot_product_attention on the GPU: head dims {} and {} exceed {}",
            sp.d,
            sp.dv,
            MAX_HEAD_DIM
        );
    }
    let drop = sp.dropout;
    let flags = flag(sp.causal, AttnFlags::CAUSAL) | flag(drop.is_some(), AttnFlags::DROPOUT);
    let st = sp.mask_strides.map(|s| s as u32);
    Ok(Params {
        n: (sp.b * sp.h) as u32,
        heads: sp.h as u32,
        l: sp.l as u32,
        s: sp.s as u32,
        d: sp.d as u32,
        dv: sp.dv as u32,
        flags,
        scale: sp.scale as f32,
        rp: drop.map_or(1.0, |d| d.rp as f32),
        thresh: drop.map_or(0, |d| d.thresh),
        seed0: drop.map_or(0, |d| d.seed[0]),
        seed1: drop.map_or(0, |d| d.seed[1]),
        m_sb: st[0],
        m_sh: st[1],
        m_sl: st[2],
        m_ss: st[3],
        ..Default::default()
    })
}

/// Binds the mask (a dummy without one) and sets its flag and offset.
fn mask_bind<'a>(p: &mut Params, mask: Option<&'a Tensor>) -> Result<Bind<'a>> {
    Ok(match mask {
        Some(m) => {
            let (b, off) = bind(m)?;
            p.flags |= AttnFlags::MASK;
            p.m_off = off;
            b
        }
        None => Bind::whole(exec::dummy()?),
    })
}

fn check_f32(ts: &[&Tensor]) -> Result<()> {
    if ts.iter().any(|t| t.dtype() != DType::F32) {
        bail!(Runtime, "internal error: fused attention on the GPU takes float32 tensors");
    }
    Ok(())
}

/// out (B, H, L, dv) and a contiguous lse (B, H, L) from q, k, v (and mask).
pub fn forward(
    sp: &Spec,
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    mask: Option<&Tensor>,
    out: &Tensor,
    lse: &Tensor,
) -> Result<()> {
    check_f32(&[q, k, v, out, lse])?;
    let mut p = params(sp)?;
    let (qb, kb, vb) = (
        bind_strided(&mut p, Slot::Q, q)?,
        bind_strided(&mut p, Slot::K, k)?,
        bind_strided(&mut p, Slot::V, v)?,
    );
    let ob = bind_strided(&mut p, Slot::O, out)?;
    let (lb, lse_off) = bind(lse)?;
    p.lse_off = lse_off;
    let mb = mask_bind(&mut p, mask)?;
    let dummy = Bind::whole(exec::dummy()?);
    // The shared loaders name g, never read here: v stands in (read-only too).
    let binds = [qb, kb, vb, mb, vb, ob, lb, dummy, dummy, dummy];
    let groups = sp.b * sp.h * sp.l.div_ceil(BR);
    exec::dispatch_binds("attention_forward", Variant::F32, &binds, &p, exec::grid_rows(groups))
}

/// dq, dk, dv (fresh) from the saved q, k, v, out, lse and the output
/// gradient g.
pub fn backward(
    sp: &Spec,
    [q, k, v, out, lse, g]: [&Tensor; 6],
    mask: Option<&Tensor>,
    [dq, dk, dv]: [&Tensor; 3],
) -> Result<()> {
    check_f32(&[q, k, v, out, lse, g, dq, dk, dv])?;
    let mut p = params(sp)?;
    // g is read while out is bound read-write: never the same buffer twice.
    let g = if g.storage().gpu_buffer()? == out.storage().gpu_buffer()? {
        crate::ops::copy::contiguous_clone(g)?
    } else {
        g.clone()
    };
    let (qb, kb, vb) = (
        bind_strided(&mut p, Slot::Q, q)?,
        bind_strided(&mut p, Slot::K, k)?,
        bind_strided(&mut p, Slot::V, v)?,
    );
    let (ob, gb) = (bind_strided(&mut p, Slot::O, out)?, bind_strided(&mut p, Slot::G, &g)?);
    let (lb, lse_off) = bind(lse)?;
    p.lse_off = lse_off;
    let mb = mask_bind(&mut p, mask)?;
    let n = sp.b * sp.h;
    let rows = Tensor::empty_on(&[n * sp.l], DType::F32, q.device())?;
    let (rb, _) = bind(&rows)?;
    let dummy = Bind::whole(exec::dummy()?);
    let binds = |p: &Params, a, b| ([qb, kb, vb, mb, gb, ob, lb, rb, a, b], *p);
    let (dot, pd) = binds(&p, dummy, dummy);
    exec::dispatch_binds(
        "attention_backward_dot",
        Variant::F32,
        &dot,
        &pd,
        exec::grid_1d(n * sp.l),
    )?;
    let (dkb, dvb) = (bind_strided(&mut p, Slot::A, dk)?, bind_strided(&mut p, Slot::B, dv)?);
    let (kv, pkv) = binds(&p, dkb, dvb);
    let kv_groups = n * sp.s.div_ceil(BR);
    exec::dispatch_binds(
        "attention_backward_kv",
        Variant::F32,
        &kv,
        &pkv,
        exec::grid_rows(kv_groups),
    )?;
    let dqb = bind_strided(&mut p, Slot::A, dq)?;
    let (qd, pq) = binds(&p, dqb, dummy);
    let q_groups = n * sp.l.div_ceil(BR);
    exec::dispatch_binds("attention_backward_q", Variant::F32, &qd, &pq, exec::grid_rows(q_groups))
}
