"""Plain-Python stand-ins for the scalar vocabulary's helpers that need per-target behaviour.

``lit(like, v)`` means "the constant v, in like's type". Targets give it meaning: Numba through an
``@overload`` (``backends/cpu_env.py``), Tensors by returning ``v`` unchanged (a Python scalar
never changes a tensor's dtype).
"""


def lit(like, v):
    return v
