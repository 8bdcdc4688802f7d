"""jitgrad: reverse-mode autograd with the PyTorch user model, kernels compiled by Numba.

``import jitgrad as torch`` runs code written for torch autograd on the CPU. Importing is cheap:
Numba is imported, and kernels compiled (or loaded from the on-disk cache), on first use.
"""
import os as _os

# Numba's OpenMP workers spin after a prange kernel and starve the BLAS threads of the matmul
# that follows (measured 10-50x slower on 2 cores); passive waiting costs ~nothing here.
# Set before Numba loads its threading layer; a user's own setting wins.
_os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
# ...but PASSIVE also makes Intel OpenMP (MKL's GEMM threads) sleep the instant a GEMM ends, so
# each of the MLP step's eight GEMMs paid a thread wake-up (a 256x512x10 product: 0.02 ms with
# spinning, 0.10 ms without; the whole step 20% slower). KMP_BLOCKTIME (Intel OpenMP only)
# overrides the policy there: spin 1 ms, then sleep, so back-to-back GEMMs find their threads
# awake and an idle process stops spinning almost at once.
_os.environ.setdefault("KMP_BLOCKTIME", "1")

from . import _dtype
from ._dtype import (  # noqa: F401 - public dtype names
    bool_ as bool,  # noqa: A004
    dtype,
    float16,
    float32,
    float64,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    set_default_dtype,
    uint8,
)
from ._size import Size, device, get_default_device, set_default_device
from .backends.cuda_alloc import OutOfMemoryError  # noqa: F401 - torch.OutOfMemoryError
from ._tensor_str import get_printoptions, set_printoptions
from .autograd import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .autograd import is_anomaly_check_nan_enabled, is_anomaly_enabled  # noqa: F401
from .autograd import is_inference_mode_enabled  # noqa: F401
from .tensor import Tensor
from .ops import methods as _methods  # noqa: F401 - binds Tensor methods
from .ops.basic import (
    arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like, is_tensor, linspace,
    logspace, manual_seed, numel, ones, ones_like, rand, rand_like, randint, randint_like, randn,
    randn_like, randperm, scalar_tensor, tensor, zeros, zeros_like, clone, empty_strided,
)
from .ops.functional import (
    abs, absolute, acos, add, allclose, asin, atan, ceil, clamp, clamp_max, clamp_min, clip,
    cos, cosh, div, eq, equal, erf, exp, expm1, floor, floor_divide, fmod, frac, ge, greater,
    greater_equal, gt, isclose, isfinite, isinf, isnan, le, less, less_equal, log, log1p, log2,
    log10, logical_and, logical_not, logical_or, logical_xor, lt, maximum, minimum, mul, multiply,
    ne, neg, negative, not_equal, pow, subtract, divide, reciprocal, relu, remainder, round,
    rsqrt, rsub, sigmoid,
    sign, sin, sinh, sqrt, square, sub, tan, tanh, true_divide, trunc, where,
)
from .ops.functional import (  # added with the elementwise PyTorch-parity sweep
    addcdiv, addcmul, arccos, arcsin, arctan, bitwise_and, bitwise_not, bitwise_or, bitwise_xor,
    copysign, deg2rad, exp2, fix, float_power, fmax, fmin, heaviside, hypot, lerp, logaddexp,
    logaddexp2, logit, nan_to_num, positive, rad2deg, sgn, signbit, sinc, xlogy,
)
from .ops.index import (argwhere, gather, index_add, index_copy, index_fill, index_put,
                        index_select, masked_fill, masked_select, nonzero, put, scatter,
                        scatter_add, scatter_reduce, take, take_along_dim)
from .ops.linalg import addmm, bmm, dot, ger, inner, matmul, mm, mv, outer, vdot
from .ops.linalg import (  # added with the matrix-product parity sweep
    addbmm, addmv, addr, baddbmm, chain_matmul, kron, tensordot, trace,
)
from .ops.einsum import einsum
from . import linalg  # noqa: F401 - torch.linalg
from .ops.reduce import (all, amax, amin, aminmax, any, argmax, argmin, count_nonzero, cumsum,
                         logsumexp, max, mean, min, norm, prod, std, std_mean, sum, var, var_mean)
from .ops.sort import argsort, kthvalue, median, msort, nanmedian, sort, topk, unique
from .ops.shape import (atleast_1d, broadcast_tensors, broadcast_to, cat, chunk, concat, flatten,
                        flip, hstack, movedim, narrow, permute, reshape, roll, select, split,
                        squeeze, stack, swapaxes, t, tile, transpose, unbind, unflatten, unsqueeze,
                        vstack)
from .ops.shape import (  # noqa: F811 - the function forms (no varargs) replace the methods'
    torch_flip as flip, torch_permute as permute, torch_reshape as reshape, torch_tile as tile,
)
from .ops.shape import (  # added with the shape-op PyTorch-parity sweep
    adjoint, atleast_2d, atleast_3d, column_stack, concatenate, diagonal, dsplit, dstack,
    fliplr, flipud, hsplit, moveaxis, ravel, row_stack, split_with_sizes, swapdims,
    tensor_split, vsplit,
)
from .ops.softmax import log_softmax, softmax
from .ops.real_parts import conj, conj_physical, imag, real  # real tensors' complex accessors
from .ops.special import (  # added with issue 13: registry ops
    acosh, arccosh, arcsinh, arctan2, arctanh, asinh, atan2, atanh, bitwise_left_shift,
    bitwise_right_shift, erfc, erfinv,
)
from .ops.special_functions import digamma, i0, lgamma, mvlgamma, polygamma  # gamma/Bessel
from .ops.special_functions import igamma, igammac  # regularized incomplete gamma
from .ops.special_functions import install as _install_special_methods
from .ops.weight_norm import _weight_norm, _weight_norm_interface, norm_except_dim  # noqa: F401
from .ops.linalg_orth import geqrf, matrix_exp  # nn.utils.parametrizations.orthogonal
from .ops.triangular import diag, diag_embed, diagflat, tril, tril_indices, triu, triu_indices
from .ops.linalg_solve import det, inverse, logdet, slogdet  # ops/linalg_solve.py
from .ops.linalg_solve import torch_cholesky as cholesky
from .ops.linalg_lu import lu_unpack, torch_lu as lu, torch_lu_solve as lu_solve  # noqa: I001
from .ops.linalg_legacy import cholesky_inverse, cholesky_solve, pinverse, triangular_solve
from .ops.linalg_legacy import torch_qr as qr, torch_svd as svd  # noqa: I001
from .ops.linalg_extra import cross
from .ops.linalg_extra import torch_matrix_power as matrix_power
from .ops.grids import meshgrid, repeat_interleave
from .ops.cumulative import (cummax, cummin, cumprod, cumulative_trapezoid, logcumsumexp,
                             trapezoid, trapz)
from .ops.nan_reduce import nanmean, nansum
from .ops.bucketing import bucketize, histc, searchsorted
from .ops.quantile import nanquantile, quantile  # ops/quantile.py
from .ops.frexp import frexp  # ops/frexp.py
from .ops.mode import mode  # ops/mode.py
from .ops.histogram import histogram, histogramdd  # ops/histogram.py
from .ops.windows import (bartlett_window, blackman_window, hamming_window, hann_window,
                          kaiser_window)
from .ops.distances import cdist, corrcoef, cov, diff, pdist  # ops/distances.py
from .ops.combine import (block_diag, broadcast_shapes, cartesian_prod, combinations, rot90,
                          unravel_index)
from .ops.counting import bincount, isin, unique_consecutive
from .ops.index_masked import masked_scatter
from .ops.view_scatter import diagonal_scatter, select_scatter, slice_scatter
from .ops.numeric import (gcd, is_complex, is_conj, is_neg, is_nonzero, isneginf, isposinf,
                          isreal, lcm, ldexp, nextafter, renorm, resolve_conj, resolve_neg)
from .ops import out as _out
from .ops.out import with_out as _with_out

# torch.<fn>(..., out=t) for the elementwise functions and factories (PyTorch's out= rules in
# ops/out.py). Only these public names take ``out``: Tensor methods and operators call the
# functions directly and pay nothing for it.
for _name in ("add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide",
              "neg", "negative", "pow", "reciprocal", "square", "exp", "expm1", "log", "log1p",
              "log2", "log10", "sqrt", "rsqrt", "abs", "absolute", "sign", "sin", "cos", "tan",
              "sinh", "cosh", "asin", "acos", "atan", "tanh", "sigmoid", "erf", "maximum",
              "minimum", "where", "eq", "ne", "lt", "le",
              "gt", "ge", "greater", "less", "greater_equal", "less_equal", "not_equal",
              "logical_not", "logical_and", "logical_or", "logical_xor", "floor_divide",
              "remainder", "fmod", "floor", "ceil", "round", "trunc", "frac",
              # added with the elementwise parity sweep
              "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign",
              "heaviside", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "lerp",
              "addcmul", "addcdiv", "exp2", "sinc", "deg2rad", "rad2deg", "nan_to_num",
              "logit", "signbit", "sgn", "fix", "arcsin", "arccos", "arctan", "float_power",
              # added with issue 13
              "asinh", "acosh", "atanh", "arcsinh", "arccosh", "arctanh", "atan2", "arctan2",
              "erfc", "erfinv", "bitwise_left_shift", "bitwise_right_shift"):
    globals()[_name] = _with_out(_name)(globals()[_name])
for _name in ("clamp", "clip", "clamp_min", "clamp_max"):
    globals()[_name] = _with_out(_name, "exact", cast_error=_out.dtype_mismatch,
                                 iterator=True)(globals()[_name])
for _name in ("zeros", "ones", "empty", "full", "linspace", "rand", "randn"):
    globals()[_name] = _with_out(_name, "factory", resize_warning=None)(globals()[_name])
arange = _with_out("arange", "factory", resize_warning=_out.ARANGE_RESIZE_WARNING)(arange)
del _name
from .random import (Generator, bernoulli, default_generator, get_rng_state, initial_seed,
                     multinomial, normal, seed, set_rng_state)
from .ops.random_gamma import (_dirichlet_grad, _sample_dirichlet, _standard_gamma,
                                _standard_gamma_grad)
from .ops.random_poisson import binomial, poisson
_install_special_methods()  # x.lgamma(), x.polygamma_(n), ...
from .ops import tensor_extras as _tensor_extras  # noqa: F401 - binds x.resize_(), x.new(), ...
from .ops.toplevel_inplace import functional_forms as _functional_forms
globals().update(_functional_forms())  # torch.abs_(t), torch.clamp_(t, 0, 1), ...
from . import special  # noqa: F401,E402 - torch.special
from . import autograd  # noqa: F401
from .serialization import save, load
from ._compile import compile  # noqa: F401,E402 - torch.compile
from ._numeric_info import e, finfo, iinfo, inf, nan, newaxis, pi  # noqa: F401
from .ops.toplevel_functions import (  # noqa: F401,A004 - torch.range shadows the builtin here
    asarray, dist, fill, frombuffer, range, typename,
)
from .ops.shape_as_strided import as_strided  # noqa: E402
from .ops.view_copies import (  # noqa: F401,E402 - torch.t_copy & co. (ops/view_copies.py)
    alias_copy, as_strided_copy, detach_copy, diagonal_copy, expand_copy, narrow_copy,
    permute_copy, select_copy, slice_copy, split_copy, split_with_sizes_copy, squeeze_copy,
    t_copy, transpose_copy, unbind_copy, unfold_copy, unsafe_chunk, unsafe_split,
    unsafe_split_with_sizes, unsqueeze_copy, values_copy, view_copy,
)
from .ops.view_scatter import as_strided_scatter  # noqa: E402
from .ops.gradient import gradient  # noqa: E402
from .ops.index_reduce import index_reduce  # noqa: E402
from .ops.toplevel_more import (  # noqa: F401,E402 - ops/toplevel_more.py
    empty_permuted, frobenius_norm, init_num_threads, is_distributed, is_storage, matrix_rank,
    nuclear_norm, set_anomaly_enabled, set_default_tensor_type, vander,
)
from .ops import index_reduce as _index_reduce, toplevel_more as _toplevel_more  # noqa: E402
from .ops import view_copies as _view_copies  # noqa: E402
_index_reduce.install()  # x.index_reduce(_)
_toplevel_more.install()  # x.dist, x.matrix_exp, x.hardshrink, x.prelu, x.new_empty_strided
_view_copies.install()  # x.narrow_copy, x.unsafe_split & co.
from ._settings import (  # noqa: F401 - process settings (_settings.py says what each does)
    are_deterministic_algorithms_enabled, get_deterministic_debug_mode,
    get_float32_matmul_precision, get_num_interop_threads, get_num_threads, has_lapack,
    has_openmp, has_spectral, is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled, set_deterministic_debug_mode, set_float32_matmul_precision,
    set_flush_denormal, set_num_interop_threads, set_num_threads, set_warn_always,
    use_deterministic_algorithms,
)

float = float32  # noqa: A001 - torch.float
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16
cfloat = None
strided = "strided"
contiguous_format = "contiguous_format"
preserve_format = "preserve_format"
channels_last = "channels_last"  # host layouts as PyTorch (_memory_format); ops keep their own
channels_last_3d = "channels_last_3d"

__version__ = "0.1.0"


class _LegacyTensorType(type):
    """``isinstance(t, FloatTensor)`` is a dtype check, as with PyTorch's legacy types."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Tensor) and obj.dtype is cls._dt


def _legacy_tensor_type(name, dt):
    """``FloatTensor([1, 2])`` / ``LongTensor(3)``: constructors that make plain Tensors."""
    def legacy_dtype(cls):
        return dt
    cls = _LegacyTensorType(name, (Tensor,), {"__slots__": (), "_dt": dt,
                                              "_legacy_dtype": classmethod(legacy_dtype),
                                              "__module__": "jitgrad"})

    def __new__(klass, *args, **kwargs):
        new = Tensor.__new__(Tensor)
        new.__init__(*args, dtype=dt, **kwargs)
        return new
    cls.__new__ = __new__
    return cls


FloatTensor = _legacy_tensor_type("FloatTensor", float32)
DoubleTensor = _legacy_tensor_type("DoubleTensor", float64)
LongTensor = _legacy_tensor_type("LongTensor", int64)
IntTensor = _legacy_tensor_type("IntTensor", int32)
BoolTensor = _legacy_tensor_type("BoolTensor", _dtype.bool_)


def is_floating_point(input) -> bool:
    if not isinstance(input, Tensor):
        from .ops.parser_errors import parser_type_name
        raise TypeError("is_floating_point(): argument 'input' (position 1) must be Tensor, "
                        f"not {parser_type_name(input)}")
    return input.is_floating_point()


def result_type(a, b):
    return _dtype.result_type(a, b)


def promote_types(a, b):
    return _dtype.promote_types(_dtype.to_dtype(a), _dtype.to_dtype(b))


def can_cast(from_, to):
    return _dtype.to_dtype(from_)._category <= _dtype.to_dtype(to)._category


# torch.max_pool2d, torch.conv2d & co.: nn.functional's (loaded on first use, like nn itself)
_NN_FUNCTIONS = {n: n for n in ("adaptive_avg_pool1d", "pixel_shuffle", "pixel_unshuffle")}
_NN_FUNCTIONS.update({n: n for n in ("conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                      "conv_transpose2d", "conv_transpose3d")})
# ATen's spellings, with ATen's signatures (nn/functional/_aten.py)
_NN_FUNCTIONS.update({n: f"_aten.{n}" for n in (
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "max_pool1d_with_indices",
    "adaptive_max_pool1d",
    "batch_norm", "native_batch_norm", "instance_norm", "group_norm", "layer_norm",
    "native_layer_norm", "rms_norm", "dropout", "alpha_dropout", "feature_alpha_dropout")})
_NN_FUNCTIONS["ctc_loss"] = "loss_ctc.torch_ctc_loss"  # ATen's signature (int reduction)
# more of them (nn/functional/_aten_extra.py: int reductions, embedding's weight first, ...)
_NN_FUNCTIONS.update({n: f"_aten_extra.{n}" for n in (
    "selu", "selu_", "celu", "celu_", "threshold", "threshold_", "rrelu", "rrelu_", "kl_div",
    "margin_ranking_loss", "hinge_embedding_loss", "poisson_nll_loss", "triplet_margin_loss",
    "cosine_embedding_loss", "binary_cross_entropy_with_logits", "embedding",
    "constant_pad_nd", "dropout_", "alpha_dropout_", "feature_dropout", "feature_dropout_",
    "feature_alpha_dropout_")})
# more ATen spellings (nn/functional/_aten_more.py, _aten_rnn.py)
_NN_FUNCTIONS.update({n: f"_aten_more.{n}" for n in (
    "convolution", "conv_tbc", "affine_grid_generator", "grid_sampler", "grid_sampler_2d",
    "grid_sampler_3d", "native_dropout", "native_group_norm", "embedding_renorm_")})
_NN_FUNCTIONS.update({n: f"_aten_rnn.{n}" for n in (
    "rnn_tanh_cell", "rnn_relu_cell", "lstm_cell", "gru_cell", "rnn_tanh", "rnn_relu", "lstm",
    "gru")})
# and those whose torch.X is F.X
_NN_FUNCTIONS.update({n: n for n in ("hardshrink", "prelu", "bilinear", "cosine_similarity",
                                      "pairwise_distance", "channel_shuffle",
                                      "native_channel_shuffle")})


_LAZY_MODULES = ("nn", "optim", "cuda", "utils", "fusion", "math", "backends", "testing",
                 "distributed", "distributions", "func", "signal")


def __getattr__(name):
    # Subpackages that import Numba or are large load on first access, keeping import fast.
    import importlib
    if name in _LAZY_MODULES:
        return importlib.import_module(f"jitgrad.{name}")
    if name == "has_mkl":  # asks the BLAS backend, which loads MKL
        from ._settings import _has_mkl
        return _has_mkl()
    if name in _NN_FUNCTIONS:
        module, _, attr = f"nn.functional.{_NN_FUNCTIONS[name]}".rpartition(".")
        return getattr(importlib.import_module(f"jitgrad.{module}"), attr)
    raise AttributeError(f"module 'jitgrad' has no attribute {name!r}")


def __dir__():
    # the lazily bound names are part of the namespace too (dir(torch) lists them)
    return sorted(set(globals()) | set(_NN_FUNCTIONS) | set(_LAZY_MODULES) | {"has_mkl"})
