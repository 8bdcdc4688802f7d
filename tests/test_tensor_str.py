"""Tests for jitgrad._tensor_str (port of torch/_tensor_str.py).

Part 1: exact outputs that PyTorch printed in the tutorials of
/work/shared/seeds/*.txt (independent references, no torch needed).
Part 2: unit checks of options, suffixes, sizes.
Part 3: a broad randomized comparison against the real torch (skipped when
torch is not installed).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from jitgrad import _tensor_str as ts
from jitgrad._tensor_str import (
    format_size,
    format_tensor,
    get_printoptions,
    set_printoptions,
)

DEFAULTS = {
    "precision": 4,
    "threshold": 1000,
    "edgeitems": 3,
    "linewidth": 80,
    "sci_mode": None,
}


@pytest.fixture(autouse=True)
def _restore_printoptions():
    set_printoptions(profile="default")
    yield
    set_printoptions(profile="default")


def f32(x):
    return np.array(x, dtype=np.float32)


# ---------------------------------------------------------------------------
# Part 1: what PyTorch printed in the seed tutorials
# ---------------------------------------------------------------------------

SEED_CASES = [
    # 000: dout/dx
    (
        f32([[4.5, 4.5], [4.5, 4.5]]),
        {},
        "tensor([[4.5000, 4.5000],\n        [4.5000, 4.5000]])",
    ),
    (f32([[9, 9], [9, 9]]), {}, "tensor([[9., 9.],\n        [9., 9.]])"),
    (
        f32([-0.0631, -0.0755, -0.1221, 0.2267, 0.2879, 0.0203, 0.2067, 0.1933]),
        {},
        "tensor([-0.0631, -0.0755, -0.1221,  0.2267,  0.2879,  0.0203,  0.2067,  0.1933])",
    ),
    (
        f32(
            [
                0.0113,
                0.0900,
                0.0055,
                0.0827,
                0.0002,
                0.0205,
                0.0006,
                0.0100,
                0.0131,
                0.0980,
            ]
        ),
        {},
        (
            "tensor([0.0113, 0.0900, 0.0055, 0.0827, 0.0002, 0.0205, 0.0006, 0.0100, 0.0131,\n"
            "        0.0980])"
        ),
    ),
    (
        f32(
            [
                [
                    0.0113,
                    0.0900,
                    0.0055,
                    0.0827,
                    0.0002,
                    0.0205,
                    0.0006,
                    0.0100,
                    0.0131,
                    0.0980,
                ]
            ]
            * 8
        ),
        {},
        "tensor(["
        + ",\n        ".join(
            [
                "[0.0113, 0.0900, 0.0055, 0.0827, 0.0002, 0.0205, 0.0006, 0.0100, 0.0131,\n         0.0980]"
            ]
            * 8
        )
        + "])",
    ),
    (f32([0.6912, 0.3989, 0.8603]), {}, "tensor([0.6912, 0.3989, 0.8603])"),
    (
        f32([1, 21, 6]),
        {"grad_fn_name": "CopySlices"},
        "tensor([ 1., 21.,  6.], grad_fn=<CopySlices>)",
    ),
    (f32([4, 23]), {}, "tensor([ 4., 23.])"),
    # 001
    (f32([8]), {}, "tensor([8.])"),
    (
        f32([[2, 8, 18], [32, 50, 72]]),
        {},
        "tensor([[ 2.,  8., 18.],\n        [32., 50., 72.]])",
    ),
    (
        f32([[2, 4, 6], [8, 10, 12]]),
        {},
        "tensor([[ 2.,  4.,  6.],\n        [ 8., 10., 12.]])",
    ),
    (
        f32([[73, 67, 43], [91, 88, 64], [87, 134, 58], [102, 43, 37], [69, 96, 70]]),
        {"requires_grad": True},
        (
            "tensor([[ 73.,  67.,  43.],\n"
            "        [ 91.,  88.,  64.],\n"
            "        [ 87., 134.,  58.],\n"
            "        [102.,  43.,  37.],\n"
            "        [ 69.,  96.,  70.]], requires_grad=True)"
        ),
    ),
    (
        f32(
            [
                [146, 134, 86],
                [182, 176, 128],
                [174, 268, 116],
                [204, 86, 74],
                [138, 192, 140],
            ]
        ),
        {},
        (
            "tensor([[146., 134.,  86.],\n"
            "        [182., 176., 128.],\n"
            "        [174., 268., 116.],\n"
            "        [204.,  86.,  74.],\n"
            "        [138., 192., 140.]])"
        ),
    ),
    (
        np.arange(1, 16, dtype=np.float32).reshape(5, 3),
        {"requires_grad": True},
        (
            "tensor([[ 1.,  2.,  3.],\n"
            "        [ 4.,  5.,  6.],\n"
            "        [ 7.,  8.,  9.],\n"
            "        [10., 11., 12.],\n"
            "        [13., 14., 15.]], requires_grad=True)"
        ),
    ),
    (
        np.arange(2, 31, 2, dtype=np.float32).reshape(5, 3),
        {},
        (
            "tensor([[ 2.,  4.,  6.],\n"
            "        [ 8., 10., 12.],\n"
            "        [14., 16., 18.],\n"
            "        [20., 22., 24.],\n"
            "        [26., 28., 30.]])"
        ),
    ),
    # 003
    (f32([[1.2, 2.4]]), {}, "tensor([[1.2000, 2.4000]])"),
    (f32([0.6, 0.6]), {}, "tensor([0.6000, 0.6000])"),
    (f32([[2.2, 3.4]]), {}, "tensor([[2.2000, 3.4000]])"),
    (f32([[3.2, 4.4]]), {}, "tensor([[3.2000, 4.4000]])"),
    (f32([[1, 1]]), {}, "tensor([[1., 1.]])"),
    (f32([3, 3]), {}, "tensor([3., 3.])"),
    (f32([2, 2]), {}, "tensor([2., 2.])"),
    (np.array([True, True]), {"dtype": "bool"}, "tensor([True, True])"),
    (
        np.array([[True], [True]]),
        {"dtype": "bool"},
        "tensor([[True],\n        [True]])",
    ),
    (np.array(True), {"dtype": "bool"}, "tensor(True)"),
    (f32([2.0]), {}, "tensor([2.])"),
    (f32([2, 4, 8, 16]), {}, "tensor([ 2.,  4.,  8., 16.])"),
    # 004
    (f32(3.0), {}, "tensor(3.)"),
    (f32([2, 4]), {}, "tensor([2., 4.])"),
    (f32([2, 8]), {}, "tensor([2., 8.])"),
    (f32([6, 192]), {}, "tensor([  6., 192.])"),
    (f32([12, 384]), {}, "tensor([ 12., 384.])"),
    (f32([48, 48]), {}, "tensor([48., 48.])"),
    (f32([144, 144]), {}, "tensor([144., 144.])"),
    (f32([[2, 0, 0, 0]]), {}, "tensor([[2., 0., 0., 0.]])"),
    (f32([[0, 2, 0, 0]]), {}, "tensor([[0., 2., 0., 0.]])"),
]


@pytest.mark.parametrize("data,kwargs,expected", SEED_CASES)
def test_seed_tutorial_outputs(data, kwargs, expected):
    kwargs = dict(kwargs)
    kwargs.setdefault("dtype", "float32")
    assert format_tensor(data, **kwargs) == expected


def test_seed_sizes():
    assert format_size((15,)) == "torch.Size([15])"
    assert format_size((5, 3)) == "torch.Size([5, 3])"
    assert format_size((2, 1)) == "torch.Size([2, 1])"


# ---------------------------------------------------------------------------
# Part 2: hand-written checks
# ---------------------------------------------------------------------------


def test_scalars():
    assert format_tensor(f32(1.2), dtype="float32") == "tensor(1.2000)"
    assert format_tensor(f32(-0.0), dtype="float32") == "tensor(-0.)"
    assert format_tensor(f32(np.nan), dtype="float32") == "tensor(nan)"
    assert format_tensor(f32(-np.inf), dtype="float32") == "tensor(-inf)"
    assert format_tensor(np.array(3), dtype="int64") == "tensor(3)"
    assert format_tensor(np.array(3), dtype="int32") == "tensor(3, dtype=torch.int32)"
    assert (
        format_tensor(np.array(1.5), dtype="float64")
        == "tensor(1.5000, dtype=torch.float64)"
    )
    assert (
        format_tensor(f32(1.0), dtype="float32", requires_grad=True)
        == "tensor(1., requires_grad=True)"
    )
    assert (
        format_tensor(
            f32(2.0), dtype="float32", requires_grad=True, grad_fn_name="MulBackward0"
        )
        == "tensor(2., grad_fn=<MulBackward0>)"
    )


def test_empty():
    assert format_tensor(np.zeros(0, np.float32), dtype="float32") == "tensor([])"
    assert (
        format_tensor(np.zeros(0, np.int64), dtype="int64")
        == "tensor([], dtype=torch.int64)"
    )
    assert (
        format_tensor(np.zeros((2, 0)), dtype="float64")
        == "tensor([], size=(2, 0), dtype=torch.float64)"
    )
    assert format_tensor(
        np.zeros((0, 3), np.float32), dtype="float32", requires_grad=True
    ) == ("tensor([], size=(0, 3), requires_grad=True)")


def test_device_suffix():
    assert (
        format_tensor(f32([1, 2]), dtype="float32", device="cuda:0")
        == "tensor([1., 2.], device='cuda:0')"
    )
    assert (
        format_tensor(f32([1, 2]), dtype="float32", device="cuda")
        == "tensor([1., 2.], device='cuda:0')"
    )
    assert (
        format_tensor(
            np.array([1.5]), dtype="float64", device="cuda:1", requires_grad=True
        )
        == "tensor([1.5000], device='cuda:1', dtype=torch.float64, requires_grad=True)"
    )
    # suffix that does not fit goes on its own line, indented by len(prefix)
    data = f32([0.0113, 0.0900, 0.0055, 0.0827, 0.0002, 0.0205, 0.0006, 0.0100, 0.0131])
    assert format_tensor(
        data, dtype="float32", device="cuda:0", grad_fn_name="AddBackward0"
    ) == (
        "tensor([0.0113, 0.0900, 0.0055, 0.0827, 0.0002, 0.0205, 0.0006, 0.0100, 0.0131],\n"
        "       device='cuda:0', grad_fn=<AddBackward0>)"
    )


def test_default_dtype_float64():
    assert format_tensor(f32([1, 2]), dtype="float32", default_dtype="float64") == (
        "tensor([1., 2.], dtype=torch.float32)"
    )
    assert (
        format_tensor(np.array([1.0, 2.0]), dtype="float64", default_dtype="float64")
        == "tensor([1., 2.])"
    )


def test_dtype_aliases():
    assert (
        format_tensor(np.array([1.0]), dtype="torch.float64")
        == "tensor([1.], dtype=torch.float64)"
    )
    assert (
        format_tensor(np.array([1.0]), dtype="double")
        == "tensor([1.], dtype=torch.float64)"
    )
    assert format_tensor(np.array([1]), dtype="long") == "tensor([1])"
    with pytest.raises(ValueError):
        format_tensor(np.array([1]), dtype="complex64")


def test_summarize():
    assert (
        format_tensor(np.arange(2000), dtype="int64")
        == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])"
    )
    set_printoptions(threshold=5)
    assert (
        format_tensor(np.arange(10), dtype="int64")
        == "tensor([0, 1, 2,  ..., 7, 8, 9])"
    )
    set_printoptions(edgeitems=0, threshold=5)
    assert format_tensor(
        np.arange(20.0, dtype=np.float32).reshape(4, 5), dtype="float32"
    ) == ("tensor([...], size=(4, 5))")


def test_printoptions_api():
    assert get_printoptions() == DEFAULTS
    set_printoptions(profile="short")
    assert get_printoptions() == {**DEFAULTS, "precision": 2, "edgeitems": 2}
    assert format_tensor(f32([1.12345]), dtype="float32") == "tensor([1.12])"
    set_printoptions(profile="full")
    assert get_printoptions() == {**DEFAULTS, "threshold": math.inf}
    set_printoptions(precision=6, sci_mode=True)
    assert (
        get_printoptions()["precision"] == 6 and get_printoptions()["sci_mode"] is True
    )
    # every call resets sci_mode, as in torch
    set_printoptions(linewidth=100)
    assert (
        get_printoptions()["sci_mode"] is None
        and get_printoptions()["linewidth"] == 100
    )
    set_printoptions(profile="default")
    assert get_printoptions() == DEFAULTS
    with ts.printoptions(precision=1):
        assert format_tensor(f32([1.25]), dtype="float32") == "tensor([1.2])"
    assert get_printoptions() == DEFAULTS


def test_format_size():
    assert format_size(()) == "torch.Size([])"
    assert format_size((2, 3)) == "torch.Size([2, 3])"
    assert format_size((np.int64(4),)) == "torch.Size([4])"


# ---------------------------------------------------------------------------
# Part 3: randomized comparison against torch
# ---------------------------------------------------------------------------

N_CHUNKS = 60
CASES_PER_CHUNK = 100  # 6000 random cases in all

FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]
INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8"]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + ["bool"]

_NP = {
    "float32": np.float32,
    "float64": np.float64,
    "float16": np.float16,
    "bfloat16": np.float32,
    "int64": np.int64,
    "int32": np.int32,
    "int16": np.int16,
    "int8": np.int8,
    "uint8": np.uint8,
    "bool": np.bool_,
}


def _random_shape(rng):
    r = rng.random()
    if r < 0.08:
        return ()
    if r < 0.14:  # empty
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(0, 4)) for _ in range(nd)]
        shape[int(rng.integers(0, nd))] = 0
        return tuple(shape)
    if r < 0.22:  # long 1-d, summarized at the default threshold
        return (int(rng.integers(990, 3000)),)
    if r < 0.30:  # big 2-d / 3-d (summarized)
        if rng.random() < 0.5:
            return (int(rng.integers(20, 60)), int(rng.integers(20, 60)))
        return (
            int(rng.integers(5, 15)),
            int(rng.integers(5, 15)),
            int(rng.integers(5, 15)),
        )
    if r < 0.45:  # wide rows that wrap
        nd = int(rng.integers(1, 4))
        shape = [int(rng.integers(1, 4)) for _ in range(nd - 1)] + [
            int(rng.integers(8, 40))
        ]
        return tuple(shape)
    nd = int(rng.integers(1, 6))
    return tuple(int(rng.integers(1, 5)) for _ in range(nd))


_ROUND_EDGES = [
    0.5,
    1.5,
    2.5,
    0.125,
    0.375,
    9.99995,
    99.99995,
    0.00005,
    0.99995,
    999.5,
    9999.5,
    99999999.0,
    100000000.0,
    100000001.0,
    1e8,
    1.0001e8,
    1e-4,
    0.99999e-4,
    1000.0,
    0.001,
    1.0,
    123456.789,
    5e-5,
    0.1,
    0.2,
    0.3,
    1e16,
    2.0**53,
    65504.0,
    3.4e38,
]


def _random_floats(rng, n, dtype):
    kind = rng.choice(
        [
            "normal",
            "uniform",
            "intvalued",
            "bigint",
            "edges",
            "magnitudes",
            "zeros",
            "extreme",
            "ratio",
        ]
    )
    if kind == "normal":
        v = rng.standard_normal(n) * 10.0 ** rng.uniform(-8, 10)
    elif kind == "uniform":
        v = rng.uniform(0, 1, n) * 10.0 ** int(rng.integers(-3, 4))
    elif kind == "intvalued":
        v = rng.integers(-1000, 1000, n).astype(np.float64)
    elif kind == "bigint":
        v = rng.integers(-(10**6), 10**6, n).astype(np.float64) * 10.0 ** int(
            rng.integers(0, 12)
        )
    elif kind == "edges":
        v = rng.choice(_ROUND_EDGES, n) * rng.choice([-1.0, 1.0], n)
    elif kind == "magnitudes":
        v = 10.0 ** rng.uniform(-20, 20, n) * rng.choice([-1.0, 1.0], n)
    elif kind == "zeros":
        v = np.zeros(n)
    elif kind == "extreme":
        v = rng.choice(
            [1e-300, 5e-324, 1e300, 1.7e308, 1e-45, 1e-38, 3e38, 1e-7, 6e-8, 1.0], n
        )
        v = v * rng.choice([-1.0, 1.0], n)
    else:  # ratio near the 1000 boundary
        base = 10.0 ** rng.uniform(-3, 5)
        v = base * rng.choice([1.0, 999.0, 1000.0, 1001.0, 10.0], n)
    if rng.random() < 0.5 and n:
        k = int(rng.integers(1, max(2, n // 3) + 1))
        idx = rng.integers(0, n, k)
        v = v.astype(np.float64)
        v[idx] = rng.choice([np.nan, np.inf, -np.inf, -0.0, 0.0], k)
    with np.errstate(all="ignore"):
        return v.astype(_NP[dtype])


def _random_ints(rng, n, dtype):
    info = np.iinfo(_NP[dtype])
    kind = rng.choice(["small", "medium", "full", "nonneg"])
    if kind == "small":
        lo, hi = -10, 10
    elif kind == "medium":
        lo, hi = -100000, 100000
    elif kind == "nonneg":
        lo, hi = 0, 1000
    else:
        lo, hi = int(info.min), int(info.max)
    lo, hi = max(lo, int(info.min)), min(hi, int(info.max))
    return rng.integers(lo, hi, n, endpoint=True, dtype=np.int64).astype(_NP[dtype])


def _random_options(rng):
    if rng.random() < 0.45:
        return None
    opts = {}
    if rng.random() < 0.3:
        opts["profile"] = str(rng.choice(["default", "short", "full"]))
    if rng.random() < 0.5:
        opts["precision"] = int(rng.integers(0, 11))
    if rng.random() < 0.4:
        opts["threshold"] = [0, 1, 5, 10, 50, 100, 1000, math.inf][
            int(rng.integers(0, 8))
        ]
    if rng.random() < 0.4:
        opts["edgeitems"] = int(rng.integers(0, 6))
    if rng.random() < 0.5:
        opts["linewidth"] = [1, 10, 30, 60, 80, 100, 150, 300][int(rng.integers(0, 8))]
    if rng.random() < 0.5:
        opts["sci_mode"] = [None, True, False][int(rng.integers(0, 3))]
    return opts


def _make_case(rng):
    dtype = ALL_DTYPES[int(rng.integers(0, len(ALL_DTYPES)))]
    shape = _random_shape(rng)
    n = int(np.prod(shape)) if shape else 1
    if dtype in FLOAT_DTYPES:
        flat = _random_floats(rng, n, dtype)
    elif dtype == "bool":
        flat = rng.random(n) < rng.random()
    else:
        flat = _random_ints(rng, n, dtype)
    data = np.asarray(flat).reshape(shape)
    if rng.random() < 0.1 and data.ndim >= 2:
        data = np.swapaxes(data, 0, -1)  # non-contiguous input
    autograd = "none"
    if dtype in FLOAT_DTYPES:
        autograd = str(rng.choice(["none", "none", "leaf", "clone", "mul", "view"]))
    default64 = bool(rng.random() < 0.1)
    subclass = bool(rng.random() < 0.05)
    return dtype, data, autograd, _random_options(rng), default64, subclass


@pytest.fixture
def torch_mod():
    torch = pytest.importorskip("torch")
    torch.set_printoptions(profile="default")
    yield torch
    torch.set_printoptions(profile="default")
    torch.set_default_dtype(torch.float32)


_MY_TENSOR = []


def _my_tensor_class(torch):
    if not _MY_TENSOR:

        class MyTensor(torch.Tensor):
            pass

        _MY_TENSOR.append(MyTensor)
    return _MY_TENSOR[0]


def _torch_repr(torch, dtype, data, autograd, subclass):
    if dtype == "bfloat16":
        t = torch.from_numpy(np.array(data, order="C", copy=True)).to(torch.bfloat16)
    else:
        t = torch.from_numpy(np.array(data, order="C", copy=True))
    grad_fn_name = None
    requires_grad = False
    if autograd != "none":
        t = t.requires_grad_(True)
        requires_grad = True
        if autograd == "clone":
            t = t.clone()
        elif autograd == "mul":
            t = t * 1
        elif autograd == "view":
            t = t.view(t.shape)
    prefix = "tensor("
    if subclass:
        t = t.as_subclass(_my_tensor_class(torch))
        prefix = "MyTensor("
    if t.grad_fn is not None:
        grad_fn_name = type(t.grad_fn).__name__
    return repr(t), requires_grad, grad_fn_name, prefix


def _run_case(torch, rng):
    dtype, data, autograd, opts, default64, subclass = _make_case(rng)
    torch.set_printoptions(profile="default")
    set_printoptions(profile="default")
    torch.set_default_dtype(torch.float64 if default64 else torch.float32)
    try:
        if opts is not None:
            torch.set_printoptions(**opts)
            set_printoptions(**opts)
        expected, requires_grad, grad_fn_name, prefix = _torch_repr(
            torch, dtype, data, autograd, subclass
        )
        got = format_tensor(
            data,
            dtype=dtype,
            requires_grad=requires_grad,
            grad_fn_name=grad_fn_name,
            default_dtype="float64" if default64 else "float32",
            prefix=prefix,
        )
        assert get_printoptions() == dict(torch._tensor_str.get_printoptions()), (
            "print options diverged"
        )
    finally:
        torch.set_printoptions(profile="default")
        set_printoptions(profile="default")
        torch.set_default_dtype(torch.float32)
    if got != expected:
        return (
            f"dtype={dtype} shape={data.shape} autograd={autograd} opts={opts} default64={default64}\n"
            f"data={data.ravel()[:12]!r}\n--- torch:\n{expected}\n--- jitgrad:\n{got}"
        )
    return None


@pytest.mark.parametrize("chunk", range(N_CHUNKS))
def test_random_against_torch(torch_mod, chunk):
    rng = np.random.default_rng(12345 + chunk)
    failures = []
    for _ in range(CASES_PER_CHUNK):
        msg = _run_case(torch_mod, rng)
        if msg is not None:
            failures.append(msg)
    assert not failures, f"{len(failures)} mismatches; first:\n" + failures[0]


def test_format_size_against_torch(torch_mod):
    rng = np.random.default_rng(7)
    for _ in range(50):
        shape = tuple(int(x) for x in rng.integers(0, 20, int(rng.integers(0, 5))))
        assert format_size(shape) == repr(torch_mod.Size(shape))


def test_set_printoptions_state_matches_torch(torch_mod):
    calls = [
        {},
        {"profile": "short"},
        {"profile": "full", "precision": 2},
        {"sci_mode": True},
        {"linewidth": 120},
        {"threshold": 10, "edgeitems": 1, "sci_mode": False},
        {"profile": "default"},
    ]
    try:
        for kw in calls:
            torch_mod.set_printoptions(**kw)
            set_printoptions(**kw)
            assert get_printoptions() == torch_mod._tensor_str.get_printoptions()
    finally:
        torch_mod.set_printoptions(profile="default")


def test_hypothesis_arbitrary_floats_against_torch(torch_mod):
    hyp = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")
    hnp = pytest.importorskip("hypothesis.extra.numpy")

    @hyp.settings(max_examples=400, deadline=None, derandomize=True)
    @hyp.given(
        arr=hnp.arrays(
            dtype=st.sampled_from([np.float32, np.float64, np.float16]),
            shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=12),
        ),
        precision=st.integers(0, 8),
        linewidth=st.sampled_from([20, 80, 120]),
    )
    def check(arr, precision, linewidth):
        try:
            torch_mod.set_printoptions(precision=precision, linewidth=linewidth)
            set_printoptions(precision=precision, linewidth=linewidth)
            expected = repr(torch_mod.from_numpy(np.array(arr, order="C", copy=True)))
            got = format_tensor(arr, dtype=str(arr.dtype))
        finally:
            torch_mod.set_printoptions(profile="default")
            set_printoptions(profile="default")
        assert got == expected

    check()
