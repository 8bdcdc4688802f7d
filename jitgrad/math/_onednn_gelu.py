"""oneDNN's ``eltwise_gelu_erf`` (jit_uni_eltwise_injector), forward and backward derivative,
float32: what PyTorch's float32 ``gelu(approximate='none')`` computes on CPU for a contiguous
tensor of more than one element (``use_mkldnn`` in aten/src/ATen/native/Activation.cpp sends it
to ideep's eltwise_forward/backward).

* forward on avx512_core and up (``gelu_erf_minimax_approx_compute_vector_fwd``,
  ``gelu_fwd_minimax``): erf(x / sqrt 2) as one of 24 degree-5 polynomials in |x|, picked by the
  bits of |x| (two mantissa bits per binade), Horner by FMA; then ``(x * (1 + sign(x) * p)) *
  0.5``;
* forward on avx2 (``gelu_erf_compute_vector_fwd``'s other branch, ``gelu_fwd_as``):
  Abramowitz-Stegun 7.1.26 as in the backward below, then ``S + S * erf`` with ``S = x * 0.5``
  (one FMA);
* backward (``gelu_erf_compute_vector_bwd``): Abramowitz-Stegun 7.1.26 over oneDNN's own exp
  (``exp_compute_vector_fwd``: 2^n * p5(r), n = floor(x * log2e + 0.5)); the caller multiplies
  the incoming gradient by it.

``gelu_fwd`` is the one oneDNN runs here. oneDNN picks its ISA from the CPU's features; jitgrad
follows ``backends.cpu_capability.CAPABILITY`` instead: on a real host ATen's AVX512 capability
(AVX-512 VL/BW/DQ) is exactly oneDNN's avx512_core, so the two agree (with ATEN_CPU_CAPABILITY
forced they would not: oneDNN ignores that variable).

Every FMA is the JIT's ``vfmadd``/``vfnmadd``; min/max follow MINPS/MAXPS (a NaN operand gives
the second, the constant).  Constants are the injector table's bit patterns.
"""
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.extending import intrinsic

from ..backends.cpu_capability import CAPABILITY
from ._intrinsics import fma, select
from ._sleef import SLEEF_JIT

#: oneDNN's injector takes its avx512_core forward (the minimax one) where ATen runs AVX-512
AVX512_CORE = CAPABILITY == "AVX512"


@intrinsic
def _f2i(typingctx, x):
    if x != types.float32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.IntType(32))
    return types.int32(x), codegen


@intrinsic
def _i2f(typingctx, i):
    if i != types.int32:
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(args[0], ir.FloatType())
    return types.float32(i), codegen


def _h(*bits):
    return np.array(bits, np.uint32).view(np.float32)


# gelu_erf_minimax_pol: coefficient of degree d for polynomial i at [d, i] (25 used of 32)
_POL = np.stack([
    _h(0xa6f2cb94, 0x32827792, 0x3381cc0c, 0x34523d4a, 0x351ac44d, 0x35f36d88, 0x36ee8229,
       0x37b8a3bb, 0x3867a213, 0x3940033b, 0x3a2a5a1d, 0x3ae35863, 0x3b7828f2, 0x3c08b14b,
       0x3c515ed3, 0xbb503236, 0xbd8d8e5e, 0xbe8abcd9, 0xbf0c19a2, 0xbeccb328, 0x3e176ced,
       0x3f470d99, 0x3f7abb28, 0x3f800000, 0x00000000),
    _h(0x3f4c422a, 0x3f4c421f, 0x3f4c4207, 0x3f4c41cb, 0x3f4c413b, 0x3f4c3fad, 0x3f4c3a2f,
       0x3f4c2d40, 0x3f4c146a, 0x3f4bc341, 0x3f4ad08c, 0x3f48f8cf, 0x3f45fac7, 0x3f404e07,
       0x3f3b980f, 0x3f48dff3, 0x3f78b21b, 0x3fbb0704, 0x40019c32, 0x3fe536d6, 0x3f81331e,
       0x3e6c8684, 0x3c98f936, 0x00000000, 0x3f800000),
    _h(0xb62173f4, 0x3735e4cf, 0x37f2ff89, 0x388c23be, 0x3917535c, 0x39ab2ab0, 0x3a60fadb,
       0x3af9b960, 0x3b6e5491, 0x3c0a4ec5, 0x3ca5aa8c, 0x3d2138d9, 0x3d8737d4, 0x3ddfb660,
       0x3e0f27ab, 0x3d94004b, 0xbe0efdeb, 0xbf1d96c3, 0xbf89db58, 0xbf6d9897, 0xbef69fb8,
       0xbdc4f8a8, 0xbbde6422, 0x00000000, 0x00000000),
    _h(0xbe081a19, 0xbe084570, 0xbe08639b, 0xbe089837, 0xbe08f409, 0xbe09ab95, 0xbe0b66d0,
       0xbe0e400a, 0xbe124df8, 0xbe1bde02, 0xbe2f19c9, 0xbe4931bf, 0xbe685fbc, 0xbe89c95f,
       0xbe96cbca, 0xbe8044aa, 0xbe0550f2, 0x3dcfd6a1, 0x3e94c826, 0x3e79345f, 0x3decec91,
       0x3ca46568, 0x3aa1e00a, 0x00000000, 0x00000000),
    _h(0xba3d61db, 0x39f097a3, 0x3a5845dc, 0x3ab1fa35, 0x3b0cefb8, 0x3b653ab6, 0x3bcae527,
       0x3c221712, 0x3c6c5840, 0x3cc0a703, 0x3d1dcc19, 0x3d63656d, 0x3d955907, 0x3dbf9910,
       0x3dd53f69, 0x3db7dcef, 0x3d639ebe, 0xba6ede48, 0xbd22be69, 0xbd041cf1, 0xbc64f5ab,
       0xbb097a32, 0xb8ebf380, 0x00000000, 0x00000000),
    _h(0x3cb7d80c, 0x3c9b6050, 0x3c978d11, 0x3c92e850, 0x3c8d058b, 0x3c848454, 0x3c6cd623,
       0x3c4c824b, 0x3c2a7935, 0x3be0b390, 0x3b0651ac, 0xbb232f53, 0xbbd42fa0, 0xbc2c5366,
       0xbc492c9e, 0xbc2a7aa6, 0xbbd55d04, 0xba823a76, 0x3b102aa8, 0x3ae25a7e, 0x3a31f792,
       0x38b84375, 0x3689bb5a, 0x00000000, 0x00000000),
])
IDX_BIAS = -0x3de00001                      # 0xc21fffff as int32
RBOUND, = _h(0x40b15cee)
ONE, HALF, TWO, ZERO = map(np.float32, (1, 0.5, 2, 0))

# exp_compute_vector_fwd
LN_FLT_MAX, LN_FLT_MIN, LOG2EF, LN2F = _h(0x42b17218, 0xc2aeac50, 0x3fb8aa3b, 0x3f317218)
EP1, EP2, EP3, EP4, EP5 = _h(0x3f7ffffb, 0x3efffee3, 0x3e2aad40, 0x3d2b9d0d, 0x3c07cfce)
# gelu_erf_Abramowitz_Stegun constants and polynomial (p1..p5)
AS_P, AS_SQRT1_2, AS_SQRT1_PI = _h(0x3ea7ba05, 0x3f3504f3, 0x3f106eba)
AP1, AP2, AP3, AP4, AP5 = _h(0x3e827906, 0xbe91a98e, 0x3fb5f0e3, 0xbfba00e3, 0x3f87dc22)


_C0, _C1, _C2, _C3, _C4, _C5 = (np.ascontiguousarray(c) for c in _POL)


@njit(**SLEEF_JIT)
def gelu_fwd_minimax(x):
    a = abs(x)
    # vpaddd then vpsrad 21: |x|'s bits + bias never leave int32 here (no wraparound)
    i = (np.int64(_f2i(a)) + IDX_BIAS) >> 21
    i = min(max(i, 1), 24)
    i = 23 if RBOUND < a else i
    p = fma(_C5[i], a, _C4[i])                 # Horner, vfmadd213ps
    p = fma(p, a, _C3[i])
    p = fma(p, a, _C2[i])
    p = fma(p, a, _C1[i])
    p = fma(p, a, _C0[i])
    p = select(_f2i(x) < 0, -p, p)             # xor with the sign of x
    return (x * (p + ONE)) * HALF


@njit(**SLEEF_JIT)
def _exp(x):
    under = x < LN_FLT_MIN
    x = select(x < LN_FLT_MAX, x, LN_FLT_MAX)  # vminps(x, c): c unless x < c (NaN -> c)
    x = select(x > LN_FLT_MIN, x, LN_FLT_MIN)  # vmaxps(x, c)
    fx = x * LOG2EF + HALF                     # a multiply and an add (two roundings)
    t = np.float32(np.int32(fx))
    n = select(t > fx, t - ONE, t)             # floor (|fx| < 2^23)
    r = fma(-n, LN2F, x)                       # vfnmadd231ps
    k = np.int32(n - ONE) + np.int32(127)
    e = _i2f(np.int32(k << np.int32(23)))
    e = select(under, ZERO, e)
    p = fma(EP5, r, EP4)
    p = fma(p, r, EP3)
    p = fma(p, r, EP2)
    p = fma(p, r, EP1)
    p = fma(p, r, ONE)
    return (p * e) * TWO


@njit(**SLEEF_JIT)
def _as_erf_abs(r, q):
    """|erf(r)| by Abramowitz-Stegun 7.1.26, ``q`` = exp(-r * r), in the injector's order
    (shared by the avx2 forward and the backward: the same instructions, the same bits)."""
    w = ONE / fma(AS_P, abs(r), ONE)
    qw = -q * w
    p = fma(AP5, w, AP4)
    p = fma(p, w, AP3)
    p = fma(p, w, AP2)
    p = fma(p, w, AP1)
    return fma(qw, p, ONE)


@njit(**SLEEF_JIT)
def gelu_bwd(x):
    """d gelu / dx at x (the caller multiplies by the incoming gradient)."""
    r = x * AS_SQRT1_2
    q = _exp(-(r * r))
    t = (r * AS_SQRT1_PI) * q
    erf = _as_erf_abs(r, q)
    erf = select(_f2i(r) < 0, -erf, erf)
    return fma(erf, HALF, t + HALF)


@njit(**SLEEF_JIT)
def gelu_fwd_as(x):
    """The avx2 forward: erf(x / sqrt 2) by Abramowitz-Stegun (the backward's), in the
    injector's order; the sign is x's (vxorps with its sign bit)."""
    r = x * AS_SQRT1_2
    erf = _as_erf_abs(r, _exp(-(r * r)))
    erf = select(_f2i(x) < 0, -erf, erf)
    s = x * HALF
    return fma(erf, s, s)


gelu_fwd = gelu_fwd_minimax if AVX512_CORE else gelu_fwd_as


# ---- 16 lanes at once (AVX-512): the minimax forward, written as <16 x float> IR ---------------
# LLVM vectorizes ``gelu_fwd_minimax``'s table reads into gathers (64-bit indices: two per vector
# per coefficient, ~5x the arithmetic's cost). oneDNN itself picks the coefficients with vpermt2ps
# from two registers; ``gelu_fwd16`` does the same through llvm.x86.avx512.vpermi2var.ps.512,
# so it exists only where the host has AVX-512F and ``gelu_fwd`` is the minimax form
# (``HAVE_FWD16``). Same operations, same order, same bits as ``gelu_fwd_minimax`` lane by lane.

def _host_avx512f():
    try:
        import llvmlite.binding as llvm
        return bool(llvm.get_host_cpu_features().get("avx512f", False))
    except Exception:  # features unknown: take the portable path
        return False


HAVE_FWD16 = AVX512_CORE and _host_avx512f()
_VF = ir.VectorType(ir.FloatType(), 16)
_VI = ir.VectorType(ir.IntType(32), 16)


def _vf(v):
    return ir.Constant(_VF, [ir.Constant(ir.FloatType(), float(np.float32(v)))] * 16)


def _vi(v):
    return ir.Constant(_VI, [ir.Constant(ir.IntType(32), int(v))] * 16)


def _table(d, half):
    row = np.zeros(32, np.float32)
    row[:_POL.shape[1]] = _POL[d]
    return ir.Constant(_VF, [ir.Constant(ir.FloatType(), float(v))
                             for v in row[16 * half:16 * half + 16]])


@intrinsic
def gelu_fwd16(typingctx, x, out, start):
    """out[start:start + 16] = gelu_fwd_minimax(x[start:start + 16]) (the caller checks the
    bounds)."""
    if not (isinstance(x, types.Array) and x.dtype == types.float32 and
            isinstance(out, types.Array) and out.dtype == types.float32 and
            isinstance(start, types.Integer)):
        return None

    def codegen(context, builder, sig, args):
        from numba.core import cgutils
        mod = builder.module
        fma16 = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_VF, [_VF] * 3), "llvm.fma.v16f32")
        perm = cgutils.get_or_insert_function(
            mod, ir.FunctionType(_VF, [_VF, _VI, _VF]), "llvm.x86.avx512.vpermi2var.ps.512")
        xa = context.make_array(sig.args[0])(context, builder, args[0])
        oa = context.make_array(sig.args[1])(context, builder, args[1])
        s = context.cast(builder, args[2], sig.args[2], types.intp)
        xp = builder.bitcast(builder.gep(xa.data, [s]), _VF.as_pointer())
        op = builder.bitcast(builder.gep(oa.data, [s]), _VF.as_pointer())
        xv = builder.load(xp, align=4)
        xi = builder.bitcast(xv, _VI)
        ai = builder.and_(xi, _vi(0x7fffffff))
        a = builder.bitcast(ai, _VF)
        i = builder.ashr(builder.add(ai, _vi(IDX_BIAS)), _vi(21))
        i = builder.select(builder.icmp_signed(">", i, _vi(1)), i, _vi(1))
        i = builder.select(builder.icmp_signed("<", i, _vi(24)), i, _vi(24))
        i = builder.select(builder.fcmp_ordered("<", _vf(RBOUND), a), _vi(23), i)

        def coef(d):
            return builder.call(perm, [_table(d, 0), i, _table(d, 1)])
        p = builder.call(fma16, [coef(5), a, coef(4)])
        for d in (3, 2, 1, 0):
            p = builder.call(fma16, [p, a, coef(d)])
        neg = builder.fsub(_vf(-0.0), p)
        p = builder.select(builder.icmp_signed("<", xi, _vi(0)), neg, p)
        y = builder.fmul(builder.fmul(xv, builder.fadd(p, _vf(ONE))), _vf(HALF))
        builder.store(y, op, align=4)
        return context.get_dummy_value()
    return types.none(x, out, start), codegen
