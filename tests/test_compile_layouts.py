"""jitgrad.compile replays give eager's output layouts: elementwise results keep PyTorch's
strides (a transposed operand gives a transposed result, channels_last stays channels_last)
on every call, not only the recorded one; values and gradients as PyTorch's. Each case runs
the function under PyTorch, eager jitgrad and the compiled function, several calls."""
import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch")


def _transposed_chain(lib, x, w):
    y = x.t() * 2          # a transposed operand: the result is transposed too
    z = (y + 1) * w.t() - 0.5
    return y, z


def _vml_chain(lib, x, w):
    y = (x.t() * 1.5 + 0.25).tanh()   # tanh: a VML step splitting the fused group
    z = (y * w.t()).exp() - 1
    return y, z


def _channels_last_chain(lib, x, w):
    return ((x * 2 + w).relu() - 3,)


def _size_one_dims(lib, x, w):
    xp, wp = x.permute(2, 1, 0), w.permute(2, 1, 0)   # (6, 1, 4) from (4, 1, 6) tensors
    y = xp * 3
    return (y - wp) * 0.5, y


def _channels_last(t, lib):
    return t.contiguous(memory_format=lib.channels_last)


CASES = {
    "transposed": (_transposed_chain, (4, 6), None),
    "vml_split": (_vml_chain, (5, 7), None),
    "channels_last": (_channels_last_chain, (2, 3, 4, 5), _channels_last),
    "size_one_dims": (_size_one_dims, (4, 1, 6), None),
}


def _inputs(lib, arrays, prepare, grad):
    out = []
    for a in arrays:
        t = lib.tensor(a)
        if prepare is not None:
            t = prepare(t, lib)
        out.append(t.detach().requires_grad_(grad))
    return out


def _run(lib, fn, arrays, prepare, grad):
    """fn's outputs (strides, storage offsets, values) and, with ``grad``, the inputs'
    gradients of a weighted sum of every output."""
    ins = _inputs(lib, arrays, prepare, grad)
    outs = fn(lib, *ins)
    desc = [(tuple(o.stride()), o.storage_offset(), o.detach().numpy().copy()) for o in outs]
    grads = None
    if grad:
        total = sum((o * (k + 1)).sum() for k, o in enumerate(outs))
        total.backward()
        grads = [t.grad.numpy().copy() for t in ins]
    return desc, grads, outs


def _check_same(got, want, exact):
    (gd, gg, _), (wd, wg, _) = got, want
    for (gs, go, gv), (ws, wo, wv) in zip(gd, wd):
        assert (gs, go) == (ws, wo)
        if exact:
            np.testing.assert_array_equal(gv, wv)
        else:
            np.testing.assert_allclose(gv, wv, rtol=2e-6, atol=1e-6)
    if wg is not None:
        for g, w in zip(gg, wg):
            np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("grad", [False, True], ids=["no_grad", "grad"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_replays_return_eager_layouts(case, grad):
    fn, shape, prepare = CASES[case]
    rng = np.random.default_rng(7)
    compiled = jitgrad.compile(lambda x, w: fn(jitgrad, x, w))
    with jitgrad.autograd.profile() as p:
        for _ in range(4):
            arrays = [rng.standard_normal(shape).astype(np.float32) for _ in range(2)]
            want = _run(torch, fn, arrays, prepare, grad)
            eager = _run(jitgrad, fn, arrays, prepare, grad)
            got = _run(jitgrad, lambda lib, x, w: compiled(x, w), arrays, prepare, grad)
            _check_same(eager, want, exact=False)
            # fused loops may round a product and a sum together: float rounding, not bits
            _check_same(got, eager, exact=False)
            _check_same(got, want, exact=False)
    assert p.compile_captures == 1 and p.compile_replays == 3, p.compile_reasons
    if grad:  # the replays ran the fused groups (a fallback to eager ops would not test them)
        assert "CompiledFunctionBackward" in {type(o.grad_fn).__name__ for o in got[2]}


def test_layout_that_changes_between_calls():
    """Guards see shapes, not strides: a replay whose inputs come in another layout than the
    recorded run's gives that layout's eager result (learnt once, then replayed fused)."""
    def fn(lib, x, w):
        return ((x * 2 + w) * 0.5 - 1,)

    rng = np.random.default_rng(3)
    compiled = jitgrad.compile(lambda x, w: fn(jitgrad, x, w))
    layouts = [None, "t", "t", None, "t", "cl", "cl", None]
    with jitgrad.autograd.profile() as p:
        for lay in layouts:
            if lay == "cl":
                arrays = [rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
                          for _ in range(2)]
                prepare = _channels_last
            else:
                arrays = [rng.standard_normal((4, 4, 4, 4)).astype(np.float32)
                          for _ in range(2)]
                prepare = None if lay is None else \
                    (lambda t, lib: t.permute(3, 2, 1, 0))
            want = _run(torch, fn, arrays, prepare, True)
            got = _run(jitgrad, lambda lib, x, w: compiled(x, w), arrays, prepare, True)
            _check_same(got, want, exact=False)
    assert p.compile_replays + p.compile_captures == len(layouts), p.compile_reasons


def test_operands_of_different_layouts():
    """A group whose results eager lays out differently from each other (a transposed value
    added to a contiguous one, in either order) still gives each its eager strides."""
    def fn(lib, x, w):
        y = x.t() * 2
        return y, y + w, w + y, (w * y).sigmoid()

    rng = np.random.default_rng(11)
    compiled = jitgrad.compile(lambda x, w: fn(jitgrad, x, w))
    with jitgrad.autograd.profile() as p:
        for _ in range(3):
            a = rng.standard_normal((5, 3)).astype(np.float32)
            b = rng.standard_normal((3, 5)).astype(np.float32)
            want = _run(torch, fn, [a, b], None, True)
            got = _run(jitgrad, lambda lib, x, w: compiled(x, w), [a, b], None, True)
            _check_same(got, want, exact=False)
    assert p.compile_replays == 2, p.compile_reasons
