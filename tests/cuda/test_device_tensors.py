"""CUDA tensors (issue 5, part 2): storage on the device, conversions and device rules, ops and
their gradients on the device against the CPU, and host<->device transfer accounting.

Run on the simulator in its own process (tiny shapes: every CUDA thread is a Python thread)::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_tensors.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

NUMPY_ERR = ("can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the "
             "tensor to host memory first.")
MIX_ERR = ("Expected all tensors to be on the same device, but found at least two devices, "
           "cuda:0 and cpu!")


# ----------------------------------------------------------------------------- host-side


def test_cuda_without_numba_cuda_is_a_clear_error(monkeypatch):
    from jitgrad.backends import cuda as B
    monkeypatch.setattr(B, "installed", lambda: False)
    monkeypatch.setattr(B, "_avail", None)
    assert not B.is_available()
    with pytest.raises(RuntimeError, match="numba-cuda is not installed"):
        jg.zeros(2, device="cuda")
    with pytest.raises(RuntimeError, match="numba-cuda is not installed"):
        jg.ones(2).cuda()
    monkeypatch.setattr(B, "_avail", None)  # re-probe after the patch is undone


def test_cpu_tensors_have_no_cuda_array_interface():
    t = jg.ones(2)
    assert not hasattr(t, "__cuda_array_interface__")
    assert t.device == jg.device("cpu") and not t.is_cuda and t.is_cpu


# ----------------------------------------------------------------------------- storage


def test_factories_and_device_attributes(device):
    assert jg.cuda.is_available() and jg.cuda.device_count() >= 1
    for dev in ("cuda", "cuda:0", jg.device("cuda"), jg.device("cuda", 0)):
        t = jg.zeros(2, 3, device=dev)
        assert t.is_cuda and not t.is_cpu
        assert repr(t.device) == "device(type='cuda', index=0)" and str(t.device) == "cuda:0"
        assert t.device == "cuda:0"
    device.reset_stats()
    z, o, f = jg.zeros(2, 3, device="cuda"), jg.ones(4, device="cuda"), jg.full((2,), 7.5,
                                                                             device="cuda")
    e = jg.empty(3, dtype=jg.int64, device="cuda")
    assert device.stats.h2d == 0  # filled on the device
    assert e.dtype is jg.int64 and e.shape == (3,)
    assert z.tolist() == [[0.0] * 3] * 2 and o.tolist() == [1.0] * 4 and f.tolist() == [7.5] * 2
    assert device.stats.d2h == 3  # .tolist() copies to the host
    # random numbers are drawn on the device (no upload), reproducibly after manual_seed
    device.reset_stats()
    jg.manual_seed(0)
    r = jg.randn(3, 2, device="cuda")
    assert device.stats.h2d == 0 and r.shape == (3, 2) and r.dtype is jg.float32
    jg.manual_seed(0)
    assert np.array_equal(r.cpu().numpy(), jg.randn(3, 2, device="cuda").cpu().numpy())
    a = jg.arange(5, device="cuda")
    t = jg.tensor([[1, 2], [3, 4]], device="cuda")
    assert a.tolist() == list(range(5)) and t.dtype is jg.int64
    assert jg.rand(2, device="cuda").is_cuda and jg.eye(2, device="cuda").is_cuda
    assert jg.zeros_like(t).is_cuda and jg.ones_like(t, device="cpu").is_cpu
    assert jg.full_like(t, 3).tolist() == [[3, 3], [3, 3]]


def test_new_factories_follow_the_tensors_device(device):
    x = jg.ones(2, dtype=jg.float64, device="cuda")
    device.reset_stats()
    made = [x.new_zeros(3), x.new_ones((2, 2)), x.new_empty(2), x.new_full((2,), 1.5)]
    assert device.stats.h2d == 0  # filled on the device
    assert all(t.is_cuda and t.dtype is jg.float64 for t in made)
    assert x.new_tensor([1, 2]).is_cuda and x.new_tensor([1, 2]).dtype is jg.float64
    assert x.new_zeros(2, device="cpu").is_cpu and x.new_zeros(2, dtype=jg.int64).dtype is jg.int64
    assert jg.cat([x, x.new_zeros(0)]).tolist() == [1.0, 1.0]


def test_conversions_count_transfers(device):
    x = jg.tensor([[1.0, 2.0], [3.0, 4.0]])
    device.reset_stats()
    c = x.cuda()
    assert device.stats.h2d == 1 and c.is_cuda
    assert c.cuda() is c and x.cpu() is x
    assert x.to("cuda:0").is_cuda and x.to(c).is_cuda and c.to(x).is_cpu
    assert c.to("cpu", jg.float64).dtype is jg.float64
    d = c.to(jg.float64)
    assert d.is_cuda and d.dtype is jg.float64
    device.reset_stats()
    assert c[1, 0].item() == 3.0 and c.sum().item() == 10.0
    assert float(c[0, 1]) == 2.0 and bool(c[0, 0] == 1.0)
    assert device.stats.d2h == 4 and device.stats.h2d == 0
    assert "device='cuda:0'" in repr(c)
    assert np.array_equal(c.cpu().numpy(), x.numpy())


def test_numpy_and_mixing_errors(device):
    c = jg.ones(2, device="cuda")
    with pytest.raises(TypeError) as e:
        c.numpy()
    assert str(e.value) == NUMPY_ERR
    with pytest.raises(TypeError, match="can't convert cuda:0"):
        np.asarray(c)
    with pytest.raises(RuntimeError) as e:
        c + jg.ones(2)
    assert str(e.value) == MIX_ERR
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        c.reshape(2, 1) @ jg.ones(1, 2)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        jg.cat([c, jg.ones(2)])
    y = jg.ones(2, device="cuda", requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="expected device cuda:0 but got cpu"):
        y.backward(jg.ones(2))
    w = jg.ones(2, device="cuda", requires_grad=True)
    with pytest.raises(RuntimeError, match="gradient with device type 'cpu' to a tensor with "
                                           "device type 'cuda'"):
        w.grad = jg.ones(2)


def test_set_default_device(device):
    try:
        jg.set_default_device("cuda")
        assert jg.zeros(2).is_cuda and jg.tensor([1.0]).is_cuda and jg.randn(2).is_cuda
        assert jg.get_default_device() == "cuda:0"
        assert jg.zeros(2, device="cpu").is_cpu
    finally:
        jg.set_default_device("cpu")
    assert jg.zeros(2).is_cpu


def test_cuda_array_interface(device):
    if device.simulator_active():
        pytest.skip("the CUDA simulator's device arrays have no __cuda_array_interface__")
    c = jg.arange(6.0, device="cuda").reshape(2, 3)
    iface = c.__cuda_array_interface__
    assert iface["shape"] == (2, 3) and iface["typestr"] == "<f4" and iface["version"] == 3
    t = c.t()
    assert t.__cuda_array_interface__["strides"] == (4, 12)
    from numba import cuda
    assert np.array_equal(cuda.as_cuda_array(c).copy_to_host(), c.cpu().numpy())


def test_zero_dim_tensors_keep_their_shape_on_the_device(device):
    for t in (jg.tensor(2.5, device="cuda"), jg.tensor(np.array(2.5)).cuda(),
              jg.tensor(2.5).to("cuda")):
        assert t.shape == () and t.ndim == 0 and t.item() == 2.5
        assert t.cpu().shape == ()


def test_unsupported_ops_raise_not_implemented(device):
    c = jg.tensor([[3.0, 1.0], [2.0, 5.0]], device="cuda")
    true = jg.tensor(True, device="cuda")
    device.reset_stats()
    with pytest.raises(NotImplementedError, match="cuda:0"):
        c[true]
    assert device.stats.d2h == 0 and device.stats.h2d == 0  # nothing copied behind our back


# ----------------------------------------------------------------------------- ops vs CPU

RNG = np.random.default_rng(5)
A = RNG.standard_normal((2, 3, 4))
V = RNG.standard_normal(4)
IDX = np.array([3, 0, 3])
GIDX = RNG.integers(0, 3, (2, 2, 4))
COND = RNG.random((3, 4)) > 0.5


def _run(fn, arrays, dev, dtype):
    ts = [jg.tensor(a, device=dev, dtype=dtype if a.dtype.kind == "f" else None,
                    requires_grad=a.dtype.kind == "f") for a in arrays]
    y = fn(*ts)
    if y.requires_grad:
        w = jg.arange(y.numel(), dtype=y.dtype, device=dev).reshape(y.shape) / 7.0 + 0.5
        (y * w).sum().backward()
    return y.detach().cpu().numpy(), [t.grad.cpu().numpy() if t.grad is not None else None
                                      for t in ts]


CASES = {
    # elementwise (same LoopSpecs as the CPU), broadcasting, aux operands, int/bool results
    "chain": (lambda x, v: ((x * v + 1).tanh() - x.sigmoid() / 2).exp(), (A, V)),
    "pow_clamp": (lambda x: x.abs().pow(1.5).clamp(0.1, 2.0) * 3 - x, (A,)),
    "where": (lambda x: jg.where(jg.tensor(COND, device=x.device), x, -x * 2), (A[0],)),
    "compare": (lambda x: (x > 0) & (x < 1), (A,)),
    "relu_leaky": (lambda x: x.relu() + jg.nn.functional.leaky_relu(x, 0.1), (A,)),
    # reductions
    "sum_all": (lambda x: x.sum(), (A,)),
    "sum_dims_keep": (lambda x: x.sum((0, 2), keepdim=True), (A,)),
    "mean_dim": (lambda x: x.mean(1), (A,)),
    "mean_all": (lambda x: x.mean(), (A,)),
    "int_sum": (lambda i: i.sum(0) + (i > 1).sum(), (GIDX,)),
    "amax": (lambda x: x.amax(2), (A,)),
    "max_all": (lambda x: x.max(), (A,)),
    "max_dim": (lambda x: x.max(1).values.unsqueeze(1) + x.min(2, keepdim=True)[0], (A,)),
    "max_dim_indices": (lambda x: jg.cat([x.max(2)[1].flatten(), x.argmin(1).flatten(),
                                          x.argmax(2, keepdim=True).flatten(),
                                          x.argmax().reshape(1)]), (A,)),
    # views
    "transpose": (lambda x: x.transpose(0, 2) * 2, (A,)),
    "permute": (lambda x: x.permute(2, 0, 1).exp(), (A,)),
    "reshape_copy": (lambda x: x.transpose(1, 2).reshape(2, 12), (A,)),
    "view": (lambda x: x.view(6, 4) * 1, (A,)),
    "squeeze_unsqueeze": (lambda x: x.unsqueeze(1).squeeze(1).t() if x.ndim == 2
                          else x.unsqueeze(1).squeeze(1), (A,)),
    "t": (lambda x: x[0].t() + 0, (A,)),
    "expand": (lambda x: x[:, :1].expand(2, 3, 4) * 1, (A,)),
    "getitem": (lambda x: x[1, 1:3, ::2] * 1, (A,)),
    "getitem_none_ellipsis": (lambda x: x[..., None, 2] * 1, (A,)),
    # linalg
    "bmm": (lambda x: x.bmm(x.transpose(1, 2)), (A,)),
    "matmul_batched_vec": (lambda x, v: x @ v, (A, V)),
    "mm_transposed": (lambda x: x[0].mm(x[1].t()), (A,)),
    "addmm": (lambda x: jg.addmm(x[0, 0, :3], x[0], x[1].t(), beta=0.5, alpha=2.0), (A,)),
    "dot": (lambda v: v.dot(v * 2), (V,)),
    # softmax, indexing, joins
    "softmax": (lambda x: x.softmax(1), (A,)),
    "log_softmax": (lambda x: x.log_softmax(0), (A,)),
    "index_select": (lambda x, i: x.index_select(2, i), (A, IDX)),
    "gather": (lambda x, i: x.gather(1, i), (A, GIDX)),
    "cat": (lambda x: jg.cat([x, x * 2], 1), (A,)),
    "stack": (lambda x: jg.stack([x, x.exp()], 2), (A,)),
    "split_cat": (lambda x: jg.cat(x.split(3, 2)[::-1], 2), (A,)),
    "unbind_partial": (lambda x: jg.stack(x.unbind(1)[:2], 0), (A,)),
    "mv_narrow": (lambda x, v: x[0].mv(v).narrow(0, 1, 2), (A, V)),
}


# every case in float64; a representative subset in float32 (simulator time)
F32_CASES = ("chain", "sum_dims_keep", "bmm", "log_softmax", "gather")
PARAMS = [pytest.param(n, jg.float64, id=f"{n}-f64") for n in sorted(CASES)] + [
    pytest.param(n, jg.float32, id=f"{n}-f32") for n in F32_CASES]


@pytest.mark.parametrize("name,dtype", PARAMS)
def test_op_forward_and_backward_match_cpu(device, name, dtype):
    fn, arrays = CASES[name]
    yc, gc = _run(fn, arrays, "cpu", dtype)
    device.reset_stats()
    yd, gd = _run(fn, arrays, "cuda", dtype)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype is jg.float32 else dict(rtol=1e-12, atol=1e-12)
    assert yd.dtype == yc.dtype and yd.shape == yc.shape
    np.testing.assert_allclose(yd, yc, **tol)
    for a, b in zip(gc, gd):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(b, a, **tol)


def test_gradients_stay_on_device_accumulate_and_fuse(device):
    from jitgrad import fusion
    x = jg.tensor(A[0], device="cuda", requires_grad=True)
    b = jg.tensor(V, device="cuda", requires_grad=True)
    before = fusion.stats.fused_groups
    device.reset_stats()
    for _ in range(2):  # the second pass accumulates into .grad in place, on the device
        ((x * b).sin() * (x + b).exp()).sum().backward()
    assert x.grad.is_cuda and b.grad.is_cuda and b.grad.shape == (4,)
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    assert fusion.stats.fused_groups > before  # the elementwise VJP chain ran as a fused group
    xc = jg.tensor(A[0], requires_grad=True)
    bc = jg.tensor(V, requires_grad=True)
    for _ in range(2):
        ((xc * bc).sin() * (xc + bc).exp()).sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(b.grad.cpu().numpy(), bc.grad.numpy(), rtol=1e-12)


def test_create_graph_on_device(device):
    def second(dev):
        x = jg.tensor(V, device=dev, requires_grad=True)
        (g,) = jg.autograd.grad((x.sin() * x).sum(), x, create_graph=True)
        (gg,) = jg.autograd.grad(g.sum(), x)
        return g.detach().cpu().numpy(), gg.cpu().numpy()
    for a, b in zip(second("cpu"), second("cuda")):
        np.testing.assert_allclose(b, a, rtol=1e-12)


def test_inplace_ops_on_device(device):
    w = jg.tensor(V, device="cuda", requires_grad=True)
    (w * w).sum().backward()
    device.reset_stats()
    with jg.no_grad():  # an SGD step
        w.sub_(w.grad * 0.1)
        w.grad.zero_()
    m = jg.zeros(2, 3, device="cuda")
    m.t()[1:].add_(jg.full((2,), 1.5, device="cuda"))  # a strided destination
    assert device.stats.h2d == 0 and device.stats.d2h == 0
    np.testing.assert_allclose(w.detach().cpu().numpy(), V * 0.8, rtol=1e-12)
    mc = jg.zeros(2, 3)
    mc.t()[1:].add_(jg.full((2,), 1.5))
    assert m.tolist() == mc.tolist()
    assert w.grad.tolist() == [0.0] * 4
    # in a recorded graph: snapshot + rebased grad_fn, as on the CPU
    x = jg.tensor(A[0], device="cuda", requires_grad=True)
    y = x * 2
    y.add_(1).mul_(3).exp_()
    y.sum().backward()
    xc = jg.tensor(A[0], requires_grad=True)
    yc = xc * 2
    yc.add_(1).mul_(3).exp_()
    yc.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xc.grad.numpy(), rtol=1e-12)
    # copy_ between devices is an explicit, counted transfer
    z = jg.zeros(2, 4, device="cuda")
    device.reset_stats()
    z.copy_(jg.ones(4))
    assert device.stats.h2d == 1 and z.tolist() == [[1.0] * 4] * 2


def test_to_device_is_differentiable(device):
    x = jg.tensor(V, requires_grad=True)
    y = (x.cuda() * 3).sum()
    assert y.grad_fn is not None
    y.backward()
    assert x.grad.is_cpu and np.allclose(x.grad.numpy(), 3.0)


# ----------------------------------------------------------------------------- transfers


def test_mlp_forward_backward_makes_no_hidden_transfers(device):
    """x @ w1 + b1, relu, @ w2 + b2, log_softmax, pick targets with gather, mean: forward and
    backward on CUDA make no host<->device transfer; only the test's own uploads/downloads."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((5, 4)).astype(np.float32)
    params = [rng.standard_normal(s).astype(np.float32) for s in ((4, 6), (6,), (6, 3), (3,))]
    T = np.array([0, 2, 1, 1, 0])

    def run(dev):
        x = jg.tensor(X, device=dev)
        w1, b1, w2, b2 = [jg.tensor(p, device=dev, requires_grad=True) for p in params]
        t = jg.tensor(T, device=dev)
        device.reset_stats()
        h = (x @ w1 + b1).relu()
        logp = (h @ w2 + b2).log_softmax(dim=1)
        loss = -logp.gather(1, t.unsqueeze(1)).mean()
        loss.backward()
        counted = device.stats.snapshot()
        return loss, [w1.grad, b1.grad, w2.grad, b2.grad], counted

    loss_c, grads_c, _ = run("cpu")
    device.reset_stats()
    loss_d, grads_d, counted = run("cuda")
    assert counted["h2d"] == 0 and counted["d2h"] == 0, counted
    assert counted["launches"] > 0
    assert all(g.is_cuda for g in grads_d)
    device.reset_stats()
    assert loss_d.item() == pytest.approx(loss_c.item(), rel=1e-6)
    host = [g.cpu().numpy() for g in grads_d]
    assert device.stats.d2h == 5 and device.stats.h2d == 0  # exactly the test's downloads
    for a, b in zip(grads_c, host):
        np.testing.assert_allclose(b, a.numpy(), rtol=1e-5, atol=1e-6)


def test_allclose_and_equal_on_device(device):
    a = jg.tensor([1.0, 2.0, float("nan")], device="cuda")
    b = a + 1e-9
    for x, y in ((a, b), (a, a + 1), (a, a)):
        for nan in (False, True):
            want = np.allclose(x.cpu().numpy(), y.cpu().numpy(), equal_nan=nan)
            assert jg.allclose(x, y, equal_nan=nan) == want
    c = jg.tensor([1, 2, 3], device="cuda")
    assert jg.equal(c, c.clone()) and not jg.equal(c, c + 1) and not jg.equal(c, c[:2])


def test_save_and_load_cuda_tensors(device, tmp_path):
    path = tmp_path / "sd.npz"
    w = jg.tensor([[1.0, 2.0], [3.0, 4.0]], device="cuda").t()  # a non-contiguous view
    jg.save({"w": w, "b": jg.ones(2)}, path)
    sd = jg.load(path)
    assert sd["w"].is_cuda and sd["b"].is_cpu and sd["w"].tolist() == [[1.0, 3.0], [2.0, 4.0]]
    sd = jg.load(path, map_location="cpu")
    assert sd["w"].is_cpu and sd["w"].tolist() == [[1.0, 3.0], [2.0, 4.0]]
    sd = jg.load(path, map_location={"cpu": "cuda:0"})
    assert sd["w"].is_cuda and sd["b"].is_cuda
