"""``nn.utils.rnn`` against PyTorch: pad_sequence, pack_padded_sequence, pad_packed_sequence,
pack_sequence, unpack_sequence and unpad_sequence (values exactly, batch sizes, sorted/unsorted
indices, lengths, grad_fn names, gradients, errors word for word), and RNN/LSTM/GRU fed a
PackedSequence (packed outputs, final states in the caller's order, every gradient, train-mode
dropout)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
from tests._parity import agree

RNG = np.random.default_rng(31)
LENGTHS = [2, 4, 1, 3]  # unsorted: enforce_sorted=False sorts them
TOL = {np.float32: dict(rtol=1e-4, atol=1e-5), np.float64: dict(rtol=1e-10, atol=1e-12)}


def randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


SEQS = [randn(n, 2) for n in LENGTHS]


def described(lib, value, leaves):
    """Values exactly, each tensor's grad_fn name, then the leaves' gradients of a fixed
    weighted sum of the floating outputs."""
    tensors = [t for t in (value if isinstance(value, (list, tuple)) else [value])
               if isinstance(t, lib.Tensor)]
    names = [None if t.grad_fn is None else type(t.grad_fn).__name__ for t in tensors]
    w = np.random.default_rng(4)
    floats = [t for t in tensors if t.is_floating_point() and t.requires_grad]
    if floats:
        sum((t * lib.tensor(w.standard_normal(tuple(t.shape)))).sum() for t in floats).backward()
    return value, names, [None if x.grad is None else x.grad for x in leaves]


def leaves(lib, arrays):
    return [lib.tensor(a, requires_grad=True) for a in arrays]


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    def fn(lib):
        xs = leaves(lib, SEQS)
        out = lib.nn.utils.rnn.pad_sequence(xs, batch_first=batch_first, padding_value=-1.5,
                                            padding_side=padding_side)
        return described(lib, out, xs)
    agree(fn)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_padded_sequence(batch_first, enforce_sorted):
    lengths = sorted(LENGTHS, reverse=True) if enforce_sorted else LENGTHS
    padded = randn(4, 4, 2)

    def fn(lib):
        (x,) = leaves(lib, [padded])
        packed = lib.nn.utils.rnn.pack_padded_sequence(
            x, lib.tensor(lengths), batch_first=batch_first, enforce_sorted=enforce_sorted)
        return (type(packed).__name__, *described(lib, list(packed), [x]))
    agree(fn)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("total_length", [None, 6])
def test_pad_packed_sequence_round_trip(batch_first, total_length):
    def fn(lib):
        xs = leaves(lib, SEQS)
        packed = lib.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
        padded, lengths = lib.nn.utils.rnn.pad_packed_sequence(
            packed, batch_first=batch_first, padding_value=7.0, total_length=total_length)
        return described(lib, [padded, lengths], xs)
    agree(fn)


def test_pack_and_unpack_sequence():
    def fn(lib):
        xs = leaves(lib, sorted(SEQS, key=len, reverse=True))
        packed = lib.nn.utils.rnn.pack_sequence(xs)
        back = lib.nn.utils.rnn.unpack_sequence(packed)
        return list(packed), described(lib, back, xs)
    agree(fn)


def test_unpad_sequence():
    def fn(lib):
        padded = lib.tensor(randn(3, 4, 2, dt=np.float64) * 0 + np.arange(12.).reshape(3, 4, 1))
        return lib.nn.utils.rnn.unpad_sequence(padded.transpose(0, 1).contiguous(),
                                               lib.tensor([3, 1, 2, 3]), batch_first=True)
    agree(fn)


def test_packed_sequence_type_and_conversions():
    def fn(lib):
        packed = lib.nn.utils.rnn.pack_sequence([lib.tensor(s) for s in SEQS],
                                                enforce_sorted=False)
        as_float = packed.float()
        return (isinstance(packed, tuple), packed._fields, list(as_float), as_float.is_cuda,
                packed.to(lib.float64) is packed,
                list(lib.nn.utils.rnn.PackedSequence(packed.data, packed.batch_sizes)),
                lib.nn.utils.rnn.invert_permutation(lib.tensor([2, 0, 3, 1])))
    agree(fn)


UTIL_ERRORS = [
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [1, 3]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [3, 0]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 2, 1), [3, 2, 1]),
    lambda lib: lib.nn.utils.rnn.pack_padded_sequence(lib.zeros(3, 0, 1), []),
    lambda lib: lib.nn.utils.rnn.pad_packed_sequence(
        lib.nn.utils.rnn.pack_sequence([lib.zeros(3, 1)]), total_length=2),
    lambda lib: lib.nn.utils.rnn.pad_sequence([]),
    lambda lib: lib.nn.utils.rnn.pad_sequence(3),
    lambda lib: lib.nn.utils.rnn.pad_sequence([lib.zeros(2)], padding_side="middle"),
    lambda lib: lib.nn.utils.rnn.PackedSequence(lib.zeros(3)),
]


@pytest.mark.parametrize("fn", UTIL_ERRORS)
def test_errors(fn):
    agree(fn)


# ----------------------------------------------------------------------------- packed layers


def run_packed(lib, cls, kw, with_hx, dt=np.float64, train=False):
    lib.manual_seed(0)
    m = getattr(lib.nn, cls)(2, 3, dtype=lib.float64 if dt == np.float64 else lib.float32, **kw)
    m.train(train)
    xs = [lib.tensor(s.astype(dt), requires_grad=True) for s in SEQS]
    packed = lib.nn.utils.rnn.pack_sequence(xs, enforce_sorted=False)
    d = (2 if kw.get("bidirectional") else 1) * kw.get("num_layers", 1)
    hts = []
    if with_hx:
        rng = np.random.default_rng(2)
        sizes = [kw.get("proj_size") or 3] + ([3] if cls == "LSTM" else [])
        hts = [lib.tensor(rng.standard_normal((d, len(SEQS), s)).astype(dt), requires_grad=True)
               for s in sizes]
    lib.manual_seed(1)
    out, h = m(packed, (tuple(hts) if cls == "LSTM" else hts[0]) if hts else None)
    assert type(out).__name__ == "PackedSequence"
    outs = [out.data, *(h if isinstance(h, tuple) else (h,))]
    w = np.random.default_rng(9)
    sum((o * lib.tensor(w.standard_normal(tuple(o.shape)).astype(dt))).sum()
        for o in outs).backward()
    extra = [out.batch_sizes.tolist(), out.sorted_indices.tolist(), out.unsorted_indices.tolist(),
             [type(o.grad_fn).__name__ for o in outs]]
    grads = [x.grad for x in xs] + [t.grad for t in hts] + [p.grad for p in m.parameters()]
    return [o.detach().numpy() for o in outs], [g.numpy() for g in grads], extra


PACKED_CASES = [
    ("RNN", dict(nonlinearity="relu"), True),
    ("LSTM", dict(num_layers=2, bidirectional=True), True),
    ("LSTM", dict(proj_size=2, bidirectional=True), False),
    ("GRU", dict(num_layers=2, bidirectional=True, batch_first=True), False),
]


@pytest.mark.parametrize("dt", [np.float64, np.float32])
@pytest.mark.parametrize("cls,kw,with_hx", PACKED_CASES)
def test_layers_take_packed_sequences(cls, kw, with_hx, dt):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's oneDNN notice for float32 projections
        ref = run_packed(torch, cls, kw, with_hx, dt)
    mine = run_packed(jg, cls, kw, with_hx, dt)
    for a, b in zip(mine[0] + mine[1], ref[0] + ref[1]):
        np.testing.assert_allclose(a, b, **TOL[dt])
    assert mine[2] == ref[2]


def test_packed_training_dropout():
    kw = dict(num_layers=3, dropout=0.5, bidirectional=True)
    mine, ref = (run_packed(lib, "GRU", kw, False, train=True) for lib in (jg, torch))
    for a, b in zip(mine[0] + mine[1], ref[0] + ref[1]):
        np.testing.assert_allclose(a, b, **TOL[np.float64])
