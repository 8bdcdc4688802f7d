"""Batching samples: ``default_collate`` (stack a list of samples field by field, with PyTorch's
rules and dtypes) over ``collate`` and its type map, and ``default_convert`` (what a loader
without automatic batching applies to each sample).

Credit: ``collate`` and its type map follows PyTorch's ``torch/utils/data/_utils/collate.py`` (https://github.com/pytorch/pytorch),
Copyright (c) 2016- Facebook, Inc (Adam Paszke) and the PyTorch contributors, BSD 3-Clause
license; its terms apply to the ported parts.
"""
from __future__ import annotations

import collections.abc as abc
import copy

import numpy as np

from ...tensor import Tensor

__all__ = ["default_collate", "default_convert", "collate", "default_collate_fn_map"]


def _np_str_obj(dtype):
    """PyTorch's ``np_str_obj_array_pattern`` (``[SaUO]``) on ``dtype.str``."""
    return any(c in dtype.str for c in "SaUO")


def default_convert(data):
    """PyTorch's ``default_convert``: NumPy arrays/scalars (not strings/objects) become
    tensors, containers are converted element by element, everything else is left as is."""
    from ...ops.basic import as_tensor
    elem_type = type(data)
    if isinstance(data, Tensor):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and _np_str_obj(data.dtype):
            return data
        return as_tensor(data)
    if isinstance(data, abc.Mapping):
        try:
            if isinstance(data, abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


default_collate_err_msg_format = ("default_collate: batch must contain tensors, numpy arrays, "
                                  "numbers, dicts or lists; found {}")


def collate(batch, *, collate_fn_map=None):
    """PyTorch's ``collate``: the function registered for the first element's type (or a base
    of it) collates, containers are collated field by field."""
    elem = batch[0]
    elem_type = type(elem)
    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)
    if isinstance(elem, abc.Mapping):
        def fields():
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map)
                    for key in elem}
        try:
            if isinstance(elem, abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update(fields())
                return clone
            return elem_type(fields())
        except TypeError:
            return fields()
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map)
                           for samples in zip(*batch)))
    if isinstance(elem, abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map)
                              for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...ops.shape_join import stack
    return stack(list(batch), 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    from ...ops.basic import as_tensor
    elem = batch[0]
    if _np_str_obj(elem.dtype):
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    from ...ops.basic import as_tensor
    if all(type(b) is type(batch[0]) for b in batch):
        # one NumPy scalar type: keep it (int16 scalars give an int16 tensor, as in PyTorch)
        return as_tensor(np.array(batch))
    return as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    from ... import _dtype as D
    from ...ops.basic import tensor
    return tensor(batch, dtype=D.float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ...ops.basic import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


default_collate_fn_map = {Tensor: collate_tensor_fn, np.ndarray: collate_numpy_array_fn,
                          (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
                          float: collate_float_fn, int: collate_int_fn, str: collate_str_fn,
                          bytes: collate_str_fn}


def default_collate(batch):
    """Stack a list of samples into a batch, field by field (PyTorch's rules and dtypes)."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
