"""A released composite node frees the work arrays it kept in ``ctx.attrs`` (as PyTorch frees
saved variables at backward), and a later backward through it raises PyTorch's error."""
import gc
import weakref

import numpy as np
import pytest

import jitgrad

torch = pytest.importorskip("torch", reason="needs PyTorch")


def _array_refs(value, out):
    if isinstance(value, np.ndarray):
        out.append(weakref.ref(value))
    elif isinstance(value, (tuple, list)):
        for v in value:
            _array_refs(v, out)
    return out


def _lstm_graph(lib):
    gen = np.random.default_rng(0)
    lstm = lib.nn.LSTM(3, 4)
    with lib.no_grad():
        for p in lstm.parameters():
            p.copy_(lib.tensor(gen.standard_normal(tuple(p.shape)).astype(np.float32)))
    x = lib.tensor(gen.standard_normal((5, 2, 3)).astype(np.float32), requires_grad=True)
    out, _ = lstm(x)
    return out


def test_lstm_work_arrays_freed_at_backward():
    out = _lstm_graph(jitgrad)
    node = out.grad_fn
    attrs = getattr(getattr(node, "ctx", None), "attrs", None)
    if not attrs or "work" not in attrs:
        pytest.skip("the fused LSTM layer path is not taken here (no MKL GEMM)")
    refs = _array_refs(attrs["work"], [])
    assert refs and all(r() is not None for r in refs)
    out.sum().backward()
    gc.collect()
    # the graph (out -> node) is still alive, its work arrays are not
    assert out.grad_fn is node
    assert all(r() is None for r in refs)
    assert "reverse" in node.ctx.attrs  # plain attributes stay


def test_lstm_second_backward_raises_like_pytorch():
    msgs = {}
    for lib in (jitgrad, torch):
        out = _lstm_graph(lib)
        out.sum().backward()
        with pytest.raises(RuntimeError) as e:
            out.sum().backward()
        msgs[lib.__name__] = str(e.value)
    assert msgs["jitgrad"] == msgs["torch"]


def test_max_dim_indices_freed_and_second_backward_raises():
    # MaxBackward0 saves no tensor, only its indices (a saved variable in PyTorch)
    msgs = {}
    for lib in (jitgrad, torch):
        x = lib.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
        v = x.max(dim=0)[0]  # (the indices tensor would share the node's indices array)
        if lib is jitgrad:
            ref = weakref.ref(v.grad_fn.ctx.attrs["indices"])
        v.sum().backward()
        if lib is jitgrad:
            gc.collect()
            assert ref() is None
        with pytest.raises(RuntimeError) as e:
            v.sum().backward()
        msgs[lib.__name__] = str(e.value)
        assert x.grad.tolist() == [[0.0, 1.0], [1.0, 0.0]]
    assert msgs["jitgrad"] == msgs["torch"]


@pytest.mark.parametrize("op", ["sum", "cat", "expand"])
def test_nodes_without_saved_arrays_run_again(op):
    # PyTorch keeps a node's plain attributes (sizes, dims): backward twice through such a node
    # works without retain_graph, in both libraries
    grads = {}
    for lib in (jitgrad, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        if op == "sum":
            y = x.sum()
        elif op == "cat":
            y = lib.cat([x, x]).sum()
        else:
            y = x.expand(2, 3).sum()
        y.backward()
        y.backward()
        grads[lib.__name__] = x.grad.tolist()
    assert grads["jitgrad"] == grads["torch"]


def test_retain_graph_keeps_work_arrays():
    y = _lstm_graph(jitgrad).sum()
    y.backward(retain_graph=True)
    y.backward()  # the second pass still finds its work arrays
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
