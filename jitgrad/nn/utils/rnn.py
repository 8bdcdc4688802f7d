"""``nn.utils.rnn``: ``PackedSequence`` and the functions that pack, pad and unpack variable-length
sequences, as PyTorch's (``torch/nn/utils/rnn.py`` and the ``_pack_padded_sequence`` /
``_pad_packed_sequence`` / ``pad_sequence`` kernels of ``aten/src/ATen/native/PackedSequence.cpp``
and ``RNN.cpp``): the same layouts, errors and grad_fn names (the packed data's node is
``PackPaddedSequenceBackward0``, one node over the composition, as PyTorch's).

Credit: ported from PyTorch (https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook,
Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause license; its terms apply to the
ported parts.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ... import _dtype as D
from ...tensor import Tensor

__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence",
           "pad_packed_sequence", "pad_sequence", "unpad_sequence", "pack_sequence",
           "unpack_sequence"]


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


def bind(optional, fn):
    return None if optional is None else fn(optional)


class PackedSequence(PackedSequence_):
    """The time steps of a batch of sequences, longest first, concatenated: ``data`` holds
    ``batch_sizes[t]`` rows for step ``t``; ``sorted_indices`` maps the packed order back to
    the caller's batch order (``unsorted_indices`` is its inverse)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        return super().__new__(cls, *_packed_sequence_init_args(data, batch_sizes,
                                                                sorted_indices,
                                                                unsorted_indices))

    def to(self, *args, **kwargs):
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        non_blocking = kwargs.get("non_blocking", False)

        def call_to(t):
            return t.to(data.device, non_blocking=non_blocking)

        return type(self)(data, self.batch_sizes, bind(self.sorted_indices, call_to),
                          bind(self.unsorted_indices, call_to))

    def cuda(self, *args, **kwargs):
        if not args and "device" not in kwargs:
            kwargs["device"] = "cuda"
        return self.to(*args, **kwargs)

    def cpu(self, *args, **kwargs):
        kwargs["device"] = "cpu"
        return self.to(*args, **kwargs)

    def double(self):
        return self.to(dtype=D.float64)

    def float(self):
        return self.to(dtype=D.float32)

    def half(self):
        return self.to(dtype=D.float16)

    def long(self):
        return self.to(dtype=D.int64)

    def int(self):
        return self.to(dtype=D.int32)

    def short(self):
        return self.to(dtype=D.int16)

    def char(self):
        return self.to(dtype=D.int8)

    def byte(self):
        return self.to(dtype=D.uint8)

    @property
    def is_cuda(self):
        return self.data.is_cuda


def _packed_sequence_init_args(data, batch_sizes=None, sorted_indices=None,
                               unsorted_indices=None):
    if unsorted_indices is None:
        unsorted_indices = invert_permutation(sorted_indices)
    if batch_sizes is not None:
        if batch_sizes.device.type != "cpu":
            raise ValueError(
                "batch_sizes should always be on CPU. Instances of PackedSequence should never "
                "be created manually. They should be instantiated by functions like "
                "pack_sequence and pack_padded_sequences in nn.utils.rnn. "
                "https://pytorch.org/docs/stable/nn.html#torch.nn.utils.rnn.pack_sequence")
        return data, batch_sizes, sorted_indices, unsorted_indices
    if not (isinstance(data, (list, tuple)) and len(data) == 2):
        raise AssertionError("Expected data to be a list or tuple of length 2")
    return data[0], data[1], sorted_indices, unsorted_indices


def invert_permutation(permutation):
    if permutation is None:
        return None
    from ...ops.basic import arange, empty_like
    output = empty_like(permutation)
    output.scatter_(0, permutation, arange(0, permutation.numel(), device=permutation.device))
    return output


def _pack_padded(input, lengths, batch_first):
    """``_VF._pack_padded_sequence``: the packed data (one node) and the batch sizes."""
    from ...ops.basic import tensor
    from ...ops.composite import record_composition
    from ...ops.shape_join import cat
    steps_input = input.transpose(0, 1) if batch_first else input
    batch_size = steps_input.size(1)
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    lengths = [int(v) for v in lengths.tolist()]
    if len(lengths) != batch_size:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch_size})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    batch_sizes, runs, prev = [], [], 0
    for i in range(batch_size):  # shortest sequence first: each run of steps shares a batch
        length = lengths[batch_size - 1 - i]
        if length > prev:
            runs.append((prev, length, batch_size - i))
            batch_sizes += [batch_size - i] * (length - prev)
            prev = length
    step_shape = (-1,) + tuple(steps_input.shape[2:])

    def build(input):
        x = input.transpose(0, 1) if batch_first else input
        return cat([x[start:stop, :batch].contiguous().view(step_shape)
                    for start, stop, batch in runs])

    data = record_composition("PackPaddedSequenceBackward0", (input,), build)
    return data, tensor(batch_sizes, dtype=D.int64)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    from ...ops.basic import as_tensor
    from ...ops.sort import sort
    if not isinstance(lengths, Tensor):
        lengths = as_tensor(lengths, dtype=D.int64, device="cpu")
    else:
        lengths = lengths.to(dtype=D.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        lengths, sorted_indices = sort(lengths, descending=True)
        sorted_indices = sorted_indices.to(input.device)
        input = input.index_select(0 if batch_first else 1, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices, None)


def _pad_packed(data, batch_sizes, batch_first, padding_value, total_length):
    """``_VF._pad_packed_sequence``: the padded (seq, batch, *) tensor and the lengths."""
    from ...ops.basic import full, tensor
    sizes = [int(b) for b in batch_sizes.tolist()]
    max_batch_size, max_real_seq_length = sizes[0], len(sizes)
    max_seq_length = total_length if total_length > 0 else max_real_seq_length
    output = full((max_seq_length, max_batch_size) + tuple(data.shape[1:]), padding_value,
                  dtype=data.dtype, device=data.device)
    lengths = [0] * max_batch_size
    offset, prev_batch_size, prev_i = 0, max_batch_size, 0
    for i in range(max_real_seq_length + 1):
        batch_size = sizes[i] if i != max_real_seq_length else 0
        if batch_size != prev_batch_size:
            n = prev_batch_size * (i - prev_i)
            block = data.narrow(0, offset, n).view((i - prev_i, prev_batch_size)
                                                   + tuple(data.shape[1:]))
            output.narrow(0, prev_i, i - prev_i).narrow(1, 0, prev_batch_size).copy_(block)
            offset += n
            prev_i = i
        for j in range(batch_size, prev_batch_size):
            lengths[j] = i
        prev_batch_size = batch_size
    if batch_first:
        output = output.transpose(0, 1)
    return output, tensor(lengths, dtype=D.int64)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    max_seq_length = sequence.batch_sizes.size(0)
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_seq_length}")
        max_seq_length = total_length
    padded_output, lengths = _pad_packed(sequence.data, sequence.batch_sizes, batch_first,
                                         padding_value, max_seq_length)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (padded_output.index_select(batch_dim, unsorted_indices),
                lengths[unsorted_indices.cpu()])
    return padded_output, lengths


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side="right"):
    from ...ops.basic import full
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg "
                           f"of type: {type(sequences)}")
    sequences = tuple(sequences)
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    max_len = max(s.size(0) for s in sequences)
    count = len(sequences)
    dims = ((count, max_len) if batch_first else (max_len, count)) + trailing
    out = full(dims, padding_value, dtype=sequences[0].dtype, device=sequences[0].device)
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    for i, seq in enumerate(sequences):
        length = seq.size(0)
        start = max_len - length if padding_side == "left" else 0
        if batch_first:
            out.select(0, i).narrow(0, start, length).copy_(seq)
        else:
            out.narrow(0, start, length).select(1, i).copy_(seq)
    return out


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """PyTorch transposes a time-major ``padded_sequences`` in place (``transpose_``); this
    leaves the caller's tensor as it was and transposes a view."""
    from ...ops.basic import arange
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    idx = arange(padded_sequences.shape[1], device=lengths.device)
    return [seq[idx < length] for seq, length in zip(padded_sequences, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    from ...ops.basic import as_tensor
    lengths = as_tensor([v.size(0) for v in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    padded_sequences, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded_sequences, lengths, batch_first=True)
