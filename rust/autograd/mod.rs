//! Autograd engine: graph nodes holding `BackwardOp` variants, version checks,
//! backward. Built in the autograd issue; tensors carry `AutogradMeta` already.
