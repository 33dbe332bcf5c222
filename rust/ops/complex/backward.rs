//! Backward of the complex ops, written with recorded tensor ops (so they
//! differentiate again). For a holomorphic f the gradient is g·conj(f'(z));
//! for a real function of z (abs, angle) it is dL/dx + i dL/dy.

use super::{binary, conj, from_parts, imag, real, scalar, unary, view_as_complex, view_as_real};
use super::{CBinary, CUnary};
use crate::autograd::{math, Backward, Node, SavedTensor};
use crate::error::Result;
use crate::ops::elementwise::{self as ew, Binary};
use crate::ops::Operand;
use crate::tensor::Tensor;
use std::sync::Arc;

#[derive(Clone)]
pub enum ComplexBackward {
    ViewAsReal,
    ViewAsComplex,
    /// complex(real, imag) or polar(abs, angle).
    Parts {
        polar: bool,
        a: SavedTensor,
        b: SavedTensor,
        out: SavedTensor,
    },
    Unary {
        op: CUnary,
        x: SavedTensor,
        out: SavedTensor,
    },
    Binary {
        op: CBinary,
        a: SavedTensor,
        b: SavedTensor,
        out: SavedTensor,
    },
}

impl ComplexBackward {
    pub fn parts(a: &Tensor, b: &Tensor, out: &Tensor, polar: bool) -> crate::autograd::BackwardOp {
        let (a, b) = (SavedTensor::input(a), SavedTensor::input(b));
        ComplexBackward::Parts { polar, a, b, out: SavedTensor::output(out, 0) }.into()
    }
    pub fn unary(op: CUnary, x: &Tensor, out: &Tensor) -> crate::autograd::BackwardOp {
        ComplexBackward::Unary { op, x: SavedTensor::input(x), out: SavedTensor::output(out, 0) }
            .into()
    }
    pub fn binary(
        op: CBinary,
        a: &Tensor,
        b: &Tensor,
        out: &Tensor,
    ) -> crate::autograd::BackwardOp {
        let (a, b) = (SavedTensor::input(a), SavedTensor::input(b));
        ComplexBackward::Binary { op, a, b, out: SavedTensor::output(out, 0) }.into()
    }
}

/// Any two tensors (real or complex) multiplied, with promotion.
fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ew::binary(Binary::Mul, &Operand::T(a.clone()), &Operand::T(b.clone()), None)
}
fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    ew::binary(Binary::Div, &Operand::T(a.clone()), &Operand::T(b.clone()), None)
}
fn cscale(a: &Tensor, re: f64, im: f64) -> Result<Tensor> {
    binary(CBinary::Mul, a, &scalar(re, im, a.dtype())?)
}
fn cadd(a: &Tensor, re: f64) -> Result<Tensor> {
    binary(CBinary::Add, a, &scalar(re, 0.0, a.dtype())?)
}
/// g·conj(d): the gradient through a holomorphic op with derivative d.
fn through(g: &Tensor, d: &Tensor) -> Result<Tensor> {
    mul(g, &conj(d)?)
}
/// |z| with zeros replaced by ones, and the mask of non-zeros (real dtype).
fn safe_abs(z: &Tensor) -> Result<(Tensor, Tensor)> {
    let r = unary(CUnary::Abs, z)?;
    let zero = ew::binary(
        Binary::Eq,
        &Operand::T(r.detach()),
        &Operand::S(crate::tensor::Scalar::Float(0.0)),
        None,
    )?;
    let zero = math::cast(&zero, r.dtype())?;
    Ok((math::add(&r, &zero)?, math::rsub_scalar(1.0, &zero)?))
}

impl Backward for ComplexBackward {
    fn name(&self) -> String {
        match self {
            ComplexBackward::ViewAsReal => "ViewAsRealBackward0".into(),
            ComplexBackward::ViewAsComplex => "ViewAsComplexBackward0".into(),
            ComplexBackward::Parts { polar: true, .. } => "PolarBackward0".into(),
            ComplexBackward::Parts { .. } => "ComplexBackward0".into(),
            ComplexBackward::Unary { op, .. } => format!("{:?}Backward0", op),
            ComplexBackward::Binary { op, .. } => format!("{:?}Backward0", op),
        }
    }

    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        let g = &grads[0];
        match self {
            ComplexBackward::ViewAsReal => {
                Ok(vec![Some(view_as_complex(&crate::ops::copy::contiguous(g)?)?)])
            }
            ComplexBackward::ViewAsComplex => Ok(vec![Some(view_as_real(g)?)]),
            ComplexBackward::Parts { polar, a, b, out } => {
                let (a, b) = (a.unpack(node)?, b.unpack(node)?);
                let (ga, gb) = if *polar {
                    // out = r·e^{iθ}: dL/dr = Re(conj(g)·e^{iθ}), dL/dθ = Re(conj(g)·i·out).
                    let ones = math::add_scalar(&math::scale(&a, 0.0)?, 1.0)?;
                    let e = from_parts(&ones, &b, true)?;
                    let cg = conj(g)?;
                    let out = out.unpack(node)?;
                    (real(&mul(&cg, &e)?)?, real(&mul(&cg, &cscale(&out, 0.0, 1.0)?)?)?)
                } else {
                    (real(g)?, imag(g)?)
                };
                Ok(vec![Some(math::sum_to(&ga, a.shape())?), Some(math::sum_to(&gb, b.shape())?)])
            }
            ComplexBackward::Unary { op, x, out } => {
                let x = x.unpack(node)?;
                let out = || out.unpack(node);
                use CUnary::*;
                let gx = match op {
                    Neg => math::neg(g)?,
                    Conj => conj(g)?,
                    Exp => through(g, &out()?)?,
                    Log => div(g, &conj(&x)?)?,
                    Sqrt => div(g, &cscale(&conj(&out()?)?, 2.0, 0.0)?)?,
                    Rsqrt => through(g, &cscale(&div(&out()?, &x)?, -0.5, 0.0)?)?,
                    Reciprocal => {
                        let o = out()?;
                        through(g, &cscale(&binary(CBinary::Mul, &o, &o)?, -1.0, 0.0)?)?
                    }
                    Square => through(g, &cscale(&x, 2.0, 0.0)?)?,
                    Sin => through(g, &unary(Cos, &x)?)?,
                    Cos => through(g, &cscale(&unary(Sin, &x)?, -1.0, 0.0)?)?,
                    Sinh => through(g, &unary(Cosh, &x)?)?,
                    Cosh => through(g, &unary(Sinh, &x)?)?,
                    Tan | Tanh => {
                        let o = out()?;
                        let o2 = binary(CBinary::Mul, &o, &o)?;
                        let s = if *op == Tan { 1.0 } else { -1.0 };
                        through(g, &cadd(&cscale(&o2, s, 0.0)?, 1.0)?)?
                    }
                    Sigmoid => {
                        let o = out()?;
                        through(
                            g,
                            &binary(CBinary::Mul, &o, &cadd(&cscale(&o, -1.0, 0.0)?, 1.0)?)?,
                        )?
                    }
                    // (g - Re(g·conj(s))·s)/|z|, zero where z = 0.
                    Sgn => {
                        let s = out()?;
                        let (r, nz) = safe_abs(&x)?;
                        let along = mul(&real(&mul(g, &conj(&s)?)?)?, &s)?;
                        let d = ew::binary(
                            Binary::Sub,
                            &Operand::T(g.clone()),
                            &Operand::T(along),
                            None,
                        )?;
                        mul(&div(&d, &r)?, &nz)?
                    }
                    Abs => mul(g, &unary(Sgn, &x)?)?,
                    // g·i·z/|z|², zero where z = 0.
                    Angle => {
                        let (r, _) = safe_abs(&x)?;
                        div(&mul(g, &cscale(&unary(Sgn, &x)?, 0.0, 1.0)?)?, &r)?
                    }
                };
                let gx = if gx.dtype() != x.dtype() { math::cast(&gx, x.dtype())? } else { gx };
                Ok(vec![Some(gx)])
            }
            ComplexBackward::Binary { op, a, b, out } => {
                let (a, b) = (a.unpack(node)?, b.unpack(node)?);
                let (na, nb) = (node.needs_input_grad(0), node.needs_input_grad(1));
                let (mut ga, mut gb) = (None, None);
                match op {
                    CBinary::Add | CBinary::Sub => {
                        ga = na.then(|| g.clone());
                        if nb {
                            gb = Some(if *op == CBinary::Sub { math::neg(g)? } else { g.clone() });
                        }
                    }
                    CBinary::Mul => {
                        if na {
                            ga = Some(through(g, &b)?);
                        }
                        if nb {
                            gb = Some(through(g, &a)?);
                        }
                    }
                    CBinary::Div => {
                        let g_b = div(g, &conj(&b)?)?;
                        if nb {
                            gb = Some(math::neg(&through(&g_b, &out.unpack(node)?)?)?);
                        }
                        ga = na.then_some(g_b);
                    }
                    CBinary::Pow => {
                        if na {
                            let bm1 = cadd(&b, -1.0)?;
                            let d = binary(CBinary::Mul, &binary(CBinary::Pow, &a, &bm1)?, &b)?;
                            ga = Some(through(g, &d)?);
                        }
                        if nb {
                            let d =
                                binary(CBinary::Mul, &out.unpack(node)?, &unary(CUnary::Log, &a)?)?;
                            gb = Some(through(g, &d)?);
                        }
                    }
                    CBinary::Eq | CBinary::Ne => {}
                }
                let fit = |g: Option<Tensor>, t: &Tensor| -> Result<Option<Tensor>> {
                    g.map(|g| math::sum_to(&g, t.shape())).transpose()
                };
                Ok(vec![fit(ga, &a)?, fit(gb, &b)?])
            }
        }
    }
}
