"""Parity sweep (session 15): calls users make every day, run under jitgrad and PyTorch and
compared whole: the result's dtype, shape, values, ``stride()``, ``storage_offset()``, grad_fn
name and requires_grad, or the error's type and first line (``tests/_parity.check_snippet``).
Each case differed before its fix: function forms that PyTorch's parser gives one sequence
(``torch.permute(x, 1, 0)`` is a TypeError, ``x.permute(1, 0)`` is not), keepdim as a strict
bool, ``detach()``/``.data`` of a view keeping the view's storage offset (and an empty view's
strides), ..."""
from __future__ import annotations

import pytest

from tests._parity import check_snippet, describe_with_layout, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")


def _check(code):
    check_snippet("x = torch.arange(12.).reshape(3, 4)\n" + code, describe_with_layout)


FUNCTION_FORMS = [
    # PyTorch's torch.permute/reshape/tile/flip take one sequence; the methods take varargs
    "torch.permute(x, 1, 0)", "torch.permute(x, 1)", "torch.permute(x, dims=1)",
    "torch.permute(x, (1., 0))", "torch.reshape(x, -1)", "torch.reshape(x, 4, 3)",
    "torch.reshape(x, (2, 6), 1)", "torch.reshape(x, shape=12)", "torch.reshape(x, None)",
    "torch.reshape(x, torch.tensor([12]))", "torch.tile(x, 2)", "torch.tile(x, 2, 1)",
    "torch.tile(x)", "torch.tile(x, (2.0,))", "torch.flip(x, 0)", "torch.flip(x, 0, 1)",
    "torch.flip(x, 2)", "torch.flip(x, dims=0)", "x.tile()",
]


@pytest.mark.parametrize("code", FUNCTION_FORMS)
def test_function_forms_take_one_sequence(code):
    _check(code)


KEEPDIM = [f"{call}" for name in ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin",
                                  "logsumexp", "nansum", "median", "nanmedian", "max", "min")
           for call in (f"x.{name}(0, 1)", f"x.{name}(1, keepdim=None)",
                        f"x.{name}(1, keepdim=np.bool_(True))", f"x.{name}(1, 1.0)")]
KEEPDIM += [f"torch.{name}(x, 0, 1)" for name in ("sum", "prod", "amax", "amin", "argmax",
                                                  "argmin", "logsumexp", "nansum", "median",
                                                  "nanmedian")]


@pytest.mark.parametrize("code", KEEPDIM)
def test_keepdim_is_a_strict_bool(code):
    # x.sum(0, 1) is not a sum over dims 0 and 1 with keepdim=True: a TypeError in PyTorch
    _check(code)


DETACHED_VIEWS = [
    "x[:, 1:1].detach()", "x[:, 1:1].data", "x[1:2, 1:1].detach()", "x[:, 1:1].t().detach()",
    "x[:, 1:].detach()", "x[:, 1:].data", "x[2:, 1:].detach()[0]",
    "x[2:, 1:].detach()[0].detach()[1:]", "x.requires_grad_()[1:].detach()",
    "x[1:].detach().contiguous()",
]


@pytest.mark.parametrize("code", DETACHED_VIEWS)
def test_detach_keeps_the_views_layout(code):
    *pre, last = code.split("; ")
    _check("\n".join(pre + [last]))


MORE = [
    # Tensor.squeeze takes the dims as varargs too (SqueezeBackward2); torch.squeeze does not
    "x.reshape(1, 12, 1).requires_grad_().squeeze(0, 2)", "x.reshape(1, 3, 1, 4).squeeze(0, 2)",
    "x.reshape(1, 12, 1).squeeze(0, 5)",
    # an empty dim list reduces nothing in all/any (sum's reduces everything)
    "x.all(())", "x.any([])", "x.to(torch.uint8).all(())", "torch.all(x, dim=())",
    "x.all((), keepdim=True)",
    # nonzero/argwhere: the transpose of an (ndim, n) buffer, strides (1, n)
    "torch.nonzero(x)", "torch.argwhere(x)", "x.nonzero()", "torch.nonzero(torch.zeros(3, 4))",
    "torch.nonzero(torch.ones(3))",
    "torch.nonzero(torch.zeros(0, 3))", "torch.nonzero(x).t()",
    # an empty diagonal keeps the summed strides and the input's offset
    "x.diagonal(-5)", "x.diagonal(5)", "x[:, :0].diagonal()", "torch.ones(0, 3).diagonal()",
    "torch.ones(2, 0, 3).diagonal(0, 0, 2)", "x[1:, 2:2].diagonal(-1)",
    # norm's p is a Number (linalg.vector_norm's ord)
    "x.norm((0, 1))", "x.norm([0])", "torch.norm(x, (0, 1))", "x.norm(torch.tensor(1.))",
    # the scans' missing dim in the parser's words
    "x.cumsum()", "torch.cumsum(x)", "x.cumprod()", "x.cummax()", "torch.cummin(x)",
    "x.logcumsumexp()",
    # factories: a size sequence then more arguments; arange/linspace argument checks
    "torch.zeros((2,), (3,))", "torch.ones([2], 3)", "torch.empty(torch.Size([2]), 3).shape",
    "torch.arange()", "torch.arange('a')", "torch.arange(0, 'a')", "torch.arange(0, None)",
    "torch.arange(None)", "torch.arange(0, 3, 'a')", "torch.arange(5, step=2)",
    "torch.arange(1e20)", "torch.arange(0, -1e20, -1)",
    "torch.arange(0, 1e20, dtype=torch.float32)", "torch.linspace(0, 1)", "torch.linspace(0)",
]


@pytest.mark.parametrize("code", MORE)
def test_more_calls(code):
    _check(code)


BATCH3 = [
    # allclose checks dtypes and shapes as isclose does
    "torch.allclose(x, x.long())", "x.allclose(x.int())", "torch.allclose(x, x[:2])",
    "torch.allclose(x, 1.)",
    # lerp: PyTorch's overload error; a 0-d weight of another dtype takes part in promotion
    "torch.lerp(x, 0., 0.5)", "torch.lerp(x, x, 'a')", "torch.lerp(x, x, None)",
    "torch.lerp(x, x.flip(0), torch.tensor(0.25, dtype=torch.float64))",
    "torch.lerp(x.int(), x.int(), torch.tensor(0.5))",
    "torch.lerp(torch.tensor(1.), torch.tensor(2.), torch.tensor(0.3, dtype=torch.float64))",
    "w = torch.tensor(0.3, dtype=torch.float64, requires_grad=True)\n"
    "x.requires_grad_()\n(torch.lerp(x, x.detach() * 2, w) * x.detach()).sum().backward()\n"
    "(x.grad, w.grad)",
    # the complex accessors of a real tensor
    "x.real", "x.requires_grad_().real", "x.imag", "torch.real(x)", "torch.imag(x)",
    "torch.real(3.)", "x.conj()", "torch.conj_physical(x)", "x.real is x", "x.conj() is x",
    "x.real = torch.zeros(3, 4)\nx",
    # device strings as c10 parses them
    "torch.device('bogus')", "torch.device('cuda:x')", "torch.device('cpu:0:1')",
    "torch.device('')", "torch.device('cpu:-1')", "torch.device('CPU')",
    "torch.device('cuda', -2)", "torch.device('cuda:01')", "x.to('bogus')",
    "torch.ones(2, device='bogus')",
]


@pytest.mark.parametrize("code", BATCH3)
def test_batch3(code):
    _check(code)


BATCH4 = [
    # where needs both values (or neither); None is no Number
    "torch.where(x > 5, None, 2.)", "torch.where(x > 5, x)", "torch.where(x > 5, 1., None)",
    "torch.where(x > 5, None, None)",
    # equal takes Tensors only (the method names other as its first argument)
    "x.equal(3)", "torch.equal(x, 3)", "torch.equal(3, x)",
    # CopyBackwards prints its C++ name, like AccumulateGrad and CopySlices
    "y = x.requires_grad_().clone()\ny.copy_(torch.zeros(3, 4))\ny.grad_fn.name()",
    # clamp_ with a Tensor bound words the cast error with ScalarType names
    "x.long().clamp_(min=torch.tensor(0.5))", "x.int().clamp_(min=torch.tensor(0.5))",
    "x.to(torch.uint8).clamp_(min=torch.tensor(0.5))",
    # addcmul/addcdiv's value is a Number
    "torch.addcmul(x, x, x, value='a')", "torch.addcdiv(x, x, x, value=None)",
    "torch.addcmul(x, x, x, value=torch.ones(2))", "torch.addcmul(x, x, x, value=1j)",
    # x[k] = v takes Tensors and Numbers only
    "x[0] = 'a'", "x[0] = None", "x[:, 0] = [1, 2, 3]", "x[0] = (1,)",
    "y = x.long()\ny.__setitem__(0, 'a')", "y = x.bool()\ny.__setitem__(0, {})",
]


@pytest.mark.parametrize("code", BATCH4)
def test_batch4(code):
    if "\n" not in code and " = " in code:  # an assignment: describe x afterwards
        code += "\nx"
    _check(code)
