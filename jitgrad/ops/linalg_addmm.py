"""The fused products ``beta * input + alpha * product``: addmm, baddbmm, addbmm, addmv, addr.
``beta == 0`` ignores ``input`` (NaN and inf too), as PyTorch; float16 products on the CPU are
rounded once, after the sum."""
from __future__ import annotations

import numpy as np

from ..autograd import grad_mode
from ..backends import blas, cpu
from ..tensor import Tensor
from .composite import record
from .linalg_args import _ctype, _legacy, _no_bool, _tensor_arg, _write_out
from .linalg_products import (
    _addmv_data,
    _check_bmm,
    _check_mv,
    _host_blas,
    _layout_attrs,
    _mat1_grad,
    _mat2_grad,
    _matmul_data,
    _mT,
    _np_matmul,
    _on_host,
    _save_pair,
)


def _scalar(v):
    return v.item() if isinstance(v, Tensor) else v


def _coef(v, dt, name, strict=False):
    """alpha/beta for a result of dtype ``dt``: integers truncate floats (PyTorch's Scalar
    conversion); ``strict`` ops refuse them (addr)."""
    v = _scalar(v)
    if strict and dt.name != "bool" and isinstance(v, bool):
        raise RuntimeError(f"Boolean {name} only supported for Boolean results.")
    if strict and not dt.is_floating_point and isinstance(v, float):
        raise RuntimeError(f"For integral input tensors, argument {name} must not be a "
                           "floating point number.")
    if dt.name == "bool":
        return bool(v)
    if not dt.is_floating_point:
        return int(v)
    return v


def _check_bias(bias, shape):
    """``bias.expand(shape)``'s checks (addmm & co expand ``input`` to the product's shape)."""
    bs = tuple(bias.shape)
    if len(bs) > len(shape):
        raise RuntimeError(
            f"expand(torch.{_legacy(bias.dtype)}Tensor{{{list(bs)}}}, size={list(shape)}): the "
            f"number of sizes provided ({len(shape)}) must be greater or equal to the number of "
            f"dimensions in the tensor ({len(bs)})")
    lead = len(shape) - len(bs)
    for i, s in enumerate(bs):
        if s != shape[lead + i] and s != 1:
            raise RuntimeError(
                f"The expanded size of the tensor ({shape[lead + i]}) must match the existing "
                f"size ({s}) at non-singleton dimension {lead + i}.  Target sizes: "
                f"{list(shape)}.  Tensor sizes: {list(bs)}")


def _combine(bias, prod, beta, alpha, dtype):
    """``beta * bias + alpha * prod`` as data; ``prod`` is float32 for float16 operands on the
    CPU (rounded once here). ``beta == 0`` ignores ``bias`` (NaN and inf too), as PyTorch."""
    if prod.__class__ is np.ndarray and bias._data.__class__ is np.ndarray:
        if dtype.name == "bool":
            res = prod.astype(bool) if alpha else np.zeros(prod.shape, bool)
            if beta:
                res = res | bias._data
            return np.ascontiguousarray(np.broadcast_to(res, prod.shape))
        if alpha != 1:
            prod = prod * prod.dtype.type(alpha) if prod.dtype.kind == "f" else prod * alpha
        if beta != 0:
            b = bias._data.astype(prod.dtype, copy=False)
            if beta != 1:
                b = b * (prod.dtype.type(beta) if prod.dtype.kind == "f" else beta)
            prod = prod + b
        return np.ascontiguousarray(prod.astype(dtype.np, copy=False))
    from .elementwise_call import check_same_device
    check_same_device((bias, Tensor._make(prod)))
    with grad_mode.no_grad():
        p = Tensor._make(prod)
        res = p if alpha == 1 else p * alpha
        if beta != 0:
            res = res + (bias if beta == 1 else bias * beta)
        res = res.expand(tuple(p.shape)).contiguous() if tuple(res.shape) != tuple(p.shape) \
            else res
        if res.dtype is not dtype:
            res = res.to(dtype)
    return res._data


def _host_prod(a, b):
    """The product's data without rounding float16 (see _combine): float32 for float16
    operands, on the host and on the device alike."""
    if _on_host(a, b):
        return _np_matmul(a._data, b._data)
    if a.dtype.name == "float16":
        with grad_mode.no_grad():
            return _matmul_data(a.float(), b.float())
    return _matmul_data(a, b)


def _beta_alpha_backward(node, g, vjp_1, vjp_2):
    """Gradients of ``beta * input + alpha * f(x1, x2)`` (addmm, baddbmm, addbmm, addmv, addr):
    ``vjp_1(g)`` / ``vjp_2(g)`` are f's VJPs, called only for the inputs that need one."""
    a = node.ctx.attrs
    need_bias, need_1, need_2 = node.ctx.needs_input_grad
    alpha, beta = a["alpha"], a["beta"]

    def scaled(t, k):
        return t if k == 1 else t * k

    return (scaled(g, beta) if need_bias else None,
            scaled(vjp_1(g), alpha) if need_1 else None,
            scaled(vjp_2(g), alpha) if need_2 else None)


def _addmm_backward(node, g):
    return _beta_alpha_backward(node, g, lambda g: _mat1_grad(node, node.saved("m2"), g),
                                lambda g: _mat2_grad(node, node.saved("m1"), g))


def addmm(input, mat1, mat2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("mat1", mat1), ("mat2", mat2)), 1):
        _tensor_arg("addmm", n, i, t)
    for n, t in (("mat1", mat1), ("mat2", mat2)):
        if t.ndim != 2:
            raise RuntimeError(f"{n} must be a matrix, got {t.ndim}-D tensor")
    if mat1.shape[1] != mat2.shape[0]:
        raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({mat1.shape[0]}x"
                           f"{mat1.shape[1]} and {mat2.shape[0]}x{mat2.shape[1]})")
    if input.dtype is not mat2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_legacy(input.dtype)} and {_legacy(mat2.dtype)}")
    if mat1.dtype is not mat2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_legacy(mat1.dtype)} and {_legacy(mat2.dtype)}")
    _no_bool("addmm_impl_cpu_", mat1)
    shape = (mat1.shape[0], mat2.shape[1])
    _check_bias(input, shape)
    alpha, beta = _coef(alpha, mat1.dtype, "alpha"), _coef(beta, mat1.dtype, "beta")
    if _on_host(input, mat1, mat2) and mat1.dtype.name in ("float32", "float64"):
        # addmm_impl_cpu_'s call: the bias copied into the result, then one GEMM with beta as
        # given (PyTorch's bits; adding the bias after the product rounds differently)
        data = cpu.empty(shape, mat1.dtype.np)
        if beta != 0:
            data[...] = input._data
        blas.matmul(mat1._data, mat2._data, out=data, accumulate=True,
                    alpha=alpha, beta=beta)
    elif _on_host(input, mat1, mat2) and mat1.dtype.name != "float16":
        prod = blas.matmul(mat1._data, mat2._data)
        if alpha != 1:
            prod *= alpha
        if beta != 0:
            bias = input._data if beta == 1 else input._data * beta
            data = np.add(prod, bias, out=prod)
        else:
            data = prod
    else:
        if not _on_host(input, mat1, mat2):
            from .elementwise_call import check_same_device
            check_same_device((input, mat1, mat2))
        data = _combine(input, _host_prod(mat1, mat2), beta, alpha, mat1.dtype)
    res = record("AddmmBackward0", (input, mat1, mat2), data, _addmm_backward,
                 save=_save_pair(mat1, mat2, "m1", "m2"),
                 attrs={"alpha": alpha, "beta": beta, **_layout_attrs(mat1, mat2)})
    return _write_out("addmm", res, out)


def _baddbmm_backward(node, g):
    a = node.ctx.attrs

    def per_batch(g):  # addbmm: the output is the sum over the batch
        return g.unsqueeze(0).expand(a["batch"], *g.shape) if a["sum_batch"] else g

    return _beta_alpha_backward(node, g, lambda g: per_batch(g) @ _mT(node.saved("b2")),
                                lambda g: _mT(node.saved("b1")) @ per_batch(g))


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), 1):
        _tensor_arg("baddbmm", n, i, t)
    _check_bmm(batch1, batch2)
    if input.dtype is not batch1.dtype:
        raise RuntimeError(f"Input dtypes must be the same, got: input {_ctype(input.dtype)}, "
                           f"batch1: {_ctype(batch1.dtype)}, batch2: {_ctype(batch2.dtype)}")
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"expected scalar type {_legacy(batch1.dtype)} but found "
                           f"{_legacy(batch2.dtype)}")
    _no_bool("baddbmm", batch1)
    _check_bias(input, (batch1.shape[0], batch1.shape[1], batch2.shape[2]))
    alpha, beta = _coef(alpha, batch1.dtype, "alpha"), _coef(beta, batch1.dtype, "beta")
    if _host_blas(batch1, batch2, input):
        # bmm_out_or_baddbmm_: the bias copied into the result, then ATen's loop (tiny
        # matrices) or one batched GEMM with alpha and beta (PyTorch's bits)
        data = cpu.empty((batch1.shape[0], batch1.shape[1], batch2.shape[2]), batch1.dtype.np)
        if beta != 0:
            data[...] = input._data
        blas.matmul(batch1._data, batch2._data, out=data, accumulate=True, alpha=alpha,
                    beta=beta)
    else:
        data = _combine(input, _host_prod(batch1, batch2), beta, alpha, batch1.dtype)
    res = record("BaddbmmBackward0", (input, batch1, batch2), data, _baddbmm_backward,
                 save=_save_pair(batch1, batch2, "b1", "b2"),
                 attrs={"alpha": alpha, "beta": beta, "sum_batch": False})
    return _write_out("baddbmm", res, out)


def _addbmm_data(input, batch1, batch2, alpha, beta):
    """addbmm_impl_: the bias copied into the result, then one addmm_ per batch (beta for the
    first, 1 after it): GEMMs summed in batch order, PyTorch's bits."""
    b1, b2 = batch1._data, batch2._data
    data = cpu.empty((b1.shape[1], b2.shape[2]), b1.dtype)
    if beta != 0:
        data[...] = input._data
    return blas.addbmm(b1, b2, data, alpha, beta)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("batch1", batch1), ("batch2", batch2)), 1):
        _tensor_arg("addbmm", n, i, t)
    if batch1.ndim != 3:
        raise RuntimeError("batch1 must be a 3D tensor")
    if batch2.ndim != 3:
        raise RuntimeError("batch2 must be a 3D tensor")
    if batch1.shape[0] != batch2.shape[0]:
        raise RuntimeError(f"batch1 and batch2 must have same number of batches, got "
                           f"{batch1.shape[0]} and {batch2.shape[0]}")
    if batch1.shape[2] != batch2.shape[1]:
        raise RuntimeError(f"Incompatible matrix sizes for bmm ({batch1.shape[1]}x"
                           f"{batch1.shape[2]} and {batch2.shape[1]}x{batch2.shape[2]})")
    if input.dtype is not batch2.dtype:
        raise RuntimeError(f"self and mat2 must have the same dtype, but got "
                           f"{_legacy(input.dtype)} and {_legacy(batch2.dtype)}")
    if batch1.dtype is not batch2.dtype:
        raise RuntimeError(f"mat1 and mat2 must have the same dtype, but got "
                           f"{_legacy(batch1.dtype)} and {_legacy(batch2.dtype)}")
    _no_bool("addmm_impl_cpu_", batch1)
    _check_bias(input, (batch1.shape[1], batch2.shape[2]))
    alpha, beta = _coef(alpha, batch1.dtype, "alpha"), _coef(beta, batch1.dtype, "beta")
    if _host_blas(batch1, batch2, input):
        data = _addbmm_data(input, batch1, batch2, alpha, beta)
    elif _on_host(batch1, batch2):
        # one GEMM: (n, B*k) @ (B*k, p)
        b, n, k = batch1._data.shape
        x = np.ascontiguousarray(batch1._data.transpose(1, 0, 2)).reshape(n, b * k)
        prod = _np_matmul(x, batch2._data.reshape(b * k, batch2._data.shape[2]))
    else:
        with grad_mode.no_grad():
            prod = Tensor._make(_matmul_data(batch1, batch2)).sum(0)._data
    if not _host_blas(batch1, batch2, input):
        data = _combine(input, prod, beta, alpha, batch1.dtype)
    res = record("AddbmmBackward0", (input, batch1, batch2), data, _baddbmm_backward,
                 save=_save_pair(batch1, batch2, "b1", "b2"),
                 attrs={"alpha": alpha, "beta": beta, "sum_batch": True,
                        "batch": batch1.shape[0]})
    return _write_out("addbmm", res, out)


def _addmv_backward(node, g):
    return _beta_alpha_backward(node, g, lambda g: g.unsqueeze(-1) * node.saved("v"),
                                lambda g: _mT(node.saved("m")) @ g)


def addmv(input, mat, vec, *, beta=1, alpha=1, out=None):
    for i, (n, t) in enumerate((("input", input), ("mat", mat), ("vec", vec)), 1):
        _tensor_arg("addmv", n, i, t)
    if input.ndim > 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input.ndim}, {mat.ndim}, "
                           f"{vec.ndim}")
    _check_mv(mat, vec, input)
    if not (input.dtype is mat.dtype is vec.dtype):
        raise RuntimeError(f"addmv input tensors must have the same dtype, but got "
                           f"{_legacy(input.dtype)}, {_legacy(mat.dtype)}, and "
                           f"{_legacy(vec.dtype)}")
    _no_bool("addmv_impl_cpu", mat)
    alpha, beta = _coef(alpha, mat.dtype, "alpha"), _coef(beta, mat.dtype, "beta")
    if _host_blas(mat, vec, input):
        data = _addmv_data(mat, vec, input, alpha, beta)
    else:
        data = _combine(input, _host_prod(mat, vec), beta, alpha, mat.dtype)
    res = record("AddmvBackward0", (input, mat, vec), data, _addmv_backward,
                 save=_save_pair(mat, vec, "m", "v"), attrs={"alpha": alpha, "beta": beta})
    return _write_out("addmv", res, out)


def _addr_backward(node, g):
    # the vectors may have a narrower dtype than the (promoted) result
    return _beta_alpha_backward(node, g, lambda g: g @ node.saved("v2").to(g.dtype),
                                lambda g: _mT(g) @ node.saved("v1").to(g.dtype))


def addr(input, vec1, vec2, *, beta=1, alpha=1, out=None):
    """PyTorch's addr promotes its operands' dtypes (bool: logical and/or)."""
    for i, (n, t) in enumerate((("input", input), ("vec1", vec1), ("vec2", vec2)), 1):
        _tensor_arg("addr", n, i, t)
    for n, v in (("vec1", vec1), ("vec2", vec2)):
        if v.ndim != 1:
            raise RuntimeError(f"addr: Expected 1-D argument {n}, but got {v.ndim}-D")
    from .. import _dtype as D
    dt = D.promote_types(D.promote_types(input.dtype, vec1.dtype), vec2.dtype)
    _check_bias(input, (vec1.shape[0], vec2.shape[0]))
    beta, alpha = _coef(beta, dt, "beta", True), _coef(alpha, dt, "alpha", True)
    with grad_mode.no_grad():
        v1, v2 = vec1.to(dt), vec2.to(dt)
        bias = input.to(dt)
    if _host_blas(v1, v2, bias):
        from .. import _settings
        from ..backends import blas_addr
        data = blas_addr.addr(bias._data, v1._data, v2._data, alpha, beta,
                              _settings.get_num_threads())
        res = record("AddrBackward0", (input, vec1, vec2), data, _addr_backward,
                     save=_save_pair(vec1, vec2, "v1", "v2"),
                     attrs={"alpha": alpha, "beta": beta})
        return _write_out("addr", res, out)
    if _on_host(v1, v2):
        x, y = v1._data, v2._data
        if dt.name == "float16":
            x, y = x.astype(np.float32), y.astype(np.float32)
        prod = np.multiply.outer(x, y) if dt.name != "bool" else np.logical_and.outer(x, y)
    else:
        with grad_mode.no_grad():
            prod = (v1.reshape(-1, 1) * v2)._data
    data = _combine(bias, prod, beta, alpha, dt)
    res = record("AddrBackward0", (input, vec1, vec2), data, _addr_backward,
                 save=_save_pair(vec1, vec2, "v1", "v2"), attrs={"alpha": alpha, "beta": beta})
    return _write_out("addr", res, out)
