"""Codegen from signatures (pure: no graph, no Numba) and the recompute-or-read decision."""
from __future__ import annotations

import numpy as np
import pytest
from fusion_helpers import fusion

import jitgrad
from jitgrad.codegen.loops import render_cpu
from jitgrad.fusion import node as fnode
from jitgrad.fusion.codegen import build_spec, is_cheap


def stmt_fns(spec):
    return [s.fn.symbol for s in spec.loop.stmts]


def test_cheapness_comes_from_the_declarations():
    assert is_cheap("mul") and is_cheap("add") and is_cheap("relu") and is_cheap("where")
    assert not is_cheap("tanh") and not is_cheap("exp") and not is_cheap("sqrt")
    assert not is_cheap("pow")


def test_chain_with_saved_out_reads_it():
    # tanh(sin(x)): tanh reads its saved out (array 0), sin reads x (array 1)
    sig = ("a", (("tanh", (("m", 1),), (("m", 1),), 0),
                 ("sin", (("e", 0),), (("a", 1),), None)), (True,))
    spec = build_spec(sig)
    assert spec.loop.arrays == ("g", "x0", "x1")
    assert spec.loads == (0,) and spec.recomputes == ()
    assert stmt_fns(spec) == ["tanh__da", "sin__da"]
    assert spec.out_edges == (0,)


def test_cheap_result_is_recomputed_instead_of_read():
    # relu(x * a): relu's out (array 2) can be recomputed from x, a which mul reads anyway
    sig = ("a", (("relu", (("m", 1),), (("m", 1),), 2),
                 ("mul", (("e", 0), ("e", 1)), (("a", 0), ("a", 1)), None)), (True, True))
    spec = build_spec(sig)
    assert spec.loop.arrays == ("g", "x0", "x1")  # array 2 never read
    assert spec.recomputes == (0, 1)
    assert stmt_fns(spec)[:2] == ["mul__f", "relu__f"]


def test_expensive_result_is_read_not_recomputed():
    sig = ("a", (("exp", (("m", 1),), (("m", 1),), 2),
                 ("mul", (("e", 0), ("e", 1)), (("a", 0), ("a", 1)), None)), (True, True))
    spec = build_spec(sig)
    assert "x2" in spec.loop.arrays and spec.loads == (0,)


def test_recompute_needs_operands_already_read():
    # relu(y + c) where c is unknown (not saved): relu's out must be read
    sig = ("a", (("relu", (("m", 1),), (("m", 1),), 0),
                 ("add", (("e", 0), None), (("a", 1), None), None)), (True,))
    spec = build_spec(sig)
    assert spec.loop.arrays == ("g", "x0")
    assert spec.loads == (0,)


def test_contributions_meeting_are_summed_and_unwanted_edges_skipped():
    # z = y*y + x with y = sin(x): x gets two contributions; edge 1 (unwanted) is not computed
    sig = ("s", (("add", (("m", 1), ("e", 0)), (None, None), None),
                 ("mul", (("m", 2), ("m", 2)), (("m", 2), ("m", 2)), None),
                 ("sin", (("e", 0),), (("a", 0),), 1)), (True,))
    spec = build_spec(sig)
    assert spec.loop.scalars[0] == "g"  # broadcast scalar gradient
    fns = stmt_fns(spec)
    assert fns.count("add__f") == 2  # g_sin = d1_0 + d1_1 ; r0 = d0_1 + d2_0
    assert spec.out_edges == (0,)
    assert spec.loop.arrays == ("x0", "x1")  # x and sin(x) (expensive: read, not recomputed)
    src = render_cpu(spec.loop, cache=False)
    assert "def serial(n, in_x0, in_x1, g, out_r0):" in src


def test_dead_members_emit_nothing():
    sig = ("a", (("mul", (("e", 0), ("m", 1)), (("a", 0), ("m", 1)), None),
                 ("sin", (("e", 1),), (("a", 0),), 1)), (True, False))
    spec = build_spec(sig)
    assert "sin__da" not in stmt_fns(spec)
    assert spec.out_edges == (0,)


def test_source_is_deterministic():
    sig = ("a", (("tanh", (("m", 1),), (("m", 1),), 0),
                 ("sin", (("e", 0),), (("a", 1),), None)), (True,))
    a = render_cpu(build_spec(sig).loop, cache=True)
    b = render_cpu(build_spec(sig).loop, cache=True)
    assert a == b


@pytest.fixture(autouse=True)
def _fresh_kernel_table(monkeypatch):
    """``_last_spec`` reads the newest compiled kernel: a signature another test compiled earlier
    in this process (another file on the same xdist worker) would not be entered again."""
    monkeypatch.setattr(fnode, "compiled", {})


def _last_spec():
    return list(fnode.compiled.values())[-1].spec


def test_arith_kernel_reads_only_g_x_a():
    x = jitgrad.randn(64, requires_grad=True)
    a = jitgrad.randn(64, requires_grad=True)
    y = x * a
    y = y + x
    y = y * y
    y = y - a
    y = jitgrad.relu(y)
    y = y * 0.5
    y = y + x
    with fusion(True):
        y.backward(jitgrad.ones(64))
    spec = _last_spec()
    assert len(spec.loop.arrays) == 3  # g, x, a: (y+x) and relu(...) are recomputed
    assert len(spec.loop.outputs) == 2


def test_saved_array_read_once_when_saved_by_several_nodes():
    x = jitgrad.randn(32, dtype=jitgrad.float64, requires_grad=True)
    y = jitgrad.sin(x) * x  # sin saves x, mul saves x (and sin(x))
    z = jitgrad.cos(x) + y  # cos saves x too
    with fusion(True):
        z.backward(jitgrad.ones(32, dtype=jitgrad.float64))
    spec = _last_spec()
    # x is read once however many nodes saved it
    assert len(spec.loop.arrays) == len(set(spec.loop.arrays))
    assert len(spec.loop.arrays) <= 3
    expected = np.cos(x.detach().numpy()) * x.detach().numpy() + np.sin(x.detach().numpy()) \
        - np.sin(x.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-12)
