"""SparseAdam (torch.optim.sparse_adam) for rumus's dense gradients.

PyTorch's SparseAdam takes sparse gradients only (nn.Embedding(sparse=True))
and raises for dense ones. rumus has no sparse tensors, so rumus's SparseAdam
applies the rule PyTorch documents for it to dense gradients: the entries
whose gradient is exactly zero are masked out, so their moments and values
stay as they are, and the others get Adam's update (no weight decay). This is
what torch.optim.SparseAdam does when the sparse gradient holds exactly the
nonzero entries. Use Adam where every entry should be updated.
"""

from .. import _rumus
from ..autograd import enable_grad, no_grad
from .optimizer import Optimizer, _check

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, maximize=False):
        _check(0.0 < lr, f"Invalid learning rate: {lr}")
        _check(0.0 < eps, f"Invalid epsilon value: {eps}")
        _check(0.0 <= betas[0] < 1.0, f"Invalid beta parameter at index 0: {betas[0]}")
        _check(0.0 <= betas[1] < 1.0, f"Invalid beta parameter at index 1: {betas[1]}")
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, maximize=maximize)
        super().__init__(params, defaults)

    @no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        for group in self.param_groups:
            (b1, b2), eps, lr = group["betas"], group["eps"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = -p.grad if group["maximize"] else p.grad
                st = self.state[p]
                if not st:
                    st["step"] = 0
                    st["exp_avg"] = _rumus.zeros_like(p)
                    st["exp_avg_sq"] = _rumus.zeros_like(p)
                st["step"] += 1
                m, v = st["exp_avg"], st["exp_avg_sq"]
                mask = (g != 0).to(p.dtype)
                # Moments move only where the gradient is nonzero.
                m.add_(mask * (g - m) * (1 - b1))
                v.add_(mask * (g * g - v) * (1 - b2))
                bc1, bc2 = 1 - b1 ** st["step"], 1 - b2 ** st["step"]
                step_size = lr * bc2**0.5 / bc1
                p.sub_(mask * m / (v.sqrt() + eps) * step_size)
        return loss
