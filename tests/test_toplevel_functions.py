"""torch.dist, fill, typename, range, asarray, frombuffer (jitgrad/ops/toplevel_functions.py)
against PyTorch: values, dtypes, grad_fn names, gradients, memory sharing, warnings, errors."""
import array

import numpy as np
import pytest

import jitgrad
from tests._parity import agree, check_snippet, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

A = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
B = np.array([0.0, 0.5, 1.0])


@pytest.mark.parametrize("p", [2, 1, float("inf"), -float("inf"), 3.5])
def test_dist(p):
    compare(lambda T, a, b: T.dist(a, b, p), [A, B], grad=True)


def test_dist_p0_forward():
    # (PyTorch's backward of p=0 raises an undefined-tensor error of its own)
    compare(lambda T, a, b: T.dist(a, b, 0), [A, B])


def test_dist_dtypes_and_errors():
    agree(lambda T: T.dist(T.tensor([1.0, 2.0]), T.tensor([0.0, 1.0], dtype=T.float64)))
    agree(lambda T: T.dist(T.tensor([1.0, 2.0]), T.tensor([0.0, 1.0]), T.tensor(3.0)))
    for call in ("T.dist(T.tensor([1, 2]), T.tensor([0, 0]))", "T.dist(T.ones(2), 2)",
                 "T.dist(1, T.ones(2))", "T.dist(T.ones(3), T.ones(2))"):
        agree(lambda T, c=call: eval(c))


def test_fill():
    compare(lambda T, a: T.fill(a, 2.0), [A], grad=True)
    compare(lambda T, a, v: T.fill(a, v), [A, np.array(3.0)], grad=True)
    agree(lambda T: T.fill(T.ones(2, dtype=T.int64), 2.7))
    agree(lambda T: T.fill(T.ones(2, dtype=T.int64), T.tensor(2.7)))
    raises_like(lambda T, a: T.fill(a, T.ones(2)), A)
    agree(lambda T: T.fill(2, T.ones(2)))  # the first line (PyTorch adds "didn't match" notes)


def test_typename():
    for expr in ("T.ones(2)", "T.ones(2, dtype=T.int64)", "T.ones(2).bool()", "3", "2.5",
                 "np.ones(2)", "None", "[1]", "np.float32(1)", "len", "np.linalg.norm"):
        agree(lambda T, e=expr: T.typename(eval(e)))
    # a class and an instance of one: the module path is each library's own
    assert jitgrad.typename(jitgrad.nn.Linear(1, 1)) == "jitgrad.nn.modules.linear.Linear" \
        or jitgrad.typename(jitgrad.nn.Linear(1, 1)).endswith(".Linear")


RANGES = ["torch.range(1, 4)", "torch.range(0, 1, 0.25)", "torch.range(1, 4, dtype=torch.int64)",
          "torch.range(4, 1, -1)", "torch.range(0, 1, 0.3)", "torch.range(0, 1, 0.1)",
          "torch.range(0, 0.9999999, 0.1)", "torch.range(0, 10, 3)",
          "torch.range(start=1, end=3)", "torch.range(1, 4, requires_grad=True)",
          "torch.range(10, 0, -3, dtype=torch.int32)", "torch.range(0., 1e-8, 1e-9)",
          "torch.range(-2.5, 2.5, 0.7, dtype=torch.float64)",
          "torch.range(torch.tensor(1), 4)", "torch.range(1, 4, out=torch.empty(0))",
          "torch.range(4)", "torch.range(1, 4, 0)", "torch.range(4, 1)", "torch.range(1, 4, -1)",
          "torch.range(1, float('inf'))"]


def _describe(v, lib):
    if isinstance(v, tuple):
        return tuple(_describe(u, lib) for u in v)
    if isinstance(v, lib.Tensor):
        return (str(v.dtype), tuple(v.shape), v.tolist(), v.requires_grad)
    return v


@pytest.mark.parametrize("code", RANGES)
def test_range(code):
    check_snippet(code, _describe)  # values, and the deprecation UserWarning


ASARRAY = [
    "t = torch.tensor([1., 2.]); torch.asarray(t) is t",
    "t = torch.tensor([1., 2.]); torch.asarray(t, copy=True).data_ptr() == t.data_ptr()",
    "t = torch.tensor([1., 2.]); torch.asarray(t, dtype=torch.float64)",
    "t = torch.tensor([1., 2.]); torch.asarray(t, dtype=torch.float64, copy=False)",
    "t = torch.tensor([1., 2.]); torch.asarray(t, dtype=torch.float32) is t",
    "t = torch.tensor([1., 2.]); torch.asarray(t, device='cpu') is t",
    "t = torch.tensor([1., 2.], requires_grad=True); r = torch.asarray(t); (r is t, r.grad_fn)",
    "t = torch.tensor([1., 2.], requires_grad=True); r = torch.asarray(t, copy=True)\n"
    "(r.requires_grad, type(r.grad_fn).__name__)",
    "t = torch.tensor([1., 2.]); r = torch.asarray(t, requires_grad=True)\n"
    "(r is t, t.requires_grad)",
    "t = torch.tensor([1., 2.], requires_grad=True); r = torch.asarray(t, requires_grad=False)\n"
    "(r is t, r.requires_grad, t.requires_grad)",
    "t = torch.tensor([1., 2.], requires_grad=True); r = torch.asarray(t, dtype=torch.float64)\n"
    "(r.requires_grad, type(r.grad_fn).__name__)",
    "a = np.array([1., 2.]); r = torch.asarray(a); a[0] = 9; r",
    "a = np.array([1., 2.]); r = torch.asarray(a, copy=True); a[0] = 9; r",
    "a = np.array([1., 2.]); torch.asarray(a, dtype=torch.float32)",
    "a = np.array([1., 2.]); torch.asarray(a, dtype=torch.float32, copy=False)",
    "torch.asarray(np.array([1, 2], dtype=np.int32))",
    "a = np.arange(6.); r = torch.asarray(a[::2]); a[2] = -1; (r, r.stride())",
    "torch.asarray(np.ones(2, np.float32), requires_grad=True)",
    "torch.asarray([1, 2])", "torch.asarray([1., 2])", "torch.asarray([1, 2], copy=False)",
    "torch.asarray(3.5)", "torch.asarray(3)", "torch.asarray(True)",
    "torch.asarray([torch.tensor(1.), torch.tensor(2.)])", "torch.asarray(np.array(2.0))",
    "torch.asarray([1, 2], dtype=torch.float64)", "torch.asarray(range(3))",
    "torch.asarray(np.ones(2, np.float16))", "torch.asarray(torch.tensor(1))",
    "b = bytearray(8); r = torch.asarray(b); r.shape",
    "torch.asarray(b'ab')",
]


@pytest.mark.parametrize("code", ASARRAY)
def test_asarray(code):
    check_snippet(code, _describe)


FROMBUFFER = [
    "ba = bytearray(b'\\x01\\x00\\x00\\x00\\x02\\x00\\x00\\x00'); "
    "torch.frombuffer(ba, dtype=torch.int32)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, offset=4)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, count=1)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, count=3)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, count=0)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, offset=-1)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, offset=8)",
    "ba = bytearray(8); torch.frombuffer(ba, dtype=torch.int32, offset=2)",
    "torch.frombuffer(bytearray(8))", "torch.frombuffer([1, 2], dtype=torch.int32)",
    "torch.frombuffer(bytearray(), dtype=torch.int32)",
    "torch.frombuffer(bytearray(8), dtype=torch.float32, requires_grad=True)",
    "torch.frombuffer(array.array('d', [1, 2]), dtype=torch.float64)",
    "ba = bytearray(8); t = torch.frombuffer(ba, dtype=torch.int32); t[0] = 7; ba[0]",
    "torch.frombuffer(np.arange(3.), dtype=torch.float64)",
    "torch.frombuffer(bytearray(b'\\x00\\x01'), dtype=torch.bool)",
]


@pytest.mark.parametrize("code", FROMBUFFER)
def test_frombuffer(code):
    check_snippet("import array\n" + code.replace("; ", "\n"), _describe)


def test_array_module_is_used():
    assert array.array("d", [1.0]).itemsize == 8
