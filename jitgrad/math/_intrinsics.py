"""Bit-level building blocks for jitgrad.math, written directly in LLVM IR.

Numba has no scalar float<->int bitcast, and its integer typing promotes int32
arithmetic to int64 and mixes unsigned/signed into float64.  Everything that
touches the bits of a float is therefore emitted here as plain LLVM IR
(bitcast, shifts, integer adds, selects): all of it vectorizes, none of it
branches, and none of it can produce poison (there is no float->int conversion:
integers are read from the low mantissa bits of ``t = n + MAGIC``, where
``MAGIC = 1.5 * 2**mantissa_bits``, so even a NaN ``t`` only gives garbage bits
that the callers never select).

Intrinsics (each works for float32 and float64, picked by the argument type):

* ``ldexp_m(x, t)``       -- x * 2**n for n = t - MAGIC, |n| <= 2*(bias-1); done as two
                             exact power-of-two multiplies so that an overflowing
                             or subnormal result is rounded exactly once.
* ``pow2_m(t, k)``        -- 2**(n + k) (k a Python int), n + k in the normal range.
* ``quadrant_m(t)``       -- (n mod 4) as a float.
* ``fma(a, b, c)``        -- a * b + c rounded once (``llvm.fma``), for code that must
                             reproduce another library's FMA use exactly (``_sleef.py``).
* ``select(c, a, b)``     -- an LLVM ``select`` (never a branch, unlike ``a if c else b``).
* ``log_reduce(x)``       -- (m, k) with x = m * 2**k, m in [sqrt(1/2), sqrt(2)),
                             for finite x > 0 (subnormals included).  Garbage
                             (but defined) otherwise.
* ``libm_if(c, x, v, fn)``-- ``fn(x) if c else v`` where fn ('sin', 'cos', 'tan') is
                             the libm function.  The call sits in a real branch;
                             LLVM's loop vectorizer turns it into a call of a
                             masked vector variant (declared through the
                             ``vector-function-abi-variant`` attribute) that
                             returns at once unless some lane needs libm, so the
                             rare slow path costs a call per vector, not a
                             scalar loop.
"""
import llvmlite.ir.values as _irv
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

_F32 = ir.FloatType()
_F64 = ir.DoubleType()
_I32 = ir.IntType(32)
_I64 = ir.IntType(64)


class _Fmt:
    """Per-format constants."""

    def __init__(self, ft):
        self.ft = ft
        if ft == _F32:
            self.it, self.mb, self.bias, self.np = _I32, 23, 127, np.float32
        else:
            self.it, self.mb, self.bias, self.np = _I64, 52, 1023, np.float64

    def f(self, v):
        return ir.Constant(self.ft, float(self.np(v)))

    def i(self, v):
        return ir.Constant(self.it, _signed(v, self.it.width))


def _signed(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def _is_float(t):
    return t in (types.float32, types.float64)


def _magic_bits(F):
    m = F.np(1.5 * 2.0 ** F.mb)
    return int(np.array(m).view(np.int32 if F.it == _I32 else np.int64))


@intrinsic
def ldexp_m(typingctx, x, t):
    if not (_is_float(x) and x == t):
        return None

    def codegen(context, builder, sig, args):
        xv, tv = args
        F = _Fmt(xv.type)
        b = builder
        ni = b.sub(b.bitcast(tv, F.it), F.i(_magic_bits(F)))
        n1 = b.ashr(ni, F.i(1))
        n2 = b.sub(ni, n1)
        p1 = b.bitcast(b.shl(b.add(n1, F.i(F.bias)), F.i(F.mb)), F.ft)
        p2 = b.bitcast(b.shl(b.add(n2, F.i(F.bias)), F.i(F.mb)), F.ft)
        return b.fmul(b.fmul(xv, p1), p2)
    return x(x, t), codegen


@intrinsic
def pow2_m(typingctx, t, k):
    if not (_is_float(t) and isinstance(k, types.IntegerLiteral)):
        return None
    kval = k.literal_value

    def codegen(context, builder, sig, args):
        F = _Fmt(args[0].type)
        b = builder
        ni = b.sub(b.bitcast(args[0], F.it), F.i(_magic_bits(F) - kval - F.bias))
        return b.bitcast(b.shl(ni, F.i(F.mb)), F.ft)
    return t(t, k), codegen


@intrinsic
def fma(typingctx, a, b, c):
    if not (_is_float(a) and a == b and b == c):
        return None

    def codegen(context, builder, sig, args):
        return builder.fma(*args)
    return a(a, b, c), codegen


@intrinsic
def select(typingctx, c, a, b):
    if not (isinstance(c, types.Boolean) and _is_float(a) and a == b):
        return None

    def codegen(context, builder, sig, args):
        return builder.select(args[0], args[1], args[2])
    return a(c, a, b), codegen


@intrinsic
def quadrant_m(typingctx, t):
    if not _is_float(t):
        return None

    def codegen(context, builder, sig, args):
        F = _Fmt(args[0].type)
        b = builder
        return b.uitofp(b.and_(b.bitcast(args[0], F.it), F.i(3)), F.ft)
    return t(t), codegen


class _RawFunctionAttributes(_irv.FunctionAttributes):
    """llvmlite only knows a fixed list of attributes; this adds raw "key"="value" ones."""

    def __init__(self, raw, base=()):
        super().__init__(base)
        self._raw = list(raw)

    def _to_list(self, ret_type):
        return super()._to_list(ret_type) + self._raw


_LIBM_WIDTHS = {32: (4, 8, 16), 64: (2, 4, 8)}


def _libm_function(module, fname, ft):
    """Scalar ``jitgrad_libm_<fn>_f<bits>`` (calls llvm.<fn>, i.e. libm) plus masked vector
    variants ``..._v<N>(<N x ft> x, <N x i1> mask)`` that return x unless a lane is set."""
    bits = 32 if ft == _F32 else 64
    name = f"jitgrad_libm_{fname}_f{bits}"
    try:
        return module.get_global(name)
    except KeyError:
        pass
    widths = _LIBM_WIDTHS[bits]
    variants = ",".join(f"_ZGV_LLVM_M{n}v_{name}({name}_v{n})" for n in widths)
    fn = ir.Function(module, ir.FunctionType(ft, [ft]), name=name)
    fn.linkage = "weak_odr"
    fn.attributes = _RawFunctionAttributes(
        [f'"vector-function-abi-variant"="{variants}"'], ["noinline", "nounwind", "readnone"])
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(b.call(module.declare_intrinsic(f"llvm.{fname}", [ft]), [fn.args[0]]))
    for n in widths:
        vt, mt = ir.VectorType(ft, n), ir.VectorType(ir.IntType(1), n)
        vf = ir.Function(module, ir.FunctionType(vt, [vt, mt]), name=f"{name}_v{n}")
        vf.linkage = "weak_odr"
        vf.attributes.add("noinline")
        vf.attributes.add("nounwind")
        entry, slow, done = (vf.append_basic_block(k) for k in ("entry", "slow", "done"))
        b = ir.IRBuilder(entry)
        xv, mv = vf.args
        anyset = b.icmp_unsigned("!=", b.bitcast(mv, ir.IntType(n)), ir.Constant(ir.IntType(n), 0))
        b.cbranch(anyset, slow, done)
        b.position_at_end(slow)
        acc = xv
        for i in range(n):
            idx = ir.Constant(_I32, i)
            acc = b.insert_element(acc, b.call(fn, [b.extract_element(xv, idx)]), idx)
        b.branch(done)
        b.position_at_end(done)
        phi = b.phi(vt)
        phi.add_incoming(xv, entry)
        phi.add_incoming(acc, slow)
        b.ret(phi)
    return fn


@intrinsic
def libm_if(typingctx, cond, x, v, fname):
    if not (_is_float(x) and x == v and isinstance(fname, types.StringLiteral)):
        return None
    name = fname.literal_value
    if name not in ("sin", "cos", "tan"):
        return None

    def codegen(context, builder, sig, args):
        c, xv, vv, _ = args
        fn = _libm_function(builder.module, name, xv.type)
        pre = builder.block
        with builder.if_then(c, likely=False):
            slow_val = builder.call(fn, [xv])
            slow_bb = builder.block
        phi = builder.phi(xv.type)
        phi.add_incoming(slow_val, slow_bb)
        phi.add_incoming(vv, pre)
        return phi
    return x(cond, x, v, fname), codegen


@intrinsic
def log_reduce(typingctx, x):
    if not _is_float(x):
        return None

    def codegen(context, builder, sig, args):
        (xv,) = args
        F = _Fmt(xv.type)
        b = builder
        # pre-scale subnormals by 2**(mb+2)
        sub = b.fcmp_ordered('<', xv, F.f(2.0 ** (1 - F.bias)))
        xs = b.select(sub, b.fmul(xv, F.f(2.0 ** (F.mb + 2))), xv)
        kadj = b.select(sub, F.i(-(F.mb + 2)), F.i(0))
        ix = b.bitcast(xs, F.it)
        one = F.bias << F.mb
        sqrth = int(np.array(np.sqrt(0.5), dtype=F.np).view(np.int32 if F.it == _I32 else np.int64))
        ix = b.add(ix, F.i(one - sqrth))
        k = b.add(b.sub(b.ashr(ix, F.i(F.mb)), F.i(F.bias)), kadj)
        im = b.add(b.and_(ix, F.i((1 << F.mb) - 1)), F.i(sqrth))
        m = b.bitcast(im, F.ft)
        kf = b.sitofp(k, F.ft)
        return context.make_tuple(b, sig.return_type, [m, kf])
    return types.UniTuple(x, 2)(x), codegen
