"""torch.X_(t, ...): the functional in-place forms (jitgrad/ops/toplevel_inplace.py) against
PyTorch: which exist, values, dtypes, grad_fn names, gradients and argument errors."""
import numpy as np
import pytest

import jitgrad
from jitgrad.ops.toplevel_inplace import NAMES
from tests._parity import agree, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

# extra arguments after ``input`` (default: none)
ARGS = {"clamp_": (-0.3, 0.4), "clip_": (-0.3, 0.4), "clamp_max_": (0.2,), "clamp_min_": (0.1,),
        "fill_": (2.5,), "xlogy_": (3.0,), "logit_": (0.1,), "nan_to_num_": (0.0, 1.0, -1.0),
        "ldexp_": ("T2",), "addmv_": ("M", "V")}
_INT_ONLY = ("gcd_", "lcm_")
_SKIP = ("index_put_", "resize_as_", "as_strided_", "detach_")  # own tests below / elsewhere
# piecewise-constant results, and the in-place inverse hyperbolics PyTorch gives no derivative
# (their error is checked in test_no_derivative)
_NO_GRAD = ("round_", "ceil_", "floor_", "trunc_", "fix_", "frac_", "zero_", "fill_", "acosh_",
            "arccosh_", "asinh_", "arcsinh_", "atanh_", "arctanh_")
FLOAT_NAMES = [n for n in NAMES if n not in _INT_ONLY + _SKIP]


def test_the_same_names_exist():
    want = sorted(n for n in dir(torch) if n.endswith("_") and not n.startswith("_")
                  and hasattr(torch.Tensor, n) and hasattr(jitgrad.Tensor, n))
    assert sorted(n for n in want if hasattr(jitgrad, n)) == want
    # and none that PyTorch lacks
    assert all(hasattr(torch, n) for n in NAMES)
    assert not hasattr(jitgrad, "add_") and not hasattr(torch, "add_")


@pytest.mark.parametrize("name", FLOAT_NAMES)
def test_float_form_in_a_graph(name):
    x = np.array([0.25, 0.5, 0.75, 0.125])

    def fn(T, t):
        y = t * 1.0
        extra = {"T2": T.tensor([1, 2, 3, -1]), "M": T.ones(4, 3, dtype=T.float64),
                 "V": T.arange(3.0, dtype=T.float64)}
        args = [extra.get(a, a) if isinstance(a, str) else a for a in ARGS.get(name, ())]
        r = getattr(T, name)(y, *args)
        assert r is y
        return r
    compare(fn, [x], grad=name not in _NO_GRAD)


@pytest.mark.parametrize("name", _INT_ONLY)
def test_integer_forms(name):
    agree(lambda T: getattr(T, name)(T.tensor([4, 6, 9]), T.tensor([6, 4, 3])))


def test_keyword_input_and_detach_():
    agree(lambda T: T.clamp_(input=T.tensor([1.0, -2.0]), min=0.0))
    agree(lambda T: T.detach_(T.ones(2, requires_grad=True) * 2).requires_grad)


@pytest.mark.parametrize("name", ["abs_", "clamp_", "clip_", "fill_", "xlogy_", "gcd_",
                                  "addmv_", "clamp_min_", "ldexp_", "index_put_"])
@pytest.mark.parametrize("args", [(1,), (), ("x",)])
def test_argument_errors(name, args):
    raises_like(lambda T: getattr(T, name)(*args))


def test_no_derivative():
    raises_like(lambda T: T.asinh_(T.ones(2, requires_grad=True) * 2).sum().backward())


def test_leaf_error_is_the_methods():
    raises_like(lambda T: T.sin_(T.ones(2, requires_grad=True)))
