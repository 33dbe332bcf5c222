//! Elementwise kernels: N-ary maps over strided operands with fast paths for
//! contiguous rows and broadcast scalars, and the per-type arithmetic they apply.

use super::strided::for_each_row;
use super::P;
use crate::tensor::dtype::Element;

/// Runs `body` with each listed input pointer replaced by the output's when
/// the two rows start at one address (an in-place op), else as it is: a plain
/// loop's run-time overlap check takes equal pointers for an overlap and runs
/// scalar, while a loop reading through the output's own pointer vectorizes.
macro_rules! in_place {
    ($po:ident, $p:ident: $t:ty, $body:block) => {
        if std::ptr::addr_eq($po, $p) {
            let $p = $po as *const $t;
            $body
        } else {
            $body
        }
    };
    ($po:ident, $p:ident: $t:ty, $($rest:tt)+) => {
        if std::ptr::addr_eq($po, $p) {
            let $p = $po as *const $t;
            in_place!(@body $($rest)+)
        } else {
            in_place!($po, $($rest)+)
        }
    };
    (@body $q:ident: $u:ty, $($rest:tt)+) => {
        in_place!(@body $($rest)+)
    };
    (@body $body:block) => {
        $body
    };
}

/// out[i] = f(i) over n contiguous elements (ranges), in parallel chunks
/// compiled for the CPU's vector extensions.
///
/// # Safety
/// `out` must be valid for `n` elements.
pub unsafe fn fill_indexed<T: Copy>(out: P<T>, n: usize, f: impl Fn(usize) -> T + Sync + Copy) {
    super::strided::split_range(n, |s, e| {
        let po = out.at(s as isize);
        contiguous(
            e - s,
            #[inline(always)]
            move || {
                for i in 0..e - s {
                    *po.add(i) = f(s + i);
                }
            },
        )
    });
}

/// out[i] = f(a[i]) over `shape`; every operand has its own strides.
///
/// # Safety
/// Pointers and strides must describe memory valid for `shape`. `out` may alias
/// `a` only element-for-element (in-place ops).
pub unsafe fn map1<A: Copy, O: Copy>(
    shape: &[usize],
    out: (P<O>, &[isize]),
    a: (P<A>, &[isize]),
    f: impl Fn(A) -> O + Sync + Copy,
) {
    for_each_row(shape, [out.1, a.1], |[oo, ao], len, [os, as_]| {
        let (po, pa, f) = (out.0.at(oo), a.0.at(ao), f);
        if os == 1 && as_ == 1 {
            contiguous(
                len,
                #[inline(always)]
                move || {
                    in_place!(po, pa: A, {
                        for i in 0..len {
                            *po.add(i) = f(*pa.add(i));
                        }
                    })
                },
            );
        } else if os == 1 && as_ == -1 {
            // A reversed row (flip): contiguous reads backwards, which vectorize.
            let last = pa.offset(1 - len as isize);
            contiguous(
                len,
                #[inline(always)]
                move || {
                    for i in 0..len {
                        *po.add(i) = f(*last.add(len - 1 - i));
                    }
                },
            );
        } else {
            for i in 0..len as isize {
                *po.offset(i * os) = f(*pa.offset(i * as_));
            }
        }
    });
}

/// Runs a contiguous row's loop compiled for the CPU's vector extensions
/// (rounding, min/max and selects become single instructions and vectorize;
/// the x86_64 baseline calls libm's floorf per element and branches on
/// selects), inline for short rows where the dispatch would cost more.
#[inline(always)]
fn contiguous(len: usize, body: impl FnOnce()) {
    if len >= 32 {
        super::simd(body)
    } else {
        body()
    }
}

/// out[i] = f(a[i], b[i]).
///
/// # Safety
/// As for `map1`.
pub unsafe fn map2<A: Copy, B: Copy, O: Copy>(
    shape: &[usize],
    out: (P<O>, &[isize]),
    a: (P<A>, &[isize]),
    b: (P<B>, &[isize]),
    f: impl Fn(A, B) -> O + Sync + Copy,
) {
    for_each_row(shape, [out.1, a.1, b.1], |[oo, ao, bo], len, [os, as_, bs]| {
        let (po, pa, pb, f) = (out.0.at(oo), a.0.at(ao), b.0.at(bo), f);
        match (os, as_, bs) {
            (1, 1, 1) => contiguous(
                len,
                #[inline(always)]
                move || {
                    in_place!(po, pa: A, pb: B, {
                        for i in 0..len {
                            *po.add(i) = f(*pa.add(i), *pb.add(i));
                        }
                    })
                },
            ),
            (1, 1, 0) => {
                let bv = *pb;
                contiguous(
                    len,
                    #[inline(always)]
                    move || {
                        in_place!(po, pa: A, {
                            for i in 0..len {
                                *po.add(i) = f(*pa.add(i), bv);
                            }
                        })
                    },
                )
            }
            (1, 0, 1) => {
                let av = *pa;
                contiguous(
                    len,
                    #[inline(always)]
                    move || {
                        for i in 0..len {
                            *po.add(i) = f(av, *pb.add(i));
                        }
                    },
                )
            }
            _ => {
                for i in 0..len as isize {
                    *po.offset(i * os) = f(*pa.offset(i * as_), *pb.offset(i * bs));
                }
            }
        }
    });
}

/// out[i] = fast(a[i], b[i]) for kernels with a rare slow case: `fast` runs
/// on blocks of 16 lanes (vectorized), and the lanes whose result is `marked`
/// (NaN for the float32 fmod family, a sentinel for integer division) are
/// redone with `exact` before the block is stored, so `out` may alias an input.
///
/// # Safety
/// As for `map1`.
pub unsafe fn map2_redo<T: Element>(
    shape: &[usize],
    out: (P<T>, &[isize]),
    a: (P<T>, &[isize]),
    b: (P<T>, &[isize]),
    fast: impl Fn(T, T) -> T + Sync + Copy,
    exact: impl Fn(T, T) -> T + Sync + Copy,
    marked: impl Fn(T) -> bool + Sync + Copy,
) {
    for_each_row(shape, [out.1, a.1, b.1], |[oo, ao, bo], len, [os, as_, bs]| {
        let (po, pa, pb) = (out.0.at(oo), a.0.at(ao), b.0.at(bo));
        // The common strides as constants, so that the block loads vectorize.
        macro_rules! rows {
            ($os:expr, $as:expr, $bs:expr) => {
                contiguous(
                    len,
                    #[inline(always)]
                    move || redo_row(len, po, pa, pb, [$os, $as, $bs], fast, exact, marked),
                )
            };
        }
        match (os, as_, bs) {
            (1, 1, 1) => rows!(1, 1, 1),
            (1, 1, 0) => rows!(1, 1, 0),
            (1, 0, 1) => rows!(1, 0, 1),
            _ => redo_row(len, po, pa, pb, [os, as_, bs], fast, exact, marked),
        }
    });
}

/// One row of `map2_redo`, `st` the strides of out, a and b.
#[inline(always)]
unsafe fn redo_row<T: Element>(
    len: usize,
    po: *mut T,
    pa: *mut T,
    pb: *mut T,
    st: [isize; 3],
    fast: impl Fn(T, T) -> T,
    exact: impl Fn(T, T) -> T,
    marked: impl Fn(T) -> bool,
) {
    const B: usize = 16;
    // Lanes [k, k + m) of the row; m is B but in the tail, so the copies of
    // whole blocks are a few vector moves rather than calls to memcpy.
    macro_rules! block {
        ($k:expr, $m:expr) => {{
            let (k, m): (usize, usize) = ($k, $m);
            // Lanes past the tail divide by one.
            let (mut xs, mut ys, mut rs) = ([T::zero(); B], [T::one(); B], [T::zero(); B]);
            for j in 0..m {
                let i = (k + j) as isize;
                (xs[j], ys[j]) = (*pa.offset(i * st[1]), *pb.offset(i * st[2]));
            }
            let mut redo = false;
            for j in 0..B {
                rs[j] = fast(xs[j], ys[j]);
                redo |= marked(rs[j]);
            }
            if redo {
                for j in 0..m {
                    if marked(rs[j]) {
                        rs[j] = exact(xs[j], ys[j]);
                    }
                }
            }
            for j in 0..m {
                *po.offset((k + j) as isize * st[0]) = rs[j];
            }
        }};
    }
    let full = len / B * B;
    for k in (0..full).step_by(B) {
        block!(k, B);
    }
    if full < len {
        block!(full, len - full);
    }
}

/// out[i] = f(a[i], b[i], c[i]) (where, clamp with tensor bounds, ...).
///
/// # Safety
/// As for `map1`.
pub unsafe fn map3<A: Copy, B: Copy, C: Copy, O: Copy>(
    shape: &[usize],
    out: (P<O>, &[isize]),
    a: (P<A>, &[isize]),
    b: (P<B>, &[isize]),
    c: (P<C>, &[isize]),
    f: impl Fn(A, B, C) -> O + Sync + Copy,
) {
    for_each_row(shape, [out.1, a.1, b.1, c.1], |[oo, ao, bo, co], len, [os, as_, bs, cs]| {
        let (po, pa, pb, pc, f) = (out.0.at(oo), a.0.at(ao), b.0.at(bo), c.0.at(co), f);
        if (os, as_, bs, cs) == (1, 1, 1, 1) {
            return contiguous(
                len,
                #[inline(always)]
                move || {
                    in_place!(po, pa: A, {
                        for i in 0..len {
                            *po.add(i) = f(*pa.add(i), *pb.add(i), *pc.add(i));
                        }
                    })
                },
            );
        }
        for i in 0..len as isize {
            *po.offset(i * os) = f(*pa.offset(i * as_), *pb.offset(i * bs), *pc.offset(i * cs));
        }
    });
}

/// Arithmetic with PyTorch's semantics for each compute dtype. Integer ops
/// wrap on overflow; callers reject division by zero before calling.
pub trait Arith: Element {
    fn add(self, b: Self) -> Self;
    fn sub(self, b: Self) -> Self;
    fn mul(self, b: Self) -> Self;
    /// True division for floats, truncation for ints (rounding_mode='trunc').
    fn div(self, b: Self) -> Self;
    /// Python's floor division.
    fn floor_div(self, b: Self) -> Self;
    /// Python's remainder: the sign of the divisor.
    fn rem(self, b: Self) -> Self;
    /// C's fmod: the sign of the dividend.
    fn fmod(self, b: Self) -> Self;
    fn pow(self, b: Self) -> Self;
    fn max(self, b: Self) -> Self;
    fn min(self, b: Self) -> Self;
    fn neg(self) -> Self;
    fn abs(self) -> Self;
    fn sign(self) -> Self;
    fn is_zero(self) -> bool {
        self == Self::zero()
    }
}

macro_rules! int_arith {
    ($t:ty, $signed:expr) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self.wrapping_add(b)
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self.wrapping_sub(b)
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self.wrapping_mul(b)
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                self.wrapping_div(b)
            }
            #[inline(always)]
            fn floor_div(self, b: Self) -> Self {
                let q = self.wrapping_div(b);
                if $signed
                    && (self.wrapping_rem(b) != 0)
                    && ((self < Self::zero()) != (b < Self::zero()))
                {
                    q.wrapping_sub(1)
                } else {
                    q
                }
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                let r = self.wrapping_rem(b);
                if $signed && r != 0 && ((r < Self::zero()) != (b < Self::zero())) {
                    r.wrapping_add(b)
                } else {
                    r
                }
            }
            #[inline(always)]
            fn fmod(self, b: Self) -> Self {
                self.wrapping_rem(b)
            }
            #[inline(always)]
            fn pow(self, b: Self) -> Self {
                // Exponents are non-negative here (checked by the op); square-and-multiply
                // over all 64 bits, wrapping like NumPy.
                let (mut base, mut e, mut acc) = (self, b as u64, 1 as $t);
                while e > 0 {
                    if e & 1 == 1 {
                        acc = acc.wrapping_mul(base);
                    }
                    base = base.wrapping_mul(base);
                    e >>= 1;
                }
                acc
            }
            #[inline(always)]
            fn max(self, b: Self) -> Self {
                Ord::max(self, b)
            }
            #[inline(always)]
            fn min(self, b: Self) -> Self {
                Ord::min(self, b)
            }
            #[inline(always)]
            fn neg(self) -> Self {
                Self::zero().wrapping_sub(self)
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn abs(self) -> Self {
                if self < Self::zero() {
                    self.neg()
                } else {
                    self
                }
            }
            #[inline(always)]
            #[allow(unused_comparisons)]
            fn sign(self) -> Self {
                if self > Self::zero() {
                    1
                } else if self < Self::zero() {
                    Self::zero().wrapping_sub(1)
                } else {
                    0
                }
            }
        }
    };
}
int_arith!(u8, false);
int_arith!(i32, true);
int_arith!(i64, true);

/// Python's a // b for floats from m = fmod(a, b), as NumPy's divmod: the
/// exact quotient (a - m) / b, floor-corrected.
#[inline(always)]
pub fn floor_div_from_fmod<F: num_traits::Float>(a: F, b: F, m: F) -> F {
    let zero = F::zero();
    if b == zero {
        return a / b;
    }
    let mut q = (a - m) / b;
    if m != zero && ((b < zero) != (m < zero)) {
        q = q - F::one();
    }
    if q != zero {
        let f = q.floor();
        if q - f > F::from(0.5).unwrap() {
            f + F::one()
        } else {
            f
        }
    } else {
        zero.copysign(a / b)
    }
}

/// Python's a % b for floats (the sign of b) from m = fmod(a, b).
#[inline(always)]
pub fn rem_from_fmod<F: num_traits::Float>(m: F, b: F) -> F {
    let zero = F::zero();
    // Selects without short-circuits, so that loops of it vectorize.
    let r = if (m != zero) & ((m < zero) != (b < zero)) { m + b } else { m };
    if m == zero {
        zero.copysign(b)
    } else {
        r
    }
}

macro_rules! float_arith {
    ($t:ty) => {
        impl Arith for $t {
            #[inline(always)]
            fn add(self, b: Self) -> Self {
                self + b
            }
            #[inline(always)]
            fn sub(self, b: Self) -> Self {
                self - b
            }
            #[inline(always)]
            fn mul(self, b: Self) -> Self {
                self * b
            }
            #[inline(always)]
            fn div(self, b: Self) -> Self {
                self / b
            }
            #[inline(always)]
            fn floor_div(self, b: Self) -> Self {
                floor_div_from_fmod(self, b, self % b)
            }
            #[inline(always)]
            fn rem(self, b: Self) -> Self {
                rem_from_fmod(self % b, b)
            }
            #[inline(always)]
            fn fmod(self, b: Self) -> Self {
                self % b
            }
            #[inline(always)]
            fn pow(self, b: Self) -> Self {
                // Common exponents exactly and without powf (x ** 2 in losses and norms).
                if b == 2.0 {
                    self * self
                } else if b == 1.0 {
                    self
                } else {
                    self.powf(b)
                }
            }
            // NaN propagates, as in torch.maximum.
            #[inline(always)]
            fn max(self, b: Self) -> Self {
                if self.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if self > b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn min(self, b: Self) -> Self {
                if self.is_nan() || b.is_nan() {
                    <$t>::NAN
                } else if self < b {
                    self
                } else {
                    b
                }
            }
            #[inline(always)]
            fn neg(self) -> Self {
                -self
            }
            #[inline(always)]
            fn abs(self) -> Self {
                self.abs()
            }
            #[inline(always)]
            fn sign(self) -> Self {
                if self > 0.0 {
                    1.0
                } else if self < 0.0 {
                    -1.0
                } else {
                    self
                }
            }
        }
    };
}
float_arith!(f32);
float_arith!(f64);

/// Bool arithmetic as PyTorch defines it where it allows it: + is or, * is and.
impl Arith for bool {
    fn add(self, b: Self) -> Self {
        self | b
    }
    fn sub(self, b: Self) -> Self {
        self ^ b
    }
    fn mul(self, b: Self) -> Self {
        self & b
    }
    fn div(self, b: Self) -> Self {
        self & b
    }
    fn floor_div(self, b: Self) -> Self {
        self & b
    }
    fn rem(self, _b: Self) -> Self {
        false
    }
    fn fmod(self, _b: Self) -> Self {
        false
    }
    fn pow(self, b: Self) -> Self {
        self | !b
    }
    fn max(self, b: Self) -> Self {
        self | b
    }
    fn min(self, b: Self) -> Self {
        self & b
    }
    fn neg(self) -> Self {
        self
    }
    fn abs(self) -> Self {
        self
    }
    fn sign(self) -> Self {
        self
    }
}
