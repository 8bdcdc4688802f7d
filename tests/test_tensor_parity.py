"""Tensor construction, factories, attributes and conversions: jitgrad against PyTorch.

Each case is an expression (the last line of a snippet) evaluated with ``torch`` bound to either
library; values, dtypes, shapes, requires_grad, grad_fn names, exceptions (type and first line)
and warnings must agree.
"""

import numpy as np
import pytest
from _parity import check_snippet, tensor_description

torch = pytest.importorskip("torch")


def _describe(v, lib):
    if isinstance(v, lib.Tensor):
        return tensor_description(v)
    if isinstance(v, (tuple, list)) and any(isinstance(x, lib.Tensor) for x in v):
        return tuple(_describe(x, lib) for x in v)
    if isinstance(v, lib.Size):
        return ("Size", tuple(v))
    if isinstance(v, lib.dtype):
        return ("dtype", str(v))
    if isinstance(v, np.ndarray):
        return ("ndarray", str(v.dtype), v.tolist())
    return (type(v).__name__, v)


def _check(code):
    check_snippet(code, _describe)


CONSTRUCTION = [
    "torch.tensor([1, 2, 3])", "torch.tensor([1.0, 2])", "torch.tensor([True, 2])",
    "torch.tensor([True, 2.5])", "torch.tensor([])", "torch.tensor([[]])", "torch.tensor([[], []])",
    "torch.tensor([[], [1]])", "torch.tensor(((1, 2), [3, 4]))", "torch.tensor(range(3))",
    "torch.tensor([[1, 2], [3]])", "torch.tensor([[1], []])", "torch.tensor([[1, 2], 3])",
    "torch.tensor([1, [2, 3]])", "torch.tensor([[1, 2], 3.5])", "torch.tensor([1, None])",
    "torch.tensor(['a'])", "torch.tensor('abc')", "torch.tensor({1, 2})",
    "torch.tensor([np.array(1.0), 2])", "torch.tensor([1e40])", "torch.tensor([2**63])",
    "torch.tensor(np.int16(3))", "torch.tensor(np.float64(2.5))", "torch.tensor(np.bool_(True))",
    "torch.tensor([np.int8(1), np.int8(2)])", "torch.tensor([np.uint8(1), np.int8(2)])",
    "torch.tensor([np.float16(1), 2.])", "torch.tensor([np.float64(1.5)])",
    "torch.tensor([torch.tensor(1.), torch.tensor(2.)])",
    "torch.tensor([torch.tensor([1.]), torch.tensor([2.])])",
    "torch.tensor([torch.tensor([1., 2.]), torch.tensor([3., 4.])])",
    "torch.tensor([torch.tensor([1, 2]), [3, 4]])", "torch.tensor([torch.tensor(1), 2.5])",
    "torch.tensor([[torch.tensor(1.)], [2]])",
    "torch.tensor([np.array([1, 2], dtype=np.int32), np.array([3, 4], dtype=np.int32)])",
    "torch.tensor([-1], dtype=torch.uint8)", "torch.tensor([300], dtype=torch.uint8)",
    "torch.tensor([2**40], dtype=torch.int32)", "torch.tensor([2**63], dtype=torch.int32)",
    "torch.tensor([-0.5], dtype=torch.uint8)", "torch.tensor([255.9], dtype=torch.uint8)",
    "torch.tensor([1.7, -2.2, 0], dtype=torch.uint8)", "torch.tensor([1.7, -2.2], dtype=torch.int8)",
    "torch.tensor([float('nan')], dtype=torch.int64)", "torch.tensor([1e10], dtype=torch.float16)",
    "torch.tensor([1.5, 2, 0], dtype=torch.bool)", "torch.tensor(np.array([1.5, 2.5]), dtype=torch.int64)",
    "torch.tensor([1, 2], dtype='float32')", "torch.tensor([1, 2], dtype=float)",
    "torch.tensor([1., 2.], requires_grad=True)", "torch.tensor([1, 2], requires_grad=True)",
    "torch.tensor(torch.ones(2))", "torch.tensor(torch.ones(2, requires_grad=True))",
    "torch.tensor(torch.ones(2), dtype=torch.int64)", "torch.ones(2).new_tensor(torch.ones(2))",
    "torch.tensor(np.ones((2, 3)).T).stride()",
    "a = np.arange(3.)\nt = torch.as_tensor(a)\na[0] = 9\nt",
    "a = np.arange(3.)\nt = torch.from_numpy(a)\na[0] = 9\nt",
    "a = np.arange(6.).reshape(2, 3).T\ntorch.from_numpy(a).stride()",
    "t = torch.ones(2)\ntorch.as_tensor(t) is t",
    "t = torch.ones(2, requires_grad=True)\ntorch.as_tensor(t, dtype=torch.float64)",
    "torch.Tensor([1, 2])", "torch.Tensor(2, 3).shape", "torch.Tensor().shape",
    "torch.Tensor(torch.Size([2, 3])).shape", "torch.Tensor((2, 3))", "torch.Tensor(3.5)",
    "torch.Tensor(True)", "torch.Tensor('a')", "torch.Tensor(-1)", "torch.Tensor(3, 2.5)",
    "torch.Tensor(np.int64(3)).shape", "torch.Tensor(torch.tensor([1, 2]))",
    "t = torch.ones(2)\nu = torch.Tensor(t)\n(u is t, u.data_ptr() == t.data_ptr())",
    "torch.Tensor([[1, 2], [3]])", "torch.FloatTensor([1, 2])", "torch.LongTensor([1.5, 2])",
]
for _dt in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]:
    CONSTRUCTION += [f"torch.tensor(np.array([1, 0, 2], dtype=np.{_dt}))",
                     f"torch.tensor(np.array(5, dtype=np.{_dt}))",
                     f"torch.tensor(3, dtype=torch.{_dt})", f"torch.tensor([], dtype=torch.{_dt})"]


@pytest.mark.parametrize("code", CONSTRUCTION)
def test_construction(code):
    _check(code)


def test_from_numpy_read_only_warning():
    # PyTorch warns once per program: compare the first warning of a fresh interpreter each
    import subprocess
    import sys
    prog = ("import warnings, numpy as np, {m} as torch\nwarnings.simplefilter('always')\n"
            "a = np.arange(3.); a.flags.writeable = False\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always'); torch.from_numpy(a); torch.from_numpy(a)\n"
            "print(len(w), str(w[0].message)[:120])")
    outs = [subprocess.run([sys.executable, "-c", prog.format(m=m)], capture_output=True,
                           text=True).stdout for m in ("jitgrad", "torch")]
    assert outs[0] == outs[1]


FACTORIES = []
for _f in ["zeros", "ones", "empty", "rand", "randn"]:
    for _args in ["2, 3", "(2, 3)", "[2, 3]", "torch.Size([2, 3])", "()", "0", "2, 0",
                  "size=(2, 3)", "2, 3, dtype=torch.float64", "2, requires_grad=True",
                  "-1", "2, -3", "2.5", "2, 2.5", "[2, '3']", "np.int64(3)", "torch.tensor(3)",
                  "2, dtype=torch.int64", "2, dtype=torch.int64, requires_grad=True"]:
        FACTORIES.append(f"(lambda t: (t.dtype, t.shape, t.requires_grad))(torch.{_f}({_args}))")
FACTORIES += [
    "torch.rand(2, 3, generator=torch.Generator().manual_seed(0))",
    "torch.randn(2, generator=torch.Generator().manual_seed(0))",
    "torch.randint(5, 3)", "torch.randint(5, (3,)).dtype", "torch.randint(2, 5, (3,)).shape",
    "torch.full(2, 1.)", "torch.full([2, 1], 1.)", "torch.full((), 3)", "torch.full((-1,), 1.)",
    "torch.full(torch.Size([2]), 3)", "torch.full((2,), 1.5, dtype=torch.int64)",
    "torch.full((2,), 3, requires_grad=True)", "torch.full((2,), 3., requires_grad=True)",
    "torch.full((2,), 'a')", "torch.full((2,), None)", "torch.full((2,), torch.tensor([2.]))",
    "torch.full((2,), torch.tensor(2., requires_grad=True))",
    "torch.full((2,), torch.tensor(2., dtype=torch.float64))",
    "torch.zeros_like([1, 2])", "torch.ones_like(torch.ones(3, 2).t()).stride()",
    "torch.zeros_like(torch.ones(3, 2).t()).stride()",
    "torch.empty_like(torch.ones(3, 2).t()).stride()",
    "torch.full_like(torch.ones(3, 2).t(), 2).stride()",
    "torch.zeros_like(torch.ones(3, 2).t(), memory_format=torch.contiguous_format).stride()",
    "torch.full_like(torch.ones(2), 7)", "torch.full_like(torch.ones(2, dtype=torch.int64), 7.5)",
    "torch.full_like(torch.ones(2), True)", "torch.full_like(torch.ones(2), 7, dtype=torch.int32)",
    "torch.full_like(torch.ones(2, dtype=torch.uint8), 300)",
    "torch.rand_like(torch.ones(2, 3), memory_format=torch.preserve_format).shape",
    "torch.rand_like(torch.ones(2, dtype=torch.int64))",
    "torch.randn_like(torch.ones(2, dtype=torch.int64))",
    "torch.eye(-1)", "torch.eye(2, -1)", "torch.eye(2.5)", "torch.eye(3, 2, dtype=torch.bool)",
    "torch.eye(torch.tensor(2))", "torch.eye(2, m=3)", "torch.eye(n=2)",
    "torch.linspace(0, 1, 1)", "torch.linspace(0, 1, 0)", "torch.linspace(0, 1, 2.5)",
    "torch.linspace(0, 1, -1)", "torch.linspace(0, 1, 3, dtype=torch.bool)",
    "torch.linspace(0, 10, 4, dtype=torch.int64)", "torch.logspace(0, 1, -1)",
    "torch.logspace(0, 40, 3)", "torch.logspace(0, 2, 3, base=2)",
    "torch.Size([2, 3]) + (4,)", "(4,) + torch.Size([2, 3])", "torch.Size([2, 3]) * 2",
    "2 * torch.Size([2, 3])", "torch.Size([2, 3])[0:1]", "type(torch.Size([2, 3])[::-1]).__name__",
    "type((4,) + torch.Size([2, 3])).__name__", "torch.Size([1, 2]).__reduce__()[0].__name__",
    "torch.Size([2, 3]).numel()", "str(torch.Size([]))",
]
for _fv in ["True", "1", "1.5", "np.float64(1.5)", "np.int32(3)", "np.float16(3)", "np.bool_(True)",
            "torch.tensor(2.)", "torch.tensor(2)", "float('nan')", "2**40", "300", "-1", "-300"]:
    for _dt in ["", ", dtype=torch.int32", ", dtype=torch.uint8", ", dtype=torch.int16",
                ", dtype=torch.bool"]:
        FACTORIES.append(f"torch.full((2,), {_fv}{_dt})")
for _a in ["5", "0", "-3", "1, 5", "5, 1", "1, 5, 2", "5, 1, -1", "5, 1, -2", "0, 1, 0.1",
           "1, 2.5", "0.5", "1, 5, 0", "1, 5, 0.0", "0, 10, 3", "2.5, 0, -0.5", "0, -5, 1",
           "0, 1, 0.3, dtype=torch.int64", "0, 1, 0.3, dtype=torch.int32",
           "0, 5, 1.5, dtype=torch.int64", "0, 5, 1.5, dtype=torch.int32",
           "0.5, 5, 1.5, dtype=torch.int64", "-2.5, 2, 1, dtype=torch.int64",
           "5, 1, -1.5, dtype=torch.int64", "0, 3, dtype=torch.bool", "float('inf')",
           "0, float('nan')", "1.5, float('inf')", "end=4", "start=1, end=4", "1, 4, step=2",
           "3., requires_grad=True", "0, 5, dtype=torch.uint8", "0, 5, dtype=torch.float16",
           "torch.tensor(3)", "torch.tensor(3.)", "np.int32(3)", "0, 1, 1/3"]:
    FACTORIES.append(f"torch.arange({_a})")


@pytest.mark.parametrize("code", FACTORIES)
def test_factories(code):
    _check(code)


X = "x = torch.arange(12.).reshape(3, 4)\n"
R = "x = torch.ones(2, 3, requires_grad=True)\n"
ATTRIBUTES = [
    X + "x[1:].storage_offset()", X + "x[:, 1].storage_offset()", X + "x.storage_offset()",
    X + "x.is_contiguous(memory_format=torch.contiguous_format)", X + "x.t().is_contiguous()",
    X + "x[1].data_ptr() == x.data_ptr()", X + "x[0].data_ptr() == x.data_ptr()",
    X + "x.clone().data_ptr() == x.data_ptr()", X + "x[:, 1:].stride()",
    "torch.ones(0, 3).stride()", "torch.zeros(2, 0, 4).stride()", "torch.ones(()).stride()",
    "torch.ones(2).get_device()", "torch.ones(2).is_complex()", "torch.ones(2).is_sparse",
    "torch.ones(2).is_quantized", "torch.ones(2).is_meta", "torch.ones(2).is_nested",
    "torch.ones(2).layout == torch.strided",
    "torch.ones(2).item()", "torch.ones(0).item()", "torch.ones(1, 1).item()",
    "torch.ones(2, requires_grad=True).numpy()", "float(torch.ones(2))", "int(torch.ones(2))",
    "bool(torch.ones(2))", "bool(torch.ones(0))", "len(torch.ones(()))", "list(torch.ones(()))",
    "float(torch.ones((), requires_grad=True))", "int(torch.tensor(-2.7))",
    "torch.tensor([1.0]).__index__()", "[1, 2, 3][torch.tensor(1)]", "[1, 2, 3][torch.tensor(1.)]",
    "2 in torch.arange(3)", "5 in torch.arange(3)", "torch.tensor(2) in torch.arange(3)",
    "[1] in torch.arange(3)", "'a' in torch.arange(3)", "None in torch.arange(3)",
    "torch.tensor([1, 2]) in torch.arange(3)", "torch.ones(2, 3)[0] in torch.ones(2, 3)",
    R + "x.to(torch.float64)", R + "x.to(torch.float32) is x", R + "x.to('cpu') is x",
    R + "x.to(torch.float32, copy=True)", R + "x.to('cpu', torch.float64)",
    R + "x.to(torch.float64, True)", R + "x.to(torch.float64, False, True) is x",
    R + "x.to('cpu', torch.float32, False, True) is x",
    R + "x.to(memory_format=torch.contiguous_format) is x", R + "x.to('float32')",
    R + "x.to(torch.ones(2, dtype=torch.int64))", R + "x.to(float)", R + "x.to(bool)",
    R + "x.type()", R + "x.type(torch.float64)", R + "x.type('torch.DoubleTensor')",
    R + "x.type(torch.DoubleTensor)", R + "x.type('torch.HalfTensor')",
    R + "x.type('torch.ByteTensor')", R + "x.type('torch.CharTensor')",
    R + "x.type('torch.ShortTensor')", R + "x.type('float64')",
    R + "x.type(torch.float64, non_blocking=True)", R + "x.type(torch.float32) is x",
    R + "x.byte()", R + "x.char()", R + "x.short()", R + "x.half()", R + "x.bool()",
    R + "x.double(memory_format=torch.preserve_format)",
    R + "x.type_as(torch.ones(1, dtype=torch.int64))", R + "x.type_as(torch.ones(1)) is x",
    R + "x.t().clone(memory_format=torch.contiguous_format).stride()",
    R + "x.t().clone().stride()", R + "x.t().double().stride()",
    R + "x.t().to(torch.float64, memory_format=torch.contiguous_format).stride()",
    R + "y = x * 2\nv = y[0]\nv.detach_()", R + "v = x[0]\nv.detach_()",
    R + "y = x * 2\ny.detach_()\n(y.requires_grad, y.grad_fn, y.is_leaf)",
    R + "x.data = torch.zeros(2, 3, dtype=torch.int64)", R + "x.data = [1]",
    R + "x.data = torch.zeros(4, dtype=torch.float64)\n(x.shape, x.dtype, x.requires_grad)",
]
for _dt in ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64"]:
    ATTRIBUTES += [f"torch.ones(2, 3, dtype=torch.{_dt}).nbytes",
                   f"torch.ones(2, 3, dtype=torch.{_dt}).itemsize",
                   f"torch.ones(2, 3, dtype=torch.{_dt}).element_size()",
                   f"torch.ones(2, dtype=torch.{_dt}).is_signed()",
                   f"torch.ones(2, dtype=torch.{_dt}).type()",
                   f"torch.ones((), dtype=torch.{_dt}).item()"]


@pytest.mark.parametrize("code", ATTRIBUTES)
def test_attributes_and_conversions(code):
    _check(code)


def test_fill_tensor_on_overlapping_expand_raises():
    # fill_(Tensor) is PyTorch's copy_ (overlap error); fill_(Scalar) writes
    for code in ["torch.ones(3).expand(2, 3).fill_(torch.tensor(2.))",
                 "torch.ones(3).expand(2, 3).fill_(2.)",
                 "(torch.ones(3, requires_grad=True) * 1).expand(2, 3).fill_(torch.tensor(2.))",
                 "torch.ones(3).expand(2, 3).fill_(torch.tensor(2., requires_grad=True))",
                 "torch.ones(1, 3).expand(1, 3).fill_(torch.tensor(2.))"]:
        _check(code)
