//! Padding on the CPU as one gather: each padded dim maps every output
//! position to a source index, or to -1 for the fill value. F.pad builds the
//! maps of its modes (constant and cropping, reflect, replicate, circular);
//! the backward sums the gradient back over each map, and that sum's own
//! backward is the gather again, so gradients of any order stay exact.

use crate::autograd::{self, Backward, Node};
use crate::backend::cpu::pad as kernel;
use crate::backend::cpu::P;
use crate::bail;
use crate::error::Result;
use crate::ops::resample::{along, Taps};
use crate::tensor::layout::{fmt_shape, Shape};
use crate::tensor::{Scalar, Tensor};
use std::sync::Arc;

/// One entry per dim: the source index of each output position, or None where
/// the dim is not padded.
pub type Maps = Arc<Vec<Option<Vec<i64>>>>;

/// `t` gathered through `maps` (-1 entries take `value`), as a new tensor.
pub fn pad_gather(t: &Tensor, maps: Maps, value: Scalar) -> Result<Tensor> {
    if t.is_gpu() || t.dtype().is_complex() || maps.len() != t.ndim() {
        bail!(
            Runtime,
            "internal: pad gather takes a real CPU tensor and one map per dim, got a {} {} tensor \
             of shape {} and {} maps",
            t.device().name(),
            t.dtype().name(),
            fmt_shape(t.shape()),
            maps.len()
        );
    }
    for (d, m) in maps.iter().enumerate() {
        let n = t.shape()[d] as i64;
        if let Some(bad) = m.iter().flatten().find(|&&i| i < -1 || i >= n) {
            bail!(
                Index,
                "pad: source index {} is out of range for dimension {} of size {}",
                bad,
                d,
                n
            );
        }
    }
    autograd::record(
        &[t],
        || gather(t, &maps, value),
        |_| Ok(PadBackward { maps: maps.clone(), in_shape: t.shape().clone() }.into()),
    )
}

fn gather(t: &Tensor, maps: &Maps, value: Scalar) -> Result<Tensor> {
    let l = t.layout();
    let offs: Vec<Vec<isize>> = maps
        .iter()
        .enumerate()
        .map(|(d, m)| match m {
            Some(m) => m
                .iter()
                .map(|&i| if i < 0 { kernel::FILL } else { i as isize * l.strides[d] })
                .collect(),
            None => (0..l.shape[d] as isize).map(|i| i * l.strides[d]).collect(),
        })
        .collect();
    let shape: Vec<usize> = offs.iter().map(Vec::len).collect();
    let out = Tensor::for_output(&shape, t.dtype())?;
    if out.numel() > 0 {
        crate::dispatch_all!(t.dtype(), T => {
            // SAFETY: out holds `shape`; the maps were checked against t's shape,
            // so every offset stays inside t's storage.
            unsafe { kernel::gather(P(out.ptr::<T>()?), P(t.ptr::<T>()?), &offs, value.cast::<T>()) }
        });
    }
    Ok(out)
}

/// The adjoint of `pad_gather`: `g` summed back over the maps into `in_shape`.
fn pad_sum(g: &Tensor, maps: &Maps, in_shape: &Shape) -> Result<Tensor> {
    autograd::record(
        &[g],
        || {
            // Maps that read each source index at most once (constant padding and
            // cropping) have a gather as their adjoint: one pass, no sums.
            let inverse: Option<Vec<Option<Vec<i64>>>> = maps
                .iter()
                .zip(in_shape)
                .map(|(m, &n)| match m {
                    None => Some(None),
                    Some(m) => {
                        let mut inv = vec![-1i64; n];
                        for (o, &i) in m.iter().enumerate().filter(|(_, &i)| i >= 0) {
                            if inv[i as usize] >= 0 {
                                return None;
                            }
                            inv[i as usize] = o as i64;
                        }
                        Some(Some(inv))
                    }
                })
                .collect();
            if let Some(inv) = inverse {
                return gather(g, &Arc::new(inv), Scalar::Int(0));
            }
            let mut cur = g.clone();
            for (d, m) in maps.iter().enumerate() {
                let Some(m) = m else { continue };
                let taps = Taps { idx: m.clone(), w: None, k: 1, n: in_shape[d] };
                cur = along(&cur, d, &taps, true)?;
            }
            Ok(cur)
        },
        |_| Ok(PadSumBackward { maps: maps.clone() }.into()),
    )
}

#[derive(Clone)]
pub struct PadBackward {
    maps: Maps,
    in_shape: Shape,
}

impl Backward for PadBackward {
    fn name(&self) -> String {
        "PadBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(pad_sum(&grads[0], &self.maps, &self.in_shape)?)])
    }
}

#[derive(Clone)]
pub struct PadSumBackward {
    maps: Maps,
}

impl Backward for PadSumBackward {
    fn name(&self) -> String {
        "PadBackwardBackward0".to_string()
    }
    fn apply(&self, _: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(pad_gather(&grads[0], self.maps.clone(), Scalar::Int(0))?)])
    }
}
