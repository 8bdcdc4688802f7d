"""A sample of the newer torch.* names on CUDA tensors: the view copies and unsafe splits
(ops/view_copies.py), torch.gradient (ops/gradient.py), index_reduce (ops/index_reduce.py),
vander, native_dropout's eval path, conv_tbc and an RNN cell: forward and backward against
the CPU path (itself checked against PyTorch in tests/test_view_copy_functions.py,
test_toplevel_more.py, test_toplevel_nn_more.py), results staying on the device.

Simulator run (own process, tiny shapes)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_toplevel_more.py
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

RNG = np.random.default_rng(9)
A = RNG.standard_normal((4, 5))
S = RNG.standard_normal((3, 5))
COORD = np.array([0.0, 0.5, 1.5, 3.0])


def _t(a, dev, grad=False):
    return jg.tensor(a, device=dev, requires_grad=grad)


CASES = {
    "t_copy": lambda x, s, dev: jg.t_copy(x),
    "permute_copy": lambda x, s, dev: jg.permute_copy(x.reshape(2, 2, 5), (2, 0, 1)),
    "expand_copy": lambda x, s, dev: jg.expand_copy(x[:1], (3, 5)),
    "select_copy": lambda x, s, dev: jg.select_copy(x, 1, 2),
    "slice_copy": lambda x, s, dev: jg.slice_copy(x, 1, 1, 5, 2),
    "split_copy": lambda x, s, dev: jg.split_copy(x, 2, 1),
    "unbind_copy": lambda x, s, dev: jg.unbind_copy(x, 0),
    "unfold_copy": lambda x, s, dev: jg.unfold_copy(x, 1, 2, 2),
    "squeeze_copy": lambda x, s, dev: jg.squeeze_copy(x.reshape(1, 4, 5), 0),
    "narrow_copy": lambda x, s, dev: x.narrow_copy(1, 1, 3),
    "unsafe_split": lambda x, s, dev: jg.unsafe_split(x, 2, 1),
    "unsafe_chunk": lambda x, s, dev: x.unsafe_chunk(2),
    "gradient": lambda x, s, dev: jg.gradient(x, spacing=0.5, edge_order=2),
    "gradient_coordinates": lambda x, s, dev: jg.gradient(x, spacing=[_t(COORD, dev)], dim=0),
    "index_reduce_amin": lambda x, s, dev: jg.index_reduce(x, 0, _t(np.array([0, 2, 0]), dev),
                                                           s, "amin"),
    "index_reduce_amax": lambda x, s, dev: x.index_reduce(0, _t(np.array([1, 1, 3]), dev), s,
                                                          "amax", include_self=False),
    "index_reduce_mean": lambda x, s, dev: x.index_reduce(0, _t(np.array([1, 1, 3]), dev), s,
                                                          "mean"),
    "native_dropout_eval": lambda x, s, dev: jg.native_dropout(x, 0.3, False)[0],
    "conv_tbc": lambda x, s, dev: jg.conv_tbc(x.reshape(4, 1, 5), s.reshape(3, 5, 1)[:2],
                                              s[0, :1]),
    "native_group_norm": lambda x, s, dev: jg.native_group_norm(x.reshape(2, 2, 5), s[0, :2],
                                                                s[1, :2], 2, 2, 5, 1, 1e-5),
    "rnn_tanh": lambda x, s, dev: jg.rnn_tanh(x.reshape(2, 2, 5), x[:1, :3].reshape(1, 1, 3)
                                              .expand(1, 2, 3), [s[:, :5], s[:, :3]], False, 1,
                                              0.0, False, False, True),
    "gru_cell": lambda x, s, dev: jg.gru_cell(x[:, :3], x[:, 3:5], s.reshape(15)[:6].reshape(
        6, 1).expand(6, 3) * 0.5, s.reshape(15)[6:12].reshape(6, 1).expand(6, 2) * 0.5),
}


def _run(fn, dev):
    x, s = _t(A, dev, True), _t(S, dev, True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = fn(x, s, dev)
    outs = out if isinstance(out, tuple) else (out,)
    for o in outs:
        assert o.device.type == ("cuda" if dev == "cuda" else "cpu")
    loss = sum((o * (jg.arange(o.numel(), dtype=o.dtype, device=dev).reshape(o.shape) / 7.0
                      + 0.5)).sum() for o in outs)
    loss.backward()
    grads = [None if t.grad is None else t.grad.cpu().numpy() for t in (x, s)]
    return [o.detach().cpu().numpy() for o in outs], grads, \
        [type(o.grad_fn).__name__ for o in outs]


@pytest.mark.parametrize("name", sorted(CASES))
def test_forward_and_backward_match_cpu(device, name):
    yc, gc, nc = _run(CASES[name], "cpu")
    yd, gd, nd = _run(CASES[name], "cuda")
    assert nd == nc
    for a, b in zip(yd, yc):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    for a, b in zip(gd, gc):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_vander_and_integer_inputs_match_cpu(device):
    v = np.array([1, -2, 3])
    for fn in (lambda t: jg.vander(t), lambda t: jg.vander(t.double(), 4, True),
               lambda t: jg.t_copy(t.reshape(1, 3)),
               lambda t: jg.index_reduce(t, 0, t.new_tensor([0, 0]).long(), t[:2] * 3,
                                         "amin")):
        c, d = fn(jg.tensor(v)), fn(jg.tensor(v, device="cuda"))
        assert d.device.type == "cuda" and d.dtype is c.dtype
        np.testing.assert_array_equal(d.cpu().numpy(), c.numpy())


def test_embedding_renorm_matches_cpu(device):
    out = []
    for dev in ("cpu", "cuda"):
        w = jg.tensor(A, device=dev)
        r = jg.embedding_renorm_(w, jg.tensor([[0, 3], [3, 1]], device=dev), 1.5, 2.0)
        assert r is w and w.device.type == dev
        out.append(w.cpu().numpy())
    np.testing.assert_allclose(out[1], out[0], rtol=1e-12, atol=1e-12)


def test_index_reduce_prod_refuses_cuda(device):
    x = jg.ones(3, 2, device="cuda")
    with pytest.raises(NotImplementedError, match="index_reduce with reduce='prod'"):
        jg.index_reduce(x, 0, jg.tensor([0], device="cuda"), x[:1], "prod")


def test_native_dropout_training_stays_on_device(device):
    x = jg.ones(3, 4, dtype=jg.float64, device="cuda", requires_grad=True)
    out, mask = jg.native_dropout(x, 0.5, True)
    assert out.device.type == "cuda" and mask.device.type == "cuda" and mask.dtype is jg.bool
    out.sum().backward()
    m = mask.cpu().numpy()
    np.testing.assert_array_equal(out.detach().cpu().numpy(), m * 2.0)
    np.testing.assert_array_equal(x.grad.cpu().numpy(), m * 2.0)
