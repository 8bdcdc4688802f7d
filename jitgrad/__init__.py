"""jitgrad: reverse-mode autograd with the PyTorch user model, kernels compiled by Numba."""
