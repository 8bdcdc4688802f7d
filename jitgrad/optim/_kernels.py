"""The optimizers' fused per-parameter update kernels (Numba, cached on disk).

Each kernel runs one optimizer step for one parameter in a single pass over memory. Arrays are
flat and contiguous; every scalar arrives already cast to the parameter's dtype (the caller does
``dtype.type(x)``), so float32 math stays float32 (a bare float literal here would promote it
to float64). The arithmetic follows PyTorch's single-tensor CPU path op by op, including where
ATen's vectorized kernels use a fused multiply-add (``add(..., alpha=)``, ``lerp``), so results
agree with PyTorch bit for bit. Adam's ``sqrt`` is PyTorch's too: its CPU ``sqrt`` is MKL's
vector math (``vm?Sqrt``, not always correctly rounded: 1 ulp off in ~17% of float32 and ~1%
of float64 values), so where MKL is loaded ``adam_step_vml`` calls the same routine.

``error_model='numpy'`` (no ZeroDivisionError checks); no fastmath: the update must not assume
away NaN/inf (a NaN gradient must reach the parameter, as in PyTorch).
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.extending import intrinsic

from ..backends.cblas_calls import VML_MODE, _call_vml
from ..codegen.kcache import njit_cached

__all__ = ["sgd_step", "adam_step", "adam_step_vml", "sgd_rule", "adam_rules"]


@intrinsic
def _fma(typingctx, a, b, c):
    """Correctly rounded ``a * b + c`` (llvm.fma), what ATen's ``vec::fmadd`` computes."""
    if isinstance(a, types.Float) and a == b and b == c:
        def codegen(context, builder, signature, args):
            return builder.fma(*args)
        return a(a, b, c), codegen
    return None


_FLAGS = dict(nogil=True, error_model="numpy")


def sgd_rule(fma):
    """``sgd_element(i, ...)``: element ``i`` of an SGD step, in place on ``p`` (and ``buf``),
    written once for ``sgd_step`` here and the CUDA kernel (``_cuda_kernels``), each passing its
    own fused multiply-add (``llvm.fma`` here, ``cuda.fma`` on the device, a Python stand-in on
    the simulator; a constant to the compiler). It lives in this file because ``sgd_step`` is
    cached on disk and Numba's cache only sees changes to the file a cached function is in."""

    def sgd_element(i, p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
                    has_momentum, first_step, nesterov, maximize):
        gi = g[i]
        if maximize:
            gi = -gi
        pi = p[i]
        if has_wd:
            gi = fma(pi, weight_decay, gi)
        if has_momentum:
            if first_step:
                b = gi
            else:
                b = fma(gi, one_minus_dampening, buf[i] * momentum)
            buf[i] = b
            if nesterov:
                gi = fma(b, momentum, gi)
            else:
                gi = b
        p[i] = fma(gi, lr_neg, pi)

    return sgd_element


# inlined into the loop at Numba IR level (an LLVM-level call would stop it vectorizing)
_sgd_element = njit(inline="always", **_FLAGS)(sgd_rule(_fma))


@njit_cached(**_FLAGS)
def sgd_step(p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
             has_momentum, first_step, nesterov, maximize):
    """One SGD step for one parameter, in place on ``p`` (and ``buf``).

    ``grad = -g if maximize; grad = grad + wd * p; buf = grad (first step) or
    buf * momentum + (1 - dampening) * grad; grad = grad + momentum * buf (nesterov) or buf;
    p = p - lr * grad``.
    """
    for i in range(p.size):
        _sgd_element(i, p, g, buf, lr_neg, weight_decay, momentum, one_minus_dampening, has_wd,
                     has_momentum, first_step, nesterov, maximize)


def adam_rules(fma, sqrt):
    """``(adam_moments, adam_param)``: element ``i`` of an Adam/AdamW step on values already
    loaded, written once for ``adam_step`` here and the CUDA kernels (``_cuda_kernels``), each
    passing its own fused multiply-add and square root.

    ``adam_moments(g, p, m, v, vmax, ...) -> (p, m, v, vmax)``: weight decay (``p`` decayed
    for AdamW), the moments, and their running max with amsgrad (``vmax`` is ``v`` without).
    ``adam_param(p, m, vmax, numer, denom_scale, eps)``: the new parameter,
    ``p + numer * m / (sqrt(vmax) / denom_scale + eps)``; the plain step passes
    ``numer = -step_size``, ``denom_scale = sqrt(bias_correction2)``, the capturable step
    (PyTorch's ``m / (sqrt(v) / (sqrt(bc2) * -step_size) + eps / -step_size)``) ``numer = 1``
    (``1 * m`` is ``m`` exactly).

    Why this shape: the caller's loop does the loads and stores, and the options are constants
    across it (LLVM moves their branches out of the loop), so the host loop vectorizes as the
    hand-written one did. Two measured traps on 1M float32 (1 thread): a rule that indexes the
    arrays itself stopped the loop vectorizing (8-10 ms vs 1.3-2.9), and one function that
    also returned the new parameter ran at 4-12 ms against 0.5 for this split."""

    def adam_moments(gi, pi, m, v, vmax, decay_factor, weight_decay, one_minus_beta1, beta2,
                     one_minus_beta2, decoupled, has_wd, amsgrad, maximize):
        if maximize:
            gi = -gi
        if has_wd:
            if decoupled:
                pi = pi * decay_factor
            else:
                gi = fma(pi, weight_decay, gi)  # grad.add(p, alpha=wd): ATen's vec::fmadd
        m = fma(one_minus_beta1, gi - m, m)  # lerp(m, grad, 1 - beta1), as ATen's vec lerp
        v = fma(one_minus_beta2 * gi, gi, v * beta2)  # mul_(beta2).addcmul_(...)
        if amsgrad:
            if v > vmax or v != v:  # torch.maximum: a NaN on either side wins
                vmax = v
        else:
            vmax = v
        return pi, m, v, vmax

    def adam_param(pi, m, vmax, numer, denom_scale, eps):
        return pi + numer * m / (sqrt(vmax) / denom_scale + eps)

    return adam_moments, adam_param


_adam_moments, _adam_param = (njit(inline="always", **_FLAGS)(f)
                              for f in adam_rules(_fma, np.sqrt))


@njit_cached(**_FLAGS)
def adam_step(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, decay_factor, weight_decay,
              one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
              step_size_neg, decoupled, has_wd, amsgrad, maximize):
    """One Adam/AdamW step for one parameter, in place on ``p`` and the moment buffers.

    ``p *= 1 - lr*wd`` (AdamW) or ``grad += wd * p`` (Adam); ``m = lerp(m, grad, 1-beta1)``;
    ``v = v*beta2 + (1-beta2)*grad*grad``; ``vmax = max(vmax, v)`` (amsgrad);
    ``p += -step_size * m / (sqrt(v) / sqrt(bias_correction2) + eps)``. Without amsgrad
    ``max_exp_avg_sq`` is ``exp_avg`` again (read, never written).
    """
    for i in range(p.size):
        pi, m, v, vmax = _adam_moments(
            g[i], p[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i], decay_factor,
            weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled, has_wd, amsgrad,
            maximize)
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax
        p[i] = _adam_param(pi, m, vmax, step_size_neg, bias_correction2_sqrt, eps)



@njit(inline="always", **_FLAGS)
def _root_given(root):
    """The ``sqrt`` of ``adam_rules`` for ``adam_step_vml``: its argument is already the root."""
    return root


_adam_param_of_root = njit(inline="always", **_FLAGS)(adam_rules(_fma, _root_given)[1])

# Elements per VML call in adam_step_vml: a block's arrays stay in L2 between its passes and a
# call's ~1 us is amortized. Measured on 1M float32 (1 thread): 1024-8192 run 0.97-1.09 ms;
# 16384 ran 8 ms (MKL may thread a call that long, against the caller's own thread).
_ROOT_BLOCK = 4096


# The block passes are functions of their own over slices (indices from 0), not loops over
# ``range(start, stop)`` in the caller: written inline, LLVM left those loops scalar (4.4 ms
# against 1.0 ms on 1M float32).
@njit(**_FLAGS)
def _adam_moments_block(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, decay_factor,
                        weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled, has_wd,
                        amsgrad, maximize):
    for i in range(p.size):
        pi, m, v, vmax = _adam_moments(
            g[i], p[i], exp_avg[i], exp_avg_sq[i], max_exp_avg_sq[i], decay_factor,
            weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled, has_wd,
            amsgrad, maximize)
        exp_avg[i] = m
        exp_avg_sq[i] = v
        if amsgrad:
            max_exp_avg_sq[i] = vmax
        if decoupled:
            p[i] = pi  # AdamW's decayed parameter, read back by the parameter pass


@njit(**_FLAGS)
def _adam_param_block(p, exp_avg, root, numer, denom_scale, eps):
    for i in range(p.size):
        p[i] = _adam_param_of_root(p[i], exp_avg[i], root[i], numer, denom_scale, eps)


@njit_cached(**_FLAGS)
def adam_step_vml(p, g, exp_avg, exp_avg_sq, max_exp_avg_sq, decay_factor, weight_decay,
                  one_minus_beta1, beta2, one_minus_beta2, bias_correction2_sqrt, eps,
                  step_size_neg, decoupled, has_wd, amsgrad, maximize, sqrt_addr):
    """``adam_step`` with the denominator's square root taken by the VML routine at
    ``sqrt_addr`` (``backends/vml.routine("sqrt", dtype)``), as PyTorch's CPU ``sqrt`` takes it,
    so the parameter gets PyTorch's bits too. By blocks: the moments (``p`` stores its decayed
    value for AdamW), then the roots of ``vmax`` into a scratch block (one VML call; VML is
    elementwise, so the blocking changes no bit), then the parameters from those roots by the
    same rule as ``adam_step``. The arrays are flat and contiguous (the caller's ``_FlatView``).
    """
    n = p.size
    root = np.empty(min(n, _ROOT_BLOCK), dtype=p.dtype)
    vsrc = max_exp_avg_sq if amsgrad else exp_avg_sq
    item = p.itemsize
    for start in range(0, n, _ROOT_BLOCK):
        stop = min(start + _ROOT_BLOCK, n)
        _adam_moments_block(p[start:stop], g[start:stop], exp_avg[start:stop],
                            exp_avg_sq[start:stop], max_exp_avg_sq[start:stop], decay_factor,
                            weight_decay, one_minus_beta1, beta2, one_minus_beta2, decoupled,
                            has_wd, amsgrad, maximize)
        _call_vml(sqrt_addr, np.int32(stop - start), vsrc.ctypes.data + start * item,
                  root.ctypes.data, np.int64(VML_MODE))
        _adam_param_block(p[start:stop], exp_avg[start:stop], root[:stop - start],
                          step_size_neg, bias_correction2_sqrt, eps)
