"""The rest of ``nn.utils`` against PyTorch: get_total_norm / clip_grads_with_norm_ / the
deprecated clip_grad_norm and their warnings, conv/linear + BatchNorm fusion, skip_init,
stateless.functional_call and the conv weight memory formats."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import jitgrad as jg
from tests._parity import raises_like

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


def _params(lib, grads, dtypes=None):
    ps = []
    for i, g in enumerate(grads):
        dt = getattr(lib, dtypes[i]) if dtypes else lib.tensor(g).dtype
        p = lib.zeros(g.shape, dtype=dt, requires_grad=True)
        p.grad = lib.tensor(g, dtype=dt)
        ps.append(p)
    return ps


def _warnings(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [(w.category.__name__, str(w.message)) for w in caught]


def _copy_state(src_torch, dst_jg):
    """Load a torch module's state into the jitgrad module of the same structure."""
    sd = {k: jg.tensor(v.detach().numpy()) for k, v in src_torch.state_dict().items()}
    dst_jg.load_state_dict(sd)


# ----------------------------------------------------------------------------- clip grad

GRADS = [RNG.standard_normal(s) for s in ((3, 4), (5,), (2, 2, 2))]


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf, 3.0])
@pytest.mark.parametrize("dtypes", [None, ("float64",) * 3, ("float32", "float64", "float32")])
def test_get_total_norm_and_clip_grads_with_norm(norm_type, dtypes):
    grads = [g.astype(np.float32) for g in GRADS] if dtypes is None else GRADS
    res = []
    for lib in (jg, torch):
        ps = _params(lib, grads, dtypes)
        total = lib.nn.utils.get_total_norm([p.grad for p in ps], norm_type)
        lib.nn.utils.clip_grads_with_norm_(ps, 0.7, total, foreach=True)
        res.append((total, [p.grad.numpy() for p in ps]))
    (tj, gj), (tt, gt) = res
    assert str(tj.dtype) == str(tt.dtype) and tj.shape == ()
    np.testing.assert_allclose(tj.item(), tt.item(), rtol=1e-6)
    for a, b in zip(gj, gt):
        assert a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_get_total_norm_corner_cases():
    for lib in (jg, torch):
        assert lib.nn.utils.get_total_norm([]).item() == 0.0
    for lib_fn in (lambda T: T.nn.utils.get_total_norm(T.tensor([3.0, 4.0])),
                   lambda T: T.nn.utils.clip_grad_norm_(T.zeros(2), 1.0)):
        assert lib_fn(jg).item() == lib_fn(torch).item()
    raises_like(lambda T, g: T.nn.utils.get_total_norm([g], error_if_nonfinite=True),
                np.array([1.0, np.nan]))
    raises_like(lambda T, g: T.nn.utils.get_total_norm([g], 1.0, error_if_nonfinite=True),
                np.array([1.0, -np.inf]))


def test_clip_grad_norm_warnings():
    for fn in (lambda T: T.nn.utils.clip_grad_norm_((p for p in []), 1.0),
               lambda T: T.nn.utils.clip_grad_norm(_params(T, [GRADS[0]]), 0.5)):
        (rj, wj), (rt, wt) = (_warnings(lambda f=fn, L=L: f(L)) for L in (jg, torch))
        assert wj == wt and wj
        np.testing.assert_allclose(rj.item(), rt.item(), rtol=1e-12)
    # a list (not a generator) that is empty: no warning
    assert _warnings(lambda: jg.nn.utils.clip_grad_norm_([], 1.0))[1] == []


def test_clip_grad_norm_generator_and_value_foreach():
    pj, pt = _params(jg, GRADS), _params(torch, GRADS)
    nj = jg.nn.utils.clip_grad_norm_((p for p in pj), 0.5, foreach=False)
    nt = torch.nn.utils.clip_grad_norm_((p for p in pt), 0.5, foreach=False)
    np.testing.assert_allclose(nj.item(), nt.item(), rtol=1e-12)
    jg.nn.utils.clip_grad_value_(pj, 0.05, foreach=True)
    torch.nn.utils.clip_grad_value_(pt, 0.05, foreach=True)
    for a, b in zip(pj, pt):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12)


# ----------------------------------------------------------------------------- fusion

def _trained_bn(lib, bn, shape):
    bn.train()
    for _ in range(3):
        bn(lib.tensor(RNG.standard_normal(shape).astype(np.float32)))
    bn.weight.data.mul_(1.5)
    bn.bias.data.add_(0.25)
    return bn.eval()


@pytest.mark.parametrize("kind", ["conv1d", "conv2d", "conv3d", "convT2d", "linear"])
def test_fusion_matches_pytorch_and_the_unfused_pair(kind):
    torch.manual_seed(0)
    if kind == "linear":
        mk = lambda T: (T.nn.Linear(6, 5), T.nn.BatchNorm1d(5))  # noqa: E731
        shape, bn_shape = (4, 6), (8, 5)
    elif kind == "convT2d":
        mk = lambda T: (T.nn.ConvTranspose2d(3, 4, 3, bias=False),  # noqa: E731
                        T.nn.BatchNorm2d(4))
        shape, bn_shape = (2, 3, 5, 5), (2, 4, 3, 3)
    else:
        d = int(kind[4])
        mk = lambda T: (getattr(T.nn, f"Conv{d}d")(3, 4, 3),  # noqa: E731
                        getattr(T.nn, f"BatchNorm{d}d")(4))
        shape, bn_shape = (2, 3) + (5,) * d, (2, 4) + (3,) * d
    mt, bt = mk(torch)
    mj, bj = mk(jg)
    _copy_state(mt, mj)
    _trained_bn(torch, bt, bn_shape)
    _copy_state(bt, bj)
    bj.eval()
    mt.eval()
    mj.eval()
    x = RNG.standard_normal(shape).astype(np.float32)
    if kind == "linear":
        ft, fj = (L.nn.utils.fuse_linear_bn_eval(m, b) for L, m, b in
                  ((torch, mt, bt), (jg, mj, bj)))
    else:
        tr = kind == "convT2d"
        ft, fj = (L.nn.utils.fuse_conv_bn_eval(m, b, transpose=tr) for L, m, b in
                  ((torch, mt, bt), (jg, mj, bj)))
    assert type(fj).__name__ == type(ft).__name__ and fj is not mj
    for name in ("weight", "bias"):
        pj, pt = getattr(fj, name), getattr(ft, name)
        assert isinstance(pj, jg.nn.Parameter) and pj.requires_grad == pt.requires_grad
        np.testing.assert_allclose(pj.detach().numpy(), pt.detach().numpy(), rtol=1e-6,
                                   atol=1e-7)
    out_fused = fj(jg.tensor(x)).detach().numpy()
    np.testing.assert_allclose(out_fused, bj(mj(jg.tensor(x))).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(out_fused, ft(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def test_fusion_weights_float64_and_errors():
    arrs = [RNG.standard_normal(s) for s in ((4, 3, 2, 2), (4,), (4,), (4,), (4,), (4,))]
    arrs[3] = np.abs(arrs[3]) + 0.5
    for fn in (lambda T, w, b, m, v, g, bb: T.nn.utils.fuse_conv_bn_weights(
                   w, b, m, v, 1e-5, g, bb),
               lambda T, w, b, m, v, g, bb: T.nn.utils.fuse_conv_bn_weights(
                   w, None, m, v, 1e-3, None, None),
               lambda T, w, b, m, v, g, bb: T.nn.utils.fuse_linear_bn_weights(
                   w.flatten(1), b, m, v, 1e-5, g, bb)):
        rj = fn(jg, *[jg.tensor(a) for a in arrs])
        rt = fn(torch, *[torch.tensor(a) for a in arrs])
        for a, b in zip(rj, rt):
            assert str(a.dtype)[-7:] == str(b.dtype)[-7:] and a.requires_grad == b.requires_grad
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-13)
    raises_like(lambda T: T.nn.utils.fuse_conv_bn_eval(T.nn.Conv2d(1, 2, 1),
                                                       T.nn.BatchNorm2d(2)))
    raises_like(lambda T: T.nn.utils.fuse_linear_bn_eval(T.nn.Linear(2, 3).eval(),
                                                         T.nn.BatchNorm1d(2).eval()))
    raises_like(lambda T: T.nn.utils.fuse_linear_bn_eval(
        T.nn.Linear(2, 3).eval(), T.nn.BatchNorm1d(3, track_running_stats=False).eval()))


# ----------------------------------------------------------------------------- skip_init

def test_skip_init_leaves_the_generator_alone():
    draws = []
    for lib in (jg, torch):
        lib.manual_seed(5)
        m = lib.nn.utils.skip_init(lib.nn.Linear, 5, 3, bias=True)
        bn = lib.nn.utils.skip_init(lib.nn.BatchNorm1d, 3)
        assert tuple(m.weight.shape) == (3, 5) and tuple(m.bias.shape) == (3,)
        assert isinstance(m.weight, lib.nn.Parameter) and m.weight.requires_grad
        assert tuple(bn.running_mean.shape) == (3,) and str(m.weight.device) == "cpu"
        draws.append(lib.rand(4).numpy())
    np.testing.assert_array_equal(draws[0], draws[1])
    m = jg.nn.utils.skip_init(jg.nn.Conv2d, 2, 3, 3, dtype=jg.float64, device="cpu")
    assert m.weight.dtype == jg.float64 and tuple(m.weight.shape) == (3, 2, 3, 3)


def test_skip_init_errors_and_to_empty():
    raises_like(lambda T: T.nn.utils.skip_init(T.nn.ReLU))
    raises_like(lambda T: T.nn.utils.skip_init(int))
    m = jg.nn.Linear(2, 2).double()
    assert m.to_empty(device="cpu") is m and m.weight.dtype == jg.float64


# ----------------------------------------------------------------------------- stateless

class _Tied:
    @staticmethod
    def make(T):
        class Net(T.nn.Module):
            def __init__(self):
                super().__init__()
                self.l1 = T.nn.Linear(3, 3)
                self.l2 = T.nn.Linear(3, 3)
                self.l2.weight = self.l1.weight
                self.register_buffer("scale", T.ones(1) * 2)

            def forward(self, x, shift=0.0):
                return self.l2(self.l1(x)) * self.scale + shift
        return Net()


def test_functional_call_values_grads_and_restoration():
    torch.manual_seed(1)
    nt = _Tied.make(torch)
    nj = _Tied.make(jg)
    _copy_state(nt, nj)
    w = RNG.standard_normal((3, 3))
    x = RNG.standard_normal((2, 3))
    outs = []
    for lib, net in ((jg, nj), (torch, nt)):
        net.double()
        orig = net.l1.weight
        wt = lib.tensor(w, requires_grad=True)
        params = {"l1.weight": wt, "scale": lib.tensor([3.0], dtype=lib.float64)}
        out, warns = _warnings(lambda L=lib, n=net, p=params: L.nn.utils.stateless
                               .functional_call(n, p, (L.tensor(x),), {"shift": 1.0}))
        out.sum().backward()
        assert net.l1.weight is orig and net.l2.weight is orig  # restored
        untied = lib.nn.utils.stateless._functional_call(net, {"l1.weight": wt},
                                                         lib.tensor(x), tie_weights=False)
        outs.append((out.detach().numpy(), wt.grad.numpy(), untied.detach().numpy(), warns,
                     type(out.grad_fn).__name__))
    (oj, gj, uj, wj, fj), (ot, gt, ut, wt_, ft) = outs
    np.testing.assert_allclose(oj, ot, rtol=1e-12)
    np.testing.assert_allclose(gj, gt, rtol=1e-12)
    np.testing.assert_allclose(uj, ut, rtol=1e-12)
    assert wj == wt_ and fj == ft


def test_functional_call_errors():
    def tied_conflict(T):
        return T.nn.utils.stateless._functional_call(
            _Tied.make(T), {"l1.weight": T.zeros(3, 3), "l2.weight": T.ones(3, 3)}, T.ones(1, 3))

    def strict(T):
        return T.nn.utils.stateless._functional_call(
            _Tied.make(T), {"l1.weight": T.zeros(3, 3), "nope": T.ones(1)}, T.ones(1, 3),
            strict=True)

    def bad_value(T):
        return T.nn.utils.stateless._functional_call(T.nn.Linear(2, 2), {"weight": 3},
                                                     T.ones(2))
    for fn in (tied_conflict, strict):
        raises_like(fn)
    with pytest.raises(TypeError, match="is not an instance of torch.Tensor"):
        bad_value(jg)
    m = jg.nn.Linear(2, 2)
    w = m.weight
    with pytest.raises(TypeError):
        jg.nn.utils.stateless._functional_call(m, {"weight": jg.ones(2, 2), "bias": 3},
                                               jg.ones(2))
    assert m.weight is w  # put back after the failed swap


def test_functional_call_new_attribute_is_removed_again():
    for lib in (jg, torch):
        m = lib.nn.Linear(2, 2)
        lib.nn.utils.stateless._functional_call(m, {"extra": lib.ones(1)}, lib.ones(2))
        assert not hasattr(m, "extra")


# ----------------------------------------------------------------------------- memory format

@pytest.mark.parametrize("fmt,d", [("channels_last", 2), ("contiguous_format", 2),
                                   ("channels_last_3d", 3)])
def test_convert_conv_weight_memory_format(fmt, d):
    res = []
    for lib in (jg, torch):
        lib.manual_seed(0)
        conv = getattr(lib.nn, f"Conv{d}d")
        convT = getattr(lib.nn, f"ConvTranspose{d}d")
        net = lib.nn.Sequential(conv(3, 4, 2), lib.nn.Sequential(convT(4, 2, 2)),
                                lib.nn.Linear(2, 2))
        w = net[0].weight
        fn = getattr(lib.nn.utils, f"convert_conv{d}d_weight_memory_format")
        assert fn(net, getattr(lib, fmt)) is net
        assert net[0].weight is w  # the Parameter object stays; its data is replaced
        res.append([(tuple(p.stride()), p.detach().numpy().copy()) for p in net.parameters()])
        x = lib.ones((1, 3) + (4,) * d)
        res[-1].append(((), net[1](net[0](x)).detach().numpy()))
    for (sj, vj), (st, vt) in zip(*res):
        assert sj == st
        np.testing.assert_allclose(vj, vt, rtol=1e-6, atol=1e-6)


def test_convert_memory_format_rank_error():
    class Odd(jg.nn.Module):
        pass
    m = jg.nn.Conv2d(1, 1, 1)
    with pytest.raises(RuntimeError, match="required rank 5 tensor to use channels_last_3d"):
        jg.nn.utils.convert_conv2d_weight_memory_format(m, jg.channels_last_3d)
    assert jg.nn.utils.convert_conv3d_weight_memory_format(Odd(), jg.channels_last_3d)
