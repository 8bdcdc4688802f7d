"""The CPU generator's discrete samplers (``jitgrad._random.Generator``): randint, random_,
geometric, randperm, bernoulli/dropout masks, multinomial; each draws from the engine as the
ATen CPU kernel does."""

import numpy as np

from ._random_args import (
    _FLOAT_DIGITS,
    _check_from_to_in_range,
    _numel,
    _shape_of,
    _update_from,
    _update_to,
    random_inclusive_bounds,
)
from ._random_kernels import _kernels


class _DiscreteSamplers:
    """Generator's integer-valued samplers (a base class of ``Generator``: ``self._engine`` and
    ``self._lock`` are the generator's)."""

    # -- integers ----------------------------------------------------------
    def randint(self, low, high=None, shape=(), dtype=np.int64):
        """``torch.randint(low, high, shape, dtype=dtype)``.

        ``randint(high, shape=...)`` means ``low=0`` like torch.
        """
        if high is None:
            low, high = 0, low
        low = int(low)
        high = int(high)
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if not low < high:
            raise RuntimeError("random_ expects 'from' to be less than 'to', "
                               f"but got from={low} >= to={high}")
        rng = high - low
        n = _numel(shape)
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            # ATen (non-fbcode builds): 64-bit draws once range >= 2**28,
            # whatever the dtype ("allow approx 5% skew ... using %")
            with self._lock:
                if rng >= (1 << 28):
                    k.k_randint64(self._engine, out, np.uint64(rng),
                                  np.int64(low))
                else:
                    k.k_randint32(self._engine, out, rng, low)
        if dt != np.int64:
            out = out.astype(dt)
        return out.reshape(shape)

    def random_(self, shape, dtype, *bounds):
        """``torch.empty(shape, dtype).random_(*bounds)``: ``()`` is PyTorch's
        ``uniform_int_distribution`` (floats: ``[0, 2**mantissa_digits]``, integers: ``[0,
        max]``, bool: one bit), ``(to,)`` is ``[0, to)``, ``(from, to)`` is ``[from, to)`` and
        ``(from, None)`` is ``[from, max]`` (``random_from_to_impl`` with its checks)."""
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        n = _numel(shape)
        if not bounds:
            out = np.empty(n, dtype=np.int64)
            if n:
                k = _kernels()
                with self._lock:
                    if dt.kind == "b":
                        k.k_random_mod32(self._engine, out, 2)
                    elif dt == np.float64:
                        k.k_random_mod64(self._engine, out, np.uint64((1 << 53) + 1), False)
                    elif dt.kind == "f":
                        k.k_random_mod32(self._engine, out, (1 << _FLOAT_DIGITS[dt.name]) + 1)
                    elif dt == np.int64:
                        k.k_random_mod64(self._engine, out, np.uint64(1 << 63), False)
                    else:
                        k.k_random_mod32(self._engine, out, int(np.iinfo(dt).max) + 1)
            return out.astype(dt).reshape(shape)
        if len(bounds) == 1:
            frm, to = 0, bounds[0]
        else:
            frm, to = bounds
        frm = int(frm)
        if to is not None:
            to = int(to)
            if not frm < to:
                raise RuntimeError("random_ expects 'from' to be less than 'to', but got "
                                   f"from={frm} >= to={to}")
            if dt.kind == "f":
                frm = _update_from(dt, frm)
                to = _update_to(dt, to)
                if not frm < to:
                    raise RuntimeError("random_ expects 'from' casted to dtype to be less than "
                                       f"'to' casted to dtype, but got from={frm} >= to={to}")
            _check_from_to_in_range(frm, to - 1, dt)
            return self._from_to(shape, dt, to - frm, frm)
        if frm == -(1 << 63):  # [int64 min, int64 max]: the full 64-bit range
            if dt.kind not in "f" and dt != np.int64 or dt == np.float16:
                raise RuntimeError("random_full_64_bits_range_kernel_cpu handles only int64, "
                                   "double, float and bfloat16")
            out = np.empty(n, dtype=np.int64)
            if n:
                with self._lock:
                    _kernels().k_random_mod64(self._engine, out, np.uint64(1), True)
            return out.astype(dt).reshape(shape)
        frm, to_inc = random_inclusive_bounds(dt, frm)
        return self._from_to(shape, dt, to_inc - frm + 1, frm)

    def _from_to(self, shape, dt, rng, base):
        """``uniform_int_from_to_distribution``: ``random() % range + base`` (``random64()``
        once range >= 2**28), cast to the dtype."""
        n = _numel(shape)
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            with self._lock:
                if rng >= (1 << 28):
                    k.k_randint64(self._engine, out, np.uint64(rng), np.int64(base))
                else:
                    k.k_randint32(self._engine, out, rng, base)
        return out.astype(dt).reshape(shape)

    def geometric_(self, shape, p, dtype=np.float32):
        """``torch.empty(shape, dtype).geometric_(p)`` (any real dtype but bool)."""
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if dt.kind == "b":
            raise NotImplementedError('"geometric_cpu" not implemented for \'Bool\'')
        p = float(p)
        if not 0 < p < 1:
            raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_geometric(self._engine, out, p)
        with np.errstate(invalid="ignore", over="ignore"):
            return out.astype(dt).reshape(shape)

    def randperm(self, n, dtype=np.int64):
        """``torch.randperm(n, dtype=dtype)``."""
        n = int(n)
        if n < 0:
            raise RuntimeError(f"n must be non-negative, got{n}")
        out = np.empty(n, dtype=np.int64)
        if n:
            k = _kernels()
            with self._lock:
                if n < 0xFFFFFFFF // 20:
                    k.k_randperm32(self._engine, out, n)
                else:
                    k.k_randperm64(self._engine, out, n)
        dt = np.dtype(dtype)
        return out if dt == np.int64 else out.astype(dt)

    # -- bernoulli / dropout -----------------------------------------------
    def bernoulli(self, p, shape=None, dtype=None):
        """Bernoulli samples (0/1) as torch draws them.

        * ``p`` a Python/NumPy scalar: ``torch.empty(shape, dtype).bernoulli_(p)``
          (also ``torch.bernoulli(x, p)`` with ``shape=x.shape``); one
          ``random64()`` per element compared as double; ``dtype`` defaults
          to float32.
        * ``p`` an array: ``torch.bernoulli(p)`` (``shape`` defaults to
          ``p.shape``; ``p`` is broadcast to ``shape`` like ``bernoulli_(p)``);
          float64 ``p`` draws doubles, other float ``p`` draws float32
          uniforms; ``dtype`` defaults to ``p.dtype``.
        """
        if np.ndim(p) == 0 and not isinstance(p, np.ndarray):
            pv = float(p)
            if not 0.0 <= pv <= 1.0:
                raise RuntimeError(
                    f"bernoulli_ expects p to be in [0, 1], but got p={pv}")
            shape = _shape_of(shape)
            dt = np.dtype(np.float32 if dtype is None else dtype)
            n = _numel(shape)
            out = np.empty(n, dtype=np.int8)
            if n:
                with self._lock:
                    _kernels().k_bernoulli_scalar(self._engine, out, pv)
            return out.astype(dt).reshape(shape)
        parr = np.asarray(p)
        if parr.dtype.kind != "f":
            raise TypeError("bernoulli expects a floating point probability "
                            f"tensor, got {parr.dtype}")
        shape = parr.shape if shape is None else _shape_of(shape)
        dt = np.dtype(parr.dtype if dtype is None else dtype)
        if parr.dtype == np.float64:
            pf = np.ascontiguousarray(np.broadcast_to(parr, shape)).reshape(-1)
            kern = "k_bernoulli_tensor_f64"
        else:
            pf = np.ascontiguousarray(
                np.broadcast_to(parr, shape).astype(np.float32)).reshape(-1)
            kern = "k_bernoulli_tensor_f32"
        if pf.size and (np.any(~(pf >= 0)) or np.any(pf > 1)):
            raise RuntimeError("Expected p_in >= 0 && p_in <= 1 to be true, but got "
                               "false.  (Could this error message be improved?  If so, please "
                               "report an enhancement request to PyTorch.)")
        out = np.empty(pf.size, dtype=np.int8)
        if pf.size:
            with self._lock:
                getattr(_kernels(), kern)(self._engine, out, pf)
        return out.astype(dt).reshape(shape)

    def dropout_mask(self, shape, p, dtype=np.float32):
        """The scaled noise ``F.dropout(x, p, training=True)`` multiplies by.

        ATen (CPU): ``noise = empty_like(x).bernoulli_(1 - p);
        noise.div_(1 - p); return x * noise``.  Returns ``noise`` (so the
        caller computes ``x * noise`` in x's dtype).  ``p == 1`` gives zeros
        and draws nothing, ``p == 0`` gives ones and draws nothing.
        """
        p = float(p)
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"dropout probability has to be between 0 and 1, but got {p}")
        shape = _shape_of(shape)
        dt = np.dtype(dtype)
        if p == 0.0:
            return np.ones(shape, dtype=dt)
        if p == 1.0 or _numel(shape) == 0:
            return np.zeros(shape, dtype=dt)
        q = 1.0 - p
        noise = self.bernoulli(q, shape, dt)
        return noise / dt.type(q)

    def multinomial(self, probs, num_samples, replacement=False):
        """``torch.multinomial(probs, num_samples, replacement)`` (int64).

        Without replacement (or with ``num_samples == 1``) ATen draws
        ``q ~ Exp(1)`` shaped like ``probs`` and takes the top-k of
        ``probs / q``.
        """
        probs = np.asarray(probs)
        if probs.dtype not in (np.float32, np.float64):
            probs = probs.astype(np.float32)
        if probs.ndim not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        n_cat = probs.shape[-1]
        num_samples = int(num_samples)
        if num_samples <= 0:
            raise RuntimeError("cannot sample n_sample <= 0 samples")
        if not replacement and num_samples > n_cat:
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) "
                               "samples without replacement")
        if np.any(probs < 0) or not np.all(np.isfinite(probs)):
            raise RuntimeError(
                "probability tensor contains either `inf`, `nan` or element < 0")
        p2 = np.ascontiguousarray(probs.reshape(-1, n_cat))
        if np.any(p2.sum(axis=1) <= 0):
            raise RuntimeError("invalid multinomial distribution (sum of "
                               "probabilities <= 0)")
        if not replacement or num_samples == 1:
            q = self.exponential_(probs.shape, 1.0, probs.dtype)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = (probs / q).reshape(-1, n_cat)
            if num_samples == 1:
                res = np.argmax(r, axis=1).reshape(-1, 1)
            else:
                # topk: largest first; stable among equal keys
                res = np.argsort(-r, axis=1, kind="stable")[:, :num_samples]
            res = res.astype(np.int64)
        else:
            res = np.empty((p2.shape[0], num_samples), dtype=np.int64)
            k = _kernels()
            with self._lock:
                if p2.dtype == np.float64:
                    k.k_multinomial_repl_f64(self._engine, p2,
                                             np.empty(n_cat, np.float64),
                                             res, num_samples)
                else:
                    k.k_multinomial_repl_f32(self._engine, p2,
                                             np.empty(n_cat, np.float32),
                                             res, num_samples)
        if probs.ndim == 1:
            res = res.reshape(-1)
        return res

