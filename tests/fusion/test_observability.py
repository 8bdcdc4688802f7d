"""Debug output, the environment switches and import cost, checked in fresh processes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SCRIPT = textwrap.dedent("""
    import jitgrad
    from jitgrad.autograd import profile
    x = jitgrad.randn(16, requires_grad=True)
    y = jitgrad.tanh(jitgrad.sin(x) * 2 + 1)
    with profile() as p:
        y.sum().backward()
    print("fused_groups", p.fused_groups, "launches", p.kernel_launches)
""")


def run(env_extra, code=SCRIPT, tmp=None):
    env = dict(os.environ, PYTHONPATH=REPO)
    for k in ("JITGRAD_DEBUG", "JITGRAD_FUSION"):
        env.pop(k, None)
    if tmp is not None:
        env["JITGRAD_CACHE_DIR"] = str(tmp)
    env.update(env_extra)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout, r.stderr


def test_debug_fusion_prints_the_plan(tmp_path):
    out, err = run({"JITGRAD_DEBUG": "fusion"}, tmp=tmp_path)
    assert "fused_groups 1 launches 1" in out
    assert "[jitgrad fusion] plan:" in err
    assert "TanhBackward0 <- AddBackward0 <- MulBackward0 <- SinBackward0" in err
    assert "new kernel for 4 nodes" in err


def test_debug_source_dumps_generated_source(tmp_path):
    out, err = run({"JITGRAD_DEBUG": "source"}, tmp=tmp_path)
    assert "[jitgrad source] kernel" in err
    assert "def serial(" in err and "def parallel(" in err
    assert "tanh__da" in err  # the fused VJP body from the registry
    assert "[jitgrad fusion]" not in err


def test_debug_topics_combine(tmp_path):
    _, err = run({"JITGRAD_DEBUG": "fusion,source"}, tmp=tmp_path)
    assert "[jitgrad fusion] plan:" in err and "[jitgrad source]" in err


def test_env_var_turns_fusion_off(tmp_path):
    out, _ = run({"JITGRAD_FUSION": "0"}, tmp=tmp_path)
    # one VJP launch per node but AddBackward0's, which hands its gradient on
    assert "fused_groups 0 launches 3" in out


def test_import_is_cheap_and_installs_the_hook():
    code = textwrap.dedent("""
        import sys
        import jitgrad
        from jitgrad.autograd import engine
        import jitgrad.fusion
        assert engine.plan_hook is jitgrad.fusion.plan_hook
        assert "numba" not in sys.modules, "import jitgrad imported numba"
        assert "jitgrad.fusion.node" not in sys.modules
        assert callable(jitgrad.autograd.profile)
        assert callable(jitgrad.autograd.set_fusion_enabled)
        print("ok")
    """)
    out, _ = run({}, code=code)
    assert "ok" in out
