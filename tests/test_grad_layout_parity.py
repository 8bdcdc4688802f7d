"""Layout metadata as PyTorch reports it: AccumulateGrad lays ``.grad`` out like a
non-overlapping, dense leaf (clone_obey_contract, obeys_layout_contract), ``x[:, None]`` gives
the new dim ATen's unsqueeze stride, and ``clone()`` of an empty tensor keeps its strides.
Each program runs on both libraries and compares what it reads."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch", reason="needs PyTorch")


def _meta(lib, t):
    out = [tuple(t.shape), t.stride(), t.is_contiguous()]
    if t.dim() == 4:
        out.append(t.is_contiguous(memory_format=lib.channels_last))
    return out


def _channels_last_leaf(lib):
    # (built by permutes: channels-last strides (60, 1, 15, 3) on both libraries)
    a = np.arange(120, dtype=np.float32).reshape(2, 4, 5, 3) / 7
    return lib.tensor(a).permute(0, 3, 1, 2).requires_grad_()


def _transposed_leaf(lib):
    a = np.arange(20, dtype=np.float64).reshape(4, 5) / 3
    return lib.tensor(a).t().detach().requires_grad_()


def _overlapping_leaf(lib):  # not dense: the gradient is contiguous
    return lib.tensor(np.arange(5, dtype=np.float64)).expand(3, 5).detach().requires_grad_()


def _sliced_leaf(lib):  # strided, not dense
    a = np.arange(30, dtype=np.float64).reshape(6, 5)
    return lib.tensor(a)[::2].detach().requires_grad_()


def _unit_dim_leaf(lib):  # transposed with a size-1 dim: dense, strides (1, 1)
    return lib.tensor(np.arange(4, dtype=np.float64).reshape(4, 1)).t().detach().requires_grad_()


def _new_dim_leaf(lib):  # x[:, None]: dense, strides (5, 5, 1)
    return lib.tensor(np.arange(5, dtype=np.float64).reshape(1, 5))[:, None].detach() \
        .requires_grad_()


LEAVES = {"channels_last": _channels_last_leaf, "transposed": _transposed_leaf,
          "overlapping": _overlapping_leaf, "sliced": _sliced_leaf, "unit_dim": _unit_dim_leaf,
          "new_dim": _new_dim_leaf}


def _engine_grad(lib, make):
    x = make(lib)
    (x * 2).sum().backward()
    first = _meta(lib, x.grad) + [x.grad._version]
    (x * 3).sum().backward()  # accumulates in place: the layout stays
    return first + _meta(lib, x.grad) + [x.grad.tolist()]


def _user_grad(lib, make):
    x = make(lib)
    x.backward(lib.ones(tuple(x.shape), dtype=x.dtype))
    return _meta(lib, x.grad) + [x.grad._version, x.grad.tolist()]


def _identity_path_grad(lib, make):
    # the gradient reaching the leaf is the engine's, laid out by the path (transposes)
    x = make(lib)
    y = x.transpose(0, 1) * 1
    y.transpose(0, 1).mul(5).sum().backward()
    return _meta(lib, x.grad) + [x.grad.tolist()]


def _hook_grad(lib, make):
    x = make(lib)
    x.register_hook(lambda g: g.contiguous() * 1)
    (x * 2).sum().backward()
    return _meta(lib, x.grad) + [x.grad.tolist()]


def _create_graph_grad(lib, make):
    x = make(lib)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (x * x).sum().backward(create_graph=True)
    first = _meta(lib, x.grad) + [type(x.grad.grad_fn).__name__]
    return first + [x.grad.detach().tolist()]


@pytest.mark.parametrize("leaf", sorted(LEAVES))
@pytest.mark.parametrize("program", [_engine_grad, _user_grad, _identity_path_grad, _hook_grad,
                                     _create_graph_grad], ids=lambda f: f.__name__.strip("_"))
def test_accumulated_grad_layout(program, leaf):
    make = LEAVES[leaf]
    assert program(jg, make) == program(torch, make)


def test_accumulate_grad_keeps_version_parity_for_transposed_leaf():
    def run(lib):
        x = _transposed_leaf(lib)
        (x * 2).sum().backward()
        y = _transposed_leaf(lib)
        y.backward(lib.ones(5, 4, dtype=y.dtype))
        return [x.grad._version, y.grad._version]
    assert run(jg) == run(torch)


KEYS = ["[:, None]", "[None]", "[..., None]", "[:, None, 1:3]", "[None, :, None]",
        "[:, None, None]", "[1, None]", "[None, ..., None]", "[::2, None]", "[None, 1:3]",
        "[None, 1]", "[None, ::2, None]", "[:, :, None, None]", "[None][None]", "[-1, None, 2:]",
        "[..., None, :]", "[None, -1]", "[1:2, None]", "[None, :, 0]"]


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("base", ["plain", "transposed", "scalar_row", "unit_dim", "expanded"])
def test_getitem_none_strides(key, base):
    def run(lib):
        x = lib.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
        if base == "transposed":
            x = x.t()
        elif base == "scalar_row":
            x = x[1:3]
        elif base == "unit_dim":  # a size-1 dim in the input (its stride is ATen's too)
            x = x[1:2].transpose(0, 1)
        elif base == "expanded":
            x = x[0].expand(3, 5)
        y = eval("x" + key, {"x": x})
        return [tuple(y.shape), y.stride(), y.storage_offset(), y.tolist()]
    assert run(jg) == run(torch)


@pytest.mark.parametrize("expr", ["x[None]", "x[1, None]", "x[None, 2:]", "x[..., None]",
                                  "x[2][None]", "x[2][..., None]", "x[2][None, None]"])
def test_getitem_none_low_dims(expr):  # 1-D and 0-d inputs
    def run(lib):
        y = eval(expr, {"x": lib.tensor(np.arange(5, dtype=np.float32))})
        return [tuple(y.shape), y.stride(), y.storage_offset(), y.tolist()]
    assert run(jg) == run(torch)


def test_getitem_none_view_writes_through():
    def run(lib):
        x = lib.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
        y = x[:, None, 1:3]
        y[2, 0, 1] = -1
        return [x.tolist(), y.stride(), y._base is x]
    assert run(jg) == run(torch)


def test_getitem_none_gradient():
    def run(lib):
        x = lib.tensor(np.arange(20, dtype=np.float64).reshape(4, 5), requires_grad=True)
        (x[1:3, None] * lib.tensor([[[1.0], [2.0]]]).transpose(0, 1)).sum().backward()
        return x.grad.tolist()
    assert run(jg) == run(torch)


def test_unsqueeze_strides_match_getitem():
    def run(lib):
        x = lib.tensor(np.arange(20, dtype=np.float32).reshape(4, 5))
        return [x.unsqueeze(d).stride() for d in range(3)] + [x.t().unsqueeze(1).stride()]
    assert run(jg) == run(torch)


EMPTY = ["lib.empty(0, 3).t()", "lib.empty(4, 5)[:, 2:2]", "lib.empty(3, 0).t()",
         "lib.empty(0, 3, 4, 5).permute(0, 2, 3, 1)", "lib.empty(0, 1).expand(0, 3)",
         "lib.empty(4, 6)[:, 1:1:2]", "lib.empty(0, 5)"]


@pytest.mark.parametrize("expr", EMPTY)
@pytest.mark.parametrize("fmt", [None, "contiguous_format"])
def test_clone_of_empty_keeps_strides(expr, fmt):
    def run(lib):
        t = eval(expr, {"lib": lib})
        c = t.clone() if fmt is None else t.clone(memory_format=getattr(lib, fmt))
        return [tuple(c.shape), c.stride(), c.storage_offset()]
    assert run(jg) == run(torch)
