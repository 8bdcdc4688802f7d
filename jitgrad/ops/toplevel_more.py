"""More of ``torch.*`` a port meets: ``vander`` (ATen's fill/cumprod/flip), the deprecated
``frobenius_norm`` / ``nuclear_norm`` (ATen's NormBackward1 / linalg.matrix_norm 'nuc', with
their once-only warnings), ``matrix_rank`` (removed in PyTorch: its error), ``empty_permuted``,
``is_storage`` / ``is_distributed``, ``set_default_tensor_type`` (deprecated),
``set_anomaly_enabled``, ``init_num_threads``; and the Tensor methods whose functions exist
elsewhere (``dist``, ``matrix_exp``, ``hardshrink``, ``prelu``, ``new_empty_strided``,
``is_distributed``), bound by ``install``."""
from __future__ import annotations

import warnings

from .. import _dtype as D
from ..autograd import grad_mode
from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["vander", "frobenius_norm", "nuclear_norm", "matrix_rank", "empty_permuted",
           "is_storage", "is_distributed", "set_default_tensor_type", "set_anomaly_enabled",
           "init_num_threads"]

_warned: set = set()


def _warn_once(key, message):
    """ATen's TORCH_WARN_ONCE: the first call in the process warns."""
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, UserWarning, stacklevel=3)


def _need_tensor(x, name, arg="input", pos=1):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}(): argument '{arg}' (position {pos}) must be Tensor, not "
                        f"{parser_type_name(x)}")


# ----------------------------------------------------------------------------- vander

def vander(x, N=None, increasing=False):
    """``torch.vander``: columns x^(N-1) ... x^0 (``increasing``: x^0 first). As ATen: ones,
    then x written into columns 1.., their running product (cumprod) written back, then
    flipped; integer (and bool) inputs give int64, as cumprod promotes them."""
    _need_tensor(x, "vander", "x")
    if x.dim() != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0]
    if N is not None:
        n = int(N)
        if n < 0:
            raise RuntimeError("N must be non-negative.")
    from .basic import empty
    dt = D.promote_types(x.dtype, D.int64)
    result = empty((x.shape[0], n), dtype=dt, device=x.device)
    if n > 0:
        with grad_mode.no_grad():
            result.fill_(1)
        if n > 1:
            result[:, 1:].copy_(x.unsqueeze(1))
            result[:, 1:].copy_(result[:, 1:].cumprod(1))
    return result if increasing else result.flip(1)


# ----------------------------------------------------------------------------- deprecated norms

def frobenius_norm(input, dim=None, keepdim=False):
    """``at::frobenius_norm``: ``at::norm(input, 2, dim, keepdim)`` (NormBackward1)."""
    _need_tensor(input, "frobenius_norm")
    if dim is None:  # required, as in PyTorch's parser
        raise TypeError('frobenius_norm() missing 1 required positional arguments: "dim"')
    dim = [dim] if isinstance(dim, int) else list(dim)
    _warn_once("frobenius_norm",
               "at::frobenius_norm is deprecated and it is just left for JIT compatibility. It "
               "will be removed in a future PyTorch release. Please use `linalg.vector_norm(A, "
               "2., dim, keepdim)` instead")
    if len(dim) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dim)} dimensions "
                           "instead.")
    from .. import linalg
    from .composite import record_composition
    return record_composition("NormBackward1", (input,),
                              lambda a: linalg.vector_norm(a, 2, dim, keepdim))


_NO_DIM = object()


def nuclear_norm(input, dim=_NO_DIM, keepdim=False):
    """``at::nuclear_norm``: ``linalg.matrix_norm(input, 'nuc', dim, keepdim)``, ``dim``
    (-2, -1) when not given (a batch of matrices too, as ATen). ``nuclear_norm(x, True)`` is
    the keepdim overload."""
    _need_tensor(input, "nuclear_norm")
    if dim is _NO_DIM or isinstance(dim, bool):
        keepdim = keepdim if dim is _NO_DIM else dim
        dim = (-2, -1)
    _warn_once("nuclear_norm",
               "at::nuclear_norm is deprecated and it is just left for JIT compatibility. It "
               "will be removed in a future PyTorch release. Please use `linalg.matrix_norm(A, "
               "'nuc', dim, keepdim)` instead")
    from .. import linalg
    return linalg.matrix_norm(input, "nuc", tuple(dim), keepdim)


def matrix_rank(input, tol=None, symmetric=False, *, out=None):
    """Removed from PyTorch (1.9): it raises, pointing at ``linalg.matrix_rank``."""
    raise RuntimeError(
        "This function was deprecated since version 1.9 and is now removed.\n"
        "Please use the `torch.linalg.matrix_rank` function instead. "
        "The parameter 'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.")


# ----------------------------------------------------------------------------- factories

def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """An uninitialized tensor of ``size`` whose dims lie in memory in ``physical_layout``'s
    order (outermost first): ``empty_permuted((2, 3, 4), (0, 2, 1))`` has strides (12, 1, 3)."""
    from .basic import empty_strided
    size, order = [int(s) for s in size], [int(p) for p in physical_layout]
    if len(size) != len(order):
        raise RuntimeError("Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    seen = set()
    for p in order:
        if not 0 <= p < len(size):
            raise IndexError(f"Dimension out of range (expected to be in range of "
                             f"[{-len(size)}, {len(size) - 1}], but got {p})")
        if p in seen:
            raise RuntimeError("Duplicate dim not allowed")
        seen.add(p)
    stride, step = [0] * len(size), 1
    for p in reversed(order):
        stride[p] = step
        step *= max(size[p], 1)
    return empty_strided(tuple(size), tuple(stride), dtype=dtype, device=device,
                         requires_grad=requires_grad)


# ----------------------------------------------------------------------------- predicates, settings

def is_storage(obj, /):
    """jitgrad has no storage objects (a tensor's memory is its array): always False, as
    PyTorch answers for anything that is not one of its storage classes."""
    return False


def is_distributed(input):
    """No tensor is distributed here (PyTorch: False for every dense tensor)."""
    _need_tensor(input, "is_distributed", "self")
    return False


def set_default_tensor_type(t, /):
    """Deprecated: the default floating dtype from a legacy type (``torch.DoubleTensor``) or its
    name (``"torch.DoubleTensor"``), with PyTorch's once-only warning and its TypeErrors."""
    import jitgrad
    if isinstance(t, str):
        obj = jitgrad
        for part in t.split(".")[1:]:
            obj = getattr(obj, part)
        t = obj
    _warn_once("set_default_tensor_type",
               "torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
               "torch.set_default_dtype() and torch.set_default_device() as alternatives.")
    dt = getattr(t, "_dt", None) if isinstance(t, type) else None
    if dt is None:
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not dt.is_floating_point:
        raise TypeError("only floating-point types are supported as the default type")
    D.set_default_dtype(dt)


def set_anomaly_enabled(enabled, check_nan=True):
    """``torch.set_anomaly_enabled(enabled, check_nan=True)``: anomaly mode switched for the
    process (what ``autograd.set_detect_anomaly`` does for a block)."""
    for arg, pos, v in (("enabled", 1, enabled), ("check_nan", 2, check_nan)):
        if not isinstance(v, bool):
            raise TypeError(f"set_anomaly_enabled(): argument '{arg}' (position {pos}) must be "
                            f"bool, not {parser_type_name(v)}")
    from ..autograd import anomaly_mode
    anomaly_mode._set(enabled, check_nan)


def init_num_threads():
    """PyTorch initializes its thread pools here; Numba's and MKL's start on first use, so
    there is nothing to do."""
    return None


# ----------------------------------------------------------------------------- Tensor methods

def _new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad=False,
                       layout=None, pin_memory=False):
    """``x.new_empty_strided(size, stride)``: x's dtype and device unless given."""
    from .basic import empty_strided
    return empty_strided(tuple(size), tuple(stride),
                         dtype=dtype if dtype is not None else self.dtype,
                         device=device if device is not None else self.device,
                         requires_grad=requires_grad)


def _hardshrink(self, lambd=0.5):
    from ..nn.functional import hardshrink
    return hardshrink(self, lambd)


def _prelu(self, weight):
    from ..nn.functional import prelu
    return prelu(self, weight)


def _dist(self, other, p=2):
    from .toplevel_functions import dist
    return dist(self, other, p)


def _matrix_exp(self):
    from .linalg_orth import matrix_exp
    return matrix_exp(self)


def install():
    for name, fn in (("new_empty_strided", _new_empty_strided), ("hardshrink", _hardshrink),
                     ("prelu", _prelu), ("dist", _dist), ("matrix_exp", _matrix_exp),
                     ("is_distributed", is_distributed)):
        fn.__name__ = name
        setattr(Tensor, name, fn)
