"""Activation declarations: relu, leaky_relu, gelu (exact and tanh), softplus, and the table of
those whose PyTorch kernel is floating only. How to write one: ``elementwise.py``."""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node="ReluBackward0")
class relu:
    def f(a):
        return select(a < lit(a, 0), lit(a, 0), a)

    def da(g, out):
        # threshold_backward(grad, result, 0): zero where result <= 0 (a NaN result passes
        # grad through)
        return select(out <= lit(out, 0), lit(g, 0.0), g)


@elementwise(node="LeakyReluBackward0", aux={"negative_slope": "compute"}, dtype="float")
class leaky_relu:
    def f(a, negative_slope):
        return select(a > lit(a, 0), a, a * negative_slope)

    def da(g, a, negative_slope):
        return select(a > lit(a, 0), g, g * negative_slope)


@elementwise(node="GeluBackward0", dtype="float")
class gelu:
    def f(a):
        return lit(a, 0.5) * a * (lit(a, 1.0) + erf(a * lit(a, 0.7071067811865476)))

    def da(g, a):
        return g * (lit(a, 0.5) * (lit(a, 1.0) + erf(a * lit(a, 0.7071067811865476)))
                    + a * lit(a, 0.3989422804014327) * exp(lit(a, -0.5) * a * a))


@elementwise(node="GeluBackward0", dtype="float")
class gelu_tanh:
    def f(a):
        return lit(a, 0.5) * a * (lit(a, 1.0) + tanh(
            lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))

    def da(g, a):
        return g * (lit(a, 0.5) * (lit(a, 1.0) + tanh(
            lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))
            + lit(a, 0.5) * a * (lit(a, 1.0) - tanh(
                lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)) * tanh(
                lit(a, 0.7978845608028654) * (a + lit(a, 0.044715) * a * a * a)))
            * lit(a, 0.7978845608028654) * (lit(a, 1.0) + lit(a, 0.134145) * a * a))


@elementwise(node="SoftplusBackward0", aux={"beta": "compute", "threshold": "compute"},
             dtype="float")
class softplus:
    def f(a, beta, threshold):
        return select(a * beta > threshold, a, log1p(exp(a * beta)) / beta)

    def da(g, a, beta, threshold):
        # ATen's order, grad * z / (z + 1) (nn.functional.softplus runs ATen's exact kernel on
        # float32/float64 CPU tensors: nn/functional/activation_kernels.py)
        return select(a * beta > threshold, g,
                      g * exp(a * beta) / (exp(a * beta) + lit(a, 1.0)))


# PyTorch's CPU kernels of these activations are defined for floating types only: an integer or
# bool input raises NotImplementedError naming the kernel (read by elementwise_call._dtypes on
# the non-float path only, so float calls pay nothing)
FLOAT_KERNELS = {"leaky_relu": "leaky_relu_cpu", "gelu": "GeluKernelImpl",
                 "gelu_tanh": "GeluKernelImpl", "softplus": "softplus_cpu"}
