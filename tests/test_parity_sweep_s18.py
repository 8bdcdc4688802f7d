"""Parity sweep (session 18), run under jitgrad and PyTorch and compared whole (the result's
dtype, shape, values, strides, grad_fn name, or the error's type and first line:
``tests/_parity.check_snippet``; the parser's multi-line messages also in full). Each case
differed before its fix: ``arange``'s parser (``arange(start=1)`` lacks "end", a step without
a start is no overload), the "invalid combination" of narrow/movedim/moveaxis called with an
argument missing or one too many (function and method forms), gather's one-signature parser
errors, NumPy's bool as a Number (a double to PyTorch: ``int32 + np.bool_(True)`` is float32),
and the all-zero strides of an empty tensor's ``numpy()``."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
from tests._parity import check_snippet, describe_with_layout, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _check(code):
    check_snippet("x = torch.arange(12.).reshape(3, 4)\n"
                  "i = torch.tensor([[0, 1, 2, 0], [2, 1, 0, 1], [1, 1, 1, 1]])\n" + code,
                  describe_with_layout)


def _whole_error(lib, code):
    """The full message of the TypeError ``code`` raises (the parser's lists of signatures
    span several lines, which ``check_snippet`` leaves out)."""
    x = lib.arange(12.).reshape(3, 4)
    i = lib.tensor([[0, 1, 2, 0], [2, 1, 0, 1], [1, 1, 1, 1]])
    try:
        eval(code, {"torch": lib, "x": x, "i": i, "np": np})
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return type(e).__name__, str(e)
    return None


ARANGE = [
    "torch.arange(start=1)", "torch.arange(step=2)", "torch.arange(start=1.5)",
    "torch.arange(start=torch.tensor(1))", "torch.arange(dtype=torch.float32)",
    "torch.arange(end=5, step=2)", "torch.arange(start=1, step=2)",
    "torch.arange(start=1, dtype=torch.float32)", "torch.arange(1, start=2)",
    "torch.arange(1, 2, 3, 4)", "torch.arange(end='a')", "torch.arange(end=None)",
    "torch.arange(foo=1)", "torch.arange(5, foo=1)", "torch.arange(1, 2, foo=1)",
]


@pytest.mark.parametrize("code", ARANGE)
def test_arange_parser(code):
    _check(code)
    assert _whole_error(jitgrad, code) == _whole_error(torch, code)


def test_arange_by_keyword():
    # every argument by keyword binds as PyTorch's parser binds it; one alone must be "end"
    for code in ["torch.arange(start=1)", "torch.arange(1, end=5)",
                 "torch.arange(start=1, end=5, step=2)", "torch.arange(end=5, start=1)",
                 "torch.arange(end=5, dtype=torch.float32)", "torch.arange(step=1, end=2, start=0)",
                 "torch.arange(2, 5, 2, dtype=torch.int32)"]:
        _check(code)


NARROW_MOVEDIM = [
    "torch.narrow(x, 0, 1)", "torch.narrow(x, 0)", "torch.narrow(x)", "torch.narrow()",
    "x.narrow(0, 1)", "x.narrow(0)", "x.narrow()", "x.narrow(0, length=1)",
    "x.narrow(dim=0, start=1)", "torch.narrow(input=x, dim=0, start=1)",
    "torch.narrow(x, 0, start=1)", "x.narrow(0, 1, 2, 3)", "torch.narrow(x, 0, 1, 2, 3)",
    "x.narrow(0, 1, 2, foo=1)", "x.narrow(0, 1, dim=2)", "torch.narrow(x, 0, 1, foo=1)",
    "x.movedim(0)", "x.movedim()", "torch.movedim(x, 0)", "torch.movedim(x)",
    "x.movedim(source=0)", "x.movedim(destination=0)", "x.movedim(0, 1, 2)",
    "torch.movedim(x, 0, 1, 2)", "x.movedim(0, 1, foo=2)",
    "x.moveaxis(0)", "torch.moveaxis(x, 0)",
]


@pytest.mark.parametrize("code", NARROW_MOVEDIM)
def test_narrow_movedim_missing_arguments(code):
    _check(code)
    # the parser's whole message: the signatures it tried (without self for the methods)
    assert _whole_error(jitgrad, code) == _whole_error(torch, code)


def test_narrow_movedim_bind_by_keyword():
    # a call missing its last argument fails; the same call complete binds by keyword too
    for code in ["x.narrow(0, 1)", "x.narrow(0, 1, length=2)",
                 "torch.narrow(x, dim=0, start=1, length=2)",
                 "torch.narrow(input=x, dim=1, start=1, length=2)", "x.movedim(0)",
                 "x.movedim(0, destination=1)", "x.movedim(source=0, destination=1)",
                 "torch.moveaxis(x, 0)", "torch.moveaxis(x, 0, 1)", "x.movedim((0, 1), (1, 0))"]:
        _check(code)


GATHER = [
    # missing arguments: the parser lists every required one from the first missing on
    "torch.gather(x, 0)", "x.gather(0)", "torch.gather()", "torch.gather(x)", "x.gather()",
    "torch.gather(x, index=i)", "x.gather(dim=0)", "x.gather(index=i)",
    # the argument at fault, its position (none when passed by keyword) and type
    "torch.gather(x, 0.5, i)", "torch.gather(x, 'a', i)", "torch.gather(x, None, i)",
    "x.gather(1.0, i)", "torch.gather(x, True, i)", "x.gather(torch.tensor(0.5), i)",
    "x.gather(torch.tensor([0]), i)", "x.gather(np.bool_(True), i)", "x.gather(np.float64(1), i)",
    "torch.gather(x, (0,), i)", "torch.gather(x, dim=0.5, index=i)",
    "torch.gather(x, 0, [[0]])", "x.gather(0, 5)",
    "torch.gather(x, 0, None)", "torch.gather([[1.0]], 0, i)", "torch.gather(None, 0, i)",
    "torch.gather(input=[1], dim=0, index=i)",
    "torch.gather(x, 0, np.zeros((3, 4), dtype=np.int64))",
    "torch.gather(x, 0, i, sparse_grad=1)", "x.gather(0, i, sparse_grad=None)",
    "x.gather(0, i, sparse_grad=np.bool_(True))", "x.gather(0, i, sparse_grad=torch.tensor(True))",
    # counts (the method's leave self out)
    "x.gather(0, i, True)", "x.gather(0, i, False, 1)",
]


@pytest.mark.parametrize("code", GATHER)
def test_gather_arguments(code):
    _check(code)


def test_gather_integer_like_dims():
    # a float dim is refused; NumPy integers and 0-d integer tensors are ints to the parser
    for code in ["x.gather(1.0, i)", "torch.gather(x, np.int64(1), i)",
                 "torch.gather(x, torch.tensor(1), i)", "x.gather(np.int32(1), i)",
                 "torch.gather(x, dim=1, index=i, sparse_grad=False)",
                 "x.gather(0, i, sparse_grad=True)"]:
        _check(code)


NUMPY_BOOL_OPS = ["x + s", "s + x", "x * s", "s * x", "torch.add(x, s)", "torch.mul(s, x)",
                  "x.add(s)", "x.mul(s)", "torch.add(x, s, alpha=2)", "x - s", "s - x",
                  "torch.sub(x, s)", "x.add(1, alpha=s)", "torch.result_type(x, s)"]


def _numpy_bool_snippet(dtype, value, op):
    return (f"x = torch.tensor([1, 0, 3]).to(torch.{dtype})\n"
            f"s = np.bool_({value})\n{op}")


@pytest.mark.parametrize("dtype", ["int32", "uint8", "int64", "bool"])
@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("op", NUMPY_BOOL_OPS)
def test_numpy_bool_is_a_double(dtype, value, op):
    # PyTorch's parser reads np.bool_ as a double (it is no Python bool): float results
    check_snippet(_numpy_bool_snippet(dtype, value, op), describe_with_layout)


@pytest.mark.parametrize("dtype", ["float16", "float32"])
@pytest.mark.parametrize("op", ["x - s", "s - x", "torch.sub(x, s)"])
def test_numpy_bool_subtracts_from_floats(dtype, op):
    # a double, so no bool subtraction error
    check_snippet(_numpy_bool_snippet(dtype, True, op), describe_with_layout)


def test_numpy_other_scalars_unchanged():
    # NumPy's integers and floats kept their promotion (a bool no longer joins them)
    for op in ["x + s", "s * x", "torch.result_type(x, s)"]:
        check_snippet(_numpy_bool_snippet("int32", True, op), describe_with_layout)
        for scalar in ["np.int64(3)", "np.float64(2.5)"]:
            for dtype in ["int32", "uint8", "float16"]:
                check_snippet(f"x = torch.tensor([1, 0, 3]).to(torch.{dtype})\n"
                              f"s = {scalar}\n{op}", describe_with_layout)


@pytest.mark.parametrize("code", [
    "x.int().add(1, alpha=1.0)", "x.int().sub(1, alpha=1.0)", "x.int().add(1, alpha=np.float32(1))",
    "x.add(1, alpha=np.bool_(False))", "x.half().add(1, alpha=np.bool_(False))",
])
def test_alpha_that_is_a_double_is_checked(code):
    _check(code)


EMPTY_VIEWS = [
    "x[:, 1:1].numpy().strides", "x[1:1].numpy().strides", "x.t()[:, 1:1].numpy().strides",
    "x[:0, :0].numpy().strides", "x[:, 1:1].t().numpy().strides",
    "torch.zeros(4, 3)[2:2].numpy().strides", "torch.zeros(2, 3, 4)[:, 1:1, ::2].numpy().strides",
    "torch.zeros(5, dtype=torch.int32)[3:3].numpy().strides",
]


@pytest.mark.parametrize("code", EMPTY_VIEWS)
def test_empty_view_numpy_strides(code):
    _check(code)


def test_numpy_of_empty_view_is_still_a_view():
    # the zero strides change nothing else: same shape and dtype, writable, other tensors'
    # strides as before
    for code in ["x[:, 1:1].numpy().strides", "x[:, 1:1].numpy().shape",
                 "x[:, 1:1].numpy().dtype", "x[:, 1:1].numpy().flags.writeable",
                 "x.numpy().strides", "x.t().numpy().strides"]:
        _check(code)
