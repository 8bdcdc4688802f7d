"""``utils.checkpoint`` (both variants) and the saved-tensor hooks it is built on, against
PyTorch (``check_observations``: values, gradients, warnings, errors, how many times the
checkpointed function ran) and against the same model run without checkpointing (bit for bit:
the same kernels run in the recomputation)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad
from tests._parity import check_observations, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")
if torch is not None:
    import torch.utils.checkpoint  # noqa: F401 - T.utils.checkpoint in the scenarios

MODES = [True, False]
_rng = np.random.default_rng(11)
W1, B1 = _rng.standard_normal((16, 8)) * 0.3, _rng.standard_normal(16) * 0.1
W2, B2 = _rng.standard_normal((8, 16)) * 0.3, _rng.standard_normal(8) * 0.1
W3 = _rng.standard_normal((24, 8)) * 0.3
X = _rng.standard_normal((4, 8))


def _linear(T, w, b=None):
    lin = T.nn.Linear(w.shape[1], w.shape[0], bias=b is not None).double()
    with T.no_grad():
        lin.weight.copy_(T.tensor(w))
        if b is not None:
            lin.bias.copy_(T.tensor(b))
    return lin


class _Counted:
    """A callable counting its calls (the checkpointed function's forward runs)."""

    def __init__(self, fn):
        self.fn, self.calls = fn, 0

    def __call__(self, *args, **kwargs):
        self.calls += 1
        return self.fn(*args, **kwargs)


def _mlp(T, p=0.0):
    return [T.nn.Sequential(_linear(T, W1, B1), T.nn.Tanh(), T.nn.Dropout(p)),
            T.nn.Sequential(_linear(T, W2, B2), T.nn.GELU())]


def _block(T, p=0.2):
    """A transformer-ish block: pre-LayerNorm self-attention and a GELU MLP, both residual,
    with dropout."""
    ln1, ln2 = T.nn.LayerNorm(8).double(), T.nn.LayerNorm(8).double()
    qkv, fc1, fc2 = _linear(T, W3), _linear(T, W1, B1), _linear(T, W2, B2)
    drop = T.nn.Dropout(p)

    def attn(x):
        q, k, v = qkv(ln1(x)).split(8, dim=-1)
        a = (q @ k.transpose(-2, -1) / 8 ** 0.5).softmax(-1)
        return x + drop(a @ v)

    def mlp(x):
        return x + drop(fc2(T.nn.functional.gelu(fc1(ln2(x)))))

    params = [*ln1.parameters(), *ln2.parameters(), qkv.weight, *fc1.parameters(),
              *fc2.parameters()]
    return attn, mlp, params


def _grads(ts):
    return [None if t.grad is None else t.grad.detach().clone() for t in ts]


# ------------------------------------------------------------------ against PyTorch


@pytest.mark.parametrize("reentrant", MODES)
def test_mlp_against_pytorch(reentrant):
    def scenario(T, record):
        ck = T.utils.checkpoint.checkpoint
        blocks = [_Counted(b) for b in _mlp(T)]
        x = T.tensor(X, requires_grad=True)
        h = x
        for b in blocks:
            h = ck(b, h, use_reentrant=reentrant)
        record("out", h)
        record("forward runs", [b.calls for b in blocks])
        (h * h).sum().backward()
        record("runs after backward", [b.calls for b in blocks])
        record("x grad", [x.grad])
        record("param grads", _grads([p for b in blocks for p in b.fn.parameters()]))
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("preserve", [True, False])
def test_block_dropout_against_pytorch(reentrant, preserve):
    """Dropout inside: with preserve_rng_state the recomputation draws the forward's masks;
    without, it draws the next ones (bit-exact generator: the same ones as PyTorch's)."""
    def scenario(T, record):
        T.manual_seed(5)
        attn, mlp, params = _block(T)
        x = T.tensor(X[None].repeat(2, 0), requires_grad=True)
        ck = T.utils.checkpoint.checkpoint
        h = ck(attn, x, use_reentrant=reentrant, preserve_rng_state=preserve)
        h = ck(mlp, h, use_reentrant=reentrant, preserve_rng_state=preserve)
        record("out", h)
        h.pow(2).sum().backward()
        record("x grad", [x.grad])
        record("param grads", _grads(params))
        record("rng after", T.rand(3, dtype=T.float64))  # checkpoint restores its state
    check_observations(scenario)


def test_use_reentrant_must_be_passed():
    def scenario(T, record):
        ck = T.utils.checkpoint
        x = T.tensor(X, requires_grad=True)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = ck.checkpoint(T.sin, x)
            z = ck.checkpoint_sequential([T.sin, T.cos], 2, x)
        record("warnings", [str(m.message) for m in w])
        record("y", y)
        record("z", z)
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
def test_inputs_not_requiring_grad(reentrant):
    """Reentrant: PyTorch's warning, and the output is cut from the graph (the parameters get
    nothing); non-reentrant: the parameters inside get their gradients."""
    def scenario(T, record):
        lin = _linear(T, W1, B1)
        x = T.tensor(X)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            y = T.utils.checkpoint.checkpoint(lin, x, use_reentrant=reentrant)
        record("warnings", [str(m.message) for m in w])
        record("y", y)
        y.sum().backward()
        record("grads", _grads(list(lin.parameters())))
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
def test_kwargs_and_non_tensor_outputs(reentrant):
    def scenario(T, record):
        ck = T.utils.checkpoint.checkpoint
        x = T.tensor(X, requires_grad=True)
        fn = _Counted(lambda t, k, scale=1.0: (t.exp() * scale, k + 1, "tag", t.sin()))
        try:
            out = ck(fn, x, 2, use_reentrant=reentrant, scale=3.0)
        except ValueError as e:
            record("kwargs error", str(e))
            out = ck(fn, x, 2, use_reentrant=reentrant)
        record("non-tensor outputs", list(out[1:3]))
        record("a", out[0])
        record("b", out[3])
        (out[0].sum() + out[3].sum()).backward()
        record("runs", fn.calls)
        record("grad", [x.grad])
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
def test_nested_checkpoints(reentrant):
    def scenario(T, record):
        ck = T.utils.checkpoint.checkpoint
        inner = _Counted(lambda t: t.sin().exp())
        outer = _Counted(lambda t: ck(inner, t.cos(), use_reentrant=reentrant).tanh() * t)
        x = T.tensor(X, requires_grad=True)
        y = ck(outer, x, use_reentrant=reentrant)
        record("y", y)
        record("forward runs", [outer.calls, inner.calls])
        y.sum().backward()
        record("runs after backward", [outer.calls, inner.calls])
        record("grad", [x.grad])
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
@pytest.mark.parametrize("segments", [1, 2, 3, 4])
def test_checkpoint_sequential(reentrant, segments):
    def scenario(T, record):
        layers = [_linear(T, W1, B1), T.nn.Tanh(), _linear(T, W2, B2), T.nn.GELU(),
                  T.nn.Softplus(), T.nn.Sigmoid()]
        counted = [_Counted(m) for m in layers]
        x = T.tensor(X, requires_grad=True)
        seq = T.nn.Sequential(*layers)
        y = T.utils.checkpoint.checkpoint_sequential(
            counted if segments != 2 else seq, segments, x, use_reentrant=reentrant)
        record("y", y)
        y.sum().backward()
        record("runs", [c.calls for c in counted])
        record("x grad", [x.grad])
        record("param grads", _grads(list(seq.parameters())))
    check_observations(scenario)


def test_determinism_check_errors():
    def scenario(T, record):
        ck = T.utils.checkpoint.checkpoint
        x = T.tensor(X, requires_grad=True)
        runs = []

        def shifty(t):  # the recomputation sees another shape
            runs.append(1)
            return (t[: 4 - len(runs) + 1] if len(runs) > 1 else t).sin().sum()

        y = ck(shifty, x, use_reentrant=False)
        try:
            y.backward()
        except RuntimeError as e:
            record("metadata error", (type(e).__name__, str(e)))
        # values are not checked: the recomputed ones are used
        for mode in ("default", "none"):
            runs.clear()
            y = ck(lambda t: (t * (runs.append(1) or len(runs))).sin().sum(), x,
                   use_reentrant=False, determinism_check=mode)
            y.backward()
            record("unchecked grad", [x.grad])
            x.grad = None

        def more(t):  # the recomputation saves fewer tensors
            runs.append(1)
            return t.sin().exp().sum() if len(runs) == 1 else t.sum()

        runs.clear()
        y = ck(more, x, use_reentrant=False)
        try:
            y.backward()
        except RuntimeError as e:
            record("count error", (type(e).__name__, str(e)))
        try:
            ck(T.sin, x, use_reentrant=False, determinism_check="shapes")
        except ValueError as e:
            record("bad mode", str(e))
        for kw in ({"context_fn": lambda: (None, None)}, {"debug": True}):
            try:
                ck(T.sin, x, use_reentrant=True, **kw)
            except ValueError as e:
                record("reentrant only", str(e))
    check_observations(scenario)


def test_reentrant_with_grad_and_inputs():
    """PyTorch's error when a reentrant checkpoint meets autograd.grad or backward(inputs=);
    the non-reentrant one supports both."""
    def scenario(T, record):
        ck = T.utils.checkpoint.checkpoint
        x = T.tensor(X, requires_grad=True)
        for reentrant in MODES:
            y = ck(lambda t: t.sin().exp(), x, use_reentrant=reentrant).sum()
            try:
                record("grad", T.autograd.grad(y, x, retain_graph=True)[0])
            except RuntimeError as e:
                record("grad error", str(e))
            try:
                y.backward(inputs=[x])
                record("inputs grad", [x.grad])
            except RuntimeError as e:
                record("inputs error", str(e))
            x.grad = None
    check_observations(scenario)


def test_early_stop_and_retain_graph():
    """Non-reentrant recomputation stops after the last saved tensor (the steps after it never
    run again) unless early stop is off; a second backward (retain_graph) recomputes again."""
    def scenario(T, record):
        ck = T.utils.checkpoint
        steps = []

        def fn(t):
            a = t.sin()
            steps.append("sin")
            b = a.exp()
            steps.append("exp")
            c = b + 1  # saves nothing
            steps.append("add")
            return c

        x = T.tensor(X, requires_grad=True)
        y = ck.checkpoint(fn, x, use_reentrant=False)
        y.sum().backward(retain_graph=True)
        record("steps", list(steps))
        y.sum().backward()
        record("steps twice", list(steps))
        record("grad", [x.grad])
        steps.clear()
        with ck.set_checkpoint_early_stop(False):
            y = ck.checkpoint(fn, x, use_reentrant=False)
        y.sum().backward()
        record("steps without early stop", list(steps))
    check_observations(scenario)


# ------------------------------------------------------------------ against no checkpoint


def _run_block(T, how, reentrant, preserve=True):
    T.manual_seed(3)
    attn, mlp, params = _block(T, p=0.3)
    blocks = _mlp(T, p=0.25)
    x = T.tensor(X[None].repeat(3, 0), requires_grad=True)
    ck = T.utils.checkpoint.checkpoint
    h = x
    for f in (attn, mlp, *blocks):
        h = f(h) if how == "plain" else ck(f, h, use_reentrant=reentrant,
                                            preserve_rng_state=preserve)
    (h.sin() * h).sum().backward()
    out = [h.detach(), x.grad, *_grads(params),
           *_grads([p for b in blocks for p in b.parameters()])]
    return [t.numpy() for t in out]


@pytest.mark.parametrize("reentrant", MODES)
def test_bit_for_bit_as_without_checkpoint(reentrant):
    plain = _run_block(jitgrad, "plain", reentrant)
    ck = _run_block(jitgrad, "ck", reentrant)
    assert all(np.array_equal(a, b) for a, b in zip(plain, ck))
    # without preserve_rng_state the recomputation's dropout masks differ (the output not)
    loose = _run_block(jitgrad, "ck", reentrant, preserve=False)
    assert np.array_equal(loose[0], plain[0])
    assert not all(np.array_equal(a, b) for a, b in zip(plain[1:], loose[1:]))


@pytest.mark.parametrize("reentrant", MODES)
def test_same_dropout_masks_as_pytorch(reentrant):
    mine = _run_block(jitgrad, "ck", reentrant)
    ref = _run_block(torch, "ck", reentrant)
    for a, b in zip(mine, ref):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_fusion_off_same_as_on():
    """Nodes whose saved tensors went through hooks are kept out of fused backward groups."""
    def run():
        x = jitgrad.tensor(X, requires_grad=True)
        y = jitgrad.utils.checkpoint.checkpoint(
            lambda t: (t.sin() * t.cos()).exp().tanh(), x, use_reentrant=False)
        (y * y).sum().backward()
        return x.grad.numpy()
    on = run()
    jitgrad.autograd.set_fusion_enabled(False)
    try:
        off = run()
    finally:
        jitgrad.autograd.set_fusion_enabled(True)
    assert np.array_equal(on, off)


# ------------------------------------------------------------------ saved-tensor hooks


def test_saved_tensor_hooks_order_and_counts():
    def scenario(T, record):
        log = []

        def pack(t):
            log.append(("pack", list(t.shape), t.requires_grad, T.is_grad_enabled()))
            return ("box", t)

        def unpack(p):
            log.append(("unpack", p[0], T.is_grad_enabled()))
            return p[1]

        a = T.tensor(X, requires_grad=True)
        with T.autograd.graph.saved_tensors_hooks(pack, unpack):
            y = a * a          # saves both factors
            z = y.exp()        # saves its result
            w = z.sin().sum()  # saves its input
        record("packed", list(log))
        log.clear()
        w.backward(retain_graph=True)
        record("unpacked", list(log))
        log.clear()
        w.backward()
        record("unpacked again", list(log))
        record("grad", [a.grad])
        try:
            w.backward()
        except RuntimeError as e:
            record("freed", str(e))
    check_observations(scenario)


def test_saved_tensor_hooks_semantics():
    def scenario(T, record):
        g = T.autograd.graph
        a = T.tensor(X, requires_grad=True)
        log = []
        # nested: only the innermost pair applies
        with g.saved_tensors_hooks(lambda t: ("outer", t), lambda p: (log.append(p[0]), p[1])[1]):
            with g.saved_tensors_hooks(lambda t: ("inner", t),
                                       lambda p: (log.append(p[0]), p[1])[1]):
                y = a.exp()
            z = y.sin()
        (y.sum() + z.sum()).backward()
        record("which", sorted(log))
        # the pack hook's output is all that is kept: no version check through hooks
        b = a.detach().clone().requires_grad_()
        c = b * 1.0
        with g.saved_tensors_hooks(lambda t: t.detach().clone(), lambda t: t):
            d = c.sin()
        with T.no_grad():
            c.add_(1)
        d.sum().backward()
        record("grad of saved before change", [b.grad])
        # create_graph through an unpacked leaf reaches the leaf
        with g.saved_tensors_hooks(lambda t: t.detach(), lambda t: t):
            s = a.sin()
        (ga,) = T.autograd.grad(s.sum(), a, create_graph=True)
        record("double backward", T.autograd.grad(ga.sum(), a)[0])
        # errors
        with g.saved_tensors_hooks(lambda t: t, lambda t: 3):
            e = a.exp()
        try:
            e.sum().backward()
        except TypeError as err:
            record("unpack type", str(err))
        with g.saved_tensors_hooks(lambda t: t.add_(1), lambda t: t):
            try:
                a.detach().clone().requires_grad_().mul(2).exp()
            except RuntimeError as err:
                record("pack in place", str(err))
        with g.disable_saved_tensors_hooks("no hooks here"):
            with g.disable_saved_tensors_hooks("nor here"):
                pass
            try:
                with g.saved_tensors_hooks(lambda t: t, lambda t: t):
                    pass
            except RuntimeError as err:
                record("disabled", str(err))
        with g.saved_tensors_hooks(lambda t: t, lambda t: t):
            try:
                with g.disable_saved_tensors_hooks("hooks are set"):
                    pass
            except RuntimeError as err:
                record("disable while set", str(err))
        with g.save_on_cpu():
            f = a.exp()
        f.sum().backward()
        record("save_on_cpu grad", [a.grad])
    check_observations(scenario)


@pytest.mark.parametrize("reentrant", MODES)
def test_composite_op_inside(reentrant):
    """An op jitgrad records as one node over a hidden graph (bilinear's TrilinearBackward0):
    its nested pass belongs to the running backward, so the function is recomputed once."""
    def scenario(T, record):
        x = T.tensor(X[:2], requires_grad=True)
        w = T.tensor(W3[:3 * 8].reshape(3, 8, 8), requires_grad=True)
        fn = _Counted(lambda t: T.nn.functional.bilinear(t, t.sin(), w).tanh())
        y = T.utils.checkpoint.checkpoint(fn, x, use_reentrant=reentrant)
        y.sum().backward()
        record("runs", fn.calls)
        record("grads", [x.grad, w.grad])
    check_observations(scenario)
