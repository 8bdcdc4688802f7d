"""Adam/AdamW against PyTorch bit for bit, over a parameter long enough that the host kernel's
vectorized loop and its scalar tail both run (the element rule ``_kernels.adam_rules`` is
shared with the CUDA kernels and must keep the host loop vectorized and exact).

The moments (exp_avg, exp_avg_sq, max_exp_avg_sq) match exactly, step after step. PyTorch's CPU
``sqrt`` is MKL's vector math (``vm?Sqrt``, 1 ulp off the correctly rounded root for ~17% of
float32 values): where MKL is loaded jitgrad calls the same routine (``_kernels.adam_step_vml``)
and the parameter matches in every bit; without MKL the kernel's root is correctly rounded, so
the parameter matches exactly where PyTorch's root does and within an ulp of the step
elsewhere.
The parameter is long enough for two of ``adam_step_vml``'s blocks, the second a short one."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.backends import vml
from tests._parity import agree

torch = pytest.importorskip("torch", reason="needs PyTorch")

N = 4099  # not a multiple of any vector width (the scalar tail runs) nor of VML's block
RNG = np.random.default_rng(7)
P0 = RNG.standard_normal(N)
GRADS = [RNG.standard_normal(N) for _ in range(3)]
GRADS[1][::13] = 0.0

CASES = [("Adam", {}), ("Adam", dict(amsgrad=True, weight_decay=0.1)),
         ("Adam", dict(betas=(0.8, 0.9), eps=1e-6, maximize=True, weight_decay=0.05)),
         ("AdamW", {}), ("AdamW", dict(amsgrad=True, maximize=True)),
         ("AdamW", dict(weight_decay=0.1))]


def _one_step_from_state(lib, name, kw, dtype, foreach):
    """One step from a shared mid-run state (step 3, the starting parameter, random moments),
    so the moments' bits depend only on the update rule, not on earlier steps."""
    dt = getattr(lib, dtype)
    rng = np.random.default_rng(11)
    p = lib.tensor(P0, dtype=dt, requires_grad=True)
    opt = getattr(lib.optim, name)([p], lr=0.01, foreach=foreach, **kw)
    p.grad = lib.tensor(GRADS[0], dtype=dt)
    opt.step()  # creates the state
    st = opt.state[p]
    with lib.no_grad():
        p.copy_(lib.tensor(P0, dtype=dt))  # (its first step may differ by PyTorch's sqrt)
        st["exp_avg"].copy_(lib.tensor(rng.standard_normal(N) * 0.1, dtype=dt))
        v = np.abs(rng.standard_normal(N)) * 0.01
        st["exp_avg_sq"].copy_(lib.tensor(v, dtype=dt))
        if "max_exp_avg_sq" in st:
            # half the running maxima above the new second moment, half below
            st["max_exp_avg_sq"].copy_(lib.tensor(v * rng.uniform(0.5, 1.5, N), dtype=dt))
        st["step"].fill_(2.0)
    p.grad = lib.tensor(GRADS[1], dtype=dt)
    opt.step()
    return p, st


@pytest.mark.parametrize("foreach", [False, True], ids=["single", "foreach"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_adam_moments_bitwise(name, kw, dtype, foreach):
    def run(lib):
        _, st = _one_step_from_state(lib, name, kw, dtype, foreach)
        return [st[k] for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if k in st]
    agree(run)


def _mkl_sqrt(dtype):
    """Whether jitgrad takes Adam's root with MKL's routine for ``dtype`` (MKL is loaded)."""
    return vml.routine("sqrt", np.dtype(dtype)) != 0


def _bits(a):
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.parametrize("foreach", [None, False, True], ids=["default", "single", "foreach"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_adam_param_bitwise(name, kw, dtype, foreach):
    """Every element of the parameter in every bit, against PyTorch's single-tensor path (its
    CPU default), its foreach path (the same ``sqrt``), and its default."""
    if not _mkl_sqrt(dtype):
        pytest.skip("MKL is not loaded: PyTorch's sqrt is not available "
                    "(test_adam_param_bitwise_where_torch_sqrt_is_exact covers this case)")
    pj, _ = _one_step_from_state(jg, name, kw, dtype, foreach)
    pt, _ = _one_step_from_state(torch, name, kw, dtype, foreach)
    got, want = pj.detach().numpy(), pt.detach().numpy()
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_fused_adam_param_bitwise(name, kw, dtype):
    """``fused=True``: PyTorch's fused CPU kernel takes a correctly rounded sqrt (not MKL's),
    and so does jitgrad's kernel there, MKL or not: every bit of the parameter."""
    pj, _ = _one_step_from_state(jg, name, dict(kw, fused=True), dtype, None)
    pt, _ = _one_step_from_state(torch, name, dict(kw, fused=True), dtype, None)
    np.testing.assert_array_equal(_bits(pj.detach().numpy()), _bits(pt.detach().numpy()))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_adam_steps_from_zero_bitwise(name, kw, dtype):
    """Three steps from fresh state, a gradient with NaN, +-inf and +-0 at the second: the
    parameter keeps PyTorch's bits (NaN payloads included), the moments its values (a NaN
    running max is ATen's all-ones NaN in its vector loop, which is not followed here)."""
    if not _mkl_sqrt(dtype):
        pytest.skip("MKL is not loaded: PyTorch's sqrt is not available")
    grads = [g.copy() for g in GRADS]
    grads[1][[5, 600, 4097, 4098]] = [np.nan, np.inf, -np.inf, -0.0]

    def run(lib):
        dt = getattr(lib, dtype)
        p = lib.tensor(P0, dtype=dt, requires_grad=True)
        opt = getattr(lib.optim, name)([p], lr=0.01, **kw)
        for g in grads:
            p.grad = lib.tensor(g, dtype=dt)
            opt.step()
        st = opt.state[p]
        return [_bits(p.detach().numpy())] + [
            st[k].numpy().copy() for k in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq") if k in st]

    # (assert_array_equal: exact, NaN where the other has NaN, -0.0 == 0.0 only in moments)
    for got, want in zip(run(jg), run(torch), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name,kw", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_adam_param_bitwise_where_torch_sqrt_is_exact(name, kw, dtype, monkeypatch):
    """Without MKL (forced here: no VML routine) the kernel's correctly rounded root: the
    parameter is exact where PyTorch's root is, within an ulp of the step elsewhere."""
    monkeypatch.setattr(vml, "routine", lambda name, dtype: 0)
    pj, stj = _one_step_from_state(jg, name, kw, dtype, False)
    pt, stt = _one_step_from_state(torch, name, kw, dtype, False)
    got, want = pj.detach().numpy(), pt.detach().numpy()
    vmax = (stt["max_exp_avg_sq"] if "max_exp_avg_sq" in stt else stt["exp_avg_sq"]).numpy()
    # PyTorch's sqrt against the correctly rounded one (float64 sqrt of a float32 value,
    # rounded once: exact for float32; NumPy's own sqrt for float64)
    exact = np.sqrt(vmax.astype(np.float64)).astype(vmax.dtype)
    same_sqrt = torch.from_numpy(vmax).sqrt().numpy() == exact
    assert same_sqrt.mean() > 0.5  # (the comparison below covers most elements)
    np.testing.assert_array_equal(got[same_sqrt], want[same_sqrt])
    # elsewhere the denominators differ by an ulp: the step by about an ulp of itself
    step = np.abs(want - P0.astype(want.dtype))
    ulp = np.finfo(want.dtype).eps
    assert np.all(np.abs(got - want)[~same_sqrt] <= 4 * ulp * (step + np.abs(want))[~same_sqrt])
