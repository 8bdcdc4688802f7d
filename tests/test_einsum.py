"""torch.einsum against PyTorch (2.13 CPU): values, dtypes, shapes, errors (type and message),
gradients against PyTorch and float64 central differences, and double backward. einsum's
grad_fn depends on the contraction path, so node names are not compared (tests/_parity.py's
``assert_grad_parity`` with ``name=False``)."""
from __future__ import annotations

import numpy as np
import pytest
from _parity import assert_grad_parity as parity
from _parity import random_array as R

pytest.importorskip("torch")

CASES = [
    ("ij,jk->ik", (2, 3), (3, 4)), ("ij,jk", (2, 3), (3, 4)), ("ij,kj->ik", (2, 3), (4, 3)),
    ("ij->ji", (2, 3)), ("ij->", (2, 3)), ("ij->j", (2, 3)), ("ii", (3, 3)), ("ii->i", (3, 3)),
    ("iii->i", (3, 3, 3)), ("iij->j", (3, 3, 2)), ("iji->j", (3, 2, 3)), ("ijj->ij", (2, 3, 3)),
    ("i,i->", (3,), (3,)), ("i,i", (3,), (3,)), ("i,j->ij", (3,), (4,)), ("i,j", (3,), (4,)),
    ("bij,bjk->bik", (2, 3, 4), (2, 4, 5)), ("bij,bkj->bik", (2, 3, 4), (2, 5, 4)),
    ("...ij,...jk->...ik", (2, 1, 2, 3), (5, 3, 4)), ("...ij,...jk", (4, 2, 3), (4, 3, 5)),
    ("i...,i...", (3, 2), (3, 2)), ("...ij->ij", (4, 2, 3)), ("ij->...ij", (2, 3)),
    ("...->...", (2, 3)), ("...", (2, 3)), ("ij,jk,kl->il", (2, 3), (3, 4), (4, 5)),
    ("ij,jk,kl", (2, 3), (3, 4), (4, 5)), ("ab,bc,ca->", (2, 3), (3, 4), (4, 2)),
    ("i,->i", (3,), ()), (",->", (), ()), ("", ()), ("bA,Ab", (2, 3), (3, 2)),
    ("Ab,bA->Ab", (2, 3), (3, 2)), ("ij,jk->ik", (2, 3), (1, 4)), ("ij,jk->ijk", (2, 3), (3, 4)),
    ("ij,ij->ij", (2, 3), (2, 3)), ("ij,ij->", (2, 3), (2, 3)), ("ij,ij->i", (2, 3), (2, 3)),
    ("ij,j->i", (2, 3), (3,)), ("i,ij->j", (2,), (2, 3)),
    ("bhqd,bhkd->bhqk", (2, 3, 4, 5), (2, 3, 6, 5)), ("bhqk,bhkd->bhqd", (2, 3, 4, 6), (2, 3, 6, 5)),
    ("ij,kl->ijkl", (2, 3), (4, 5)), ("ii,jj->ij", (3, 3), (2, 2)), ("ii,ij->j", (3, 3), (3, 2)),
    ("i j , j k -> i k", (2, 3), (3, 4)), ("ijk->kji", (2, 3, 4)), ("ijk->ki", (2, 3, 4)),
    ("i,i,i->i", (3,), (3,), (3,)), ("i,i,i->", (3,), (3,), (3,)),
    ("ij,jk->ik", (0, 3), (3, 4)), ("ij,jk->ik", (2, 0), (0, 4)), ("ij->j", (0, 3)),
    ("bij,bjk->bik", (2, 1, 4), (1, 4, 5)), ("bi,bi->b", (2, 3), (1, 3)),
    ("ij,jk->ik", (1, 3), (3, 1)), ("ij,ik->jk", (2, 3), (2, 4)), ("ji,jk->ik", (1, 3), (4, 2)),
]


@pytest.mark.parametrize("eq,shapes", [(c[0], c[1:]) for c in CASES], ids=str)
def test_einsum_matches_torch(eq, shapes):
    parity(lambda L: (lambda *a: L.einsum(eq, *a)), *[R(*s) for s in shapes], name=False,
           fd=sum(int(np.prod(s)) for s in shapes) <= 80)


ERRORS = [
    ("ij->ij", (2, 3), (3, 4)), ("ij,jk->ik", (2, 3)), ("i1,jk->ik", (2, 3), (3, 4)),
    ("i.j->ij", (2, 3)), ("...i...->i", (2, 3)), ("ijk->i", (2, 3)), ("ij...k->i", (2, 3)),
    ("ij->ik", (2, 3)), ("ij->ii", (2, 3)), ("ij,jk->ik", (2, 3), (4, 4)), ("ii->i", (2, 3)),
    ("...ij,...jk->...ik", (2, 2, 3), (5, 3, 4)), ("ij->j->i", (2, 3)),
    ("...ij->...i...", (2, 3)), ("\u03b1\u03b2->", (2, 3)), ("ij->i.", (2, 3)),
]


@pytest.mark.parametrize("eq,shapes", [(c[0], c[1:]) for c in ERRORS], ids=str)
def test_einsum_errors_match_torch(eq, shapes):
    parity(lambda L: (lambda *a: L.einsum(eq, *a)), *[R(*s) for s in shapes], name=False)


def test_operand_forms():
    parity(lambda L: (lambda a, b: L.einsum("ij,jk", [a, b])), R(2, 3), R(3, 4), name=False)
    parity(lambda L: (lambda a, b: L.einsum("ij,jk", (a, b))), R(2, 3), R(3, 4), name=False)
    parity(lambda L: (lambda a, b: L.einsum(a, [0, 1], b, [1, 2], [0, 2])), R(2, 3), R(3, 4),
           name=False)
    parity(lambda L: (lambda a, b: L.einsum(a, [0, 1], b, [1, 2])), R(2, 3), R(3, 4), name=False)
    parity(lambda L: (lambda a, b: L.einsum(a, [Ellipsis, 1], b, [1, 2], [Ellipsis, 2])),
           R(5, 2, 3), R(3, 4), name=False)
    parity(lambda L: (lambda a: L.einsum(a, [30, 51])), R(2, 3), name=False)
    parity(lambda L: (lambda a: L.einsum(a, [52, 1])), R(2, 3), name=False)
    parity(lambda L: (lambda a: L.einsum("ij", 3)), R(2, 3), name=False)
    parity(lambda L: (lambda a: L.einsum("ij")), R(2, 3), name=False)


def test_strided_and_expanded_operands():
    parity(lambda L: (lambda a, b: L.einsum("ij,jk->ik", a.t(), b[:, ::2])), R(3, 2), R(3, 8),
           name=False)
    parity(lambda L: (lambda a, b: L.einsum("bij,bjk->bik", a.expand(4, 2, 3), b)), R(1, 2, 3),
           R(4, 3, 5), name=False)


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float32, np.float16, np.bool_],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("eq,shapes", [("ij,jk->ik", ((2, 3), (3, 4))), ("ij->j", ((2, 3),)),
                                       ("ij,ij->", ((2, 3), (2, 3))), ("ii", ((3, 3),)),
                                       ("ij,jk->ijk", ((2, 3), (3, 4))), ("ij->ji", ((2, 3),))],
                         ids=str)
def test_einsum_dtypes(eq, shapes, dt):
    parity(lambda L: (lambda *a: L.einsum(eq, *a)), *[R(*s, dt=dt) for s in shapes], name=False)


def test_mixed_dtypes():
    """A contraction goes through bmm (its dtype error); an outer product multiplies and
    promotes, as PyTorch's einsum."""
    parity(lambda L: (lambda a, b: L.einsum("ij,jk->ik", a, b)), R(2, 3, dt=np.float32), R(3, 4),
           name=False)
    parity(lambda L: (lambda a, b: L.einsum("i,j->ij", a, b)), R(2, dt=np.float32), R(3),
           name=False)
