"""Cached jitgrad kernels are recompiled when any jitgrad source changes, not only their own file.

Numba's disk cache stamps a kernel's index with its own file's content, so a kernel that inlines
a function from another module loaded its old machine code after that function was edited.
``kcache._harden`` pairs the stamp with ``kcache.package_fingerprint()``; these tests edit a
callee in a temporary package (in process) and in a temporary copy of jitgrad (across processes)
and expect the edited result, and expect an unchanged tree to load, not compile.
"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from jitgrad.codegen import kcache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CALLEE = "import numba\n\n\n@numba.njit\ndef bump(x):\n    return x + {n}\n"
CALLER = textwrap.dedent("""
    from jitgrad.codegen.kcache import njit_cached
    from {pkg}.stale_callee import bump


    @njit_cached
    def kernel(x):
        return bump(x) * 10
""")


def _write(path, text):
    # the edits below change the file's size, so the fingerprint sees them even on a coarse clock
    with open(path, "w") as fh:
        fh.write(text)


def _fresh_kernel(pkg):
    """A new dispatcher for the caller (as in a new process): its cache reads the index again."""
    for mod in (f"{pkg}.stale_caller", f"{pkg}.stale_callee"):
        sys.modules.pop(mod, None)
    importlib.invalidate_caches()
    return importlib.import_module(f"{pkg}.stale_caller").kernel


def _counts(disp):
    return sum(disp.stats.cache_hits.values()), sum(disp.stats.cache_misses.values())


@pytest.fixture
def tiny_package(tmp_path, monkeypatch):
    """A package with a callee and a caller in separate modules, cached by Numba beside them."""
    pkg = f"jg_stale_pkg_{os.getpid()}_{abs(hash(str(tmp_path))) % 10**8}"
    root = tmp_path / pkg
    root.mkdir()
    (root / "__init__.py").write_text("")
    _write(root / "stale_callee.py", CALLEE.format(n=1))
    (root / "stale_caller.py").write_text(CALLER.format(pkg=pkg))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kcache, "_PACKAGE_DIR", str(root), raising=False)
    monkeypatch.setattr(kcache, "_fingerprint", None, raising=False)
    yield pkg, root
    for mod in [m for m in sys.modules if m.startswith(pkg)]:
        sys.modules.pop(mod, None)


def test_editing_a_callee_in_another_module_recompiles_the_caller(tiny_package, monkeypatch):
    pkg, root = tiny_package
    first = _fresh_kernel(pkg)
    assert first(1) == 20
    assert _counts(first) == (0, 1)  # compiled and saved
    again = _fresh_kernel(pkg)
    assert again(1) == 20
    assert _counts(again) == (1, 0)  # nothing changed: loaded from the disk cache

    _write(root / "stale_callee.py", CALLEE.format(n=100))
    monkeypatch.setattr(kcache, "_fingerprint", None)  # a new process computes it afresh
    edited = _fresh_kernel(pkg)
    assert edited(1) == 1010  # the old machine code would give 20
    assert _counts(edited) == (0, 1)
    reloaded = _fresh_kernel(pkg)
    assert reloaded(1) == 1010
    assert _counts(reloaded) == (1, 0)


def test_an_entry_saved_under_one_fingerprint_is_not_loaded_under_another(tiny_package,
                                                                          monkeypatch):
    pkg, _ = tiny_package
    monkeypatch.setattr(kcache, "_fingerprint", "A")
    assert _fresh_kernel(pkg)(2) == 30
    k = _fresh_kernel(pkg)
    assert k(2) == 30 and _counts(k) == (1, 0)
    monkeypatch.setattr(kcache, "_fingerprint", "B")
    k = _fresh_kernel(pkg)
    assert k(2) == 30 and _counts(k) == (0, 1)  # recompiled; the index now holds B's entry
    k = _fresh_kernel(pkg)
    assert k(2) == 30 and _counts(k) == (1, 0)
    monkeypatch.setattr(kcache, "_fingerprint", "A")
    k = _fresh_kernel(pkg)
    # one entry per kernel file is kept (no pile-up of stale machine code): back to A compiles
    assert k(2) == 30 and _counts(k) == (0, 1)


def test_generated_modules_stamp_every_dispatcher_they_define(tmp_path, monkeypatch):
    """``kcache.load`` hardens all its module's dispatchers, each stamped with the fingerprint."""
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("JITGRAD_DISABLE_DISK_CACHE", raising=False)
    monkeypatch.setattr(kcache, "_fingerprint", "fingerprint-for-this-test")
    source = textwrap.dedent(f"""
        import numba
        from jitgrad.codegen.kcache import package_fingerprint  # an import, not defined here

        @numba.njit(cache=True)
        def helper_{os.getpid()}(x):
            return x * 3

        @numba.njit(cache=True)
        def serial(x):
            return helper_{os.getpid()}(x) + {time.time_ns()}
    """)
    mod = kcache.load(source)
    helper = getattr(mod, f"helper_{os.getpid()}")
    assert helper._cache._jitgrad_hardened and mod.serial._cache._jitgrad_hardened
    assert mod.serial(1) > 3
    assert mod.serial._cache._cache_file._source_stamp[1] == "fingerprint-for-this-test"


CHILD = textwrap.dedent("""
    import json
    import jitgrad
    from jitgrad import stale_caller
    from jitgrad.codegen import kcache
    value = stale_caller.kernel(1)
    k = stale_caller.kernel
    print(json.dumps({"file": jitgrad.__file__, "value": value,
                      "hits": sum(k.stats.cache_hits.values()),
                      "misses": sum(k.stats.cache_misses.values())}))
""")


def test_across_processes_in_a_copy_of_jitgrad(tmp_path):
    """The real package: a callee edited between two processes is seen; no edit, no compile."""
    copy = tmp_path / "src"
    shutil.copytree(os.path.join(REPO, "jitgrad"), copy / "jitgrad",
                    ignore=shutil.ignore_patterns("__pycache__"))
    _write(copy / "jitgrad" / "stale_callee.py", CALLEE.format(n=1))
    (copy / "jitgrad" / "stale_caller.py").write_text(CALLER.format(pkg="jitgrad"))
    env = dict(os.environ, PYTHONPATH=str(copy), NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               JITGRAD_CACHE_DIR=str(tmp_path / "kernels"))
    env.pop("JITGRAD_DISABLE_DISK_CACHE", None)

    def child():
        r = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                           text=True, timeout=300, cwd=str(tmp_path))
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.strip().splitlines()[-1])
        assert out["file"].startswith(str(copy))
        return out

    first = child()
    assert (first["value"], first["hits"], first["misses"]) == (20, 0, 1)
    _write(copy / "jitgrad" / "stale_callee.py", CALLEE.format(n=100))
    edited = child()
    assert (edited["value"], edited["hits"], edited["misses"]) == (1010, 0, 1)
    unchanged = child()
    assert (unchanged["value"], unchanged["hits"], unchanged["misses"]) == (1010, 1, 0)
