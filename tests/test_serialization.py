"""jitgrad.save / jitgrad.load: round trips of state dicts in the safe npz+JSON format."""
import io
import math
import pickle
import zipfile
from collections import OrderedDict

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn as nn


def test_model_and_optimizer_round_trip(tmp_path):
    jt.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    opt = jt.optim.AdamW(model.parameters(), lr=0.01)
    model(jt.randn(5, 3)).sum().backward()
    opt.step()
    path = tmp_path / "ckpt.pt"
    jt.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3,
             "note": "hello", "acc": 0.97, "inf": float("inf"), "none": None,
             "shape": (1, 2), "flags": [True, False]}, path)
    assert path.exists() and path.name == "ckpt.pt"  # no .npz suffix appended
    ck = jt.load(path)
    assert ck["epoch"] == 3 and ck["note"] == "hello" and ck["acc"] == 0.97
    assert math.isinf(ck["inf"]) and ck["none"] is None
    assert ck["shape"] == (1, 2) and ck["flags"] == [True, False]
    assert isinstance(ck["model"], OrderedDict)
    assert list(ck["model"]) == list(model.state_dict())
    for k, v in model.state_dict().items():
        assert ck["model"][k].dtype is v.dtype
        np.testing.assert_array_equal(ck["model"][k].numpy(), v.numpy())
    assert ck["optim"]["state"][0]["step"].shape == jt.Size([])
    model2 = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    model2.load_state_dict(ck["model"])
    opt2 = jt.optim.AdamW(model2.parameters(), lr=0.5)
    opt2.load_state_dict(ck["optim"])
    assert opt2.param_groups[0]["lr"] == 0.01
    x = jt.randn(2, 3)
    np.testing.assert_array_equal(model(x).detach().numpy(), model2(x).detach().numpy())


def test_tensor_dtypes_and_parameters(tmp_path):
    p = nn.Parameter(jt.tensor([1.0, 2.0], dtype=jt.float64))
    obj = {1: jt.tensor([1, 2, 3]), "b": jt.tensor(True), "p": p,
           "r": jt.tensor([1.0], requires_grad=True), "scalar": jt.tensor(2.5)}
    buf = io.BytesIO()
    jt.save(obj, buf)
    buf.seek(0)
    back = jt.load(buf)
    assert back[1].dtype is jt.int64 and back[1].tolist() == [1, 2, 3]
    assert back["b"].dtype is jt.bool and back["b"].item() is True
    assert isinstance(back["p"], nn.Parameter) and back["p"].dtype is jt.float64
    assert back["r"].requires_grad and not back["scalar"].requires_grad
    assert back["scalar"].shape == jt.Size([])


def test_unsupported_objects_are_refused(tmp_path):
    with pytest.raises(TypeError, match="save model.state_dict\\(\\) rather than the model"):
        jt.save(nn.Linear(2, 2), tmp_path / "m.pt")
    with pytest.raises(TypeError, match="unsupported dict key"):
        jt.save({jt.ones(1): 3}, tmp_path / "k.pt")  # tuple keys are saved (as torch does)


def test_loading_never_unpickles(tmp_path):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    # an npz whose member is a pickled object array: np.load(allow_pickle=False) refuses it
    path = tmp_path / "evil.pt"
    with open(path, "wb") as fh:
        np.savez(fh, __jitgrad__=np.array('{"format": "jitgrad-npz", "version": 1, '
                                          '"root": {"__ndarray__": "t0"}}'),
                 t0=np.array([Evil()], dtype=object))
    with pytest.raises(Exception) as e:
        jt.load(path)
    assert "pwned" not in str(e.value)
    # a plain pickle file is not a checkpoint
    bad = tmp_path / "pickle.pt"
    bad.write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(RuntimeError, match="not a jitgrad checkpoint"):
        jt.load(bad)
    # the file is a zip of .npy members plus one JSON document
    good = tmp_path / "good.pt"
    jt.save({"w": jt.ones(2)}, good)
    with zipfile.ZipFile(good) as z:
        assert sorted(z.namelist()) == ["__jitgrad__.npy", "t0.npy"]


def test_map_location_cpu_forms_and_cuda_without_a_device(tmp_path, monkeypatch):
    path = tmp_path / "t.npz"
    jt.save({"w": jt.arange(3.0)}, path)
    for loc in (None, "cpu", jt.device("cpu"), {"cuda:0": "cpu"}):
        w = jt.load(path, map_location=loc)["w"]
        assert w.device.type == "cpu" and w.tolist() == [0.0, 1.0, 2.0]
    monkeypatch.setattr(jt.cuda, "is_available", lambda: False)
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        jt.load(path, map_location="cuda")
    with pytest.raises(NotImplementedError, match="callable map_location"):
        jt.load(path, map_location=lambda storage, loc: storage)
