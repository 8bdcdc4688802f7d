"""Random number generation matching PyTorch's CPU generator (``jitgrad._random``).

``manual_seed(s)`` followed by ``rand``/``randn``/``randint``/``randperm``/``normal``/
``bernoulli``/``multinomial`` gives the numbers PyTorch gives for the same seed and calls.
``default_generator`` is the process-wide :class:`Generator` (``manual_seed`` returns it); it is
also callable, returning the ``_random.Generator`` implementation internal code draws from.
"""
from __future__ import annotations

import contextlib

import numpy as np

from .ops.parser_errors import parser_type_name

__all__ = ["Generator", "manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state",
           "default_generator", "fork_rng", "normal", "bernoulli", "multinomial"]


def _check_state(state):
    from .tensor import Tensor
    if not isinstance(state, Tensor):
        raise TypeError(f"expected a torch.ByteTensor, but got {parser_type_name(state)}")
    if state.dtype.name != "uint8":
        raise TypeError("RNG state must be a torch.ByteTensor")
    return np.ascontiguousarray(state._data)


def _long(seed, name="manual_seed"):
    """PyTorch's int64/uint64 seed argument: ints (and 0-d integer tensors) only."""
    from .tensor import Tensor
    if isinstance(seed, Tensor) and seed.dim() == 0 and not seed.dtype.is_floating_point:
        seed = seed.item()
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise RuntimeError(f"{name} expected a long, but got {type(seed).__name__}")
    seed = int(seed)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    return seed


class Generator:
    """``jitgrad.Generator()``: an independent stream (``generator=`` on random factories)."""

    def __init__(self, device="cpu"):
        from ._random import Generator as Impl
        from ._size import device as _device
        dev = _device(device) if not hasattr(device, "type") else device
        if dev.type != "cpu":
            raise RuntimeError(f"jitgrad.Generator supports only the CPU, got device {dev}")
        self._impl = Impl()

    @property
    def device(self):
        from ._size import device
        return device("cpu")

    def manual_seed(self, seed):
        self._impl.manual_seed(_long(seed))
        return self

    def seed(self):
        return self._impl.seed()

    def initial_seed(self):
        return self._impl.initial_seed()

    def get_state(self):
        from .ops.basic import tensor
        return tensor(np.asarray(self._impl.get_state()))

    def set_state(self, new_state):
        self._impl.set_state(_check_state(new_state))
        return self

    def graphsafe_get_state(self):  # CUDA-graph API: PyTorch's CPU generator refuses it too
        raise NotImplementedError("graphsafe_get_state is not supported in this Generator")

    def graphsafe_set_state(self, state):
        raise NotImplementedError("graphsafe_set_state is not supported in this Generator")

    def clone_state(self):
        """A new Generator with a copy of this one's state (``torch.Generator.clone_state``)."""
        g = Generator.__new__(Generator)
        g._impl = self._impl.clone_state()
        return g

    def __getstate__(self):
        return {"device": "cpu", "seed": self.initial_seed(),
                "state": np.asarray(self._impl.get_state())}

    def __setstate__(self, d):
        from ._random import Generator as Impl
        self._impl = Impl()
        self._impl.set_state(d["state"])


class _DefaultGenerator(Generator):
    """``torch.default_generator``; calling it gives the implementation (internal use)."""

    def __init__(self):
        from ._random import default_generator as impl
        self._impl = impl

    def __call__(self):
        return self._impl

    def clone_state(self):
        g = Generator.__new__(Generator)
        g._impl = self._impl.clone_state()
        return g


_DefaultGenerator.__name__ = _DefaultGenerator.__qualname__ = "Generator"  # as torch prints it
default_generator = _DefaultGenerator()


def manual_seed(seed):
    """Seed the default generator (and CUDA's); returns ``default_generator``."""
    seed = int(seed)  # like torch.manual_seed: int(seed) first (1.5 -> 1, "3" -> 3)
    if not -(1 << 63) <= seed < (1 << 64):
        raise ValueError("Overflow when unpacking long long")
    default_generator._impl.manual_seed(seed)
    from . import _cuda_random  # like torch.manual_seed: seeds the CUDA generator too
    _cuda_random.manual_seed(seed)
    return default_generator


def seed():
    s = default_generator._impl.seed()
    from . import _cuda_random
    _cuda_random.manual_seed(s)
    return s


def initial_seed():
    return default_generator._impl.initial_seed()


def get_rng_state():
    from .ops.basic import tensor
    return tensor(np.asarray(default_generator._impl.get_state()))


def set_rng_state(new_state):
    default_generator._impl.set_state(_check_state(new_state))


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices",
             device_type=None):
    """Restore the CPU generator's state (and the CUDA generator's) on exit."""
    if not enabled:
        yield
        return
    cpu_state = default_generator._impl.get_state()
    from . import _cuda_random
    cuda_state = _cuda_random.get_rng_state() if hasattr(_cuda_random, "get_rng_state") \
        else None
    try:
        yield
    finally:
        default_generator._impl.set_state(cpu_state)
        if cuda_state is not None:
            _cuda_random.set_rng_state(cuda_state)


# ----------------------------------------------------------------------------- samplers


def _impl(generator):
    return generator._impl if generator is not None else default_generator._impl


def _zero_grads(node, g):
    from .ops.basic import zeros_like
    return tuple(zeros_like(g) if need else None for need in node.ctx.needs_input_grad)


def _float_kind(t, kernel):
    if not t.dtype.is_floating_point:
        raise NotImplementedError(f'"{kernel}" not implemented for \'{_aten_name(t.dtype)}\'')


def _aten_name(dt):
    return {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
            "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
            "bool": "Bool"}.get(dt.name, dt.name)


def _out(out, result):
    """``out=``: the result written into ``out`` (an empty ``out`` takes the result's shape)."""
    if out is None:
        return result
    if tuple(out.shape) != tuple(result.shape):
        if out.numel() != 0:
            raise RuntimeError(f"jitgrad: out= has shape {tuple(out.shape)}, the result "
                               f"{tuple(result.shape)} (only an empty out= is resized)")
        if result._data.__class__ is np.ndarray:
            out._data = np.empty(result._data.shape, dtype=out._data.dtype)
        else:
            from ._cuda_array import CudaArray
            out._data = CudaArray.empty(tuple(result._data.shape), out._data.dtype)
    with _no_grad():
        out.copy_(result)
    return out


def _no_grad():
    from .autograd.grad_mode import no_grad
    return no_grad()


def normal(mean, std=1.0, size=None, *, generator=None, out=None, dtype=None, layout=None,
           device=None, pin_memory=False, requires_grad=False):
    """``torch.normal``: ``(Tensor, float)``, ``(float, Tensor)``, ``(Tensor, Tensor)`` and
    ``(float, float, size)``, drawing exactly what PyTorch draws (a standard-normal fill of
    the output, then ``* std + mean``). CUDA tensors: the same composition, drawn by the CUDA
    generator (``_cuda_random_tensors``)."""
    from ._size import check_device
    from .ops.basic import empty
    from .ops.composite import record
    from .ops.factory_args import _factory_dtype, _finish
    from .tensor import Tensor
    gen = _impl(generator)
    mt, st = isinstance(mean, Tensor), isinstance(std, Tensor)
    if not mt and not st:
        if size is None:
            raise TypeError("normal() received an invalid combination of arguments - got "
                            f"({parser_type_name(mean)}, {parser_type_name(std)}), but expected "
                            "one of: (Tensor mean, Tensor std), (Tensor mean, float std), (float "
                            "mean, Tensor std), (float mean, float std, tuple of ints size)")
        std = float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        dt = _factory_dtype(dtype)
        dev = check_device(device)
        shape = tuple(size) if not isinstance(size, int) else (size,)
        if dev is not None and dev.type == "cuda":  # drawn on the device by its generator
            t = empty(*shape, dtype=dt, device=dev).normal_(float(mean), std)
            if requires_grad:
                t.requires_grad_(True)
            return _out(out, t)
        t = _finish(gen.normal_(shape, float(mean), std, dt.np), requires_grad)
        return _out(out, t)
    if mt and st:
        dt, shape = mean.dtype, np.broadcast_shapes(mean._data.shape, std._data.shape)
        name, inputs = "NormalBackward3", (mean, std)
    elif mt:
        dt, shape = mean.dtype, mean._data.shape
        name, inputs = "NormalBackward1", (mean,)
    else:
        dt, shape = std.dtype, std._data.shape
        name, inputs = "NormalBackward2", (std,)
    from . import _cuda_random_tensors as CR
    if CR.is_cuda(mean, std):  # drawn by the CUDA generator (ATen's composition)
        if generator is not None:
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        res = CR.normal(mean, std, mt, st, dt, shape)._data
        return _out(out, record(name, inputs, res, _zero_grads))
    if st:
        s = std._data
        if s.size and not bool(np.all(s >= 0)):
            raise RuntimeError("normal expects all elements of std >= 0.0")
    elif not float(std) >= 0.0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {float(std):g}")
    tmp = empty(shape, dtype=dt)
    _float_kind(tmp, "normal_kernel_cpu")
    if mt and not st:  # normal_(0, std) then add mean
        z = gen.normal_(shape, 0.0, float(std), dt.np)
        res = z + mean._data
    else:  # normal_(0, 1), * std, + mean
        z = gen.normal_(shape, 0.0, 1.0, dt.np)
        s = std._data if st else std
        m = mean._data if mt else np.array(mean, dtype=dt.np)
        res = (z * s).astype(dt.np) + m
    res = np.require(res, dt.np, "C")
    return _out(out, record(name, inputs, res, _zero_grads))


def bernoulli(input, p=None, *, generator=None, out=None):
    """``torch.bernoulli(input)`` (probabilities ``input``) and ``torch.bernoulli(input, p)``
    (shape and dtype of ``input``, probability ``p``)."""
    from . import _cuda_random_tensors as CR
    from .ops.composite import record
    if CR.is_cuda(input):  # drawn by the CUDA generator, in one kernel
        if generator is not None:
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        res = CR.bernoulli(input, p)._data
        if p is not None:
            return _out(out, record("BernoulliBackward1", (), res, _zero_grads))
        return _out(out, record("BernoulliBackward0", (input,), res, _zero_grads))
    gen = _impl(generator)
    if p is not None:
        res = gen.bernoulli(float(p), input._data.shape, input._data.dtype)
        return _out(out, record("BernoulliBackward1", (), res, _zero_grads))
    _float_kind(input, "bernoulli_tensor_cpu_p_")
    res = gen.bernoulli(np.require(input._data, requirements="C"), None, input._data.dtype)
    return _out(out, record("BernoulliBackward0", (input,), res, _zero_grads))


def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
    """``torch.multinomial`` (int64 indices, PyTorch's draws; on CUDA tensors ATen's CUDA
    algorithms drawn by the CUDA generator, ``_cuda_random_tensors``)."""
    from .ops.basic import tensor
    if input.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    if not input.dtype.is_floating_point:
        raise RuntimeError("multinomial only supports floating-point dtypes for input, got: "
                           f"{_aten_name(input.dtype)}")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without "
                           "replacement")
    from . import _cuda_random_tensors as CR
    if CR.is_cuda(input):  # drawn by the CUDA generator (ATen's CUDA algorithms)
        if generator is not None:
            raise RuntimeError("Expected a 'cuda' device type for generator but found 'cpu'")
        return _out(out, CR.multinomial(input, int(num_samples), bool(replacement)))
    res = _impl(generator).multinomial(input._data, int(num_samples), bool(replacement))
    return _out(out, tensor(res))
