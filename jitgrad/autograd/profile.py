"""What the engine and the kernel layer did inside a block: ``jitgrad.autograd.profile``.

::

    with jitgrad.autograd.profile() as p:
        loss.backward()
    p.kernel_launches   # generated kernels launched (forward ops too, if inside the block)
    p.fused_groups      # fused backward kernels run (one per group per pass)
    p.fused_nodes       # graph nodes those fused kernels stood in for
    p.cache_hits        # kernel specializations loaded as machine code from the disk cache
    p.cache_misses      # kernel specializations compiled
    p.compile_seconds   # wall time spent loading/compiling kernels before they could run
    p.modules_loaded    # generated kernel modules imported (from memory: not counted)
    p.corrupt_entries   # damaged cache entries found, deleted and rebuilt
    p.compile_captures  # jitgrad.compile recordings made (first call per guard set)
    p.compile_replays   # compiled calls replayed
    p.compile_lowered_replays  # of those, run as a whole step on arrays (no graph, no engine)
    p.compile_cuda_graphs      # CUDA graphs built (compile(mode="reduce-overhead"))
    p.compile_cuda_graph_replays  # replays that ran as one CUDA graph launch
    p.compile_guard_failures   # replays refused because a guard failed (then re-recorded)
    p.compile_eager_calls      # compiled calls run eagerly (graph break / too many variants)
    p.compile_reasons   # the last breaks and guard failures, in words

Counters are read live while the block runs and frozen when it exits; profiles nest.
"""
from __future__ import annotations

from ..fusion import is_fusion_enabled, set_fusion_enabled  # noqa: F401 - re-exported

__all__ = ["profile", "Profile", "set_fusion_enabled", "is_fusion_enabled"]

_FIELDS = ("kernel_launches", "fused_groups", "fused_nodes", "cache_hits", "cache_misses",
           "compile_seconds", "modules_loaded", "corrupt_entries", "compile_captures",
           "compile_replays", "compile_lowered_replays", "compile_cuda_graphs",
           "compile_cuda_graph_replays", "compile_guard_failures",
           "compile_eager_calls")


def _snapshot() -> dict:
    from .. import fusion
    from .._compile.compiled import stats as compiled
    from ..backends import cpu
    from ..codegen import kcache
    return {
        "kernel_launches": cpu.stats.launches,
        "fused_groups": fusion.stats.fused_groups,
        "fused_nodes": fusion.stats.fused_nodes,
        "cache_hits": cpu.stats.cache_hits,
        "cache_misses": cpu.stats.cache_misses,
        "compile_seconds": cpu.stats.compile_seconds,
        "modules_loaded": kcache.stats.modules_loaded,
        "corrupt_entries": kcache.stats.corrupt_entries,
        "compile_captures": compiled.captures,
        "compile_replays": compiled.replays,
        "compile_lowered_replays": compiled.lowered_replays,
        "compile_cuda_graphs": compiled.cuda_graphs,
        "compile_cuda_graph_replays": compiled.cuda_graph_replays,
        "compile_guard_failures": compiled.guard_failures,
        "compile_eager_calls": compiled.eager_calls,
        "compile_reasons": compiled.n_reasons,
    }


class Profile:
    """Counter deltas between entering and leaving the block (live while inside)."""

    def __init__(self):
        self._start = None
        self._end = None

    def __enter__(self):
        self._start = _snapshot()
        self._end = None
        return self

    def __exit__(self, *exc):
        self._end = _snapshot()
        return False

    def _delta(self, name):
        if self._start is None:
            return 0
        end = self._end if self._end is not None else _snapshot()
        return end[name] - self._start[name]

    @property
    def compile_reasons(self) -> list:
        """The graph breaks and guard failures noted inside the block, in words."""
        from .._compile.compiled import stats
        if self._start is None:
            return []
        end = self._end if self._end is not None else _snapshot()
        n = min(end["compile_reasons"] - self._start["compile_reasons"], len(stats.reasons))
        return stats.reasons[len(stats.reasons) - n:] if n else []

    def as_dict(self) -> dict:
        return {f: self._delta(f) for f in _FIELDS}

    def __repr__(self):
        items = ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}"
                          for k, v in self.as_dict().items())
        return f"Profile({items})"


def _field(name):
    return property(lambda self: self._delta(name), doc=f"Delta of {name} over the block.")


for _f in _FIELDS:
    setattr(Profile, _f, _field(_f))
del _f


def profile() -> Profile:
    """``with jitgrad.autograd.profile() as p: ...`` then read ``p.kernel_launches`` etc."""
    return Profile()
