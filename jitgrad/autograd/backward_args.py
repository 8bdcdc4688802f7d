"""The arguments of ``backward()``/``autograd.grad()`` as PyTorch checks them: each output's
gradient made or checked (``_make_grads``), the edge each root feeds, the inputs' edges."""
from __future__ import annotations


def _make_grads(outputs, grads, batched=False):
    """PyTorch's ``_make_grads``: check or create the gradient of each output (zip semantics:
    extra gradients are ignored, missing ones are caught by the caller)."""
    from ..ops.basic import full_like
    from ..tensor import Tensor
    new = []
    for i, (out, g) in enumerate(zip(outputs, grads)):
        if not isinstance(out, Tensor):
            raise AssertionError("Expected output to be a torch.Tensor")
        if isinstance(g, Tensor):
            first = g[0] if batched else g
            if tuple(first.shape) != tuple(out.shape):
                gshape = g.shape if batched else first.shape
                if batched:
                    raise RuntimeError(
                        "If `is_grads_batched=True`, we interpret the first dimension of each "
                        "grad_output as the batch dimension. The sizes of the remaining "
                        "dimensions are expected to match the shape of corresponding output, "
                        f"but a mismatch was detected: grad_output[{i}] has a shape of {gshape} "
                        f"and output[{i}] has a shape of {out.shape}. If you only want some "
                        "tensors in `grad_output` to be considered batched, consider using "
                        "vmap.")
                raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                                   f"{gshape} and output[{i}] has a shape of {out.shape}.")
            new.append(g)
        elif g is None:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.is_floating_point():
                    raise RuntimeError("grad can be implicitly created only for real scalar "
                                       f"outputs but got {out.dtype}")
                new.append(full_like(out, 1))
            else:
                new.append(None)
        else:
            raise TypeError("gradients can be either Tensors or None, but got "
                            f"{type(g).__name__}")
    return new


def _root_edges(tensors, grads):
    """The engine's checks on the roots (after _make_grads): the edge each output feeds, and
    its gradient cast to the output's dtype."""
    if len(tensors) != len(grads):
        raise RuntimeError(f"got {len(tensors)} tensors and {len(grads)} gradients")
    edges, out = [], []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        edge = t._edge()
        if edge is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not "
                               "have a grad_fn")
        if g._data.__class__ is not t._data.__class__:
            raise RuntimeError(f"invalid gradient at index {i} - expected device "
                               f"{t.device} but got {g.device}")
        if g.dtype is not t.dtype:
            g = g.to(t.dtype)
        edges.append(edge)
        out.append(g)
    return edges, out


def _as_tuple(x):
    from ..tensor import Tensor
    if isinstance(x, Tensor):
        return (x,)
    return tuple(x)


def _inputs_tuple(inputs, who):
    from collections.abc import Mapping

    from ..tensor import Tensor
    if isinstance(inputs, Tensor):
        return (inputs,)
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(f"`inputs` argument to `{who}()` must be a dict, not "
                        f"{type(inputs).__name__}. Other Mapping types are not supported.")
    return tuple(inputs)


def _input_edge(t, retain):
    from ..tensor import Tensor
    if not isinstance(t, Tensor):
        raise RuntimeError("all inputs have to be Tensors or GradientEdges, but got "
                           f"{type(t).__name__}")
    if retain:
        t.retain_grad()  # PyTorch's backward(inputs=...) makes a non-leaf input retain grad
    edge = t._edge()
    if edge is None:
        raise RuntimeError("One of the differentiated Tensors does not require grad")
    return edge
