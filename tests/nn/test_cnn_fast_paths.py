"""The small-CNN fast paths against PyTorch, on both sides of every size threshold:

* the normalization row kernels run serially below ``_norm_kernels.PARALLEL_MIN_ELEMENTS`` and
  in parallel from it (batch norm's per-channel statistics and gradient sums, group norm's
  rows); batch norm's running statistics are updated on the arrays;
* max pools whose windows are regular (no padding, dilation or clipped window) take the 2-D
  kernel ``pool_cpu.max_pool2d_regular`` (serial below ``cpu.PARALLEL_THRESHOLD``, parallel
  from it); the others stay on the generic window kernel.

Each test checks which kernel ran (a spy on the module attribute the dispatcher reads), so a
threshold that moves cannot leave a side untested.

    python -m pytest -q tests/nn/test_cnn_fast_paths.py
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

import jitgrad as jg
import jitgrad.nn.functional as F
from jitgrad.autograd import gradcheck, gradgradcheck
from jitgrad.backends import cpu as cpu_backend
from jitgrad.backends import pool_cpu
from jitgrad.nn.functional import _norm_kernels as K
from jitgrad.ops.pool import Windows

TF = torch.nn.functional
RNG = np.random.default_rng(13)
TOL = {np.float32: dict(rtol=2e-5, atol=2e-5), np.float64: dict(rtol=1e-10, atol=1e-11)}


@pytest.fixture
def calls(monkeypatch):
    """Counts calls of the named kernels (module attributes looked up at call time)."""
    seen = {}

    def spy(module, *names):
        for name in names:
            fn = getattr(module, name)

            def counted(*args, _fn=fn, _name=name):
                seen[_name] = seen.get(_name, 0) + 1
                return _fn(*args)
            monkeypatch.setattr(module, name, counted)
        return seen
    return spy


def _run(lib, fn, arrays, grad_idx, seed=0):
    ts = [lib.tensor(a, requires_grad=i in grad_idx) for i, a in enumerate(arrays)]
    out = fn(lib, *ts)
    r = np.random.default_rng(seed).standard_normal(tuple(out.shape)).astype(arrays[0].dtype)
    (out * lib.tensor(r)).sum().backward()
    return out.detach().numpy(), [ts[i].grad.numpy() for i in grad_idx], out.grad_fn.name() \
        if hasattr(out.grad_fn, "name") else type(out.grad_fn).__name__


def _compare(fn, arrays, grad_idx, tol, exact_reference=False):
    """``exact_reference``: PyTorch runs in float64 (its float32 CPU batch norm sums in float32,
    jitgrad's in float64 as ATen's older kernels: over 10^5 elements the gradient sums then
    differ by more than float32's tolerance, jitgrad's being the accurate ones)."""
    o1, g1, n1 = _run(jg, fn, arrays, grad_idx)
    o2, g2, n2 = _run(torch, fn, [a.astype(np.float64) for a in arrays] if exact_reference
                      else arrays, grad_idx)
    if exact_reference:
        o2, g2 = o2.astype(o1.dtype), [g.astype(o1.dtype) for g in g2]
    assert o1.dtype == o2.dtype and o1.shape == o2.shape
    np.testing.assert_allclose(o1, o2, **tol)
    for a, b in zip(g1, g2):
        np.testing.assert_allclose(a, b, **tol)
    assert n1 == n2


# ----------------------------------------------------------------------------- normalization

SMALL = (6, 5, 4, 3)  # 360 elements
LARGE = (2, 4, 128, 130)  # 133120 >= 2^17


def _side(shape):
    return "parallel" if int(np.prod(shape)) >= K.PARALLEL_MIN_ELEMENTS else "serial"


def test_sizes_straddle_the_threshold():
    assert _side(SMALL) == "serial" and _side(LARGE) == "parallel"


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [SMALL, LARGE])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_both_sides_of_the_threshold(calls, shape, dt, training):
    from jitgrad.nn.functional import _batch_norm_aten as A
    seen = calls(K, "batch_norm_stats_serial", "batch_norm_stats_parallel",
                 "batch_norm_backward_serial", "channel_grad_sums_serial",
                 "channel_grad_sums_parallel", "row_affine_serial", "row_affine_parallel",
                 "row_affine2_serial", "row_affine2_parallel")
    from jitgrad.nn.functional import _batch_norm_backward_aten as BA
    calls(A, "_stats_serial", "_stats_parallel", "_affine_serial", "_affine_parallel")
    calls(BA, "_planes_serial", "_planes_parallel")
    c = shape[1]
    x = (RNG.standard_normal(shape) * 3 + 1.5).astype(dt)
    w, b = RNG.standard_normal(c).astype(dt), RNG.standard_normal(c).astype(dt)
    rm, rv = RNG.standard_normal(c).astype(dt), RNG.random(c).astype(dt) + 0.5
    stats = {}

    def fn(lib, x, w, b):
        m, v = lib.tensor(rm).to(x.dtype), lib.tensor(rv).to(x.dtype)
        out = FF(lib).batch_norm(x, m, v, w, b, training, 0.3, 1e-4)
        stats[lib] = (m.numpy(), v.numpy())
        return out
    # against PyTorch in the same dtype: the backward now sums float32 planes as ATen does
    _compare(fn, [x, w, b], (0, 1, 2), TOL[dt])
    for a, e in zip(stats[jg], stats[torch]):
        np.testing.assert_allclose(a, e.astype(dt), rtol=1e-12 if dt == np.float64 else 1e-6)
    side = _side(shape)
    # ATen's arithmetic both ways: the forward _batch_norm_aten, the backward (sums and input
    # gradient in one call, training or eval) _batch_norm_backward_aten
    if training:
        assert set(seen) == {f"_stats_{side}", f"_affine_{side}", f"_planes_{side}"}
    else:  # eval: no statistics
        assert set(seen) == {f"_affine_{side}", f"_planes_{side}"}
    other = "serial" if side == "parallel" else "parallel"
    assert not [k for k in seen if k.endswith(other)]


@pytest.mark.parametrize("shape", [SMALL, LARGE])
def test_group_norm_both_sides_of_the_threshold(calls, shape):
    seen = calls(K, "row_moments_serial", "row_moments_parallel", "row_grad_sums_serial",
                 "row_grad_sums_parallel", "row_affine_serial", "row_affine_parallel",
                 "row_affine2_serial", "row_affine2_parallel")
    x = RNG.standard_normal(shape).astype(np.float32)
    w, b = RNG.standard_normal(shape[1]).astype(np.float32), RNG.standard_normal(
        shape[1]).astype(np.float32)
    _compare(lambda lib, x, w, b: FF(lib).group_norm(x, 2 if shape[1] % 2 == 0 else 1, w, b),
             [x, w, b], (0, 1, 2), dict(rtol=1e-4, atol=1e-4))
    side = _side(shape)
    assert {k.rsplit("_", 1)[1] for k in seen} == {side}
    assert len(seen) == 4


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("dt", [np.float16, np.float32, np.float64])
def test_running_statistics_over_steps(momentum, dt):
    mods = {lib: lib.nn.BatchNorm2d(3, momentum=momentum).to(getattr(lib, np.dtype(dt).name))
            for lib in (jg, torch)}
    for step in range(4):
        xb = (RNG.standard_normal((4, 3, 3, 2)) * 2 + step).astype(dt)
        for lib, m in mods.items():
            m(lib.tensor(xb))
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            a, e = getattr(mods[jg], name), getattr(mods[torch], name)
            assert str(a.dtype) == str(e.dtype)
            rtol = {np.float16: 1e-3, np.float32: 1e-6, np.float64: 1e-13}[dt]
            np.testing.assert_allclose(a.numpy().astype(np.float64),
                                       e.numpy().astype(np.float64), rtol=rtol)


def test_running_statistics_written_into_their_storage_version_kept_as_torch():
    """ATen's batch-norm kernels write the running buffers directly: their version counters
    do not move (a view of the buffer sees the new values)."""
    x = RNG.standard_normal((4, 3, 2, 2)).astype(np.float32)
    versions = {}
    for lib in (jg, torch):
        m = lib.nn.BatchNorm2d(3)
        mean_view = m.running_mean[:]  # a view shares the storage and the version counter
        before = (m.running_mean._version, m.running_var._version)
        m(lib.tensor(x))
        versions[lib] = before, (m.running_mean._version, m.running_var._version)
        np.testing.assert_array_equal(mean_view.numpy(), m.running_mean.numpy())
        assert mean_view._version == m.running_mean._version
    assert versions[jg] == versions[torch]


def test_running_statistics_of_strided_buffers_match_torch():
    stats = {}
    x = RNG.standard_normal((5, 3, 4)).astype(np.float32)
    for lib in (jg, torch):
        buf = lib.tensor(np.stack([np.zeros(3), np.ones(3)], 1).astype(np.float32))  # (3, 2)
        FF(lib).batch_norm(lib.tensor(x), buf[:, 0], buf[:, 1], training=True, momentum=0.4)
        stats[lib] = buf.numpy()
    np.testing.assert_allclose(stats[jg], stats[torch], rtol=1e-6)


def test_batch_norm_nan_inf_and_channels_last():
    x = RNG.standard_normal((4, 3, 5, 5)).astype(np.float32)
    x[1, 0, 2, 2] = np.nan
    x[2, 1, 0, 0] = np.inf
    for lib in (jg, torch):
        out = FF(lib).batch_norm(lib.tensor(x), None, None, training=True).numpy()
        if lib is jg:
            got = out
    np.testing.assert_array_equal(np.isnan(got), np.isnan(out))
    ok = ~np.isnan(out)
    np.testing.assert_allclose(got[ok], out[ok], rtol=1e-5, atol=1e-5)
    cl = RNG.standard_normal((4, 5, 5, 3)).astype(np.float32)  # NHWC memory, NCHW view
    _compare(lambda lib, t: FF(lib).batch_norm(t.permute(0, 3, 1, 2), None, None,
                                               training=True), [cl], (0,), TOL[np.float32])


def test_batch_norm_double_backward_small():
    x = jg.tensor(RNG.standard_normal((3, 2, 4)), requires_grad=True)
    w = jg.tensor(RNG.standard_normal(2), requires_grad=True)
    assert gradgradcheck(lambda x, w: F.batch_norm(x, None, None, w, None, True), (x, w))


def FF(lib):
    return F if lib is jg else TF


# ----------------------------------------------------------------------------- max pools


@pytest.mark.parametrize("n_in,k,s,p,d,ceil,regular", [
    (8, 2, 2, 0, 1, False, (2, 2)),
    (9, 2, 2, 0, 1, False, (2, 2)),  # the last row is not read (floor)
    (8, 2, 2, 0, 1, True, (2, 2)),  # ceil mode without a partial window
    (9, 2, 2, 0, 1, True, None),  # ceil mode: the last window is clipped
    (7, 3, 1, 0, 1, False, (3, 1)),  # overlapping windows
    (8, 2, 2, 1, 1, False, None),  # padding
    (8, 2, 1, 0, 2, False, None),  # dilation
    (1, 1, 1, 0, 1, False, (1, 1)),
])
def test_windows_regular(n_in, k, s, p, d, ceil, regular):
    from jitgrad.nn.functional.pooling import _max_windows, _out_size
    n_out = _out_size(n_in, k, p, s, d, ceil)
    assert _max_windows(n_in, k, s, p, d, n_out).regular == regular


def test_windows_regular_adaptive():
    assert Windows(np.array([0, 2, 4, 6]), np.array([2, 4, 6, 8]), 1, 8).regular == (2, 2)
    assert Windows(np.array([0, 2, 4]), np.array([3, 5, 7]), 1, 7).regular == (3, 2)
    assert Windows(np.array([0, 2, 4]), np.array([3, 5, 8]), 1, 8).regular is None


MAX2D_REGULAR = [  # (shape, kernel, stride, ceil_mode)
    ((2, 3, 8, 8), 2, None, False),
    ((2, 3, 9, 7), 2, 2, False),
    ((2, 3, 8, 8), 2, 2, True),
    ((2, 3, 7, 9), 3, 1, False),
    ((2, 3, 9, 10), (2, 3), (1, 2), False),
    ((3, 6, 5), (1, 2), (1, 2), False),  # no batch dim
    ((0, 3, 4, 4), 2, 2, False),  # empty batch
]


def _max_pool_both(x, *args, **kwargs):
    res = []
    for lib in (jg, torch):
        t = lib.tensor(x, requires_grad=x.dtype.kind == "f" and x.size > 0)
        out, idx = FF(lib).max_pool2d(t, *args, return_indices=True, **kwargs)
        g = None
        if t.requires_grad:
            w = np.random.default_rng(1).standard_normal(tuple(out.shape)).astype(x.dtype)
            (out * lib.tensor(w)).sum().backward()
            g = t.grad.numpy()
        res.append((out, idx, g))
    (o1, i1, g1), (o2, i2, g2) = res
    assert tuple(o1.shape) == tuple(o2.shape) and str(o1.dtype) == str(o2.dtype)
    np.testing.assert_array_equal(o1.detach().numpy(), o2.detach().numpy())  # NaN == NaN
    np.testing.assert_array_equal(i1.numpy(), i2.numpy())
    if g1 is not None:
        np.testing.assert_array_equal(g1, g2)
        assert o1.grad_fn.name() == o2.grad_fn.name()


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,k,s,ceil", MAX2D_REGULAR)
def test_regular_max_pool2d_matches_torch(calls, shape, k, s, ceil, dt):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    x = RNG.standard_normal(shape).astype(dt)
    _max_pool_both(x, k, s, 0, 1, ceil)
    if x.size:
        assert seen == {"max_pool2d_regular": 1}


def test_irregular_max_pools_stay_on_the_window_kernel(calls):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    x = RNG.standard_normal((2, 3, 9, 9)).astype(np.float32)
    _max_pool_both(x, 2, 2, 0, 1, True)  # clipped last window
    _max_pool_both(x, 3, 2, 1)  # padding
    _max_pool_both(x, 2, 1, 0, 2)  # dilation
    assert seen == {"window_max": 3}


def test_regular_max_pool_ties_nan_and_inf_choose_pytorchs_index(calls):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    x = RNG.integers(0, 3, (2, 3, 8, 8)).astype(np.float32)  # many ties
    x[0, 0, 0, 0] = x[0, 0, 1, 1] = np.nan  # two NaNs in one window: the last one's index
    x[0, 1, 2, 3] = np.nan
    x[1, 0, 4:6, 4:6] = -np.inf  # a window of -inf: its first index
    x[1, 1, 0, 1] = np.inf
    x[1, 2, 6, 6] = -np.inf
    _max_pool_both(x, 2)
    _max_pool_both(x, 3, 1)
    _max_pool_both(x, (2, 3), (2, 1))
    assert seen == {"max_pool2d_regular": 3}


def test_regular_max_pool_integers_float16_and_layouts(calls):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    for dt in (np.int64, np.int32, np.uint8):
        xi = RNG.integers(0, 5, (2, 3, 6, 6)).astype(dt)
        _max_pool_both(xi, 2)
    h = RNG.standard_normal((2, 3, 6, 8)).astype(np.float16)
    jo, ji = F.max_pool2d(jg.tensor(h), 2, return_indices=True)
    to, ti = TF.max_pool2d(torch.tensor(h), 2, return_indices=True)
    assert jo.dtype == jg.float16
    np.testing.assert_array_equal(jo.numpy(), to.numpy())
    np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    nhwc = RNG.standard_normal((2, 8, 6, 3))
    got = []
    for lib in (jg, torch):  # channels-last memory and a strided view, made on each side
        t = lib.tensor(nhwc, requires_grad=True)
        for view in (t.permute(0, 3, 1, 2), t.permute(0, 3, 1, 2)[..., ::2, :]):
            out, idx = FF(lib).max_pool2d(view, 2, return_indices=True)
            out.sum().backward()
            got.append((out.detach().numpy(), idx.numpy(), t.grad.numpy().copy()))
    for a, e in zip(got[:2], got[2:]):
        for u, v in zip(a, e):
            np.testing.assert_array_equal(u, v)
    assert seen == {"max_pool2d_regular": 6}


def test_regular_max_pool1d_and_adaptive(calls):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    x = RNG.standard_normal((2, 3, 10))
    for lib_args in ((2,), (3, 1)):
        jo, ji = F.max_pool1d(jg.tensor(x), *lib_args, return_indices=True)
        to, ti = TF.max_pool1d(torch.tensor(x), *lib_args, return_indices=True)
        np.testing.assert_array_equal(jo.numpy(), to.numpy())
        np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    x4 = RNG.standard_normal((2, 3, 8, 6))
    for size in ((4, 3), (3, 4)):  # 8 -> 4 and 6 -> 3 are regular, 8 -> 3 and 6 -> 4 are not
        jo, ji = F.adaptive_max_pool2d(jg.tensor(x4), size, return_indices=True)
        to, ti = TF.adaptive_max_pool2d(torch.tensor(x4), size, return_indices=True)
        np.testing.assert_array_equal(jo.numpy(), to.numpy())
        np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    assert seen == {"max_pool2d_regular": 3, "window_max": 1}


@pytest.mark.parametrize("planes,side", [(8, "serial"), (300, "parallel")])
def test_regular_max_pool_both_sides_of_the_threshold(calls, planes, side):
    seen = calls(pool_cpu, "_max2d_serial", "_max2d_parallel")
    shape = (planes, 1, 30, 32)
    assert (np.prod(shape) >= cpu_backend.PARALLEL_THRESHOLD) == (side == "parallel")
    x = RNG.integers(-4, 4, shape).astype(np.float32)  # ties across chunk boundaries
    x[-1, 0, -1, -1] = np.nan
    _max_pool_both(x, 2)
    _max_pool_both(x, (3, 2), (3, 2))
    assert seen == {f"_max2d_{side}": 2}


def test_regular_max_pool_gradients_of_every_order():
    x = jg.tensor(RNG.permutation(192).reshape(2, 3, 4, 8) / 7.0, requires_grad=True)
    for fn in (lambda t: F.max_pool2d(t, 2), lambda t: F.max_pool2d(t, (2, 3), (1, 2))):
        assert gradcheck(fn, (x,))
        assert gradgradcheck(fn, (x,))
    (g,) = jg.autograd.grad(F.max_pool2d(x, 2).pow(2).sum(), x, create_graph=True)
    assert g.grad_fn.name() == "MaxPool2DWithIndicesBackwardBackward0"


def test_max_pool_geometry_cache_takes_lists_and_keeps_raising():
    x = RNG.standard_normal((2, 3, 8, 6))
    for args in (([2, 3], [2, 1]), ((2, 3), (2, 1)), ([2, 3], [2, 1])):  # lists: uncached
        jo, ji = F.max_pool2d(jg.tensor(x), *args, return_indices=True)
        to, ti = TF.max_pool2d(torch.tensor(x), *args, return_indices=True)
        np.testing.assert_array_equal(jo.numpy(), to.numpy())
        np.testing.assert_array_equal(ji.numpy(), ti.numpy())
    for _ in range(2):  # an error is raised on every call, never cached as a result
        with pytest.raises(RuntimeError, match="pad should be at most half"):
            F.max_pool2d(jg.tensor(x), 2, 2, 2)
        with pytest.raises(RuntimeError) as e:
            TF.max_pool2d(torch.tensor(x), 2, 2, 2)
        assert "pad should be at most half" in str(e.value)
    with pytest.raises(NotImplementedError):  # the dtype is checked after the cached geometry
        F.max_pool2d(jg.tensor(x > 0), 2)


def test_max_pool3d_of_one_deep_planes_takes_the_2d_kernel(calls):
    seen = calls(pool_cpu, "max_pool2d_regular", "window_max")
    x = RNG.integers(-3, 3, (2, 3, 1, 6, 8)).astype(np.float64)
    x[0, 0, 0, 0, 0] = np.nan
    for args in (((1, 2, 2),), ((3, 2, 2), (1, 2, 2), (1, 0, 0)), ((2, 2, 2), 1, (1, 0, 0))):
        res = []
        for lib in (jg, torch):
            t = lib.tensor(x, requires_grad=True)
            out, idx = FF(lib).max_pool3d(t, *args, return_indices=True)
            out.sum().backward()
            res.append((out.detach().numpy(), idx.numpy(), t.grad.numpy()))
        for a, e in zip(*res):
            np.testing.assert_array_equal(a, e)
    # (2, 2, 2) with depth padding 1 has two depth windows over one plane: the generic kernel
    assert seen == {"max_pool2d_regular": 2, "window_max": 1}


# ----------------------------------------------------------------------------- cross_entropy


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_cross_entropy_common_case_matches_torch(calls, dt, reduction):
    from jitgrad.nn.functional import loss_classification as LC
    seen = calls(LC, "_log_softmax_rows")
    x = (RNG.standard_normal((7, 5)) * 3).astype(dt)
    x[1] = [np.inf, 0, 1, 2, 3]  # inf - inf is NaN: the row's loss and gradients are NaN
    x[2, 3] = -np.inf
    y = RNG.integers(0, 5, 7)
    res = []
    for lib in (jg, torch):
        t = lib.tensor(x, requires_grad=True)
        loss = FF(lib).cross_entropy(t, lib.tensor(y), reduction=reduction)
        loss.backward()
        lsm_node = loss.grad_fn.next_functions[0][0]
        res.append((loss.detach().numpy(), t.grad.numpy(), loss.grad_fn.name(),
                    lsm_node.name()))
    (l1, g1, *n1), (l2, g2, *n2) = res
    assert l1.dtype == l2.dtype and n1 == n2 == ["NllLossBackward0", "LogSoftmaxBackward0"]
    np.testing.assert_array_equal(np.isnan(g1), np.isnan(g2))
    np.testing.assert_allclose(l1, l2, **TOL[dt])
    ok = ~np.isnan(g2)
    np.testing.assert_allclose(g1[ok], g2[ok], **TOL[dt])
    x[1] = 0.0  # finite: a finite loss
    for lib in (jg, torch):
        out = FF(lib).cross_entropy(lib.tensor(x), lib.tensor(y), reduction=reduction)
        res.append(out.numpy())
    np.testing.assert_allclose(res[-2], res[-1], **TOL[dt])
    assert seen == {"_log_softmax_rows": 2}


def test_cross_entropy_other_cases_take_the_general_path(calls):
    from jitgrad.nn.functional import loss_classification as LC
    seen = calls(LC, "_log_softmax_rows")
    x = RNG.standard_normal((6, 4)).astype(np.float32)
    y = np.array([0, 1, 2, 3, -100, 1])
    cases = [dict(), dict(weight=np.arange(1, 5, dtype=np.float32)),
             dict(label_smoothing=0.2), dict(reduction="none")]
    for kw in cases:  # an ignored target, class weights, smoothing, no reduction
        outs = []
        for lib in (jg, torch):
            kw2 = {k: lib.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
            outs.append(FF(lib).cross_entropy(lib.tensor(x), lib.tensor(y), **kw2).numpy())
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-5, atol=1e-6)
    h = x.astype(np.float16)
    jo = F.cross_entropy(jg.tensor(h), jg.tensor(np.abs(y) % 4))
    to = TF.cross_entropy(torch.tensor(h), torch.tensor(np.abs(y) % 4))
    assert jo.dtype == jg.float16
    np.testing.assert_allclose(float(jo), float(to), rtol=2e-3)
    with pytest.raises(IndexError):  # out of range: the general path's error
        F.cross_entropy(jg.tensor(x), jg.tensor(np.array([0, 1, 2, 3, 4, 1])))
    assert seen == {}
