//! Backward: runs the nodes reachable from the roots in reverse topological
//! order (ready nodes latest-created first), summing the gradients that reach
//! each node output, then accumulates into leaves or hands gradients back
//! (autograd.grad).

use super::graph::{Edge, Node};
use super::mode::{anomaly_enabled, GradMode};
use crate::bail;
use crate::error::Result;
use crate::ops::elementwise::{binary, binary_, unary, Binary, Unary};
use crate::ops::Operand;
use crate::tensor::{lock, Tensor, TensorImpl};
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;

/// What backward does with the gradients that reach leaves or targets.
pub enum Sink<'a> {
    /// Tensor.backward(): accumulate into `.grad` of every leaf reached, or
    /// only of `inputs` when given (leaves or retained non-leaves).
    Accumulate(Option<&'a [Edge]>),
    /// autograd.grad(): return the gradients of these edges; touch no `.grad`.
    Capture(&'a [Edge]),
}

struct Task {
    node: Arc<Node>,
    deps: usize,
    /// Runs its backward: without targets always, with targets when one is
    /// reachable through its edges.
    needed: bool,
    /// One of its outputs is a target (its gradient is handed back).
    target: bool,
    grads: Vec<Option<Tensor>>,
}

struct LeafTask {
    leaf: Arc<TensorImpl>,
    deps: usize,
    grad: Option<Tensor>,
}

/// A tensor's hooks, each checked to hand back a gradient like the one it got.
fn run_tensor_hooks(h: &dyn super::hooks::Hooks, nr: u32, g: Tensor) -> Result<Tensor> {
    let new = h.tensor(nr, g.clone())?;
    super::hooks::check_hook_result(&new, &g)?;
    Ok(new)
}

pub fn backward(
    roots: Vec<(Edge, Tensor)>,
    sink: Sink<'_>,
    keep_graph: bool,
    create_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let _mode = GradMode::set(create_graph);
    let targets: Option<&[Edge]> = match &sink {
        Sink::Accumulate(t) => *t,
        Sink::Capture(t) => Some(t),
    };
    let target_slot: HashMap<(usize, u32), usize> =
        targets.unwrap_or(&[]).iter().enumerate().map(|(i, e)| (e.key(), i)).collect();
    let capture = matches!(sink, Sink::Capture(_));
    let mut captured: Vec<Option<Tensor>> = vec![None; target_slot.len()];

    // Discover the reachable nodes and count the edges into each.
    let mut index: HashMap<usize, usize> = HashMap::new();
    let mut tasks: Vec<Task> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut visit = |n: &Arc<Node>, tasks: &mut Vec<Task>, stack: &mut Vec<usize>| -> usize {
        *index.entry(Arc::as_ptr(n) as usize).or_insert_with(|| {
            tasks.push(Task {
                node: n.clone(),
                deps: 0,
                needed: false,
                target: false,
                grads: vec![None; n.outputs.len()],
            });
            stack.push(tasks.len() - 1);
            tasks.len() - 1
        })
    };
    let mut root_tasks = Vec::new();
    for (e, _) in &roots {
        if let Edge::Node(n, _) = e {
            root_tasks.push(visit(n, &mut tasks, &mut stack));
        }
    }
    while let Some(i) = stack.pop() {
        let node = tasks[i].node.clone();
        for e in node.edges.iter().flatten() {
            if let Edge::Node(c, _) = e {
                let j = visit(c, &mut tasks, &mut stack);
                tasks[j].deps += 1;
            }
        }
    }
    // A node is needed if it leads to a target (every node, without targets).
    // Inputs are always older than the node reading them, so one pass in
    // creation order settles it.
    let mut order: Vec<usize> = (0..tasks.len()).collect();
    order.sort_by_key(|&i| tasks[i].node.seq);
    for &i in &order {
        let node = tasks[i].node.clone();
        tasks[i].target = (0..node.outputs.len() as u32)
            .any(|nr| target_slot.contains_key(&(Arc::as_ptr(&node) as usize, nr)));
        tasks[i].needed = targets.is_none()
            || node.edges.iter().flatten().any(|e| match e {
                Edge::Leaf(_) => target_slot.contains_key(&e.key()),
                Edge::Node(c, _) => {
                    let t = &tasks[index[&(Arc::as_ptr(c) as usize)]];
                    t.needed || t.target
                }
            });
    }

    // Gradients reaching a leaf are summed and handed over once, when the last
    // one arrived (as PyTorch's AccumulateGrad node): its hooks see the total,
    // and leaves become ready in the order backward finishes them.
    let wants_leaf = |key: &(usize, u32)| match targets {
        None => true,
        Some(_) => target_slot.contains_key(key),
    };
    let mut leaves: HashMap<(usize, u32), LeafTask> = HashMap::new();
    let mut count_leaf = |e: &Edge| {
        if let Edge::Leaf(t) = e {
            if wants_leaf(&e.key()) {
                leaves
                    .entry(e.key())
                    .or_insert_with(|| LeafTask { leaf: t.clone(), deps: 0, grad: None })
                    .deps += 1;
            }
        }
    };
    for t in tasks.iter().filter(|t| t.needed) {
        t.node.edges.iter().flatten().for_each(&mut count_leaf);
    }
    roots.iter().for_each(|(e, _)| count_leaf(e));
    let mut leaf_arrives =
        |key: (usize, u32), g: Option<Tensor>, captured: &mut Vec<Option<Tensor>>| -> Result<()> {
            let Some(l) = leaves.get_mut(&key) else { return Ok(()) };
            if let Some(g) = g {
                l.grad = Some(sum_opt(l.grad.take(), g)?);
            }
            l.deps -= 1;
            if l.deps > 0 {
                return Ok(());
            }
            let l = leaves.remove(&key).expect("present");
            let Some(g) = l.grad else { return Ok(()) };
            let hooks = l.leaf.autograd.hooks.get().cloned();
            let g = match &hooks {
                Some(h) => run_tensor_hooks(h.as_ref(), 0, g)?,
                None => g,
            };
            if capture {
                let s = target_slot[&key];
                captured[s] = Some(g);
                return Ok(());
            }
            let Some(h) = hooks else { return accumulate(&l.leaf, g, create_graph) };
            let g = match h.pre(vec![Some(g)])?.pop().flatten() {
                Some(g) => g,
                None => return Ok(()),
            };
            accumulate(&l.leaf, g.clone(), create_graph)?;
            h.post_accumulate(&Tensor(l.leaf.clone()))?;
            h.post(vec![], &[Some(g)]).map(drop)
        };
    for (e, g) in roots {
        match e {
            Edge::Leaf(_) => leaf_arrives(e.key(), Some(g), &mut captured)?,
            Edge::Node(n, nr) => {
                let t = &mut tasks[index[&(Arc::as_ptr(&n) as usize)]];
                t.grads[nr as usize] = Some(sum_opt(t.grads[nr as usize].take(), g)?);
            }
        }
    }

    let mut ready: BinaryHeap<(u64, usize)> = BinaryHeap::new();
    root_tasks.sort_unstable();
    root_tasks.dedup();
    for i in root_tasks {
        if tasks[i].deps == 0 {
            ready.push((tasks[i].node.seq, i));
        }
    }
    while let Some((_, i)) = ready.pop() {
        if !tasks[i].needed && !tasks[i].target {
            continue;
        }
        let node = tasks[i].node.clone();
        let mut grads = std::mem::take(&mut tasks[i].grads);
        if let Some(h) = node.hooks.get() {
            for (nr, g) in grads.iter_mut().enumerate() {
                if let Some(x) = g.take() {
                    *g = Some(run_tensor_hooks(h.as_ref(), nr as u32, x)?);
                }
            }
        }
        // After the tensor hooks, as PyTorch's retain_grad; also for a target
        // node that leads nowhere needed (backward(inputs=[non-leaf])).
        if !capture {
            store_retained(&node, &grads)?;
        }
        if capture && tasks[i].target {
            for (nr, g) in grads.iter().enumerate() {
                if let (Some(&s), Some(g)) =
                    (target_slot.get(&(Arc::as_ptr(&node) as usize, nr as u32)), g)
                {
                    captured[s] = Some(g.clone());
                }
            }
        }
        if !tasks[i].needed {
            continue;
        }
        let results = if grads.iter().all(Option::is_none) {
            vec![None; node.edges.len()]
        } else {
            run_node(&node, grads, keep_graph)?
        };
        for (e, g) in node.edges.iter().zip(results) {
            match e {
                Some(e @ Edge::Leaf(_)) => leaf_arrives(e.key(), g, &mut captured)?,
                Some(Edge::Node(c, nr)) => {
                    let j = index[&(Arc::as_ptr(c) as usize)];
                    let t = &mut tasks[j];
                    if let Some(g) = g {
                        t.grads[*nr as usize] = Some(sum_opt(t.grads[*nr as usize].take(), g)?);
                    }
                    t.deps -= 1;
                    if t.deps == 0 {
                        ready.push((t.node.seq, j));
                    }
                }
                None => {}
            }
        }
    }
    Ok(captured)
}

/// Adds the gradients of a node's outputs into the `.grad` of the tensors
/// that retain it (retain_grad, or non-leaf `inputs` of backward).
fn store_retained(node: &Arc<Node>, grads: &[Option<Tensor>]) -> Result<()> {
    for (nr, g) in grads.iter().enumerate() {
        let Some(g) = g else { continue };
        for (rnr, w) in lock(&node.retained).iter() {
            if *rnr as usize == nr {
                if let Some(t) = w.upgrade() {
                    let t = Tensor(t);
                    let new = match t.grad() {
                        Some(old) => {
                            binary(Binary::Add, &Operand::T(old), &Operand::T(g.clone()), None)?
                        }
                        None => crate::ops::copy::contiguous_clone(g)?,
                    };
                    t.set_grad(Some(new));
                }
            }
        }
    }
    Ok(())
}

/// Runs one node's backward (with its pre- and post-hooks) on its summed
/// output gradients.
fn run_node(
    node: &Arc<Node>,
    grads: Vec<Option<Tensor>>,
    keep_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let hooks = node.hooks.get().cloned();
    let grads = match &hooks {
        Some(h) => {
            let new = h.pre(grads.clone())?;
            for (n, o) in new.iter().zip(&grads) {
                if let (Some(n), Some(o)) = (n, o) {
                    super::hooks::check_hook_result(n, o)?;
                }
            }
            new
        }
        None => grads,
    };
    let grad_outputs = if hooks.is_some() { grads.clone() } else { Vec::new() };
    // Outputs nobody used get zero gradients.
    let grads: Vec<Tensor> = grads
        .into_iter()
        .zip(&node.outputs)
        .map(|(g, m)| match g {
            Some(g) => Ok(g),
            None => crate::ops::creation::full_on(
                &m.shape,
                crate::tensor::Scalar::Int(0),
                m.dtype,
                m.device,
            ),
        })
        .collect::<Result<_>>()?;
    let op = {
        let mut slot = lock(&node.op);
        match slot.as_ref() {
            None => bail!(
                Runtime,
                "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward. (node {})",
                node.name
            ),
            // Every node is freed without retain_graph, even one that saved no
            // tensor, so a second backward raises instead of accumulating again.
            Some(op) if keep_graph => op.clone(),
            Some(_) => slot.take().expect("checked above"),
        }
    };
    let results = op.apply(node, &grads)?;
    drop(op);
    if results.len() != node.edges.len() {
        bail!(
            Runtime,
            "function {} returned an incorrect number of gradients (expected {}, got {})",
            node.name,
            node.edges.len(),
            results.len()
        );
    }
    let results = match &hooks {
        Some(h) => {
            let new = h.post(results.clone(), &grad_outputs)?;
            for (n, o) in new.iter().zip(&results) {
                if let (Some(n), Some(o)) = (n, o) {
                    super::hooks::check_hook_result(n, o)?;
                }
            }
            new
        }
        None => results,
    };
    if anomaly_enabled() {
        for (i, g) in results.iter().enumerate() {
            if let Some(g) = g {
                check_finite(&node.name, i, g)?;
            }
        }
    }
    Ok(results)
}

fn check_finite(name: &str, i: usize, g: &Tensor) -> Result<()> {
    if !g.dtype().is_float() {
        return Ok(());
    }
    let _off = GradMode::set(false);
    for (op, what) in [(Unary::IsNan, "nan"), (Unary::IsInf, "inf")] {
        let any = crate::ops::reduce::all_any(&unary(op, g)?, None, false, false)?;
        if crate::ops::copy::item(&any)?.to_i64() != 0 {
            bail!(Runtime, "Function '{}' returned {} values in its {}th output.", name, what, i);
        }
    }
    Ok(())
}

fn sum_opt(acc: Option<Tensor>, g: Tensor) -> Result<Tensor> {
    match acc {
        None => Ok(g),
        Some(a) => binary(Binary::Add, &Operand::T(a), &Operand::T(g), None),
    }
}

/// Adds `g` into a leaf's `.grad`, as PyTorch's AccumulateGrad: the first
/// gradient is stored (copied unless nothing else can see its memory), later
/// ones are added in place, or out of place when building a graph.
fn accumulate(leaf: &Arc<TensorImpl>, g: Tensor, create_graph: bool) -> Result<()> {
    let t = Tensor(leaf.clone());
    if g.shape() != t.shape() {
        bail!(
            Runtime,
            "AccumulateGrad: gradient of shape {:?} for a tensor of shape {:?}",
            g.shape().as_slice(),
            t.shape().as_slice()
        );
    }
    let g = if g.dtype() != t.dtype() { crate::ops::copy::to_dtype(&g, t.dtype())? } else { g };
    let new = match t.grad() {
        None if create_graph => g,
        None => {
            // Owned: no other handle (tensor or view) can see this memory.
            let owned = Arc::strong_count(&g.0) == 1
                && Arc::strong_count(g.storage()) == 1
                && g.is_contiguous()
                && g.layout().offset == 0
                && g.numel() == g.storage().len();
            if owned {
                g.detach_nonview()
            } else {
                crate::ops::copy::contiguous_clone(&g)?
            }
        }
        Some(old) if create_graph || old.requires_grad() => {
            binary(Binary::Add, &Operand::T(old), &Operand::T(g), None)?
        }
        Some(old) => {
            binary_(Binary::Add, &old, &Operand::T(g), None)?;
            old
        }
    };
    t.set_grad(Some(new));
    Ok(())
}
