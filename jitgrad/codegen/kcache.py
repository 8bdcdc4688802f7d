"""Content-addressed cache of generated kernel modules: in memory, then on disk.

A kernel module's key is a hash of its source, its target and ``ABI``. The source is written once
to ``<cache dir>/jg_<key>.py`` (write to a temporary file, then atomic rename), read back and
compared with the source it should hold, and then that verified text is compiled and run as a
module registered in ``sys.modules`` (Numba's ``cache=True`` needs a real file behind the code
and a module name; see shared/NUMBA_NOTES.md). No bytecode (``.pyc``) is written or read: it
would be a second copy that nothing checks, and a damaged one breaks every later import.
Files are never rewritten in place.

Every file the cache owns heals: a wrong or unreadable ``.py`` is rewritten, a Numba index
(``.nbi``) or data file (``.nbc``) that fails to load is deleted and the kernel recompiled (one
``RuntimeWarning`` per damaged entry). A folder that cannot be used (a file, under a file,
read-only, not writable) is replaced, with one warning, by a private per-user temporary folder,
and when that fails too kernels are compiled in memory for the rest of the process.

Numba keys a cached kernel on its own source file only, so a kernel that calls (and inlines)
code from another jitgrad module would load stale machine code after that module changed. Every
dispatcher cache this module hardens therefore also stamps its index with
``package_fingerprint()`` (the path, size and mtime of every ``.py`` file of the package): any
edit to jitgrad recompiles the cached kernels used afterwards; an unchanged tree loads them.

``JITGRAD_CACHE_DIR`` sets the folder; ``JITGRAD_DISABLE_DISK_CACHE=1`` keeps everything in
memory (the source is then rendered without ``cache=True``).
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
import sys
import tempfile
import threading
import types
import warnings

# Bump when anything a generated module imports changes meaning (the scalar vocabulary,
# cpu_env, the math module). Edits inside the package are also caught by package_fingerprint();
# ABI is for changes it cannot see (e.g. a file's meaning changing with its stamp kept).
ABI = 1

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_fingerprint: str | None = None

_lock = threading.RLock()
_modules: dict[str, types.ModuleType] = {}
# configured folder -> the folder kernels actually go to (None: compiled in memory)
_locations: dict[str, str | None] = {}
_warned: set[str] = set()


class Stats:
    """Counters read by ``jitgrad.autograd.profile`` and the tests."""

    def __init__(self):
        self.memory_hits = 0
        self.modules_loaded = 0
        self.files_written = 0
        self.corrupt_entries = 0


stats = Stats()


def _warn_once(key: str, message: str) -> None:
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(message, RuntimeWarning, stacklevel=4)


def _switched_off() -> bool:
    return os.environ.get("JITGRAD_DISABLE_DISK_CACHE", "") in ("1", "true", "yes")


def disk_cache_enabled() -> bool:
    """Whether new kernels go to a disk cache (not switched off, and some folder is usable)."""
    return not _switched_off() and active_dir() is not None


def cache_dir() -> str:
    """The configured folder (``JITGRAD_CACHE_DIR``, else ``$XDG_CACHE_HOME/jitgrad``, else
    ``~/.cache/jitgrad``); ``active_dir`` is the one in use."""
    d = os.environ.get("JITGRAD_CACHE_DIR")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "jitgrad")
    return d


def user_temp_dir() -> str:
    """The fallback folder: private to this user under the system's temporary folder."""
    try:
        who = str(os.getuid())
    except AttributeError:  # Windows
        import getpass
        who = re.sub(r"[^A-Za-z0-9_.-]", "_", getpass.getuser())
    return os.path.join(tempfile.gettempdir(), f"jitgrad-{who}")


def active_dir() -> str | None:
    """The folder kernels go to in this process: the configured one when it is usable, else
    ``user_temp_dir()``, else None (in memory). Decided once per configured folder."""
    configured = cache_dir()
    try:
        return _locations[configured]
    except KeyError:
        pass
    with _lock:
        if configured not in _locations:
            _locations[configured] = _choose(configured, None)
        return _locations[configured]


def _choose(configured: str, problem: OSError | None) -> str | None:
    """Try ``configured`` (unless it already failed with ``problem``), then the private
    temporary folder; warn once when falling back."""
    if problem is None:
        try:
            _check_writable(configured)
            return configured
        except OSError as e:
            problem = e
    fallback = user_temp_dir()
    if os.path.abspath(fallback) != os.path.abspath(configured):
        try:
            _check_private(fallback)
            _check_writable(fallback)
            _warn_once(f"fallback:{configured}",
                       f"jitgrad: kernel cache folder {configured!r} is unusable ({_why(problem)});"
                       f" using {fallback!r} instead (set JITGRAD_CACHE_DIR to choose another)")
            return fallback
        except OSError as e:
            problem2 = e
    else:
        problem2 = problem
    _warn_once(f"memory:{configured}",
               f"jitgrad: kernel cache folder {configured!r} is unusable ({_why(problem)}) and so "
               f"is {fallback!r} ({_why(problem2)}); kernels are compiled in memory for this "
               "process (nothing is cached on disk)")
    return None


def _why(e: OSError) -> str:
    return f"{type(e).__name__}: {e}"


def _check_writable(folder: str) -> None:
    """Create ``folder`` if needed and prove a file can be written there (what Numba checks for
    its own cache folders)."""
    os.makedirs(folder, exist_ok=True)
    tempfile.TemporaryFile(dir=folder).close()


def _check_private(folder: str) -> None:
    """``folder`` must be a real folder owned by this user that nobody else can write to: Numba
    unpickles the files found next to the kernels."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise OSError(errno.ENOTDIR, "not a folder (or a symbolic link)", folder)
    if hasattr(os, "getuid") and (st.st_uid != os.getuid() or st.st_mode & 0o022):
        raise OSError(errno.EPERM, "not a private folder owned by this user", folder)


def _give_up_on(folder: str, problem: OSError) -> None:
    """``folder`` failed while writing a kernel: move this process on to the next location."""
    with _lock:
        configured = cache_dir()
        if _locations.get(configured) != folder:
            return
        _locations[configured] = _choose(configured, problem) if folder == configured else None
        if folder != configured:
            _warn_once(f"memory:{configured}",
                       f"jitgrad: kernel cache folder {folder!r} became unusable ({_why(problem)});"
                       " kernels are compiled in memory for this process")


def njit_cached(fn=None, **flags):
    """``numba.njit(cache=True, **flags)`` for jitgrad's own kernels, compiled without a disk
    cache (one warning) where Numba finds no folder for it: Numba raises at decoration when
    neither ``__pycache__`` beside the package nor its user-wide folder is writable, which
    would make ``import jitgrad`` fail on a read-only install with an unwritable home."""
    import numba

    def wrap(f):
        try:
            disp = numba.njit(cache=True, **flags)(f)
            _harden(disp)
            return disp
        except RuntimeError as e:
            if "no locator available" not in str(e):
                raise
            _warn_once("package-nolocator",
                       f"jitgrad: Numba cannot cache jitgrad's own kernels ({e}); they are "
                       "compiled in memory in this process (set NUMBA_CACHE_DIR to a writable "
                       "folder to cache them)")
            return numba.njit(cache=False, **flags)(f)
    return wrap if fn is None else wrap(fn)


def lazy_kernels(namespace, names, prepare=None, **flags):
    """A module's ``_kernels()``: on the first call (once, under a lock) ``prepare(namespace)``
    binds what the kernels call, then each of ``names`` (helpers first: a kernel's callees are
    looked up in ``namespace``, the module's globals, when it compiles) is replaced there by its
    ``njit_cached(**flags)`` dispatcher. Returns an object holding them as attributes, named
    without the leading underscore. Importing the module compiles nothing."""
    lock = threading.Lock()
    loaded = None

    def kernels():
        nonlocal loaded
        if loaded is not None:
            return loaded
        with lock:
            if loaded is None:
                if prepare is not None:
                    prepare(namespace)
                k = types.SimpleNamespace()
                for name in names:
                    namespace[name] = njit_cached(namespace[name], **flags)
                    setattr(k, name.lstrip("_"), namespace[name])
                loaded = k
        return loaded
    return kernels


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
    while True:
        folder = None if _switched_off() else active_dir()
        if folder is None:
            return _exec_module(name, f"<jitgrad kernel {key}>", _without_disk_cache(source))
        path = os.path.join(folder, f"jg_{key}.py")
        try:
            _ensure_file(path, source)
        except OSError as e:
            _give_up_on(folder, e)
            continue
        try:
            mod = _exec_module(name, path, source)
        except RuntimeError as e:
            # Numba found no folder for its own cache files (``__pycache__`` next to the kernel
            # unusable and no user-wide folder): this kernel compiles without a disk cache.
            if "no locator available" not in str(e):
                raise
            _warn_once(f"nolocator:{folder}",
                       f"jitgrad: Numba cannot cache kernels next to {path!r} ({e}); kernels "
                       "are compiled in memory for this process")
            with _lock:
                _locations[cache_dir()] = None
            _remove_entry(path)
            return _exec_module(name, f"<jitgrad kernel {key}>", _without_disk_cache(source))
        # every dispatcher the module defines (not only serial/parallel/kernel: e.g. the
        # cascade sum's block_4xW), none it imported (those are hardened where they live)
        for value in list(vars(mod).values()):
            if getattr(getattr(value, "py_func", None), "__module__", None) == name:
                _harden(value)
        return mod


_CACHE_FLAG = re.compile(r"\bcache=True\b")


def _without_disk_cache(source: str) -> str:
    """The renderers write Numba's flag as ``cache=True``; code without a file cannot use it."""
    return _CACHE_FLAG.sub("cache=False", source)


def _exec_module(name: str, filename: str, source: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod  # before exec: Numba's cache resolves the module by name
    try:
        exec(compile(source, filename, "exec"), mod.__dict__)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    return mod


def package_fingerprint() -> str:
    """A hash of (relative path, size, mtime) of every ``.py`` file under the jitgrad package,
    and of the ATen CPU build the kernels follow, computed once per process on first use (a stat
    per file, no reads). Part of every cached kernel's index stamp: Numba's own stamp covers only
    the kernel's file, not the jitgrad functions it inlines from other modules (or, for a
    generated module, imports), nor the module constants it froze in, such as lane counts that
    follow ``backends.cpu_capability`` (``ATEN_CPU_CAPABILITY`` can change it between runs on one
    host, whose CPU features, Numba's own key, stay the same)."""
    global _fingerprint
    if _fingerprint is None:
        with _lock:
            if _fingerprint is None:
                from ..backends.cpu_capability import CAPABILITY
                _fingerprint = _scan_sources(_PACKAGE_DIR, CAPABILITY)
    return _fingerprint


def _scan_sources(root: str, capability: str = "") -> str:
    entries = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            listing = os.scandir(folder)
        except OSError:
            continue
        with listing:
            for entry in listing:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "__pycache__":
                            folders.append(entry.path)
                    elif entry.name.endswith(".py"):
                        st = entry.stat()
                        entries.append((os.path.relpath(entry.path, root), st.st_size,
                                        st.st_mtime_ns))
                except OSError:  # vanished while listing: what is left still decides
                    continue
    h = hashlib.sha256(b"jitgrad-sources\n" + capability.encode() + b"\n")
    for rel, size, mtime_ns in sorted(entries):
        h.update(f"{rel}\0{size}\0{mtime_ns}\n".encode())
    return h.hexdigest()[:32]


def _harden(disp) -> None:
    """Make a dispatcher's Numba disk cache survive damaged entries and see package edits.

    Numba raises (e.g. ``UnpicklingError``) on a truncated or corrupted index (.nbi) or data file
    (.nbc) at the first call. Here a failed load is reported, the dispatcher's cache files are
    deleted, and the kernel is compiled again (and re-saved); a failed save only warns.

    The index's stamp (Numba's: the kernel file's content hash) is paired with
    ``package_fingerprint()`` at the first load or save (not here: decorating happens at import):
    an index written under other jitgrad sources reads as empty, so the kernel is recompiled and
    its entry rewritten (Numba reuses the data file names: stale entries do not pile up).
    """
    cache = getattr(disp, "_cache", None)
    cache_file = getattr(cache, "_cache_file", None)
    if cache_file is None or getattr(cache, "_jitgrad_hardened", False):  # NullCache: no cache
        return
    cache._jitgrad_hardened = True
    load, save, flush = cache.load_overload, cache.save_overload, cache.flush
    own_stamp = cache_file._source_stamp

    def stamp_with_package():
        cache_file._source_stamp = (own_stamp, package_fingerprint())

    def load_overload(sig, target_context):
        stamp_with_package()
        try:
            return load(sig, target_context)
        except Exception as e:  # noqa: BLE001 - any damage means: rebuild
            stats.corrupt_entries += 1
            _warn_once(f"load:{cache_file._index_path}",
                       f"jitgrad: kernel cache entry {cache_file._index_path} could not be "
                       f"loaded ({type(e).__name__}: {e}); deleting it and recompiling")
            _remove_numba_entry(cache_file)
            return None

    def save_overload(sig, data):
        stamp_with_package()
        try:
            save(sig, data)
        except Exception as e:  # noqa: BLE001 - the kernel works; only caching failed
            _warn_once(f"save:{cache_file._index_path}",
                       f"jitgrad: could not save kernel cache entry "
                       f"{cache_file._index_path} ({type(e).__name__}: {e})")

    def flush_index():
        stamp_with_package()
        flush()

    cache.load_overload = load_overload
    cache.save_overload = save_overload
    cache.flush = flush_index


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
    """``path`` holds exactly ``source`` afterwards (raises OSError when it cannot)."""
    try:
        with open(path, encoding="utf-8") as fh:
            existing = fh.read()
        if existing == source:
            return
        # A truncated or foreign file: never trust it; rebuild (and drop Numba's index for it).
        stats.corrupt_entries += 1
        _warn_once(f"py:{path}", f"jitgrad: kernel cache entry {path} was corrupted; "
                   "rebuilding it")
        _remove_entry(path)
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        stats.corrupt_entries += 1
        _warn_once(f"py:{path}", f"jitgrad: kernel cache entry {path} is unreadable; "
                   "rebuilding it")
        _remove_entry(path)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(source)
        # Back-date the file: a racing writer of identical content produces an identical stamp.
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
    """Delete a kernel's source and everything cached beside it (bytecode from older versions,
    Numba's index and data files)."""
    stem = os.path.splitext(os.path.basename(path))[0]
    pycache = os.path.join(os.path.dirname(path), "__pycache__")
    try:
        beside = [os.path.join(pycache, f) for f in os.listdir(pycache)
                  if f.startswith(stem + ".")]
    except OSError:
        beside = []
    for p in [path] + beside:
        try:
            os.unlink(p)
        except OSError:
            pass
