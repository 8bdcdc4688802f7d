"""Issue 11: what the simulator hid and an H100 showed — the device-array interface, views of
split/chunk/narrow pieces, and 0-d reductions — checked on the device against the CPU path and
PyTorch.

Under the simulator, ``conftest.py`` makes the device arrays answer like a GPU's
(``hardware_like.py``: ``flags`` is a dict, no NumPy attributes), so these fail here exactly
where they failed on the hardware::

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests/cuda/test_device_hardware_class.py
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(11)


# ----------------------------------------------------------------------------- interface


def test_simulator_device_arrays_answer_like_the_hardware(device):
    """The patch is in force: a raw device buffer's flags is a dict and NumPy-only attributes
    are refused (else every test below could pass on the simulator and fail on a GPU)."""
    buf = jg.zeros(4, device="cuda")._data.buf
    assert isinstance(buf.flags, dict) and buf.flags["C_CONTIGUOUS"]
    if device.simulator_active():
        with pytest.raises(AttributeError, match="DeviceNDArray on a GPU"):
            buf.base  # noqa: B018
    with pytest.raises(AttributeError):
        buf.flags.owndata  # noqa: B018


def test_cuda_storage_never_hands_out_the_raw_buffer(device):
    x = jg.ones(3, 4, device="cuda")
    v = x.t()._data
    from jitgrad._cuda_array import CudaArray
    assert isinstance(v.base, CudaArray) and v.base.shape == (12,)
    assert v.flags.owndata is False and x._data.flags.owndata is True
    assert x._data.base is None


@pytest.mark.parametrize("make", ["linear", "reshape", "transpose", "slice", "expand", "split"])
def test_leaf_gradient_arriving_as_a_view_is_adopted_or_copied(device, make):
    """accumulate_into_leaf with a gradient that is a view (a transposed weight gradient, a
    slice of a bigger buffer): the first backward of every training step (issue 11, b)."""
    w0 = RNG.standard_normal((3, 4)).astype(np.float32)
    x0 = RNG.standard_normal((5, 3)).astype(np.float32)

    def step(lib, dev):
        w = lib.tensor(w0, device=dev, requires_grad=True) if lib is jg else \
            torch.tensor(w0, requires_grad=True)
        x = lib.tensor(x0, device=dev) if lib is jg else torch.tensor(x0)
        if make == "linear":  # nn.Linear's x @ w.t(): TBackward0 hands back a transposed view
            out = x @ (w.t() * 2).t()
        elif make == "reshape":  # ViewBackward0: a reshape of the whole gradient buffer
            out = w.reshape(-1) * 3
        elif make == "transpose":
            out = (x @ w).sum(0)  # grad of w = x.t() @ g: laid out transposed on the way back
        elif make == "slice":
            out = lib.cat([w, w * 2], 0)[1:4]
        elif make == "expand":
            out = w.sum() * lib.ones(3, 4, device=dev) if lib is jg else \
                w.sum() * torch.ones(3, 4)
        else:
            out = lib.cat([w, x.t()], 1).split(4, 1)[0] * 3
        (out * out).sum().backward()
        return w, w.grad.detach().clone()

    w, g = step(jg, "cuda")
    _, gt = step(torch, None)
    assert w.grad.is_cuda and w.grad.is_contiguous()
    np.testing.assert_allclose(g.cpu().numpy(), gt.numpy(), rtol=1e-5, atol=1e-5)
    # a second backward accumulates into the adopted gradient in place
    before = w.grad.clone()
    (w * 2).sum().backward()
    np.testing.assert_allclose(w.grad.cpu().numpy(), before.cpu().numpy() + 2, rtol=1e-6)


# ----------------------------------------------------------------------------- 0-d tensors

ZERO_D = {
    "sum_dim0": lambda x: x.sum(dim=0),
    "sum_dim-1_keepdim": lambda x: x.sum(dim=-1, keepdim=True),
    "sum_dims_list": lambda x: x.sum(dim=[0]),
    "mean_dim0_keepdim": lambda x: x.mean(0, keepdim=True),
    "prod_dim0": lambda x: x.prod(0),
    "amax_dim-1": lambda x: x.amax(-1),
    "amin_dim0_keepdim": lambda x: x.amin(0, keepdim=True),
    "max_dim0_values": lambda x: x.max(0).values,
    "min_dim-1_values": lambda x: x.min(-1, keepdim=True).values,
    "logsumexp_dim0": lambda x: x.logsumexp(0),
    "var_dim0": lambda x: x.var(0, correction=0),
    "std_all": lambda x: x.std(correction=0),
    "norm_dim0": lambda x: x.norm(dim=0),
    "softmax_dim0": lambda x: x.softmax(0),
    "log_softmax_dim-1": lambda x: x.log_softmax(-1),
    "cumsum_dim0": lambda x: x.cumsum(0),
    "cumsum_dim-1": lambda x: x.cumsum(-1),
    "unsqueeze_squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "view_1_then_0d": lambda x: x.view(1, 1).view(()),
    "index_none_ellipsis": lambda x: x[None][...],
    "expand": lambda x: x.expand(3, 2),
    "mul_broadcast": lambda x: x * x.new_ones(2, 3) if hasattr(x, "new_ones") else x,
    "transpose_0d": lambda x: x.t(),
}


@pytest.mark.parametrize("name", sorted(ZERO_D))
def test_zero_dim_tensors_on_the_device_match_pytorch(device, name):
    """PyTorch accepts dim 0 / -1 on 0-d tensors (issue 11, d); values and gradients match."""
    fn = ZERO_D[name]
    a = np.float32(1.75)
    xt = torch.tensor(a, requires_grad=True)
    yt = fn(xt)
    yt.sum().backward() if yt.requires_grad else None
    x = jg.tensor(a, device="cuda", requires_grad=True)
    y = fn(x)
    assert y.is_cuda and tuple(y.shape) == tuple(yt.shape)
    np.testing.assert_allclose(y.detach().cpu().numpy(), yt.detach().numpy(), rtol=1e-6)
    if yt.requires_grad:
        y.sum().backward()
        np.testing.assert_allclose(x.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("name", ["argmax_dim0", "argmin_dim-1_keepdim", "max_dim0_indices",
                                  "item", "index_with_0d_tensor"])
def test_zero_dim_integer_results_and_reads(device, name):
    a = np.float32(-0.5)
    xt, x = torch.tensor(a), jg.tensor(a, device="cuda")
    if name == "argmax_dim0":
        r, rt = x.argmax(0), xt.argmax(0)
    elif name == "argmin_dim-1_keepdim":
        r, rt = x.argmin(-1, keepdim=True), xt.argmin(-1, keepdim=True)
    elif name == "max_dim0_indices":
        r, rt = x.max(0).indices, xt.max(0).indices
    elif name == "item":
        assert x.item() == xt.item() and isinstance(x.item(), float)
        return
    elif name == "index_with_0d_tensor":
        v = np.arange(5, dtype=np.float32)
        r = jg.tensor(v, device="cuda")[jg.tensor(3, device="cuda")]
        rt = torch.tensor(v)[torch.tensor(3)]
    assert r.is_cuda and tuple(r.shape) == tuple(rt.shape) and str(r.dtype) == str(rt.dtype)
    np.testing.assert_array_equal(r.cpu().numpy(), rt.numpy())


# ----------------------------------------------------------------------------- views of views

B_, T_, C_, H_ = 2, 3, 8, 2
X3 = RNG.standard_normal((B_, T_, 3 * C_)).astype(np.float32)

VIEWS = {
    # nanoGPT's attention: split the fused qkv projection, view heads, move them forward
    "split_view_transpose": lambda x: [p.view(B_, T_, H_, C_ // H_).transpose(1, 2)
                                       for p in x.split(C_, dim=2)],
    "chunk_view_contiguous": lambda x: [p.view(B_, T_, H_, C_ // H_).contiguous()
                                        .view(B_, T_ * H_, C_ // H_)
                                        for p in x.chunk(3, dim=-1)],
    "narrow_view_t": lambda x: [x.narrow(2, 4, C_).view(B_ * T_, C_).t()],
    "split_transpose_view_fails_as_pytorch": None,
    "unbind_view": lambda x: [p.view(T_, 3, C_)[:, 1] for p in x.unbind(0)],
    "split_view_merge_heads": lambda x: [p.view(B_, T_, H_, C_ // H_).transpose(1, 2)
                                         .transpose(1, 2).contiguous().view(B_, T_, C_)
                                         for p in x.split(C_, dim=2)],
    "view_of_view_of_slice": lambda x: [x[:, 1:, :C_].view(B_, T_ - 1, 2, 4).view(B_, T_ - 1, 1, 8)
                                          .view(B_, T_ - 1, C_)],
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_of_split_chunk_narrow_match_pytorch(device, name):
    """Views of views on the device: shapes, strides, values and gradients as PyTorch (issue
    11, e: ``split`` then ``view`` raised "view size is not compatible" on cuda)."""
    if VIEWS[name] is None:  # PyTorch refuses this one: so must we, with its message
        for x in (torch.tensor(X3), jg.tensor(X3, device="cuda")):
            with pytest.raises(RuntimeError, match="view size is not compatible"):
                x.split(C_, dim=2)[0].transpose(1, 2).view(B_, -1)
        return
    xt = torch.tensor(X3, requires_grad=True)
    x = jg.tensor(X3, device="cuda", requires_grad=True)
    outs_t, outs = VIEWS[name](xt), VIEWS[name](x)
    for i, (o, ot) in enumerate(zip(outs, outs_t)):
        assert o.is_cuda and tuple(o.shape) == tuple(ot.shape)
        assert o.stride() == ot.stride(), (i, o.stride(), ot.stride())
        np.testing.assert_array_equal(o.detach().cpu().numpy(), ot.detach().numpy())
    w = [RNG.standard_normal(tuple(ot.shape)).astype(np.float32) for ot in outs_t]
    sum((o * jg.tensor(wi, device="cuda")).sum() for o, wi in zip(outs, w)).backward()
    sum((ot * torch.tensor(wi)).sum() for ot, wi in zip(outs_t, w)).backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), xt.grad.numpy(), rtol=1e-6)


def test_split_view_shares_the_device_buffer(device):
    x = jg.tensor(X3, device="cuda")
    q = x.split(C_, dim=2)[1]
    v = q.view(B_, T_, H_, C_ // H_)
    assert v._data.buf is x._data.buf and v._base is x
    with jg.no_grad():
        v.mul_(0)
    ref = X3.copy()
    ref[:, :, C_:2 * C_] = 0
    np.testing.assert_array_equal(x.cpu().numpy(), ref)


# ----------------------------------------------------------------------------- float16 casts


def test_float64_to_float16_rounds_once_with_numpys_bits(device):
    """x64.half() on the device has the CPU path's (NumPy's) bits: one rounding from float64
    (1 + 2**-11 + 2**-40 rounds up; through float32 it would tie to 1.0), NaN sign and payload
    kept (the hardware's cvt gives 0x7FFF), strided sources, and copies into float16 views."""
    bits = np.array([0x7FF8000000000000, 0xFFF8000000000000, 0x7FF0000000000001], np.uint64)
    vals = np.concatenate([np.array([1 + 2 ** -11 + 2 ** -40, -(1 + 3 * 2 ** -11 + 2 ** -45),
                                     65519.99, 65520.0, 2.9802322387695312e-08, 1e-300]),
                           bits.view(np.float64)])
    x = jg.tensor(vals, device="cuda")
    with np.errstate(all="ignore"):  # NumPy warns on overflow to inf; the reference is fine
        want = vals.astype(np.float16).view(np.uint16)
        ref_t = np.stack([vals, vals[::-1]]).T.astype(np.float16).view(np.uint16)
        f32 = vals.astype(np.float32)
        ref32 = f32.astype(np.float16).view(np.uint16)
    np.testing.assert_array_equal(x.half().cpu().numpy().view(np.uint16), want)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(x.cpu().half().numpy().view(np.uint16), want)  # CPU path
    m = jg.tensor(np.stack([vals, vals[::-1]]), device="cuda").t()  # strided source
    np.testing.assert_array_equal(m.half().cpu().numpy().view(np.uint16), ref_t)
    h = jg.zeros(2, len(vals), dtype=jg.float16, device="cuda")
    h[1] = x  # copy_into a float16 view
    np.testing.assert_array_equal(h[1].cpu().numpy().view(np.uint16), want)
    np.testing.assert_array_equal(jg.tensor(f32, device="cuda").half().cpu().numpy()
                                  .view(np.uint16), ref32)


# ----------------------------------------------------------------------------- embedding


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_on_the_device_matches_pytorch(device, norm_type):
    """``embedding(max_norm=)`` renormalizes the referenced rows of the weight in place, on the
    device (no host read), then looks up; gradients flow to the renormalized weight."""
    w0 = (RNG.standard_normal((6, 4)) * 2).astype(np.float32)
    ids = np.array([[0, 2, 2], [5, 1, 0]])
    wt = torch.tensor(w0, requires_grad=True)
    yt = torch.nn.functional.embedding(torch.tensor(ids), wt, max_norm=1.5, norm_type=norm_type)
    (yt * yt).sum().backward()
    w = jg.tensor(w0, device="cuda", requires_grad=True)
    device.reset_stats()
    y = jg.nn.functional.embedding(jg.tensor(ids, device="cuda"), w, max_norm=1.5,
                                   norm_type=norm_type)
    assert device.stats.d2h == 0
    (y * y).sum().backward()
    np.testing.assert_allclose(y.detach().cpu().numpy(), yt.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(w.detach().cpu().numpy(), wt.detach().numpy(), rtol=1e-5)
    np.testing.assert_allclose(w.grad.cpu().numpy(), wt.grad.numpy(), rtol=1e-5)
    # nn.Embedding(max_norm=) too
    emb = jg.nn.Embedding(6, 4, max_norm=1.5).to("cuda")
    with jg.no_grad():
        emb.weight.copy_(jg.tensor(w0))
    np.testing.assert_allclose(emb(jg.tensor(ids, device="cuda")).detach().cpu().numpy(),
                               yt.detach().numpy() if norm_type == 2.0 else
                               torch.nn.functional.embedding(torch.tensor(ids),
                                                             torch.tensor(w0), max_norm=1.5)
                               .numpy(), rtol=1e-5)


# ----------------------------------------------------------------------------- bitwise


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
def test_integer_bitwise_ops_on_the_device_match_pytorch(device, dtype):
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, (3, 4), endpoint=True).astype(dtype)
    b = RNG.integers(info.min, info.max, (4,), endpoint=True).astype(dtype)
    ta, tb = torch.tensor(a), torch.tensor(b)
    ja, jb = jg.tensor(a, device="cuda"), jg.tensor(b, device="cuda")
    cases = [lambda x, y: x & y, lambda x, y: x | y[::2].repeat(2), lambda x, y: x ^ y,
             lambda x, y: ~x.t(), lambda x, y: x & 5, lambda x, y: 6 | x, lambda x, y: 3 ^ x,
             lambda x, y: x.long() & y]  # int64 & dtype: promotes as PyTorch
    for i, f in enumerate(cases):
        r, rt = f(ja, jb), f(ta, tb)
        assert r.is_cuda and str(r.dtype) == str(rt.dtype), (i, r.dtype, rt.dtype)
        np.testing.assert_array_equal(r.cpu().numpy(), rt.numpy(), err_msg=str(i))


def test_storage_offset_and_strides_of_device_views_match_pytorch(device):
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    x, xt = jg.tensor(a, device="cuda"), torch.tensor(a)
    for f in (lambda t: t[1:, 2], lambda t: t[:, 1:3, ::2].transpose(0, 1),
              lambda t: t.split(2, 1)[1].view(3, 2, 5)[1], lambda t: t.narrow(2, 3, 2),
              lambda t: t.unbind(0)[2].t()):
        v, vt = f(x), f(xt)
        assert v.storage_offset() == vt.storage_offset() and v.stride() == vt.stride()
        assert v.is_contiguous() == vt.is_contiguous()


def test_linspace_and_logspace_honour_device(device):
    """Found by the random programs: linspace(device="cuda") returned a CPU tensor."""
    for f, ft in ((lambda **k: jg.linspace(-1.0, 2.0, 7, **k),
                   lambda: torch.linspace(-1.0, 2.0, 7)),
                  (lambda **k: jg.logspace(0.0, 2.0, 5, **k), lambda: torch.logspace(0.0, 2.0, 5))):
        t = f(device="cuda", dtype=jg.float32)
        assert t.is_cuda and t.dtype is jg.float32
        np.testing.assert_array_equal(t.cpu().numpy(), ft().numpy())


def test_random_factories_honour_device(device):
    """randperm/normal(mean, std, size) with device="cuda" returned CPU tensors."""
    p = jg.randperm(9, device="cuda")
    assert p.is_cuda and p.dtype is jg.int64 and sorted(p.tolist()) == list(range(9))
    z = jg.normal(2.0, 0.5, (4, 3), device="cuda")
    assert z.is_cuda and z.shape == (4, 3) and z.dtype is jg.float32
    jg.manual_seed(3)
    a = jg.normal(2.0, 0.5, (5,), device="cuda").cpu().numpy()
    jg.manual_seed(3)
    b = (jg.randn(5, device="cuda") * 0.5 + 2.0).cpu().numpy()
    np.testing.assert_allclose(a, b, rtol=1e-6)  # the device generator's draws
