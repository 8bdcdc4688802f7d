"""Backward fusion: each chain (or tree) of elementwise VJP nodes runs as one generated kernel.

``jitgrad.autograd.engine`` imports this package at its end, which installs ``plan_hook``: before a
backward pass launches anything, the planner (``planner.py``, pure Python over the graph) groups
the elementwise nodes about to run, and each group of two or more nodes is replaced by one
``FusedBackward`` node (``node.py``) whose kernel is a ``LoopSpec`` built from the registry's
scalar VJP bodies (``codegen.py``). See ``docs/fusion.md``.

Importing this package is cheap: no Numba, and the planner/codegen modules load on the first
backward pass that has fusion enabled.

Switches:
  ``set_fusion_enabled(False)`` / ``JITGRAD_FUSION=0``  run every node on its own (unfused);
  ``JITGRAD_DEBUG=fusion``   print each plan (groups, what leaves them) to stderr;
  ``JITGRAD_DEBUG=source``   print the source of every generated kernel module to stderr.
"""
from __future__ import annotations

import os
import sys

__all__ = ["set_fusion_enabled", "is_fusion_enabled", "plan_hook", "stats", "debug"]

_OFF = ("0", "false", "no", "off")
_enabled = os.environ.get("JITGRAD_FUSION", "1").strip().lower() not in _OFF

# JITGRAD_DEBUG is a comma/space separated list of topics ("fusion", "source").
debug = frozenset(os.environ.get("JITGRAD_DEBUG", "").replace(",", " ").split())


class FusionStats:
    """Counters read by ``jitgrad.autograd.profile``."""

    __slots__ = ("fused_groups", "fused_nodes", "plans")

    def __init__(self):
        self.fused_groups = 0  # fused kernels run (one per group per backward pass)
        self.fused_nodes = 0  # graph nodes those groups stood in for
        self.plans = 0  # backward passes planned


stats = FusionStats()


def set_fusion_enabled(enabled: bool) -> None:
    """Turn backward fusion on or off for this process (``JITGRAD_FUSION=0`` starts it off)."""
    global _enabled
    _enabled = bool(enabled)


def is_fusion_enabled() -> bool:
    return _enabled


_apply_plan = None


def plan_hook(task) -> None:
    """Called by the engine with a discovered ``GraphTask`` before anything runs."""
    if not _enabled:
        return
    global _apply_plan
    if _apply_plan is None:
        from .node import apply_plan
        _apply_plan = apply_plan
    _apply_plan(task)


def _install() -> None:
    engine = sys.modules.get("jitgrad.autograd.engine")
    if engine is None:  # pragma: no cover - jitgrad/__init__ always imports the engine first
        from ..autograd import engine
    engine.plan_hook = plan_hook


_install()
