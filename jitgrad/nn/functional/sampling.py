"""Spatial transformers: ``affine_grid`` and ``grid_sample``.

The Python-level checks and warnings are PyTorch's (``torch/nn/functional.py``), the ATen-level
checks ``GridSamplerUtils.h``'s, in their order. Credit: the argument handling follows
PyTorch (https://github.com/pytorch/pytorch), Copyright (c) 2016- Facebook, Inc (Adam Paszke)
and the PyTorch contributors, BSD 3-Clause license; its terms apply to the ported parts.

* ``affine_grid`` is ATen's ``affine_grid_generator`` composed from recorded ops (a base grid of
  ``linspace`` rows times ``theta`` by ``bmm``) and shown as one ``AffineGridGeneratorBackward0``
  node; its gradient is the composition's.
* ``grid_sample`` runs ``_sampling_kernels`` (4-D input) or ``_sampling3d_kernels`` (5-D:
  trilinear/nearest, no bicubic), declarations rendered by ``_sampling_arrays`` for Numba on the
  CPU and numba-cuda on the device, and records ``GridSampler2DBackward0`` /
  ``GridSampler3DBackward0``, whose backward is one kernel pass giving both the input's and the
  grid's gradients.
"""
from __future__ import annotations

import warnings

from ... import _dtype as D
from ...autograd import grad_mode
from ...ops.composite import record, record_composition
from ...tensor import Tensor
from . import _sampling_arrays as K

__all__ = ["affine_grid", "grid_sample"]

_MODES = {"bilinear": 0, "nearest": 1, "bicubic": 2}
_PADDINGS = {"zeros": 0, "border": 1, "reflection": 2}
_DEFAULT_CHANGED = ("Default grid_sample and affine_grid behavior has changed to "
                    "align_corners=False since 1.3.0. Please specify align_corners=True if the "
                    "old behavior is desired. See the documentation of grid_sample for details.")


def _sizes(t) -> str:
    return "[" + ", ".join(str(int(s)) for s in t.shape) + "]"


# ----------------------------------------------------------------------------- affine_grid


def _linspace_from_neg_one(theta, steps, align_corners):
    """ATen's ``linspace_from_neg_one``: the normalized pixel centres of one axis."""
    from ...ops.basic import linspace, zeros
    if steps <= 1:
        return zeros(1, dtype=theta.dtype, device=theta.device)
    r = linspace(-1, 1, steps, dtype=theta.dtype, device=theta.device)
    if not align_corners:
        r = r * (steps - 1) / steps
    return r


def _base_grid(theta, spatial, align_corners):
    """``(1, prod(spatial), len(spatial) + 1)``: the x, y(, z) coordinates and a column of
    ones, x varying fastest (ATen's ``make_base_grid_4D/5D``)."""
    from ...ops.basic import ones
    from ...ops.shape import stack
    full = tuple(int(s) for s in spatial)
    nd = len(full)
    cols = []
    for axis in range(nd - 1, -1, -1):  # x is the last spatial dim
        r = _linspace_from_neg_one(theta, full[axis], align_corners)
        shape = [1] * nd
        shape[axis] = r.shape[0]
        cols.append(r.reshape(tuple(shape)).expand(full))
    cols.append(ones(full, dtype=theta.dtype, device=theta.device))
    count = 1
    for s in full:
        count *= s
    return stack(cols, -1).reshape((1, count, nd + 1))


def affine_grid(theta, size, align_corners=None):
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    if not theta.is_floating_point():
        raise ValueError(f"Expected theta to have floating point type, but got {theta.dtype}")
    if len(size) == 4:
        if theta.dim() != 3 or theta.shape[-2] != 2 or theta.shape[-1] != 3:
            raise ValueError(f"Expected a batch of 2D affine matrices of shape Nx2x3 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-2:]
    elif len(size) == 5:
        if theta.dim() != 3 or theta.shape[-2] != 3 or theta.shape[-1] != 4:
            raise ValueError(f"Expected a batch of 3D affine matrices of shape Nx3x4 for size "
                             f"{size}. Got {theta.shape}.")
        spatial = size[-3:]
    else:
        raise NotImplementedError("affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    n = int(size[0])
    if int(theta.shape[0]) != n:  # what ATen's bmm says about the base grid's batch
        raise RuntimeError("Expected size for first two dimensions of batch2 tensor to be: "
                           f"[{n}, {theta.shape[2]}] but got: [{theta.shape[0]}, "
                           f"{theta.shape[2]}].")
    out_shape = (n,) + tuple(int(s) for s in spatial) + (len(spatial),)

    def build(t):
        base = _base_grid(t, spatial, bool(align_corners))
        base = base.expand((n,) + tuple(base.shape[1:]))
        return base.bmm(t.transpose(1, 2)).reshape(out_shape)
    return record_composition("AffineGridGeneratorBackward0", (theta,), build)


# ----------------------------------------------------------------------------- grid_sample


def _check(input, grid, mode):
    """ATen's ``check_grid_sampler_common`` and ``check_grid_sampler_2d/3d``."""
    if input.device != grid.device:
        raise RuntimeError("grid_sampler(): expected input and grid to be on same device, but "
                           f"input is on {input.device} and grid is on {grid.device}")
    if input.dim() == 0 or grid.dim() == 0 or input.shape[0] != grid.shape[0]:
        raise RuntimeError("grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {_sizes(input)} and grid with sizes "
                           f"{_sizes(grid)}")
    if grid.shape[-1] != input.dim() - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {input.dim() - 2} in "
                           f"last dimension, but got grid with sizes {_sizes(grid)}")
    for i in range(2, input.dim()):
        if input.shape[i] <= 0:
            raise RuntimeError("grid_sampler(): expected input to have non-empty spatial "
                               f"dimensions, but input has sizes {_sizes(input)} with "
                               f"dimension {i} being empty")
    want = 4 if input.dim() == 4 else 5
    if input.dim() != want or grid.dim() != want:
        raise RuntimeError(f"grid_sampler(): expected {want}D input and grid with same number "
                           f"of dimensions, but got input with sizes {_sizes(input)} and grid "
                           f"with sizes {_sizes(grid)}")
    if want == 5 and mode == 2:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if not input.dtype.is_floating_point:
        kernel = "grid_sampler3d_cpu" if want == 5 else "grid_sampler_2d_cpu_kernel_impl"
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_name(input.dtype)}'")
    if grid.dtype != input.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_name(input.dtype)} but found "
                           f"{D.scalar_name(grid.dtype)}")


def grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=None):
    if mode not in _MODES:
        raise ValueError("nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDINGS:
        raise ValueError("nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if align_corners is None:
        warnings.warn(_DEFAULT_CHANGED, stacklevel=2)
        align_corners = False
    m, p, ac = _MODES[mode], _PADDINGS[padding_mode], bool(align_corners)
    _check(input, grid, m)
    data = K.sample(input._data, grid._data, m, p, ac)
    nd = input.dim() - 2
    return record(f"GridSampler{nd}DBackward0", (input, grid), data, _grid_sample_backward,
                  save=(("input", input), ("grid", grid)),
                  attrs={"mode": m, "padding": p, "align": ac, "nd": nd})


def _second_order(node, *gs):
    raise NotImplementedError("jitgrad: the second derivative of grid_sample is not "
                              f"implemented ({node.name()})")


def _grid_sample_backward(node, g):
    a = node.ctx.attrs
    x, grid = node.saved("input"), node.saved("grid")
    need_x, need_grid = node.ctx.needs_input_grad
    gx, ggrid = K.sample_backward(g._data, x._data, grid._data, a["mode"], a["padding"],
                                  a["align"], need_x)
    if grad_mode.is_grad_enabled():  # create_graph: the results record a node of their own
        gx, ggrid = record(f"GridSampler{a['nd']}DBackwardBackward0", (g, x, grid),
                           [gx if gx is not None else ggrid, ggrid], _second_order)
        gx = gx if need_x else None
    else:
        gx = Tensor._make(gx) if need_x else None
        ggrid = Tensor._make(ggrid)
    return gx, (ggrid if need_grid else None)
