//! Tensors saved for backward, each guarded by the version its storage had when
//! it was saved: an in-place write in between makes backward fail loudly
//! instead of computing with the wrong values. While a saved_tensors_hooks
//! context is active, every tensor saved here goes through its pack hook and
//! comes back through its unpack hook: this is the one place all built-in
//! ops and custom Functions save tensors.

use super::graph::{Edge, Node};
use super::hooks::{self, Packed};
use crate::bail;
use crate::error::Result;
use crate::tensor::storage::Storage;
use crate::tensor::{DType, Shape, Tensor, TensorImpl};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};

static SAVED_BYTES: AtomicI64 = AtomicI64::new(0);

/// Bytes currently held by saved tensors (rumus.autograd.saved_tensor_bytes()).
/// Tensors handed to a pack hook are the hook's to account for.
pub fn saved_tensor_bytes() -> i64 {
    SAVED_BYTES.load(Ordering::Relaxed)
}

#[derive(Clone)]
enum Data {
    Plain(Tensor),
    /// Given to a pack hook: the storage is watched (weakly) for in-place
    /// writes, and the edge lets the unpacked tensor rejoin the graph.
    Packed {
        packed: Arc<dyn Packed>,
        storage: Weak<Storage>,
        edge: Option<Edge>,
        shape: Shape,
        dtype: DType,
    },
}

pub struct SavedTensor {
    data: Data,
    version: u64,
    /// Some(i) when the tensor is output i of the node that saves it. It is
    /// then stored without its history (a node must not own itself) and gets
    /// the node back when unpacked under create_graph.
    output_nr: Option<u32>,
}

impl SavedTensor {
    /// `input`: the tensor as the op got it (its graph edge is kept when packed).
    fn new(data: Tensor, output_nr: Option<u32>, input: Option<&Tensor>) -> SavedTensor {
        let version = data.version();
        if let Some(h) = hooks::current_saved_hooks() {
            let edge = input.and_then(Edge::of);
            // Pack hooks run without grad mode and without packing their own ops.
            let packed = hooks::without_saved_hooks(|| {
                let _off = super::GradMode::set(false);
                h.pack(&data)
            });
            match packed {
                Ok(packed) => {
                    return SavedTensor {
                        data: Data::Packed {
                            packed,
                            storage: Arc::downgrade(data.storage()),
                            edge,
                            shape: data.shape().clone(),
                            dtype: data.dtype(),
                        },
                        version,
                        output_nr,
                    }
                }
                Err(e) => hooks::set_pack_error(e),
            }
        }
        SAVED_BYTES.fetch_add(bytes(&data), Ordering::Relaxed);
        SavedTensor { data: Data::Plain(data), version, output_nr }
    }
    /// An input of the op.
    pub fn input(t: &Tensor) -> SavedTensor {
        SavedTensor::new(t.clone(), None, Some(t))
    }
    /// Output `nr` of the op being recorded.
    pub fn output(t: &Tensor, nr: u32) -> SavedTensor {
        let detached = Tensor(Arc::new(TensorImpl {
            storage: t.0.storage.clone(),
            layout: t.0.layout.clone(),
            autograd: Default::default(),
        }));
        SavedTensor::new(detached, Some(nr), None)
    }
    /// The tensor, after checking nobody wrote to it since it was saved.
    pub fn unpack(&self, node: &Arc<Node>) -> Result<Tensor> {
        let now = match &self.data {
            Data::Plain(t) => Some(t.version()),
            // A storage nobody holds any more cannot have been written.
            Data::Packed { storage, .. } => storage.upgrade().map(|s| s.version()),
        };
        if let Some(now) = now.filter(|&v| v != self.version) {
            let (dtype, shape) = match &self.data {
                Data::Plain(t) => (t.dtype(), t.shape().clone()),
                Data::Packed { dtype, shape, .. } => (*dtype, shape.clone()),
            };
            bail!(
                Runtime,
                "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {:?}], which is {} of {}, is at version {}; expected version {} instead. Hint: the saved tensor was changed in place after the forward pass; use an out-of-place op (or .clone()) instead.",
                dtype.name(),
                shape.as_slice(),
                match self.output_nr {
                    Some(i) => format!("output {}", i),
                    None => "an input".to_string(),
                },
                node.name,
                now,
                self.version
            );
        }
        match &self.data {
            Data::Plain(t) => match self.output_nr {
                Some(nr) if super::is_grad_enabled() => {
                    let t = t.detach_nonview();
                    t.set_grad_fn(node.clone(), nr);
                    Ok(t)
                }
                _ => Ok(t.clone()),
            },
            Data::Packed { packed, edge, shape, dtype, .. } => {
                let t = packed.unpack()?;
                if t.shape() != shape || t.dtype() != *dtype {
                    bail!(
                        Runtime,
                        "unpack_hook of saved_tensors_hooks returned a tensor of shape {:?} and dtype {} for a saved tensor of shape {:?} and dtype {} (in {})",
                        t.shape().as_slice(),
                        t.dtype().name(),
                        shape.as_slice(),
                        dtype.name(),
                        node.name
                    );
                }
                if !super::is_grad_enabled() {
                    return Ok(t.detach_nonview());
                }
                // The unpacked value takes the place of the saved tensor in the graph.
                match (self.output_nr, edge) {
                    (Some(nr), _) => {
                        let t = t.detach_nonview();
                        t.set_grad_fn(node.clone(), nr);
                        Ok(t)
                    }
                    (None, Some(Edge::Node(n, nr))) => {
                        let t = t.detach_nonview();
                        t.set_grad_fn(n.clone(), *nr);
                        Ok(t)
                    }
                    (None, Some(Edge::Leaf(leaf))) => {
                        crate::ops::copy::alias_of(&Tensor(leaf.clone()), &t)
                    }
                    (None, None) => Ok(t.detach_nonview()),
                }
            }
        }
    }
    pub fn shape(&self) -> &[usize] {
        match &self.data {
            Data::Plain(t) => t.shape(),
            Data::Packed { shape, .. } => shape.as_slice(),
        }
    }
}

impl Clone for SavedTensor {
    fn clone(&self) -> SavedTensor {
        if let Data::Plain(t) = &self.data {
            SAVED_BYTES.fetch_add(bytes(t), Ordering::Relaxed);
        }
        SavedTensor { data: self.data.clone(), version: self.version, output_nr: self.output_nr }
    }
}

impl Drop for SavedTensor {
    fn drop(&mut self) {
        if let Data::Plain(t) = &self.data {
            SAVED_BYTES.fetch_sub(bytes(t), Ordering::Relaxed);
        }
    }
}

fn bytes(t: &Tensor) -> i64 {
    (t.numel() * t.dtype().size()) as i64
}
