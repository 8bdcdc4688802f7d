"""Binds the ops to Tensor as methods and operators (``x.sum()``, ``x @ y``, ``x += 1``)."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from . import basic, index, inplace, linalg, reduce, shape, softmax
from . import functional as F
from . import gather_scatter as _gather_scatter
from . import index_dim as _index_dim
from . import index_masked as _index_masked
from . import index_setitem as _index_setitem
from . import linalg_extra as _linalg_extra
from . import linalg_solve as _linalg_solve
from . import reduce_extremes as _reduce_extremes
from . import reduce_moments as _reduce_moments
from . import reduce_sums as _reduce_sums
from . import shape_join as _shape_join
from . import sort as _sort_ops
from .functional_compare import CLAMP_METHODS as _CLAMP_METHODS
from .functional_compare import COMPARE_METHODS as _COMPARE_METHODS
from .parser_errors import counted_from_self, with_keyword_defaults
from .random_factories import _cuda_rng, _gen


def _reflect(fn):
    def r(self, other):
        return fn(other, self)
    return r


def _not_tensor(other):
    return not isinstance(other, (Tensor, int, float, bool, np.number, np.bool_))


def _binary_method(fn):
    def m(self, other):
        if _not_tensor(other):
            if isinstance(other, np.ndarray):
                other = basic.tensor(other)
            else:
                return NotImplemented
        return fn(self, other)
    return m


def _rsub(self, other):
    return F.rsub(self, other)


def _rtruediv(self, other):
    return F.mul(F.reciprocal(self), other)


def _rpow(self, other):
    return F.pow(other, self)


def _eq(self, other):
    if _not_tensor(other):
        return False
    return F.eq(self, other)


def _ne(self, other):
    if _not_tensor(other):
        return True
    return F.ne(self, other)


def _invert(self):
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type "
                        "tensors")
    return F.bitwise_not(self)


def _size_args(args):
    return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args


def _sum(self, dim=reduce.NO_DIM, keepdim=False, *, dtype=None):
    return reduce.sum(self, dim, keepdim, dtype=dtype)


def _new_factory(factory):
    """``x.new_zeros(...)`` & co: ``x``'s dtype and device unless given (PyTorch's rule)."""
    def m(self, *size, dtype=None, device=None, requires_grad=False):
        # the size as given: ``x.new_ones(())`` is 0-d (unpacking the empty tuple would
        # leave no size at all)
        return factory(*size, dtype=dtype if dtype is not None else self.dtype,
                       device=device if device is not None else self.device,
                       requires_grad=requires_grad)
    return m


def _new_tensor(self, data, dtype=None, device=None, requires_grad=False):
    return basic.tensor(data, dtype=dtype if dtype is not None else self.dtype,
                        device=device if device is not None else self.device,
                        requires_grad=requires_grad)


def _new_full(self, size, fill_value, dtype=None, device=None, requires_grad=False):
    return basic.full(tuple(size), fill_value, dtype=dtype if dtype is not None else self.dtype,
                      device=device if device is not None else self.device,
                      requires_grad=requires_grad)


def _random_node(sampler, args, kwargs):
    """PyTorch's node for ``x.uniform_()`` & co inside a graph (the old value gets zeros), and
    the tensor ``p`` of ``bernoulli_(p)`` (its second slot)."""
    if sampler is _bernoulli:
        p = args[0] if args else kwargs.get("p")
        return ("BernoulliBackward1", p) if isinstance(p, Tensor) else ("BernoulliBackward2", None)
    if sampler is _random_int:  # random_(from, to) / random_(to) / random_()
        return f"RandomBackward{2 - min(len(args) + len(kwargs), 2)}", None
    return {_uniform: "UniformBackward0", _normal: "NormalBackward0",
            _exponential: "ExponentialBackward0", _geometric: "GeometricBackward0",
            _cauchy: "CauchyBackward0", _log_normal: "LogNormalBackward0"}[sampler], None


def _zero_random_grads(node, g):
    from .basic import zeros_like
    return tuple(zeros_like(g) if need else None for need in node.ctx.needs_input_grad)


def _draw(sampler, gen, a, args, kwargs):
    """Samples for the array ``a`` drawn in its memory order (PyTorch's TensorIterator visits a
    transposed view's elements as they lie in memory), returned in ``a``'s logical order."""
    if sampler is _normal and not a.flags.c_contiguous:  # ATen: serial normals, no fill
        kwargs = dict(kwargs, _contiguous=False)
    if a.flags.c_contiguous or a.ndim < 2:
        return sampler(gen, a.shape, a.dtype, *args, **kwargs)
    perm = sorted(range(a.ndim), key=lambda d: -a.strides[d])
    if sampler is _bernoulli and args and isinstance(args[0], Tensor):
        args = (np.broadcast_to(args[0]._data, a.shape).transpose(perm),) + tuple(args[1:])
    out = sampler(gen, tuple(a.shape[d] for d in perm), a.dtype, *args, **kwargs)
    return out.transpose(np.argsort(perm))


def _random_inplace(sampler):
    def m(self, *args, generator=None, **kwargs):
        inplace.check_inplace(self)
        if self._data.__class__ is not np.ndarray:  # CUDA: drawn on the device, in place
            if sampler not in _CUDA_SAMPLERS:
                raise NotImplementedError(f"{sampler.__name__.lstrip('_')}_ has no CUDA "
                                          "kernel in jitgrad; use it on a CPU tensor")
            _CUDA_SAMPLERS[sampler](_cuda_rng(generator), self._data, *args, **kwargs)
            self._vc.value += 1
            return self
        if not self._data.flags.writeable:  # expand: PyTorch's overlap error, or writable
            inplace._make_writable(self, True)
        gen = _gen(generator)
        if inplace._recording(self, ()):  # in a graph: PyTorch's node (zero gradient)
            from .composite import record
            name, p = _random_node(sampler, args, kwargs)

            def draw(s):
                data = np.ascontiguousarray(_draw(sampler, gen, self._data, args, kwargs))
                return record(name, (s, p) if name == "BernoulliBackward1" else (s,), data,
                              _zero_random_grads)
            return inplace.apply_inplace(self, draw)
        self._data[...] = _draw(sampler, gen, self._data, args, kwargs)
        self._vc.value += 1
        return self
    return m


def _uniform(gen, shape, dtype, a=0.0, b=1.0):
    return gen.uniform_(shape, a, b, dtype)


def _normal(gen, shape, dtype, mean=0.0, std=1.0, _contiguous=True):
    return gen.normal_(shape, mean, std, dtype, contiguous=_contiguous).reshape(shape)


def _bernoulli(gen, shape, dtype, p=0.5):
    if isinstance(p, Tensor):  # bernoulli_(p_tensor): p broadcast to self, PyTorch's draws
        p = p._data
    return gen.bernoulli(p, shape, dtype)


def _exponential(gen, shape, dtype, lambd=1.0):
    return gen.exponential_(shape, lambd, dtype)


def _random_int(gen, shape, dtype, *args, **kwargs):
    # random_() / random_(to) / random_(from, to) with to=None meaning "up to the max"
    if "from" in kwargs:
        args = (kwargs.pop("from"), kwargs.pop("to")) + args
    elif "to" in kwargs:
        args = args + (kwargs.pop("to"),)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    return gen.random_(shape, dtype, *args)


def _geometric(gen, shape, dtype, p):
    return gen.geometric_(shape, p, dtype)


def _cauchy(gen, shape, dtype, median=0.0, sigma=1.0):
    return gen.cauchy_(shape, median, sigma, dtype)


def _log_normal(gen, shape, dtype, mean=1.0, std=2.0):
    return gen.log_normal_(shape, mean, std, dtype)


def _bernoulli_out(self, p=None, *, generator=None):
    from ..random import bernoulli
    return bernoulli(self, p, generator=generator)


def _multinomial(self, num_samples, replacement=False, *, generator=None):
    from ..random import multinomial
    return multinomial(self, num_samples, replacement, generator=generator)


def _cuda_uniform(R, d, a=0.0, b=1.0):
    R.uniform(d.shape, a, b, d.dtype, out=d)


def _cuda_normal(R, d, mean=0.0, std=1.0):
    R.normal(d.shape, mean, std, d.dtype, out=d)


def _cuda_bernoulli(R, d, p=0.5):
    if isinstance(p, Tensor):
        if p._data.__class__ is np.ndarray:
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               "least two devices, cuda:0 and cpu!")
        p = p._data
    R.bernoulli(p, d.shape, d.dtype, out=d)


def _cuda_exponential(R, d, lambd=1.0):
    R.exponential(d.shape, lambd, d.dtype, out=d)


def _cuda_random_int(R, d, *args, **kwargs):
    # the host sampler's argument forms (from=/to= keywords too); R.random_ has its rules
    if "from" in kwargs:
        args = (kwargs.pop("from"), kwargs.pop("to")) + args
    elif "to" in kwargs:
        args = args + (kwargs.pop("to"),)
    if kwargs:
        raise TypeError(f"random_() got an unexpected keyword argument '{next(iter(kwargs))}'")
    R.random_(d, *args)


def _cuda_geometric(R, d, p):
    R.geometric(d.shape, p, d.dtype, out=d)


def _cuda_cauchy(R, d, median=0.0, sigma=1.0):
    R.cauchy(d.shape, median, sigma, d.dtype, out=d)


def _cuda_log_normal(R, d, mean=1.0, std=2.0):
    R.log_normal(d.shape, mean, std, d.dtype, out=d)


# the device twin of each host sampler above (jitgrad._cuda_random: Philox on the device)
_CUDA_SAMPLERS = {_uniform: _cuda_uniform, _normal: _cuda_normal, _bernoulli: _cuda_bernoulli,
                  _exponential: _cuda_exponential, _random_int: _cuda_random_int,
                  _geometric: _cuda_geometric, _cauchy: _cuda_cauchy,
                  _log_normal: _cuda_log_normal}


METHODS = {
    # arithmetic operators
    "__add__": _binary_method(F.add), "__radd__": _binary_method(F.add),
    "__sub__": _binary_method(F.sub), "__rsub__": _binary_method(_rsub),
    "__mul__": _binary_method(F.mul), "__rmul__": _binary_method(F.mul),
    "__truediv__": _binary_method(F.div), "__rtruediv__": _binary_method(_rtruediv),
    "__floordiv__": _binary_method(F.floor_divide),
    "__rfloordiv__": _binary_method(_reflect(F.floor_divide)),
    "__mod__": _binary_method(F.remainder), "__rmod__": _binary_method(_reflect(F.remainder)),
    "__pow__": _binary_method(F.pow), "__rpow__": _binary_method(_rpow),
    "__matmul__": linalg.__matmul__, "__rmatmul__": linalg.__rmatmul__,
    "__neg__": F.neg, "__abs__": F.abs,
    "__eq__": _eq, "__ne__": _ne, "__lt__": _binary_method(F.lt), "__le__": _binary_method(F.le),
    "__gt__": _binary_method(F.gt), "__ge__": _binary_method(F.ge),
    "__and__": _binary_method(F.bitwise_and), "__or__": _binary_method(F.bitwise_or),
    "__xor__": _binary_method(F.bitwise_xor), "__rand__": _binary_method(F.bitwise_and),
    "__ror__": _binary_method(F.bitwise_or), "__rxor__": _binary_method(F.bitwise_xor),
    "__invert__": _invert, "__pos__": F.positive,
    "__iadd__": inplace.add_, "__isub__": inplace.sub_, "__imul__": inplace.mul_,
    "__itruediv__": inplace.div_, "__ipow__": inplace.pow_,
    "__getitem__": index.getitem, "__setitem__": index.setitem,
    # elementwise
    "add": F.add, "sub": F.sub, "subtract": F.sub, "mul": F.mul, "multiply": F.mul,
    "div": F.div, "divide": F.div, "true_divide": F.div, "neg": F.neg, "negative": F.neg,
    "pow": F.pow, "reciprocal": F.reciprocal, "square": F.square, "exp": F.exp,
    "expm1": F.expm1, "log": F.log, "log1p": F.log1p, "log2": F.log2, "log10": F.log10,
    "sqrt": F.sqrt, "rsqrt": F.rsqrt, "abs": F.abs, "absolute": F.abs, "sign": F.sign,
    "sin": F.sin, "cos": F.cos, "tan": F.tan, "tanh": F.tanh, "sigmoid": F.sigmoid,
    "erf": F.erf, "relu": F.relu, **_CLAMP_METHODS,
    "maximum": F.maximum, "minimum": F.minimum,
    **_COMPARE_METHODS,  # eq/ne/lt/le/gt/ge and aliases, with the method form's errors
    "equal": F.equal_method,
    "logical_not": F.logical_not, "logical_and": F.logical_and, "logical_or": F.logical_or,
    "logical_xor": F.logical_xor, "isnan": F.isnan, "isinf": F.isinf, "isfinite": F.isfinite,
    "floor": F.floor, "ceil": F.ceil, "round": F.round, "trunc": F.trunc, "frac": F.frac,
    "remainder": F.remainder, "fmod": F.fmod, "floor_divide": F.floor_divide,
    "sinh": F.sinh, "cosh": F.cosh, "allclose": F.allclose, "isclose": F.isclose,
    # added with the elementwise parity sweep
    "fmax": F.fmax, "fmin": F.fmin, "hypot": F.hypot, "logaddexp": F.logaddexp,
    "logaddexp2": F.logaddexp2, "xlogy": F.xlogy, "copysign": F.copysign,
    "heaviside": F.heaviside, "bitwise_and": F.bitwise_and, "bitwise_or": F.bitwise_or,
    "bitwise_xor": F.bitwise_xor, "bitwise_not": F.bitwise_not, "lerp": F.lerp,
    "addcmul": F.addcmul, "addcdiv": F.addcdiv, "exp2": F.exp2, "sinc": F.sinc,
    "deg2rad": F.deg2rad, "rad2deg": F.rad2deg, "nan_to_num": F.nan_to_num, "logit": F.logit,
    "signbit": F.signbit, "positive": F.positive, "sgn": F.sgn, "fix": F.fix,
    "arcsin": F.arcsin, "arccos": F.arccos, "arctan": F.arctan, "float_power": F.float_power,
    "asin": F.asin, "acos": F.acos, "atan": F.atan,
    "where": lambda self, condition, other: F.where(condition, self, other),
    "masked_fill": _index_masked.masked_fill_method, "masked_select": index.masked_select,
    # reductions
    "sum": _sum, "mean": _reduce_sums.mean_method, "var": reduce.var, "std": reduce.std,
    "prod": _reduce_sums.prod_method,
    "max": _reduce_extremes.max_method, "min": _reduce_extremes.min_method,
    "amax": _reduce_extremes.amax_method, "amin": _reduce_extremes.amin_method,
    "argmax": _reduce_extremes.argmax_method, "argmin": _reduce_extremes.argmin_method,
    "norm": reduce.norm,
    "logsumexp": _reduce_sums.logsumexp_method, "all": reduce.all, "any": reduce.any,
    "cumsum": reduce.cumsum, "count_nonzero": reduce.count_nonzero,
    # sorting and selection (ops/sort.py)
    "sort": _sort_ops.sort, "argsort": _sort_ops.argsort, "msort": _sort_ops.msort,
    "topk": _sort_ops.topk, "kthvalue": _sort_ops.kthvalue, "median": _sort_ops.median_method,
    "nanmedian": _sort_ops.nanmedian_method, "unique": _sort_ops.unique,
    "aminmax": reduce.aminmax,
    # the methods need dim (only the functional forms fall back to the implicit-dim warning)
    "softmax": lambda self, dim, dtype=None: softmax.softmax(
        self, softmax.check_dim("softmax", dim, 1) or dim, dtype=dtype),
    "log_softmax": lambda self, dim, dtype=None: softmax.log_softmax(
        self, softmax.check_dim("log_softmax", dim, 1) or dim, dtype=dtype),
    # linear algebra
    "matmul": linalg.matmul, "mm": linalg.mm, "bmm": linalg.bmm, "mv": linalg.mv,
    "dot": linalg.dot, "outer": linalg.outer, "inner": linalg.inner, "addmm": linalg.addmm,
    "vdot": linalg.vdot, "ger": linalg.ger, "kron": linalg.kron, "trace": linalg.trace,
    "baddbmm": linalg.baddbmm, "addbmm": linalg.addbmm, "addmv": linalg.addmv,
    "addr": linalg.addr, "addmm_": inplace.unary_inplace(linalg.addmm),
    "baddbmm_": inplace.unary_inplace(linalg.baddbmm),
    "addbmm_": inplace.unary_inplace(linalg.addbmm),
    "addmv_": inplace.unary_inplace(linalg.addmv), "addr_": inplace.unary_inplace(linalg.addr),
    # the solvers and their compositions (ops/linalg_solve.py, ops/linalg_extra.py)
    "inverse": _linalg_solve.inverse, "det": _linalg_solve.det, "logdet": _linalg_solve.logdet,
    "slogdet": _linalg_solve.slogdet, "cholesky": _linalg_solve.torch_cholesky,
    "matrix_power": _linalg_extra.torch_matrix_power, "cross": _linalg_extra.cross,
    "t": shape.t, "transpose": shape.transpose, "swapaxes": shape.swapaxes,
    # shape
    "reshape": shape.reshape, "view": shape.view, "view_as": shape.view_as,
    "reshape_as": shape.reshape_as, "flatten": shape.flatten, "unflatten": shape.unflatten,
    "squeeze": shape.squeeze_method, "unsqueeze": shape.unsqueeze, "expand": shape.expand,
    "expand_as": shape.expand_as, "broadcast_to": shape.broadcast_to,
    "permute": shape.permute, "movedim": shape.movedim_method, "split": _shape_join.split_method,
    "chunk": shape.chunk, "unbind": shape.unbind, "contiguous": shape.contiguous,
    "flip": shape.flip, "roll": shape.roll, "repeat": shape.repeat, "tile": shape.tile,
    "narrow": shape.narrow_method,
    "select": shape.select,
    # shape and view ops added with the PyTorch-parity sweep (ops/shape.py)
    "swapdims": shape.swapdims, "moveaxis": shape.moveaxis_method, "diagonal": shape.diagonal,
    "unfold": shape.unfold, "split_with_sizes": shape.split_with_sizes,
    "tensor_split": shape.tensor_split, "hsplit": shape.hsplit, "vsplit": shape.vsplit,
    "dsplit": shape.dsplit, "fliplr": shape.fliplr, "flipud": shape.flipud,
    "ravel": shape.ravel, "adjoint": shape.adjoint,
    # indexing
    "take_along_dim": index.take_along_dim,
    "gather": _gather_scatter.gather_method, "scatter": index.scatter,
    "scatter_add": index.scatter_add,
    "index_select": _index_dim.index_select_method, "index_add": index.index_add,
    "nonzero": index.nonzero, "scatter_reduce": index.scatter_reduce,
    "index_copy": index.index_copy, "index_fill": index.index_fill, "take": index.take,
    "put": index.put, "scatter_": inplace.unary_inplace(index.scatter),
    "scatter_add_": inplace.unary_inplace(index.scatter_add),
    "scatter_reduce_": inplace.unary_inplace(index.scatter_reduce),
    "index_add_": inplace.unary_inplace(index.index_add),
    "index_copy_": inplace.unary_inplace(index.index_copy),
    "index_fill_": inplace.unary_inplace(index.index_fill),
    "put_": inplace.unary_inplace(index.put), "index_put": _index_setitem.index_put_method,
    "argwhere": index.argwhere,
    "index_put_": _index_setitem.index_put_,
    # copies and factories
    "clone": basic.clone, "new_zeros": _new_factory(basic.zeros),
    "new_ones": _new_factory(basic.ones), "new_empty": _new_factory(basic.empty),
    "new_tensor": _new_tensor, "new_full": _new_full,
    # in place
    "add_": inplace.add_, "sub_": inplace.sub_, "mul_": inplace.mul_, "div_": inplace.div_,
    "pow_": inplace.pow_, "zero_": inplace.zero_, "fill_": inplace.fill_,
    "copy_": inplace.copy_, "clamp_": inplace.clamp_, "clip_": inplace.clip_,
    "neg_": inplace.unary_inplace(F.neg), "exp_": inplace.unary_inplace(F.exp),
    "log_": inplace.unary_inplace(F.log), "sqrt_": inplace.unary_inplace(F.sqrt),
    "abs_": inplace.unary_inplace(F.abs), "relu_": inplace.unary_inplace(F.relu),
    "sigmoid_": inplace.unary_inplace(F.sigmoid), "tanh_": inplace.unary_inplace(F.tanh),
    "sin_": inplace.unary_inplace(F.sin), "cos_": inplace.unary_inplace(F.cos),
    "clamp_min_": inplace.unary_inplace(F.clamp_min),
    "clamp_max_": inplace.unary_inplace(F.clamp_max),
    "masked_fill_": _index_masked.masked_fill_,
    "uniform_": _random_inplace(_uniform), "normal_": _random_inplace(_normal),
    "bernoulli_": _random_inplace(_bernoulli), "exponential_": _random_inplace(_exponential),
    "random_": _random_inplace(_random_int), "geometric_": _random_inplace(_geometric),
    "cauchy_": _random_inplace(_cauchy), "log_normal_": _random_inplace(_log_normal),
    "bernoulli": _bernoulli_out, "multinomial": _multinomial,
}

for _name, _fn in METHODS.items():
    setattr(Tensor, _name, _fn)

Tensor.T = property(shape.numpy_T)
Tensor.mT = property(shape.matrix_T)
Tensor.H = property(shape.H)
Tensor.mH = property(shape.matrix_H)


# ----------------------------------------------------------------------------- issue 13's misc ops
# (ops/special.py, triangular.py, grids.py, cumulative.py, nan_reduce.py, bucketing.py)
from . import bucketing as _bucketing  # noqa: E402
from . import cumulative as _cumulative  # noqa: E402
from . import grids as _grids  # noqa: E402
from . import nan_reduce as _nan_reduce  # noqa: E402
from . import special as _special  # noqa: E402
from . import triangular as _triangular  # noqa: E402
from .reduce_args import reduction_entry  # noqa: E402


def _shift_inplace(fn):
    """``x <<= s``: an integer result cast back into ``x`` (a float operand is PyTorch's cast
    error, checked before the kernel's dtype error)."""
    def method(self, other):
        from .. import _dtype as D
        if not self.dtype.is_floating_point:
            inplace._check_cast(self, D.result_type(self, other))
        return inplace.apply_inplace(self, fn, other)
    method.__name__ = fn.__name__ + "_"
    return method


_MISC_METHODS = {
    "asinh": _special.asinh, "acosh": _special.acosh, "atanh": _special.atanh,
    "arcsinh": _special.arcsinh, "arccosh": _special.arccosh, "arctanh": _special.arctanh,
    "atan2": _special.atan2, "arctan2": _special.arctan2, "erfc": _special.erfc,
    "erfinv": _special.erfinv,
    "bitwise_left_shift": _special.bitwise_left_shift,
    "bitwise_right_shift": _special.bitwise_right_shift,
    "__lshift__": _binary_method(_special.bitwise_left_shift),
    "__rshift__": _binary_method(_special.bitwise_right_shift),
    "__rlshift__": _binary_method(_reflect(_special.bitwise_left_shift)),
    "__rrshift__": _binary_method(_reflect(_special.bitwise_right_shift)),
    "__ilshift__": _shift_inplace(_special.bitwise_left_shift),
    "__irshift__": _shift_inplace(_special.bitwise_right_shift),
    "bitwise_left_shift_": _shift_inplace(_special.bitwise_left_shift),
    "bitwise_right_shift_": _shift_inplace(_special.bitwise_right_shift),
    "tril": _triangular.tril, "triu": _triangular.triu, "diag": _triangular.diag,
    "diag_embed": _triangular.diag_embed, "diagflat": _triangular.diagflat,
    "repeat_interleave": _grids.repeat_interleave,
    "cumprod": _cumulative.cumprod, "cummax": _cumulative.cummax,
    "cummin": _cumulative.cummin, "logcumsumexp": _cumulative.logcumsumexp,
    "nansum": _nan_reduce.nansum_method, "nanmean": _nan_reduce.nanmean,
    "histc": _bucketing.histc,
    # (the method's TypeErrors: reduce_sums.keepdim_without_dim)
    "sum": _reduce_sums.sum_method_form(reduction_entry(_sum, "sum", method=True)),
}
for _fn_name in ("atan2", "arctan2", "erfc", "erfinv", "tril", "triu", "cumprod"):
    _MISC_METHODS[_fn_name + "_"] = inplace.unary_inplace(_MISC_METHODS[_fn_name])
for _fn_name, _node in (("asinh", "AsinhBackward1"), ("acosh", "AcoshBackward1"),
                        ("atanh", "AtanhBackward1")):  # PyTorch's in-place node names
    _MISC_METHODS[_fn_name + "_"] = _MISC_METHODS["arc" + _fn_name[1:] + "_"] = \
        inplace.unary_inplace(_special.inplace_variant(_MISC_METHODS[_fn_name], _node))
for _name, _fn in _MISC_METHODS.items():
    setattr(Tensor, _name, _fn)

# masked_scatter, select/slice/diagonal_scatter, renorm, gcd/lcm, ldexp, nextafter, isposinf &
# co. (ops/index_masked, view_scatter, numeric): bound before the in-place forms are made
from . import numeric as _numeric  # noqa: E402

for _name, _fn in _numeric._methods().items():
    setattr(Tensor, _name, _fn)

from . import inplace_methods as _inplace_methods  # noqa: E402

_inplace_methods.install()
_inplace_methods.install_shape()

# torch.* functions added with the misc-functions sweep (ops/distances, combine, counting)
from . import combine as _combine  # noqa: E402
from . import counting as _counting  # noqa: E402
from . import distances as _distances  # noqa: E402

for _name, _fn in {"diff": _distances.diff, "cov": _distances.cov,
                   "corrcoef": _distances.corrcoef, "bincount": _counting.bincount,
                   "unique_consecutive": _counting.unique_consecutive,
                   "rot90": _combine.rot90}.items():
    setattr(Tensor, _name, _fn)

# Tensor.lu / lu_solve (ops/linalg_lu.py), cholesky_solve, triangular_solve, qr, svd, ...
# (ops/linalg_legacy.py)
from . import linalg_legacy as _linalg_legacy  # noqa: E402
from . import linalg_lu as _linalg_lu  # noqa: E402

for _name, _fn in {**_linalg_lu.methods(), **_linalg_legacy.methods()}.items():
    setattr(Tensor, _name, _fn)

# quantile/nanquantile (ops/quantile.py), frexp, mode, histogram (their own modules)
from . import frexp as _frexp_ops  # noqa: E402
from . import histogram as _histogram_ops  # noqa: E402
from . import mode as _mode_ops  # noqa: E402
from . import quantile as _quantile_ops  # noqa: E402

Tensor.quantile = _quantile_ops.quantile
Tensor.nanquantile = _quantile_ops.nanquantile
Tensor.frexp = _frexp_ops.frexp
Tensor.mode = _mode_ops.mode
Tensor.histogram = _histogram_ops.histogram

# real/imag/conj/conj_physical of a real tensor (ops/real_parts.py)
from . import real_parts as _real_parts  # noqa: E402

_real_parts.install()

# Methods whose function form's parser errors count self as position 1 (``add(): argument
# 'other' (position 2)``) while PyTorch's method form starts after self (``x.add(a)``:
# position 1, and no position for a keyword); those listed with overloads get the method's own
# "invalid combination" listing (``x.fmod(a)``: ``(Tensor other)``, ``(Number other)``)
_OTHER = ("(Tensor other)", "(Number other)")
_EXPONENT = ("(Tensor exponent)", "(Number exponent)")
_DIVIDE = ("(Tensor other)", "(Tensor other, *, str rounding_mode)", "(Number other)",
           "(Number other, *, str rounding_mode)")
# the hot arithmetic methods: copies of the functions that reword in their own except block
# (parser_errors.method_error), no call layer; the others through a wrapper
_SUBTRACT = ("(Tensor other, *, Number alpha = 1)", "(Number other, Number alpha = 1)")
_ARITH_METHODS = {"add": (F.add, None), "sub": (F.sub, None), "subtract": (F.sub, _SUBTRACT),
                  "mul": (F.mul, None), "multiply": (F.mul, _OTHER), "div": (F.div, None),
                  "divide": (F.div, _DIVIDE), "true_divide": (F.div, _OTHER),
                  "pow": (F.pow, _EXPONENT), "floor_divide": (F.floor_divide, _OTHER),
                  "remainder": (F.remainder, _OTHER), "fmod": (F.fmod, _OTHER)}
for _name, (_fn, _overloads) in _ARITH_METHODS.items():
    setattr(Tensor, _name, with_keyword_defaults(_fn, _method=(_name, _overloads)))
_COUNTED_FROM_SELF = {
    **dict.fromkeys((
        "atan2", "atan2_", "arctan2", "arctan2_", "maximum", "minimum", "fmax", "fmin", "hypot",
        "hypot_", "logaddexp", "logaddexp2", "logical_and", "logical_and_", "logical_or",
        "logical_or_", "logical_xor", "logical_xor_", "heaviside", "heaviside_", "matmul", "mm",
        "bmm", "mv", "dot", "vdot", "outer", "ger", "inner", "kron", "isclose", "allclose",
        "cholesky_solve", "matrix_power", "mode", "rot90")),
    **dict.fromkeys((
        "bitwise_and", "bitwise_and_", "bitwise_or", "bitwise_or_", "bitwise_xor",
        "bitwise_xor_", "bitwise_left_shift", "bitwise_left_shift_", "bitwise_right_shift",
        "bitwise_right_shift_", "copysign", "copysign_", "floor_divide_", "fmod_", "multiply_",
        "remainder_", "true_divide_", "xlogy", "xlogy_"), _OTHER),
    **dict.fromkeys(("pow_", "float_power", "float_power_"), _EXPONENT),
    "divide_": _DIVIDE,
    # flags PyTorch takes only as bools (x.std(0, 1), x.all(0, 1), x.sort(0, 1), x.topk(1, 0, 1))
    "std": _reduce_moments.VAR_METHOD_OVERLOADS, "var": _reduce_moments.VAR_METHOD_OVERLOADS,
    "all": _reduce_sums.LOGICAL_METHOD_OVERLOADS, "any": _reduce_sums.LOGICAL_METHOD_OVERLOADS,
    "sort": _sort_ops.SORT_METHOD_OVERLOADS, "topk": None, "cumsum": None,
}
for _name, _overloads in _COUNTED_FROM_SELF.items():
    setattr(Tensor, _name, counted_from_self(getattr(Tensor, _name), _name, _overloads))
