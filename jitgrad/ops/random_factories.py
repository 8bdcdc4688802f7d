"""Random factories: rand/randn/randint/randperm and their *_like forms, drawn from PyTorch's
CPU generator (``jitgrad.random``) or, for CUDA tensors, the device-side Philox generator."""
from __future__ import annotations

import numpy as np

from .. import _dtype as D
from .._size import check_device
from ..tensor import Tensor
from .factory_args import _factory_dtype, _finish, _like, _shape, _size_kw
from .parser_errors import input_type_error, parser_type_name


def _gen(generator):
    from .. import random as R
    return generator._impl if generator is not None else R.default_generator()


def _cuda_rng(generator):
    """The CUDA generator module (device-side Philox, ``jitgrad._cuda_random``)."""
    if generator is not None:
        raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
    from .. import _cuda_random
    return _cuda_random


def _float_sampler_dtype(dtype, kernel):
    dt = _factory_dtype(dtype)
    if not dt.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{D.scalar_name(dt)}\'')
    return dt


def rand(*size, generator=None, dtype=None, device=None, requires_grad=False, **kw):
    size = _size_kw(size, kw, "rand")
    dev = check_device(device)
    dt = _float_sampler_dtype(dtype, "check_uniform_bounds")
    if dev.type == "cuda":  # generated on the device (no upload)
        return _finish(_cuda_rng(generator).uniform(_shape(size, "rand", dt.np), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).rand(_shape(size, "rand", dt.np), dt.np), requires_grad, dev)


def randn(*size, generator=None, dtype=None, device=None, requires_grad=False,
          **kw):
    size = _size_kw(size, kw, "randn")
    dev = check_device(device)
    dt = _float_sampler_dtype(dtype, "normal_kernel_cpu")
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).normal(_shape(size, "randn", dt.np), 0.0, 1.0, dt.np),
                       requires_grad)
    return _finish(_gen(generator).randn(_shape(size, "randn", dt.np), dt.np), requires_grad, dev)


def randint(low=0, high=None, size=None, *, generator=None, dtype=None, device=None,
            requires_grad=False):
    dev = check_device(device)
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"randint(): argument 'size' (position 2) must be tuple of ints, not "
                        f"{parser_type_name(size)}")
    dt = _factory_dtype(dtype, D.int64)
    shape = _shape((size,), "randint", dt.np)
    if dev.type == "cuda":
        return _finish(_cuda_rng(generator).randint(int(low), int(high), shape, dt.np),
                       requires_grad)
    return _finish(_gen(generator).randint(int(low), int(high), shape, dt.np), requires_grad,
                   dev)


def _random_like(t, generator, dtype, memory_format, requires_grad, normal):
    """rand_like / randn_like on the host in a channels-last format or preserving a strided
    input's layout; None for a C-contiguous input (rand/randn of its shape). ATen fills
    ``empty_like(t, memory_format)`` in memory order, and normal_ of a non-contiguous
    destination uses the serial sampler (_random_continuous's ``contiguous=False``)."""
    from .._memory_format import CHANNELS_LAST_RANK, keeps_numpy_layout
    from .factories import _like_finish, _like_host
    if memory_format not in CHANNELS_LAST_RANK and t._data.size and keeps_numpy_layout(t._data):
        return None
    dt = _float_sampler_dtype(_like(t, dtype), "normal_kernel_cpu" if normal
                              else "check_uniform_bounds")
    out = _like_host(np.empty_like, np.empty, t, dt, memory_format)
    # the dims in memory order (outermost first); size-1 dims do not change the fill order
    order = sorted(range(out.ndim), key=lambda i: (-out.strides[i], i))
    stored = out.transpose(order)
    n = out.size
    g = _gen(generator)
    flat = g.normal_((n,), 0.0, 1.0, dt.np, contiguous=bool(out.flags.c_contiguous)) \
        if normal else g.rand((n,), dt.np)
    stored[...] = np.asarray(flat).reshape(stored.shape)
    return _like_finish(out, t, memory_format, requires_grad)


def _host_like(t, device):
    return t._data.__class__ is np.ndarray and (device is None or
                                                check_device(device).type == "cpu")


def _in_memory_order(out, t, memory_format):
    """A CUDA ``*_like`` draw laid out as ``empty_like(t, memory_format)`` (the host path is
    ``_random_like``): the draws fill the storage in memory order, as ATen's do."""
    d = out._data
    if d.__class__ is np.ndarray:
        return out
    from .._layout import contiguous_strides
    from .._memory_format import format_strides
    st = format_strides(d.shape, t.stride(), memory_format)
    if st == contiguous_strides(d.shape):
        return out
    from .._cuda_array import CudaArray
    out._data = CudaArray(d.buf, d.shape, st)  # the fresh storage read in that order
    return out


def rand_like(t, *, generator=None, dtype=None, device=None, requires_grad=False,
              memory_format=None, layout=None):
    try:  # (free until raised) a non-Tensor t: PyTorch's TypeError
        shape = t._data.shape
    except AttributeError:
        raise input_type_error("rand_like", (t,), {}) from None
    if memory_format != "contiguous_format" and _host_like(t, device):
        out = _random_like(t, generator, dtype, memory_format, requires_grad, normal=False)
        if out is not None:
            return out
    out = rand(tuple(shape), generator=generator, dtype=_like(t, dtype),
               requires_grad=requires_grad, device=t.device if device is None else device)
    return _in_memory_order(out, t, memory_format)


def randn_like(t, *, generator=None, dtype=None, device=None, requires_grad=False,
               memory_format=None, layout=None):
    try:  # (free until raised) a non-Tensor t: PyTorch's TypeError
        shape = t._data.shape
    except AttributeError:
        raise input_type_error("randn_like", (t,), {}) from None
    if memory_format != "contiguous_format" and _host_like(t, device):
        out = _random_like(t, generator, dtype, memory_format, requires_grad, normal=True)
        if out is not None:
            return out
    out = randn(tuple(shape), generator=generator, dtype=_like(t, dtype),
                requires_grad=requires_grad, device=t.device if device is None else device)
    return _in_memory_order(out, t, memory_format)


_RANDINT_LIKE_KEYWORDS = ("torch.memory_format memory_format = None, torch.dtype dtype = None, "
                         "torch.layout layout = None, torch.device device = None, "
                         "bool pin_memory = False, bool requires_grad = False")
# randint_like's overloads as PyTorch's parser lists them (each with and without a generator)
_RANDINT_LIKE_OVERLOADS = tuple(
    f"(Tensor input, {args}, *, {generator}{_RANDINT_LIKE_KEYWORDS})"
    for args in ("int low, int high", "Tensor high", "int high")
    for generator in ("torch.Generator generator, ", ""))


def randint_like(t, low=0, high=None, dtype=None, device=None):
    if not isinstance(t, Tensor):  # (an ndarray has a shape: checked before it is read)
        given = (t, low) if high is None else (t, low, high)
        raise input_type_error("randint_like", given, {}, _RANDINT_LIKE_OVERLOADS)
    if high is None:
        low, high = 0, low
    return randint(low, high, tuple(t.shape), dtype=_like(t, dtype),
                   device=t.device if device is None else device)


def randperm(n, generator=None, dtype=None, device=None, requires_grad=False):
    dev = check_device(device)
    dt = _factory_dtype(dtype, D.int64)
    return _finish(_gen(generator).randperm(int(n), dt.np), requires_grad, dev)  # host draw


def manual_seed(seed):
    from .. import random as R
    return R.manual_seed(seed)
