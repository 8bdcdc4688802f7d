"""Tensor printing, ported from PyTorch's ``torch/_tensor_str.py``.

This is a pure-Python/NumPy port of PyTorch's tensor formatting logic
(``_Formatter``, ``_tensor_str``, ``get_summarized_data``, ``_add_suffixes``
and the plain-strided-tensor branch of ``_str_intern``), so that
``repr(jitgrad_tensor)`` is character-for-character what ``repr(torch_tensor)``
prints for the same values, dtype, print options and autograd flags.

Credit: the algorithm and its structure come from PyTorch
(https://github.com/pytorch/pytorch, file ``torch/_tensor_str.py``),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors,
distributed under the BSD 3-Clause license.  The PyTorch license terms apply to
this derived code: redistributions must retain that copyright notice, the list
of conditions and the disclaimer of the PyTorch BSD license.

Only numpy and the standard library are imported here: the module works on
``numpy.ndarray`` data plus a dtype name, and knows nothing about jitgrad's
Tensor class.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
from typing import Any

import numpy as np

__all__ = [
    "PRINT_OPTS",
    "format_size",
    "format_tensor",
    "get_printoptions",
    "printoptions",
    "set_printoptions",
]

inf = math.inf


@dataclasses.dataclass
class __PrinterOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None


PRINT_OPTS = __PrinterOptions()


def set_printoptions(
    precision=None,
    threshold=None,
    edgeitems=None,
    linewidth=None,
    profile=None,
    sci_mode=None,
):
    r"""Set options for printing (same semantics as ``torch.set_printoptions``).

    Args:
        precision: Number of digits of precision for floating point output
            (default = 4).
        threshold: Total number of array elements which trigger summarization
            rather than full `repr` (default = 1000).
        edgeitems: Number of array items in summary at beginning and end of
            each dimension (default = 3).
        linewidth: The number of characters per line for the purpose of
            inserting line breaks (default = 80). Thresholded matrices will
            ignore this parameter.
        profile: Sane defaults for pretty printing. Can override with any of
            the above options. (any one of `default`, `short`, `full`)
        sci_mode: Enable (True) or disable (False) scientific notation. If
            None (default) is specified, the value is chosen automatically.
            Note that, as in PyTorch, every call resets ``sci_mode`` to the
            value passed (``None`` when omitted).
    """
    if profile is not None:
        if profile == "default":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80
        elif profile == "short":
            PRINT_OPTS.precision = 2
            PRINT_OPTS.threshold = 1000
            PRINT_OPTS.edgeitems = 2
            PRINT_OPTS.linewidth = 80
        elif profile == "full":
            PRINT_OPTS.precision = 4
            PRINT_OPTS.threshold = inf
            PRINT_OPTS.edgeitems = 3
            PRINT_OPTS.linewidth = 80

    if precision is not None:
        PRINT_OPTS.precision = precision
    if threshold is not None:
        PRINT_OPTS.threshold = threshold
    if edgeitems is not None:
        PRINT_OPTS.edgeitems = edgeitems
    if linewidth is not None:
        PRINT_OPTS.linewidth = linewidth
    PRINT_OPTS.sci_mode = sci_mode


def get_printoptions() -> dict[str, Any]:
    r"""Gets the current options for printing, as a dictionary that
    can be passed as ``**kwargs`` to set_printoptions().
    """
    return dataclasses.asdict(PRINT_OPTS)


@contextlib.contextmanager
def printoptions(**kwargs):
    r"""Context manager that temporarily changes the print options.  Accepted
    arguments are same as :func:`set_printoptions`."""
    old_kwargs = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old_kwargs)


# ---------------------------------------------------------------------------
# dtypes
# ---------------------------------------------------------------------------

# canonical dtype name -> numpy storage dtype
_NP_STORAGE = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "bfloat16": np.float32,  # stored as float32 holding bfloat16-representable values
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "uint16": np.uint16,
    "uint32": np.uint32,
    "uint64": np.uint64,
    "bool": np.bool_,
}

_ALIASES = {
    "float": "float32",
    "double": "float64",
    "half": "float16",
    "long": "int64",
    "int": "int32",
    "short": "int16",
    "bool_": "bool",
}

_FLOATING = {"float32", "float64", "float16", "bfloat16"}


def _canonical_dtype(dtype) -> str:
    name = str(dtype)
    name = name.removeprefix("torch.").removeprefix("jitgrad.")
    name = _ALIASES.get(name, name)
    if name not in _NP_STORAGE:
        raise ValueError(f"unsupported dtype for printing: {dtype!r}")
    return name


def _round_to_bfloat16(a: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), as float32."""
    shape = np.shape(a)
    a = np.array(a, dtype=np.float32, order="C", copy=True).reshape(-1)
    bits = a.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = rounded.view(np.float32)
    out = np.where(np.isnan(a), np.float32(np.nan), out)
    return out.reshape(shape)


def _as_array(data, name: str) -> np.ndarray:
    arr = np.asarray(data)
    storage = _NP_STORAGE[name]
    if arr.dtype != storage:
        with np.errstate(all="ignore"):
            arr = arr.astype(storage)
    if name == "bfloat16":
        arr = _round_to_bfloat16(arr)
    return arr


# ---------------------------------------------------------------------------
# _Formatter
# ---------------------------------------------------------------------------


class _Formatter:
    def __init__(self, tensor: np.ndarray, floating_dtype: bool):
        self.floating_dtype = floating_dtype
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1

        tensor_view = tensor.reshape(-1)

        if not self.floating_dtype:
            # Width of str(value); formatting equal values gives equal strings,
            # so iterating the distinct values is enough.
            for value in np.unique(tensor_view).tolist():
                value_str = f"{value}"
                self.max_width = max(self.max_width, len(value_str))

        else:
            nonzero_finite_vals = tensor_view[
                np.isfinite(tensor_view) & (tensor_view != 0)
            ]

            if nonzero_finite_vals.size == 0:
                # no valid number, do nothing
                return

            # Convert to double for easy calculation (as torch does).
            nonzero_finite_abs = np.abs(nonzero_finite_vals).astype(np.float64)
            nonzero_finite_min = nonzero_finite_abs.min()
            nonzero_finite_max = nonzero_finite_abs.max()

            if np.any(nonzero_finite_vals != np.ceil(nonzero_finite_vals)):
                self.int_mode = False

            if PRINT_OPTS.sci_mode is None:
                with np.errstate(all="ignore"):
                    self.sci_mode = bool(
                        nonzero_finite_max / nonzero_finite_min > 1000.0
                        or nonzero_finite_max > 1.0e8
                        or nonzero_finite_min < 1.0e-4
                    )
            else:
                self.sci_mode = PRINT_OPTS.sci_mode

            # Distinct values suffice (zeros and non-finite were removed, so
            # equal values always format identically).
            values = np.unique(nonzero_finite_vals).tolist()
            if self.int_mode:
                # in int_mode for floats, all numbers are integers, and we append a decimal to
                # nonfinites to indicate that the tensor is of floating type. add 1 to the len to
                # account for this.
                if self.sci_mode:
                    for value in values:
                        value_str = f"{{:.{PRINT_OPTS.precision}e}}".format(value)
                        self.max_width = max(self.max_width, len(value_str))
                else:
                    for value in values:
                        value_str = f"{value:.0f}"
                        self.max_width = max(self.max_width, len(value_str) + 1)
            else:
                # Check if scientific representation should be used.
                if self.sci_mode:
                    for value in values:
                        value_str = f"{{:.{PRINT_OPTS.precision}e}}".format(value)
                        self.max_width = max(self.max_width, len(value_str))
                else:
                    for value in values:
                        value_str = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
                        self.max_width = max(self.max_width, len(value_str))

    def width(self):
        return self.max_width

    def format(self, value):
        if self.floating_dtype:
            if self.sci_mode:
                ret = f"{{:{self.max_width}.{PRINT_OPTS.precision}e}}".format(value)
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{{:.{PRINT_OPTS.precision}f}}".format(value)
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


# ---------------------------------------------------------------------------
# body
# ---------------------------------------------------------------------------


def _scalar_str(self: np.ndarray, formatter1: _Formatter) -> str:
    return formatter1.format(self.item())


def _vector_str(self: np.ndarray, indent, summarize, formatter1: _Formatter) -> str:
    # length includes spaces and comma between elements
    element_length = formatter1.width() + 2

    elements_per_line = max(
        1, math.floor((PRINT_OPTS.linewidth - indent) / (element_length))
    )

    _val_formatter = formatter1.format

    if summarize and not PRINT_OPTS.edgeitems:
        # Deal with edge case that negative zero is zero
        data = ["..."]
    elif summarize and self.shape[0] > 2 * PRINT_OPTS.edgeitems:
        data = (
            [_val_formatter(val) for val in self[: PRINT_OPTS.edgeitems].tolist()]
            + [" ..."]
            + [_val_formatter(val) for val in self[-PRINT_OPTS.edgeitems :].tolist()]
        )
    else:
        data = [_val_formatter(val) for val in self.tolist()]

    data_lines = [
        data[i : i + elements_per_line] for i in range(0, len(data), elements_per_line)
    ]
    lines = [", ".join(line) for line in data_lines]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _tensor_str_with_formatter(self: np.ndarray, indent, summarize, formatter1) -> str:
    dim = self.ndim

    if dim == 0:
        return _scalar_str(self, formatter1)

    if dim == 1:
        return _vector_str(self, indent, summarize, formatter1)

    if summarize and self.shape[0] > 2 * PRINT_OPTS.edgeitems:
        slices = (
            [
                _tensor_str_with_formatter(self[i], indent + 1, summarize, formatter1)
                for i in range(PRINT_OPTS.edgeitems)
            ]
            + ["..."]
            + [
                _tensor_str_with_formatter(self[i], indent + 1, summarize, formatter1)
                for i in range(len(self) - PRINT_OPTS.edgeitems, len(self))
            ]
        )
    else:
        slices = [
            _tensor_str_with_formatter(self[i], indent + 1, summarize, formatter1)
            for i in range(self.shape[0])
        ]

    tensor_str = ("," + "\n" * (dim - 1) + " " * (indent + 1)).join(slices)
    return "[" + tensor_str + "]"


def get_summarized_data(self: np.ndarray) -> np.ndarray:
    dim = self.ndim
    if dim == 0:
        return self
    if dim == 1:
        if self.shape[0] > 2 * PRINT_OPTS.edgeitems:
            return np.concatenate(
                (self[: PRINT_OPTS.edgeitems], self[-PRINT_OPTS.edgeitems :])
            )
        else:
            return self
    if not PRINT_OPTS.edgeitems:
        return np.empty([0] * dim, dtype=self.dtype)
    elif self.shape[0] > 2 * PRINT_OPTS.edgeitems:
        start = [self[i] for i in range(PRINT_OPTS.edgeitems)]
        end = [self[i] for i in range(len(self) - PRINT_OPTS.edgeitems, len(self))]
        return np.stack([get_summarized_data(x) for x in (start + end)])
    else:
        return np.stack([get_summarized_data(x) for x in self])


def _tensor_str(self: np.ndarray, indent: int, floating_dtype: bool) -> str:
    if self.size == 0:
        return "[]"

    summarize = self.size > PRINT_OPTS.threshold

    formatter = _Formatter(
        get_summarized_data(self) if summarize else self, floating_dtype
    )
    return _tensor_str_with_formatter(self, indent, summarize, formatter)


def _add_suffixes(tensor_str, suffixes, indent, force_newline):
    tensor_strs = [tensor_str]
    last_line_len = len(tensor_str) - tensor_str.rfind("\n") + 1
    for suffix in suffixes:
        suffix_len = len(suffix)
        if force_newline or last_line_len + suffix_len + 2 > PRINT_OPTS.linewidth:
            tensor_strs.append(",\n" + " " * indent + suffix)
            last_line_len = indent + suffix_len
            force_newline = False
        else:
            tensor_strs.append(", " + suffix)
            last_line_len += suffix_len + 2
    tensor_strs.append(")")
    return "".join(tensor_strs)


def _device_str(device) -> str:
    dev = str(device)
    if dev in ("cuda", "mps", "xpu"):
        dev += ":0"
    return dev


def _shape_str(shape) -> str:
    return str(tuple(int(d) for d in shape))


# ---------------------------------------------------------------------------
# public API
# ---------------------------------------------------------------------------


def format_tensor(
    data,
    *,
    dtype,
    requires_grad: bool = False,
    grad_fn_name: str | None = None,
    device: str = "cpu",
    default_dtype: str = "float32",
    prefix: str = "tensor(",
) -> str:
    """Return what ``repr(t)`` returns for the equivalent torch tensor ``t``.

    ``data`` holds the tensor's values (any shape, including 0-d); ``dtype`` is
    the tensor's dtype name ("float32", "float64", "float16", "bfloat16",
    "int64", "int32", "int16", "int8", "uint8", "bool"; a "torch." prefix is
    accepted).  ``grad_fn_name`` (e.g. "MulBackward0") prints
    ``grad_fn=<MulBackward0>`` and then ``requires_grad`` is not printed, as in
    torch.  ``default_dtype`` is the current default floating dtype.
    """
    name = _canonical_dtype(dtype)
    default_name = _canonical_dtype(default_dtype)
    self = _as_array(data, name)
    floating_dtype = name in _FLOATING

    indent = len(prefix)
    suffixes = []

    # Note [Print tensor device]: device is only printed when it is not the
    # default (cpu) device.
    dev = _device_str(device)
    if dev != "cpu":
        suffixes.append("device='" + dev + "'")

    has_default_dtype = name in (default_name, "int64", "bool")

    if self.size == 0:
        # Explicitly print the shape if it is not (0,), to match NumPy behavior
        if self.ndim != 1:
            suffixes.append("size=" + _shape_str(self.shape))

        # In an empty tensor, there are no elements to infer if the dtype
        # should be int64, so it must be shown explicitly.
        if name != default_name:
            suffixes.append("dtype=torch." + name)
        tensor_str = "[]"
    else:
        if not PRINT_OPTS.edgeitems:
            suffixes.append("size=" + _shape_str(self.shape))

        if not has_default_dtype:
            suffixes.append("dtype=torch." + name)

        tensor_str = _tensor_str(self, indent, floating_dtype)

    if grad_fn_name is not None:
        suffixes.append(f"grad_fn=<{grad_fn_name}>")
    elif requires_grad:
        suffixes.append("requires_grad=True")

    return _add_suffixes(prefix + tensor_str, suffixes, indent, force_newline=False)


def format_size(shape) -> str:
    """``repr(torch.Size(shape))``, e.g. ``torch.Size([2, 3])``."""
    return "torch.Size([" + ", ".join(str(int(d)) for d in shape) + "])"
