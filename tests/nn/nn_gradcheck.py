"""Helpers for the nn tests: float64 central finite differences (imported by name: a
uniquely named module, not a conftest, so it cannot clash with other test folders)."""
import numpy as np

import jitgrad as jt


def _as_tensors(arrays, grad_mask):
    return [jt.tensor(a, requires_grad=bool(m)) if isinstance(a, np.ndarray) else a
            for a, m in zip(arrays, grad_mask)]


def numeric_grad(scalar_fn, arrays, i, eps=1e-6):
    """d scalar_fn(arrays) / d arrays[i] by central differences (float64)."""
    base = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
    x = base[i]
    g = np.zeros_like(x, dtype=np.float64)
    it = np.nditer(x, flags=["multi_index"])
    for _ in it:
        idx = it.multi_index
        old = x[idx]
        x[idx] = old + eps
        fp = scalar_fn(base)
        x[idx] = old - eps
        fm = scalar_fn(base)
        x[idx] = old
        g[idx] = (fp - fm) / (2 * eps)
    return g


def check_grads(fn, arrays, wrt, *, seed=0, atol=1e-6, rtol=1e-5, eps=1e-6):
    """Compare jitgrad's gradients of ``sum(fn(*tensors) * R)`` w.r.t. ``arrays[i]`` for i in
    ``wrt`` with float64 central differences. Returns the output tensor."""
    rng = np.random.default_rng(seed)
    mask = [i in wrt for i in range(len(arrays))]
    ts = _as_tensors(arrays, mask)
    out = fn(*ts)
    R = rng.standard_normal(tuple(out.shape))
    (out * jt.tensor(R)).sum().backward()

    def scalar(arrs):
        o = fn(*_as_tensors(arrs, [False] * len(arrs)))
        return float(np.sum(o.detach().numpy() * R))

    for i in wrt:
        num = numeric_grad(scalar, arrays, i, eps)
        got = ts[i].grad
        assert got is not None, f"no gradient for input {i}"
        np.testing.assert_allclose(got.numpy(), num, atol=atol, rtol=rtol,
                                   err_msg=f"gradient of input {i}")
    return out


def check_double_grads(fn, arrays, i, *, seed=1, atol=1e-5, rtol=1e-4, eps=1e-6):
    """Second derivatives through create_graph=True: d/dx sum(grad_x(sum(fn*R)) * R2)."""
    rng = np.random.default_rng(seed)
    x = jt.tensor(arrays[i], requires_grad=True)
    others = [jt.tensor(a) if isinstance(a, np.ndarray) and k != i else a
              for k, a in enumerate(arrays)]
    args = [x if k == i else others[k] for k in range(len(arrays))]
    out = fn(*args)
    R = rng.standard_normal(tuple(out.shape))
    (g,) = jt.autograd.grad((out * jt.tensor(R)).sum(), x, create_graph=True)
    R2 = rng.standard_normal(tuple(g.shape))
    (gg,) = jt.autograd.grad((g * jt.tensor(R2)).sum(), x)

    def first_grad_proj(arrs):
        xx = jt.tensor(arrs[i], requires_grad=True)
        aa = [xx if k == i else (jt.tensor(a) if isinstance(a, np.ndarray) else a)
              for k, a in enumerate(arrs)]
        o = fn(*aa)
        (gx,) = jt.autograd.grad((o * jt.tensor(R)).sum(), xx)
        return float(np.sum(gx.numpy() * R2))

    num = numeric_grad(first_grad_proj, arrays, i, eps)
    np.testing.assert_allclose(gg.numpy(), num, atol=atol, rtol=rtol)
