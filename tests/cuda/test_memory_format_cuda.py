"""memory_format on CUDA tensors: the strides, is_contiguous for each format, values and
grad_fn names of contiguous / to / clone / empty / *_like / Module.to / .to(device) / .cpu()
match PyTorch's CPU result (PyTorch gives every device the same strides).

Run on the simulator in its own process, or on a GPU::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_memory_format_cuda.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")
from tests._memory_format_cases import LIKES  # noqa: E402 - next to the harness import
from tests._parity import agree  # noqa: E402 - after the skip: the harness needs PyTorch

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d")
SHAPES = [(2, 3, 4, 5), (2, 3, 1, 1), (1, 3, 1, 4), (2, 1, 4, 5), (0, 3, 4, 5),
          (2, 3, 2, 4, 5), (1, 3, 1, 1, 1), (3, 4)]


def _where(lib):
    """jitgrad runs on the CUDA device, PyTorch (the reference) on its CPU."""
    return "cuda" if lib is jitgrad else "cpu"


def _inputs(lib, shape, seed=0):
    """The same float32 values as a contiguous and as a channels-last tensor of ``lib``
    (made on the device: the conversions below run there)."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    x = lib.tensor(a, device=_where(lib)) if a.size else lib.empty(shape, device=_where(lib))
    cl = {4: "channels_last", 5: "channels_last_3d"}.get(len(shape))
    return x, (x.contiguous(memory_format=getattr(lib, cl)) if cl else x.t())


def _describe(t, src=None, values=True):
    lib = torch if isinstance(t, torch.Tensor) else jitgrad
    gf = t.grad_fn
    d = {"shape": tuple(t.shape), "stride": t.stride(),
         "is_contiguous": [t.is_contiguous(memory_format=getattr(lib, f)) for f in FORMATS],
         "grad_fn": gf and type(gf).__name__, "alias": t is src,
         "requires_grad": t.requires_grad, "dtype": str(t.dtype).split(".")[-1]}
    if values:
        d["values"] = t.detach().cpu().numpy().tolist()
    return d


def _check(fn):
    """The same description (or error) from both libraries (``tests/_parity.agree``)."""
    agree(fn)


# --- conversions on the device ------------------------------------------------------------------

CONVERSIONS = {
    "contiguous": lambda L, t: t.contiguous(memory_format=L.channels_last),
    "contiguous_3d": lambda L, t: t.contiguous(memory_format=L.channels_last_3d),
    "contiguous_default": lambda L, t: t.contiguous(),
    "to": lambda L, t: t.to(memory_format=L.channels_last),
    "to_3d": lambda L, t: t.to(memory_format=L.channels_last_3d),
    "to_contiguous": lambda L, t: t.to(memory_format=L.contiguous_format),
    "to_f64": lambda L, t: t.to(L.float64, memory_format=L.channels_last),
    "to_f64_preserve": lambda L, t: t.to(L.float64),
    "to_int": lambda L, t: t.to(L.int32, memory_format=L.channels_last),
    "clone": lambda L, t: t.clone(memory_format=L.channels_last),
    "clone_3d": lambda L, t: t.clone(memory_format=L.channels_last_3d),
    "clone_preserve": lambda L, t: t.clone(),
    "clone_contiguous": lambda L, t: t.clone(memory_format=L.contiguous_format),
}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("which", ["contiguous", "channels_last"])
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("op", sorted(CONVERSIONS))
def test_conversion(device, op, which, grad, shape):
    def run(L):
        x, c = _inputs(L, shape)
        src = (x if which == "contiguous" else c).requires_grad_(grad)
        return _describe(CONVERSIONS[op](L, src), src)
    _check(run)


def test_backward_through_channels_last_copy(device):
    def run(L):
        x, _ = _inputs(L, (2, 3, 4, 5))
        x.requires_grad_(True)
        y = x.to(L.float64, memory_format=L.channels_last)
        (y * y).sum().backward()
        return x.grad.stride(), x.grad.cpu().numpy().tolist()
    _check(run)


# --- factories on the device --------------------------------------------------------------------

_NO_VALUES = ("empty_like", "randn_like", "rand_like")  # (CUDA's generator is not the CPU's)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("which", ["contiguous", "channels_last"])
@pytest.mark.parametrize("fmt", [None, "contiguous_format", "channels_last", "channels_last_3d"])
@pytest.mark.parametrize("op", sorted(LIKES))
def test_like(device, op, fmt, which, shape):
    def run(L):
        x, c = _inputs(L, shape)
        kw = {} if fmt is None else {"memory_format": getattr(L, fmt)}
        out = LIKES[op](L, x if which == "contiguous" else c, **kw)
        assert out.device.type == _where(L)
        return _describe(out, values=op not in _NO_VALUES)
    _check(run)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("fmt", FORMATS)
def test_empty(device, fmt, shape):
    def run(L):
        t = L.empty(*shape, memory_format=getattr(L, fmt), device=_where(L))
        assert t.device.type == _where(L)
        return _describe(t, values=False)
    _check(run)


def test_like_of_a_host_tensor_on_the_device(device):
    """``zeros_like(cpu_tensor, device='cuda')`` keeps the host tensor's layout."""
    def run(L):
        x = L.ones(2, 3, 4, 5).contiguous(memory_format=L.channels_last)
        out = L.zeros_like(x, device=_where(L))
        return _describe(out)
    _check(run)


# --- moving between devices keeps the (dense) strides -------------------------------------------

VIEWS = {
    "contiguous": lambda L, t: t,
    "channels_last": lambda L, t: t.contiguous(memory_format=L.channels_last),
    "transposed": lambda L, t: t.transpose(1, 3),
    "sliced": lambda L, t: t[:, :, ::2],
    "permuted_sliced": lambda L, t: t.permute(0, 2, 3, 1)[:, ::2],
    "expanded": lambda L, t: t[:, :1].expand(2, 3, 4, 5),
}


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 3, 1, 1), (0, 3, 4, 5)])
@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("direction", ["to_cuda", "cuda", "cpu", "to_cuda_channels_last"])
def test_transfer_keeps_strides(device, direction, view, shape):
    """PyTorch's ``.to(device)`` is ``_to_copy`` with preserve_format: a dense tensor's strides,
    else ATen's infer_dense_strides; the reference is the same copy on PyTorch's CPU
    (``to(copy=True)``)."""
    def run(L):
        a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
        if L is torch:
            v = VIEWS[view](L, L.tensor(a) if a.size else L.empty(shape))
            fmt = {"memory_format": L.channels_last} if direction.endswith("channels_last") \
                else {}
            return _describe(v.to("cpu", copy=True, **fmt), values=True) | {"grad_fn": None}
        src = "cuda" if direction == "cpu" else "cpu"
        v = VIEWS[view](L, L.tensor(a, device=src) if a.size else L.empty(shape, device=src))
        out = {"to_cuda": lambda: v.to("cuda"), "cuda": lambda: v.cuda(),
               "cpu": lambda: v.cpu(),
               "to_cuda_channels_last": lambda: v.to("cuda", memory_format=L.channels_last)
               }[direction]()
        assert str(out.device) == ("cpu" if direction == "cpu" else "cuda:0")
        return _describe(out, values=True) | {"grad_fn": None}
    _check(run)


def test_transfer_of_a_channels_last_parameter_keeps_its_gradient_path(device):
    def run(L):
        x = L.tensor(np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5))
        x = x.contiguous(memory_format=L.channels_last).requires_grad_(True)
        y = x.to("cpu", copy=True) if L is torch else x.cuda()
        (y * y).sum().backward()
        return y.stride(), type(y.grad_fn).__name__, x.grad.stride(), x.grad.numpy().tolist()
    _check(run)


# --- nn.Module.to -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d", "contiguous_format"])
def test_module_to(device, fmt):
    def run(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Conv2d(3, 4, 3), L.nn.Linear(4, 2), L.nn.Conv3d(2, 2, 1))
        m.to(_where(L), memory_format=getattr(L, fmt))
        m.to(memory_format=getattr(L, fmt))  # (already on the device: only the layout)
        return [(n, p.stride(), str(p.device).split(":")[0] == _where(L),
                 p.detach().cpu().numpy().tolist()) for n, p in m.named_parameters()]
    _check(run)


# --- AccumulateGrad lays a copied gradient out like a dense leaf (clone_obey_contract) ----------

@pytest.mark.parametrize("leaf", ["contiguous", "channels_last"])
@pytest.mark.parametrize("grad_layout", ["contiguous", "channels_last"])
def test_leaf_gradient_layout(device, leaf, grad_layout):
    def run(L):
        a = np.arange(120, dtype=np.float32).reshape(2, 3, 4, 5)
        x = L.tensor(a, device=_where(L))
        if leaf == "channels_last":
            x = x.contiguous(memory_format=L.channels_last)
        x.requires_grad_(True)
        g = L.ones(2, 3, 4, 5, device=_where(L))
        if grad_layout == "channels_last":
            g = g.contiguous(memory_format=L.channels_last)
        (x * 2).backward(g)
        return x.grad.stride(), x.grad.cpu().numpy().tolist()
    _check(run)
