//! One error type for the core. `py/error.rs` maps each kind to the Python
//! exception PyTorch raises in the same situation.

use std::fmt;

#[derive(Debug, Clone)]
pub enum Error {
    /// Bad argument value (ValueError).
    Value(String),
    /// Wrong argument or element type (TypeError).
    Type(String),
    /// Index or dimension out of range (IndexError).
    Index(String),
    /// Everything PyTorch reports as RuntimeError: shape mismatches, illegal casts, ...
    Runtime(String),
    /// A singular or not positive-definite input to a decomposition (rumus.linalg.LinAlgError,
    /// a RuntimeError subclass, as torch.linalg.LinAlgError).
    LinAlg(String),
    /// An op that exists but has no kernel for this device or dtype yet (NotImplementedError).
    NotImplemented(String),
    /// An error raised by user code the core called back into (a Python
    /// exception in a custom backward), passed through untouched.
    Foreign(Foreign),
}

#[derive(Clone)]
pub struct Foreign(pub std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl fmt::Debug for Foreign {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Foreign(..)")
    }
}

pub type Result<T> = std::result::Result<T, Error>;

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Value(m)
            | Error::Type(m)
            | Error::Index(m)
            | Error::Runtime(m)
            | Error::LinAlg(m)
            | Error::NotImplemented(m) => f.write_str(m),
            Error::Foreign(_) => f.write_str("error raised in user code"),
        }
    }
}

impl std::error::Error for Error {}

#[macro_export]
macro_rules! bail {
    ($kind:ident, $($arg:tt)*) => {
        return Err($crate::error::Error::$kind(format!($($arg)*)))
    };
}
