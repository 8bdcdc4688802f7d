"""Training on CUDA end to end: an MLP step (forward, cross_entropy, backward, SGD / Adam step)
equals the CPU run and makes no host<->device transfer; examples/train_mlp.py trains with
``--device cuda`` (tiny sizes: the simulator runs every CUDA thread as a Python thread).

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_example.py
"""
from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn as nn
import jitgrad.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]


def _mlp():
    # no dropout: its masks come from different generators on the CPU and on CUDA
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 6), nn.Tanh(),
                         nn.Linear(6, 3))


def test_mlp_training_steps_match_cpu_without_transfers(device):
    """Two SGD (Nesterov momentum, weight decay) steps, then two AdamW (amsgrad) steps, of a
    3-layer MLP with cross_entropy: the same losses and parameters as on the CPU (float32), and
    not one host<->device copy on CUDA between the uploads and the final reads."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 4)).astype(np.float32)
    T = np.array([0, 2, 1, 1, 0])
    runs = {}
    for dev in ("cpu", "cuda"):
        jg.manual_seed(0)
        model = _mlp().to(dev)  # same initial weights (drawn on the host), then moved
        x, t = jg.tensor(X, device=dev), jg.tensor(T, device=dev)
        opts = [jg.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                             weight_decay=1e-3),
                jg.optim.AdamW(model.parameters(), lr=0.01, amsgrad=True)]
        losses = []
        device.reset_stats()
        for opt in (opts[0], opts[0], opts[1], opts[1]):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), t)
            loss.backward()
            opt.step()
            losses.append(loss)
        moved = device.stats.snapshot()
        runs[dev] = ([v.item() for v in losses], [p.detach().cpu().numpy()
                                                  for p in model.parameters()], moved)
    (lc, pc, _), (ld, pd, moved) = runs["cpu"], runs["cuda"]
    assert moved["h2d"] == 0 and moved["d2h"] == 0, moved
    assert moved["launches"] > 0
    np.testing.assert_allclose(ld, lc, rtol=1e-5)
    assert ld[3] < ld[0]
    for a, b in zip(pc, pd):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)


@pytest.fixture
def train_mlp():
    for mod in ("sklearn", "tqdm", "matplotlib"):
        pytest.importorskip(mod)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_mlp
    finally:
        sys.path.pop(0)
    return train_mlp


def test_example_trains_on_cuda(device, train_mlp, tmp_path, capsys):
    """``train_mlp.py --device cuda`` (its main(), in this simulator process): 12 samples, one
    batch per epoch, hidden width 8 — the loss falls, the output is the CPU run's format, and
    the checkpoint (host copies) loads into a CPU model."""
    acc = train_mlp.main(["--device", "cuda", "--epochs", "2", "--limit", "12",
                          "--batch-size", "12", "--hidden", "8", "--lr", "0.03",
                          "--no-progress", "--out", str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].endswith("device: cuda") and "12 train / 12 test" in out[0]
    pat = re.compile(r"^epoch +(\d)/2  loss (\d+\.\d{4})  train acc [01]\.\d{3}  test loss "
                     r"(\d+\.\d{4})  test acc [01]\.\d{3}  lr \S+$")
    rows = [pat.match(ln) for ln in out if ln.startswith("epoch")]
    assert len(rows) == 2 and all(rows), out
    train = [float(m.group(2)) for m in rows]
    assert abs(train[0] - math.log(10)) < 0.5  # 10 classes, fresh init: about ln 10
    assert train[1] < train[0]
    assert re.fullmatch(r"test accuracy: [01]\.\d{3}", out[-1]) and 0.0 <= acc <= 1.0
    ck = jg.load(tmp_path / "checkpoint.pt")
    model = train_mlp.make_model(64, 8, 10)
    assert repr(model.load_state_dict(ck["model"])) == "<All keys matched successfully>"
    state = ck["optimizer"]["state"][0]
    assert state["exp_avg"].is_cpu and float(state["step"]) == 2.0
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_cnn_example_trains_on_cuda(device, tmp_path, capsys):
    """``train_cnn.py --device cuda``: 4 samples, one batch per epoch, 1 channel — the loss
    falls and the checkpoint loads into a CPU model."""
    for mod in ("sklearn", "tqdm", "matplotlib"):
        pytest.importorskip(mod)
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import train_cnn
    finally:
        sys.path.pop(0)
    train_cnn.main(["--device", "cuda", "--epochs", "2", "--limit", "4", "--batch-size", "4",
                    "--channels", "1", "--lr", "0.03", "--no-progress", "--out",
                    str(tmp_path)])
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].endswith("device: cuda")
    rows = [ln for ln in out if ln.startswith("epoch")]
    losses = [float(ln.split("loss ")[1].split()[0]) for ln in rows]
    assert len(losses) == 2 and losses[1] < losses[0]
    ck = jg.load(tmp_path / "checkpoint.pt")
    assert repr(train_cnn.make_model(1).load_state_dict(ck["model"])) == \
        "<All keys matched successfully>"
