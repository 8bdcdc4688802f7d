"""The optimizers' per-parameter update kernels for CUDA parameters (numba.cuda, grid-stride).

The device twins of ``_kernels.sgd_step``/``adam_step``: the same arithmetic statement by
statement, one launch per parameter, every scalar already cast to the parameter's dtype by the
caller (so a float32 update compiles without ``.f64``: ``tests/cuda/test_device_nn_ptx.py``), the
same fused multiply-adds (``cuda.fma``: correctly rounded, like the CPU's ``llvm.fma``), no
fastmath (a NaN gradient reaches the parameter). Options arrive as runtime booleans: they are
uniform across the grid, so the branches cost nothing and there is one kernel per dtype.

Importing this module imports numba.cuda: the optimizers import it only when a parameter lives
on the device (``import jitgrad`` must not pay for numba.cuda).
"""
from __future__ import annotations

import numpy as np

from ..backends.cuda_env import SIMULATOR, cuda, device_jit, kernel_jit

__all__ = ["sgd_pyfunc", "adam_pyfunc", "sgd_step", "adam_step", "launch_sgd", "launch_adam"]

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
else:
    import math

    @device_jit
    def _fma(a, b, c):
        return cuda.fma(a, b, c)

    @device_jit
    def _sqrt(a):
        return math.sqrt(a)  # float32 in, float32 out (no .f64)


def sgd_pyfunc(p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
               has_momentum, first_step, nesterov, maximize):
    """``_kernels.sgd_step`` with the loop spread over the grid (see its docstring)."""
    for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if has_wd:
            gi = _fma(pi, weight_decay, gi)
        if has_momentum:
            if first_step:
                b = gi
            else:
                b = _fma(gi, one_minus_dampening, buf[i] * momentum)
            buf[i] = b
            if nesterov:
                gi = _fma(b, momentum, gi)
            else:
                gi = b
        p[i] = _fma(gi, lr_neg, pi)


def adam_pyfunc(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, decay_factor, weight_decay,
                one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
                step_size_neg, decoupled, has_wd, amsgrad, maximize):
    """``_kernels.adam_step`` with the loop spread over the grid (see its docstring)."""
    for i in range(cuda.grid(1), p.size, cuda.gridsize(1)):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if has_wd:
            if decoupled:
                pi = pi * decay_factor
            else:
                gi = _fma(pi, weight_decay, gi)
        m = _fma(one_minus_beta1, gi - exp_avg[i], exp_avg[i])
        exp_avg[i] = m
        v = _fma(one_minus_beta2 * gi, gi, exp_avg_sq[i] * beta2)
        exp_avg_sq[i] = v
        if amsgrad:
            vm = max_exp_avg_sq[i]
            if v > vm or v != v:
                vm = v
            max_exp_avg_sq[i] = vm
            v = vm
        denom = _sqrt(v) / bias_correction2_sqrt + eps
        p[i] = pi + step_size_neg * m / denom



sgd_step = kernel_jit(sgd_pyfunc)
adam_step = kernel_jit(adam_pyfunc)


def launch_sgd(*args) -> None:
    """Launch ``sgd_step`` over the parameter (``args`` as in ``sgd_pyfunc``)."""
    from ..backends import cuda as B
    B.launch_flat(sgd_step, args[0].size, args)


def launch_adam(*args) -> None:
    from ..backends import cuda as B
    B.launch_flat(adam_step, args[0].size, args)
