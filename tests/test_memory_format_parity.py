"""memory_format parity with PyTorch: strides, is_contiguous for each format, values, grad_fn
names, aliasing and rank errors of contiguous / to / clone / empty / *_like / Module.to."""
import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")
from tests._memory_format_cases import LIKES  # noqa: E402 - after the skip, as the harness
from tests._parity import agree  # noqa: E402 - after the skip: the harness needs PyTorch

FORMATS = ("contiguous_format", "channels_last", "channels_last_3d")
SHAPES4 = [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 1, 4), (2, 1, 1, 1), (1, 1, 1, 1),
           (0, 3, 4, 5), (2, 0, 4, 5)]
SHAPES5 = [(2, 3, 2, 4, 5), (2, 1, 2, 2, 2), (1, 3, 1, 1, 1)]


def _inputs(lib, shape, seed=0):
    """The same float32 values as a contiguous and as a channels-last tensor of ``lib``."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    # (torch.tensor of an empty NumPy array keeps NumPy's zero strides: not the subject here)
    x = lib.tensor(a) if a.size else lib.empty(shape)
    cl = {4: "channels_last", 5: "channels_last_3d"}.get(len(shape))
    return x, (x.contiguous(memory_format=getattr(lib, cl)) if cl else x.t())


def _describe(t, src=None):
    fmts = [t.is_contiguous(memory_format=getattr(type(t).__module__.startswith("torch") and
                                                  torch or jitgrad, f)) for f in FORMATS]
    gf = t.grad_fn
    return {"shape": tuple(t.shape), "stride": t.stride(), "is_contiguous": fmts,
            "values": t.detach().cpu().numpy().tolist(), "grad_fn": gf and type(gf).__name__,
            "alias": t is src, "requires_grad": t.requires_grad}


# --- strides / is_contiguous / values / nodes of conversions ------------------------------------

CONVERSIONS = {
    "contiguous": lambda L, t: t.contiguous(memory_format=L.channels_last),
    "contiguous_3d": lambda L, t: t.contiguous(memory_format=L.channels_last_3d),
    "contiguous_default": lambda L, t: t.contiguous(memory_format=L.contiguous_format),
    "to": lambda L, t: t.to(memory_format=L.channels_last),
    "to_3d": lambda L, t: t.to(memory_format=L.channels_last_3d),
    "to_contiguous": lambda L, t: t.to(memory_format=L.contiguous_format),
    "to_preserve": lambda L, t: t.to(memory_format=L.preserve_format),
    "to_f64": lambda L, t: t.to(L.float64, memory_format=L.channels_last),
    "to_f64_3d": lambda L, t: t.to(L.float64, memory_format=L.channels_last_3d),
    "to_int": lambda L, t: t.to(L.int32, memory_format=L.channels_last),
    "to_copy": lambda L, t: t.to(L.float32, copy=True, memory_format=L.channels_last),
    "double": lambda L, t: t.double(memory_format=L.channels_last),
    "clone": lambda L, t: t.clone(memory_format=L.channels_last),
    "clone_3d": lambda L, t: t.clone(memory_format=L.channels_last_3d),
    "clone_preserve": lambda L, t: t.clone(),
}


@pytest.mark.parametrize("shape", SHAPES4 + SHAPES5 + [(3, 4)])
@pytest.mark.parametrize("which", ["contiguous", "channels_last"])
@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("op", sorted(CONVERSIONS))
def test_conversion(op, which, grad, shape):
    def run(L):
        x, c = _inputs(L, shape)
        # (the sources are used as made, without detach(): detach is not the subject here)
        src = (x if which == "contiguous" else c).requires_grad_(grad)
        return _describe(CONVERSIONS[op](L, src), src)
    agree(run)


# --- factories (tests/_memory_format_cases.LIKES) -----------------------------------------------


@pytest.mark.parametrize("shape", SHAPES4 + SHAPES5 + [(3, 4), (8, 5)])
@pytest.mark.parametrize("which", ["contiguous", "channels_last"])
@pytest.mark.parametrize("fmt", [None, "preserve_format", "contiguous_format", "channels_last",
                                 "channels_last_3d"])
@pytest.mark.parametrize("op", sorted(LIKES))
def test_like(op, fmt, which, shape):
    def run(L):
        x, c = _inputs(L, shape)
        kw = {} if fmt is None else {"memory_format": getattr(L, fmt)}
        L.manual_seed(0)
        out = LIKES[op](L, x if which == "contiguous" else c, **kw)
        d = _describe(out)
        if op == "empty_like":
            del d["values"]
        return d
    agree(run)


@pytest.mark.parametrize("shape", SHAPES4 + SHAPES5 + [(3, 4)])
@pytest.mark.parametrize("fmt", FORMATS)
def test_empty(fmt, shape):
    def run(L):
        d = _describe(L.empty(*shape, memory_format=getattr(L, fmt), requires_grad=True))
        del d["values"]
        return d
    agree(run)


def test_empty_dtype_and_values_of_zeros_like():
    def run(L):
        t = L.empty(2, 3, 4, 5, dtype=L.float64, memory_format=L.channels_last)
        z = L.zeros_like(t, dtype=L.int64)
        return t.dtype == L.float64, t.stride(), z.stride(), z.dtype == L.int64, z.sum().item()
    agree(run)


# --- nn.Module.to -------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d", "contiguous_format"])
def test_module_to(fmt):
    def run(L):
        L.manual_seed(0)
        m = L.nn.Sequential(L.nn.Conv2d(3, 4, 3), L.nn.Linear(4, 2), L.nn.Conv3d(2, 2, 1),
                            L.nn.BatchNorm2d(4))
        m.to(memory_format=getattr(L, fmt))
        return [(n, p.stride(), type(p).__name__) for n, p in m.named_parameters()]
    agree(run)


def test_module_to_dtype_and_format():
    def run(L):
        m = L.nn.Conv2d(3, 4, 3).to(L.float64, memory_format=L.channels_last)
        return m.weight.stride(), m.weight.dtype == L.float64, m.weight.requires_grad
    agree(run)


# --- autograd through a channels-last copy ------------------------------------------------------

def test_backward_through_channels_last_copy():
    def run(L):
        x, _ = _inputs(L, (2, 3, 4, 5))
        x.requires_grad_(True)
        y = x.to(L.float64, memory_format=L.channels_last)
        (y * y).sum().backward()
        return x.grad.stride(), x.grad.numpy().tolist()
    agree(run)


# --- ambiguous layouts: size-1 dims (ATen's two channels-last tests disagree there) -------------

CHAINS = {
    "to_then_clone": lambda L, t: t.to(memory_format=L.channels_last).clone(),
    "to_then_empty_like": lambda L, t: L.zeros_like(t.to(memory_format=L.channels_last)),
    "to_then_randn_like": lambda L, t: L.randn_like(t.to(memory_format=L.channels_last)),
    "to_then_to": lambda L, t: t.to(memory_format=L.channels_last).to(
        memory_format=L.channels_last),
    "to_then_contiguous": lambda L, t: t.to(memory_format=L.channels_last).contiguous(),
    "to_then_to_contiguous": lambda L, t: t.to(memory_format=L.channels_last).to(
        memory_format=L.contiguous_format),
    "permuted_to_contiguous": lambda L, t: t.permute(0, 1, 3, 2).to(
        memory_format=L.contiguous_format),
    "sliced_to_contiguous": lambda L, t: t[:, :, ::2].to(memory_format=L.contiguous_format),
    "sliced_to_channels_last": lambda L, t: t[:, :, ::2].to(memory_format=L.channels_last),
    "sliced_empty_like": lambda L, t: L.empty_like(t.permute(0, 2, 3, 1)[:, ::2]).stride(),
}


@pytest.mark.parametrize("shape", [(2, 3, 1, 1), (2, 1, 4, 5), (1, 3, 1, 4), (2, 3, 4, 5),
                                   (2, 1, 1, 1)])
@pytest.mark.parametrize("op", sorted(CHAINS))
def test_size_one_dims(op, shape):
    def run(L):
        x, _ = _inputs(L, shape)
        L.manual_seed(0)
        out = CHAINS[op](L, x)
        return out if isinstance(out, tuple) else _describe(out)
    agree(run)


def test_transposed_matrix_to_contiguous_format_is_itself():
    def run(L):
        x = L.ones(3, 4).t()
        return x.to(memory_format=L.contiguous_format) is x, x.contiguous() is x
    agree(run)


@pytest.mark.parametrize("fmt", ["channels_last", "channels_last_3d"])
@pytest.mark.parametrize("entry", ["contiguous", "to", "to_dtype", "clone", "empty", "empty_like",
                                   "zeros_like", "full_like", "randn_like", "rand_like",
                                   "is_contiguous"])
def test_rank_errors(entry, fmt):
    calls = {
        "contiguous": lambda L, t, f: t.contiguous(memory_format=f),
        "to": lambda L, t, f: t.to(memory_format=f),
        "to_dtype": lambda L, t, f: t.to(L.float64, memory_format=f),
        "clone": lambda L, t, f: t.clone(memory_format=f),
        "empty": lambda L, t, f: L.empty(2, 3, 4, memory_format=f).shape,
        "empty_like": lambda L, t, f: L.empty_like(t, memory_format=f).shape,
        "zeros_like": lambda L, t, f: L.zeros_like(t, memory_format=f),
        "full_like": lambda L, t, f: L.full_like(t, 1.0, memory_format=f),
        "randn_like": lambda L, t, f: L.randn_like(t, memory_format=f),
        "rand_like": lambda L, t, f: L.rand_like(t, memory_format=f),
        "is_contiguous": lambda L, t, f: t.is_contiguous(memory_format=f),
    }

    def run(L):
        t = L.ones(2, 3, 4)
        out = calls[entry](L, t, getattr(L, fmt))
        return _describe(out) if isinstance(out, L.Tensor) else out
    agree(run)
