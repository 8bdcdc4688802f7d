"""torch.einsum as a composition of recorded ops (permute / reshape / slicing / sum / mul / bmm),
so gradients, ``create_graph`` and double backward come from those ops (and it runs wherever
they run, CUDA included).

Equation strings: explicit (``ij,jk->ik``) or implicit output (labels seen once, sorted with
upper case first, after the broadcast ``...`` dims), ``...`` ellipsis with broadcasting, size-1
label broadcasting, repeated labels in one operand (diagonals: ``ii->i``, ``ii``); operands as
varargs, one list, or PyTorch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])``.

Plan: take diagonals of repeated labels, sum labels that no other operand or the output needs,
then contract the operands left to right: labels both share and a later step needs are batch
dims, shared labels nobody needs are contracted through one bmm; with nothing to contract the
pair is a broadcast multiply. PyTorch's own contraction path (and so its grad_fn names) can
differ; values and gradients agree up to rounding. Operands of different dtypes promote in a
multiply and raise bmm's error in a contraction, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .parser_errors import parser_type_name

__all__ = ["einsum"]

_ELL = -1  # the ellipsis token in a parsed operand


def _label(c):
    """PyTorch's label order: A-Z are 0-25, a-z are 26-51."""
    return ord(c) - ord("A") if c <= "Z" else ord(c) - ord("a") + 26


def _char(label):
    return chr(ord("A") + label) if label < 26 else chr(ord("a") + label - 26)


def _parse_sublists(args):
    """einsum(op0, sub0, op1, sub1, ..., [out]): integer labels in [0, 52) and Ellipsis."""
    def sub(lst):
        out = []
        for n in lst:
            if n is Ellipsis:
                out.append("...")
            elif isinstance(n, (int, np.integer)) and 0 <= n < 52:
                out.append(_char(int(n)))
            else:
                raise ValueError("einsum(): subscript in subscript list is not within the valid "
                                 "range [0, 52)")
        return "".join(out)

    ops = list(args[0::2][:len(args) // 2])
    subs = [sub(s) for s in args[1::2][:len(args) // 2]]
    eq = ",".join(subs)
    if len(args) % 2 == 1:
        eq += "->" + sub(args[-1])
    return eq, ops


def _parse(equation, n_ops):
    arrow = equation.find("->")
    lhs = equation if arrow < 0 else equation[:arrow]
    terms, cur, found_ell = [[]], 0, False
    i = 0
    while i < len(lhs):
        c = lhs[i]
        if c == " ":
            pass
        elif c == ",":
            cur += 1
            terms.append([])
            found_ell = False
        elif c == ".":
            if found_ell:
                raise RuntimeError(f"einsum(): found '.' for operand {cur} for which an ellipsis "
                                   "was already found")
            if not (i + 2 < len(lhs) and lhs[i + 1] == "." and lhs[i + 2] == "."):
                raise RuntimeError(f"einsum(): found '.' for operand {cur} that is not part of any "
                                   "ellipsis")
            i += 2
            terms[cur].append(_ELL)
            found_ell = True
        elif c.isascii() and c.isalpha():
            terms[cur].append(_label(c))
        else:
            raise RuntimeError(f"einsum(): invalid subscript given at index {i} in the equation "
                               "string, subscripts must be in [a-zA-Z]")
        i += 1
    if len(terms) < n_ops:
        raise RuntimeError("einsum(): more operands were provided than specified in the equation")
    if len(terms) > n_ops:
        raise RuntimeError("einsum(): fewer operands were provided than specified in the "
                           "equation")
    out = None
    if arrow >= 0:
        rhs = equation[arrow + 2:]
        out, found_ell = [], False
        i = 0
        while i < len(rhs):
            c = rhs[i]
            if c == " ":
                pass
            elif c == ".":
                if found_ell:
                    raise RuntimeError("einsum(): found '.' for output but an ellipsis (...) was "
                                       "already found")
                if not (i + 2 < len(rhs) and rhs[i + 1] == "." and rhs[i + 2] == "."):
                    raise RuntimeError("einsum(): found '.' for output that is not part of any "
                                       "ellipsis (...)")
                i += 2
                out.append(_ELL)
                found_ell = True
            elif c.isascii() and c.isalpha():
                out.append(_label(c))
            else:
                raise RuntimeError(f"einsum(): invalid subscript given at index {arrow + 2 + i} "
                                   "in the equation string, subscripts must be in [a-zA-Z]")
            i += 1
    return terms, out


def _diagonal(x, labels):
    """Take diagonals until every label occurs once (``ii`` -> the diagonal, as a strided slice
    of the flattened pair: element (k, k) is at k * (n + 1))."""
    while True:
        seen = {}
        pair = None
        for pos, lab in enumerate(labels):
            if lab in seen:
                pair = (seen[lab], pos)
                break
            seen[lab] = pos
        if pair is None:
            return x, labels
        p, q = pair
        others = [d for d in range(x.ndim) if d not in pair]
        n = x.shape[p]
        x = x.permute(others + [p, q])
        x = x.reshape(tuple(x.shape[:-2]) + (n * n,))[..., ::n + 1]
        labels = [labels[d] for d in others] + [labels[p]]


def _sum(x, labels, drop, keep_dtype):
    dims = tuple(i for i, lab in enumerate(labels) if lab in drop)
    if not dims:
        return x, labels
    x = x.sum(dims, dtype=x.dtype) if keep_dtype else x.sum(dims)
    return x, [lab for lab in labels if lab not in drop]


def _contract(a, la, b, lb, keep):
    """The pair's product with labels batch + a-only + b-only (all of them in ``keep``)."""
    shared = [lab for lab in la if lab in lb]
    # a contracted label of size 1 on one side: summing both sides is the same product
    drop = {lab for lab in shared if lab not in keep and
            a.shape[la.index(lab)] != b.shape[lb.index(lab)]}
    drop |= {lab for lab in la if lab not in lb and lab not in keep}
    a, la = _sum(a, la, drop, True)
    drop_b = {lab for lab in shared if lab in drop} | \
        {lab for lab in lb if lab not in la and lab not in keep}
    b, lb = _sum(b, lb, drop_b, True)
    batch = [lab for lab in la if lab in lb and lab in keep]
    contr = [lab for lab in la if lab in lb and lab not in keep]
    aonly = [lab for lab in la if lab not in lb]
    bonly = [lab for lab in lb if lab not in la]
    sa = dict(zip(la, a.shape))
    sb = dict(zip(lb, b.shape))
    bsz = [max(sa[lab], sb[lab]) for lab in batch]
    asz = [sa[lab] for lab in aonly]
    bsz_only = [sb[lab] for lab in bonly]
    a = _permute(a, la, batch + aonly + contr)
    b = _permute(b, lb, batch + contr + bonly)
    if not contr:  # outer / elementwise: a broadcast multiply
        a = a.reshape(tuple(a.shape) + (1,) * len(bonly))
        b = b.reshape(tuple(b.shape[:len(batch)]) + (1,) * len(aonly) +
                      tuple(b.shape[len(batch):]))
        return a * b, batch + aonly + bonly
    ksz = [sa[lab] for lab in contr]
    nb, m, k, n = (int(np.prod(s)) for s in (bsz, asz, ksz, bsz_only))
    if [sa[lab] for lab in batch] != bsz:
        a = a.expand(tuple(bsz) + tuple(a.shape[len(batch):]))
    if [sb[lab] for lab in batch] != bsz:
        b = b.expand(tuple(bsz) + tuple(b.shape[len(batch):]))
    from .linalg_products import bmm
    prod = bmm(a.reshape(nb, m, k), b.reshape(nb, k, n))
    return prod.reshape(tuple(bsz + asz + bsz_only)), batch + aonly + bonly


def _permute(x, labels, order):
    perm = [labels.index(lab) for lab in order]
    return x if perm == list(range(len(perm))) else x.permute(perm)


def einsum(*args):
    if not args:
        raise TypeError("einsum(): must specify the equation string and at least one operand, "
                        "or at least one operand and its subscripts list")
    if isinstance(args[0], Tensor):
        equation, operands = _parse_sublists(args)
    else:
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    if not operands:
        raise ValueError("einsum(): must specify the equation string and at least one operand, "
                         "or at least one operand and its subscripts list")
    for i, op in enumerate(operands):
        if not isinstance(op, Tensor):
            raise TypeError(f"expected Tensor as element {i} in argument 1, but got "
                            f"{parser_type_name(op)}")
    terms, out = _parse(equation, len(operands))

    # the number of dims each ellipsis covers; the broadcast ones are labels 52, 53, ...
    ell = []
    for i, (op, term) in enumerate(zip(operands, terms)):
        n = len([t for t in term if t != _ELL])
        if _ELL in term:
            if n > op.ndim:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) is "
                                   f"more than the number of dimensions ({op.ndim}) for operand "
                                   f"{i}")
            ell.append(op.ndim - n)
        else:
            if n != op.ndim:
                raise RuntimeError(f"einsum(): the number of subscripts in the equation ({n}) "
                                   f"does not match the number of dimensions ({op.ndim}) for "
                                   f"operand {i} and no ellipsis was given")
            ell.append(0)
    n_ell = max(ell)
    ell_labels = list(range(52, 52 + n_ell))

    counts = {}
    for term in terms:
        for t in term:
            if t != _ELL:
                counts[t] = counts.get(t, 0) + 1
    if out is None:
        out_labels = ell_labels + sorted(lab for lab, c in counts.items() if c == 1)
    else:
        out_labels, seen = [], set()
        for t in out:
            if t == _ELL:
                out_labels += ell_labels
                continue
            if t in seen:
                raise RuntimeError(f"einsum(): output subscript {_char(t)} appears more than once "
                                   "in the output")
            if t not in counts:
                raise RuntimeError(f"einsum(): output subscript {_char(t)} does not appear in the "
                                   "equation for any input operand")
            seen.add(t)
            out_labels.append(t)

    # per-operand labels (ellipsis expanded, right-aligned), size checks, diagonals
    ops, sizes = [], {}
    for i, (op, term) in enumerate(zip(operands, terms)):
        labels = []
        for t in term:
            labels += ell_labels[n_ell - ell[i]:] if t == _ELL else [t]
        for pos, lab in enumerate(labels):
            s = op.shape[pos]
            first = labels.index(lab)
            if first != pos and op.shape[first] != s:
                raise RuntimeError(f"einsum(): subscript {_char(lab)} is repeated for operand {i} "
                                   f"but the sizes don't match, {s} != {op.shape[first]}")
            prev = sizes.get(lab)
            if prev is not None and prev != s and prev != 1 and s != 1:
                if lab >= 52:
                    raise RuntimeError(
                        f"einsum(): dimension {lab - 52} covered by ellipsis in operand {i}has "
                        f"size {s} which does not broadcast with previously seen ellipsis with "
                        "size {prev} for the respective dimension".replace("{prev}", str(prev)))
                raise RuntimeError(f"einsum(): subscript {_char(lab)} has size {s} for operand "
                                   f"{i} which does not broadcast with previously seen size "
                                   f"{prev}")
            if prev is None or prev == 1:
                sizes[lab] = s
        ops.append(_diagonal(op, labels))

    out_set = set(out_labels)
    # sum each operand's labels that neither the output nor another operand has
    for i, (x, labels) in enumerate(ops):
        others = set()
        for j, (_, lj) in enumerate(ops):
            if j != i:
                others.update(lj)
        ops[i] = _sum(x, labels, {lab for lab in labels
                                  if lab not in out_set and lab not in others}, len(ops) > 1)
    x, labels = ops[0]
    for j in range(1, len(ops)):
        keep = set(out_set)
        for _, lk in ops[j + 1:]:
            keep.update(lk)
        x, labels = _contract(x, labels, ops[j][0], ops[j][1], keep)
    x, labels = _sum(x, labels, {lab for lab in labels if lab not in out_set}, len(ops) > 1)
    # an output label of size 1 everywhere but broadcast nowhere stays; permute to the output
    return _permute(x, labels, out_labels)
