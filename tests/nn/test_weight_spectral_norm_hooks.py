"""The hook-based (deprecated) ``nn.utils.weight_norm`` / ``spectral_norm`` and their
``remove_*`` against PyTorch: parameters and buffers registered, the deprecation warning,
seeded u/v, values and gradients over several training-mode forwards, eval mode, state dicts
with the spectral_norm version metadata, version-0 upgrade on load, removal and errors."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
from tests._parity import raises_like

torch = pytest.importorskip("torch")

LIBS = (jg, torch)
TOL = {"float64": dict(rtol=1e-12, atol=1e-12), "float32": dict(rtol=1e-6, atol=1e-6)}


def _np(t):
    return t.detach().numpy() if not isinstance(t, np.ndarray) else t


def _close(a, b, dtype="float64"):
    a, b = _np(a), _np(b)
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    np.testing.assert_allclose(a, b, rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * scale)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_hook(dtype, dim):
    res = []
    for L in LIBS:
        L.manual_seed(0)
        m = L.nn.Conv1d(3, 4, 2).to(getattr(L, dtype))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert L.nn.utils.weight_norm(m, dim=dim) is m
        x = L.tensor(np.linspace(-1, 1, 30).reshape(2, 3, 5), dtype=getattr(L, dtype))
        ys = []
        for _ in range(2):
            y = m(x)
            (y * y).sum().backward()
            ys.append(y)
            with L.no_grad():
                for p in m.parameters():
                    p -= 0.1 * p.grad
        grads = {k: p.grad.clone() for k, p in m.named_parameters()}
        sd = m.state_dict()
        w_before = m.weight.detach().clone()
        L.nn.utils.remove_weight_norm(m)
        res.append(([(w.category.__name__, str(w.message)) for w in caught], ys, grads, sd,
                    [n for n, _ in m.named_parameters()], w_before, m.weight,
                    type(ys[0].grad_fn).__name__))
    (wj, yj, gj, sj, nj, bj, mj, fj), (wt, yt, gt, st, nt, bt, mt, ft) = res
    assert wj == wt and len(wj) == 1 and nj == nt and fj == ft
    assert list(sj) == list(st) == ["bias", "weight_g", "weight_v"]
    for a, b in zip(yj, yt):
        _close(a, b, dtype)
    for k in gt:
        _close(gj[k], gt[k], dtype)
    for k in st:
        _close(sj[k], st[k], dtype)
    _close(bj, bt, dtype)
    _close(mj, mt, dtype)


def test_weight_norm_hook_errors():
    def twice(T):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = T.nn.utils.weight_norm(T.nn.Linear(2, 2))
            T.nn.utils.weight_norm(m)
    raises_like(twice)
    raises_like(lambda T: T.nn.utils.remove_weight_norm(T.nn.Linear(2, 2)))


def _lin(L, n):
    return L.tensor(np.linspace(-1, 1, n))


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["linear", "convT", "conv_dim1"])
def test_spectral_norm_hook(dtype, kind):
    res = []
    for L in LIBS:
        L.manual_seed(5)
        dt = getattr(L, dtype)
        if kind == "linear":
            m, x, kw = L.nn.Linear(5, 4).to(dt), _lin(L, 10).reshape(2, 5), {}
        elif kind == "convT":
            m, x, kw = (L.nn.ConvTranspose2d(3, 2, 2).to(dt),
                        _lin(L, 27).reshape(1, 3, 3, 3), {})
        else:
            m, x, kw = (L.nn.Conv2d(2, 3, 2).to(dt),
                        _lin(L, 18).reshape(1, 2, 3, 3), {"dim": 1, "eps": 1e-6})
        x = x.to(dt)
        assert L.nn.utils.spectral_norm(m, n_power_iterations=2, **kw) is m
        init = (m.weight_u.clone(), m.weight_v.clone())
        ys = []
        for _ in range(3):
            y = m(x)
            (y * y).sum().backward()
            ys.append(y)
        m.eval()
        ys.append(m(x))
        sd = m.state_dict()
        meta = dict(sd._metadata[""])
        res.append((init, m.weight_u, m.weight_v, ys, m.weight_orig.grad, sd, meta,
                    [n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()]))
        L.nn.utils.remove_spectral_norm(m)
        res[-1] += (m.weight, [n for n, _ in m.named_parameters()],
                    [n for n, _ in m.named_buffers()], len(m._load_state_dict_pre_hooks),
                    len(m._state_dict_hooks))
    j, t = res
    _close(j[0][0], t[0][0], dtype)
    _close(j[0][1], t[0][1], dtype)
    _close(j[1], t[1], dtype)
    _close(j[2], t[2], dtype)
    for a, b in zip(j[3], t[3]):
        _close(a, b, dtype)
    _close(j[4], t[4], dtype)
    assert list(j[5]) == list(t[5])
    for k in t[5]:
        _close(j[5][k], t[5][k], dtype)
    assert j[6] == t[6] == {"version": 1, "spectral_norm": {"weight.version": 1}}
    assert j[7:9] == t[7:9]
    _close(j[9], t[9], dtype)
    assert j[10:] == t[10:]


def test_spectral_norm_hook_state_dict_roundtrip_and_version0_upgrade():
    res = []
    for L in LIBS:
        L.manual_seed(9)
        src = L.nn.utils.spectral_norm(L.nn.Linear(4, 3).double())
        src(L.ones(1, 4, dtype=L.float64))
        sd = src.state_dict()
        L.manual_seed(10)
        dst = L.nn.utils.spectral_norm(L.nn.Linear(4, 3).double())
        dst.load_state_dict(sd)
        # a version-0 checkpoint: the computed weight stored, no weight_v, no metadata
        old = {k: v for k, v in sd.items() if k != "weight_v"}
        old["weight"] = src.weight.detach()
        dst2 = L.nn.utils.spectral_norm(L.nn.Linear(4, 3).double())
        dst2.load_state_dict(old, strict=False)
        dst.eval()
        dst2.eval()
        x = _lin(L, 8).reshape(2, 4)
        res.append((dst.weight_v, dst(x), dst2.weight_v, dst2(x)))
    for a, b in zip(*res):
        _close(a, b)


def test_spectral_norm_hook_errors():
    def twice(T):
        m = T.nn.utils.spectral_norm(T.nn.Linear(2, 2))
        T.nn.utils.spectral_norm(m)
    raises_like(twice)
    raises_like(lambda T: T.nn.utils.remove_spectral_norm(T.nn.Linear(2, 2)))
    raises_like(lambda T: T.nn.utils.spectral_norm(T.nn.Linear(2, 2), n_power_iterations=0))
    raises_like(lambda T: T.nn.utils.spectral_norm(T.nn.Linear(2, 2, bias=False), "bias"))


def test_new_weight_norm_loads_old_g_v_state_dicts():
    res = []
    for L in LIBS:
        L.manual_seed(0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old = L.nn.utils.weight_norm(L.nn.Linear(3, 2))
        sd = old.state_dict()
        new = L.nn.utils.parametrizations.weight_norm(L.nn.Linear(3, 2))
        new.load_state_dict(sd)
        res.append((sorted(sd), new.weight, old.weight))
    assert res[0][0] == res[1][0] == ["bias", "weight_g", "weight_v"]
    _close(res[0][1], res[1][1], "float32")
    _close(res[0][1], res[0][2], "float32")


def test_normalize_out_writes_in_place():
    res = []
    for L in LIBS:
        x = L.tensor(np.linspace(-2, 3, 12).reshape(3, 4))
        out = L.empty(3, 4, dtype=L.float64)
        r = L.nn.functional.normalize(x, dim=0, eps=1e-3, out=out)
        assert r is out
        res.append(out)
    _close(*res)
