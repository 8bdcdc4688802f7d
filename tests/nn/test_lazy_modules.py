"""Lazy modules and uninitialized parameters against PyTorch run in the same test: shapes
inferred on the first forward, the class swap, the same RNG draws as the eager module, state
dicts in both states, conversions before the dry run, errors."""
import copy
import pickle

import numpy as np
import pytest

import jitgrad
from tests._parity import agree, neutral_run, same_observations

torch = pytest.importorskip("torch")


def agree_close(fn):
    """``agree`` with a 1e-6 relative tolerance on floats: a float32 Linear/conv output may
    differ from PyTorch's in the last ulp (its GEMM sums in another order)."""
    mine, ref = neutral_run(jitgrad, fn), neutral_run(torch, fn)
    assert same_observations(mine, ref), f"\njitgrad: {mine}\ntorch:   {ref}"

LAZY_CASES = [
    ("LazyLinear", (5,), {}, (3, 4)),
    ("LazyLinear", (2,), {"bias": False}, (2, 3, 6)),
    ("LazyConv1d", (4, 3), {"padding": 1}, (2, 3, 7)),
    ("LazyConv2d", (4, 3), {"stride": 2, "groups": 2}, (2, 6, 7, 7)),
    ("LazyConv2d", (3, 2), {"bias": False}, (2, 5, 5)),  # unbatched
    ("LazyConv3d", (2, 2), {}, (1, 3, 4, 4, 4)),
    ("LazyConvTranspose1d", (4, 3), {"stride": 2}, (2, 3, 5)),
    ("LazyConvTranspose2d", (2, 3), {"output_padding": 1, "stride": 2}, (2, 4, 4, 4)),
    ("LazyConvTranspose3d", (2, 2), {"groups": 2}, (1, 4, 3, 3, 3)),
    ("LazyBatchNorm1d", (), {}, (4, 3)),
    ("LazyBatchNorm2d", (), {"affine": False}, (2, 3, 4, 4)),
    ("LazyBatchNorm3d", (), {"momentum": None}, (2, 3, 2, 2, 2)),
    ("LazyInstanceNorm1d", (), {}, (2, 3, 6)),
    ("LazyInstanceNorm2d", (), {"track_running_stats": False}, (2, 3, 4, 4)),
    ("LazyInstanceNorm3d", (), {"affine": False, "bias": False}, (1, 2, 3, 3, 3)),
]
EAGER = {"LazyLinear": "Linear", "LazyConv1d": "Conv1d", "LazyConv2d": "Conv2d",
         "LazyConv3d": "Conv3d", "LazyConvTranspose1d": "ConvTranspose1d",
         "LazyConvTranspose2d": "ConvTranspose2d", "LazyConvTranspose3d": "ConvTranspose3d"}


def _state(lib, m):
    return [(k, v) for k, v in m.state_dict().items()]


@pytest.mark.parametrize("name,args,kw,shape", LAZY_CASES)
def test_first_forward_initializes_and_becomes_eager(name, args, kw, shape):
    def run(lib):
        lib.manual_seed(0)
        m = getattr(lib.nn, name)(*args, **kw)
        before = (type(m).__name__, repr(m), m.has_uninitialized_params(),
                  [repr(v) for v in m.state_dict().values()],
                  [type(p).__name__ for p in m.parameters()])
        x = lib.randn(*shape, requires_grad=True)
        y = m(x)
        y.sum().backward()
        after = (type(m).__name__, repr(m), hasattr(m, "_initialize_hook"),
                 len(m._forward_pre_hooks), len(m._load_state_dict_pre_hooks),
                 [type(p).__name__ for p in m.parameters()])
        grads = [p.grad for p in m.parameters()]
        return before, after, y, y.grad_fn.name(), x.grad, grads, _state(lib, m)
    agree_close(run)


@pytest.mark.parametrize("name,args,kw,shape",
                         [c for c in LAZY_CASES if c[0] in EAGER])
def test_same_draws_as_the_eager_module(name, args, kw, shape):
    # materialize + reset_parameters consume the generator as the eager constructor does
    lazy_x = jitgrad.randn(*shape)
    jitgrad.manual_seed(3)
    lazy = getattr(jitgrad.nn, name)(*args, **kw)
    lazy(lazy_x)
    torch.manual_seed(3)
    if name == "LazyLinear":
        in_ch = shape[-1]
    else:
        nd = int(name[-2])
        in_ch = shape[1] if len(shape) == nd + 2 else shape[0]
    eager = getattr(torch.nn, EAGER[name])(in_ch, *args, **kw)
    for (k, a), (k2, b) in zip(lazy.state_dict().items(), eager.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_dtype_conversion_before_the_dry_run():
    def run(lib):
        lib.manual_seed(1)
        m = lib.nn.Sequential(lib.nn.LazyLinear(4), lib.nn.ReLU(), lib.nn.LazyBatchNorm1d())
        m = m.double()
        kinds = [(type(t).__name__, str(t.dtype)) for t in m.state_dict().values()]
        y = m(lib.randn(5, 3, dtype=lib.float64))
        return kinds, y, repr(m), _state(lib, m)
    agree_close(run)


def test_state_dict_round_trips():
    def run(lib):
        lib.manual_seed(2)
        full = lib.nn.LazyLinear(3)
        full(lib.ones(2, 4))
        lazy = lib.nn.LazyLinear(3)
        out = [lazy.load_state_dict(full.state_dict()), type(lazy).__name__,
               lazy.has_uninitialized_params(), lazy.in_features, _state(lib, lazy)]
        y = lazy(lib.ones(2, 4))  # stays as loaded: the dry run only sets in_features
        out += [type(lazy).__name__, lazy.in_features, y.detach().double().round(decimals=5)]
        # lazy into lazy: nothing materializes
        a, b = lib.nn.LazyBatchNorm2d(), lib.nn.LazyBatchNorm2d()
        out += [b.load_state_dict(a.state_dict()), b.has_uninitialized_params(),
                [repr(v) for v in b.state_dict().values()]]
        return out
    agree(run)


def test_uninitialized_into_initialized_module_raises():
    def run(lib):
        lib.nn.Linear(4, 3).load_state_dict(lib.nn.LazyLinear(3).state_dict())
    agree(run)


def test_in_features_mismatch_after_loading():
    def run(lib):
        lazy = lib.nn.LazyLinear(3)
        lazy.load_state_dict(lib.nn.Linear(4, 3).state_dict())
        lazy(lib.ones(2, 5))
    agree(run)


@pytest.mark.parametrize("build,shape", [
    (lambda lib: lib.nn.LazyConv2d(4, 3, groups=2), (1, 3, 5, 5)),
    (lambda lib: lib.nn.LazyConv2d(4, 3), (5, 5)),
    (lambda lib: lib.nn.LazyConvTranspose1d(4, 3), (1, 2, 3, 5)),
    (lambda lib: lib.nn.LazyBatchNorm2d(), (2, 3)),
])
def test_bad_first_input(build, shape):
    def run(lib):
        return build(lib)(lib.ones(*shape))
    agree(run)


@pytest.mark.parametrize("use", [
    lambda lib, p: p.sum(),
    lambda lib, p: p.numel(),
    lambda lib, p: p.detach(),
    lambda lib, p: p.shape,
    lambda lib, p: lib.nn.functional.linear(lib.ones(2, 3), p),
    lambda lib, p: (p.size(), str(p.dtype), str(p.device), p.requires_grad, p.is_leaf,
                    p.grad, p.ndim, p.is_floating_point(), repr(p), str(p)),
    lambda lib, p: (type(p.double()).__name__, str(p.double().dtype), p.to(lib.float16).dtype),
])
def test_use_of_an_uninitialized_parameter(use):
    agree(lambda lib: use(lib, lib.nn.UninitializedParameter()))


def test_ops_on_uninitialized_raise_value_error():
    p = jitgrad.nn.UninitializedParameter()
    for fn in (lambda: p + 1, lambda: jitgrad.add(p, 1), lambda: p * p,
               lambda: jitgrad.nn.init.uniform_(p), lambda: jitgrad.matmul(p, p)):
        with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
            fn()
    tp = torch.nn.UninitializedParameter()
    with pytest.raises(ValueError, match="Attempted to use an uninitialized parameter in"):
        torch.matmul(tp, tp)
    with pytest.raises(RuntimeError, match="Can't share memory on an uninitialized"):
        p.share_memory_()


def test_uninitialized_buffer_and_materialize():
    def run(lib):
        b = lib.nn.UninitializedBuffer(dtype=lib.float64)
        c = b.float()
        out = [type(b).__name__, b.persistent, type(c).__name__, str(c.dtype), repr(b)]
        b.materialize((2, 3))
        p = lib.nn.UninitializedParameter(requires_grad=False)
        p.materialize((4,), dtype=lib.float64)
        out += [type(b).__name__, tuple(b.shape), type(p).__name__, str(p.dtype),
                p.requires_grad, tuple(p.shape)]
        return out
    agree(run)


def test_deepcopy_pickle_and_optimizer_before_init():
    def run(lib):
        lib.manual_seed(4)
        m = lib.nn.LazyLinear(2)
        opt = lib.optim.SGD(m.parameters(), lr=0.5)
        twin = copy.deepcopy(m)
        q = pickle.loads(pickle.dumps(lib.nn.UninitializedParameter(False)))
        out = [type(twin).__name__, repr(twin.weight), type(q).__name__, q.requires_grad]
        m(lib.ones(3, 4)).pow(2).sum().backward()
        opt.step()  # the optimizer holds the same (now materialized) Parameter objects
        out += [_state(lib, m), type(m.weight).__name__]
        return out
    agree_close(run)


@pytest.mark.parametrize("initialize", [False, True])
def test_mixin_protocol_errors(initialize):
    def run(lib):
        class Half(lib.nn.modules.lazy.LazyModuleMixin, lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.UninitializedParameter()
                self.b = lib.nn.UninitializedParameter()

            def forward(self, x):
                return x

        if initialize:
            Half.initialize_parameters = lambda self, x: self.a.materialize((2,))
        return Half()(lib.ones(2))
    agree(run)
