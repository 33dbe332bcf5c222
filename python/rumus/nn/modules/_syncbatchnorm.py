"""SyncBatchNorm: batch norm whose batch statistics are computed over the whole
data-parallel batch (every rank of the process group), as PyTorch's ``nn.SyncBatchNorm``."""

import rumus

from ...autograd.function import Function
from ...utils.checkpoint import is_checkpointing
from .normalization import _BatchNorm

__all__ = ["SyncBatchNorm"]


class _AllReduceSum(Function):
    """Sums a tensor over the group. The total is a sum of every rank's term, so the gradient
    of each rank's term is the sum over ranks of the incoming gradients: an all-reduce too."""

    @staticmethod
    def forward(ctx, tensor, group):
        from ... import distributed as dist

        ctx.group = group
        out = tensor.clone()
        dist.all_reduce(out, group=group)
        return out

    @staticmethod
    def backward(ctx, grad):
        from ... import distributed as dist

        out = grad.contiguous().clone()
        dist.all_reduce(out, group=ctx.group)
        return out, None


class SyncBatchNorm(_BatchNorm):
    """Batch norm over (N, C, ...) input that, while training in a process group of more than
    one rank, normalizes with the mean and variance of all ranks' batches (two all-reduces in
    forward, two in backward). In eval mode, or without a process group, it is BatchNorm.

    Args:
        num_features (int): C, the number of channels.
        eps (float): added to the variance for stability.
        momentum (float, optional): the running statistics' update factor (None: a
            cumulative average).
        affine (bool): learn a per-channel weight and bias.
        track_running_stats (bool): keep running mean and variance for eval mode.
        process_group (optional): the group whose ranks share statistics (the default group
            when None).
        device (optional): where the parameters live.
        dtype (optional): the parameters' dtype.
    """

    def __init__(
        self,
        num_features,
        eps=1e-5,
        momentum=0.1,
        affine=True,
        track_running_stats=True,
        process_group=None,
        device=None,
        dtype=None,
    ):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype)
        self.process_group = process_group

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError(f"expected at least 2D input (got {input.dim()}D input)")

    def forward(self, input):
        from ... import distributed as dist

        self._check_input_dim(input)
        group = self.process_group
        synced = (
            self.training
            and dist.is_initialized()
            and group is not dist.GroupMember.NON_GROUP_MEMBER
            and dist.get_world_size(group) > 1
        )
        if not synced:
            return super().forward(input)
        c = self.num_features
        if input.size(1) != c:
            raise ValueError(
                f"SyncBatchNorm: expected {c} channels at dim 1, but got input of shape "
                f"{tuple(input.shape)}"
            )
        factor = 0.0 if self.momentum is None else self.momentum
        update = self.track_running_stats and not is_checkpointing()
        if update and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / self.num_batches_tracked.item()
        dims = [0, *range(2, input.dim())]
        shape = [1, c] + [1] * (input.dim() - 2)
        count = rumus.full((1,), float(input.numel() // c), dtype=input.dtype, device=input.device)
        totals = _AllReduceSum.apply(rumus.cat([input.sum(dims), count]), group)
        n = float(totals[c].item())
        if n <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got input size "
                f"{tuple(input.shape)} on all ranks together"
            )
        mean = totals[:c] / n
        centered = input - mean.reshape(shape)
        var = _AllReduceSum.apply((centered * centered).sum(dims), group) / n
        out = centered * rumus.rsqrt(var + self.eps).reshape(shape)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        if update and self.running_mean is not None:
            with rumus.no_grad():
                self.running_mean.mul_(1 - factor).add_(mean.detach() * factor)
                unbiased = var.detach() * (n / (n - 1))
                self.running_var.mul_(1 - factor).add_(unbiased * factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """Returns ``module`` with every BatchNorm*D replaced by a SyncBatchNorm that shares
        its parameters and running statistics (the module itself when it is a BatchNorm).

        Args:
            module (Module): the model (or a BatchNorm layer) to convert.
            process_group (optional): the group the new layers synchronize over.

        Returns:
            Module: the converted module.
        """
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
            )
            if module.affine:
                out.weight = module.weight
                out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
