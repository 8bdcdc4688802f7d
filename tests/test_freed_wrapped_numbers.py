"""A second backward through ``x * 2`` raises as in PyTorch: ATen wraps the 2 in a 0-dim tensor
that MulBackward0 saves (and the first backward frees), while ``x + 2`` saves nothing. jitgrad
keeps the number as a kernel scalar; the node raises PyTorch's error in its place."""
import pytest

from tests._parity import check_observations, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch to compare against")

CASES = ["x*2", "x/2", "2*x", "2/x", "2-x", "x-2", "x+2", "x.mul(2)", "T.mul(x, 2)",
         "T.add(x, 2, alpha=3)", "T.true_divide(x, 2)", "x**2", "(x*2).exp()", "(x*2+1).sin()",
         "T.nn.functional.leaky_relu(x, 0.2)", "T.where(x > 0, x, 2.0)", "(x*2.5).tanh()*3",
         "x.addcmul(x, x, value=2)", "T.lerp(x, x*3, 0.5)", "x*T.tensor(2.0)"]


@pytest.mark.parametrize("expr", CASES)
@pytest.mark.parametrize("retain", [False, True])
def test_second_backward(expr, retain):
    def run(T, record):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = eval(expr, {"T": T, "x": x}).sum()
        y.backward(retain_graph=retain)
        record("first", x.grad)
        y.backward()  # retained: runs again and adds; else PyTorch's error or a rerun
        record("second", x.grad)
        y.backward()
    check_observations(run, expr)


@pytest.mark.parametrize("expr", ["(x*2).exp()", "x*2*x", "(x/3-1).sigmoid()*2"])
def test_fused_chain_second_backward(expr):
    # long enough chains run as one fused backward kernel: the same rule per member
    def run(T, record):
        x = T.tensor([[0.5, -1.0], [2.0, 0.25]], requires_grad=True)
        y = eval(expr, {"T": T, "x": x})
        y = (y * y + 1).sum()
        y.backward()
        record("first", x.grad)
        y.backward()
    check_observations(run, expr)


def test_create_graph_second_backward():
    def run(T, record):
        x = T.tensor([0.5, -1.0, 2.0], requires_grad=True)
        y = (x * 3).sum()
        (g,) = T.autograd.grad(y, x, create_graph=True)
        record("g", g)
        T.autograd.grad(y, x)
    check_observations(run)
