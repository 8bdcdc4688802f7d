"""Reading an untrusted ``.npz`` checkpoint without trusting anything it claims.

``np.load`` believes a member's ``.npy`` header: a header claiming 10^12 elements makes it
allocate terabytes before noticing the data is missing, and a deflated member can expand
without bound. Here every member is checked before anything is allocated: stored (not
compressed) inside the bytes actually present, a header NumPy can parse without evaluating
anything, a dtype from the allow-list (plain little-endian numbers and booleans; never objects,
structured, complex or unsigned wider than a byte), and a size that matches the bytes the member
holds exactly. The JSON document's nesting is bounded before ``json`` parses it (deep nesting
would otherwise end in RecursionError). Every problem raises ``BadCheckpoint``;
``serialization.load`` turns it into one RuntimeError naming the file.
"""
from __future__ import annotations

import io
import json
import math
import re
import zipfile

import numpy as np

__all__ = ["BadCheckpoint", "ALLOWED_DTYPES", "MAX_DEPTH", "read_members", "parse_document"]

# jitgrad's dtypes, in this machine's byte order (what jitgrad.save writes)
ALLOWED_DTYPES = frozenset(np.dtype(t).str for t in (
    np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64,
    np.float16, np.float32, np.float64))
# JSON nesting ([ and {) allowed in the structure document: a state dict needs about 10
MAX_DEPTH = 200
_MAX_HEADER = 10_000  # bytes of a .npy header (NumPy's own default limit)


class BadCheckpoint(Exception):
    """The file is not a well-formed jitgrad checkpoint; the message says why."""


def read_members(raw: bytes, structure_member: str):
    """``(document, arrays)``: the structure member's text and every other member as an array
    (validated as described in the module docstring)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError) as e:
        raise BadCheckpoint(f"not a jitgrad checkpoint (not a readable zip archive: {e})") \
            from None
    with zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        if len(set(names)) != len(names):
            raise BadCheckpoint("archive lists a member twice")
        if f"{structure_member}.npy" not in names:
            raise BadCheckpoint("not a jitgrad checkpoint (no structure member); only files "
                                "written by jitgrad.save can be loaded")
        document, arrays = None, {}
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise BadCheckpoint(f"unexpected archive member {info.filename!r}")
            name = info.filename[:-4]
            arr = _read_member(zf, info, len(raw), structure=name == structure_member)
            if name == structure_member:
                document = str(arr[()])
            else:
                arrays[name] = arr
    return document, arrays


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, file_size: int, *, structure):
    where = f"member {info.filename!r}"
    if info.compress_type != zipfile.ZIP_STORED or info.compress_size != info.file_size:
        raise BadCheckpoint(f"{where} is compressed (jitgrad.save stores members as they are)")
    if info.flag_bits & 0x1:
        raise BadCheckpoint(f"{where} is encrypted")
    if info.header_offset + info.file_size > file_size:
        raise BadCheckpoint(f"{where} claims {info.file_size} bytes, more than the file holds "
                            "(truncated file?)")
    try:
        with zf.open(info) as fh:
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(
                    fh, max_header_size=_MAX_HEADER)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(
                    fh, max_header_size=_MAX_HEADER)
            else:
                raise BadCheckpoint(f"{where}: unsupported .npy version {version}")
            header = fh.tell()
            _check_dtype(where, dtype, structure)
            count = math.prod(shape)  # Python ints: no overflow
            need = count * dtype.itemsize
            if need != info.file_size - header:
                raise BadCheckpoint(f"{where}: its header claims {count} elements of "
                                    f"{dtype.str} ({need} bytes) but it holds "
                                    f"{info.file_size - header} bytes")
            arr = np.empty(count, dtype)  # bounded by the bytes present (checked just above)
            if need and fh.readinto(memoryview(arr.view(np.uint8))) != need:
                raise BadCheckpoint(f"{where} is truncated")
            fh.read(1)  # reach the end of the member: zipfile checks its CRC there
    except BadCheckpoint:
        raise
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, SyntaxError, TypeError,
            RuntimeError) as e:  # zipfile: RuntimeError (encrypted), NotImplementedError
        raise BadCheckpoint(f"{where} is not a valid .npy array ({type(e).__name__}: {e})") \
            from None
    order = "F" if fortran else "C"
    return arr.reshape(shape, order=order)


def _check_dtype(where, dtype: np.dtype, structure: bool) -> None:
    if structure:
        ok = dtype.kind == "U" and dtype.str[0] in "<|=" and not dtype.fields
    else:
        ok = dtype.str in ALLOWED_DTYPES and not dtype.fields and dtype.subdtype is None
    if not ok:
        raise BadCheckpoint(f"{where} has dtype {dtype.str!r}, which jitgrad.load does not "
                            f"accept (allowed: {', '.join(sorted(ALLOWED_DTYPES))})")


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)


def parse_document(text: str):
    """The JSON structure document, its nesting checked before ``json`` recurses into it."""
    data = text.encode("utf-8", "surrogatepass")
    skeleton = np.frombuffer(_STRING.sub(b'""', data), np.uint8)
    step = (np.isin(skeleton, (ord("["), ord("{"))).astype(np.int64)
            - np.isin(skeleton, (ord("]"), ord("}"))))
    depth = int(np.cumsum(step).max()) if step.size else 0
    if depth > MAX_DEPTH:
        raise BadCheckpoint(f"structure document nested {depth} levels deep (at most "
                            f"{MAX_DEPTH})")
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise BadCheckpoint(f"structure document is not valid JSON ({e})") from None
    if not isinstance(doc, dict):
        raise BadCheckpoint("structure document is not a JSON object")
    return doc
