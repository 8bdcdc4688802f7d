"""optim.Muon against PyTorch's run in the same test: the bfloat16 rounding it emulates (bit for
bit), the Newton–Schulz orthogonalization and several optimizer steps (bfloat16 tolerance: the
float32 sums inside the products run in another order), constructor and step errors,
state_dict."""
import numpy as np
import pytest

import jitgrad
from jitgrad.optim.muon import _zeropower_via_newtonschulz, round_to_bfloat16
from tests._parity import agree

torch = pytest.importorskip("torch")
from torch.optim._muon import _zeropower_via_newtonschulz as torch_zeropower  # noqa: E402

BF16_ULP_AT_1 = 2.0 ** -7


def test_round_to_bfloat16_is_torchs_conversion():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(4000).astype(np.float32) * np.float32(1e3),
        rng.standard_normal(1000).astype(np.float32) * np.float32(1e-39),  # subnormals
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4e38, -3.4e38, 1e-45], np.float32),
    ])
    # ties: the dropped half exactly 0x8000, with the kept lowest bit odd and even
    ties = (rng.integers(0, 2 ** 15, 500, dtype=np.uint32) << 17) | 0x8000
    ties = np.concatenate([ties, ties | 0x10000]).view(np.float32)
    x = np.concatenate([x, ties[np.isfinite(ties)]])
    want = torch.from_numpy(x).bfloat16().float().numpy()
    got = round_to_bfloat16(jitgrad.from_numpy(x)).numpy()
    np.testing.assert_array_equal(got.view(np.uint32)[~np.isnan(want)],
                                  want.view(np.uint32)[~np.isnan(want)])
    assert np.array_equal(np.isnan(got), np.isnan(want))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (16, 16), (40, 24)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_newton_schulz_matches_torch(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    g = rng.standard_normal(shape).astype(dtype)
    coeffs = (3.4445, -4.7750, 2.0315)
    want = torch_zeropower(torch.from_numpy(g), coeffs, 5, 1e-7).float().numpy()
    got = _zeropower_via_newtonschulz(jitgrad.from_numpy(g), coeffs, 5, 1e-7).numpy()
    assert got.shape == want.shape
    # every element a bfloat16; most bit-equal, the rest within a few bfloat16 ulps
    np.testing.assert_array_equal(round_to_bfloat16(jitgrad.from_numpy(got)).numpy(), got)
    assert np.mean(got == want) > 0.9
    np.testing.assert_allclose(got, want, rtol=0, atol=4 * BF16_ULP_AT_1)


def _train(lib, shape, steps, dtype, **kw):
    lib.manual_seed(0)
    dt = getattr(lib, dtype)
    w = lib.nn.Parameter(lib.randn(*shape, dtype=dt))
    opt = lib.optim.Muon([w], lr=0.02, **kw)
    x = lib.randn(8, shape[1], dtype=dt)
    out = []
    for _ in range(steps):
        opt.zero_grad()
        (x @ w.T).tanh().pow(2).sum().backward()
        opt.step()
        out.append(w.detach().numpy().copy())
    sd = opt.state_dict()
    buf = sd["state"][0]["momentum_buffer"]
    return out, buf.numpy().copy(), sd["param_groups"], str(buf.dtype)


@pytest.mark.parametrize("shape,kw", [
    ((6, 4), {}),
    ((4, 9), {"nesterov": False, "weight_decay": 0.0}),
    ((12, 7), {"adjust_lr_fn": "match_rms_adamw", "momentum": 0.9}),
    ((7, 12), {"adjust_lr_fn": "original", "ns_steps": 3, "eps": 1e-5,
               "ns_coefficients": (2.0, -1.5, 0.5)}),
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_steps_match_torch(shape, kw, dtype):
    mine = _train(jitgrad, shape, 5, dtype, **kw)
    ref = _train(torch, shape, 5, dtype, **kw)
    # a bfloat16 ulp of the orthogonalized update (<= 2**-7 of |update| <= ~1.5) times lr
    for a, b in zip(mine[0], ref[0]):
        np.testing.assert_allclose(a, b, rtol=0, atol=5e-4)
    np.testing.assert_allclose(mine[1], ref[1], rtol=1e-3, atol=1e-4)
    assert mine[2] == ref[2] and mine[3].replace("jitgrad", "torch") == ref[3]


@pytest.mark.parametrize("make", [
    lambda lib, p: lib.optim.Muon([p], lr=-1),
    lambda lib, p: lib.optim.Muon([p], momentum=-0.5),
    lambda lib, p: lib.optim.Muon([p], weight_decay=-1),
    lambda lib, p: lib.optim.Muon([p], adjust_lr_fn="adamw"),
    lambda lib, p: lib.optim.Muon([p], lr=lib.tensor([1.0, 2.0])),
    lambda lib, p: lib.optim.Muon([p, lib.nn.Parameter(lib.ones(3))]),
    lambda lib, p: lib.optim.Muon([{"params": [p]}, {"params": [lib.nn.Parameter(
        lib.ones(1, 2, 3))], "lr": 0.5}]),
    lambda lib, p: repr(lib.optim.Muon([p])),
    lambda lib, p: lib.optim.Muon([p], lr=0.1, nesterov=False).state_dict(),
])
def test_constructor(make):
    agree(lambda lib: make(lib, lib.nn.Parameter(lib.ones(2, 3))))


@pytest.mark.parametrize("kw", [
    {"ns_steps": 100},
    {"ns_coefficients": (1.0, 2.0)},
    {"lr": "tensor0d"},
    {"lr": "tensor1d", "weight_decay": 0.3},
])
def test_step_errors_and_tensor_lr(kw):
    def run(lib):
        kw2 = dict(kw)
        if kw2.get("lr") == "tensor0d":
            kw2["lr"] = lib.tensor(0.1)
        elif kw2.get("lr") == "tensor1d":
            kw2["lr"] = lib.tensor([0.05])
        w = lib.nn.Parameter(lib.arange(6.0).reshape(2, 3))
        opt = lib.optim.Muon([w], **kw2)
        w.grad = lib.ones(2, 3)
        opt.step()
        w.grad = lib.full((2, 3), -2.0)
        opt.step()
        return w, opt.state_dict()
    agree(run)


def test_load_state_dict_continues_like_torch():
    def run(lib):
        lib.manual_seed(1)
        w = lib.nn.Parameter(lib.randn(3, 4))
        opt = lib.optim.Muon([w], lr=0.1)
        w.grad = lib.randn(3, 4)
        opt.step()
        w2 = lib.nn.Parameter(w.detach().clone())
        opt2 = lib.optim.Muon([w2], lr=0.7)
        opt2.load_state_dict(opt.state_dict())
        w2.grad = lib.randn(3, 4)
        opt2.step()
        return opt2.state_dict()["param_groups"], opt2.state_dict()["state"][0][
            "momentum_buffer"], (w2 - w).abs().max() > 0
    agree(run)
