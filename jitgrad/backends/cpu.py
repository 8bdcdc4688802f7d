"""CPU launchers: run LoopSpec kernels through the kernel cache (serial or prange)."""
from __future__ import annotations

import os

from ..codegen import kcache
from ..codegen.loops import render_cpu

# prange pays off from ~1e5-1e6 elements here (NUMBA_NOTES.md); below, serial is as fast.
PARALLEL_THRESHOLD = int(os.environ.get("JITGRAD_PARALLEL_THRESHOLD", 1 << 18))


class LaunchStats:
    __slots__ = ("launches",)

    def __init__(self):
        self.launches = 0


stats = LaunchStats()
_modules = {}


def module_for(key, build_spec):
    """The compiled-module handle for a spec identified by ``key`` (built on first use)."""
    mod = _modules.get(key)
    if mod is None:
        spec = build_spec()
        mod = kcache.load(render_cpu(spec, cache=kcache.disk_cache_enabled()), "cpu")
        _modules[key] = mod
    return mod


def launch(mod, n, args):
    stats.launches += 1
    if n >= PARALLEL_THRESHOLD:
        mod.parallel(n, *args)
    else:
        mod.serial(n, *args)
