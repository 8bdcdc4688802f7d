"""Content-addressed cache of generated kernel modules: in memory, then on disk.

A kernel module's key is a hash of its source, its target and ``ABI``. The source is written once
to ``<cache dir>/jg_<key>.py`` (write to a temporary file, then atomic rename) and imported under
a module name registered in ``sys.modules`` before it runs, which is what lets Numba's
``cache=True`` find the machine code again in the next process (see shared/NUMBA_NOTES.md).
Files are never rewritten in place: Numba keys its own cache on the file's path, size and mtime.

``JITGRAD_CACHE_DIR`` sets the folder; ``JITGRAD_DISABLE_DISK_CACHE=1`` keeps everything in
memory (the source is then rendered without ``cache=True``).
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
import tempfile
import threading
import types
import warnings

# Bump when anything a generated module imports changes meaning (the scalar vocabulary,
# cpu_env, the math module): Numba cannot see changes in files a cached kernel calls into.
ABI = 1

_lock = threading.Lock()
_modules: dict[str, types.ModuleType] = {}


class Stats:
    """Counters read by ``jitgrad.autograd.profile`` and the tests."""

    def __init__(self):
        self.memory_hits = 0
        self.modules_loaded = 0
        self.files_written = 0
        self.corrupt_entries = 0


stats = Stats()


def disk_cache_enabled() -> bool:
    return os.environ.get("JITGRAD_DISABLE_DISK_CACHE", "") not in ("1", "true", "yes")


def cache_dir() -> str:
    d = os.environ.get("JITGRAD_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "jitgrad")
    return d


def key_of(source: str, target: str) -> str:
    h = hashlib.sha256(f"jitgrad-abi={ABI}\ntarget={target}\n".encode())
    h.update(source.encode())
    return h.hexdigest()[:32]


def load(source: str, target: str = "cpu") -> types.ModuleType:
    """The module for ``source``, importing (and writing) it on first use."""
    key = key_of(source, target)
    mod = _modules.get(key)
    if mod is not None:
        stats.memory_hits += 1
        return mod
    with _lock:
        mod = _modules.get(key)
        if mod is None:
            mod = _import(key, source)
            _modules[key] = mod
            stats.modules_loaded += 1
    return mod


def _import(key: str, source: str) -> types.ModuleType:
    name = f"_jitgrad_kernel_{key}"
    if not disk_cache_enabled():
        mod = types.ModuleType(name)
        mod.__file__ = f"<jitgrad kernel {key}>"
        sys.modules[name] = mod
        exec(compile(source, mod.__file__, "exec"), mod.__dict__)
        return mod
    folder = cache_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"jg_{key}.py")
    _ensure_file(path, source)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # before exec: Numba's cache resolves the module by name
    spec.loader.exec_module(mod)
    for attr in ("serial", "parallel"):
        disp = getattr(mod, attr, None)
        if disp is not None:
            _harden(disp)
    return mod


def _harden(disp) -> None:
    """Make a dispatcher's Numba disk cache survive damaged entries.

    Numba raises (e.g. ``UnpicklingError``) on a truncated or corrupted index (.nbi) or data file
    (.nbc) at the first call. Here a failed load is reported, the dispatcher's cache files are
    deleted, and the kernel is compiled again (and re-saved); a failed save only warns.
    """
    cache = getattr(disp, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None:  # NullCache: cache=False
        return
    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception as e:  # noqa: BLE001 - any damage means: rebuild
            stats.corrupt_entries += 1
            warnings.warn(f"jitgrad: kernel cache entry {cache_file._index_path} could not be "
                          f"loaded ({type(e).__name__}: {e}); deleting it and recompiling",
                          RuntimeWarning, stacklevel=2)
            _remove_numba_entry(cache_file)
            return None

    def save_overload(sig, data):
        try:
            save(sig, data)
        except Exception as e:  # noqa: BLE001 - the kernel works; only caching failed
            warnings.warn(f"jitgrad: could not save kernel cache entry "
                          f"{cache_file._index_path} ({type(e).__name__}: {e})",
                          RuntimeWarning, stacklevel=2)

    cache.load_overload = load_overload
    cache.save_overload = save_overload


def _remove_numba_entry(cache_file) -> None:
    index = cache_file._index_path
    folder = os.path.dirname(index)
    stem = os.path.basename(index)[:-len(".nbi")] + "."
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for f in names:
        if f == os.path.basename(index) or (f.startswith(stem) and f.endswith(".nbc")):
            try:
                os.unlink(os.path.join(folder, f))
            except OSError:
                pass


def _ensure_file(path: str, source: str) -> None:
    try:
        with open(path, encoding="utf-8") as fh:
            existing = fh.read()
        if existing == source:
            return
        # A truncated or foreign file: never trust it; rebuild (and drop Numba's index for it).
        stats.corrupt_entries += 1
        warnings.warn(f"jitgrad: kernel cache entry {path} was corrupted; rebuilding it",
                      RuntimeWarning, stacklevel=4)
        _remove_entry(path)
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        stats.corrupt_entries += 1
        warnings.warn(f"jitgrad: kernel cache entry {path} is unreadable; rebuilding it",
                      RuntimeWarning, stacklevel=4)
        _remove_entry(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(source)
        # Back-date the file: Numba compares the source's mtime with its index, and a racing
        # writer of identical content must produce an identical stamp.
        os.utime(tmp, (0, 0))
        os.replace(tmp, path)
        stats.files_written += 1
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _remove_entry(path: str) -> None:
    stem = os.path.splitext(os.path.basename(path))[0]
    pycache = os.path.join(os.path.dirname(path), "__pycache__")
    for p in [path] + ([os.path.join(pycache, f) for f in os.listdir(pycache)
                        if f.startswith(stem + ".")] if os.path.isdir(pycache) else []):
        try:
            os.unlink(p)
        except OSError:
            pass
