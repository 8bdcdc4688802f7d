"""Fault injection: the kernel cache under damage, unusable locations and racing processes (each
in its own subprocess, with its own cache folder, temporary folder and Numba cache folder), and
hostile files for ``jitgrad.load`` (one RuntimeError naming the file, nothing big allocated).

The kernel-cache children compute a fused elementwise backward, an SGD step (one of jitgrad's own
``njit_cached`` kernels) and ``randn`` (the generator's kernels); every faulted run must give what
a clean run gives, and the clean run is checked against NumPy.
"""
from __future__ import annotations

import glob
import io
import json
import os
import random
import re
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import jitgrad

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = textwrap.dedent("""
    import json, os, sys, time, warnings
    warnings.simplefilter("always")  # a repeated warning would show twice
    import numpy as np
    import jitgrad
    from jitgrad.autograd import profile
    start_at = float(os.environ.get("START_AT", "0"))
    import numba  # noqa: F401 - pay the import before the barrier
    while time.time() < start_at:
        time.sleep(0.001)
    x = jitgrad.tensor(np.linspace(-1, 1, 33), requires_grad=True)
    a = jitgrad.tensor(np.linspace(0.5, 2, 33), requires_grad=True)
    y = jitgrad.tanh(x * a)
    with profile() as p:
        y.backward(jitgrad.ones(33, dtype=jitgrad.float64))
    ga = a.grad.numpy().tolist()
    jitgrad.optim.SGD([a], lr=0.1, momentum=0.9).step()
    jitgrad.manual_seed(0)
    r = jitgrad.randn(5, dtype=jitgrad.float64)
    print(json.dumps({"p": p.as_dict(), "gx": x.grad.numpy().tolist(), "ga": ga,
                      "a": a.detach().numpy().tolist(), "r": r.numpy().tolist()}))
""")
_WARNING = re.compile(r"RuntimeWarning: (jitgrad: .*)")


def child_env(tmp_path, **over):
    """A child's environment: its own temporary folder (where the fallback cache goes) and Numba
    cache folder, nothing inherited that changes the cache, bytecode writing on."""
    env = dict(os.environ, PYTHONPATH=REPO)
    for k in ("JITGRAD_CACHE_DIR", "JITGRAD_DISABLE_DISK_CACHE", "JITGRAD_FUSION",
              "PYTHONDONTWRITEBYTECODE", "NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES",
              "XDG_CACHE_HOME"):
        env.pop(k, None)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (tmp_path / "numba").mkdir(exist_ok=True)
    env.update(TMPDIR=str(tmp_path / "tmp"), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               JITGRAD_CACHE_DIR=str(tmp_path / "cache"))
    for k, v in over.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


def start(env, start_at=None):
    if start_at is not None:
        env = dict(env, START_AT=repr(start_at))
    return subprocess.Popen([sys.executable, "-c", CHILD], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc):
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return json.loads(out.strip().splitlines()[-1]), _WARNING.findall(err)


def run(env):
    return finish(start(env))


def values(r):
    return {k: r[k] for k in ("gx", "ga", "a", "r")}


def fallback_dir(tmp_path):
    return tmp_path / "tmp" / f"jitgrad-{os.getuid()}"


@pytest.fixture(scope="module")
def shared_numba(tmp_path_factory):
    """One Numba cache folder for the module: jitgrad's own kernels compile once (generated
    kernels still get entries of their own, keyed by each test's cache folder)."""
    return tmp_path_factory.mktemp("numba")


@pytest.fixture(scope="module")
def reference(tmp_path_factory, shared_numba):
    """A clean run in a fresh cache, checked against NumPy."""
    r, warned = run(child_env(tmp_path_factory.mktemp("reference"), NUMBA_CACHE_DIR=shared_numba))
    assert not warned
    x, a = np.linspace(-1, 1, 33), np.linspace(0.5, 2, 33)
    t = np.tanh(x * a)
    np.testing.assert_allclose(r["gx"], (1 - t * t) * a, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["ga"], (1 - t * t) * x, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(r["a"], a - 0.1 * (1 - t * t) * x, rtol=1e-12, atol=1e-14)
    return values(r)


def _damage(paths):
    """Truncate, overwrite with garbage or empty each file (in turn)."""
    for i, p in enumerate(sorted(paths)):
        with open(p, "rb") as f:
            data = f.read()
        with open(p, "wb") as f:
            f.write([data[: len(data) // 3], b"\x80\x04not a pickle\x00\xff" * 3, b""][i % 3])


# ----------------------------------------------------------------------------- damaged files


def test_no_bytecode_is_written_and_damaged_bytecode_is_ignored(tmp_path, reference,
                                                                 shared_numba):
    """A damaged ``__pycache__/jg_*.pyc`` used to break every later process (``EOFError:
    marshal data too short``). Kernels are now compiled from their verified source: no .pyc is
    written, and one left by an older version is never read."""
    env = child_env(tmp_path, NUMBA_CACHE_DIR=shared_numba)
    run(env)
    cache = tmp_path / "cache"
    assert glob.glob(str(cache / "jg_*.py"))
    assert not glob.glob(str(cache / "**" / "*.pyc"), recursive=True)
    import py_compile
    for src in glob.glob(str(cache / "jg_*.py")):
        py_compile.compile(src, cfile=str(cache / "__pycache__" / (
            os.path.basename(src)[:-3] + f".{sys.implementation.cache_tag}.pyc")))
    _damage(glob.glob(str(cache / "__pycache__" / "*.pyc")))
    second, warned = run(env)
    assert values(second) == reference and not warned
    assert second["p"]["cache_hits"] == 1


@pytest.mark.parametrize("what", ["kernels", "package"])
def test_damaged_cache_files_heal_with_one_warning_each(tmp_path, reference, what):
    """``kernels``: every file of every generated kernel (.py, Numba's .nbi and .nbc) at once;
    ``package``: the Numba cache of jitgrad's own kernels (SGD, the random generator)."""
    env = child_env(tmp_path)
    run(env)
    numba_dir = tmp_path / "numba"
    kernel_numba = [d for d in numba_dir.iterdir() if d.name.startswith("cache_")]
    if what == "kernels":
        files = glob.glob(str(tmp_path / "cache" / "jg_*.py"))
        for d in kernel_numba:
            files += glob.glob(str(d / "*.nb[ic]"))
    else:
        files = [p for d in numba_dir.iterdir() if d not in kernel_numba
                 for p in glob.glob(str(d / "*.nb[ic]"))]
    assert len(files) >= 4
    _damage(files)
    second, warned = run(env)
    assert values(second) == reference
    assert warned and len(warned) == len(set(warned)) and len(warned) <= len(files)
    third, warned = run(env)
    assert values(third) == reference and not warned
    assert third["p"]["cache_misses"] == 0 and third["p"]["corrupt_entries"] == 0


# ----------------------------------------------------------------------------- unusable places


def _unusable(tmp_path, where):
    """Environment overrides making the configured cache folder unusable in one way."""
    afile = tmp_path / "a_file"
    afile.write_text("not a folder")
    if where == "file":
        return {"JITGRAD_CACHE_DIR": afile}
    if where == "under_file":
        return {"JITGRAD_CACHE_DIR": afile / "cache"}
    if where == "unwritable":
        if os.geteuid() == 0:  # root writes through permission bits; sysfs refuses even root
            return {"JITGRAD_CACHE_DIR": "/sys/kernel"}
        ro = tmp_path / "read_only"
        ro.mkdir()
        ro.chmod(0o555)
        return {"JITGRAD_CACHE_DIR": ro}
    if where == "home_unwritable":  # the default location, under a HOME that is a file
        return {"JITGRAD_CACHE_DIR": None, "HOME": afile}
    raise AssertionError(where)


@pytest.mark.parametrize("where", ["file", "under_file", "unwritable", "home_unwritable"])
def test_unusable_cache_folder_falls_back_to_a_private_temporary_folder(tmp_path, reference,
                                                                       shared_numba, where):
    env = child_env(tmp_path, NUMBA_CACHE_DIR=shared_numba, **_unusable(tmp_path, where))
    first, warned = run(env)
    assert values(first) == reference
    assert len(warned) == 1 and "is unusable" in warned[0] and "using" in warned[0]
    fallback = fallback_dir(tmp_path)
    assert glob.glob(str(fallback / "jg_*.py"))
    assert oct(fallback.stat().st_mode & 0o777) == oct(0o700)
    if where == "file":
        second, warned = run(env)  # the fallback is a real cache: the next process hits it
        assert values(second) == reference and len(warned) == 1
        assert second["p"]["cache_misses"] == 0


@pytest.mark.parametrize("fallback", ["a_file", "shared", "symlink"])
def test_unusable_fallback_compiles_in_memory(tmp_path, reference, shared_numba, fallback):
    """When the temporary folder cannot be used either (or is not private to this user: Numba
    unpickles what it finds there), kernels are compiled in memory, with one warning."""
    target = fallback_dir(tmp_path)
    (tmp_path / "tmp").mkdir()
    if fallback == "a_file":
        target.write_text("")
    elif fallback == "shared":
        target.mkdir()
        target.chmod(0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        target.symlink_to(tmp_path / "elsewhere")
    env = child_env(tmp_path, NUMBA_CACHE_DIR=shared_numba, **_unusable(tmp_path, "file"))
    r, warned = run(env)
    assert values(r) == reference
    assert len(warned) == 1 and "compiled in memory" in warned[0]
    assert not glob.glob(str(tmp_path / "**" / "jg_*.py"), recursive=True)


def test_numba_without_any_cache_folder(tmp_path, reference):
    """Numba raises at decoration when none of its locators finds a writable folder (here: only
    the user-wide locator, under an XDG_CACHE_HOME that is a file); that used to make ``import
    jitgrad`` fail. jitgrad's kernels then compile in memory, with one warning each for the
    package and the generated kernels."""
    afile = tmp_path / "a_file"
    afile.write_text("")
    env = child_env(tmp_path, NUMBA_CACHE_DIR=None, XDG_CACHE_HOME=afile / "x",
                    NUMBA_CACHE_LOCATOR_CLASSES="UserWideCacheLocator")
    r, warned = run(env)
    assert values(r) == reference
    assert 1 <= len(warned) <= 2 and all("compiled in memory" in w for w in warned)


# ----------------------------------------------------------------------------- racing processes


def test_racing_processes_on_one_empty_cache(tmp_path, reference, shared_numba):
    env = child_env(tmp_path, NUMBA_CACHE_DIR=shared_numba)
    start_at = time.time() + 5.0
    procs = [start(env, start_at) for _ in range(4)]
    results = [finish(p) for p in procs]
    for r, warned in results:
        assert values(r) == reference and not warned
    last, warned = run(env)
    assert values(last) == reference and not warned
    assert last["p"]["cache_misses"] == 0


# ----------------------------------------------------------------------------- hostile files


def _npz(members: dict[str, bytes]) -> bytes:
    """A zip of raw ``<name>.npy`` members, stored like np.savez stores them."""
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w", zipfile.ZIP_STORED) as z:
        for name, data in members.items():
            z.writestr(f"{name}.npy", data)
    return b.getvalue()


def _npy(arr) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array(b, np.asarray(arr), allow_pickle=True)
    return b.getvalue()


def _doc(root) -> bytes:
    return _npy(np.array(json.dumps({"format": "jitgrad-npz", "version": 2, "root": root})))


def _claiming(shape, dtype="<f8", data=b"\0" * 16) -> bytes:
    b = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        b, {"descr": dtype, "fortran_order": False, "shape": shape})
    return b.getvalue() + data


def _good() -> bytes:
    b = io.BytesIO()
    jitgrad.save({"w": jitgrad.arange(6.0).reshape(2, 3), "n": 3, "s": jitgrad.Size([2])}, b)
    return b.getvalue()


def _entry(**changes):
    e = {"__tensor__": "t0", "dtype": "<f4", "shape": [2], "strides": [4], "offset": 0,
         "requires_grad": False, "parameter": False}
    e.update(changes)
    return e


def _deep(n):
    return "[" * n + "]" * n


HOSTILE = {
    "empty": (b"", "not a readable zip"),
    "random": (bytes(random.Random(1).randrange(256) for _ in range(4096)), "not a readable zip"),
    "PK_random": (b"PK\x03\x04" + bytes(random.Random(2).randrange(256) for _ in range(4096)),
                  "not a readable zip"),
    "truncated_half": (_good()[: len(_good()) // 2], "not a readable zip"),
    "truncated_tail": (_good()[:-10], "not a readable zip"),
    "no_structure": (_npz({"t0": _npy(np.ones(2))}), "no structure member"),
    "missing_member": (_npz({"__jitgrad__": _doc({"__tensor__": "t7"})}), "missing member 't7'"),
    "missing_ndarray": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"})}), "missing member"),
    "claims_1e12_elements": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                                   "t0": _claiming((10**12,))}), "claims 1000000000000 elem"),
    "claims_1e12_by_1e12": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                                  "t0": _claiming((10**12, 10**12), "|u1")}), "claims"),
    "view_of_1e12_elements": (_npz({"__jitgrad__": _doc(_entry(shape=[10**12])),
                                    "t0": _npy(np.zeros(8, np.uint8))}), "outside its storage"),
    # in range of their storage, but repeating it (stride 0, as expand saves) into terabytes
    "view_repeats_8_bytes_1e12_times": (_npz({"__jitgrad__": _doc(_entry(shape=[10**12],
                                                                         strides=[0])),
                                              "t0": _npy(np.zeros(8, np.uint8))}),
                                        "repeats its 8-byte storage into 4000000000000 bytes"),
    "view_2d_zero_strides": (_npz({"__jitgrad__": _doc(_entry(dtype="|u1", shape=[2**20, 2**20],
                                                              strides=[0, 0])),
                                   "t0": _npy(np.zeros(1, np.uint8))}), "repeats its 1-byte"),
    "view_2d_row_broadcast": (_npz({"__jitgrad__": _doc(_entry(dtype="|u1", shape=[2**20, 2**20],
                                                               strides=[1, 0])),
                                    "t0": _npy(np.zeros(2**20, np.uint8))}),
                              f"repeats its {2**20}-byte storage into {2**40} bytes"),
    "view_stride_overflows": (_npz({"__jitgrad__": _doc(_entry(shape=[1], strides=[2**70])),
                                    "t0": _npy(np.zeros(8, np.uint8))}), "stride or offset"),
    "json_nested_200k": (_npz({"__jitgrad__": _npy(np.array(
        '{"format": "jitgrad-npz", "version": 2, "root": ' + _deep(200_000) + "}"))}),
        "nested 200001 levels deep"),
    "size_of_str_and_null": (_npz({"__jitgrad__": _doc({"__size__": ["a", None]})}),
                             "malformed size entry"),
    "size_of_bool": (_npz({"__jitgrad__": _doc({"__size__": [True]})}), "malformed size"),
    "complex_member": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                             "t0": _npy(np.ones(2, np.complex128))}), "dtype '<c16'"),
    "uint64_member": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                            "t0": _npy(np.ones(2, np.uint64))}), "dtype '<u8'"),
    "big_endian_member": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                                "t0": _npy(np.ones(2, ">f4"))}), "dtype '>f4'"),
    "structured_member": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                                "t0": _npy(np.zeros(2, [("a", "<f4")]))}), "does not accept"),
    "pickled_member": (_npz({"__jitgrad__": _doc({"__ndarray__": "t0"}),
                             "t0": _npy(np.array([print], dtype=object))}), "dtype '|O'"),
    "complex_entry": (_npz({"__jitgrad__": _doc(_entry(dtype="<c8")),
                            "t0": _npy(np.zeros(16, np.uint8))}), "dtype '<c8' not accepted"),
    "uint64_entry": (_npz({"__jitgrad__": _doc(_entry(dtype="<u8")),
                           "t0": _npy(np.zeros(16, np.uint8))}), "not accepted"),
    "big_endian_entry": (_npz({"__jitgrad__": _doc(_entry(dtype=">f4")),
                               "t0": _npy(np.zeros(16, np.uint8))}), "not accepted"),
    "structured_entry": (_npz({"__jitgrad__": _doc(_entry(dtype=[["a", "<f4"]])),
                               "t0": _npy(np.zeros(16, np.uint8))}), "not accepted"),
    "float_shape": (_npz({"__jitgrad__": _doc(_entry(shape=[2.0])),
                          "t0": _npy(np.zeros(16, np.uint8))}), "malformed tensor entry"),
    "dict_items_not_pairs": (_npz({"__jitgrad__": _doc({"__dict__": [[1, 2, 3]]})}),
                             "items must be"),
    "root_not_object": (_npz({"__jitgrad__": _npy(np.array("[1, 2]"))}), "not a JSON object"),
    "bad_json": (_npz({"__jitgrad__": _npy(np.array("{"))}), "not valid JSON"),
    "structure_not_text": (_npz({"__jitgrad__": _npy(np.ones(3))}), "does not accept"),
    "compressed": (None, "is compressed"),  # built in the test (np.savez_compressed)
}


def _compressed() -> bytes:
    b = io.BytesIO()
    np.savez_compressed(b, __jitgrad__=np.array(json.dumps(
        {"format": "jitgrad-npz", "version": 2, "root": {"__ndarray__": "t0"}})),
        t0=np.zeros(10**6))
    return b.getvalue()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_file_raises_one_runtime_error_naming_it(tmp_path, case):
    data, words = HOSTILE[case]
    data = _compressed() if data is None else data
    path = tmp_path / f"{case}.pt"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        with pytest.raises(RuntimeError) as e:
            jitgrad.load(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    msg = str(e.value)
    assert msg.startswith(f"jitgrad.load: {path}: "), msg
    assert words in msg, msg
    assert e.value.__cause__ is None and e.value.__suppress_context__
    assert peak < 10 * len(data) + (16 << 20), peak  # nothing the file merely claims


def test_file_objects_are_named_too():
    with open(os.devnull, "rb") as fh:
        with pytest.raises(RuntimeError, match=f"^jitgrad.load: {os.devnull}: not a jitgrad checkpoint"):
            jitgrad.load(fh)
    with pytest.raises(RuntimeError, match="^jitgrad.load: <BytesIO>: not a jitgrad checkpoint"):
        jitgrad.load(io.BytesIO(b"PK"))


def test_deep_but_legal_nesting_loads():
    obj = 1
    for _ in range(60):  # 60 nested lists: well inside the limit, far beyond any state dict
        obj = [obj]
    b = io.BytesIO()
    jitgrad.save({"deep": obj}, b)
    b.seek(0)
    assert jitgrad.load(b) == {"deep": obj}


def test_save_refuses_arrays_load_would_refuse():
    for arr in (np.ones(2, np.complex64), np.ones(2, np.uint64), np.array([None])):
        with pytest.raises(TypeError, match="cannot save a NumPy array of dtype"):
            jitgrad.save({"a": arr}, io.BytesIO())


def _roundtrip(obj):
    b = io.BytesIO()
    jitgrad.save(obj, b)
    b.seek(0)
    return jitgrad.load(b)


def test_expanded_views_within_the_bound_round_trip_without_copies():
    """What jitgrad.save writes for an expanded view loads back as a view of the saved storage
    (strides and sharing kept), up to a 1 GiB expand of 4 bytes (the absolute bound). Loading
    allocates nothing of what the views span."""
    big = jitgrad.arange(2.0**16)  # 256 kB storage
    obj = {"ones": jitgrad.ones(1).expand(2**28),  # 2**28 float32 = exactly 1 GiB
           "rows": big.reshape(1, -1).expand(16, -1), "big": big}
    tracemalloc.start()
    try:
        d = _roundtrip(obj)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < (16 << 20), peak
    assert d["ones"].shape == (2**28,) and d["ones"].stride() == (0,)
    assert d["rows"].shape == (16, 2**16) and d["rows"].stride() == (0, 1)
    d["big"].add_(1)  # still one storage: the expanded rows see it
    assert float(d["rows"][15, 7]) == 8.0 and float(d["ones"][2**28 - 1]) == 1.0


def test_the_relative_bound_lets_large_storages_repeat_16_times(monkeypatch):
    """Above the absolute bound (lowered here so the storages stay small), a view may still
    span 16x its storage's bytes, and not more."""
    from jitgrad import serialization
    monkeypatch.setattr(serialization, "_MAX_REPEATED_BYTES", 1024)
    big = jitgrad.arange(256.0)  # 1 kB
    d = _roundtrip({"rows": big.reshape(1, -1).expand(16, -1), "big": big})
    assert d["rows"].stride() == (0, 1)
    d["big"].add_(1)
    assert float(d["rows"][15, 255]) == 256.0
    with pytest.raises(ValueError, match="repeats its 1024-byte storage into 17408 bytes"):
        jitgrad.save(big.reshape(1, -1).expand(17, -1), io.BytesIO())
    monkeypatch.undo()
    b = io.BytesIO()
    jitgrad.save(big.reshape(1, -1).expand(17, -1), b)  # written under the 1 GiB bound
    monkeypatch.setattr(serialization, "_MAX_REPEATED_BYTES", 1024)
    b.seek(0)
    with pytest.raises(RuntimeError, match="^jitgrad.load: <BytesIO>: malformed tensor entry "
                                           r"\(a view of shape \[17, 256\] repeats"):
        jitgrad.load(b)


def test_save_refuses_an_expanded_view_load_would_refuse():
    with pytest.raises(ValueError, match=r"^jitgrad.save: cannot save the tensor at obj\['x'\]: "
                                         r"a view of shape \[268435457\] repeats its 4-byte"):
        jitgrad.save({"x": jitgrad.ones(1).expand(2**28 + 1)}, io.BytesIO())
    big = jitgrad.arange(2.0**16)
    with pytest.raises(ValueError, match="at most 16x the storage"):
        jitgrad.save(big.reshape(1, -1).expand(2**15, -1), io.BytesIO())


def test_random_damage_never_escapes_as_another_error():
    """Byte flips and truncations anywhere in a real checkpoint: it loads (the bytes hit unused
    fields) or raises the one RuntimeError, never anything else."""
    b = io.BytesIO()
    jitgrad.save({"m": {"w": jitgrad.ones(3, 2), "b": jitgrad.zeros(2)}, "step": 7,
                  "t": (1, 2.5, "x"), "v": jitgrad.arange(6.0).reshape(2, 3).t(),
                  "s": jitgrad.Size([4]), "raw": b"\x00\x01"}, b)
    raw = b.getvalue()
    rng = random.Random(0)
    outcomes = {"loaded": 0, "refused": 0}
    for _ in range(1500):
        d = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            d[rng.randrange(len(d))] = rng.randrange(256)
        if rng.random() < 0.2:
            d = d[: rng.randrange(len(d))]
        try:
            jitgrad.load(io.BytesIO(bytes(d)))
            outcomes["loaded"] += 1
        except RuntimeError as e:
            assert str(e).startswith("jitgrad.load: <BytesIO>: ")
            outcomes["refused"] += 1
    assert outcomes["refused"] > 1200
