"""Audit: public ops on CUDA tensors against the same jitgrad ops on CPU tensors.

Runs the cases of the CPU parity suites (tests/test_elementwise_parity.py, test_reduce_parity.py,
test_shape_parity.py, test_index_parity.py) plus a list of ``nn.functional`` calls twice, once
with ``jitgrad.set_default_device("cpu")`` and once with ``"cuda"`` (every tensor the case makes
lands on that device), and compares results (dtype, shape, values; float32 within 1e-5 relative,
float64 within 1e-11, since the device's libdevice is not the host's libm), errors (type and
first line) and, where the case has them, gradients. Prints every case that raises on CUDA but
not on the CPU, or differs, grouped by the op's first error line::

    NUMBA_ENABLE_CUDASIM=1 PYTHONPATH=. python tools/cuda_audit.py [--only elementwise,...]

Needs the simulator or a GPU, and PyTorch importable (the parity modules import it).
"""
from __future__ import annotations

import argparse
import collections
import math
import os
import sys
import warnings

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, ROOT)

import jitgrad as jg  # noqa: E402


def _norm(x):
    """A device-neutral form of a result."""
    if isinstance(x, jg.Tensor):
        gf = type(x.grad_fn).__name__ if x.grad_fn is not None else None
        return ("T", str(x.dtype), tuple(x.shape), x.detach().cpu().numpy(), gf)
    if isinstance(x, (list, tuple)):
        return ("L", type(x).__name__, [_norm(e) for e in x])
    if isinstance(x, np.ndarray):  # a helper's host copy
        return ("T", str(x.dtype), x.shape, x, None)
    if isinstance(x, jg.device):
        return ("V", "device")  # differs by construction
    return ("V", x)


def _same(a, b):
    if a[0] != b[0]:
        return False
    if a[0] == "T":
        if a[1:3] != b[1:3] or a[4] != b[4]:
            return False
        x, y = a[3], b[3]
        if x.dtype.kind in "fc":
            tol = 1e-11 if x.dtype == np.float64 else 1e-5 if x.dtype == np.float32 else 2e-3
            return bool(np.allclose(x.astype(np.float64), y.astype(np.float64), rtol=tol,
                                    atol=tol, equal_nan=True))
        return bool(np.array_equal(x, y))
    if a[0] == "L":
        return a[1] == b[1] and len(a[2]) == len(b[2]) and all(
            _same(p, q) for p, q in zip(a[2], b[2]))
    x, y = a[1], b[1]
    if isinstance(x, float) and isinstance(y, float):
        return x == y or (math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-9 * abs(y)
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - incomparable values differ
        return False


def _outcome(fn, dev):
    jg.set_default_device(dev)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = fn()
            if dev == "cuda":
                from jitgrad.backends.cuda_kernels import bounds
                err = bounds.pending()  # a device-side index error: the op's error, raised late
                if err is not None:
                    bounds.flag()[:] = 0
                    raise err
        return ("ok", _norm(r))
    except Exception as e:  # noqa: BLE001 - the error is the outcome compared
        return ("err", type(e).__name__, str(e).split("\n")[0][:200])
    finally:
        jg.set_default_device("cpu")


def compare(label, fn):
    """``None`` when CPU and CUDA agree, else (kind, detail)."""
    cpu, cuda = _outcome(fn, "cpu"), _outcome(fn, "cuda")
    if cpu[0] == "err" and cuda[0] == "err":
        if cpu[1:] == cuda[1:] or cpu[1] == cuda[1] == "TypeError":
            return None
        return ("different error", f"cpu {cpu[1]}: {cpu[2]} | cuda {cuda[1]}: {cuda[2]}")
    if cuda[0] == "err":
        return ("raises on cuda only", f"{cuda[1]}: {cuda[2]}")
    if cpu[0] == "err":
        return ("raises on cpu only", f"{cpu[1]}: {cpu[2]}")
    if not _same(cpu[1], cuda[1]):
        return ("differs", _diff(cpu[1], cuda[1]))
    return None


def _diff(a, b):
    if a[0] == "T" and b[0] == "T":
        if a[1:3] != b[1:3]:
            return f"dtype/shape cpu {a[1:3]} cuda {b[1:3]}"
        if a[4] != b[4]:
            return f"grad_fn cpu {a[4]} cuda {b[4]}"
        return f"values cpu {a[3].ravel()[:6]} cuda {b[3].ravel()[:6]}"
    if a[0] == "L" and b[0] == "L" and len(a[2]) == len(b[2]):
        for i, (p, q) in enumerate(zip(a[2], b[2])):
            if not _same(p, q):
                return f"[{i}] " + _diff(p, q)
    return f"cpu {str(a)[:80]} cuda {str(b)[:80]}"


# ----------------------------------------------------------------------------- case sources

def elementwise_cases():
    import test_elementwise_parity as E
    unary = ["neg", "abs", "square", "relu", "sign", "sqrt", "exp", "sinh", "cosh", "log2",
             "log10", "exp2", "sinc", "deg2rad", "rad2deg", "positive", "signbit",
             "bitwise_not", "nan_to_num", "logit", "fix", "sgn", "arcsin", "sin", "cos", "tan",
             "tanh", "sigmoid", "log", "log1p", "expm1", "erf", "erfc", "erfinv", "lgamma",
             "digamma", "floor", "ceil", "round", "trunc", "frac", "reciprocal", "rsqrt",
             "asinh", "acosh", "atanh", "atan", "arccos", "i0", "isnan", "isinf", "isfinite",
             "isposinf", "isneginf", "isreal", "angle", "logical_not", "signbit"]
    for name in unary:
        for dt in E.DTYPES:
            yield f"{name}[{dt}]", name, (lambda n=name, d=dt: getattr(jg, n)(E.mk(jg, d)))
    for name in unary[:40]:
        yield f"{name} grad", name, (lambda n=name: E.grads(n, [-2.5, -1.0, -0.5, 0.0, 0.25,
                                                                 0.5, 1.0, 2.0])(jg))
    for name in E.BINARY_FNS + ["maximum", "minimum", "atan2", "nextafter", "ldexp", "lerp",
                                "gcd", "lcm", "bitwise_left_shift", "bitwise_right_shift",
                                "logical_or", "logical_xor", "ne", "lt", "le", "gt", "ge",
                                "isclose", "true_divide", "xlogy", "igamma", "igammac"]:
        if name == "lerp":
            continue
        for da, db in E.PAIRS:
            yield f"{name}[{da},{db}]", name, (lambda n=name, a=da, b=db: getattr(jg, n)(
                E.mk(jg, a), E.mk(jg, b, E.vals(b, False))))
        for s in (2, 2.5, True):
            yield f"{name}[f32,{s!r}]", name, (lambda n=name, s=s: getattr(jg, n)(
                E.mk(jg, "float32"), s))
    for name in ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmax", "fmin",
                 "hypot", "logaddexp", "logaddexp2", "xlogy", "copysign", "rsub", "atan2"]:
        a = (-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 1.0, 3.0, 2.0, 0.0, 0.0)
        b = (2.0, -0.0, 0.0, -1.0, 0.5, 3.0, 1.0, 0.5, 2.0, 0.0, 2.0)
        yield f"{name} grad", name, (lambda n=name, a=a, b=b: E.grads(n, list(a), list(b))(jg))
    for label, fn in E.CASES.items():
        yield label, label.split("(")[0].split()[0], (lambda f=fn: f(jg))


def reduce_cases():
    import test_reduce_parity as R
    for expr in R.CASES:
        op = expr.split("(")[0].replace("T.", "").replace("x.", "")
        for name in R.ALL:
            def fn(e=expr, n=name):
                x = R.make(jg, n, grad=False)
                return eval(e, {"T": jg, "x": x, "math": math})  # noqa: S307 - test exprs
            yield f"{expr} [{name}]", op, fn
    for expr in R.CASES:
        op = expr.split("(")[0].replace("T.", "").replace("x.", "")

        def gfn(e=expr):
            x = R.make(jg, "x3", grad=True)
            out = eval(e, {"T": jg, "x": x, "math": math})  # noqa: S307 - test exprs
            outs = [o for o in (out if isinstance(out, tuple) else (out,))
                    if isinstance(o, jg.Tensor) and o.requires_grad]
            if not outs:
                return None
            sum(o.sum() for o in outs).backward()
            return x.grad
        yield f"{expr} grad", op, gfn


def shape_cases():
    import test_shape_parity as S
    S._np = lambda T, t: t.detach().cpu().numpy()  # the helper reads ._data as NumPy
    for p in S.CASES:
        shapes, fn, dtype, grad, ints, fd, gg = p.values
        label = p.id
        op = label.split("(")[0].split()[0].split("[")[0]
        arrs = S._arrays(shapes, dtype, ints)

        def run(f=fn, a=arrs, g=grad):
            xs = [jg.tensor(v, requires_grad=g and v.dtype.kind == "f") for v in a]
            return f(jg, *xs)
        yield label, op, run
        if grad:
            def grun(f=fn, a=arrs):
                r = S._grads(jg, a, f)
                return None if r is None else [g for g in r[0] if g is not None]
            yield label + " grad", op, grun


def index_cases():
    import test_index_parity as X
    for name, fn, args in X.CASES:
        op = name.split("_")[0]

        def run(f=fn, a=args):
            return f(jg, *[jg.tensor(v) for v in a])
        yield name, op, run
    for name, fn, args in X.GRAD_CASES:
        def grun(f=fn, a=args):
            xs = [jg.tensor(v, requires_grad=v.dtype.kind == "f") for v in a]
            out = f(jg, *xs)
            out.sum().backward() if out.requires_grad else None
            return [x.grad for x in xs if x.requires_grad]
        yield name + " grad", name.split("_")[0], grun


def functional_cases():
    F = jg.nn.functional
    rng = np.random.default_rng(0)
    x4 = rng.standard_normal((2, 3, 5, 5))
    x2 = rng.standard_normal((4, 6))
    x3 = rng.standard_normal((2, 3, 8))
    w4 = rng.standard_normal((4, 3, 3, 3))
    w3 = rng.standard_normal((4, 3, 3))
    tgt = np.array([0, 5, 2, 1])
    w_bil, ctc_in = rng.standard_normal((2, 6, 6)), rng.standard_normal((6, 2, 4))
    ps_in, grid = rng.standard_normal((1, 4, 2, 2)), rng.uniform(-1, 1, (2, 3, 3, 2))
    theta = rng.standard_normal((2, 2, 3))
    calls = {
        "relu": lambda t: F.relu(t(x2)), "gelu": lambda t: F.gelu(t(x2)),
        "gelu_tanh": lambda t: F.gelu(t(x2), approximate="tanh"), "silu": lambda t: F.silu(t(x2)),
        "elu": lambda t: F.elu(t(x2)), "selu": lambda t: F.selu(t(x2)),
        "celu": lambda t: F.celu(t(x2)), "leaky_relu": lambda t: F.leaky_relu(t(x2), 0.1),
        "hardtanh": lambda t: F.hardtanh(t(x2)), "hardswish": lambda t: F.hardswish(t(x2)),
        "hardsigmoid": lambda t: F.hardsigmoid(t(x2)), "mish": lambda t: F.mish(t(x2)),
        "softplus": lambda t: F.softplus(t(x2)), "softsign": lambda t: F.softsign(t(x2)),
        "tanhshrink": lambda t: F.tanhshrink(t(x2)), "softshrink": lambda t: F.softshrink(t(x2)),
        "hardshrink": lambda t: F.hardshrink(t(x2)), "logsigmoid": lambda t: F.logsigmoid(t(x2)),
        "relu6": lambda t: F.relu6(t(x2)), "glu": lambda t: F.glu(t(x2)),
        "prelu": lambda t: F.prelu(t(x4), t(np.array([0.25, 0.1, 0.3]))),
        "rrelu_eval": lambda t: F.rrelu(t(x2), training=False),
        "threshold": lambda t: F.threshold(t(x2), 0.1, 2.0),
        "softmax": lambda t: F.softmax(t(x2), 1), "log_softmax": lambda t: F.log_softmax(t(x2), 0),
        "softmin": lambda t: F.softmin(t(x2), 1),
        "normalize": lambda t: F.normalize(t(x2)), "linear": lambda t: F.linear(t(x2), t(x2[:3])),
        "bilinear": lambda t: F.bilinear(t(x2), t(x2), t(w_bil)),
        "conv1d": lambda t: F.conv1d(t(x3), t(w3), padding=1),
        "conv2d": lambda t: F.conv2d(t(x4), t(w4), stride=2, padding=1),
        "conv_transpose2d": lambda t: F.conv_transpose2d(t(x4), t(w4.transpose(1, 0, 2, 3))),
        "conv_transpose1d": lambda t: F.conv_transpose1d(t(x3), t(w3.transpose(1, 0, 2))),
        "max_pool2d": lambda t: F.max_pool2d(t(x4), 2), "avg_pool2d": lambda t: F.avg_pool2d(
            t(x4), 2), "max_pool1d": lambda t: F.max_pool1d(t(x3), 2),
        "avg_pool1d": lambda t: F.avg_pool1d(t(x3), 2),
        "adaptive_avg_pool2d": lambda t: F.adaptive_avg_pool2d(t(x4), 3),
        "adaptive_max_pool2d": lambda t: F.adaptive_max_pool2d(t(x4), 3),
        "adaptive_avg_pool1d": lambda t: F.adaptive_avg_pool1d(t(x3), 3),
        "lp_pool2d": lambda t: F.lp_pool2d(t(x4), 2, 2),
        "max_pool2d_indices": lambda t: F.max_pool2d(t(x4), 2, return_indices=True),
        "max_unpool2d": lambda t: F.max_unpool2d(*F.max_pool2d(t(x4), 2, return_indices=True),
                                                 2),
        "interpolate_nearest": lambda t: F.interpolate(t(x4), scale_factor=2),
        "interpolate_bilinear": lambda t: F.interpolate(t(x4), size=(7, 7), mode="bilinear"),
        "interpolate_bicubic": lambda t: F.interpolate(t(x4), size=(7, 7), mode="bicubic"),
        "interpolate_linear": lambda t: F.interpolate(t(x3), size=11, mode="linear"),
        "pad_constant": lambda t: F.pad(t(x4), (1, 2, 0, 1)),
        "pad_reflect": lambda t: F.pad(t(x4), (1, 2, 0, 1), mode="reflect"),
        "pad_replicate": lambda t: F.pad(t(x4), (1, 2, 0, 1), mode="replicate"),
        "pad_circular": lambda t: F.pad(t(x4), (1, 2, 0, 1), mode="circular"),
        "batch_norm": lambda t: F.batch_norm(t(x4), t(np.zeros(3)), t(np.ones(3)),
                                             training=True),
        "layer_norm": lambda t: F.layer_norm(t(x2), (6,)),
        "group_norm": lambda t: F.group_norm(t(x4), 3), "instance_norm": lambda t:
            F.instance_norm(t(x4)), "rms_norm": lambda t: F.rms_norm(t(x2), (6,)),
        "local_response_norm": lambda t: F.local_response_norm(t(x4), 2),
        "embedding": lambda t: F.embedding(t(tgt), t(x2)),
        "embedding_bag": lambda t: F.embedding_bag(t(tgt), t(x2), t(np.array([0, 2]))),
        "one_hot": lambda t: F.one_hot(t(tgt), 6),
        "dropout_eval": lambda t: F.dropout(t(x2), 0.5, training=False),
        "cross_entropy": lambda t: F.cross_entropy(t(x2), t(tgt)),
        "cross_entropy_ls": lambda t: F.cross_entropy(t(x2), t(tgt), label_smoothing=0.1),
        "cross_entropy_probs": lambda t: F.cross_entropy(t(x2), F.softmax(t(x2), 1)),
        "nll_loss": lambda t: F.nll_loss(F.log_softmax(t(x2), 1), t(tgt)),
        "mse_loss": lambda t: F.mse_loss(t(x2), t(x2[::-1].copy())),
        "l1_loss": lambda t: F.l1_loss(t(x2), t(x2[::-1].copy())),
        "smooth_l1_loss": lambda t: F.smooth_l1_loss(t(x2), t(x2[::-1].copy())),
        "huber_loss": lambda t: F.huber_loss(t(x2), t(x2[::-1].copy())),
        "bce": lambda t: F.binary_cross_entropy(t(1 / (1 + np.exp(-x2))),
                                                t((x2 > 0).astype(np.float64))),
        "bce_logits": lambda t: F.binary_cross_entropy_with_logits(
            t(x2), t((x2 > 0).astype(np.float64))),
        "kl_div": lambda t: F.kl_div(F.log_softmax(t(x2), 1), F.softmax(t(x2[::-1].copy()), 1),
                                     reduction="batchmean"),
        "poisson_nll": lambda t: F.poisson_nll_loss(t(x2), t(np.abs(x2))),
        "gaussian_nll": lambda t: F.gaussian_nll_loss(t(x2), t(x2[::-1].copy()),
                                                      t(np.abs(x2) + 0.1)),
        "hinge_embedding": lambda t: F.hinge_embedding_loss(t(x2), t(np.sign(x2))),
        "margin_ranking": lambda t: F.margin_ranking_loss(t(x2[0]), t(x2[1]), t(np.sign(x2[2]))),
        "soft_margin": lambda t: F.soft_margin_loss(t(x2), t(np.sign(x2))),
        "multilabel_soft_margin": lambda t: F.multilabel_soft_margin_loss(
            t(x2), t((x2 > 0).astype(np.float64))),
        "multi_margin": lambda t: F.multi_margin_loss(t(x2), t(tgt)),
        "cosine_embedding": lambda t: F.cosine_embedding_loss(t(x2), t(x2[::-1].copy()),
                                                              t(np.array([1, -1, 1, -1]))),
        "triplet_margin": lambda t: F.triplet_margin_loss(t(x2), t(x2[::-1].copy()), t(x2 * 2)),
        "cosine_similarity": lambda t: F.cosine_similarity(t(x2), t(x2[::-1].copy())),
        "pairwise_distance": lambda t: F.pairwise_distance(t(x2), t(x2[::-1].copy())),
        "pdist": lambda t: F.pdist(t(x2)),
        "ctc_loss": lambda t: F.ctc_loss(F.log_softmax(t(ctc_in), 2),
                                         t(np.array([[1, 2], [3, 1]])), (6, 6), (2, 2)),
        "unfold": lambda t: F.unfold(t(x4), 2), "fold": lambda t: F.fold(
            F.unfold(t(x4), 2), (5, 5), 2),
        "pixel_shuffle": lambda t: F.pixel_shuffle(t(ps_in), 2),
        "pixel_unshuffle": lambda t: F.pixel_unshuffle(t(x4[:, :, :4, :4].copy()), 2),
        "grid_sample": lambda t: F.grid_sample(t(x4), t(grid),
                                               align_corners=False),
        "affine_grid": lambda t: F.affine_grid(t(theta), (2, 3, 4, 4),
                                               align_corners=False),
        "scaled_dot_product_attention": lambda t: F.scaled_dot_product_attention(
            t(x3), t(x3), t(x3)),
        "sdpa_causal": lambda t: F.scaled_dot_product_attention(t(x3), t(x3), t(x3),
                                                                is_causal=True),
        "channel_shuffle": lambda t: F.channel_shuffle(t(ps_in), 2),
        "gumbel_softmax_shape": lambda t: F.gumbel_softmax(t(x2), hard=True).sum(1),
        "alpha_dropout_eval": lambda t: F.alpha_dropout(t(x2), 0.5, training=False),
        "multi_head_attention_forward": None,
    }
    for name, call in calls.items():
        if call is None:
            continue

        def run(c=call):
            return c(lambda a: jg.tensor(a))
        yield name, name, run

        def grun(c=call):
            leaves = []

            def t(a):
                a = np.asarray(a)
                v = jg.tensor(a, requires_grad=a.dtype.kind == "f")
                if v.requires_grad:
                    leaves.append(v)
                return v
            out = c(t)
            outs = out if isinstance(out, tuple) else (out,)
            outs = [o for o in outs if isinstance(o, jg.Tensor) and o.requires_grad]
            if not outs:
                return None
            sum((o * o).sum() for o in outs).backward()
            return [v.grad for v in leaves]
        yield name + " grad", name, grun


SOURCES = {"elementwise": elementwise_cases, "reduce": reduce_cases, "shape": shape_cases,
           "index": index_cases, "functional": functional_cases}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default=",".join(SOURCES))
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    from jitgrad.backends import cuda as B
    if not (B.simulator_active() or B.has_gpu()):
        sys.exit("needs a GPU or NUMBA_ENABLE_CUDASIM=1")
    problems = collections.defaultdict(list)
    total = 0
    try:
        for src in args.only.split(","):
            for label, op, fn in SOURCES[src]():
                total += 1
                r = compare(label, fn)
                if r is not None:
                    problems[(src, op)].append((label, *r))
                    if args.verbose:
                        print(f"{src}:{label}: {r[0]}: {r[1]}", flush=True)
    except KeyboardInterrupt:  # a bounded run (tools/gpu_lease.sh): report what was compared
        print(f"\ninterrupted after {total} cases", flush=True)
    print(f"\n{total} cases; {sum(len(v) for v in problems.values())} disagree, "
          f"{len(problems)} ops")
    for (src, op), items in sorted(problems.items(), key=lambda kv: -len(kv[1])):
        kinds = collections.Counter(k for _, k, _ in items)
        print(f"[{src}] {op}: {len(items)} case(s) {dict(kinds)}")
        for label, kind, detail in items[:3]:
            print(f"    {label}: {kind}: {detail}")


if __name__ == "__main__":
    main()
