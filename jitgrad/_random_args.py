"""Argument checks of the CPU generator's samplers (``jitgrad._random``): shapes, dtypes and
``random_``'s from/to bounds, with ATen's errors and warnings."""

import numpy as np

# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------

def _shape_of(shape):
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise RuntimeError("Trying to create tensor with negative dimension "
                           f"{min(shape)}: {list(shape)}")
    return shape


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _float_dtype(dtype, default=np.float32):
    dt = np.dtype(default if dtype is None else dtype)
    if dt not in (np.float32, np.float64, np.float16):
        raise TypeError(f"expected a floating point dtype, got {dt}")
    return dt


# ATen's names: ScalarType (kernel dispatch errors) and caffe2 TypeMeta (bounds errors)
_SCALAR_NAME = {"float32": "Float", "float64": "Double", "float16": "Half", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
                "bool": "Bool"}
_META_NAME = {"float32": "float", "float64": "double", "float16": "c10::Half",
              "int64": "long int", "int32": "int", "int16": "short int", "int8": "signed char",
              "uint8": "unsigned char", "bool": "bool"}
_FLOAT_DIGITS = {"float16": 11, "float32": 24, "float64": 53}


def _need_float(dtype, kernel=None, dist=None):
    """The dtype check of a floating-point sampler, with PyTorch's error."""
    dt = np.dtype(dtype)
    if dt.kind != "f":
        name = _SCALAR_NAME.get(dt.name, dt.name)
        if dist == "Exponential":
            raise RuntimeError("Exponential distribution is a continuous probability "
                               "distribution. dtype must be a floating point but you specified "
                               f"{name}")
        if dist == "Cauchy":
            raise RuntimeError("Cauchy distribution is a continuous probability distribution. "
                               "dtype must be a floating point but you specified "
                               f"{_META_NAME.get(dt.name, dt.name)}")
        raise NotImplementedError(f'"{kernel}" not implemented for \'{name}\'')
    return dt


def _to_int64_via(dt, v):
    """``static_cast<int64_t>(static_cast<scalar_t>(v))`` (x86: NaN/overflow -> INT64_MIN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        f = dt.type(v)
    if not np.isfinite(f) or not -(1 << 63) <= float(f) < (1 << 63):
        return -(1 << 63)
    return int(f)


def _update_from(dt, frm):
    from_plus_1 = _to_int64_via(dt, frm + 1)
    if from_plus_1 < frm:
        n = abs(frm + 1).bit_length() - 1
        frm = from_plus_1 + (1 << (n - _FLOAT_DIGITS[dt.name] + 1))
    return frm


def _update_to(dt, to):
    to_minus_1 = _to_int64_via(dt, to - 1)
    if to_minus_1 >= to:
        n = abs(to - 1).bit_length() - 1
        to = to_minus_1 - (1 << (n - _FLOAT_DIGITS[dt.name] + 1))
    return to


def _check_from_to_in_range(frm, to_inc, dt):
    name = _META_NAME.get(dt.name, dt.name)
    if dt.kind == "f":
        fi = np.finfo(dt)
        lo, hi = float(fi.min), float(fi.max)
        for v, what in ((frm, "from"), (to_inc, "to - 1")):
            if not lo <= v <= hi:
                raise RuntimeError(f"{what} is out of bounds for {name}")
        digits = _FLOAT_DIGITS[dt.name]
        for v, what in ((frm, "from"), (to_inc, "to - 1")):
            if v < -(1 << digits) or v > (1 << digits):
                import warnings
                warnings.warn(
                    f"{what} is out of bounds [-(2^{digits}), 2^{digits}]. Due to precision "
                    f"limitations {name} can support discrete uniform distribution only within "
                    "this range. This warning will become an error in version 1.7 release, "
                    "please fix the code in advance", UserWarning, stacklevel=4)
        return
    if dt.kind == "b":
        lo, hi = 0, 1
    else:
        ii = np.iinfo(dt)
        lo, hi = int(ii.min), int(ii.max)
    for v, what in ((frm, "from"), (to_inc, "to - 1")):
        if not lo <= v <= hi:
            raise RuntimeError(f"{what} is out of bounds for {name}")

def random_inclusive_bounds(dt, frm):
    """``random_(from, None)``: ``(from, to_inc)`` for dtype ``dt`` as ATen's random_from_to
    works them out (floats up to 2**digits, bool 1, integers their max), checked; shared by the
    CPU generator (``_random_discrete``) and the CUDA one (``_cuda_random``)."""
    if dt.kind == "f":
        to_inc = min(1 << _FLOAT_DIGITS[dt.name], (1 << 63) - 1)
        frm = _update_from(dt, frm)
        if not frm < to_inc:
            raise RuntimeError("random_ expects 'from' casted to dtype to be less than or "
                               "equal to 'to_inc' casted to dtype, but got "
                               f"from={frm} > to_inc={to_inc}")
    elif dt.kind == "b":
        to_inc = 1
    else:
        to_inc = int(np.iinfo(dt).max)
    _check_from_to_in_range(frm, to_inc, dt)
    return frm, to_inc
