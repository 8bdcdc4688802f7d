"""Elementwise functions and operators against PyTorch: values (bitwise for integer and bool
results, a few ulps for floats, signs of zero included), dtypes, shapes, grad_fn names,
gradients, and errors (type and message); new functions also against float64 finite
differences."""
import itertools
import operator

import numpy as np
import pytest

import jitgrad as jt
from jitgrad.autograd import gradcheck, gradgradcheck

torch = pytest.importorskip("torch")

NAN, INF = float("nan"), float("inf")
FV = [-2.5, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 2.0, 3.0, INF, -INF, NAN]
A_F = [-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, INF, NAN, 3.0, -3.0]
B_F = [2.0, -0.0, 0.0, -1.0, 0.5, 3.0, 2.0, 1.0, -INF, NAN]
A_I, B_I = [-3, -2, -1, 0, 1, 2, 5, 7, 3, -7], [2, 3, -2, 1, 2, -3, 2, 3, 1, 2]
A_U, B_U = [0, 1, 2, 5, 200, 255, 7, 3, 4, 9], [2, 3, 2, 1, 2, 3, 2, 3, 1, 2]
A_B = [True, False, True, False, True, True, False, False, True, True]
B_B = [True, True, False, False, True, False, True, False, False, True]
DTYPES = ["float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool"]
EPS = {"float64": 2.2e-16, "float32": 1.2e-7, "float16": 9.8e-4}


def vals(dt, first=True):
    if dt.startswith("float"):
        return A_F if first else B_F
    if dt == "uint8":
        return A_U if first else B_U
    if dt == "bool":
        return A_B if first else B_B
    return A_I if first else B_I


def mk(lib, dt, v=None, rg=False):
    t = lib.tensor(vals(dt) if v is None else v, dtype=getattr(lib, dt))
    return t.requires_grad_() if rg else t


def _summary(x):
    if isinstance(x, (torch.Tensor, jt.Tensor)):
        gf = type(x.grad_fn).__name__ if x.grad_fn is not None else None
        return ("T", str(x.dtype).replace("torch.", ""), tuple(x.shape),
                np.asarray(x.detach().numpy()), gf)
    if isinstance(x, (list, tuple)):
        return ("L", [_summary(e) for e in x])
    return ("V", x)


def _run(lib, fn):
    try:
        return ("ok", _summary(fn(lib)))
    except Exception as e:  # noqa: BLE001 - the exception type is what is compared
        return ("err", type(e).__name__, str(e).split("\n")[0])


def _close(a, b, dt, ulps):
    if a.dtype.kind in "biu" or b.dtype.kind in "biu":
        np.testing.assert_array_equal(a, b)
        return
    a, b = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
    fa, fb = a[~np.isnan(a)], b[~np.isnan(b)]
    np.testing.assert_array_equal(np.isinf(fa), np.isinf(fb))
    np.testing.assert_array_equal(fa[np.isinf(fa)], fb[np.isinf(fb)])
    fin = ~np.isinf(fa)
    x, y = fa[fin], fb[fin]
    tol = ulps * EPS.get(dt, 2.2e-16) * np.maximum(1.0, np.maximum(np.abs(x), np.abs(y)))
    assert (np.abs(x - y) <= tol).all(), (x, y)
    zero = (x == 0) & (y == 0)
    np.testing.assert_array_equal(np.signbit(x[zero]), np.signbit(y[zero]), "sign of zero")


def _same(st, sj, ulps):
    assert st[0] == sj[0]
    if st[0] == "V":
        assert st[1] == sj[1] and type(st[1]) is type(sj[1])
    elif st[0] == "L":
        assert len(st[1]) == len(sj[1])
        for a, b in zip(st[1], sj[1]):
            _same(a, b, ulps)
    else:
        assert st[1:3] == sj[1:3], (st[1:3], sj[1:3])  # dtype, shape
        assert st[4] == sj[4], (st[4], sj[4])  # grad_fn name
        _close(st[3], sj[3], st[1], ulps)


def check(fn, ulps=4):
    rt, rj = _run(torch, fn), _run(jt, fn)
    assert rt[0] == rj[0], (rt, rj)
    if rt[0] == "err":
        assert rt[1:] == rj[1:]
    else:
        _same(rt[1], rj[1], ulps)


def grads(fname, *values, dt="float64", **kw):
    """Output and input gradients of ``lib.<fname>(*inputs)`` (a list of floats or a scalar)."""
    def fn(lib):
        ins = [mk(lib, dt, v, rg=True) if isinstance(v, list) else v for v in values]
        out = getattr(lib, fname)(*ins, **kw)
        out.backward(lib.ones_like(out) * 0.75)
        return [out] + [t.grad for t in ins if isinstance(t, (torch.Tensor, jt.Tensor))]
    return fn


# ----------------------------------------------------------------------------- dtype matrix

PAIRS = [("float64", "float64"), ("float16", "float16"), ("int64", "int64"), ("uint8", "uint8"),
         ("bool", "bool"), ("int8", "uint8"), ("int16", "int32"), ("uint8", "int64"),
         ("float32", "float64"), ("float16", "float32"), ("int64", "float32"),
         ("int32", "float16"), ("bool", "int8"), ("bool", "float32")]
SCALARS = [2, -1, 0, 2.5, -0.0, True, 300]
OPS = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
       "//": operator.floordiv, "%": operator.mod, "**": operator.pow, "==": operator.eq,
       "<": operator.lt, ">=": operator.ge, "&": operator.and_, "|": operator.or_,
       "^": operator.xor}
OPERATOR_CASES = (
    [(s, a, b, False) for s in OPS for a, b in PAIRS]
    + [(s, a, b, True) for s in OPS for a, b in PAIRS[:8]]  # second operand 0-d
)


@pytest.mark.parametrize("sym,da,db,zero_d", OPERATOR_CASES)
def test_operator_on_tensors(sym, da, db, zero_d):
    op = OPS[sym]
    check(lambda lib: op(mk(lib, da), mk(lib, db, vals(db, False)[0] if zero_d
                                          else vals(db, False))))


@pytest.mark.parametrize("sym,dt,s", list(itertools.product(OPS, DTYPES, SCALARS)))
def test_operator_with_python_scalar(sym, dt, s):
    op = OPS[sym]
    check(lambda lib: op(mk(lib, dt), s))
    check(lambda lib: op(s, mk(lib, dt, vals(dt, False))))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("name", ["neg", "abs", "square", "relu", "sign", "sqrt", "exp", "sinh",
                                  "cosh", "log2", "log10", "exp2", "sinc", "deg2rad",
                                  "rad2deg", "positive", "signbit", "bitwise_not",
                                  "nan_to_num", "logit", "fix", "sgn", "arcsin"])
def test_unary_dtypes_and_values(name, dt):
    ulps = 16 if name in ("sinh", "cosh", "sinc", "exp2", "logit") else 4
    check(lambda lib: getattr(lib, name)(mk(lib, dt, FV if dt.startswith("float") else None)),
          ulps)


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", ["log2", "log10", "sinh", "cosh", "exp2", "sinc", "deg2rad",
                                  "rad2deg", "logit", "nan_to_num", "abs", "relu", "sqrt"])
def test_unary_gradients_and_nodes(name, dt):
    check(grads(name, [-2.5, -1.0, -0.5, -0.0, 0.0, 0.25, 0.5, 1.0, 2.0], dt=dt), 16)


# maximum/minimum of 0.0 and -0.0: PyTorch's answer depends on the element's position (its
# vector loop returns the second operand, the scalar tail the first); tested below without
BINARY_FNS = ["add", "sub", "mul", "div", "pow", "fmax", "fmin", "hypot",
              "logaddexp", "logaddexp2", "xlogy", "copysign", "heaviside", "bitwise_and",
              "bitwise_or", "bitwise_xor", "logical_and", "eq", "fmod", "remainder",
              "floor_divide", "rsub", "float_power"]


@pytest.mark.parametrize("da,db", PAIRS)
@pytest.mark.parametrize("name", BINARY_FNS)
def test_binary_functions(name, da, db):
    check(lambda lib: getattr(lib, name)(mk(lib, da), mk(lib, db, vals(db, False))), 8)


@pytest.mark.parametrize("da,db", PAIRS)
@pytest.mark.parametrize("name", ["maximum", "minimum"])
def test_maximum_minimum(name, da, db):
    b = [v if v != 0 else 1.0 for v in B_F] if db.startswith("float") else vals(db, False)
    check(lambda lib: getattr(lib, name)(mk(lib, da), mk(lib, db, b)))


@pytest.mark.parametrize("s", [2, -1, 2.5, True])
@pytest.mark.parametrize("name", BINARY_FNS + ["maximum", "minimum"])
def test_binary_functions_with_scalars(name, s):
    # values, or PyTorch's TypeError for functions that take Tensors only
    check(lambda lib: getattr(lib, name)(mk(lib, "float32"), s), 8)
    check(lambda lib: getattr(lib, name)(s, mk(lib, "float32", B_F)), 8)
    check(lambda lib: getattr(lib, name)(mk(lib, "int64"), s), 8)


@pytest.mark.parametrize("dt", ["float64", "float32"])
@pytest.mark.parametrize("name", ["add", "sub", "mul", "div", "pow", "maximum", "minimum",
                                  "fmax", "fmin", "hypot", "logaddexp", "logaddexp2", "xlogy",
                                  "copysign", "rsub"])
def test_binary_gradients_and_nodes(name, dt):
    a = [-2.5, -1.0, -0.0, 0.0, 0.5, 2.0, 1.0, 3.0, 2.0, 0.0, 0.0]
    b = [2.0, -0.0, 0.0, -1.0, 0.5, 3.0, 1.0, 0.5, 2.0, 0.0, 2.0]
    if name in ("maximum", "minimum"):  # no 0.0 / -0.0 pairs (see BINARY_FNS)
        b[2] = -0.0
    check(grads(name, a, b, dt=dt), 16)
    if name not in ("maximum", "minimum", "fmax", "fmin", "hypot", "logaddexp", "logaddexp2"):
        check(grads(name, a, 2.0, dt=dt), 16)
    if name in ("sub", "div", "pow", "xlogy"):
        check(grads(name, 2.0, b, dt=dt), 16)


# ----------------------------------------------------------------------------- named cases

CASES = {
    # bool arithmetic
    "bool - bool": lambda lib: mk(lib, "bool") - mk(lib, "bool"),
    "float - True": lambda lib: mk(lib, "float32") - True,
    "-bool": lambda lib: -mk(lib, "bool"),
    "+bool": lambda lib: +mk(lib, "bool"),
    "abs(bool)": lambda lib: lib.abs(mk(lib, "bool")),
    "relu(bool)": lambda lib: lib.relu(mk(lib, "bool")),
    "square(bool)": lambda lib: lib.square(mk(lib, "bool")),
    "bool ** bool": lambda lib: mk(lib, "bool") ** mk(lib, "bool"),
    "True ** bool": lambda lib: True ** mk(lib, "bool"),
    "bool ** True": lambda lib: mk(lib, "bool") ** True,
    # integer powers
    "int ** -1": lambda lib: mk(lib, "int64") ** -1,
    "bool ** -1": lambda lib: mk(lib, "bool") ** -1,
    "int ** neg tensor": lambda lib: mk(lib, "int64") ** mk(lib, "int64", [-1] * 5 + [-2] * 5),
    "int32 ** neg tensor": lambda lib: mk(lib, "int32") ** mk(lib, "int32", [-3] * 10),
    "2 ** int": lambda lib: 2 ** mk(lib, "int64"),
    "-1 ** uint8": lambda lib: -1 ** mk(lib, "uint8"),
    "0 ** int": lambda lib: 0 ** mk(lib, "int64", B_I),
    "x ** 0.5": lambda lib: mk(lib, "float64", FV) ** 0.5,
    "x ** 0.5 f16": lambda lib: mk(lib, "float16", FV) ** 0.5,
    "pow(2, 3)": lambda lib: lib.pow(2, 3),
    # integer division by zero
    "int // 0": lambda lib: mk(lib, "int64") // 0,
    "int % zero tensor": lambda lib: mk(lib, "int32") % mk(lib, "int32", [0] * 10),
    "div trunc by 0": lambda lib: lib.div(mk(lib, "int64"), 0, rounding_mode="trunc"),
    "div floor": lambda lib: lib.div(mk(lib, "int64"), mk(lib, "int64", B_I),
                                     rounding_mode="floor"),
    "div trunc bool int8": lambda lib: lib.div(mk(lib, "bool"), mk(lib, "int8", B_I),
                                               rounding_mode="trunc"),
    "div bad mode": lambda lib: lib.div(mk(lib, "float32"), 2, rounding_mode="bad"),
    # wrapping Python ints, float16 scalars
    "uint8 + -1": lambda lib: mk(lib, "uint8") + -1,
    "int8 + 1000": lambda lib: mk(lib, "int8") + 1000,
    "uint8 == -1": lambda lib: mk(lib, "uint8") == -1,
    "clamp(uint8, -1, 100)": lambda lib: lib.clamp(mk(lib, "uint8"), -1, 100),
    "f16 == 1.0001": lambda lib: lib.ones(3, dtype=lib.float16) == 1.0001,
    "div(-1, uint8)": lambda lib: lib.div(-1, mk(lib, "uint8", B_U)),
    # promotion with 0-d tensors and scalars
    "int8 + 0-d int64": lambda lib: mk(lib, "int8") + lib.tensor(1000),
    "f16 + 0-d f64": lambda lib: mk(lib, "float16") + lib.tensor(1.0, dtype=lib.float64),
    "0-d int8 + 0-d f16": lambda lib: lib.tensor(1, dtype=lib.int8)
    + lib.tensor(1.0, dtype=lib.float16),
    "int + 0-d float": lambda lib: mk(lib, "int32") + lib.tensor(1.5, dtype=lib.float64),
    # scalar-first functional forms and rsub
    "sub(2, x)": lambda lib: lib.sub(2, mk(lib, "float64", rg=True)),
    "div(2, x)": lambda lib: lib.div(2, mk(lib, "float64", rg=True)),
    "2 - x": lambda lib: 2 - mk(lib, "float64", rg=True),
    "2 / x": lambda lib: 2 / mk(lib, "float64", rg=True),
    "sub(2.5, int)": lambda lib: lib.sub(2.5, mk(lib, "int64")),
    "2.5 - int": lambda lib: 2.5 - mk(lib, "int64"),
    "rsub(x, y)": lambda lib: lib.rsub(mk(lib, "float64", rg=True), mk(lib, "float64")),
    "rsub(int, 2.5)": lambda lib: lib.rsub(mk(lib, "int64"), 2.5),
    "rsub(2, x)": lambda lib: lib.rsub(2, mk(lib, "float32")),
    "eq(2, x)": lambda lib: lib.eq(2, mk(lib, "float32")),
    "fmod(2, x)": lambda lib: lib.fmod(2, mk(lib, "float32")),
    "maximum(x, 2)": lambda lib: lib.maximum(mk(lib, "float32"), 2),
    "logical_and(x, 2)": lambda lib: lib.logical_and(mk(lib, "float32"), 2),
    "add(x, 'a')": lambda lib: lib.add(mk(lib, "float32"), "a"),
    "exp(list)": lambda lib: lib.exp([1.0]),
    # alpha
    "add alpha int float": lambda lib: lib.add(mk(lib, "int64"), mk(lib, "int64"), alpha=2.5),
    "add alpha bool": lambda lib: lib.add(mk(lib, "bool"), mk(lib, "bool"), alpha=2),
    "add alpha True on float": lambda lib: lib.add(mk(lib, "float32"), 1.0, alpha=True),
    "sub alpha": lambda lib: lib.sub(mk(lib, "float32"), mk(lib, "float32", B_F), alpha=2),
    # bitwise operators
    "~float": lambda lib: ~mk(lib, "float32"),
    "~int8": lambda lib: ~mk(lib, "int8"),
    "~uint8": lambda lib: ~mk(lib, "uint8"),
    "~bool": lambda lib: ~mk(lib, "bool"),
    "bool & 2": lambda lib: mk(lib, "bool") & 2,
    "2 | int": lambda lib: 2 | mk(lib, "int64"),
    "int ^ True": lambda lib: mk(lib, "int64") ^ True,
    "int & 2.5": lambda lib: mk(lib, "int64") & 2.5,
    # where
    "where cond shape": lambda lib: lib.where(lib.ones(3) > 0, lib.ones(4, 6), lib.zeros(4, 6)),
    "where input shape": lambda lib: lib.where(lib.ones(4, 6) > 0, lib.ones(3), lib.zeros(4, 6)),
    "where 3 shapes": lambda lib: lib.where(lib.ones(4, 6) > 0, lib.ones(6), lib.zeros(5, 1)),
    "where int cond": lambda lib: lib.where(lib.tensor([1, 0]), lib.ones(2), lib.zeros(2)),
    "where(c, 1, 2.5)": lambda lib: lib.where(lib.tensor([True, False]), 1, 2.5),
    "where(c, True, 2)": lambda lib: lib.where(lib.tensor([True, False]), True, 2),
    "where(c, int8, 2.5)": lambda lib: lib.where(lib.tensor([True, False]),
                                                 lib.tensor([1, 2], dtype=lib.int8), 2.5),
    "add (2,3)+(3,2)": lambda lib: lib.ones(2, 3) + lib.ones(3, 2),
    "add (5,3)+(4,1,3)": lambda lib: lib.ones(5, 3) + lib.ones(4, 1, 3),
    # clamp
    "clamp min > max": lambda lib: lib.clamp(mk(lib, "float32", FV), 1.0, -1.0),
    "clamp bounds grad": grads("clamp", [-1.0, 1.0, 0.0, -2.0, 2.0], min=-1.0, max=1.0),
    # gradients at kinks and special points
    "maximum ties": grads("maximum", [1.0, 2.0, 3.0], [1.0, 1.0, 4.0]),
    "minimum ties": grads("minimum", [1.0, 2.0, 3.0], [1.0, 1.0, 4.0]),
    "fmax nan and ties": grads("fmax", [1.0, 2.0, NAN, 5.0], [1.0, 3.0, 4.0, NAN]),
    "fmin nan and ties": grads("fmin", [1.0, 2.0, NAN, 5.0], [1.0, 3.0, 4.0, NAN]),
    "pow(0, 0)": grads("pow", [0.0, 0.0, 2.0, -2.0, 0.0], [0.0, 2.0, 0.0, 0.5, -1.0]),
    "x ** y, x < 0": grads("pow", [-2.0, -2.0, -0.5], [2.0, 3.0, 0.5]),
    "0 ** x": grads("pow", 0.0, [0.0, 1.0, -1.0, -2.5]),
    "x ** 0.5 at 0": grads("pow", [0.0, -0.0, 4.0], 0.5),
    "x ** 0": grads("pow", [0.0, 1.0, -1.0], 0),
    "xlogy zeros": grads("xlogy", [0.0, 0.0, -0.0, 2.0, 0.0], [2.0, 0.5, 3.0, 3.0, NAN]),
    "xlogy scalar other": grads("xlogy", [0.0, -0.0, 2.0], 0.0),
    "logit eps": grads("logit", [0.0, 0.1, 0.2, 0.5, 0.8, 1.0], eps=0.2),
    "logit at 0 and 1": grads("logit", [0.0, -0.0, 1.0, 0.5, 1.5]),
    "copysign zeros": grads("copysign", [0.0, -0.0, 1.0, -2.0], [-1.0, 1.0, -0.0, 3.0]),
    "sinc at 0": grads("sinc", [0.0, 0.5, 1.0, -2.0]),
    "hypot at 0": grads("hypot", [0.0, 3.0, -1.0], [0.0, 4.0, 2.0]),
    "logaddexp far": grads("logaddexp", [0.0, 1.0, -500.0, 3.0], [0.0, 2.0, 500.0, -1.0]),
    "logaddexp inf": lambda lib: lib.logaddexp(mk(lib, "float64", [INF, -INF, INF]),
                                               mk(lib, "float64", [INF, -INF, -INF])),
    # (inf against NaN: C hypot's inf in PyTorch's float64 kernel, NaN in its float32 vector
    # loop; jitgrad gives inf)
    "hypot inf nan": lambda lib: lib.hypot(mk(lib, "float64", [INF, NAN, -INF, INF, 0.0]),
                                           mk(lib, "float64", [NAN, -INF, 1.0, INF, -0.0])),
    "nan_to_num args": lambda lib: lib.nan_to_num(mk(lib, "float32", FV), nan=1.0,
                                                  posinf=2.0, neginf=-3.0),
    "nan_to_num grad": grads("nan_to_num", [1.0, NAN, INF, -INF]),
    "lerp scalar": grads("lerp", [0.0, 1.5, 2.0], [1.0, -1.5, 4.0], 0.3),
    "lerp tensor": grads("lerp", [0.0, 1.5, 2.0], [1.0, -1.5, 4.0], [0.2, 0.7, 0.5]),
    "lerp int": lambda lib: lib.lerp(mk(lib, "int64"), mk(lib, "int64"), 0.5),
    "addcmul": grads("addcmul", [0.0, 1.5, 2.0], [1.0, -1.5, 4.0], [0.2, 0.7, 0.5], value=0.5),
    "addcdiv": grads("addcdiv", [0.0, 1.5, 2.0], [1.0, -1.5, 4.0], [0.2, 0.7, 0.5], value=0.5),
    "addcmul int": lambda lib: lib.addcmul(mk(lib, "int64"), mk(lib, "int64"),
                                           mk(lib, "int64"), value=2.5),
    "addcdiv int": lambda lib: lib.addcdiv(mk(lib, "int64"), mk(lib, "int64"), mk(lib, "int64")),
    "heaviside grad": lambda lib: lib.heaviside(mk(lib, "float32", rg=True), mk(lib, "float32")),
    "heaviside dtypes": lambda lib: lib.heaviside(mk(lib, "float32"), mk(lib, "float64")),
    "sinh signed zero": lambda lib: lib.sinh(mk(lib, "float32", [-0.0, 0.0, -1e-30])),
    "x.sinh() node": lambda lib: mk(lib, "float32", rg=True).sinh(),
    "x.log2() node": lambda lib: mk(lib, "float32", rg=True).abs().log2(),
    "x.float_power(2)": lambda lib: mk(lib, "float32", rg=True).float_power(2),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_case_matches_torch(name):
    check(CASES[name], 16)


# ----------------------------------------------------------------------------- finite differences

RNG = np.random.default_rng(7)


def _leaf(shape, lo=-2.0, hi=2.0):
    return jt.tensor(RNG.uniform(lo, hi, size=shape), dtype=jt.float64, requires_grad=True)


FD = {
    "lerp": (lambda a, b: jt.lerp(a, b, 0.3), [(3, 4), (4,)]),
    "lerp tensor": (lambda a, b, w: jt.lerp(a, b, w), [(3, 4), (4,), (3, 1)]),
    "addcmul": (lambda a, b, c: jt.addcmul(a, b, c, value=0.5), [(3, 4), (4,), (3, 1)]),
    "addcdiv": (lambda a, b, c: jt.addcdiv(a, b, c.abs() + 0.5, value=0.5),
                [(3, 4), (4,), (3, 1)]),
    "hypot": (jt.hypot, [(3, 4), (4,)]),
    "logaddexp": (jt.logaddexp, [(3, 4), (4,)]),
    "logaddexp2": (jt.logaddexp2, [(3, 4), (4,)]),
    "xlogy": (lambda a, b: jt.xlogy(a, b.abs() + 0.5), [(3, 4), (4,)]),
    "xlogy scalar": (lambda a: jt.xlogy(1.5, a.abs() + 0.5), [(5,)]),
    "copysign": (lambda a, b: jt.copysign(a, b), [(3, 4), (4,)]),
    "fmax": (jt.fmax, [(3, 4), (4,)]),
    "sinc": (jt.sinc, [(5,)]),
    "exp2": (jt.exp2, [(5,)]),
    "sinh": (jt.sinh, [(5,)]),
    "cosh": (jt.cosh, [(5,)]),
    "log2": (lambda a: jt.log2(a.abs() + 0.5), [(5,)]),
    "log10": (lambda a: jt.log10(a.abs() + 0.5), [(5,)]),
    "logit": (lambda a: jt.logit(a.sigmoid()), [(5,)]),
    "deg2rad": (jt.deg2rad, [(5,)]),
    "nan_to_num": (jt.nan_to_num, [(5,)]),
    "pow 0.5": (lambda a: (a.abs() + 0.5) ** 0.5, [(5,)]),
    "int pow": (lambda a: a ** 3, [(5,)]),
}


@pytest.mark.parametrize("name", sorted(FD))
def test_gradients_match_finite_differences(name):
    fn, shapes = FD[name]
    inputs = [_leaf(s) for s in shapes]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs, atol=1e-4)
