//! torch.special's functions outside the elementwise table: Bessel J0, J1,
//! Y0, Y1 and K0, K1 (plain and scaled), spherical j0, Airy Ai and erfcx of
//! one tensor; Hurwitz zeta, the regularized incomplete gammas and the
//! orthogonal polynomials of two (either may be a number). They compute in
//! float64 on the host (rust/backend/cpu/special_fns.rs); GPU tensors go
//! there and back. Gradients exist where PyTorch has them, written with these
//! same ops so that they differentiate again.

use super::copy::{contiguous, to_device, to_dtype};
use super::elementwise::{binary, where_, Binary};
use super::Operand;
use crate::autograd::{self, math, Backward, Node, SavedTensor};
use crate::backend::cpu::special_fns::{self as f, Poly};
use crate::bail;
use crate::error::Result;
use crate::tensor::dtype::default_float;
use crate::tensor::layout::broadcast_shapes;
use crate::tensor::{DType, Device, Scalar, Tensor};
use rayon::prelude::*;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpecialFn {
    AiryAi,
    BesselJ0,
    BesselJ1,
    BesselY0,
    BesselY1,
    BesselK0,
    BesselK1,
    ScaledBesselK0,
    ScaledBesselK1,
    SphericalBesselJ0,
    Erfcx,
    Zeta,
    Gammainc,
    Gammaincc,
    Poly(Poly),
    ShiftedPoly(Poly),
}

/// (PyTorch's name, the op), for the bindings and the error messages.
const NAMES: [(&str, SpecialFn); 26] = {
    use crate::backend::cpu::special_fns::Poly::*;
    use SpecialFn::*;
    [
        ("airy_ai", AiryAi),
        ("bessel_j0", BesselJ0),
        ("bessel_j1", BesselJ1),
        ("bessel_y0", BesselY0),
        ("bessel_y1", BesselY1),
        ("modified_bessel_k0", BesselK0),
        ("modified_bessel_k1", BesselK1),
        ("scaled_modified_bessel_k0", ScaledBesselK0),
        ("scaled_modified_bessel_k1", ScaledBesselK1),
        ("spherical_bessel_j0", SphericalBesselJ0),
        ("erfcx", Erfcx),
        ("zeta", Zeta),
        ("gammainc", Gammainc),
        ("gammaincc", Gammaincc),
        ("chebyshev_polynomial_t", Poly(ChebyshevT)),
        ("chebyshev_polynomial_u", Poly(ChebyshevU)),
        ("chebyshev_polynomial_v", Poly(ChebyshevV)),
        ("chebyshev_polynomial_w", Poly(ChebyshevW)),
        ("shifted_chebyshev_polynomial_t", ShiftedPoly(ChebyshevT)),
        ("shifted_chebyshev_polynomial_u", ShiftedPoly(ChebyshevU)),
        ("shifted_chebyshev_polynomial_v", ShiftedPoly(ChebyshevV)),
        ("shifted_chebyshev_polynomial_w", ShiftedPoly(ChebyshevW)),
        ("hermite_polynomial_h", Poly(HermiteH)),
        ("hermite_polynomial_he", Poly(HermiteHe)),
        ("laguerre_polynomial_l", Poly(LaguerreL)),
        ("legendre_polynomial_p", Poly(LegendreP)),
    ]
};

impl SpecialFn {
    pub fn from_name(name: &str) -> Option<SpecialFn> {
        NAMES.iter().find(|(n, _)| *n == name).map(|&(_, op)| op)
    }
    pub fn name(self) -> &'static str {
        NAMES.iter().find(|(_, op)| *op == self).map_or("special", |(n, _)| n)
    }
    /// Whether the op takes two arguments.
    pub fn binary(self) -> bool {
        use SpecialFn::*;
        matches!(self, Zeta | Gammainc | Gammaincc | Poly(_) | ShiftedPoly(_))
    }
    fn eval(self, a: f64, b: f64) -> f64 {
        use SpecialFn::*;
        match self {
            AiryAi => f::airy_ai(a),
            BesselJ0 => f::bessel_jy(0, false, a),
            BesselJ1 => f::bessel_jy(1, false, a),
            BesselY0 => f::bessel_jy(0, true, a),
            BesselY1 => f::bessel_jy(1, true, a),
            BesselK0 => f::modified_bessel_k0(a),
            BesselK1 => f::modified_bessel_k1(a),
            ScaledBesselK0 => f::scaled_modified_bessel_k0(a),
            ScaledBesselK1 => f::scaled_modified_bessel_k1(a),
            SphericalBesselJ0 => f::spherical_bessel_j0(a),
            Erfcx => f::erfcx(a),
            Zeta => f::zeta(a, b),
            Gammainc => f::gammainc(a, b, false),
            Gammaincc => f::gammainc(a, b, true),
            Poly(k) => f::poly(k, a, b),
            ShiftedPoly(k) => f::shifted(k, a, b),
        }
    }
    /// PyTorch differentiates the Bessel J, Y and K functions and erfcx in
    /// x, zeta in q and the incomplete gammas in x; the others' results do
    /// not require grad.
    fn differentiable(self) -> bool {
        use SpecialFn::*;
        matches!(
            self,
            BesselJ0
                | BesselJ1
                | BesselY0
                | BesselY1
                | BesselK0
                | BesselK1
                | Erfcx
                | Zeta
                | Gammainc
                | Gammaincc
        )
    }
}

/// `op` of `a` (and `b` for the binary ops): float64 math on the host,
/// results in the operands' promoted float dtype on their device.
pub fn special_fn(op: SpecialFn, a: &Operand, b: Option<&Operand>) -> Result<Tensor> {
    let name = op.name();
    let ops: Vec<&Operand> = std::iter::once(a).chain(b).collect();
    if ops.len() != 1 + op.binary() as usize {
        bail!(Type, "special.{}() takes {} arguments", name, 1 + op.binary() as usize);
    }
    let tensors: Vec<&Tensor> = ops
        .iter()
        .filter_map(|o| match o {
            Operand::T(t) => Some(t),
            Operand::S(_) => None,
        })
        .collect();
    if tensors.is_empty() {
        bail!(Type, "special.{}(): expected at least one Tensor argument", name);
    }
    let device = super::same_device(&format!("special.{}", name), &tensors)?;
    let mut dtype = super::result_type(&ops);
    if dtype.is_complex() {
        bail!(Type, "special.{}(): complex inputs are not supported (got {})", name, dtype.name());
    }
    if !dtype.is_float() {
        dtype = default_float();
    }
    // Numbers become 0-d tensors of the result dtype on the operands' device.
    let as_tensor = |o: &&Operand| -> Result<Tensor> {
        match o {
            Operand::T(t) => Ok(t.clone()),
            Operand::S(_) => to_device(&o.tensor_as(dtype)?, device),
        }
    };
    let ts: Vec<Tensor> = ops.iter().map(as_tensor).collect::<Result<_>>()?;
    let refs: Vec<&Tensor> = ts.iter().collect();
    let forward = || compute(op, &ts, dtype, device);
    if !op.differentiable() {
        let _off = crate::autograd::GradMode::set(false);
        return forward();
    }
    autograd::record(&refs, forward, |_| {
        Ok(SpecialFnBackward {
            op,
            a: SavedTensor::input(&ts[0]),
            b: ts.get(1).map(SavedTensor::input),
        }
        .into())
    })
}

fn compute(op: SpecialFn, ts: &[Tensor], dtype: DType, device: Device) -> Result<Tensor> {
    let shape = match ts {
        [a] => a.shape().to_vec(),
        [a, b] => broadcast_shapes(a.shape(), b.shape())?.to_vec(),
        _ => unreachable!("one or two operands"),
    };
    let host = |t: &Tensor| -> Result<Vec<f64>> {
        let t = to_dtype(&to_device(t, Device::Cpu)?, DType::F64)?;
        let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
        contiguous(&super::shape::expand(&t, &sizes)?)?.to_vec::<f64>()
    };
    let a = host(&ts[0])?;
    let b = if ts.len() > 1 { host(&ts[1])? } else { vec![0.0; a.len()] };
    let out: Vec<f64> = a.par_iter().zip(b.par_iter()).map(|(&x, &y)| op.eval(x, y)).collect();
    to_device(&to_dtype(&Tensor::from_vec(out, &shape)?, dtype)?, device)
}

#[derive(Clone)]
pub struct SpecialFnBackward {
    op: SpecialFn,
    a: SavedTensor,
    b: Option<SavedTensor>,
}

impl Backward for SpecialFnBackward {
    fn name(&self) -> String {
        // PyTorch's names: SpecialBesselJ0Backward0, SpecialZetaBackward0, ...
        let camel: String =
            self.op.name().split('_').map(|w| w[..1].to_ascii_uppercase() + &w[1..]).collect();
        format!("Special{}Backward0", camel)
    }
    fn apply(&self, node: &Arc<Node>, grads: &[Tensor]) -> Result<Vec<Option<Tensor>>> {
        use SpecialFn::*;
        let g = &grads[0];
        let x = self.a.unpack(node)?;
        let un = |op: SpecialFn, t: &Tensor| special_fn(op, &Operand::T(t.clone()), None);
        let bin = |op: SpecialFn, p: &Tensor, q: &Tensor| {
            special_fn(op, &Operand::T(p.clone()), Some(&Operand::T(q.clone())))
        };
        // f(x) - f1(x)/x (the J1, Y1 and K1 derivatives), with its limit at x = 0.
        let minus_over_x = |f0: &Tensor, f1: &Tensor, at_zero: f64| -> Result<Tensor> {
            let d = math::sub(f0, &math::div(f1, &x)?)?;
            let zero =
                binary(Binary::Eq, &Operand::T(x.clone()), &Operand::S(Scalar::Int(0)), None)?;
            where_(&zero, &Operand::S(Scalar::Float(at_zero)), &Operand::T(d))
        };
        let (da, db) = match self.op {
            BesselJ0 => (Some(math::neg(&un(BesselJ1, &x)?)?), None),
            BesselJ1 => (Some(minus_over_x(&un(BesselJ0, &x)?, &un(BesselJ1, &x)?, 0.5)?), None),
            BesselY0 => (Some(math::neg(&un(BesselY1, &x)?)?), None),
            BesselY1 => {
                (Some(minus_over_x(&un(BesselY0, &x)?, &un(BesselY1, &x)?, f64::INFINITY)?), None)
            }
            BesselK0 => (Some(math::neg(&un(BesselK1, &x)?)?), None),
            BesselK1 => {
                let k0 = math::neg(&un(BesselK0, &x)?)?;
                (Some(minus_over_x(&k0, &un(BesselK1, &x)?, f64::NEG_INFINITY)?), None)
            }
            Erfcx => {
                // 2x erfcx(x) - 2/√π
                let d = math::scale(&math::mul(&x, &un(Erfcx, &x)?)?, 2.0)?;
                (Some(math::add_scalar(&d, -std::f64::consts::FRAC_2_SQRT_PI)?), None)
            }
            Zeta | Gammainc | Gammaincc => {
                if node.needs_input_grad(0) {
                    let what = if self.op == Zeta { "input (the exponent x)" } else { "input (a)" };
                    bail!(
                        NotImplemented,
                        "the derivative of special.{} with respect to {} is not implemented",
                        self.op.name(),
                        what
                    );
                }
                let q = self.b.as_ref().expect("a binary op").unpack(node)?;
                let d = if self.op == Zeta {
                    // d/dq ζ(x, q) = -x ζ(x + 1, q)
                    math::neg(&math::mul(&x, &bin(Zeta, &math::add_scalar(&x, 1.0)?, &q)?)?)?
                } else {
                    // d/dx P(a, x) = exp((a - 1) ln x - x - lgamma(a)) = -d/dx Q(a, x)
                    let ln = math::un(crate::ops::elementwise::Unary::Log, &q)?;
                    let lg = math::un(crate::ops::elementwise::Unary::Lgamma, &x)?;
                    let e = math::sub(
                        &math::sub(&math::mul(&math::add_scalar(&x, -1.0)?, &ln)?, &q)?,
                        &lg,
                    )?;
                    let d = math::un(crate::ops::elementwise::Unary::Exp, &e)?;
                    if self.op == Gammaincc {
                        math::neg(&d)?
                    } else {
                        d
                    }
                };
                (None, Some(d))
            }
            _ => bail!(Runtime, "internal error: special.{} has no derivative", self.op.name()),
        };
        let finish = |d: Option<Tensor>, t: &Tensor| -> Result<Option<Tensor>> {
            d.map(|d| math::reduce_grad(&math::mul(g, &d)?, t.shape(), t.dtype())).transpose()
        };
        let mut out = vec![finish(da, &x)?];
        if let Some(b) = &self.b {
            let q = b.unpack(node)?;
            out.push(finish(db, &q)?);
        }
        Ok(out)
    }
}
