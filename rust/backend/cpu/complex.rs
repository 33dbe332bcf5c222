//! CPU loops for complex64/complex128 elementwise ops (num_complex numbers
//! with f32/f64 parts); strided and broadcast operands through `map1`/`map2`.

use super::elementwise::{map1, map2};
use super::P;
use crate::error::Result;
use crate::ops::complex::{CBinary, CUnary};
use crate::tensor::{Element, Tensor};
use num_complex::Complex;
use num_traits::{Float, Zero};

/// `out = op(a)`, out complex (or real for Abs/Angle) with a's shape.
pub fn unary<R: Element + Float>(op: CUnary, out: &Tensor, a: &Tensor) -> Result<()> {
    let pa = P(a.cptr::<R>()?);
    let (shape, sa) = (a.shape(), a.strides());
    if matches!(op, CUnary::Abs | CUnary::Angle) {
        let po = P(out.ptr::<R>()?);
        let f = |z: Complex<R>| if op == CUnary::Abs { z.norm() } else { z.arg() };
        // SAFETY: both layouts lie within their storages; out has a's shape.
        unsafe { map1(shape, (po, out.strides()), (pa, sa), f) };
        return Ok(());
    }
    let one: Complex<R> = Complex::new(<R as num_traits::One>::one(), <R as Zero>::zero());
    let f = move |z: Complex<R>| -> Complex<R> {
        match op {
            CUnary::Neg => -z,
            CUnary::Conj => z.conj(),
            CUnary::Exp => z.exp(),
            CUnary::Log => z.ln(),
            CUnary::Sqrt => z.sqrt(),
            CUnary::Rsqrt => one / z.sqrt(),
            CUnary::Reciprocal => reciprocal(z),
            CUnary::Square => z * z,
            CUnary::Sin => z.sin(),
            CUnary::Cos => z.cos(),
            CUnary::Tan => z.tan(),
            CUnary::Sinh => z.sinh(),
            CUnary::Cosh => z.cosh(),
            CUnary::Tanh => z.tanh(),
            CUnary::Sigmoid => one / (one + (-z).exp()),
            CUnary::Sgn => {
                let r = z.norm();
                if r == <R as Zero>::zero() {
                    Complex::zero()
                } else {
                    z / r
                }
            }
            CUnary::Abs | CUnary::Angle => z,
        }
    };
    let po = P(out.cptr::<R>()?);
    // SAFETY: as above.
    unsafe { map1(shape, (po, out.strides()), (pa, sa), f) };
    Ok(())
}

/// 1/z without the overflow of conj(z)/|z|² for large parts (Smith's method
/// through num_complex's division).
fn reciprocal<R: Float>(z: Complex<R>) -> Complex<R> {
    if z.is_zero() {
        return Complex::new(R::infinity(), R::nan());
    }
    Complex::new(R::one(), R::zero()) / z
}

/// `out = a op b` with a and b broadcast to out's shape; Eq/Ne write bools.
pub fn binary<R: Element + Float>(op: CBinary, out: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    let shape = out.shape();
    let sa = a.layout().broadcast_strides(shape)?;
    let sb = b.layout().broadcast_strides(shape)?;
    let (pa, pb) = (P(a.cptr::<R>()?), P(b.cptr::<R>()?));
    if matches!(op, CBinary::Eq | CBinary::Ne) {
        let po = P(out.ptr::<bool>()?);
        let eq = op == CBinary::Eq;
        // SAFETY: layouts lie within their storages; a and b broadcast to out's shape.
        unsafe {
            map2(shape, (po, out.strides()), (pa, &sa[..]), (pb, &sb[..]), move |x, y| {
                (x == y) == eq
            })
        };
        return Ok(());
    }
    let f = move |x: Complex<R>, y: Complex<R>| -> Complex<R> {
        match op {
            CBinary::Add => x + y,
            CBinary::Sub => x - y,
            CBinary::Mul => x * y,
            CBinary::Div => x / y,
            CBinary::Pow => pow(x, y),
            CBinary::Eq | CBinary::Ne => x,
        }
    };
    let po = P(out.cptr::<R>()?);
    // SAFETY: as above.
    unsafe { map2(shape, (po, out.strides()), (pa, &sa[..]), (pb, &sb[..]), f) };
    Ok(())
}

/// z^w as PyTorch: exp(w log z), with 0^w = 0 for Re(w) > 0 and z^0 = 1.
fn pow<R: Float>(z: Complex<R>, w: Complex<R>) -> Complex<R> {
    if w.is_zero() {
        return Complex::new(R::one(), R::zero());
    }
    if z.is_zero() && w.im == R::zero() && w.re > R::zero() {
        return Complex::zero();
    }
    // Small integer exponents are exact products (z² stays real for real z).
    if w.im == R::zero() && w.re.fract() == R::zero() && w.re.abs() <= R::from(64).unwrap() {
        let n = w.re.to_i32().unwrap_or(0);
        let p = z.powi(n.abs());
        return if n < 0 { reciprocal(p) } else { p };
    }
    z.powc(w)
}

/// Writes `(re, im)` into a contiguous complex tensor's elements from two
/// real tensors of the same dtype broadcast to its shape (rumus.complex, polar).
pub fn from_parts<R: Element + Float>(
    out: &Tensor,
    re: &Tensor,
    im: &Tensor,
    polar: bool,
) -> Result<()> {
    let shape = out.shape();
    let sr = re.layout().broadcast_strides(shape)?;
    let si = im.layout().broadcast_strides(shape)?;
    let (pr, pi) = (P(re.ptr::<R>()?), P(im.ptr::<R>()?));
    let po = P(out.cptr::<R>()?);
    let f = move |a: R, b: R| if polar { Complex::from_polar(a, b) } else { Complex::new(a, b) };
    // SAFETY: layouts lie within their storages and broadcast to out's shape.
    unsafe { map2(shape, (po, out.strides()), (pr, &sr[..]), (pi, &si[..]), f) };
    Ok(())
}
