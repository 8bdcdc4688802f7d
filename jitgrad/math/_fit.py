"""Developer tool: regenerate the polynomial coefficients used by jitgrad.math.

Not imported at runtime.  Needs mpmath (``pip install mpmath``).  Run

    python -m jitgrad.math._fit

to print every fit with its minimax error (relative, weighted) before and after
rounding the coefficients to the working precision.  The printed coefficients are
what ``_coeffs.py`` contains.

Method: discrete Remez exchange on a dense grid, all arithmetic in mpmath at
60 significant digits.  The approximated quantity is always written so that
the *final* function value's relative error is minimised (the weight function).
"""
import mpmath as mp

mp.mp.dps = 45


def remez(f, basis, a, b, weight, n_grid=1500, iters=40, verbose=False):
    """Minimise max_x |weight(x) * (f(x) - sum c_k basis_k(x))| on [a, b].

    f, weight: callables on mpf; basis: list of callables.  Returns (coeffs, err).
    """
    n = len(basis)
    grid = [a + (b - a) * (1 - mp.cos(mp.pi * i / (n_grid - 1))) / 2 for i in range(n_grid)]
    wv = [abs(weight(x)) for x in grid]
    wmax = max(wv)
    keep = [i for i in range(n_grid) if wv[i] > wmax * mp.mpf(10) ** -6]
    grid = [grid[i] for i in keep]
    wv = [wv[i] for i in keep]
    n_grid = len(grid)
    fv = [f(x) for x in grid]
    bv = [[bk(x) for bk in basis] for x in grid]
    # initial reference: Chebyshev extrema
    ref = [int(round((n_grid - 1) * (1 - mp.cos(mp.pi * i / n)) / 2)) for i in range(n + 1)]
    ref = sorted(set(ref))
    best = None
    for it in range(iters):
        A = mp.matrix(n + 1, n + 1)
        rhs = mp.matrix(n + 1, 1)
        for r, gi in enumerate(ref):
            for k in range(n):
                A[r, k] = bv[gi][k]
            A[r, n] = (-1) ** r / wv[gi]
            rhs[r] = fv[gi]
        sol = mp.lu_solve(A, rhs)
        c = [sol[k] for k in range(n)]
        err = [wv[i] * (fv[i] - mp.fsum(c[k] * bv[i][k] for k in range(n))) for i in range(n_grid)]
        emax = max(abs(e) for e in err)
        if best is None or emax < best[1]:
            best = (c, emax)
        # new reference: local extrema with alternating signs
        ext = []
        for i in range(n_grid):
            left = err[i - 1] if i > 0 else None
            right = err[i + 1] if i < n_grid - 1 else None
            e = err[i]
            if (left is None or abs(e) >= abs(left)) and (right is None or abs(e) >= abs(right)):
                ext.append(i)
        # merge same-sign neighbours keeping the larger
        alt = []
        for i in ext:
            if alt and mp.sign(err[i]) == mp.sign(err[alt[-1]]):
                if abs(err[i]) > abs(err[alt[-1]]):
                    alt[-1] = i
            else:
                alt.append(i)
        while len(alt) > n + 1:
            # drop the smaller end, keeping alternation
            if abs(err[alt[0]]) < abs(err[alt[-1]]):
                alt.pop(0)
            else:
                alt.pop()
        emin = min(abs(err[i]) for i in alt)
        if verbose:
            print(it, mp.nstr(emax, 5), mp.nstr(emin, 5), len(alt))
        if len(alt) < n + 1:
            break
        ref = alt
        if emax / emin < 1.0001:
            break
    return best


def lawson(f, basis, a, b, weight, n_grid=300, iters=25):
    """Weighted minimax on a discrete grid by Lawson's iteratively reweighted least squares.

    Slower to converge than Remez but always well posed; used for the re-fits after
    rounding leading coefficients (where the exchange algorithm can lose alternation).
    """
    n = len(basis)
    grid = [a + (b - a) * (1 - mp.cos(mp.pi * (i + mp.mpf(1) / 2) / n_grid)) / 2
            for i in range(n_grid)]
    wv = [abs(weight(x)) for x in grid]
    fv = [f(x) for x in grid]
    bv = [[bk(x) for bk in basis] for x in grid]
    lam = [mp.mpf(1) / n_grid] * n_grid
    best = None
    for _ in range(iters):
        G = mp.matrix(n, n)
        h = mp.matrix(n, 1)
        for i in range(n_grid):
            wi = lam[i] * wv[i] ** 2
            for k in range(n):
                h[k] += wi * bv[i][k] * fv[i]
                for l in range(k, n):
                    G[k, l] += wi * bv[i][k] * bv[i][l]
        for k in range(n):
            for l in range(k):
                G[k, l] = G[l, k]
        sol = mp.lu_solve(G, h)
        c = [sol[k] for k in range(n)]
        err = [abs(wv[i] * (fv[i] - mp.fsum(c[k] * bv[i][k] for k in range(n))))
               for i in range(n_grid)]
        emax = max(err)
        if best is None or emax < best[1]:
            best = (c, emax)
        tot = mp.fsum(lam[i] * err[i] for i in range(n_grid))
        lam = [lam[i] * err[i] / tot for i in range(n_grid)]
    return best


def check(f, weight, a, b, evaluate, n=20000):
    """Max weighted error of a concrete evaluator (e.g. rounded coeffs) on [a,b]."""
    m = mp.mpf(0)
    for i in range(n):
        x = a + (b - a) * mp.mpf(i) / (n - 1)
        m = max(m, abs(weight(x) * (f(x) - evaluate(x))))
    return m


def _fmt(cs, prec):
    import numpy as np
    t = np.float32 if prec == 32 else np.float64
    return [repr(float(t(float(c)))) for c in cs]


ERF64_PIECES = [(1, 1.5), (1.5, 2.25), (2.25, 3.5), (3.5, 6)]
ERF64_DEG = 12


def fit_all(only=None):
    import numpy as np
    out = {}

    def run(name, f, basis, a, b, weight, prec, **kw):
        if only and name not in only:
            return
        a, b = mp.mpf(a), mp.mpf(b)
        t = np.float32 if prec == 32 else np.float64
        c, e = remez(f, basis, a, b, weight, **kw)
        # round coefficients one at a time, lowest order first, re-fitting the rest
        fixed = []
        for k in range(len(basis)):
            rest = basis[k:]
            def g(x, fx=tuple(fixed)):
                return f(x) - mp.fsum(fx[i] * basis[i](x) for i in range(len(fx)))
            ck, _ = lawson(g, rest, a, b, weight) if k else (c, e)
            fixed.append(mp.mpf(float(t(float(ck[0])))))
        er = check(f, weight, a, b,
                   lambda x: mp.fsum(fixed[k] * basis[k](x) for k in range(len(basis))), n=3000)
        print(f"{name}: minimax err {mp.nstr(e, 4)}  rounded-coeff err {mp.nstr(er, 4)}"
              f"  (= {float(er) * 2.0 ** (p := 24 if prec == 32 else 53):.3f} units of 2^-{p})")
        print("   ", _fmt(fixed, prec))
        out[name] = fixed

    def mono(k0, step, n):
        return [(lambda x, p=k0 + step * i: x ** p) for i in range(n)]

    ln2h = mp.log(2) / 2
    # exp/expm1 kernel: expm1(r) = r + r^2 * u(r),  u(r) = sum c_k r^k.
    # weight so that the error of r^2*u relative to expm1(r) is minimised.
    u = lambda r: (mp.expm1(r) - r) / r ** 2 if r != 0 else mp.mpf(1) / 2
    wexpm1 = lambda r: r ** 2 / mp.expm1(r) if r != 0 else mp.mpf(0)
    run("expu32", u, mono(0, 1, 6), -ln2h, ln2h, wexpm1, 32)
    run("expu64", u, mono(0, 1, 11), -ln2h, ln2h, wexpm1, 64)
    # tanh(x) = x + x^3 * P(x^2) on [0, 0.625]  (float32 only; float64 uses Cephes' rational)
    def tp(s):
        return (mp.tanh(mp.sqrt(s)) - mp.sqrt(s)) / mp.sqrt(s) ** 3 if s != 0 else -mp.mpf(1) / 3
    wt = lambda s: mp.sqrt(s) ** 3 / mp.tanh(mp.sqrt(s)) if s != 0 else mp.mpf(0)
    run("tanh32", tp, mono(0, 1, 6), 0, mp.mpf(0.625) ** 2, wt, 32)
    for d in (7, 8, 9):
        run(f"tanh32_09_{d}", tp, mono(0, 1, d), 0, mp.mpf(0.9) ** 2, wt, 32)
    # sin(r) = r + r^3 * P(r^2), cos(r) = 1 - r^2/2 + r^4 * Q(r^2) on |r| <= pi/4
    q = (mp.pi / 4) ** 2
    sp = lambda s: (mp.sin(mp.sqrt(s)) - mp.sqrt(s)) / mp.sqrt(s) ** 3 if s != 0 else -mp.mpf(1) / 6
    ws = lambda s: mp.sqrt(s) ** 3 / mp.sin(mp.sqrt(s)) if s != 0 else mp.mpf(0)
    run("sin32", sp, mono(0, 1, 4), 0, q, ws, 32)
    cp = lambda s: (mp.cos(mp.sqrt(s)) - 1 + s / 2) / s ** 2 if s != 0 else mp.mpf(1) / 24
    wc = lambda s: s ** 2 / mp.cos(mp.sqrt(s))
    run("cos32", cp, mono(0, 1, 3), 0, q, wc, 32)
    # tan(r) = r + r^3 * P(r^2) on |r| <= pi/4
    tp2 = lambda s: (mp.tan(mp.sqrt(s)) - mp.sqrt(s)) / mp.sqrt(s) ** 3 if s != 0 else mp.mpf(1) / 3
    wtn = lambda s: mp.sqrt(s) ** 3 / mp.tan(mp.sqrt(s)) if s != 0 else mp.mpf(0)
    for d in (7, 8, 9):
        run(f"tan32_{d}", tp2, mono(0, 1, d), 0, q, wtn, 32)
    # erf(x) = x * P(x^2) on [0, 1]
    ep = lambda s: mp.erf(mp.sqrt(s)) / mp.sqrt(s) - 1 if s != 0 else 2 / mp.sqrt(mp.pi) - 1
    one = lambda s: (mp.sqrt(s) / mp.erf(mp.sqrt(s))) if s != 0 else mp.sqrt(mp.pi) / 2
    run("erfs32", ep, mono(0, 1, 7), 0, 1, one, 32)
    run("erfs64", ep, mono(0, 1, 13), 0, 1, one, 64)
        # erf(x) = 1 - exp(-x^2 + L(x)),  L = log(erfc(x) exp(x^2)); weight erfc/erf
    L = lambda x: mp.log(mp.erfc(x)) + x * x
    wL = lambda x: mp.erfc(x) / mp.erf(x)
    run("erfL32", L, mono(0, 1, 7), 1, 4, wL, 32)
    # float64: the same L(x), piecewise (coefficients selected per lane), in t = x - centre
    for lo_, hi_ in ERF64_PIECES:
        c0 = (mp.mpf(lo_) + hi_) / 2
        run(f"erfL64_{lo_}", L, [(lambda x, p=i, c0=c0: (x - c0) ** p) for i in range(ERF64_DEG)],
            lo_, hi_, wL, 64)
    return out


if __name__ == "__main__":
    import sys
    fit_all(sys.argv[1:] or None)
