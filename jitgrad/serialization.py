"""``jitgrad.save`` / ``jitgrad.load``: state dicts in a safe file format.

A file is a NumPy ``.npz`` archive: every tensor is one array member (``t0``, ``t1``, ...) and
the object's structure (nested dicts, lists, tuples, numbers, strings, booleans, None, tensor
references) is a JSON document stored in the member ``__jitgrad__``. Loading uses
``np.load(allow_pickle=False)`` and ``json``: nothing in a file can run code, unlike a pickle.
Objects outside that vocabulary (modules, arbitrary classes) raise ``TypeError`` on save; save
``model.state_dict()`` instead of the model.
"""
from __future__ import annotations

import io
import json
import math
import os
from collections import OrderedDict

import numpy as np

from .tensor import Tensor

__all__ = ["save", "load"]

FORMAT = "jitgrad-npz"
VERSION = 1
_STRUCT = "__jitgrad__"


def _c(a: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping 0-d arrays 0-d (np.ascontiguousarray would make them 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


class _Encoder:
    def __init__(self):
        self.arrays = {}

    def tensor(self, t: Tensor):
        from .nn.parameter import Parameter
        name = f"t{len(self.arrays)}"
        data = t._data
        entry = {"__tensor__": name, "requires_grad": bool(t._requires_grad),
                 "parameter": isinstance(t, Parameter)}
        if data.__class__ is not np.ndarray:  # CUDA: stored as a host copy, device recorded
            data = data.to_host()
            entry["device"] = str(t.device)
        self.arrays[name] = _c(data)
        return entry

    def encode(self, obj, path="obj"):
        if isinstance(obj, Tensor):
            return self.tensor(obj)
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
            return int(obj)
        if isinstance(obj, (float, np.floating)):
            v = float(obj)
            if math.isfinite(v):
                return v
            return {"__float__": repr(v)}
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.ndarray):
            name = f"t{len(self.arrays)}"
            self.arrays[name] = _c(obj)
            return {"__ndarray__": name}
        if isinstance(obj, dict):
            items = []
            for k, v in obj.items():
                if not isinstance(k, (str, int, float, bool)) and k is not None:
                    raise TypeError(f"jitgrad.save: unsupported dict key {k!r} at {path} "
                                    "(keys must be str, int, float, bool or None)")
                items.append([self.encode(k, path), self.encode(v, f"{path}[{k!r}]")])
            out = {"__dict__": items}
            if isinstance(obj, OrderedDict):
                out["ordered"] = True
                meta = getattr(obj, "_metadata", None)
                if meta is not None:
                    out["metadata"] = self.encode(meta, f"{path}._metadata")
            return out
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        from ._dtype import dtype as _Dt
        if isinstance(obj, _Dt):
            return {"__dtype__": obj.name}
        raise TypeError(
            f"jitgrad.save: cannot save an object of type {type(obj).__name__} at {path}; the "
            "safe format holds tensors, numbers, strings, None and dicts/lists/tuples of them "
            "(save model.state_dict() rather than the model)")


def _target_device(saved: str, map_location):
    """Where a tensor saved on ``saved`` loads: PyTorch's rules for a device/str ``map_location``
    (everything there) and a dict (``{"cuda:0": "cpu"}``); by default where it was saved."""
    if isinstance(map_location, dict):
        where = map_location.get(saved, saved)
    elif map_location is None:
        where = saved
    elif callable(map_location):
        raise NotImplementedError("jitgrad.load: a callable map_location is not supported; pass "
                                  "a device, a device string or a dict")
    else:
        where = map_location
    from ._size import device
    dev = device(where) if isinstance(where, str) else where
    if dev.type == "cuda":
        from . import cuda
        if not cuda.is_available():
            raise RuntimeError(
                "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() "
                "is False. If you are running on a CPU-only machine, please use torch.load with "
                "map_location=torch.device('cpu') to map your storages to the CPU.")
    return dev


def _decode(obj, arrays, map_location=None):
    if isinstance(obj, list):
        return [_decode(v, arrays, map_location) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        from .nn.parameter import Parameter
        data = arrays[obj["__tensor__"]]
        dev = _target_device(obj.get("device", "cpu"), map_location)
        if dev.type == "cuda":
            from ._cuda_array import CudaArray
            data = CudaArray.from_host(data)
        t = Tensor._make(data)
        if obj.get("parameter"):
            return Parameter(t, requires_grad=bool(obj.get("requires_grad", True)))
        if obj.get("requires_grad"):
            t.requires_grad_(True)
        return t
    if "__ndarray__" in obj:
        return arrays[obj["__ndarray__"]]
    if "__float__" in obj:
        return float(obj["__float__"])
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays, map_location) for v in obj["__tuple__"])
    if "__dtype__" in obj:
        from ._dtype import to_dtype
        return to_dtype(obj["__dtype__"])
    if "__dict__" in obj:
        cls = OrderedDict if obj.get("ordered") else dict
        out = cls((_decode(k, arrays, map_location), _decode(v, arrays, map_location))
                  for k, v in obj["__dict__"])
        if "metadata" in obj:
            out._metadata = _decode(obj["metadata"], arrays, map_location)
        return out
    raise ValueError(f"jitgrad.load: malformed structure entry {sorted(obj)}")


def save(obj, f, pickle_module=None, pickle_protocol=None,
         _use_new_zipfile_serialization=True, _disable_byteorder_record=False) -> None:
    """Save ``obj`` (tensors, numbers, strings, nested dicts/lists/tuples) to ``f`` (a path or a
    writable binary file)."""
    enc = _Encoder()
    structure = enc.encode(obj)
    doc = json.dumps({"format": FORMAT, "version": VERSION, "root": structure})
    members = dict(enc.arrays)
    members[_STRUCT] = np.array(doc)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            np.savez(fh, **members)
    else:
        np.savez(f, **members)


def load(f, map_location=None, pickle_module=None, *, weights_only=None, mmap=None,
         **pickle_load_args):
    """Load what ``save`` wrote. Never executes code from the file (no pickle)."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        raw = f.read()
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            if _STRUCT not in z.files:
                raise RuntimeError("jitgrad.load: not a jitgrad checkpoint (no structure "
                                   "member); only files written by jitgrad.save can be loaded")
            doc = json.loads(str(z[_STRUCT][()]))
            arrays = {name: z[name] for name in z.files if name != _STRUCT}
    except (ValueError, OSError) as e:
        raise RuntimeError(f"jitgrad.load: not a jitgrad checkpoint ({e})") from None
    if doc.get("format") != FORMAT:
        raise RuntimeError(f"jitgrad.load: unknown format {doc.get('format')!r}")
    if doc.get("version", 0) > VERSION:
        raise RuntimeError(f"jitgrad.load: file version {doc['version']} is newer than this "
                           f"jitgrad ({VERSION})")
    return _decode(doc["root"], arrays, map_location)
