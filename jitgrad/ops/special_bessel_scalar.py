"""Scalar kernels of torch.special's Airy and Bessel functions: ports of ATen's Math.h
(``airy_ai_forward``, ``bessel_j0/j1/y0/y1_forward``, ``modified_bessel_i1/k0/k1_forward``,
``scaled_modified_bessel_k0/k1_forward``, all Cephes), written once and bound per target as
``special_scalar``'s are (``bind(env, jit)``; the same env names, plus ``cos``, ``f64`` (a cast
to float64 on every target) and ``i0``, special_scalar's, which is ATen's
``modified_bessel_i0_forward`` bit for bit).

ATen evaluates them in the operand's type (its float kernel stays float, the constants are
``static const T``), except ``modified_bessel_k0``'s ``std::log(0.5 * x)``: a double literal, so
float's small-argument branch ends in double. PyTorch's CPU build contracts ``a * b + c`` into
fma where GCC's widening-mul pass finds a product all of whose uses are additions (a product
that also feeds a multiplication stays rounded); those fmas are written out here, and on the
CPU these functions are compiled without any fast-math flag, so nothing else is fused.
"""
# ruff: noqa: F821 - the bodies use the names of the target's env, bound by ``bind``
from __future__ import annotations

import types

from .special_scalar import _chbevl_source, _polevl_source

__all__ = ["bind", "NAMES"]

NAMES = ("airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_i1",
         "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
         "scaled_modified_bessel_k1")

_PI = 3.14159265358979323846
_INF = float("inf")
_PIO4 = 0.785398163397448309615660845819875721
_3PIO4 = 2.356194490192344928846982537459627163
_SQ2OPI = 0.797884560802865355879892119868763737
_TWOOPI = 0.636619772367581343075535053490057448

# ---- coefficient tables (Math.h) -------------------------------------------------------------
_AIRY = {
    "an": (3.46538101525629032477e-01, 1.20075952739645805542e+01, 7.62796053615234516538e+01,
           1.68089224934630576269e+02, 1.59756391350164413639e+02, 7.05360906840444183113e+01,
           1.40264691163389668864e+01, 9.99999999999999995305e-01),
    "ad": (5.67594532638770212846e-01, 1.47562562584847203173e+01, 8.45138970141474626562e+01,
           1.77318088145400459522e+02, 1.64234692871529701831e+02, 7.14778400825575695274e+01,
           1.40959135607834029598e+01, 1.00000000000000000470e+00),
    "afn": (-1.31696323418331795333e-01, -6.26456544431912369773e-01,
            -6.93158036036933542233e-01, -2.79779981545119124951e-01,
            -4.91900132609500318020e-02, -4.06265923594885404393e-03,
            -1.59276496239262096340e-04, -2.77649108155232920844e-06,
            -1.67787698489114633780e-08),
    "afd": (1.33560420706553243746e+01, 3.26825032795224613948e+01, 2.67367040941499554804e+01,
            9.18707402907259625840e+00, 1.47529146771666414581e+00, 1.15687173795188044134e-01,
            4.40291641615211203805e-03, 7.54720348287414296618e-05, 4.51850092970580378464e-07),
    "agn": (1.97339932091685679179e-02, 3.91103029615688277255e-01, 1.06579897599595591108e+00,
            9.39169229816650230044e-01, 3.51465656105547619242e-01, 6.33888919628925490927e-02,
            5.85804113048388458567e-03, 2.82851600836737019778e-04, 6.98793669997260967291e-06,
            8.11789239554389293311e-08, 3.41551784765923618484e-10),
    "agd": (9.30892908077441974853e+00, 1.98352928718312140417e+01, 1.55646628932864612953e+01,
            5.47686069422975497931e+00, 9.54293611618961883998e-01, 8.64580826352392193095e-02,
            4.12656523824222607191e-03, 1.01259085116509135510e-04, 1.17166733214413521882e-06,
            4.91834570062930015649e-09),
}
# the asymptotic P/Q tables J0 and Y0 share, and those J1 and Y1 share
_PQ0 = {
    "pp": (7.96936729297347051624e-04, 8.28352392107440799803e-02, 1.23953371646414299388e+00,
           5.44725003058768775090e+00, 8.74716500199817011941e+00, 5.30324038235394892183e+00,
           9.99999999999999997821e-01),
    "pq": (9.24408810558863637013e-04, 8.56288474354474431428e-02, 1.25352743901058953537e+00,
           5.47097740330417105182e+00, 8.76190883237069594232e+00, 5.30605288235394617618e+00,
           1.00000000000000000218e+00),
    "qp": (-1.13663838898469149931e-02, -1.28252718670509318512e+00, -1.95539544257735972385e+01,
           -9.32060152123768231369e+01, -1.77681167980488050595e+02, -1.47077505154951170175e+02,
           -5.14105326766599330220e+01, -6.05014350600728481186e+00),
    "qq": (6.43178256118178023184e+01, 8.56430025976980587198e+02, 3.88240183605401609683e+03,
           7.24046774195652478189e+03, 5.93072701187316984827e+03, 2.06209331660327847417e+03,
           2.42005740240291393179e+02),
}
_PQ1 = {
    "pp": (7.62125616208173112003e-04, 7.31397056940917570436e-02, 1.12719608129684925192e+00,
           5.11207951146807644818e+00, 8.42404590141772420927e+00, 5.21451598682361504063e+00,
           1.00000000000000000254e+00),
    "pq": (5.71323128072548699714e-04, 6.88455908754495404082e-02, 1.10514232634061696926e+00,
           5.07386386128601488557e+00, 8.39985554327604159757e+00, 5.20982848682361821619e+00,
           9.99999999999999997461e-01),
    "qp": (5.10862594750176621635e-02, 4.98213872951233449420e+00, 7.58238284132545283818e+01,
           3.66779609360150777800e+02, 7.10856304998926107277e+02, 5.97489612400613639965e+02,
           2.11688757100572135698e+02, 2.52070205858023719784e+01),
    "qq": (7.42373277035675149943e+01, 1.05644886038262816351e+03, 4.98641058337653607651e+03,
           9.56231892404756170795e+03, 7.99704160447350683650e+03, 2.82619278517639096600e+03,
           3.36093607810698293419e+02),
}
_SMALL = {
    "j0_rp": (-4.79443220978201773821e+09, 1.95617491946556577543e+12, -2.49248344360967716204e+14,
              9.70862251047306323952e+15),
    "j0_rq": (4.99563147152651017219e+02, 1.73785401676374683123e+05, 4.84409658339962045305e+07,
              1.11855537045356834862e+10, 2.11277520115489217587e+12, 3.10518229857422583814e+14,
              3.18121955943204943306e+16, 1.71086294081043136091e+18),
    "j1_rp": (-8.99971225705559398224e+08, 4.52228297998194034323e+11, -7.27494245221818276015e+13,
              3.68295732863852883286e+15),
    "j1_rq": (6.20836478118054335476e+02, 2.56987256757748830383e+05, 8.35146791431949253037e+07,
              2.21511595479792499675e+10, 4.74914122079991414898e+12, 7.84369607876235854894e+14,
              8.95222336184627338078e+16, 5.32278620332680085395e+18),
    "y0_yp": (1.55924367855235737965e+04, -1.46639295903971606143e+07, 5.43526477051876500413e+09,
              -9.82136065717911466409e+11, 8.75906394395366999549e+13, -3.46628303384729719441e+15,
              4.42733268572569800351e+16, -1.84950800436986690637e+16),
    "y0_yq": (1.04128353664259848412e+03, 6.26107330137134956842e+05, 2.68919633393814121987e+08,
              8.64002487103935000337e+10, 2.02979612750105546709e+13, 3.17157752842975028269e+15,
              2.50596256172653059228e+17),
    "y1_yp": (1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
              -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17),
    "y1_yq": (5.94301592346128195359e+02, 2.35564092943068577943e+05, 7.34811944459721705660e+07,
              1.87601316108706159478e+10, 3.88231277496238566008e+12, 6.20557727146953693363e+14,
              6.87141087355300489866e+16, 3.97270608116560655612e+18),
}
# Chebyshev series of modified_bessel_i1 (all 29 of A also for float, unlike calc_i1), k0, k1
_CHEB = {
    "i1_a": (
        2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
        -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
        3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
        -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
        9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07,
        -8.56872026469545474066e-07, 3.47025130813767847674e-06, -1.32731636560394358279e-05,
        4.78156510755005422638e-05, -1.61760815825896745588e-04, 5.12285956168575772895e-04,
        -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
        2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01,
        -1.76416518357834055153e-01, 2.52587186443633654823e-01),
    "i1_b": (
        7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
        -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
        -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
        4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
        -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
        3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
        -3.83538038596423702205e-09, -2.63146884688951950684e-08, -2.51223623787020892529e-07,
        -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
        7.78576235018280120474e-01),
    "k0_a": (
        1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11,
        1.90451637722020886025e-09, 2.53479107902614945675e-07, 2.28621210311945178607e-05,
        1.26461541144692592338e-03, 3.59799365153615016266e-02, 3.44289899924628486886e-01,
        -5.35327393233902768720e-01),
    "k0_b": (
        5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17,
        -1.67823109680541210385e-16, 5.51205597852431940784e-16, -1.84859337734377901440e-15,
        6.34007647740507060557e-15, -2.22751332699166985548e-14, 8.03289077536357521100e-14,
        -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
        1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10,
        -1.69753450938905987466e-09, 8.57403401741422608519e-09, -4.66048989768794782956e-08,
        2.76681363944501510342e-07, -1.83175552271911948767e-06, 1.39498137188764993662e-05,
        -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
        2.44030308206595545468e+00),
    "k1_a": (
        -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13,
        -1.41148839263352776110e-10, -2.21338763073472585583e-08, -2.43340614156596823496e-06,
        -1.73028895751305206302e-04, -6.97572385963986435018e-03, -1.22611180822657148235e-01,
        -3.53155960776544875667e-01, 1.52530022733894777053e+00),
    "k1_b": (
        -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17,
        1.83809354436663880070e-16, -6.05704724837331885336e-16, 2.03870316562433424052e-15,
        -7.01983709041831346144e-15, 2.47715442448130437068e-14, -8.97670518232499435011e-14,
        3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
        -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10,
        2.01504975519703286596e-09, -1.03457624656780970260e-08, 5.74108412545004946722e-08,
        -3.50196060308781257119e-07, 2.40648494783721712015e-06, -1.93619797416608296024e-05,
        1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
        2.72062619048444266945e+00),
}

_GENERATED = "\n\n".join(
    [_polevl_source("_pv_airy_" + k, v) for k, v in _AIRY.items()]
    + [_polevl_source("_pv_pq0_" + k, v) for k, v in _PQ0.items()]
    + [_polevl_source("_pv_pq1_" + k, v) for k, v in _PQ1.items()]
    + [_polevl_source("_pv_" + k, v) for k, v in _SMALL.items()]
    # ATen's loops (p = q; q = a; a = y * q - p + A[i]; then 0.5 * (a - p)) are chbevl's
    + [_chbevl_source("_cheb_" + k, v) for k, v in _CHEB.items()]) + "\n"


# ---- the functions (bodies written against the env's names) ---------------------------------

def airy_ai(x):
    one = lit(x, 1.0)
    if abs(x) == lit(x, _INF):
        return lit(x, 0.0) / lit(x, 0.0)
    if x > lit(x, 103.892):
        return lit(x, 0.0)
    if x < lit(x, -2.09):
        s = lit(x, -2.0) * x * sqrt(-x) / lit(x, 3.0)
        z = one / s
        zz = z * z
        afn = _pv_airy_afn(zz)
        afd = _pv_airy_afd(zz)
        agn = _pv_airy_agn(zz)
        agd = _pv_airy_agd(zz)
        t = s + lit(x, 0.25 * _PI)
        # sin(t) * (1 + ...) - cos(t) * (...): the first product is fused
        return (lit(x, 5.64189583547756286948e-01) / sqrt(sqrt(-x))
                * fma(sin(t), one + zz * afn / afd, -(cos(t) * (z * agn / agd))))
    if x >= lit(x, 2.09):
        # ATen also runs the power series below 8.3203353, then returns this value anyway
        zeta = lit(x, 2.0) * x * sqrt(x) / lit(x, 3.0)
        rz = one / zeta
        an = _pv_airy_an(rz)
        ad = _pv_airy_ad(rz)
        return (lit(x, 5.64189583547756286948e-01) * (an / ad)
                / (lit(x, 2.0) * sqrt(sqrt(x)) * exp(zeta)))
    eps = lit(x, 1.1920928955078125e-07) if single(x) else lit(x, 2.220446049250313e-16)
    f = one
    g = x
    k = one
    m = one
    n = x
    t = one
    z = x * x * x
    while t > eps:
        m *= z
        k += one
        m /= k
        n *= z
        k += one
        n /= k
        m /= k
        f += m
        k += one
        n /= k
        g += n
        t = abs(m / f)
    return fma(lit(x, 0.355028053887817239260), f, -(lit(x, 0.258819403792806798405) * g))


def bessel_j0(x):
    if x < lit(x, 0.0):
        x = -x
    if x <= lit(x, 5.0):
        if x < lit(x, 0.00001):
            return lit(x, 1.0) - x * x / lit(x, 4.0)
        xx = x * x  # also a factor of the Horner steps: not fused into the differences
        rp = _pv_j0_rp(xx)
        rq = _pv_j0_rq(xx)
        return ((xx - lit(x, 5.78318596294678452118e+00))
                * (xx - lit(x, 3.04712623436620863991e+01)) * rp / rq)
    z = lit(x, 25.0) / (x * x)
    pp = _pv_pq0_pp(z)
    pq = _pv_pq0_pq(z)
    qp = _pv_pq0_qp(z)
    qq = _pv_pq0_qq(z)
    xn = x - lit(x, _PIO4)
    return (fma(pp / pq, cos(xn), -(lit(x, 5.0) / x * (qp / qq) * sin(xn)))
            * lit(x, _SQ2OPI) / sqrt(x))


def _bessel_j1_nonnegative(x):
    if x <= lit(x, 5.0):
        xx = x * x
        rp = _pv_j1_rp(xx)
        rq = _pv_j1_rq(xx)
        return (rp / rq * x * (xx - lit(x, 1.46819706421238932572e+01))
                * (xx - lit(x, 4.92184563216946036703e+01)))
    w = lit(x, 5.0) / x
    z = w * w
    pp = _pv_pq1_pp(z)
    pq = _pv_pq1_pq(z)
    qp = _pv_pq1_qp(z)
    qq = _pv_pq1_qq(z)
    xn = x - lit(x, _3PIO4)
    return fma(pp / pq, cos(xn), -(w * (qp / qq) * sin(xn))) * lit(x, _SQ2OPI) / sqrt(x)


def bessel_j1(x):
    if x < lit(x, 0.0):
        return -_bessel_j1_nonnegative(-x)
    return _bessel_j1_nonnegative(x)


def bessel_y0(x):
    if x <= lit(x, 5.0):
        if x == lit(x, 0.0):
            return -lit(x, _INF)
        if x < lit(x, 0.0):
            return lit(x, 0.0) / lit(x, 0.0)
        xx = x * x
        yp = _pv_y0_yp(xx)
        yq = _pv_y0_yq(xx)
        return fma(lit(x, _TWOOPI) * log(x), bessel_j0(x), yp / yq)
    z = lit(x, 25.0) / (x * x)
    pp = _pv_pq0_pp(z)
    pq = _pv_pq0_pq(z)
    qp = _pv_pq0_qp(z)
    qq = _pv_pq0_qq(z)
    xn = x - lit(x, _PIO4)
    return (fma(pp / pq, sin(xn), lit(x, 5.0) / x * (qp / qq) * cos(xn))
            * lit(x, _SQ2OPI) / sqrt(x))


def bessel_y1(x):
    if x <= lit(x, 5.0):
        if x == lit(x, 0.0):
            return -lit(x, _INF)
        if x <= lit(x, 0.0):
            return lit(x, 0.0) / lit(x, 0.0)
        xx = x * x
        yp = _pv_y1_yp(xx)
        yq = _pv_y1_yq(xx)
        inner = fma(bessel_j1(x), log(x), -(lit(x, 1.0) / x))
        return fma(x, yp / yq, lit(x, _TWOOPI) * inner)
    w = lit(x, 5.0) / x
    z = w * w
    pp = _pv_pq1_pp(z)
    pq = _pv_pq1_pq(z)
    qp = _pv_pq1_qp(z)
    qq = _pv_pq1_qq(z)
    xn = x - lit(x, _3PIO4)
    return fma(pp / pq, sin(xn), w * (qp / qq) * cos(xn)) * lit(x, _SQ2OPI) / sqrt(x)


def modified_bessel_i1(x):
    ax = abs(x)
    if ax <= lit(x, 8.0):
        out = _cheb_i1_a(ax / lit(x, 2.0) - lit(x, 2.0)) * ax * exp(ax)
    else:
        out = exp(ax) * _cheb_i1_b(lit(x, 32.0) / ax - lit(x, 2.0)) / sqrt(ax)
    return -out if x < lit(x, 0.0) else out


def modified_bessel_k0(x):
    if x == lit(x, 0.0):
        return lit(x, _INF)
    if x < lit(x, 0.0):
        return lit(x, 0.0) / lit(x, 0.0)
    if x <= lit(x, 2.0):
        c = _cheb_k0_a(fma(x, x, lit(x, -2.0)))
        # std::log(0.5 * x): a double literal, so the rest is double for float too
        lw = log(f64(x) * 0.5)
        return lit(x, fma(-lw, f64(i0(x)), f64(c)))
    return exp(-x) * _cheb_k0_b(lit(x, 8.0) / x - lit(x, 2.0)) / sqrt(x)


def modified_bessel_k1(x):
    if x == lit(x, 0.0):
        return lit(x, _INF)
    if x < lit(x, 0.0):
        return lit(x, 0.0) / lit(x, 0.0)
    if x <= lit(x, 2.0):
        c = _cheb_k1_a(fma(x, x, lit(x, -2.0)))
        return fma(log(lit(x, 0.5) * x), modified_bessel_i1(x), c / x)
    return exp(-x) * _cheb_k1_b(lit(x, 8.0) / x - lit(x, 2.0)) / sqrt(x)


def scaled_modified_bessel_k0(x):
    if x == lit(x, 0.0):
        return lit(x, _INF)
    if x < lit(x, 0.0):
        return lit(x, 0.0) / lit(x, 0.0)
    if x <= lit(x, 2.0):
        c = _cheb_k0_a(fma(x, x, lit(x, -2.0)))
        return fma(-log(lit(x, 0.5) * x), i0(x), c) * exp(x)
    return _cheb_k0_b(lit(x, 8.0) / x - lit(x, 2.0)) / sqrt(x)


def scaled_modified_bessel_k1(x):
    if x == lit(x, 0.0):
        return lit(x, _INF)
    if x < lit(x, 0.0):
        return lit(x, 0.0) / lit(x, 0.0)
    if x <= lit(x, 2.0):
        c = _cheb_k1_a(fma(x, x, lit(x, -2.0)))
        return fma(log(lit(x, 0.5) * x), modified_bessel_i1(x), c / x) * exp(x)
    return _cheb_k1_b(lit(x, 8.0) / x - lit(x, 2.0)) / sqrt(x)


_FUNCTIONS = (airy_ai, bessel_j0, _bessel_j1_nonnegative, bessel_j1, bessel_y0, bessel_y1,
              modified_bessel_i1, modified_bessel_k0, modified_bessel_k1,
              scaled_modified_bessel_k0, scaled_modified_bessel_k1)


def bind(env: dict, jit) -> dict:
    """The functions of ``NAMES`` with ``env``'s names as globals, each wrapped in ``jit``."""
    ns = dict(env)
    ns.update(_PI=_PI, _INF=_INF, _PIO4=_PIO4, _3PIO4=_3PIO4, _SQ2OPI=_SQ2OPI, _TWOOPI=_TWOOPI)
    exec(compile(_GENERATED, "<jitgrad special_bessel_scalar>", "exec"), ns)
    made = [name for name in ns if name.startswith(("_cheb_", "_pv_"))]
    for fn in _FUNCTIONS:
        ns[fn.__name__] = types.FunctionType(fn.__code__, ns, fn.__name__)
        made.append(fn.__name__)
    for name in made:
        ns[name] = jit(ns[name])
    return {name: ns[name] for name in NAMES}
