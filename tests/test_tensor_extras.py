"""The smaller Tensor methods (jitgrad/ops/tensor_extras.py) and the torch.X forms of some of
them against PyTorch: values, dtypes, shapes, strides, grad_fn names and errors."""
import numpy as np
import pytest

import jitgrad
from tests._parity import agree, check_snippet, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

X = np.arange(6.0).reshape(2, 3)


def test_comparison_aliases():
    compare(lambda T, x: (x.greater_equal(2), x.less_equal(3.0)), [X])
    agree(lambda T: T.arange(6.0).greater_equal_(2))
    agree(lambda T: T.arange(6).less_equal_(T.tensor(3)))


@pytest.mark.parametrize("shape,wrap", [((5, 3), True), ((7, 3), True), ((11, 3), True),
                                        ((7, 3), False), ((3, 5), True), ((3, 3, 3), False),
                                        ((4, 4), True), ((0, 3), False)])
def test_fill_diagonal(shape, wrap):
    agree(lambda T: T.zeros(*shape).fill_diagonal_(2.5, wrap=wrap))


def test_fill_diagonal_graph_and_errors():
    # (times 1: compare() reads torch's node by name(), "torch::autograd::CopySlices")
    compare(lambda T, x: (x * 1).fill_diagonal_(1.0) * 1, [X], grad=True)
    agree(lambda T: type((T.ones(7, 3, requires_grad=True) * 1).fill_diagonal_(1, True)
                         .grad_fn).__name__)
    for call in ("T.zeros(3).fill_diagonal_(1)", "T.zeros(2, 3, 3).fill_diagonal_(1)",
                 "T.zeros(3, 3, requires_grad=True).fill_diagonal_(1)"):
        raises_like(lambda T, c=call: eval(c))


@pytest.mark.parametrize("size", [(1, 3), (2, 1), (3,), (1,), (2, 3)])
def test_sum_to_size(size):
    compare(lambda T, x: x.sum_to_size(*size), [X], grad=True)
    compare(lambda T, x: x.sum_to_size(size), [X], grad=True)


def test_sum_to_size_of_nothing():
    compare(lambda T, x: x.sum_to_size(()), [X], grad=True)
    raises_like(lambda T, x: x.sum_to_size(), X)


@pytest.mark.parametrize("size", [(3, 2), (4,), (1, 2, 3, 1), (1, 1, 3)])
def test_sum_to_size_errors(size):
    raises_like(lambda T, x: x.sum_to_size(size), X)


@pytest.mark.parametrize("args", ["", "2, 3", "(2, 3)", "[1, 2]", "[[1, 2], [3, 4]]", "3",
                                  "T.Size([2, 4])", "np.array([1.0, 2.0])", "2.5"])
def test_new(args):
    def fn(T):
        x = T.ones(2, dtype=T.float64)
        r = eval(f"x.new({args})", {"x": x, "T": T, "np": np})
        values = r.tolist() if args and args[0] in "[(n" else None
        return str(r.dtype), tuple(r.shape), values, r.requires_grad
    agree(fn)


def test_new_alias_and_keywords():
    agree(lambda T: T.ones(2, dtype=T.float64).new(T.zeros(1, dtype=T.float64)))

    def alias(T):
        src = T.tensor([1.0, 2.0], requires_grad=True)
        r = T.ones(2).new(src)
        return r.requires_grad, type(r.grad_fn).__name__, r.data_ptr() == src.data_ptr()
    agree(alias)
    agree(lambda T: T.ones(2).new(requires_grad=True))
    agree(lambda T: T.ones(2).new(2, dtype=T.float32))
    agree(lambda T: T.ones(2).new(2, device="cpu").shape)


def test_is_same_size_signed_inference_device():
    agree(lambda T: (T.ones(2).is_same_size(T.ones(2)), T.ones(2).is_same_size(T.ones(1, 2)),
                     T.is_same_size(T.ones(2), T.ones(3)), T.is_signed(T.ones(2).byte()),
                     T.is_signed(T.ones(1)), T.is_inference(T.ones(2)), T.ones(2).is_inference(),
                     T.get_device(T.ones(2))))
    for call in ("T.ones(2).is_same_size(3)", "T.is_same_size(1, T.ones(2))",
                 "T.is_same_size(T.ones(2))", "T.detach(1)", "T.is_signed()"):
        agree(lambda T, c=call: eval(c))
    agree(lambda T: T.detach(T.ones(2, requires_grad=True) * 2).requires_grad)


@pytest.mark.parametrize("make", [
    "T.ones(2, 3, 4)", "T.ones(2, 3, 4).transpose(0, 2)", "T.ones(2, 1, 4)", "T.ones(())",
    "T.ones(5)", "T.ones(2, 3, 4).permute(1, 2, 0)", "T.ones(2, 3, 4)[:, :, ::2]",
    "T.ones(2, 3, 4).expand(5, 2, 3, 4)", "T.ones(3, 1).expand(3, 4)",
    "T.ones(2, 3, 4, 5).permute(0, 2, 3, 1)", "T.ones(2, 1, 1, 1)", "T.ones(4, 4).t()[1:]",
    "T.ones(3, 4).t().unsqueeze(1)",
])
def test_dim_order(make):
    agree(lambda T: eval(make).dim_order())
    agree(lambda T: eval(make).dim_order(ambiguity_check=True))


RESIZE = [
    "x = torch.arange(6.).reshape(2, 3); x.resize_(3, 3); x[:2]",
    "x = torch.arange(6.).reshape(2, 3); x.resize_(2, 2); (x, x.stride(), x.is_contiguous())",
    "x = torch.arange(6.).reshape(2, 3); x.resize_(8); x[:6]",
    "x = torch.arange(6.).reshape(2, 3); x.resize_((1, 6)); x",
    "x = torch.arange(6.).reshape(2, 3).t(); x.resize_(2, 3); (x, x.stride())",
    "x = torch.arange(6.).reshape(2, 3).t(); x.resize_(3, 2); (x, x.stride())",
    "v = torch.arange(6.); w = v[:3]; w.resize_(5); w[4] = 9; (w, v)",
    "v = torch.arange(6.); w = v[2:]; w.resize_(2); w[0] = -1; (w, v, w.storage_offset())",
    "x = torch.arange(6.); x.resize_(2); x.resize_(5); x",
    "x = torch.arange(4.); y = torch.ones(2, 2, dtype=torch.int64); x.resize_as_(y)",
    "x = torch.arange(4.); torch.resize_as_(x, torch.ones(3))",
    "x = torch.arange(24.).reshape(2, 3, 2, 2); x.resize_(2, 3, 2, 2, "
    "memory_format=torch.channels_last); x.stride()",
    "x = torch.arange(6.); x.resize_(2, 3, memory_format=torch.contiguous_format); x",
    "torch.ones(2, requires_grad=True).resize_(3)",
    "(torch.ones(2, requires_grad=True) * 1).resize_(2)",
    "torch.ones(2, requires_grad=True).resize_as_(torch.ones(3))",
    "torch.ones(2).resize_(2, -1)",
    "torch.ones(2).resize_(2.5)",
    "torch.ones(2).resize_as_(3)",
]


def _describe(v, lib):
    if isinstance(v, tuple):
        return tuple(_describe(u, lib) for u in v)
    if isinstance(v, lib.Tensor):
        return (str(v.dtype), tuple(v.shape), v.tolist())
    return v


@pytest.mark.parametrize("code", RESIZE)
def test_resize(code):
    check_snippet(code, _describe)


APPLY = [
    "torch.arange(4.).apply_(lambda v: v * 2)",
    "torch.arange(4).apply_(lambda v: v / 2)",
    "torch.zeros(2, dtype=torch.bool).apply_(lambda v: 3)",
    "torch.zeros(2, dtype=torch.int64).apply_(lambda v: True)",
    "seen = []; x = torch.zeros(2, 2).t(); x.copy_(torch.tensor([[1., 2], [3, 4]])); "
    "x.apply_(lambda v: seen.append(v) or v); seen",
    "torch.arange(4.).map_(torch.ones(4), lambda a, b: a + b)",
    "torch.arange(4.).reshape(2, 2).map_(torch.tensor([1., 5.]), lambda a, b: a * b)",
    "torch.arange(4.).apply_(3)",
    "torch.arange(4.).apply_(lambda v: 'x')",
    "torch.zeros(2, dtype=torch.int64).apply_(lambda v: 2 ** 70)",
    "torch.zeros(2, dtype=torch.int64).apply_(lambda v: None)",
    "torch.arange(4., requires_grad=True).apply_(lambda v: v)",
    "torch.arange(4., requires_grad=True).map_(torch.ones(4), lambda a, b: a)",
    "torch.arange(4.).map_(torch.ones(4, requires_grad=True), lambda a, b: a)",
    "torch.arange(4.).map_(torch.ones(3), lambda a, b: a)",
    "torch.arange(4.).map_(torch.ones(4, dtype=torch.int64), lambda a, b: a)",
]


@pytest.mark.parametrize("code", APPLY)
def test_apply_and_map(code):
    check_snippet(code.replace("; ", "\n"), _describe)


def test_memory_placement():
    # sharing and pinning: what each reports before and after (pin_memory needs CUDA, as
    # PyTorch's: both raise the same error on a machine without it)
    agree(lambda T: (T.ones(2).is_shared(), T.ones(2).is_pinned()))

    def share(T):
        t = T.arange(3.0)
        r = t.share_memory_()
        return r is t, t.is_shared(), t.tolist(), t.share_memory_() is t
    agree(share)
    if not jitgrad.cuda.is_available():
        agree(lambda T: T.ones(2).pin_memory())
    agree(lambda T: (lambda t: t.const_data_ptr() == t.data_ptr())(T.ones(3)))


def test_shared_memory_reaches_a_forked_child():
    import multiprocessing as mp
    t = jitgrad.zeros(3).share_memory_()
    ctx = mp.get_context("fork")
    p = ctx.Process(target=lambda: t.fill_(7.0))
    p.start()
    p.join(60)
    assert t.tolist() == [7.0, 7.0, 7.0]
