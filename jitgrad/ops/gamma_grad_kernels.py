"""Ports of ATen's reparameterization gradients (``aten/src/ATen/native/Distributions.h``):
``standard_gamma_grad_one`` (``torch._standard_gamma_grad``: -dCDF/dalpha / pdf of a standard
Gamma sample) and ``dirichlet_grad_one`` (``torch._dirichlet_grad``, through the Beta
approximations), with ``digamma_one``.

ATen instantiates them as ``<scalar_t, double>``: some steps run in scalar_t (the Beta
Taylor series, ``digamma_one<float, double>``'s argument and its ``1 / x``, ``logf``) and the
rest in double. The functions below are written once over ``_S`` (the scalar_t constructor)
and compiled twice, with ``_S`` bound to ``np.float32`` and to ``np.float64``, so the float32
results round where ATen's do. Literals are wrapped in ``_S`` where ATen's are scalar_t
(Numba would otherwise promote a float32 expression to float64).
"""
from __future__ import annotations

import math
import threading
import types

import numpy as np

_S = np.float64  # rebound per compiled copy
_digamma_one_d = None  # the compiled double digamma_one, bound per copy
_PSI_10 = 2.25175258906672110764
_F_1E17 = float(np.float32(1.0e17))
_F_08 = float(np.float32(0.8))
_F_09 = float(np.float32(0.9))
_F_11 = float(np.float32(1.1))
_DIGAMMA_A = np.array([8.33333333333333333333E-2, -2.10927960927960927961E-2,
                       7.57575757575757575758E-3, -4.16666666666666666667E-3,
                       3.96825396825396825397E-3, -8.33333333333333333333E-3,
                       8.33333333333333333333E-2])
_GAMMA_COEF = np.array([
    [0.16009398, -0.094634809, 0.025146376, -0.0030648343,
     1, 0.32668115, 0.10406089, 0.0014179084],
    [0.53487893, 0.1298071, 0.065735949, -0.0015649758,
     0.16639465, 0.020070113, -0.0035938915, -0.00058392623],
    [0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
     0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07]])
_BETA_COEF = np.array([
    [[[1.003668233, -0.01061107488, -0.0657888334, 0.01201642863],
      [0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033],
      [-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013]],
     [[0.221950385, -0.3187676331, 0.01799915743, 0.01074823814],
      [-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057],
      [0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05]],
     [[-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565],
      [0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181],
      [0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05]]],
    [[[1, -0.02924021934, -0.04438342661, 0.007285809825],
      [0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521],
      [-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149]],
     [[0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273],
      [0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956],
      [-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05]],
     [[0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05],
      [0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05],
      [-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06]]]])


def _digamma_one(x):
    """``digamma_one<scalar_t, double>(x)``: ``x`` and its updates in scalar_t, the sums in
    double, the result cast to scalar_t."""
    x = _S(x)
    if x == _S(0):
        return _S(np.inf)
    additional = 0.0
    is_int = x == np.floor(x)
    if x < _S(0):
        if is_int:
            return _S(np.inf)
        pi = _S(math.pi)
        additional = np.float64(-pi / _S(math.tan(pi * x)))
        x = _S(1) - x
    result = 0.0
    while x < _S(10):
        result -= np.float64(_S(1) / x)
        x += _S(1)
    if x == _S(10):
        return _S(result + _PSI_10 + additional)
    y = 0.0
    if np.float64(x) < _F_1E17:
        z = 1.0 / np.float64(x * x)
        p = 0.0
        for i in range(7):
            p = p * z + _DIGAMMA_A[i]
        y = z * p
    return _S(result + np.float64(math.log(x)) - np.float64(_S(0.5) / x) - y + additional)


def _standard_gamma_grad_one(alpha, x):
    """``standard_gamma_grad_one<scalar_t, double>`` (all in double; ``_S`` only casts)."""
    if x < _F_08:
        numer = 1.0
        denom = alpha
        series1 = numer / denom
        series2 = numer / (denom * denom)
        for i in range(1, 6):
            numer *= -x / np.float64(i)
            denom += 1.0
            series1 += numer / denom
            series2 += numer / (denom * denom)
        pow_x_alpha = math.pow(x, alpha)
        gamma_pdf = math.pow(x, alpha - 1.0) * math.exp(-x)
        gamma_cdf = pow_x_alpha * series1
        gamma_cdf_alpha = (math.log(x) - _digamma_one_d(alpha)) * gamma_cdf \
            - pow_x_alpha * series2
        result = -gamma_cdf_alpha / gamma_pdf
        return _S(0) if np.isnan(result) else _S(result)
    if alpha > 8.0:
        if _F_09 * alpha <= x and x <= _F_11 * alpha:
            numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
            numer_2 = 1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) \
                - 65 * x * x / alpha + alpha * (107 + 3600 * x)
            denom = 1244160 * (alpha * alpha) * (alpha * alpha)
            return _S(numer_1 * numer_2 / denom)
        denom = math.sqrt(8 * alpha)
        term2 = denom / (alpha - x)
        term3 = math.pow(x - alpha - alpha * math.log(x / alpha), -1.5)
        term23 = term2 - term3 if x < alpha else term2 + term3
        term1 = math.log(x / alpha) * term23 \
            - math.sqrt(2 / alpha) * (alpha + x) / ((alpha - x) * (alpha - x))
        stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
        numer = x * term1
        return _S(-stirling * numer / denom)
    u = math.log(x / alpha)
    v = math.log(alpha)
    c = _GAMMA_COEF
    cv = np.empty(8)
    for i in range(8):
        cv[i] = c[0, i] + u * (c[1, i] + u * c[2, i])
    p = cv[0] + v * (cv[1] + v * (cv[2] + v * cv[3]))
    q = cv[4] + v * (cv[5] + v * (cv[6] + v * cv[7]))
    return _S(math.exp(p / q))


def _beta_grad_alpha_small(x, alpha, beta):
    """``_beta_grad_alpha_small<scalar_t, double>``: all in scalar_t."""
    factor = _digamma_one(alpha) - _digamma_one(alpha + beta) - _S(math.log(x))
    numer = _S(1)
    series = numer / alpha * (factor + _S(1) / alpha)
    for i in range(1, 11):
        ci = _S(i)
        numer *= (ci - beta) * x / ci
        denom = alpha + ci
        series += numer / denom * (factor + _S(1) / denom)
    result = x * _S(math.pow(_S(1) - x, -beta)) * series
    return _S(0) if np.isnan(result) else result


def _beta_grad_beta_small(x, alpha, beta):
    """``_beta_grad_beta_small<scalar_t, double>``: all in scalar_t."""
    factor = _digamma_one(alpha + beta) - _digamma_one(beta)
    numer = _S(1)
    betas = _S(1)
    dbetas = _S(0)
    series = factor / alpha
    for i in range(1, 9):
        ci = _S(i)
        numer *= -x / ci
        dbetas = dbetas * (beta - ci) + betas
        betas = betas * (beta - ci)
        series += numer / (alpha + ci) * (dbetas + factor * betas)
    result = -_S(math.pow(_S(1) - x, _S(1) - beta)) * series
    return _S(0) if np.isnan(result) else result


def _beta_grad_alpha_mid(x, alpha, beta):
    """``_beta_grad_alpha_mid<scalar_t, double>``: double arguments and arithmetic."""
    total = alpha + beta
    mean = alpha / total
    std = math.sqrt(alpha * beta / (total + 1)) / total
    if mean - 0.1 * std <= x and x <= mean + 0.1 * std:
        poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
            (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
                3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                    (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                        8 * (1 - x) * (135 * beta - 11)))))
        prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
        prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
        return _S(prefactor_num / (1 - x) * poly / prefactor_den)
    prefactor = -x / math.sqrt(2 * alpha * beta / total)
    stirling = (1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha)) \
        * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta)) \
        / (1 + 1 / (12 * total) + 1 / (288 * total * total))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1_den = math.sqrt(2 * alpha / beta) * math.pow(total, 1.5) * axbx * axbx
    term1 = term1_num / term1_den
    term2 = 0.5 * math.log(alpha / (total * x))
    term3_num = math.sqrt(8 * alpha * beta / total)
    term3_den = beta * x + alpha * (x - 1)
    term3 = term3_num / term3_den
    term4_base = beta * math.log(beta / (total * (1 - x))) + alpha * math.log(alpha / (total * x))
    term4 = math.pow(term4_base, -1.5)
    term1234 = term1 + term2 * (term3 + (term4 if x < mean else -term4))
    return _S(stirling * prefactor * term1234)


def _dirichlet_grad_one(x, alpha, total):
    """``dirichlet_grad_one<scalar_t, double>(x, alpha, total)``."""
    x_ = np.float64(x)
    alpha_ = np.float64(alpha)
    total_ = np.float64(total)
    beta = total - alpha
    beta_ = total_ - alpha_
    boundary = total * x * (_S(1) - x)
    if x <= _S(0.5) and boundary < _S(2.5):
        return _beta_grad_alpha_small(x, alpha, beta)
    if x >= _S(0.5) and boundary < _S(0.75):
        return -_beta_grad_beta_small(_S(1) - x, beta, alpha)
    if alpha > _S(6) and beta > _S(6):
        return _beta_grad_alpha_mid(x_, alpha_, beta_)
    c = _BETA_COEF
    u = math.log(x_)
    a = math.log(alpha_) - u
    b = math.log(total_) - a
    pow_u = (1.0, u, u * u)
    pow_a = (1.0, a, a * a)
    p = 0.0
    q = 0.0
    for i in range(3):
        for j in range(3):
            ua = pow_u[i] * pow_a[j]
            p += ua * (c[0, i, j, 0] + b * (c[0, i, j, 1] + b * (c[0, i, j, 2]
                                                                 + b * c[0, i, j, 3])))
            q += ua * (c[1, i, j, 0] + b * (c[1, i, j, 1] + b * (c[1, i, j, 2]
                                                                 + b * c[1, i, j, 3])))
    approx = x_ * np.float64(_digamma_one(total_) - _digamma_one(alpha_)) / beta_
    return _S(p / q * approx)


def _k_standard_gamma_grad(alpha, x, out):
    for i in range(out.size):
        out[i] = _standard_gamma_grad_one(np.float64(alpha[i]), np.float64(x[i]))


def _k_dirichlet_grad(x, alpha, total, out):
    for i in range(out.size):
        out[i] = _dirichlet_grad_one(x[i], alpha[i], total[i])


_FUNCS = ("_digamma_one", "_standard_gamma_grad_one", "_beta_grad_alpha_small",
          "_beta_grad_beta_small", "_beta_grad_alpha_mid", "_dirichlet_grad_one",
          "_k_standard_gamma_grad", "_k_dirichlet_grad")
_COMPILED: dict = {}
_LOCK = threading.RLock()


def _compiled(dtype):
    """The kernels for scalar_t = ``dtype``: copies of the functions above whose globals bind
    ``_S`` to it (and ``_digamma_one_d`` to the double digamma), compiled by Numba."""
    key = np.dtype(dtype).name
    k = _COMPILED.get(key)
    if k is not None:
        return k
    with _LOCK:
        k = _COMPILED.get(key)
        if k is not None:
            return k
        import numba
        if key == "float32":
            _compiled(np.float64)  # the double digamma used by standard_gamma_grad_one
        env = dict(globals())
        env["_S"] = np.dtype(dtype).type
        env["_digamma_one_d"] = (_COMPILED["float64"]["_digamma_one"] if key == "float32"
                                 else None)
        k = {}
        for name in _FUNCS:
            src = globals()[name]
            env[name] = numba.njit(types.FunctionType(src.__code__, env, name),
                                    error_model="numpy")  # x / 0 is inf, as in C
            k[name] = env[name]
        if key == "float64":
            env["_digamma_one_d"] = env["_digamma_one"]
        _COMPILED[key] = k
    return k


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Elementwise ``standard_gamma_grad_one(alpha, x)`` (same shape and float dtype)."""
    out = np.empty(alpha.shape, dtype=alpha.dtype)
    if out.size:
        _compiled(alpha.dtype)["_k_standard_gamma_grad"](
            np.ascontiguousarray(alpha).reshape(-1), np.ascontiguousarray(x).reshape(-1),
            out.reshape(-1))
    return out


def dirichlet_grad(x: np.ndarray, alpha: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Elementwise ``dirichlet_grad_one(x, alpha, total)`` (broadcast, same float dtype)."""
    out = np.empty(x.shape, dtype=x.dtype)
    if out.size:
        flat = [np.ascontiguousarray(a).reshape(-1) for a in (x, alpha, total)]
        _compiled(x.dtype)["_k_dirichlet_grad"](*flat, out.reshape(-1))
    return out
