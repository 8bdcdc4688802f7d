"""examples/train_cnn.py runs end to end: output format, accuracy, plot, checkpoint, arguments
(its training loop is train_mlp.py's ``train``)."""
import re
import sys
from pathlib import Path

import pytest
from _examples import run_example

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_cnn.py"


def run(args, timeout=600):
    return run_example("train_cnn.py", args, timeout)


@pytest.fixture(scope="module")
def deps():
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")


def test_train_cnn_defaults_reach_098(deps, tmp_path):
    out = tmp_path / "run"
    r = run(["--out", str(out), "--no-progress"])
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    epoch_lines = [ln for ln in lines if ln.startswith("epoch")]
    assert len(epoch_lines) == 10
    pat = re.compile(r"^epoch +\d+/10  loss \d+\.\d{4}  train acc [01]\.\d{3}  test loss "
                     r"\d+\.\d{4}  test acc [01]\.\d{3}  lr \S+$")
    for ln in epoch_lines:
        assert pat.match(ln), ln
    assert re.fullmatch(r"test accuracy: [01]\.\d{3}", lines[-1]), lines[-1]
    assert float(lines[-1].split(":")[1]) >= 0.98
    png = out / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    import jitgrad as jt
    ck = jt.load(out / "checkpoint.pt")
    assert ck["epoch"] == 10 and len(ck["history"]["test_acc"]) == 10
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_cnn
    finally:
        sys.path.pop(0)
    model = train_cnn.make_model(ck["args"]["channels"])
    assert repr(model.load_state_dict(ck["model"])) == "<All keys matched successfully>"
    assert set(ck["optimizer"]) == {"state", "param_groups"}


def test_bad_arguments(deps, tmp_path):
    r = run(["--channels", "0", "--out", str(tmp_path)])
    assert r.returncode == 2 and "--channels must be at least 1" in r.stderr
