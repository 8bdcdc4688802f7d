"""Activations defined for floating types only raise PyTorch's NotImplementedError on integer and
bool tensors (gelu, leaky_relu, softplus, softmax, log_softmax, softmin); the factories require a
size (``empty()`` is PyTorch's TypeError, ``empty(())`` the 0-d tensor)."""
import warnings

import numpy as np
import pytest

import jitgrad as jt

torch = pytest.importorskip("torch")


def _same_error(build):
    errs = []
    for lib in (torch, jt):
        with pytest.raises(Exception) as ei:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                build(lib)
        errs.append(ei.value)
    assert type(errs[1]) is type(errs[0]), (errs[0], errs[1])
    assert str(errs[1]) == str(errs[0])


def F(lib):
    return lib.nn.functional


INT_DTYPES = ["int64", "int32", "int16", "int8", "uint8", "bool"]

CALLS = [
    lambda lib, t: F(lib).gelu(t),
    lambda lib, t: F(lib).gelu(t, approximate="tanh"),
    lambda lib, t: F(lib).leaky_relu(t),
    lambda lib, t: F(lib).leaky_relu(t, 0.2, inplace=True),
    lambda lib, t: F(lib).softplus(t),
    lambda lib, t: t.softmax(0),
    lambda lib, t: t.log_softmax(-1),
    lambda lib, t: F(lib).softmax(t, 0),
    lambda lib, t: F(lib).log_softmax(t, 0),
    lambda lib, t: lib.softmax(t.reshape(2, 3), 0),
    lambda lib, t: lib.log_softmax(t.reshape(2, 3), 0),
    lambda lib, t: t.reshape(2, 3, 1).softmax(1),
    lambda lib, t: t[0].softmax(0),
    lambda lib, t: t[0].log_softmax(-1),
    lambda lib, t: lib.nn.Softmax(1)(t.reshape(3, 2)),
    lambda lib, t: lib.nn.LogSoftmax(0)(t),
    lambda lib, t: lib.nn.GELU()(t),
]


def _int_tensor(lib, dtype):
    if dtype == "bool":
        return lib.tensor([True, False, True, True, False, False])
    return lib.arange(6).to(getattr(lib, dtype))


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("i", range(len(CALLS)))
def test_integer_input_raises_like_torch(i, dtype):
    _same_error(lambda lib: CALLS[i](lib, _int_tensor(lib, dtype)))


def test_softmin_of_integer_tensor_raises_like_torch():
    _same_error(lambda lib: F(lib).softmin(lib.arange(3), 0))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_integer_softmax_with_float_dtype_works(fn):
    a, b = (getattr(lib.arange(6).reshape(2, 3), fn)(1, dtype=lib.float64)
            for lib in (torch, jt))
    assert str(b.dtype) == str(a.dtype)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12)


def test_empty_integer_softmax_returns_empty_like_torch():
    for shape, dim in (((0,), 0), ((2, 0), 0), ((0, 3), 1)):
        a, b = (lib.zeros(*shape, dtype=lib.int64).softmax(dim) for lib in (torch, jt))
        assert str(b.dtype) == str(a.dtype) and tuple(b.shape) == tuple(a.shape)
        a, b = (lib.zeros(*shape, dtype=lib.int64).log_softmax(dim) for lib in (torch, jt))
        assert str(b.dtype) == str(a.dtype) and tuple(b.shape) == tuple(a.shape)


def test_bad_dim_checked_before_dtype():
    _same_error(lambda lib: lib.arange(3).softmax(5))


def test_integer_promoting_ops_still_promote():
    """Only the float-only kernels raise: exp, sigmoid, tanh, div of ints give floats."""
    for name in ("exp", "sigmoid", "tanh", "sqrt", "log1p"):
        a, b = (getattr(lib, name)(lib.arange(1, 4)) for lib in (torch, jt))
        assert str(b.dtype) == str(a.dtype)
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6)


def test_float_activations_unchanged():
    x = np.linspace(-3, 3, 6)
    for call in CALLS[:11]:
        a, b = (call(lib, lib.tensor(x)) for lib in (torch, jt))
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_factory_without_size_raises_type_error(name):
    with pytest.raises(TypeError) as t_err:
        getattr(torch, name)(dtype=torch.float32)
    with pytest.raises(TypeError) as j_err:
        getattr(jt, name)(dtype=jt.float32)
    assert str(j_err.value) == str(t_err.value)
    with pytest.raises(TypeError):
        getattr(jt, name)()


@pytest.mark.parametrize("name", ["empty", "zeros", "ones", "rand", "randn"])
def test_factory_zero_dim_and_size_keyword(name):
    for args, kw in (((), {"size": ()}), (((),), {}), (([],), {}), ((), {"size": (2, 3)}),
                     ((2, 3), {}), ((0,), {})):
        a, b = (getattr(lib, name)(*args, **kw) for lib in (torch, jt))
        assert tuple(b.shape) == tuple(a.shape)
        assert str(b.dtype) == str(a.dtype)
