"""The optimizers' per-parameter update kernels for CUDA parameters (numba.cuda, grid-stride).

The device twins of ``_kernels.sgd_step``/``adam_step``: the same element rules
(``sgd_rule``/``adam_rules``, written once there), one launch per parameter, every scalar
already cast to the parameter's dtype by the caller (so a float32 update compiles without
``.f64``: ``tests/cuda/test_device_nn_ptx.py``), the same fused multiply-adds (``cuda.fma``:
correctly rounded, like the CPU's ``llvm.fma``), no fastmath (a NaN gradient reaches the
parameter). Options arrive as runtime booleans: they are uniform across the grid, so the
branches cost nothing and there is one kernel per dtype.

Importing this module imports numba.cuda: the optimizers import it only when a parameter lives
on the device (``import jitgrad`` must not pay for numba.cuda).
"""
from __future__ import annotations

import numpy as np

from ..backends.cuda_env import SIMULATOR, cuda, device_jit, kernel_jit
from ._kernels import adam_rules, sgd_rule

__all__ = ["sgd_pyfunc", "adam_pyfunc", "adam_capturable_pyfunc", "sgd_step", "adam_step",
           "adam_capturable_step", "launch_sgd", "launch_adam", "launch_adam_capturable"]

if SIMULATOR:
    def _fma(a, b, c):
        # The simulator has no cuda.fma. float32: the product of two float32 is exact in
        # float64, so one float64 add then one rounding to float32 (double rounding can differ
        # from a true fma in the last ulp, which the tests' float32 tolerance allows).
        if isinstance(a, np.float32):
            return np.float32(np.float64(a) * np.float64(b) + np.float64(c))
        return a * b + c

    def _sqrt(a):
        with np.errstate(invalid="ignore"):
            return np.sqrt(a)  # a float32 scalar stays float32

    def _pow(a, b):
        return np.power(a, a.dtype.type(b))  # float32 stays float32 (math.pow would not)
else:
    import math

    @device_jit
    def _fma(a, b, c):
        return cuda.fma(a, b, c)

    @device_jit
    def _sqrt(a):
        return math.sqrt(a)  # float32 in, float32 out (no .f64)

    @device_jit
    def _pow(a, b):
        return math.pow(a, b)  # powf for float32 (no .f64)


# the SGD and Adam element rules shared with the host kernels (``_kernels``), over the
# device's fma and sqrt
_sgd_element = device_jit(sgd_rule(_fma))
_adam_moments, _adam_param = (device_jit(f) for f in adam_rules(_fma, _sqrt))


def sgd_pyfunc(p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
               has_momentum, first_step, nesterov, maximize):
    """``_kernels.sgd_step`` with the loop spread over the grid (see its docstring)."""
    for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
        _sgd_element(i, p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
                     has_momentum, first_step, nesterov, maximize)


def adam_pyfunc(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, decay_factor, weight_decay,
                one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
                step_size_neg, decoupled, has_wd, amsgrad, maximize):
    """``_kernels.adam_step`` with the loop spread over the grid (see its docstring)."""
    for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
        pi, m, v, vmax = _adam_moments(
            g[i], p[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i], decay_factor,
            weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled, has_wd, amsgrad,
            maximize)
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax
        p[i] = _adam_param(pi, m, vmax, step_size_neg, bias_correction2_sqrt, eps)


def adam_capturable_pyfunc(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, step_t, one, lr,
                           decay_factor, weight_decay, beta1, one_minus_beta1, beta2,
                           one_minus_beta2, eps, decoupled, has_wd, amsgrad, maximize):
    """Adam/AdamW with ``capturable=True``: the step count is read on the device (``step_t``,
    one element, already incremented by ``increment_pyfunc``) and the bias corrections are
    computed from it there, with PyTorch's capturable formula (``_single_tensor_adam``):
    ``denom = sqrt(v) / (sqrt(bc2) * -step_size) + eps / -step_size; p += m / denom`` (the
    shared rule with ``numer = 1``). Every scalar argument is the same from step to step, so
    a CUDA graph can replay the update."""
    step = step_t[0]
    bias_correction1 = one - _pow(beta1, step)
    bias_correction2 = one - _pow(beta2, step)
    step_size_neg = -(lr / bias_correction1)
    bias_correction2_sqrt = _sqrt(bias_correction2)
    scale = bias_correction2_sqrt * step_size_neg
    eps_term = eps / step_size_neg
    for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
        pi, m, v, vmax = _adam_moments(
            g[i], p[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i], decay_factor,
            weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled, has_wd, amsgrad,
            maximize)
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax
        p[i] = _adam_param(pi, m, vmax, one, scale, eps_term)


def increment_pyfunc(step_t, one):
    """``step_t[0] += one`` (a capturable optimizer's step count, on the device)."""
    if cuda.grid(1) == 0:
        step_t[0] += one


sgd_step = kernel_jit(sgd_pyfunc)
adam_step = kernel_jit(adam_pyfunc)
adam_capturable_step = kernel_jit(adam_capturable_pyfunc)
increment_step = kernel_jit(increment_pyfunc)


def launch_sgd(*args) -> None:
    """Launch ``sgd_step`` over the parameter (``args`` as in ``sgd_pyfunc``)."""
    from ..backends import cuda as B
    B.launch_flat(sgd_step, args[0].size, args)


def launch_adam(*args) -> None:
    from ..backends import cuda as B
    B.launch_flat(adam_step, args[0].size, args)


def launch_adam_capturable(*args) -> None:
    """Increment the step count (``args[5]``) on the device, then launch
    ``adam_capturable_step`` over the parameter (``args`` as in ``adam_capturable_pyfunc``)."""
    from ..backends import cuda as B
    step_t, one = args[5], args[6]
    B.launch_flat(increment_step, 1, (step_t, step_t.dtype.type(one)))
    B.launch_flat(adam_capturable_step, args[0].size, args)
