"""Variable-length sequences for the recurrent layers (PyTorch's ``torch.nn.utils.rnn``).

A PackedSequence holds the rows of every sequence time-major: step t holds
``batch_sizes[t]`` rows, one per sequence still running, longest first. Packing and
padding are one ``index_select`` each, with the index computed on the host from
the lengths, so they are differentiable and run on the data's device.
"""

from collections import namedtuple

import numpy as np

import rumus

__all__ = [
    "PackedSequence",
    "invert_permutation",
    "pack_padded_sequence",
    "pad_packed_sequence",
    "pad_sequence",
    "unpad_sequence",
    "pack_sequence",
    "unpack_sequence",
]

_PackedSequenceBase = namedtuple(
    "PackedSequence_", ["data", "batch_sizes", "sorted_indices", "unsorted_indices"]
)


def _index(values, device):
    return rumus.as_tensor(np.ascontiguousarray(values, dtype=np.int64), device=device)


def _ints(t):
    """A list of Python ints from a tensor, list or tuple."""
    if isinstance(t, rumus.Tensor):
        return [int(v) for v in t.reshape(-1).tolist()]
    return [int(v) for v in t]


def invert_permutation(permutation):
    """The permutation that undoes ``permutation`` (None stays None).

    Args:
        permutation: an int64 permutation tensor, or None.

    Returns:
        The inverse permutation, or None.
    """
    if permutation is None:
        return None
    perm = np.asarray(_ints(permutation), dtype=np.int64)
    inv = np.empty_like(perm)
    inv[perm] = np.arange(perm.size, dtype=np.int64)
    return _index(inv, permutation.device)


class PackedSequence(_PackedSequenceBase):
    """(data, batch_sizes, sorted_indices, unsorted_indices), as PyTorch's.

    ``data`` is (sum(lengths), *); ``batch_sizes`` an int64 CPU tensor with the number
    of sequences alive at each step; ``sorted_indices`` maps the packed batch order to
    the original one (None when the input was already sorted).

    Args:
        data: the packed time steps.
        batch_sizes: the number of sequences at each step.
        sorted_indices: the packed-to-original batch order, or None.
        unsorted_indices: its inverse (computed from sorted_indices when None).
    """

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is not None:
            if batch_sizes.device.type != "cpu":
                raise ValueError(
                    "batch_sizes should always be on CPU. Instances of PackedSequence should "
                    "never be created manually. They should be instantiated by functions like "
                    "pack_sequence and pack_padded_sequences in nn.utils.rnn."
                )
            return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)
        data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Moves/casts ``data`` (indices follow its device; batch_sizes stay on the CPU)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        dev = data.device
        move = lambda t: None if t is None else t.to(dev)  # noqa: E731
        return type(self)(
            data, self.batch_sizes, move(self.sorted_indices), move(self.unsorted_indices)
        )

    def cpu(self, *args, **kwargs):
        return self.to("cpu")

    def cuda(self, *args, **kwargs):
        return self.to("cuda")

    def double(self):
        return self.to(dtype=rumus.float64)

    def float(self):
        return self.to(dtype=rumus.float32)

    def half(self):
        return self.to(dtype=rumus.float16)

    def long(self):
        return self.to(dtype=rumus.int64)

    def int(self):
        return self.to(dtype=rumus.int32)

    @property
    def is_cuda(self):
        return self.data.is_cuda

    def is_pinned(self):
        return False


def _lengths_array(lengths):
    if isinstance(lengths, rumus.Tensor) and lengths.dim() != 1:
        raise ValueError(f"lengths must be a 1-D tensor, got shape {tuple(lengths.shape)}")
    return np.asarray(_ints(lengths), dtype=np.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a padded batch of sequences with the given lengths.

    Args:
        input: the padded batch (T, B, *), or (B, T, *) with batch_first.
        lengths: the length of each sequence (a list or a 1-D tensor).
        batch_first: whether input is (B, T, *).
        enforce_sorted: require lengths sorted in decreasing order (False: sort them and
            record the permutation).

    Returns:
        A PackedSequence.
    """
    lens = _lengths_array(lengths)
    if input.dim() < 2:
        raise ValueError(
            f"pack_padded_sequence: expected input of at least 2 dims (T, B, *), "
            f"got shape {tuple(input.shape)}"
        )
    batch_dim = 0 if batch_first else 1
    steps, batch = input.shape[1 - batch_dim], input.shape[batch_dim]
    if lens.size != batch:
        raise ValueError(
            f"Expected `len(lengths)` to be equal to batch_size, but got {lens.size} "
            f"(batch_size={batch})"
        )
    if batch and lens.min() <= 0:
        raise RuntimeError(
            "Length of all samples has to be greater than 0, but found an element in "
            "'lengths' that is <= 0"
        )
    if enforce_sorted:
        if np.any(lens[1:] > lens[:-1]):
            raise RuntimeError(
                "`lengths` array must be sorted in decreasing order when `enforce_sorted` is "
                "True. You can pass `enforce_sorted=False` to pack_padded_sequence and/or "
                "pack_sequence to sidestep this requirement if you do not need ONNX "
                f"exportability. (got lengths {lens.tolist()})"
            )
        order = np.arange(batch, dtype=np.int64)
        sorted_indices = None
    else:
        order = np.argsort(-lens, kind="stable").astype(np.int64)
        sorted_indices = _index(order, input.device)
    slens = lens[order]
    if batch and slens[0] > steps:
        raise RuntimeError(
            f"pack_padded_sequence: a length of {int(slens[0])} exceeds the input's "
            f"{steps} time steps (input shape {tuple(input.shape)})"
        )
    max_len = int(slens[0]) if batch else 0
    t = np.arange(max_len)[:, None]
    alive = t < slens[None, :]
    batch_sizes = alive.sum(1).astype(np.int64)
    src = order[None, :]
    flat = src * steps + t if batch_first else t * batch + src
    idx = flat[alive]
    rows = input.reshape((steps * batch,) + tuple(input.shape[2:]))
    data = rows.index_select(0, _index(idx, input.device))
    return PackedSequence(data, _index(batch_sizes, "cpu"), sorted_indices, None)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Inverse of pack_padded_sequence: a padded batch and the lengths.

    Args:
        sequence: a PackedSequence.
        batch_first: return (B, T, *) instead of (T, B, *).
        padding_value: the value of the padding.
        total_length: pad to this length instead of the longest sequence.

    Returns:
        (padded, lengths), lengths as an int64 CPU tensor in the original batch order.
    """
    data, bs = sequence.data, np.asarray(_ints(sequence.batch_sizes), dtype=np.int64)
    max_len, batch = bs.size, int(bs[0]) if bs.size else 0
    if total_length is not None:
        if total_length < max_len:
            raise ValueError(
                "Expected total_length to be at least the length of the longest sequence in "
                f"input, but got total_length={total_length} and max sequence length being "
                f"{max_len}"
            )
        steps = total_length
    else:
        steps = max_len
    rows = data.shape[0]
    offsets = np.concatenate([[0], np.cumsum(bs)[:-1]]).astype(np.int64)
    b = np.arange(batch)[None, :]
    live = np.zeros((steps, batch), dtype=bool)
    live[:max_len] = b < bs[:, None]
    idx = np.where(live, np.pad(offsets, (0, steps - max_len))[:, None] + b, rows)
    lengths = (b < bs[:, None]).sum(0).astype(np.int64)
    if sequence.unsorted_indices is not None:
        unsorted = np.asarray(_ints(sequence.unsorted_indices), dtype=np.int64)
        idx, lengths = idx[:, unsorted], lengths[unsorted]
    if batch_first:
        idx = idx.T
    pad = rumus.full(
        (1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype, device=data.device
    )
    flat = rumus.cat([data, pad], 0).index_select(0, _index(idx.reshape(-1), data.device))
    out = flat.reshape(idx.shape + tuple(data.shape[1:]))
    return out, _index(lengths, "cpu")


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    """Stacks sequences of shape (L_i, *) into (max L, B, *) (or (B, max L, *)).

    Args:
        sequences: the tensors (L_i, *).
        batch_first: return (B, max L, *).
        padding_value: the value of the padding.
        padding_side: "right" or "left".

    Returns:
        The padded batch.
    """
    if padding_side not in ("left", "right"):
        raise ValueError(
            f"Expected padding_side to be one of left or right, but got {padding_side}."
        )
    seqs = list(sequences)
    if not seqs:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(seqs[0].shape[1:])
    for i, s in enumerate(seqs):
        if s.dim() == 0 or tuple(s.shape[1:]) != trailing:
            raise RuntimeError(
                f"pad_sequence: the sequences must share their trailing dims: sequence 0 has "
                f"shape {tuple(seqs[0].shape)}, sequence {i} has shape {tuple(s.shape)}"
            )
    lens = np.array([s.shape[0] for s in seqs], dtype=np.int64)
    max_len = int(lens.max())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]]).astype(np.int64)
    t = np.arange(max_len)[:, None]
    shift = (max_len - lens)[None, :] if padding_side == "left" else 0
    pos = t - shift
    idx = np.where((pos >= 0) & (pos < lens[None, :]), starts[None, :] + pos, lens.sum())
    if batch_first:
        idx = idx.T
    ref = seqs[0]
    pad = rumus.full((1,) + trailing, padding_value, dtype=ref.dtype, device=ref.device)
    flat = rumus.cat(seqs + [pad], 0).index_select(0, _index(idx.reshape(-1), ref.device))
    return flat.reshape(idx.shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """The list of sequences inside a padded batch, each cut to its length.

    Args:
        padded_sequences: the padded batch (T, B, *), or (B, T, *) with batch_first.
        lengths: the length of each sequence.
        batch_first: whether the batch is (B, T, *).

    Returns:
        A list of tensors (L_i, *).
    """
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded_sequences, _ints(lengths))]


def pack_sequence(sequences, enforce_sorted=True):
    """Packs a list of sequences of shape (L_i, *).

    Args:
        sequences: the tensors (L_i, *).
        enforce_sorted: require them sorted by decreasing length.

    Returns:
        A PackedSequence.
    """
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """The list of sequences of a PackedSequence, in their original order.

    Args:
        packed_sequences: a PackedSequence.

    Returns:
        A list of tensors (L_i, *).
    """
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
