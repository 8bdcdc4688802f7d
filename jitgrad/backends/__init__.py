"""Kernel targets. ``cpu`` is Numba's njit; each target binds the scalar vocabulary."""
