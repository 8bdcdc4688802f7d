"""The pytrees of ``torch.func``: tuples, lists, dicts (and OrderedDicts, namedtuples) nest;
everything else (a Tensor, a number, None) is a leaf, as in ``torch.utils._pytree``.

``TreeSpec`` prints as PyTorch's does, because the transforms' error messages show it."""
from __future__ import annotations

from collections import OrderedDict

__all__ = ["TreeSpec", "LEAF", "tree_flatten", "tree_unflatten", "tree_map", "treespec_pprint",
           "broadcast_prefix"]


def _is_namedtuple(x) -> bool:
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


class TreeSpec:
    """The shape of a pytree: ``type`` None marks a leaf."""

    __slots__ = ("type", "context", "children")

    def __init__(self, type_, context, children):
        self.type, self.context, self.children = type_, context, tuple(children)

    def is_leaf(self) -> bool:
        return self.type is None

    @property
    def num_leaves(self) -> int:
        return 1 if self.type is None else sum(c.num_leaves for c in self.children)

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type
                and self.context == other.context and self.children == other.children)

    def __hash__(self):
        return hash((self.type, str(self.context), self.children))

    def __repr__(self, indent: int = 0) -> str:
        # PyTorch's TreeSpec.__repr__, character for character
        if self.type is None:
            return "*"
        prefix = f"TreeSpec({self.type.__name__}, {self.context}, ["
        body = ""
        if self.children:
            indent += 2
            body += self.children[0].__repr__(indent)
            body += "," if len(self.children) > 1 else ""
            body += ",".join("\n" + " " * indent + c.__repr__(indent)
                             for c in self.children[1:])
        return prefix + body + "])"


LEAF = TreeSpec(None, None, ())


def _children(x):
    """(type, context, children) of a container, or None for a leaf."""
    if isinstance(x, (list, tuple)) and (type(x) in (list, tuple) or _is_namedtuple(x)):
        return type(x), (type(x) if _is_namedtuple(x) else None), list(x)
    if type(x) in (dict, OrderedDict):
        keys = list(x)
        return type(x), keys, [x[k] for k in keys]
    return None


def tree_flatten(tree):
    leaves = []

    def walk(x):
        node = _children(x)
        if node is None:
            leaves.append(x)
            return LEAF
        type_, context, kids = node
        return TreeSpec(type_, context, [walk(k) for k in kids])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, spec: TreeSpec):
    it = iter(leaves)

    def build(s):
        if s.type is None:
            return next(it)
        kids = [build(c) for c in s.children]
        if s.type in (dict, OrderedDict):
            return s.type(zip(s.context, kids))
        if s.type is list:
            return kids
        if s.type is tuple:
            return tuple(kids)
        return s.type(*kids)  # namedtuple

    return build(spec)


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


class _Star:
    def __repr__(self):
        return "*"


def treespec_pprint(spec: TreeSpec) -> str:
    """PyTorch's ``treespec_pprint``: the tree with ``*`` for each leaf."""
    return repr(tree_unflatten([_Star()] * spec.num_leaves, spec))


def broadcast_prefix(prefix, spec: TreeSpec):
    """The flat list of ``prefix``'s values, one per leaf of ``spec``, where a leaf of
    ``prefix`` stands for a whole subtree (``_broadcast_to_and_flatten``); None when
    ``prefix`` is not a prefix of the tree."""
    out = []

    def walk(p, s):
        node = _children(p)
        if node is None:
            out.extend([p] * s.num_leaves)
            return True
        type_, context, kids = node
        if s.type is None or type_ is not s.type or len(kids) != len(s.children):
            return False
        if type_ in (dict, OrderedDict):
            if set(context) != set(s.context):
                return False
            kids = [p[k] for k in s.context]
        return all(walk(k, c) for k, c in zip(kids, s.children))

    return out if walk(prefix, spec) else None
