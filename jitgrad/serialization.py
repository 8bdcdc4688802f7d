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

import json
import math
import os
from collections import Counter, OrderedDict

import numpy as np

from ._safe_npz import ALLOWED_DTYPES, BadCheckpoint, parse_document, read_members
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


# A view may repeat its storage (expand/broadcast write stride 0, as torch.save does): the first
# op on it allocates numel * itemsize bytes, which the file merely claims. torch.load accepts any
# such view (torch.zeros(1).expand(2**36) saves in 1.5 kB, loads, and `+ 1` then asks for
# 256 GiB); jitgrad.load refuses one that spans more than _MAX_REPEAT times its storage's bytes
# and more than _MAX_REPEATED_BYTES, so what a file can make the first op allocate stays bounded
# by its real size (or 1 GiB). Views jitgrad.save writes for ordinary expanded buffers fit easily.
_MAX_REPEAT = 16
_MAX_REPEATED_BYTES = 1 << 30
_INTP_MAX = np.iinfo(np.intp).max


def _over_repeated(shape, itemsize, storage_bytes):
    """Why a view of ``shape`` over ``storage_bytes`` bytes claims too much memory, or None
    (see _MAX_REPEAT)."""
    claimed = math.prod(shape) * itemsize
    if claimed <= max(_MAX_REPEAT * storage_bytes, _MAX_REPEATED_BYTES):
        return None
    return (f"a view of shape {list(shape)} repeats its {storage_bytes}-byte storage into "
            f"{claimed} bytes; jitgrad.load accepts at most {_MAX_REPEAT}x the storage or "
            f"{_MAX_REPEATED_BYTES} bytes")


class _Encoder:
    def __init__(self):
        self.arrays = {}
        self.groups = {}  # id(root array) -> [root, [(entry, array, path), ...]]

    def tensor(self, t: Tensor, path: str):
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
        # PyTorch's view metadata, which the arrays written below cannot carry: the offset
        # into the storage (each group keeps only the bytes its tensors span) and an empty
        # tensor's strides (restored as metadata only, see _layout)
        off = t.storage_offset()
        if off:
            entry["storage_offset"] = off
        if data.size == 0:
            entry["stride"] = list(t.stride())
        root = _root(data)
        if data.size == 0 or not (root.flags.c_contiguous or root.flags.f_contiguous):
            name = f"t{len(self.arrays)}"
            self.arrays[name] = _c(data)
            entry["__tensor__"] = name
            return entry
        self.groups.setdefault(id(root), [root, []])[1].append((entry, data, path))
        return entry

    def storages(self):
        """One member per group of tensors sharing memory: the bytes they span."""
        for root, members in self.groups.values():
            flat = root.reshape(-1, order="A").view(np.uint8)
            base = _addr(root)
            spans = [(_addr(a) - base + _extent(a)[0], _addr(a) - base + _extent(a)[1])
                     for _, a, _ in members]
            lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
            for _, a, path in members:  # a file load would refuse is refused here, not later
                problem = _over_repeated(a.shape, a.itemsize, hi - lo)
                if problem:
                    raise ValueError(f"jitgrad.save: cannot save the tensor at {path}: "
                                     f"{problem}; save the tensor it expands instead")
            name = f"t{len(self.arrays)}"
            self.arrays[name] = flat[lo:hi].copy()
            for entry, a, _ in members:
                entry.update({"__tensor__": name, "dtype": a.dtype.str,
                              "shape": list(a.shape), "strides": list(a.strides),
                              "offset": _addr(a) - base - lo})

    def encode(self, obj, path="obj"):
        if isinstance(obj, Tensor):
            return self.tensor(obj, path)
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
            if obj.dtype.str not in ALLOWED_DTYPES:
                raise TypeError(f"jitgrad.save: cannot save a NumPy array of dtype {obj.dtype} "
                                f"at {path}; the safe format holds bool, uint8, int8/16/32/64 "
                                "and float16/32/64 arrays")
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
            if isinstance(obj, Counter):  # torch.load's allow-list keeps it (MultiStepLR's)
                out["counter"] = True
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
    """The array a tensor entry describes inside its storage (checked: allowed dtype, every
    element inside the storage, sizes NumPy can index, no more elements than the storage can
    honestly back; see _MAX_REPEAT)."""
    try:
        dt_str = entry["dtype"]
        shape = tuple(_int(v) for v in entry["shape"])
        strides = tuple(_int(v) for v in entry["strides"])
        offset = _int(entry["offset"])
    except (KeyError, TypeError, ValueError):
        raise BadCheckpoint("malformed tensor entry") from None
    if not isinstance(dt_str, str) or dt_str not in ALLOWED_DTYPES:
        raise BadCheckpoint(f"malformed tensor entry (dtype {dt_str!r} not accepted)")
    dt = np.dtype(dt_str)
    if len(shape) != len(strides) or any(n < 0 for n in shape) \
            or storage.dtype != np.uint8 or storage.ndim != 1:
        raise BadCheckpoint("malformed tensor entry")
    lo = hi = 0
    if 0 not in shape:
        for n, st in zip(shape, strides):
            if st < 0:
                lo += (n - 1) * st
            else:
                hi += (n - 1) * st
    hi += dt.itemsize
    if offset + lo < 0 or offset + hi > storage.size:
        raise BadCheckpoint("malformed tensor entry (outside its storage)")
    if any(abs(v) > _INTP_MAX for v in (offset, *strides)):
        raise BadCheckpoint("malformed tensor entry (a stride or offset overflows)")
    problem = _over_repeated(shape, dt.itemsize, storage.size)
    if problem:
        raise BadCheckpoint(f"malformed tensor entry ({problem})")
    try:
        return np.ndarray(shape, dt, buffer=storage, offset=offset, strides=strides)
    except (ValueError, TypeError) as e:  # e.g. more elements than an index can count
        raise BadCheckpoint(f"malformed tensor entry ({e})") from None


def _restore_layout(t, entry):
    """A loaded tensor reports the storage offset (and, empty, the strides) it was saved with:
    numbers only, checked to be sizes; no memory is reached through them."""
    off, st = entry.get("storage_offset", 0), entry.get("stride")
    try:
        off = _int(off)
        st = None if st is None else [_int(v) for v in _list(st, "tensor")]
    except TypeError:
        raise BadCheckpoint("malformed tensor entry") from None
    if off < 0 or (st is not None and (len(st) != t._data.ndim or t._data.size
                                       or any(v < 0 for v in st))):
        raise BadCheckpoint("malformed tensor entry")
    if off or st is not None:
        from ._layout import record_layout
        record_layout(t, st, off)


def _int(v) -> int:
    """A JSON integer (bools and floats are not sizes)."""
    if type(v) is not int:
        raise TypeError(f"expected an integer, got {v!r}")
    return v


def _member(arrays, name):
    if not isinstance(name, str) or name not in arrays:
        raise BadCheckpoint(f"the structure refers to a missing member {name!r}")
    return arrays[name]


def _list(v, what):
    if not isinstance(v, list):
        raise BadCheckpoint(f"malformed {what} entry")
    return v


def _decode(obj, arrays, map_location=None):
    if isinstance(obj, list):
        return [_decode(v, arrays, map_location) for v in obj]
    if not isinstance(obj, dict):
        return obj
    if "__tensor__" in obj:
        from .nn.parameter import Parameter
        data = _member(arrays, obj["__tensor__"])
        if "offset" in obj:
            data = _view(data, obj)
        dev = _target_device(obj.get("device", "cpu"), map_location)
        if dev.type == "cuda":
            from ._cuda_array import CudaArray
            data = CudaArray.from_host(data)
        t = Tensor._make(data)
        if dev.type != "cuda":
            _restore_layout(t, obj)
        if obj.get("parameter"):
            return Parameter(t, requires_grad=bool(obj.get("requires_grad", True)))
        if obj.get("requires_grad"):
            t.requires_grad_(True)
        return t
    if "__ndarray__" in obj:
        return _member(arrays, obj["__ndarray__"])
    if "__float__" in obj:
        if not isinstance(obj["__float__"], str):
            raise BadCheckpoint("malformed float entry")
        return float(obj["__float__"])
    if "__complex__" in obj:
        parts = _list(obj["__complex__"], "complex")
        if len(parts) != 2:
            raise BadCheckpoint("malformed complex entry")
        re, im = (_decode(v, arrays) for v in parts)
        return complex(re, im)
    if "__bytes__" in obj:
        import base64
        if not isinstance(obj["__bytes__"], str):
            raise BadCheckpoint("malformed bytes entry")
        b = base64.b64decode(obj["__bytes__"], validate=True)
        return bytearray(b) if obj.get("bytearray") else b
    if "__set__" in obj:
        items = [_decode(v, arrays, map_location) for v in _list(obj["__set__"], "set")]
        return frozenset(items) if obj.get("frozen") else set(items)
    if "__size__" in obj:
        from ._size import Size
        try:
            return Size([_int(v) for v in _list(obj["__size__"], "size")])
        except TypeError as e:
            raise BadCheckpoint(f"malformed size entry ({e})") from None
    if "__device__" in obj:
        from ._size import device
        if not isinstance(obj["__device__"], str):
            raise BadCheckpoint("malformed device entry")
        return device(obj["__device__"])
    if "__tuple__" in obj:
        return tuple(_decode(v, arrays, map_location) for v in _list(obj["__tuple__"], "tuple"))
    if "__dtype__" in obj:
        from ._dtype import to_dtype
        if not isinstance(obj["__dtype__"], str):
            raise BadCheckpoint("malformed dtype entry")
        return to_dtype(obj["__dtype__"])
    if "__dict__" in obj:
        cls = OrderedDict if obj.get("ordered") else Counter if obj.get("counter") else dict
        out = cls()
        for pair in _list(obj["__dict__"], "dict"):
            if not isinstance(pair, list) or len(pair) != 2:
                raise BadCheckpoint("malformed dict entry (items must be [key, value] pairs)")
            out[_decode(pair[0], arrays, map_location)] = _decode(pair[1], arrays, map_location)
        if "metadata" in obj:
            out._metadata = _decode(obj["metadata"], arrays, map_location)
        return out
    raise BadCheckpoint(f"malformed structure entry {sorted(obj)}")


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
    """Load what ``save`` wrote. Never executes code from the file (no pickle); anything
    malformed (truncated, foreign, crafted) raises one RuntimeError naming the file, before
    anything the file claims is allocated (``_safe_npz``)."""
    if isinstance(f, (str, os.PathLike)):
        where = os.fspath(f)
        with open(f, "rb") as fh:
            raw = fh.read()
    else:
        where = getattr(f, "name", None)
        where = where if isinstance(where, str) else f"<{type(f).__name__}>"
        raw = f.read()
    try:
        return _load(raw, map_location)
    except BadCheckpoint as e:
        raise RuntimeError(f"jitgrad.load: {where}: {e}") from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as e:
        # anything the checks above did not name: still one clear error, never a bare one
        raise RuntimeError(f"jitgrad.load: {where}: malformed checkpoint "
                           f"({type(e).__name__}: {e})") from None


def _load(raw: bytes, map_location):
    if raw[:2] == b"PK" and b"data.pkl" in raw[:4096] and b"__jitgrad__" not in raw[:4096]:
        raise BadCheckpoint(
            "not a jitgrad checkpoint: this is a file written by torch.save (a "
            "pickle inside a zip), and jitgrad.load never unpickles (that can run arbitrary "
            "code). Convert it where PyTorch is installed: load it with torch.load(path, "
            "weights_only=True), turn the tensors into NumPy arrays (t.numpy()) and save "
            "those with jitgrad.save")
    if raw[:1] == b"\x80":
        raise BadCheckpoint("not a jitgrad checkpoint: this is a pickle; "
                            "jitgrad.load never unpickles (that can run arbitrary code). Only "
                            "files written by jitgrad.save load")
    text, arrays = read_members(raw, _STRUCT)
    doc = parse_document(text)
    if doc.get("format") != FORMAT:
        raise BadCheckpoint(f"unknown format {doc.get('format')!r}")
    version = doc.get("version", 0)
    if type(version) is not int:
        raise BadCheckpoint(f"malformed version {version!r}")
    if version > VERSION:
        raise BadCheckpoint(f"file version {version} is newer than this jitgrad ({VERSION})")
    if "root" not in doc:
        raise BadCheckpoint("the structure document has no root")
    return _decode(doc["root"], arrays, map_location)
