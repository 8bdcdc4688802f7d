"""float16 CUDA tensors against jitgrad's CPU float16 path (simulator, own process)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest -q tests/cuda/test_device_float16.py

Both paths compute float16 in float32 and round the result to float16 (PyTorch's rule). On the
device every kernel that computes goes through ``cuda_kernels.common.half_as_float32`` (float32
copies of the float16 operands, the float32 kernel, one rounding of the result); elementwise ops
cast their operands to float32 and round their output, exactly as the CPU does.

Tolerances (per case):

* 0: bit-identical. Elementwise ops and their VJPs, indexing/gather/cat, max/min/argmax,
  matmul family, sum/mean over contiguous dims, norm/logsumexp/prod: the same float32
  computation rounded once on both sides (or pure data movement).
* 1: ``max|cuda - cpu| <= ulp16(max|cpu|)``, one float16 ulp *of the tensor's largest
  magnitude*. Where the CPU path does its arithmetic in float16 through NumPy, whose float16
  loops round every intermediate (``cumsum``'s running sums, a sum over non-adjacent dims,
  softmax's ``exp``/``sum``/divide, ``var``'s deviations, the composite backward formulas of
  var/softmax/log_softmax/cross_entropy), while the device keeps float32 and rounds once (what
  PyTorch does). Those CPU roundings are each half an ulp of an intermediate no larger than the
  tensor's magnitude, and ``g - sum(g*y)``-style cancellations turn them into many ulps of a
  *small* element, so an elementwise-ulp bound would not hold (measured: up to 12 ulps of
  elements near zero in softmax's gradient, where the device is the one within 1 ulp of a
  float64 reference); the normwise bound does, and still catches any real error.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F

F16 = np.float16


@pytest.fixture(autouse=True)
def _unfused():
    """Compare unfused graphs on both sides (float16 chains are never fused; this keeps the
    comparison independent of that planner rule)."""
    was = jg.fusion.is_fusion_enabled()
    jg.fusion.set_fusion_enabled(False)
    yield
    jg.fusion.set_fusion_enabled(was)


def ulps(a, b) -> int:
    """Largest distance in float16 steps between ``a`` and ``b`` (NaNs must coincide)."""
    a, b = np.asarray(a, F16), np.asarray(b, F16)
    assert a.shape == b.shape
    na, nb = np.isnan(a), np.isnan(b)
    assert np.array_equal(na, nb), "NaN positions differ"

    def ordered(x):
        u = x[~na].view(np.uint16).astype(np.int32)
        return np.where(u & 0x8000, -(u & 0x7FFF), u)

    if not (~na).any():
        return 0
    return int(np.max(np.abs(ordered(a) - ordered(b)), initial=0))


def close(got, want, tol) -> bool:
    """tol 0: bit-identical; tol 1: within one float16 ulp of ``want``'s largest magnitude."""
    if tol == 0:
        return ulps(got, want) == 0
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    unit = float(np.spacing(F16(np.max(np.abs(want), initial=0.0))))
    return bool(np.max(np.abs(got - want), initial=0.0) <= tol * unit)


def _run(fn, arrays, dev, seed):
    ts = [jg.tensor(a, device=dev, requires_grad=True) if a.dtype == F16
          else jg.tensor(a, device=dev) for a in arrays]
    y = fn(*ts)
    out = y.detach().cpu().numpy()
    grads = []
    if y.requires_grad:
        g = np.random.default_rng(seed).standard_normal(y.shape).astype(F16)
        y.backward(jg.tensor(g, device=dev))
        grads = [None if t.grad is None else t.grad.cpu().numpy() for t in ts]
        for t, gr in zip(ts, grads):
            if gr is not None:
                assert t.grad.dtype is jg.float16 and t.grad.device == t.device
    return out, y.dtype, grads


RNG = np.random.default_rng(7)


def h(*shape, lo=None):
    a = RNG.standard_normal(shape)
    if lo is not None:
        a = np.abs(a) + lo
    return a.astype(F16)


IDX = np.array([2, 0, 2])
GIDX = RNG.integers(0, 4, (3, 2))
COND = RNG.random((3, 4)) > 0.5
TGT = np.array([1, 0, 3])

# name, fn, arrays, max ulps
CASES = [
    ("add-broadcast", lambda a, b: a + b, (h(3, 4), h(4)), 0),
    ("sub-mul-scalars", lambda a: (a - 0.25) * 3 + 1, (h(3, 4),), 0),
    ("rsub-div", lambda a, b: 2.0 / b - a, (h(3, 4), h(3, 1, lo=0.5)), 0),
    ("pow-scalar", lambda a: a ** 2, (h(3, 4),), 0),
    # scalars not exact in half: mul/div read them as float, the others round them to half
    # first (registry ``half_scalar``), on both targets
    ("scalar-opmath", lambda a: a * 0.01 + a / 0.3 + 0.3 / a + (a // 0.3).detach(),
     (h(3, 4, lo=0.5),), 0),
    ("scalar-common", lambda a: (a + 0.013) * (0.013 - a) + a.fmod(0.3) + a.remainder(0.3)
     + a.abs() ** 0.31 + 1.3 ** a, (h(3, 4, lo=0.5),), 0),
    ("exp-log", lambda a: a.exp() + a.abs().log(), (h(3, 4, lo=0.1),), 0),
    ("sqrt-rsqrt", lambda a: a.sqrt() * a.rsqrt(), (h(2, 5, lo=0.2),), 0),
    ("sin-cos", lambda a: a.sin() - a.cos(), (h(3, 4),), 0),
    ("relu", lambda a: a.relu(), (h(3, 4),), 0),
    ("gelu", lambda a: F.gelu(a), (h(3, 4),), 0),
    ("sigmoid", lambda a: a.sigmoid(), (h(3, 4),), 0),
    ("tanh", lambda a: a.tanh(), (h(3, 4),), 0),
    ("where", lambda a, b, c: jg.where(c, a, b), (h(3, 4), h(4), COND), 0),
    ("clamp", lambda a: a.clamp(-0.5, 0.7), (h(3, 4),), 0),
    ("maximum-f16-f32", lambda a, b: jg.maximum(a, b.float()).half(), (h(3, 4), h(3, 4)), 0),
    ("compare", lambda a, b: (a > b).float() + (a <= 0).float(), (h(3, 4), h(4)), 0),
    ("transposed-view", lambda a, b: a.t() * b, (h(4, 3), h(3, 4)), 0),
    ("sum-all", lambda a: a.sum(), (h(3, 5),), 0),
    ("sum-dim-keepdim", lambda a: a.sum(1, keepdim=True), (h(3, 5),), 0),
    ("sum-dims", lambda a: a.sum((0, 2)), (h(2, 3, 4),), 1),
    ("mean-dim", lambda a: a.mean(0), (h(3, 5),), 0),
    ("amax-amin", lambda a: a.amax(1) - a.amin(0).sum(), (h(3, 5),), 0),
    ("max-min", lambda a: a.max() + a.min(), (h(3, 5),), 0),
    ("max-dim", lambda a: a.max(1).values, (h(3, 5),), 0),
    ("argmax", lambda a: a.argmax(1), (h(3, 5),), 0),
    ("var-std", lambda a: a.var(1) + a.std(0).sum(), (h(3, 5),), 1),
    ("norm", lambda a: a.norm() + a.norm(p=1, dim=1).sum(), (h(3, 5),), 0),
    ("logsumexp", lambda a: a.logsumexp(1), (h(3, 5),), 0),
    ("prod", lambda a: a.prod(1), (h(3, 4, lo=0.5),), 0),
    ("cumsum", lambda a: a.cumsum(1), (h(3, 5),), 1),
    ("matmul", lambda a, b: a @ b, (h(3, 4), h(4, 2)), 0),
    ("bmm", lambda a, b: jg.bmm(a, b), (h(2, 3, 4), h(2, 4, 2)), 0),
    ("addmm", lambda c, a, b: jg.addmm(c, a, b), (h(2), h(3, 4), h(4, 2)), 0),
    ("matvec", lambda a, v: a @ v, (h(3, 4), h(4)), 0),
    ("softmax", lambda a: a.softmax(1), (h(3, 5),), 1),
    ("log_softmax", lambda a: a.log_softmax(0), (h(3, 5),), 1),
    ("cross_entropy", lambda a, t: F.cross_entropy(a, t), (h(3, 4), TGT), 1),
    ("index-list", lambda a: a[IDX], (h(3, 4),), 0),
    ("index-tensor-slice", lambda a, i: a[i, 1:], (h(3, 4), IDX), 0),
    ("gather", lambda a, i: a.gather(1, i), (h(3, 4), GIDX), 0),
    ("index_select", lambda a, i: a.index_select(0, i), (h(3, 4), IDX), 0),
    ("cat-stack", lambda a, b: jg.cat([a, b]).sum(0) + jg.stack([a, a]).sum((0, 1)),
     (h(2, 4), h(3, 4)), 0),
]


@pytest.mark.parametrize("name,fn,arrays,tol", CASES, ids=[c[0] for c in CASES])
def test_float16_matches_cpu(device, name, fn, arrays, tol):
    out_c, dt_c, grads_c = _run(fn, arrays, "cpu", 1)
    out_d, dt_d, grads_d = _run(fn, arrays, "cuda", 1)
    assert dt_d is dt_c
    if out_c.dtype == F16:
        assert close(out_d, out_c, tol), (out_d, out_c)
    else:
        np.testing.assert_array_equal(out_d, out_c)
    assert len(grads_d) == len(grads_c)
    for gd, gc in zip(grads_d, grads_c):
        assert (gd is None) == (gc is None)
        if gc is not None:
            assert gd.dtype == F16 and close(gd, gc, tol), (gd, gc)


# 70000 -> inf: NumPy (the simulator's kernels and the expected values) warns about it
@pytest.mark.filterwarnings("ignore:overflow encountered in cast:RuntimeWarning")
def test_casts_both_ways(device):
    vals = np.array([-2.75, -1.5, -0.0, 0.0, 0.1, 1.5, 2.5, 2.7, 65504.0, 1e-7, np.inf, -np.inf,
                     np.nan])
    x64 = jg.tensor(vals, device="cuda")
    hx = x64.half()
    assert hx.is_cuda and hx.dtype is jg.float16
    want = vals.astype(F16)
    got = hx.cpu().numpy()
    assert got.dtype == F16 and np.array_equal(got.view(np.uint16), want.view(np.uint16))
    assert np.array_equal(x64.float().to(jg.float16).cpu().numpy().view(np.uint16),
                          vals.astype(np.float32).astype(F16).view(np.uint16))
    # float16 -> float32/float64 exact; -> bool (NaN is true); -> ints truncate toward zero
    assert np.array_equal(hx.float().cpu().numpy(), want.astype(np.float32), equal_nan=True)
    assert np.array_equal(hx.double().cpu().numpy(), want.astype(np.float64), equal_nan=True)
    assert hx.bool().cpu().numpy().tolist() == want.astype(bool).tolist()
    finite = jg.tensor(np.array([-2.75, -1.5, -0.5, 0.5, 1.5, 2.5, 2.7, 300.9], F16),
                       device="cuda")
    host = finite.cpu().numpy()
    for dt, npdt in ((jg.int64, np.int64), (jg.int32, np.int32), (jg.int16, np.int16)):
        assert finite.to(dt).cpu().numpy().tolist() == host.astype(npdt).tolist()
    assert finite.abs().to(jg.uint8).cpu().numpy().tolist() == \
        np.abs(host).astype(np.uint8).tolist()
    ints = jg.tensor([-3, 0, 2049, 70000], device="cuda")
    assert np.array_equal(ints.half().cpu().numpy(),
                          np.array([-3, 0, 2049, 70000]).astype(F16))
    assert jg.tensor([True, False], device="cuda").half().cpu().numpy().tolist() == [1.0, 0.0]
    # factories and .to(device, dtype)
    t = jg.tensor([[1.0, 2.0], [3.0, 4.5]], dtype=jg.float16, device="cuda")
    assert t.dtype is jg.float16 and t.tolist() == [[1.0, 2.0], [3.0, 4.5]]
    assert jg.zeros(2, dtype=jg.float16, device="cuda").cpu().numpy().dtype == F16
    assert jg.full((2,), 0.1, dtype=jg.float16, device="cuda").cpu().numpy().tolist() == \
        [float(F16(0.1))] * 2
    assert jg.ones(2).to("cuda", jg.float16).dtype is jg.float16
    # non-contiguous float16 views cast through their strides
    v = t.t()
    assert v.float().cpu().numpy().tolist() == [[1.0, 3.0], [2.0, 4.5]]


def test_float16_gradient_of_a_cast_is_float32_to_float16(device):
    x = jg.tensor([0.1, 0.2, 0.3], device="cuda", requires_grad=True)
    y = (x.half() * 3).float().sum()
    y.backward()
    assert x.grad.dtype is jg.float32 and x.grad.tolist() == [3.0, 3.0, 3.0]


def test_scatter_add_and_index_put_accumulate_in_float32(device):
    """Duplicate-index gradients (gather/indexing backward) accumulate in float32 and are rounded
    once: 0.1 added 7 times then rounded (PyTorch's result), not rounded after every add."""
    idx = [0] * 7
    for dev in ("cuda",):
        x = jg.zeros(3, dtype=jg.float16, device=dev, requires_grad=True)
        g = jg.full((7,), 0.1, dtype=jg.float16, device=dev)
        x[idx].backward(g)
        assert x.grad.cpu().numpy()[0] == F16(np.float32(F16(0.1)) * 7)
        x.grad = None
        x.gather(0, jg.tensor(idx, device=dev)).backward(g)
        assert x.grad.cpu().numpy()[0] == F16(np.float32(F16(0.1)) * 7)


def test_float16_chain_is_not_fused_and_matches_the_cpu(device):
    """float16 elementwise chains are not fused (fusion/planner.py): every node rounds its
    gradient to float16, as PyTorch's nodes do, on the device as on the CPU — so the two agree
    bit for bit, even on an ill-conditioned chain."""
    a = h(3, 4)

    def grad(dev):
        x = jg.tensor(a, device=dev, requires_grad=True)
        ((x * x).sin() * 3 + x).tanh().sum().backward()
        return x.grad

    jg.fusion.set_fusion_enabled(True)
    want = grad("cpu").numpy()
    before = jg.fusion.stats.fused_groups
    got = grad("cuda")
    assert jg.fusion.stats.fused_groups == before
    assert got.dtype is jg.float16
    assert close(got.cpu().numpy(), want, 0)


def test_float16_mlp_makes_no_hidden_transfers(device):
    """A float16 2-layer MLP forward + backward on CUDA: 0 h2d/0 d2h between the uploads and
    the test's downloads; the loss as on the CPU (normwise 1 ulp), the gradients within 2 ulps
    normwise: log_softmax's CPU backward formula computes in float16 (1 ulp, see the module
    docstring) and the matmul backward sums over those differences once more."""
    rng = np.random.default_rng(3)
    X = rng.standard_normal((4, 3)).astype(F16)
    params = [rng.standard_normal(s).astype(F16) for s in ((3, 5), (5,), (5, 2))]
    T = np.array([0, 1, 1, 0])

    def run(dev):
        x = jg.tensor(X, device=dev)
        w1, b1, w2 = [jg.tensor(p, device=dev, requires_grad=True) for p in params]
        t = jg.tensor(T, device=dev)
        device.reset_stats()
        logp = ((x @ w1 + b1).relu() @ w2).log_softmax(dim=1)
        loss = -logp.gather(1, t.unsqueeze(1)).mean()
        loss.backward()
        return loss, [w1.grad, b1.grad, w2.grad], device.stats.snapshot()

    loss_c, grads_c, _ = run("cpu")
    loss_d, grads_d, counted = run("cuda")
    assert counted["h2d"] == 0 and counted["d2h"] == 0, counted
    assert loss_d.dtype is jg.float16 and all(g.dtype is jg.float16 for g in grads_d)
    assert close(loss_d.detach().cpu().numpy(), loss_c.detach().numpy(), 1)
    for gd, gc in zip(grads_d, grads_c):
        assert close(gd.cpu().numpy(), gc.numpy(), 2)
