"""``jitgrad.save`` / ``jitgrad.load``: state dicts in a safe file format.

A file is a NumPy ``.npz`` archive: every storage is one uint8 array member (``t0``, ``t1``,
...) and the object's structure (nested dicts, lists, tuples, sets, numbers, strings, bytes,
booleans, None, dtypes, devices, tensor references) is a JSON document stored in the member
``__jitgrad__``. As with ``torch.save``, tensors that share memory (a tensor saved twice, views
of one another) are saved once and load sharing memory again, and a tensor keeps its shape,
strides and offset. Loading uses ``np.load(allow_pickle=False)`` and ``json`` and only builds
arrays of plain numeric dtypes inside the loaded storages: nothing in a file can run code,
unlike a pickle. Files written by ``torch.save`` (a pickle in a zip) are refused with a clear
error. Objects outside that vocabulary (modules, arbitrary classes) raise ``TypeError`` on save;
save ``model.state_dict()`` instead of the model.
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
VERSION = 2  # 2: shared storages with shape/strides/offset (version 1 files still load)
_STRUCT = "__jitgrad__"


def _c(a: np.ndarray) -> np.ndarray:
    """C-contiguous, keeping 0-d arrays 0-d (np.ascontiguousarray would make them 1-d)."""
    return a if a.flags.c_contiguous else a.copy(order="C")


def _extent(a: np.ndarray):
    """Byte range ``[lo, hi)`` of ``a``'s elements relative to its data pointer."""
    lo = hi = 0
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += (n - 1) * st
        else:
            hi += (n - 1) * st
    return lo, hi + a.itemsize


def _root(a: np.ndarray):
    r = a
    while isinstance(r.base, np.ndarray):
        r = r.base
    return r


def _addr(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


class _Encoder:
    def __init__(self):
        self.arrays = {}
        self.groups = {}  # id(root array) -> [root, [(entry, array), ...]]

    def tensor(self, t: Tensor):
        from .nn.parameter import Parameter
        data = t._data
        entry = {"requires_grad": bool(t._requires_grad),
                 "parameter": isinstance(t, Parameter)}
        if data.__class__ is not np.ndarray:  # CUDA: stored as a host copy, device recorded
            entry["device"] = str(t.device)
            data = data.to_host()
            name = f"t{len(self.arrays)}"
            self.arrays[name] = _c(data)
            entry["__tensor__"] = name
            return entry
        root = _root(data)
        if data.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
            name = f"t{len(self.arrays)}"
            self.arrays[name] = _c(data)
            entry["__tensor__"] = name
            return entry
        self.groups.setdefault(id(root), [root, []])[1].append((entry, data))
        return entry

    def storages(self):
        """One member per group of tensors sharing memory: the bytes they span."""
        for root, members in self.groups.values():
            flat = root.reshape(-1, order="A").view(np.uint8)
            base = _addr(root)
            spans = [(_addr(a) - base + _extent(a)[0], _addr(a) - base + _extent(a)[1])
                     for _, a in members]
            lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
            name = f"t{len(self.arrays)}"
            self.arrays[name] = flat[lo:hi].copy()
            for entry, a in members:
                entry.update({"__tensor__": name, "dtype": a.dtype.str,
                              "shape": list(a.shape), "strides": list(a.strides),
                              "offset": _addr(a) - base - lo})

    def encode(self, obj, path="obj"):
        if isinstance(obj, Tensor):
            return self.tensor(obj)
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, (int, np.integer)) and not isinstance(obj, (bool, np.bool_)):
            return int(obj)
        if isinstance(obj, complex):
            return {"__complex__": [self.encode(obj.real), self.encode(obj.imag)]}
        if isinstance(obj, (bytes, bytearray)):
            import base64
            return {"__bytes__": base64.b64encode(bytes(obj)).decode("ascii"),
                    "bytearray": isinstance(obj, bytearray)}
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
                if isinstance(k, Tensor):
                    raise TypeError(f"jitgrad.save: unsupported dict key {k!r} at {path} "
                                    "(a tensor cannot be a key in the safe format)")
                items.append([self.encode(k, path), self.encode(v, f"{path}[{k!r}]")])
            out = {"__dict__": items}
            if isinstance(obj, OrderedDict):
                out["ordered"] = True
                meta = getattr(obj, "_metadata", None)
                if meta is not None:
                    out["metadata"] = self.encode(meta, f"{path}._metadata")
            return out
        from ._size import Size, device
        if isinstance(obj, Size):
            return {"__size__": [int(v) for v in obj]}
        if isinstance(obj, device):
            return {"__device__": str(obj)}
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):
            raise TypeError(f"jitgrad.save: cannot save a namedtuple ({type(obj).__name__}) at "
                            f"{path} in the safe format; save a dict or a plain tuple")
        if isinstance(obj, tuple):
            return {"__tuple__": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, (set, frozenset)):
            return {"__set__": [self.encode(v, f"{path}{{}}") for v in obj],
                    "frozen": isinstance(obj, frozenset)}
        if isinstance(obj, list):
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        from ._dtype import dtype as _Dt
        if isinstance(obj, _Dt):
            return {"__dtype__": obj.name}
        raise TypeError(
            f"jitgrad.save: cannot save an object of type {type(obj).__name__} at {path}; the "
            "safe format holds tensors, NumPy arrays, numbers, strings, bytes, None, dtypes, "
            "devices and dicts/lists/tuples/sets of them (save model.state_dict() rather than "
            "the model)")


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


def _view(storage: np.ndarray, entry):
    """The array a tensor entry describes inside its storage (checked: plain numeric dtype,
    every element inside the storage)."""
    try:
        dt = np.dtype(str(entry["dtype"]))
        shape = tuple(int(v) for v in entry["shape"])
        strides = tuple(int(v) for v in entry["strides"])
        offset = int(entry["offset"])
    except (KeyError, TypeError, ValueError):
        raise RuntimeError("jitgrad.load: malformed tensor entry") from None
    if dt.kind not in "biufc" or dt.hasobject or len(shape) != len(strides) \
            or any(n < 0 for n in shape) or storage.dtype != np.uint8 or storage.ndim != 1:
        raise RuntimeError("jitgrad.load: malformed tensor entry")
    probe = np.lib.stride_tricks.as_strided(np.empty(0, dt), shape, strides, writeable=False) \
        if shape else None
    lo, hi = _extent(probe) if probe is not None else (0, dt.itemsize)
    if offset + lo < 0 or offset + hi > storage.size:
        raise RuntimeError("jitgrad.load: malformed tensor entry (outside its storage)")
    return np.ndarray(shape, dt, buffer=storage, offset=offset, strides=strides)


def _decode(obj, arrays, map_location=None):
    if isinstance(obj, list):
        return [_decode(v, arrays, map_location) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        from .nn.parameter import Parameter
        data = arrays[obj["__tensor__"]]
        if "offset" in obj:
            data = _view(data, obj)
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
    if "__complex__" in obj:
        re, im = (_decode(v, arrays) for v in obj["__complex__"])
        return complex(re, im)
    if "__bytes__" in obj:
        import base64
        b = base64.b64decode(obj["__bytes__"])
        return bytearray(b) if obj.get("bytearray") else b
    if "__set__" in obj:
        items = [_decode(v, arrays, map_location) for v in obj["__set__"]]
        return frozenset(items) if obj.get("frozen") else set(items)
    if "__size__" in obj:
        from ._size import Size
        return Size(obj["__size__"])
    if "__device__" in obj:
        from ._size import device
        return device(obj["__device__"])
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
    enc.storages()
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
    if raw[:2] == b"PK" and b"data.pkl" in raw[:4096] and b"__jitgrad__" not in raw[:4096]:
        raise RuntimeError(
            "jitgrad.load: not a jitgrad checkpoint: this is a file written by torch.save (a "
            "pickle inside a zip), and jitgrad.load never unpickles (that can run arbitrary "
            "code). Convert it where PyTorch is installed: load it with torch.load(path, "
            "weights_only=True), turn the tensors into NumPy arrays (t.numpy()) and save "
            "those with jitgrad.save")
    if raw[:1] == b"\x80":
        raise RuntimeError("jitgrad.load: not a jitgrad checkpoint: this is a pickle; "
                           "jitgrad.load never unpickles (that can run arbitrary code). Only "
                           "files written by jitgrad.save load")
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
