//! Element types, the `Element` trait that kernels are generic over, the
//! dispatch macros that instantiate a kernel per dtype, and type promotion.

use half::{bf16, f16};
use std::sync::atomic::{AtomicU8, Ordering};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DType {
    Bool,
    U8,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    /// Complex dtypes (two floats, real then imaginary): CPU only, and only
    /// the ops in `ops::complex` / `ops::fft` have kernels for them.
    C64,
    C128,
}

pub const ALL_DTYPES: [DType; 10] = [
    DType::Bool,
    DType::U8,
    DType::I32,
    DType::I64,
    DType::F16,
    DType::BF16,
    DType::F32,
    DType::F64,
    DType::C64,
    DType::C128,
];

impl DType {
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 => 1,
            DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 | DType::C64 => 8,
            DType::C128 => 16,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "uint8",
            DType::I32 => "int32",
            DType::I64 => "int64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::C64 => "complex64",
            DType::C128 => "complex128",
        }
    }
    pub fn from_name(name: &str) -> Option<DType> {
        ALL_DTYPES.iter().copied().find(|d| d.name() == name)
    }
    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }
    /// Half types are stored as such but computed in float32.
    pub fn is_half(self) -> bool {
        matches!(self, DType::F16 | DType::BF16)
    }
    pub fn is_complex(self) -> bool {
        matches!(self, DType::C64 | DType::C128)
    }
    /// Float or complex: the dtypes that can require gradients.
    pub fn is_differentiable(self) -> bool {
        self.is_float() || self.is_complex()
    }
    /// The complex dtype with this dtype's precision (PyTorch's toComplexType).
    pub fn to_complex(self) -> DType {
        match self {
            DType::F64 | DType::C128 => DType::C128,
            _ => DType::C64,
        }
    }
    /// The real dtype of a complex dtype's parts (PyTorch's toRealValueType).
    pub fn to_real(self) -> DType {
        match self {
            DType::C64 => DType::F32,
            DType::C128 => DType::F64,
            d => d,
        }
    }
    pub fn is_int(self) -> bool {
        matches!(self, DType::U8 | DType::I32 | DType::I64)
    }
    pub fn category(self) -> Category {
        if self == DType::Bool {
            Category::Bool
        } else if self.is_complex() {
            Category::Complex
        } else if self.is_float() {
            Category::Float
        } else {
            Category::Int
        }
    }
    /// The dtype arithmetic is computed in: half types go through float32.
    pub fn compute(self) -> DType {
        if self.is_half() {
            DType::F32
        } else {
            self
        }
    }
    /// The float dtype GPU kernels compute a float op on this dtype in:
    /// float16 keeps its own kernel variant (which accumulates in float32),
    /// everything else runs in float32.
    pub fn gpu_compute(self) -> DType {
        if self == DType::F16 {
            DType::F16
        } else {
            DType::F32
        }
    }
    /// The dtype a float kernel (softmax, pooling, col2im) runs in for this
    /// input on the GPU (`gpu`) or the CPU: float64 as is, float16 on the GPU
    /// in its own kernel variant, everything else in float32.
    pub fn float_kernel(self, gpu: bool) -> DType {
        match self {
            // Complex stays complex: a kernel without a complex variant then
            // raises TypeError instead of computing on the real parts.
            DType::F64 | DType::C64 | DType::C128 => self,
            d if gpu => d.gpu_compute(),
            _ => DType::F32,
        }
    }
    /// Float dtype used when an op needs a float result for this input (exp of an int tensor).
    pub fn to_float(self) -> DType {
        if self.is_differentiable() {
            self
        } else {
            default_float()
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Category {
    Bool,
    Int,
    Float,
    Complex,
}

/// The default float dtype (rumus.set_default_dtype): 0 float32, 1 float64, 2 float16.
static DEFAULT_FLOAT: AtomicU8 = AtomicU8::new(0);

/// The dtype of Python floats, float factories and int-to-float results.
pub fn default_float() -> DType {
    match DEFAULT_FLOAT.load(Ordering::Relaxed) {
        1 => DType::F64,
        2 => DType::F16,
        _ => DType::F32,
    }
}

/// The dtype of Python complex numbers: complex128 under a float64 default.
pub fn default_complex() -> DType {
    if default_float() == DType::F64 {
        DType::C128
    } else {
        DType::C64
    }
}

/// Sets the default float dtype; false for a dtype that cannot be it.
pub fn set_default_float(d: DType) -> bool {
    let code = match d {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::F16 => 2,
        _ => return false,
    };
    DEFAULT_FLOAT.store(code, Ordering::Relaxed);
    true
}

/// PyTorch's promote_types for two dtypes.
pub fn promote(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (a, b) {
        // Complex wins, at the widest precision of either side.
        _ if a.is_complex() || b.is_complex() => {
            if a == C128 || b == C128 || a == F64 || b == F64 {
                C128
            } else {
                C64
            }
        }
        (F16, BF16) | (BF16, F16) => F32,
        _ if a.is_float() || b.is_float() => {
            // The wider float wins; a float always beats an int.
            match (a.is_float(), b.is_float()) {
                (true, true) => a.max(b),
                (true, false) => a,
                _ => b,
            }
        }
        (Bool, x) | (x, Bool) => x,
        _ => a.max(b), // U8 < I32 < I64
    }
}

/// A Python number or a 0-d value used as an operand.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl Scalar {
    pub fn to_f64(self) -> f64 {
        match self {
            Scalar::Bool(b) => b as u8 as f64,
            Scalar::Int(i) => i as f64,
            Scalar::Float(f) => f,
        }
    }
    pub fn to_i64(self) -> i64 {
        match self {
            Scalar::Bool(b) => b as i64,
            Scalar::Int(i) => i,
            Scalar::Float(f) => f as i64,
        }
    }
    /// The dtype PyTorch gives a tensor created from this Python value.
    pub fn default_dtype(self) -> DType {
        match self {
            Scalar::Bool(_) => DType::Bool,
            Scalar::Int(_) => DType::I64,
            Scalar::Float(_) => default_float(),
        }
    }
    pub fn category(self) -> Category {
        self.default_dtype().category()
    }
    pub fn cast<T: Element>(self) -> T {
        match self {
            Scalar::Bool(b) => T::from_i64(b as i64),
            Scalar::Int(i) => T::from_i64(i),
            Scalar::Float(f) => T::from_f64(f),
        }
    }
}

/// Operands of a result-type computation, in PyTorch's three priority tiers.
#[derive(Default)]
pub struct ResultType {
    dim: Option<DType>,
    zero_dim: Option<DType>,
    wrapped: Option<DType>,
}

impl ResultType {
    pub fn tensor(&mut self, dtype: DType, ndim: usize) -> &mut Self {
        let slot = if ndim == 0 { &mut self.zero_dim } else { &mut self.dim };
        *slot = Some(slot.map_or(dtype, |d| promote(d, dtype)));
        self
    }
    pub fn scalar(&mut self, s: Scalar) -> &mut Self {
        let d = s.default_dtype();
        self.wrapped = Some(self.wrapped.map_or(d, |w| promote(w, d)));
        self
    }
    /// A lower tier only matters when the higher one is bool or the lower one is a
    /// float (int tensor + 2.5 -> float32, but uint8 tensor + 300 stays uint8).
    pub fn result(&self) -> DType {
        fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
            match (higher, lower) {
                (Some(h), _) if h.is_complex() => Some(h),
                // A complex operand of a lower tier keeps a float side's precision.
                (Some(h), Some(l)) if l.is_complex() => {
                    Some(if h.is_float() { h.to_complex() } else { l })
                }
                (Some(h), Some(l)) if !h.is_float() && (h == DType::Bool || l.is_float()) => {
                    Some(promote(h, l))
                }
                (Some(h), _) => Some(h),
                (None, l) => l,
            }
        }
        combine(self.dim, combine(self.zero_dim, self.wrapped)).unwrap_or_else(default_float)
    }
}

/// Implemented by every storage element type; kernels are generic over it.
pub trait Element: Copy + Send + Sync + 'static + PartialOrd + Default + std::fmt::Debug {
    const DTYPE: DType;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn zero() -> Self {
        Self::from_i64(0)
    }
    fn one() -> Self {
        Self::from_i64(1)
    }
    /// The identity of max (-inf for floats, MIN for ints).
    fn lowest() -> Self;
    /// The identity of min.
    fn highest() -> Self;
    /// Casts with PyTorch's rules: float->int truncates, anything->bool is `!= 0`.
    #[inline(always)]
    fn cast<U: Element>(self) -> U {
        if Self::DTYPE.is_float() || U::DTYPE.is_float() {
            U::from_f64(self.to_f64())
        } else {
            U::from_i64(self.to_i64())
        }
    }
}

/// `from_f64` differs: float -> int goes through int64 and wraps, as PyTorch's casts.
macro_rules! prim_element {
    ($t:ty, $d:ident, $lo:expr, $hi:expr, |$v:ident| $from_f64:expr) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn lowest() -> Self {
                $lo
            }
            fn highest() -> Self {
                $hi
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self as i64
            }
            #[inline(always)]
            fn from_f64($v: f64) -> Self {
                $from_f64
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                v as $t
            }
        }
    };
}
prim_element!(u8, U8, u8::MIN, u8::MAX, |v| v as i64 as u8);
prim_element!(i32, I32, i32::MIN, i32::MAX, |v| v as i64 as i32);
prim_element!(i64, I64, i64::MIN, i64::MAX, |v| v as i64);
prim_element!(f32, F32, f32::NEG_INFINITY, f32::INFINITY, |v| v as f32);
prim_element!(f64, F64, f64::NEG_INFINITY, f64::INFINITY, |v| v);

macro_rules! half_element {
    ($t:ty, $d:ident) => {
        impl Element for $t {
            const DTYPE: DType = DType::$d;
            fn lowest() -> Self {
                <$t>::NEG_INFINITY
            }
            fn highest() -> Self {
                <$t>::INFINITY
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self.to_f64()
            }
            #[inline(always)]
            fn to_i64(self) -> i64 {
                self.to_f32() as i64
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                <$t>::from_f64(v)
            }
            #[inline(always)]
            fn from_i64(v: i64) -> Self {
                <$t>::from_f64(v as f64)
            }
        }
    };
}
half_element!(f16, F16);
half_element!(bf16, BF16);

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn lowest() -> Self {
        false
    }
    fn highest() -> Self {
        true
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
}

/// Runs `$body` with `$T` bound to the Rust type of `$dtype`, for every dtype.
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::tensor::dtype::DType as __D;
        match $dtype {
            __D::Bool => {
                type $T = bool;
                $body
            }
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::F16 => {
                type $T = half::f16;
                $body
            }
            __D::BF16 => {
                type $T = half::bf16;
                $body
            }
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            // Complex dtypes have no `Element` type: a generic kernel reached
            // with one fails in `Tensor::ptr` with a TypeError (ops with
            // complex kernels branch to `ops::complex` before dispatching).
            __D::C64 => {
                type $T = f32;
                $body
            }
            __D::C128 => {
                type $T = f64;
                $body
            }
        }
    }};
}

/// Like `dispatch_all!` for the compute dtypes (no half types): they are converted first.
#[macro_export]
macro_rules! dispatch_compute {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::tensor::dtype::DType as __D;
        match $dtype {
            __D::Bool => {
                type $T = bool;
                $body
            }
            __D::U8 => {
                type $T = u8;
                $body
            }
            __D::I32 => {
                type $T = i32;
                $body
            }
            __D::I64 => {
                type $T = i64;
                $body
            }
            __D::F32 => {
                type $T = f32;
                $body
            }
            __D::F64 => {
                type $T = f64;
                $body
            }
            // Callers convert halves first; if one slips through, `Tensor::ptr`
            // reports the dtype mismatch as an error instead of reading garbage.
            __D::F16 | __D::BF16 | __D::C64 => {
                type $T = f32;
                $body
            }
            __D::C128 => {
                type $T = f64;
                $body
            }
        }
    }};
}

/// For complex kernels: `$R` is the real type of the parts (f32 for
/// complex64, f64 for complex128); callers check the dtype is complex.
#[macro_export]
macro_rules! dispatch_complex {
    ($dtype:expr, $R:ident => $body:expr) => {{
        use $crate::tensor::dtype::DType as __D;
        match $dtype {
            __D::C128 => {
                type $R = f64;
                $body
            }
            _ => {
                type $R = f32;
                $body
            }
        }
    }};
}

/// For float-only kernels: f32 or f64 (callers convert halves and ints first).
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr) => {{
        use $crate::tensor::dtype::DType as __D;
        match $dtype {
            __D::F64 => {
                type $T = f64;
                $body
            }
            _ => {
                type $T = f32;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn promotion_follows_torch() {
        use DType::*;
        assert_eq!(promote(I32, I64), I64);
        assert_eq!(promote(Bool, U8), U8);
        assert_eq!(promote(F16, BF16), F32);
        assert_eq!(promote(I64, F16), F16);
        // int tensor + 2.5 -> float32; float32 tensor + float64 0-d -> float32
        assert_eq!(ResultType::default().tensor(I64, 1).scalar(Scalar::Float(2.5)).result(), F32);
        assert_eq!(ResultType::default().tensor(F32, 1).tensor(F64, 0).result(), F32);
        assert_eq!(ResultType::default().tensor(I32, 1).tensor(I64, 0).result(), I32);
        assert_eq!(ResultType::default().tensor(Bool, 1).scalar(Scalar::Int(2)).result(), I64);
        assert_eq!(ResultType::default().tensor(U8, 1).scalar(Scalar::Int(300)).result(), U8);
        assert_eq!(ResultType::default().tensor(F16, 1).scalar(Scalar::Float(1.0)).result(), F16);
        assert_eq!(ResultType::default().tensor(I32, 0).tensor(F64, 0).result(), F64);
        assert_eq!(promote(F32, C64), C64);
        assert_eq!(promote(F64, C64), C128);
        assert_eq!(promote(I64, C64), C64);
        assert_eq!(ResultType::default().tensor(F64, 1).tensor(C64, 0).result(), C128);
        assert_eq!(ResultType::default().tensor(F32, 1).tensor(C128, 0).result(), C64);
        assert_eq!(ResultType::default().tensor(C64, 1).tensor(F64, 0).result(), C64);
    }
}
