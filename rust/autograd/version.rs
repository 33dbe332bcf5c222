//! Tensors saved for backward, each guarded by the version its storage had when
//! it was saved: an in-place write in between makes backward fail loudly
//! instead of computing with the wrong values.

use super::graph::Node;
use crate::bail;
use crate::error::Result;
use crate::tensor::{Tensor, TensorImpl};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

static SAVED_BYTES: AtomicI64 = AtomicI64::new(0);

/// Bytes currently held by saved tensors (rumus.autograd.saved_tensor_bytes()).
pub fn saved_tensor_bytes() -> i64 {
    SAVED_BYTES.load(Ordering::Relaxed)
}

pub struct SavedTensor {
    data: Tensor,
    version: u64,
    /// Some(i) when the tensor is output i of the node that saves it. It is
    /// then stored without its history (a node must not own itself) and gets
    /// the node back when unpacked under create_graph.
    output_nr: Option<u32>,
}

impl SavedTensor {
    fn new(data: Tensor, output_nr: Option<u32>) -> SavedTensor {
        let version = data.version();
        SAVED_BYTES.fetch_add(bytes(&data), Ordering::Relaxed);
        SavedTensor { data, version, output_nr }
    }
    /// An input of the op.
    pub fn input(t: &Tensor) -> SavedTensor {
        SavedTensor::new(t.clone(), None)
    }
    /// Output `nr` of the op being recorded.
    pub fn output(t: &Tensor, nr: u32) -> SavedTensor {
        let detached = Tensor(Arc::new(TensorImpl {
            storage: t.0.storage.clone(),
            layout: t.0.layout.clone(),
            autograd: Default::default(),
        }));
        SavedTensor::new(detached, Some(nr))
    }
    /// The tensor, after checking nobody wrote to it since it was saved.
    pub fn unpack(&self, node: &Arc<Node>) -> Result<Tensor> {
        let now = self.data.version();
        if now != self.version {
            bail!(
                Runtime,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {:?}], which is {} of {}, is at version {}; expected version {} instead. Hint: the saved tensor was changed in place after the forward pass; use an out-of-place op (or .clone()) instead.",
                self.data.dtype().name(),
                self.data.shape().as_slice(),
                match self.output_nr {
                    Some(i) => format!("output {}", i),
                    None => "an input".to_string(),
                },
                node.name,
                now,
                self.version
            );
        }
        match self.output_nr {
            Some(nr) if super::is_grad_enabled() => {
                let t = self.data.detach_nonview();
                t.set_grad_fn(node.clone(), nr);
                Ok(t)
            }
            _ => Ok(self.data.clone()),
        }
    }
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }
}

impl Clone for SavedTensor {
    fn clone(&self) -> SavedTensor {
        SAVED_BYTES.fetch_add(bytes(&self.data), Ordering::Relaxed);
        SavedTensor { data: self.data.clone(), version: self.version, output_nr: self.output_nr }
    }
}

impl Drop for SavedTensor {
    fn drop(&mut self) {
        SAVED_BYTES.fetch_sub(bytes(&self.data), Ordering::Relaxed);
    }
}

fn bytes(t: &Tensor) -> i64 {
    (t.numel() * t.dtype().size()) as i64
}
