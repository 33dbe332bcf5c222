//! The graph: a node per recorded op, holding its `BackwardOp` and one edge per
//! differentiable input. Tensors own their node (`grad_fn`), nodes own the
//! nodes they read from, so dropping the last tensor that reaches a part of
//! the graph frees it.

use super::backward_op::BackwardOp;
use super::hooks::Hooks;
use crate::tensor::{lock, DType, Shape, Tensor, TensorImpl};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// Where the gradient of an op's input goes: into another node's output slot,
/// or into a leaf's `.grad`.
#[derive(Clone)]
pub enum Edge {
    Node(Arc<Node>, u32),
    Leaf(Arc<TensorImpl>),
}

impl Edge {
    /// The edge of a tensor that requires grad (None otherwise).
    pub fn of(t: &Tensor) -> Option<Edge> {
        if !t.requires_grad() {
            return None;
        }
        match t.grad_fn() {
            Some((n, nr)) => Some(Edge::Node(n, nr)),
            None => Some(Edge::Leaf(t.0.clone())),
        }
    }
    /// Identity for maps: the node pointer and slot, or the leaf pointer.
    pub fn key(&self) -> (usize, u32) {
        match self {
            Edge::Node(n, nr) => (Arc::as_ptr(n) as usize, *nr),
            Edge::Leaf(t) => (Arc::as_ptr(t) as usize, u32::MAX),
        }
    }
}

/// Shape and dtype of one output of a node: missing output gradients are
/// zeros of this, and incoming ones are checked against it.
#[derive(Clone)]
pub struct OutMeta {
    pub shape: Shape,
    pub dtype: DType,
    pub device: crate::tensor::Device,
}

pub struct Node {
    /// None once backward released it (saved tensors freed).
    pub op: Mutex<Option<BackwardOp>>,
    pub name: String,
    pub edges: Vec<Option<Edge>>,
    pub outputs: Vec<OutMeta>,
    /// Creation order; the engine runs ready nodes latest-first, as PyTorch does.
    pub seq: u64,
    /// Tensors that asked for `retain_grad()`, by output slot.
    pub retained: Mutex<Vec<(u32, Weak<TensorImpl>)>>,
    /// Tensor hooks of its outputs and the node's own hooks, set on first use.
    pub hooks: OnceLock<Arc<dyn Hooks>>,
}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Node>();
    send_sync::<BackwardOp>();
};

static SEQ: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static FREEING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static PENDING: std::cell::RefCell<Vec<Arc<Node>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Drops a node handle without recursion: a chain of 100,000 nodes freed by
/// nested destructors would overflow the stack, so nodes reached while one is
/// being freed are queued and freed in a loop.
pub fn release(n: Arc<Node>) {
    if FREEING.with(|f| f.get()) {
        PENDING.with(|p| p.borrow_mut().push(n));
        return;
    }
    FREEING.with(|f| f.set(true));
    drop(n);
    while let Some(next) = PENDING.with(|p| p.borrow_mut().pop()) {
        drop(next);
    }
    FREEING.with(|f| f.set(false));
}

impl Drop for Node {
    fn drop(&mut self) {
        for e in std::mem::take(&mut self.edges).into_iter().flatten() {
            if let Edge::Node(n, _) = e {
                release(n);
            }
        }
    }
}

impl Node {
    pub fn new(op: BackwardOp, edges: Vec<Option<Edge>>, outputs: Vec<OutMeta>) -> Arc<Node> {
        let name = op.name();
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        Arc::new(Node {
            op: Mutex::new(Some(op)),
            name,
            edges,
            outputs,
            seq,
            retained: Mutex::new(Vec::new()),
            hooks: OnceLock::new(),
        })
    }
    pub fn needs_input_grad(&self, i: usize) -> bool {
        matches!(self.edges.get(i), Some(Some(_)))
    }
    pub fn retain(&self, nr: u32, t: &Tensor) {
        let mut r = lock(&self.retained);
        if !r.iter().any(|(n, w)| *n == nr && w.as_ptr() == Arc::as_ptr(&t.0)) {
            r.push((nr, Arc::downgrade(&t.0)));
        }
    }
}

/// The next sequence number (checkpointing uses it to tell nodes made inside
/// a segment from older ones).
pub fn current_seq() -> u64 {
    SEQ.load(Ordering::Relaxed)
}

/// Tensors made by an op get a fresh handle so an op that returned one of its
/// inputs unchanged never moves that input's history.
fn fresh(out: Tensor, inputs: &[&Tensor]) -> Tensor {
    if Arc::strong_count(&out.0) == 1 && !inputs.iter().any(|t| t.same_tensor(&out)) {
        return out;
    }
    Tensor(Arc::new(TensorImpl {
        storage: out.0.storage.clone(),
        layout: out.0.layout.clone(),
        autograd: crate::tensor::AutogradMeta::view(out.0.autograd.view_version),
    }))
}

/// Connects `outputs` to a new node for `op` whose edges are `inputs`' edges.
pub fn attach(op: BackwardOp, inputs: &[&Tensor], outputs: Vec<Tensor>) -> Vec<Tensor> {
    let edges = inputs.iter().map(|t| Edge::of(t)).collect();
    attach_edges(op, edges, outputs, inputs)
}

pub fn attach_edges(
    op: BackwardOp,
    edges: Vec<Option<Edge>>,
    outputs: Vec<Tensor>,
    inputs: &[&Tensor],
) -> Vec<Tensor> {
    let outputs: Vec<Tensor> = outputs.into_iter().map(|o| fresh(o, inputs)).collect();
    let meta = outputs
        .iter()
        .map(|o| OutMeta { shape: o.shape().clone(), dtype: o.dtype(), device: o.device() })
        .collect();
    let node = Node::new(op, edges, meta);
    for (i, o) in outputs.iter().enumerate() {
        o.set_grad_fn(node.clone(), i as u32);
    }
    outputs
}
