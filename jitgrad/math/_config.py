"""Build-time configuration of jitgrad.math (read once, at import)."""
import os

#: Fast-math flags every jitgrad.math implementation is compiled with.
#: Only ``contract`` (lets LLVM fuse a*b+c into an FMA): it is what makes the
#: polynomials fast *and* slightly more accurate.  Deliberately absent:
#: ``nnan``/``ninf`` (would delete the special-value selects), ``nsz`` (would
#: lose -0.0 results), ``reassoc`` (would undo the Cody-Waite / two-sum
#: compensations, e.g. fold ``(x - q*c1) - q*c2`` into ``x - q*(c1+c2)``),
#: ``arcp``/``afn`` (turn divisions into reciprocal multiplies: one more rounding).
#: Flags are per LLVM instruction and the implementations are only inlined at
#: the LLVM level, so a caller compiled with other flags does not change them.
FASTMATH = {"contract"}

#: ``JITGRAD_LIBM=1`` in the environment: every function calls libm (math.*).
USE_LIBM = os.environ.get("JITGRAD_LIBM", "").strip().lower() not in ("", "0", "false", "no", "off")

#: Options of every jitted implementation.  ``error_model='numpy'``: a float
#: division by zero gives inf/nan instead of raising ZeroDivisionError (the
#: Python error model also adds a branch per division, which blocks vectorization).
#: ``forceinline``: LLVM ``alwaysinline`` -- the functions are too big for LLVM's
#: inliner heuristics, and a call left in a loop prevents vectorizing it.  This is
#: inlining at the LLVM level (after each function got its own fast-math flags),
#: unlike ``inline='always'`` which splices Numba IR into the caller and would
#: compile our code with the caller's flags.
JIT_OPTIONS = dict(fastmath=FASTMATH, error_model="numpy", forceinline=True)
