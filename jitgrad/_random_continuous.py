"""The CPU generator's continuous samplers (``jitgrad._random.Generator``): uniform, normal,
cauchy, log-normal, exponential; each draws from the engine as the ATen CPU kernel does."""

import numpy as np

from ._random_args import _need_float, _numel, _shape_of
from ._random_kernels import _kernels, cpu_capability


class _ContinuousSamplers:
    """Generator's floating-point samplers (a base class of ``Generator``: ``self._engine``,
    ``self._lock`` and the normal cache ``self._ncache`` are the generator's)."""

    # -- uniform -----------------------------------------------------------
    def uniform_(self, shape, low=0.0, high=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).uniform_(low, high)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, "check_uniform_bounds")
        low = float(low)
        high = float(high)
        if not low <= high:
            raise RuntimeError("uniform_ expects to return a [from, to) range, "
                               f"but found from={low} > to={high}")
        n = _numel(shape)
        use_fma = cpu_capability() != "default"
        k = _kernels() if n else None
        if dt == np.float64:
            out = np.empty(n, dtype=np.float64)
            if n:
                with self._lock:
                    k.k_uniform_f64(self._engine, out, low, high, use_fma)
            return out.reshape(shape)
        out = np.empty(n, dtype=np.float32)
        if dt == np.float32:
            if n:
                with self._lock:
                    k.k_uniform_f32(self._engine, out, np.float32(low),
                                    np.float32(high), use_fma)
            return out.reshape(shape)
        # float16: opmath float, then cast; a cast that lands on `to` -> from
        if n:
            with self._lock:
                k.k_uniform_f32(self._engine, out, np.float32(low),
                                np.float32(high), use_fma)
        res = out.astype(np.float16)
        res[res == np.float16(high)] = np.float16(low)
        return res.reshape(shape)

    def rand(self, shape, dtype=np.float32):
        """``torch.rand(shape, dtype=dtype)``."""
        return self.uniform_(shape, 0.0, 1.0, dtype)

    # -- normal ------------------------------------------------------------
    def normal_(self, shape, mean=0.0, std=1.0, dtype=np.float32,
                contiguous=True):
        """``torch.empty(shape, dtype).normal_(mean, std)``.

        ``contiguous=False`` replicates a non-contiguous destination: ATen
        then always uses the serial sampler and fills memory in stride order;
        the values are returned in generation order (flat).
        """
        shape = _shape_of(shape)
        dt = _need_float(dtype, "normal_kernel_cpu")
        mean = float(mean)
        std = float(std)
        if not std >= 0.0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std}")
        n = _numel(shape)
        if n == 0:
            return np.empty(shape, dtype=dt)
        k = _kernels()
        if n >= 16 and contiguous:
            if dt == np.float64:
                out = np.empty(n, dtype=np.float64)
                tail = np.empty(16, dtype=np.float64)
                with self._lock:
                    k.k_normal_fill_f64(self._engine, out, tail, mean, std)
            elif dt == np.float32:
                out = np.empty(n, dtype=np.float32)
                tail = np.empty(16, dtype=np.float32)
                with self._lock:
                    k.k_normal_fill_f32(self._engine, out, tail,
                                        np.float32(mean), np.float32(std),
                                        cpu_capability() == "avx2")
            else:
                # Half: float blocks drawn block by block; the tail block is
                # drawn after the last full block and written over the last
                # 16 outputs.
                full = n - n % 16
                m = full + (16 if n % 16 else 0)
                buf = np.empty(m, dtype=np.float32)
                tail = np.empty(16, dtype=np.float32)
                with self._lock:
                    k.k_normal_fill_f32(self._engine, buf, tail,
                                        np.float32(mean), np.float32(std),
                                        cpu_capability() == "avx2")
                if m != n:
                    buf = np.concatenate([buf[:n - 16], buf[full:]])
                out = buf.astype(np.float16)
        else:
            out = np.empty(n, dtype=np.float64)
            with self._lock:
                k.k_normal_serial(self._engine, self._ncache, out, mean, std,
                                  cpu_capability() != "default")
            if dt != np.float64:
                out = out.astype(dt)
        return out.reshape(shape) if contiguous else out

    def randn(self, shape, dtype=np.float32):
        """``torch.randn(shape, dtype=dtype)``."""
        return self.normal_(shape, 0.0, 1.0, dtype)

    def cauchy_(self, shape, median=0.0, sigma=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).cauchy_(median, sigma)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, dist="Cauchy")
        sigma = float(sigma)
        if not sigma > 0.0:
            raise RuntimeError(f"cauchy_ expects sigma > 0.0, but found sigma={sigma:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_cauchy(self._engine, out, float(median), sigma)
        with np.errstate(over="ignore"):
            return out.astype(dt).reshape(shape)

    def log_normal_(self, shape, mean=1.0, std=2.0, dtype=np.float32):
        """``torch.empty(shape, dtype).log_normal_(mean, std)``: ``exp`` of the serial
        ``normal_distribution<double>`` (whatever the size)."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, "log_normal_cpu")
        std = float(std)
        if not std > 0.0:
            raise RuntimeError(f"log_normal_ expects std > 0.0, but found std={std:g}")
        z = self.normal_(shape, float(mean), std, np.float64, contiguous=False)
        if z.size:
            _kernels().k_exp(z)
        with np.errstate(over="ignore"):
            return z.astype(dt).reshape(shape)

    # -- other distributions -----------------------------------------------
    def exponential_(self, shape, lambd=1.0, dtype=np.float32):
        """``torch.empty(shape, dtype).exponential_(lambd)``."""
        shape = _shape_of(shape)
        dt = _need_float(dtype, dist="Exponential")
        lambd = float(lambd)
        if not lambd > 0.0:
            raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
        n = _numel(shape)
        out = np.empty(n, dtype=np.float64)
        if n:
            with self._lock:
                _kernels().k_exponential(self._engine, out, lambd)
        return out.astype(dt).reshape(shape)
