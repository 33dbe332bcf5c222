//! Reading and writing tensors to files: safetensors checkpoints and the
//! atomic file replacement they are saved with.

pub mod atomic;
pub mod safetensors;

use std::fmt;

/// What can go wrong reading or writing a checkpoint.
#[derive(Debug)]
pub enum Failure {
    /// The operating system refused: a missing file, permissions, a full disk.
    Os(std::io::Error),
    /// The bytes aren't a valid safetensors file, or hold what rumus can't represent.
    Format(String),
    /// A tensor op failed (gathering a non-contiguous tensor, a GPU read-back).
    Op(crate::error::Error),
}

impl From<std::io::Error> for Failure {
    fn from(e: std::io::Error) -> Failure {
        Failure::Os(e)
    }
}

impl From<crate::error::Error> for Failure {
    fn from(e: crate::error::Error) -> Failure {
        Failure::Op(e)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Os(e) => e.fmt(f),
            Failure::Format(m) => f.write_str(m),
            Failure::Op(e) => e.fmt(f),
        }
    }
}
