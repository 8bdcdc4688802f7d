"""The tensor-parameter samplers on CUDA tensors: ``normal(mean_t, std)`` & co, ``bernoulli(p_t)``
and ``multinomial``, composed as ATen composes them, drawing from the CUDA generator
(``_cuda_random``: Philox on the device, the same (seed, offset) stream as ``normal_`` & co, so
``manual_seed`` repeats them and a CUDA graph replays them exactly).

* ``normal``: ATen's ``normal_out_impl``: ``(Tensor mean, float std)`` fills the output with
  ``normal_(0, std)`` then ``add_(mean)``; the other two overloads fill it with ``normal_(0, 1)``
  then ``mul_(std).add_(mean)``. A tensor ``std`` is checked as ATen's CHECK_NORMAL_TENSOR_STD
  does on CUDA too: ``std.min() >= 0`` read back (one bool; PyTorch reads it twice).
* ``bernoulli(p_t)``: one kernel, a uniform per element compared with p (the ``bernoulli_``
  sampler); p outside [0, 1] or NaN raises the CPU error at the next synchronizing point
  (PyTorch's CUDA kernel asserts on the device).
* ``multinomial``: ATen's ``multinomial_out``: without replacement, or one sample, the
  exponential trick ``argmax``/``topk`` of ``p / Exp(1)``, after PyTorch's host check of the
  probabilities (one read of two bools here; PyTorch makes two reads); with replacement, rows
  renormalized, prefix-summed on the device and searched by one sampling kernel
  (``sampleMultinomialWithReplacement``), which checks each row on the device.

Everything here runs under ``no_grad`` on device tensors; ``jitgrad.random`` records the nodes.
"""
from __future__ import annotations

import numpy as np

__all__ = ["is_cuda", "normal", "bernoulli", "multinomial"]

_SAME_DEVICE = ("Expected all tensors to be on the same device, but found at least two "
                "devices, cuda:0 and cpu!")


def is_cuda(*args) -> bool:
    """Does any Tensor among ``args`` live on the device?"""
    from .tensor import Tensor
    return any(isinstance(a, Tensor) and a._data.__class__ is not np.ndarray for a in args)


def _check_same_device(*tensors):
    from .tensor import Tensor
    if any(isinstance(t, Tensor) and t._data.__class__ is np.ndarray and t.dim() > 0
           for t in tensors):
        raise RuntimeError(_SAME_DEVICE)


def _no_grad():
    from .autograd.grad_mode import no_grad
    return no_grad()


def _check_std(std):
    """ATen's CHECK_NORMAL_TENSOR_STD: ``std.min().ge(0).item()``, one bool read back."""
    if std.numel() and not bool((std.min() >= 0).item()):
        raise RuntimeError("normal expects all elements of std >= 0.0")


def normal(mean, std, mt: bool, st: bool, dtype, shape):
    """The sample Tensor (``dtype``, ``shape``) of ``normal`` with a tensor mean and/or std."""
    from .ops.basic import empty
    from .random import _float_kind
    _check_same_device(mean if mt else None, std if st else None)
    if st:
        _check_std(std)
    elif not float(std) >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    with _no_grad():
        out = empty(tuple(shape), dtype=dtype, device="cuda")
        _float_kind(out, "normal_kernel_cuda")
        if mt and not st:
            out.normal_(0.0, float(std))
        else:
            out.normal_(0.0, 1.0)
            out.mul_(std if st else float(std))
        out.add_(mean if mt else float(mean))
    return out


def bernoulli(input, p=None):
    """``torch.bernoulli(input)`` (probabilities ``input``) or ``bernoulli(input, p)``."""
    from . import _cuda_random as R
    from .random import _aten_name
    from .tensor import Tensor
    shape, dt = tuple(input.shape), input._data.dtype
    if p is not None:
        return Tensor._make(R.bernoulli(float(p), shape, dt))
    if not input.dtype.is_floating_point:
        raise RuntimeError("expected probabilities tensor to have floating type, got "
                           f"{_aten_name(input.dtype)}")
    return Tensor._make(R.bernoulli(input._data, shape, dt))


def multinomial(input, n: int, replacement: bool):
    """int64 samples of ``torch.multinomial`` (arguments already checked by the caller)."""
    from . import _cuda_random as R
    from .ops.basic import empty
    from .ops.shape_join import stack
    from .tensor import Tensor
    rows = input.shape[0] if input.dim() == 2 else 1
    out_shape = (rows, n) if input.dim() == 2 else (n,)
    if rows == 0:
        return empty(out_shape, dtype=_int64(), device="cuda")
    with _no_grad():
        p = input if input.dim() == 2 else input.unsqueeze(0)
        if not replacement or n == 1:
            # ATen's fast path: its two host checks, read back here as one pair of bools
            valid = (p.max() < float("inf")) & (p.min() >= 0)
            zero_row = (p.sum(-1) == 0).any()
            ok, has_zero = stack([valid, zero_row]).tolist()
            if not ok:
                raise RuntimeError("probability tensor contains either `inf`, `nan` or "
                                   "element < 0")
            if has_zero:
                raise RuntimeError("invalid multinomial distribution (sum of probabilities "
                                   "<= 0)")
            q = empty(tuple(p.shape), dtype=p.dtype, device="cuda").exponential_(1.0)
            q = p / q
            res = q.argmax(-1, keepdim=True) if n == 1 else q.topk(n, -1).indices
        else:
            ft = "float64" if p.dtype.name == "float64" else "float32"
            pf = p.to(_dtype(ft)).contiguous()
            cum = (pf / pf.sum(-1, keepdim=True)).cumsum(-1).contiguous()
            res = Tensor._make(R.multinomial_with_replacement(pf._data, cum._data, n))
        return res.reshape(out_shape).contiguous()


def _dtype(name):
    from . import _dtype as D
    return getattr(D, name)


def _int64():
    return _dtype("int64")
