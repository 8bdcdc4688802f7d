"""examples/train_mlp.py runs end to end: output format, plot, checkpoint, device errors."""
import io
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from _examples import run_example

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "train_mlp.py"


def run(args, timeout=300):
    return run_example("train_mlp.py", args, timeout)


@pytest.fixture(scope="module")
def deps():
    pytest.importorskip("sklearn")
    pytest.importorskip("tqdm")
    pytest.importorskip("matplotlib")


def test_train_mlp_small_run(deps, tmp_path):
    out = tmp_path / "run"
    r = run(["--epochs", "3", "--out", str(out), "--seed", "1"])
    assert r.returncode == 0, r.stderr[-3000:]
    lines = r.stdout.strip().splitlines()
    epoch_lines = [ln for ln in lines if ln.startswith("epoch")]
    assert len(epoch_lines) == 3
    pat = re.compile(r"^epoch +\d+/3  loss \d+\.\d{4}  train acc [01]\.\d{3}  test loss "
                     r"\d+\.\d{4}  test acc [01]\.\d{3}  lr \S+$")
    for ln in epoch_lines:
        assert pat.match(ln), ln
    assert re.fullmatch(r"test accuracy: [01]\.\d{3}", lines[-1]), lines[-1]
    assert float(lines[-1].split(":")[1]) > 0.85  # 3 epochs already learn the digits
    png = out / "curves.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000
    import jitgrad as jt
    ck = jt.load(out / "checkpoint.pt")
    assert ck["epoch"] == 3 and len(ck["history"]["test_acc"]) == 3
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_mlp
    finally:
        sys.path.pop(0)
    model = train_mlp.make_model(64, ck["args"]["hidden"], 10)
    assert repr(model.load_state_dict(ck["model"])) == "<All keys matched successfully>"
    assert set(ck["optimizer"]) == {"state", "param_groups"}
    # the progress bar goes to stderr; in a log (captured, not a terminal) it is one finished
    # line per epoch that reached n/n, never a stream of carriage returns
    assert "\r" not in r.stderr
    bars = [ln for ln in r.stderr.splitlines() if ln.startswith("epoch")]
    n_batches = -(-int(0.8 * 1797) // 64)  # the training split in batches of 64
    assert len(bars) == 3, r.stderr[-2000:]
    for i, ln in enumerate(bars, 1):
        assert re.match(rf"epoch +{i}/3: 100%\|.*\| {n_batches}/{n_batches} \[.*loss=\d\.\d{{4}}\]$",
                        ln), ln


def test_no_progress_hides_the_bars(deps, tmp_path):
    r = run(["--epochs", "1", "--limit", "200", "--no-progress", "--out", str(tmp_path)])
    assert r.returncode == 0, r.stderr[-3000:]
    assert "batch" not in r.stderr


def import_example():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_mlp
    finally:
        sys.path.pop(0)
    return train_mlp


class FakeTerminal(io.StringIO):
    def isatty(self):
        return True


def test_live_progress_bar_advances(deps):
    """On a terminal the bar's count moves with every batch (it stayed at 0/N while the
    postfix changed) and shows the loss."""
    bar = import_example().Progress(5, "epoch   1/1", file=FakeTerminal(), mininterval=0)
    out = bar.file
    for step in range(5):
        bar.step(1.0 / (step + 1))
    shown = out.getvalue()
    bar.close()
    counts = [int(m) for m in re.findall(r"\| (\d)/5 ", shown)]
    assert counts[-1] == 5 and counts == sorted(counts) and {1, 2, 3, 4, 5} <= set(counts)
    assert "5/5" in shown and "loss=0.2000" in shown


@pytest.mark.parametrize("epochs", [2, 3, 5, 8, 9, 10, 20])
def test_plot_epoch_axis_has_integer_ticks(deps, epochs):
    import matplotlib.pyplot as plt
    history = {k: list(np.linspace(0.1, 0.9, epochs))
               for k in ("train_loss", "test_loss", "train_acc", "test_acc")}
    fig = import_example().make_figure(history)
    try:
        fig.canvas.draw()
        for ax in fig.axes:
            lo, hi = ax.get_xlim()
            ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
            assert ticks and all(float(t).is_integer() for t in ticks), ticks
    finally:
        plt.close(fig)


def test_readme_lists_every_flag(deps):
    parser_flags = set(re.findall(r'add_argument\("(--[a-z-]+)"', SCRIPT.read_text()))
    readme = (ROOT / "README.md").read_text()
    flags_line = readme[readme.index("\nFlags:"):].split("\n\n")[0]  # the paragraph
    assert parser_flags and parser_flags <= set(re.findall(r"--[a-z-]+", flags_line)), \
        parser_flags - set(re.findall(r"--[a-z-]+", flags_line))


def test_device_cuda_gives_a_clear_error(deps, tmp_path):
    import jitgrad as jt
    if jt.cuda.is_available():
        pytest.skip("a CUDA backend is available")
    r = run(["--device", "cuda", "--epochs", "1", "--out", str(tmp_path)])
    assert r.returncode == 2
    assert "CUDA backend is not available" in r.stderr
    assert "Traceback" not in r.stderr


def test_bad_arguments(deps, tmp_path):
    r = run(["--epochs", "0", "--out", str(tmp_path)])
    assert r.returncode == 2 and "--epochs must be at least 1" in r.stderr


@pytest.mark.parametrize("script", ["train_mlp.py", "train_cnn.py"])
def test_compile_flag_trains_exactly_as_eager(deps, tmp_path, script):
    """``--compile`` replays the recorded step (dropout, AdamW, the cosine schedule, eval
    between epochs, a smaller last batch): the same epoch lines as the eager run."""
    outs = []
    for extra in ([], ["--compile"]):
        r = run_example(script, ["--epochs", "2", "--no-progress", "--out",
                                 str(tmp_path / f"o{len(outs)}"), *extra], 300)
        assert r.returncode == 0, r.stderr[-3000:]
        assert "runs eagerly" not in r.stderr, r.stderr[-2000:]  # it was replayed
        outs.append([ln for ln in r.stdout.splitlines() if ln.startswith(("epoch", "test"))])
    assert outs[0] == outs[1] and len(outs[0]) == 3
