"""Compiled programs give eager's bits for the ops eager sends to MKL VML (exp, tanh, sqrt, ...):
a fused group calls VML for them, and its backward reads their results rather than
recomputing them with our kernels."""
import numpy as np
import pytest

import jitgrad
from jitgrad._compile import fused
from jitgrad.backends import vml


def _needs_vml(dtype):
    if not vml.routine("exp", np.dtype(dtype)):
        pytest.skip("needs MKL VML (eager's exp/tanh/sqrt are our kernels without it)")


# Written so that no product meets a sum in one loop, forward or backward (no leaf gets two
# gradient contributions): a fused loop may contract a * b + c into one FMA (docs/compile.md),
# which is not what this file checks.
def f_chain(x, w):
    return ((x * w).exp().tanh() + 1.0).sqrt() * 0.5


def f_escapes(x, w):
    # the VML results escape and are used again inside the group
    e = (x * 2.0).tanh()
    s = (w.abs() + 1.0).sqrt()
    return e, s, (e - s).exp()


def _pair(dtype, rng, n):
    xd = rng.standard_normal(n).astype(dtype)
    wd = rng.standard_normal(n).astype(dtype)
    return xd, wd


def _run(fn, xd, wd):
    x = jitgrad.tensor(xd, requires_grad=True)
    w = jitgrad.tensor(wd, requires_grad=True)
    out = fn(x, w)
    outs = out if isinstance(out, tuple) else (out,)
    total = outs[0].sum()
    for o in outs[1:]:
        total = total + o.sum()
    total.backward()
    return [o.detach().numpy().copy() for o in outs], x.grad.numpy().copy(), w.grad.numpy().copy()


@pytest.mark.parametrize("one_call", [True, False], ids=["one-call", "segments"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fn", [f_chain, f_escapes])
@pytest.mark.parametrize("n", [1, 37, 1000])
def test_compiled_matches_eager_bitwise(dtype, fn, n, one_call, monkeypatch):
    _needs_vml(dtype)
    # the forward as one compiled call, or (for an unaligned operand) segment by segment
    monkeypatch.setattr(fused, "_ONE_CALL", one_call)
    compiled = jitgrad.compile(fn)
    rng = np.random.default_rng(7)
    for step in range(4):  # the first call records (eager); the later ones replay
        xd, wd = _pair(dtype, rng, n)
        e_outs, e_gx, e_gw = _run(fn, xd, wd)
        c_outs, c_gx, c_gw = _run(compiled, xd, wd)
        for k, (e, c) in enumerate(zip(e_outs, c_outs)):
            np.testing.assert_array_equal(c, e, err_msg=f"step {step}, output {k}")
        np.testing.assert_array_equal(c_gx, e_gx, err_msg=f"step {step}, x.grad")
        np.testing.assert_array_equal(c_gw, e_gw, err_msg=f"step {step}, w.grad")
    program = next(iter(compiled._variants.values()))
    assert "fused[" in program.describe()  # the replay ran fused groups, not eager steps


def test_vml_results_match_pytorch():
    torch = pytest.importorskip("torch", reason="needs PyTorch")
    _needs_vml(np.float32)
    compiled = jitgrad.compile(f_chain)
    rng = np.random.default_rng(3)
    for _ in range(3):
        xd, wd = _pair(np.float32, rng, 513)
        c_outs, c_gx, c_gw = _run(compiled, xd, wd)
        t_outs, t_gx, t_gw = _run_torch(torch, xd, wd)
        np.testing.assert_array_equal(c_outs[0], t_outs)  # VML's bits, as PyTorch's kernels
        np.testing.assert_allclose(c_gx, t_gx, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(c_gw, t_gw, rtol=1e-5, atol=1e-6)


def _run_torch(torch, xd, wd):
    x = torch.tensor(xd, requires_grad=True)
    w = torch.tensor(wd, requires_grad=True)
    out = f_chain(x, w)
    out.sum().backward()
    return out.detach().numpy(), x.grad.numpy(), w.grad.numpy()


def test_in_place_change_of_an_escaping_vml_result_raises_like_eager():
    _needs_vml(np.float32)

    def fn(x):
        return (x * 2.0).tanh()

    compiled = jitgrad.compile(fn)
    msgs = []
    for f in (fn, compiled, compiled):
        x = jitgrad.tensor(np.linspace(-1, 1, 8, dtype=np.float32), requires_grad=True)
        y = f(x)
        y.add_(1.0)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs.append(str(e.value).split(":")[0])
    assert msgs[0] == msgs[1] == msgs[2]


def _scalar_chain(x):
    # benchmarks/bench_overhead.scalar_chain: 25 VML tanh steps, 75 constants, on a 0-d tensor
    for _ in range(25):
        x = ((x * 1.01) + 0.5).tanh() - 0.25
    return x


def f_constants(x, w):
    # constants of several kinds in one split group (-0.0, a huge one, a negative power)
    y = (x * -0.0 + w * 1e30).tanh()
    return ((y * 3.0 - 7.0).exp() + w.abs() ** 1.5).sqrt() / 3.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", [(), (1,), (5,)])
def test_scalar_chain_matches_eager_bitwise(dtype, shape):
    _needs_vml(dtype)

    def step(x):
        y = _scalar_chain(x)
        y.sum().backward()
        return y

    compiled = jitgrad.compile(step)
    rng = np.random.default_rng(11)
    for k in range(4):
        xd = rng.uniform(-1, 1, shape).astype(dtype)
        got = []
        for fn in (step, compiled):
            x = jitgrad.tensor(xd, requires_grad=True)
            got.append((fn(x).detach().numpy().copy(), x.grad.numpy().copy()))
        np.testing.assert_array_equal(got[1][0], got[0][0], err_msg=f"call {k}: output")
        np.testing.assert_array_equal(got[1][1], got[0][1], err_msg=f"call {k}: x.grad")


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_constants_of_a_split_group_match_eager_bitwise(dtype):
    _needs_vml(dtype)
    compiled = jitgrad.compile(f_constants)
    rng = np.random.default_rng(5)
    for step in range(3):
        xd, wd = _pair(dtype, rng, 64)
        e_outs, e_gx, e_gw = _run(f_constants, xd, wd)
        c_outs, c_gx, c_gw = _run(compiled, xd, wd)
        np.testing.assert_array_equal(c_outs[0], e_outs[0], err_msg=f"step {step}")
        np.testing.assert_array_equal(c_gx, e_gx, err_msg=f"step {step}, x.grad")
        np.testing.assert_array_equal(c_gw, e_gw, err_msg=f"step {step}, w.grad")


def test_split_kernels_take_constants_and_addresses_as_arrays():
    # a Numba dispatcher pays for every argument on every call: the 100-op scalar graph's
    # forward took 103 and its backward 101 (75 constants, 25 VML addresses, 25 row views)
    _needs_vml(np.float32)
    import inspect

    def step(x):
        y = _scalar_chain(x)
        y.backward()
        return y

    compiled = jitgrad.compile(step)
    for _ in range(3):
        x = jitgrad.tensor(0.3, requires_grad=True)
        compiled(x)
    groups = [g for g in _groups(compiled) if g.segments is not None]
    assert groups
    for g in groups:
        fwd = g._split_kernel()[0].serial.py_func
        assert len(inspect.signature(fwd).parameters) <= 8
        for mod, _ in g._backward.values():
            assert len(inspect.signature(mod.serial.py_func).parameters) <= 8


def _groups(compiled):
    """This compiled function's own fused groups (its programs' ("group", Group) items; a scan
    of every live object would also find other tests' groups in a full-suite run)."""
    return [it for program in compiled._variants.values()
            for kind, it in program.items if kind == "group"]
