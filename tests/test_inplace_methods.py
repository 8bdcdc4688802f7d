"""The in-place forms of the elementwise and shape methods (``x.floor_()``, ``x.addcdiv_(a,
b)``, ``x.eq_(y)``, ``x.unsqueeze_(0)``, ...) against PyTorch: values, dtypes, node names,
gradients through the written tensor, version counters and errors; and ``addcdiv``/``addcmul``
bit for bit (ATen's order of operations)."""
import numpy as np
import pytest
from _parity import assert_parity, check_observations, torch

from jitgrad.ops.inplace_methods import ELEMENTWISE, SHAPE

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

UNARY = {"absolute", "acos", "arccos", "arcsin", "arctan", "asin", "atan", "ceil", "cosh",
         "deg2rad", "erf", "exp2", "expm1", "fix", "floor", "frac", "log10", "log1p", "log2",
         "logit", "nan_to_num", "negative", "rad2deg", "reciprocal", "round", "rsqrt", "sgn",
         "sign", "sinc", "sinh", "square", "tan", "trunc", "bitwise_not", "logical_not"}
A, B, C = [1.5, -2.0, 0.25, 3.0], [0.5, 1.5, -2.0, 2.0], [2.0, -1.0, 4.0, 0.5]
INTS = {"int64": ([3, -2, 5, 7], [2, 3, -2, 1]), "bool": ([True, False, True, True],
                                                      [True, True, False, True])}


def _operands(lib, name, like):
    """The method's arguments after ``self`` (tensors made like ``like``'s values)."""
    if name in UNARY:
        return ()
    if name == "cumsum":
        return (0,)
    if name == "lerp":
        return (lib.tensor(B, dtype=like.dtype), 0.3)
    if name in ("addcdiv", "addcmul"):
        return (lib.tensor(B, dtype=like.dtype), lib.tensor(C, dtype=like.dtype))
    if like.dtype.is_floating_point:
        return (lib.tensor(B, dtype=like.dtype),)
    return (lib.tensor(INTS[str(like.dtype).split(".")[-1]][1], dtype=like.dtype),)


def test_every_elementwise_method_has_its_inplace_form():
    missing = [n for n in ELEMENTWISE if not hasattr(torch.Tensor, n + "_")]
    assert not missing  # each listed method is one PyTorch has


@pytest.mark.parametrize("name", ELEMENTWISE)
def test_written_tensor_records_the_op(name):
    """A non-leaf written in place: its values, node, and the gradient reaching the leaf."""
    def fn(lib, a):
        x = a * 1
        out = getattr(x, name + "_")(*_operands(lib, name, a))
        assert out is x
        return x
    grad = name != "sgn"  # PyTorch's sgn gradient is an unmaterialized zero tensor
    assert_parity(fn, np.array(A), grad=grad, rtol=1e-12, where=name)


@pytest.mark.parametrize("name", [n for n in ELEMENTWISE if n not in UNARY | {"cumsum"}])
def test_operand_requiring_grad(name):
    """The other operand requires grad: its gradient through the in-place node (zero for the
    comparisons, PyTorch's error for ops without a derivative)."""
    def fn(lib, a):
        x = lib.tensor(A, dtype=lib.float64)
        args = _operands(lib, name, x)
        other = args[0].requires_grad_()
        getattr(x, name + "_")(*args)
        return x, other
    assert_parity(fn, np.array(A), grad=True, rtol=1e-12, where=name)


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize("name", ELEMENTWISE)
def test_integer_and_bool_tensors(name, dtype):
    """Values cast back into ``self``'s dtype, or PyTorch's cast/dispatch error."""
    def fn(lib, _):
        x = lib.tensor(INTS[dtype][0], dtype=getattr(lib, dtype))
        getattr(x, name + "_")(*_operands(lib, name, x))
        return x
    assert_parity(fn, np.zeros(1), where=f"{name} {dtype}")


def test_broadcast_into_smaller_self_is_refused():
    assert_parity(lambda lib, a, b: a.hypot_(b), np.ones(3), np.ones((2, 3)))
    assert_parity(lambda lib, a, b: a.addcmul_(b, b), np.ones(3), np.ones((2, 3)))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["addcdiv", "addcmul"])
def test_addc_ops_bit_for_bit(name, dt):
    """ATen computes ``self + (value * t1) / t2`` and the gradients ``g * (value / t2)``,
    ``-g * (value * t1 / (t2 * t2))``: any other grouping differs in the last bit for about a
    fifth of the elements."""
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(4096).astype(dt) for _ in range(4)]

    def run(lib):
        a, t1, t2 = (lib.tensor(x, requires_grad=True) for x in arrays[:3])
        out = getattr(lib, name)(a, t1, t2, value=0.37)
        out.backward(lib.tensor(arrays[3]))
        return [t.detach().numpy() for t in (out, a.grad, t1.grad, t2.grad)]
    for got, want in zip(run(__import__("jitgrad")), run(torch)):
        np.testing.assert_array_equal(got, want)


# ----------------------------------------------------------------------------- shape, in place

def test_shape_methods_listed_exist_in_pytorch():
    assert all(hasattr(torch.Tensor, n + "_") for n in SHAPE)


def test_shape_inplace_in_a_graph():
    def scenario(T, record):
        a = T.arange(6., dtype=T.float64).reshape(2, 3).requires_grad_()
        x = a * 2
        x.unsqueeze_(0)
        record("unsqueeze_", x)
        x.squeeze_(0)
        record("squeeze_(0)", x)
        x.t_()
        record("t_", x)
        record("stride", x.stride())
        x.transpose_(0, 1)
        x.swapaxes_(1, 0)
        x.swapdims_(0, 1)
        record("swaps", x)
        (x * T.arange(6., dtype=T.float64).reshape(2, 3)).sum().backward()
        record("grad", a.grad)
    check_observations(scenario)


@pytest.mark.parametrize("args", [(), (1,), ((1,),)])
def test_squeeze_inplace_node_names(args):
    def scenario(T, record):
        x = T.ones(2, 1, 3, dtype=T.float64, requires_grad=True) * 1
        x.squeeze_(*args)
        record("x", x)
    check_observations(scenario)


def test_shape_inplace_on_views_writes_through():
    def scenario(T, record):
        b = T.zeros(2, 3)
        v = b[0]
        v.unsqueeze_(0)
        v.mul_(0)
        v.add_(5)
        record("base", b)
        record("view", v)
        record("same base", v._base is b)
        a = T.ones(2, 3, dtype=T.float64, requires_grad=True)
        c = a * 1
        w = c[0]
        w.unsqueeze_(0)
        w.mul_(2)
        record("c", c)
        record("w", w)
        (c * T.arange(6., dtype=T.float64).reshape(2, 3)).sum().backward()
        record("grad", a.grad)
        a.grad = None
        c = a * 1
        w = c.t()
        w.t_()
        w.mul_(3)
        c.sum().backward()
        record("grad through t_", a.grad)
    check_observations(scenario)


@pytest.mark.parametrize("case", ["leaf", "t_ 3d", "t_ 1d", "dim", "saved", "no_grad"])
def test_shape_inplace_errors_and_corners(case):
    def scenario(T, record):
        if case == "leaf":
            T.ones(2, requires_grad=True).unsqueeze_(0)
        elif case == "t_ 3d":
            T.zeros(2, 3, 4).t_()
        elif case == "t_ 1d":
            record("shape", list(T.zeros(3).t_().shape))
        elif case == "dim":
            T.zeros(2, 3).transpose_(0, 2)
        elif case == "saved":
            a = T.ones(3, dtype=T.float64, requires_grad=True)
            x = a * 1
            y = x * x
            x.unsqueeze_(0)
            y.sum().backward()
        else:
            a = T.ones(2, 3, requires_grad=True)
            with T.no_grad():
                a.unsqueeze_(0)
            record("a", a)
    check_observations(scenario)


# ----------------------------------------------------------------------------- scalar conversion
# PyTorch converts a fill value to the tensor's dtype with its overflow check (Scalar.to<T>):
# out of range raises (1e300 into float32, 300 into int8, NaN into int64), -1 into uint8 wraps,
# infinities and NaN pass into floats, float16 overflows to inf silently

FILLS = {
    "fill_ f32 1e300": lambda T: T.zeros(1).fill_(1e300),
    "fill_ f32 max": lambda T: T.zeros(1).fill_(3.4028234663852886e+38),
    "fill_ f32 -inf": lambda T: T.zeros(1).fill_(float("-inf")),
    "fill_ f32 nan": lambda T: T.zeros(1).fill_(float("nan")),
    "fill_ i8 300": lambda T: T.zeros(1, dtype=T.int8).fill_(300),
    "fill_ u8 -1": lambda T: T.zeros(1, dtype=T.uint8).fill_(-1),
    "fill_ i64 1.5": lambda T: T.zeros(1, dtype=T.int64).fill_(1.5),
    "fill_ i64 nan": lambda T: T.zeros(1, dtype=T.int64).fill_(float("nan")),
    "fill_ bool 2": lambda T: T.zeros(2, dtype=T.bool).fill_(2),
    "fill_ i32 True": lambda T: T.zeros(2, dtype=T.int32).fill_(True),
    "fill_ f16 1e5": lambda T: T.zeros(1, dtype=T.float16).fill_(1e5),
    "fill_ in a graph": lambda T: (T.ones(2, requires_grad=True) * 1).fill_(2.0),
    "full f32 1e300": lambda T: T.full((1,), 1e300, dtype=T.float32),
    "full_like f32 1e300": lambda T: T.full_like(T.zeros(1), 1e300),
    "new_full f32 1e300": lambda T: T.zeros(1).new_full((1,), 1e300),
    "masked_fill f32 1e300": lambda T: T.zeros(1).masked_fill(T.tensor([True]), 1e300),
    "index_fill f32 1e300": lambda T: T.zeros(2).index_fill(0, T.tensor([0]), 1e300),
    "index_fill i8 300": lambda T: T.zeros(2, dtype=T.int8).index_fill(0, T.tensor([0]), 300),
    "index_fill u8 -1": lambda T: T.zeros(2, dtype=T.uint8).index_fill(0, T.tensor([0]), -1),
    "index_fill i64 2.5": lambda T: T.zeros(2, dtype=T.int64).index_fill(0, T.tensor([0]), 2.5),
}


@pytest.mark.parametrize("case", sorted(FILLS))
def test_scalar_fill_conversion(case):
    assert_parity(lambda T, _: FILLS[case](T), np.zeros(1), where=case)
