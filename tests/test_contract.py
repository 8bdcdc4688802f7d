"""/work/shared/PYTORCH_CONTRACT.md as tests, plus the PyTorch behaviours the tables imply.

Most tests take the library as a parameter, ``T``: ``jitgrad`` and, when it is installed, real
``torch`` (2.13 CPU). The ``torch`` runs check that the expectations written here are PyTorch's
(every expected value comes from PyTorch or from math, never from jitgrad); the ``jitgrad`` runs
are the tests proper. ``jitgrad.nn`` / ``jitgrad.nn.functional`` rows fail until jitgrad.nn
exists; they are not skipped.
"""

import gc
import math
import re
import sys
import warnings

import numpy as np
import pytest

import jitgrad


def _torch_or_skip():
    return pytest.importorskip("torch")


@pytest.fixture(params=["jitgrad", "torch"])
def T(request):
    """The library under test (``jitgrad``) or the reference (``torch``)."""
    if request.param == "torch":
        return _torch_or_skip()
    return jitgrad


def _F(T):
    return T.nn.functional


def _tname(obj):
    return None if obj is None else type(obj).__name__


def _next_names(fn):
    return tuple(_tname(f) for f, _ in fn.next_functions)


def _drop_triggered(msg):
    """PyTorch appends ``(Triggered internally at <file>:<line>.)`` to C++ warnings."""
    return re.sub(r"\s*\(Triggered internally at [^)]*\)\s*$", "", msg)


# =============================================================================================
# (a) Nodes recorded
# =============================================================================================

AG = "AccumulateGrad"

# (label in the table, expression, grad_fn, next_functions). Names available to expressions:
# torch (the library), F (its nn.functional), nn, x, y (3, 4), v (4,), m (4, 5) requiring grad,
# idx = tensor([0, 2]), tgt = tensor([0, 3, 1]), b5 (5,) requiring grad. A row whose expression
# holds ';' is run as statements and its result is ``out``.
NODE_TABLE = [
    ("x + y", "x + y", "AddBackward0", (AG, AG)),
    ("x + 1", "x + 1", "AddBackward0", (AG, None)),
    ("1 + x", "1 + x", "AddBackward0", (AG, None)),
    ("x - y", "x - y", "SubBackward0", (AG, AG)),
    ("x - 1", "x - 1", "SubBackward0", (AG, None)),
    ("10 - x", "10 - x", "RsubBackward1", (AG,)),
    ("x * y", "x * y", "MulBackward0", (AG, AG)),
    ("2 * x", "2 * x", "MulBackward0", (AG, None)),
    ("x / y", "x / y", "DivBackward0", (AG, AG)),
    ("x / 2", "x / 2", "DivBackward0", (AG, None)),
    ("1 / x", "1 / x", "MulBackward0", ("ReciprocalBackward0", None)),
    ("-x", "-x", "NegBackward0", (AG,)),
    ("x ** 2", "x ** 2", "PowBackward0", (AG,)),
    ("x ** y", "x ** y", "PowBackward1", (AG, AG)),
    ("2 ** x", "2 ** x", "PowBackward2", (AG,)),
    ("x.pow(2)", "x.pow(2)", "PowBackward0", (AG,)),
    ("exp", "torch.exp(x)", "ExpBackward0", (AG,)),
    ("log", "torch.log(x)", "LogBackward0", (AG,)),
    ("sqrt", "torch.sqrt(x)", "SqrtBackward0", (AG,)),
    ("rsqrt", "torch.rsqrt(x)", "RsqrtBackward0", (AG,)),
    ("abs", "torch.abs(x)", "AbsBackward0", (AG,)),
    ("sign", "torch.sign(x)", "SignBackward0", (AG,)),
    ("sin", "torch.sin(x)", "SinBackward0", (AG,)),
    ("cos", "torch.cos(x)", "CosBackward0", (AG,)),
    ("tan", "torch.tan(x)", "TanBackward0", (AG,)),
    ("tanh", "torch.tanh(x)", "TanhBackward0", (AG,)),
    ("sigmoid", "torch.sigmoid(x)", "SigmoidBackward0", (AG,)),
    ("relu", "torch.relu(x)", "ReluBackward0", (AG,)),
    ("F.relu", "F.relu(x)", "ReluBackward0", (AG,)),
    ("leaky_relu", "F.leaky_relu(x)", "LeakyReluBackward0", (AG,)),
    ("gelu", "F.gelu(x)", "GeluBackward0", (AG,)),
    ("softplus", "F.softplus(x)", "SoftplusBackward0", (AG,)),
    ("clamp", "x.clamp(-0.5, 0.5)", "ClampBackward1", (AG,)),
    ("maximum", "torch.maximum(x, y)", "MaximumBackward0", (AG, AG)),
    ("minimum", "torch.minimum(x, y)", "MinimumBackward0", (AG, AG)),
    ("where", "torch.where(x > 0, x, y)", "WhereBackward0", (AG, AG)),
    ("sum()", "x.sum()", "SumBackward0", (AG,)),
    ("sum(dim=1)", "x.sum(dim=1)", "SumBackward1", (AG,)),
    ("mean()", "x.mean()", "MeanBackward0", (AG,)),
    ("mean(dim=0)", "x.mean(dim=0)", "MeanBackward1", (AG,)),
    ("var()", "x.var()", "VarBackward0", (AG,)),
    ("std()", "x.std()", "StdBackward0", (AG,)),
    ("prod()", "x.prod()", "ProdBackward0", (AG,)),
    ("max()", "x.max()", "MaxBackward1", (AG,)),
    ("max(dim=1).values", "x.max(dim=1).values", "MaxBackward0", (AG,)),
    ("amax", "torch.amax(x, dim=1)", "AmaxBackward0", (AG,)),
    ("min()", "x.min()", "MinBackward1", (AG,)),
    ("norm()", "x.norm()", "LinalgVectorNormBackward0", (AG,)),
    ("logsumexp", "torch.logsumexp(x, dim=1)", "LogsumexpBackward0", (AG,)),
    ("x @ m", "x @ m", "MmBackward0", (AG, AG)),
    ("matmul(v, m)", "torch.matmul(v, m)", "SqueezeBackward4", ("MmBackward0",)),
    ("v @ v", "v @ v", "DotBackward0", (AG, AG)),
    ("mm", "torch.mm(x, m)", "MmBackward0", (AG, AG)),
    ("bmm", "torch.bmm(x.unsqueeze(0), m.unsqueeze(0))", "BmmBackward0",
     ("UnsqueezeBackward0", "UnsqueezeBackward0")),
    ("dot", "torch.dot(v, v)", "DotBackward0", (AG, AG)),
    ("outer", "torch.outer(v, v)", "MulBackward0", ("ViewBackward0", AG)),
    ("t()", "x.t()", "TBackward0", (AG,)),
    ("transpose", "x.transpose(0, 1)", "TransposeBackward0", (AG,)),
    ("reshape", "x.reshape(4, 3)", "ViewBackward0", (AG,)),
    ("view", "x.view(12)", "ViewBackward0", (AG,)),
    ("flatten", "x.flatten()", "ViewBackward0", (AG,)),
    ("squeeze", "x.unsqueeze(0).squeeze(0)", "SqueezeBackward1", ("UnsqueezeBackward0",)),
    ("unsqueeze", "x.unsqueeze(0)", "UnsqueezeBackward0", (AG,)),
    ("expand", "v.expand(3, 4)", "ExpandBackward0", (AG,)),
    ("permute", "x.permute(1, 0)", "PermuteBackward0", (AG,)),
    ("cat", "torch.cat([x, y])", "CatBackward0", (AG, AG)),
    ("stack", "torch.stack([x, y])", "StackBackward0", (AG, AG)),
    ("split[0]", "x.split(2)[0]", "SplitBackward0", (AG,)),
    ("x[0]", "x[0]", "SelectBackward0", (AG,)),
    ("x[:, 1:3]", "x[:, 1:3]", "SliceBackward0", (AG,)),
    ("x[idx]", "x[idx]", "IndexBackward0", (AG,)),
    ("x[x>0]", "x[x > 0]", "IndexBackward0", (AG,)),
    ("gather", "x.gather(1, torch.tensor([[0], [1], [2]]))", "GatherBackward0", (AG,)),
    ("index_select", "x.index_select(0, idx)", "IndexSelectBackward0", (AG,)),
    ("masked_fill", "x.masked_fill(x > 0, 0.0)", "MaskedFillBackward0", (AG,)),
    ("softmax", "x.softmax(dim=1)", "SoftmaxBackward0", (AG,)),
    ("log_softmax", "x.log_softmax(dim=1)", "LogSoftmaxBackward0", (AG,)),
    ("clone", "x.clone()", "CloneBackward0", (AG,)),
    ("F.linear", "F.linear(x, m.t(), b5.clone())", "AddmmBackward0",
     ("CloneBackward0", AG, "TBackward0")),
    ("nn.Linear(x)", "nn.Linear(4, 5)(x)", "AddmmBackward0", (AG, AG, "TBackward0")),
    ("mse_loss", "F.mse_loss(x, y)", "MseLossBackward0", (AG, AG)),
    ("cross_entropy", "F.cross_entropy(x, tgt)", "NllLossBackward0", ("LogSoftmaxBackward0",)),
    ("nll_loss", "F.nll_loss(x, tgt)", "NllLossBackward0", (AG,)),
    ("bce_with_logits", "F.binary_cross_entropy_with_logits(x, torch.rand(3, 4))",
     "BinaryCrossEntropyWithLogitsBackward0", (AG, None)),
    ("embedding", "F.embedding(idx, m)", "EmbeddingBackward0", (AG,)),
    ("layer_norm", "F.layer_norm(x, (4,))", "NativeLayerNormBackward0", (AG, None, None)),
    ("dropout(train)", "F.dropout(x, 0.5, training=True)", "MulBackward0", (AG, None)),
    ("y = empty(3); y[0] = x[0,0]**2", "out = torch.empty(3); out[0] = x[0, 0] ** 2",
     "CopySlices", (None, "PowBackward0")),
]

NN_ROWS = {"F.relu", "leaky_relu", "gelu", "softplus", "F.linear", "nn.Linear(x)", "mse_loss",
           "cross_entropy", "nll_loss", "bce_with_logits", "embedding", "layer_norm",
           "dropout(train)"}

_X = np.array([[0.3, -1.2, 0.7, 2.1], [-0.4, 0.9, -2.2, 1.3], [1.1, -0.6, 0.2, -0.8]], np.float32)
_Y = np.array([[1.5, 0.4, -0.9, 0.6], [0.8, -1.3, 0.5, 1.7], [-0.2, 1.9, 0.35, -1.1]], np.float32)
_V = np.array([0.5, -1.5, 2.0, 0.25], np.float32)
_M = np.linspace(-1.0, 1.0, 20, dtype=np.float32).reshape(4, 5)


def _node_env(T, need_nn):
    env = {"torch": T}
    if need_nn:
        env["F"] = T.nn.functional
        env["nn"] = T.nn
    for k, a in (("x", _X), ("y", _Y), ("v", _V), ("m", _M)):
        env[k] = T.tensor(a.copy(), requires_grad=True)
    env["idx"] = T.tensor([0, 2])
    env["tgt"] = T.tensor([0, 3, 1])
    env["b5"] = T.zeros(5, requires_grad=True)
    return env


def _eval_row(T, label, expr):
    env = _node_env(T, label in NN_ROWS)
    if ";" in expr:
        exec(expr.replace("; ", "\n"), env)
        return env["out"], env
    return eval(expr, env), env


@pytest.mark.parametrize("label,expr,fn_name,next_names",
                         [pytest.param(*row, id=row[0]) for row in NODE_TABLE])
def test_node_table(T, label, expr, fn_name, next_names):
    out, env = _eval_row(T, label, expr)
    assert out.requires_grad and not out.is_leaf
    assert type(out.grad_fn).__name__ == fn_name
    assert _next_names(out.grad_fn) == next_names
    # the node answers name() like PyTorch's (CopySlices: "torch::autograd::CopySlices")
    if fn_name != "CopySlices":
        assert out.grad_fn.name() == fn_name
    for f, _ in out.grad_fn.next_functions:
        if f is not None and type(f).__name__ == AG:
            assert f.variable.is_leaf and f.variable.requires_grad
            if label != "nn.Linear(x)":
                assert any(f.variable is env[k] for k in ("x", "y", "v", "m", "b5"))


def test_node_table_is_the_contract():
    """NODE_TABLE holds every row of the contract's node table, with its names."""
    import pathlib
    path = pathlib.Path("/work/shared/PYTORCH_CONTRACT.md")
    if not path.exists():
        pytest.skip("contract not present")
    text = path.read_text().split("## Errors")[0]
    rows = re.findall(r"^\| `(.+?)` \| (\w+) \| \((.*?)\) \|$", text, re.M)
    assert len(rows) == len(NODE_TABLE)
    for (label, fn, nxt), (mine, _, my_fn, my_next) in zip(rows, NODE_TABLE):
        assert label == mine and fn == my_fn
        assert tuple(None if n.strip() == "None" else n.strip() for n in nxt.split(",")) == my_next


@pytest.mark.parametrize("label,expr", [pytest.param(r[0], r[1], id=r[0]) for r in NODE_TABLE])
def test_node_table_gradients_match_torch(label, expr):
    """Backward through every row gives PyTorch's gradients (same inputs; dropout seeded)."""
    torch = _torch_or_skip()
    res = {}
    for lib in (jitgrad, torch):
        lib.manual_seed(0)
        out, env = _eval_row(lib, label, expr)
        w = lib.tensor(np.linspace(0.5, 1.5, out.numel(), dtype=np.float32).reshape(
            tuple(out.shape)))
        out.backward(w)
        res[lib.__name__] = {k: (None if env[k].grad is None else env[k].grad.numpy().copy())
                             for k in ("x", "y", "v", "m")}
        if "empty" not in expr:            # torch.empty's other elements are uninitialised
            res[lib.__name__]["out"] = out.detach().numpy().copy()
    for k, g in res["torch"].items():
        mine = res["jitgrad"][k]
        if g is None:
            assert mine is None, k
        else:
            assert mine is not None and mine.shape == g.shape, k
            np.testing.assert_allclose(mine, g, rtol=2e-5, atol=2e-6, equal_nan=True, err_msg=k)


# =============================================================================================
# (b) Errors
# =============================================================================================

BACKWARD_TWICE = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward.")
INPLACE_VERSION = (
    "one of the variables needed for gradient computation has been modified by an inplace "
    "operation: [torch.FloatTensor [3]], which is output 0 of Add, is at version 1; expected "
    "version 0 instead. Hint: enable anomaly detection to find the operation that failed to "
    "compute its gradient, with torch.autograd.set_detect_anomaly(True, check_nan=False).")
NONLEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad "
    "attribute won't be populated during autograd.backward(). If you indeed want the .grad field "
    "to be populated for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you "
    "access the non-leaf Tensor by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information.")


def e_nonscalar_backward(T):
    x = T.ones(3, requires_grad=True)
    (x * 2).backward()


def e_backward_twice(T):
    x = T.ones(3, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


def e_no_graph(T):
    T.ones(3).sum().backward()


def e_gradient_shape(T):
    x = T.ones(3, requires_grad=True)
    (x * 2).backward(T.ones(4))


def e_inplace_saved(T):
    x = T.ones(3, requires_grad=True)
    a = x + 1
    b = a * a          # saves a
    a.add_(1)
    b.sum().backward()


def e_inplace_leaf(T):
    x = T.ones(3, requires_grad=True)
    x.add_(1)


def e_requires_grad_false_nonleaf(T):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    y.requires_grad = False


def e_int_requires_grad(T):
    T.tensor([1, 2], requires_grad=True)


def e_numpy_requires_grad(T):
    T.ones(3, requires_grad=True).numpy()


def e_item_3(T):
    T.ones(3).item()


def e_broadcast(T):
    return T.ones(3) + T.ones(4)


def e_mm(T):
    T.mm(T.ones(2, 3), T.ones(4, 5))


def e_view(T):
    T.ones(3).view(4)


def e_grad_unused(T):
    x = T.ones(3, requires_grad=True)
    z = T.ones(3, requires_grad=True)
    T.autograd.grad((x * 2).sum(), [x, z])


def e_no_grad_backward(T):
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        y = (x * 2).sum()
    y.backward()


def e_bool(T):
    bool(T.ones(3))


def e_int_var(T):
    T.tensor([1, 2, 3]).var()


def e_int_std(T):
    T.tensor([1, 2, 3]).std(0)


def e_index(T):
    T.ones(3)[5]


ERROR_TABLE = [
    ("nonscalar_backward", e_nonscalar_backward, RuntimeError,
     "grad can be implicitly created only for scalar outputs"),
    ("backward_twice", e_backward_twice, RuntimeError, BACKWARD_TWICE),
    ("no_graph", e_no_graph, RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("gradient_shape", e_gradient_shape, RuntimeError,
     "Mismatch in shape: grad_output[0] has a shape of torch.Size([4]) and output[0] has a shape "
     "of torch.Size([3])."),
    ("inplace_saved", e_inplace_saved, RuntimeError, INPLACE_VERSION),
    ("inplace_leaf", e_inplace_leaf, RuntimeError,
     "a leaf Variable that requires grad is being used in an in-place operation."),
    ("requires_grad_false_nonleaf", e_requires_grad_false_nonleaf, RuntimeError,
     "you can only change requires_grad flags of leaf variables. If you want to use a computed "
     "variable in a subgraph that doesn't require differentiation use var_no_grad = "
     "var.detach()."),
    ("int_requires_grad", e_int_requires_grad, RuntimeError,
     "Only Tensors of floating point and complex dtype can require gradients"),
    ("numpy_requires_grad", e_numpy_requires_grad, RuntimeError,
     "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
    ("item_3", e_item_3, RuntimeError, "a Tensor with 3 elements cannot be converted to Scalar"),
    ("broadcast", e_broadcast, RuntimeError,
     "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"),
    ("mm", e_mm, RuntimeError, "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"),
    ("view", e_view, RuntimeError, "shape '[4]' is invalid for input of size 3"),
    ("grad_unused", e_grad_unused, RuntimeError,
     "The differentiated Tensor at index 1 appears to not have been used in the graph. Set "
     "allow_unused=True if this is the desired behavior."),
    ("no_grad_backward", e_no_grad_backward, RuntimeError,
     "element 0 of tensors does not require grad and does not have a grad_fn"),
    ("bool", e_bool, RuntimeError, "Boolean value of Tensor with more than one value is ambiguous"),
    ("index", e_index, IndexError, "index 5 is out of bounds for dimension 0 with size 3"),
    ("int_var", e_int_var, RuntimeError, "std and var only support floating point and complex "
     "dtypes"),
    ("int_std", e_int_std, RuntimeError, "std and var only support floating point and complex "
     "dtypes"),
]


@pytest.mark.parametrize("name,fn,exc,message", [pytest.param(*r, id=r[0]) for r in ERROR_TABLE])
def test_error_table(T, name, fn, exc, message):
    with pytest.raises(exc) as info:
        fn(T)
    assert type(info.value) is exc
    # jitgrad may say more (e.g. where the op was called), never less
    assert message in str(info.value)


@pytest.mark.parametrize("name,fn,exc,message", [pytest.param(*r, id=r[0]) for r in ERROR_TABLE])
def test_error_message_matches_torch(name, fn, exc, message):
    """Same misuse, same exception type, and torch's whole message inside jitgrad's."""
    torch = _torch_or_skip()
    with pytest.raises(exc) as ref:
        fn(torch)
    with pytest.raises(exc) as mine:
        fn(jitgrad)
    assert type(mine.value) is type(ref.value)
    assert _drop_triggered(str(ref.value)) in str(mine.value)


def test_nonleaf_grad_warning(T):
    x = T.ones(3, requires_grad=True)
    y = x * 2
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert y.grad is None
    assert len(rec) == 1 and rec[0].category is UserWarning
    assert str(rec[0].message).startswith(NONLEAF_GRAD)
    # reported at the user's line, like PyTorch's (stacklevel)
    assert rec[0].filename == __file__
    # leaves and retained non-leaves do not warn
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        assert x.grad is None
        z = x * 3
        z.retain_grad()
        assert z.grad is None
    assert rec == []


def test_nonleaf_grad_warning_matches_torch():
    torch = _torch_or_skip()
    msgs = []
    for lib in (torch, jitgrad):
        x = lib.ones(3, requires_grad=True)
        y = x * 2
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            y.grad  # noqa: B018
        msgs.append(_drop_triggered(str(rec[0].message)))
    assert msgs[0] in msgs[1]


@pytest.mark.parametrize("how", ["attribute", "requires_grad_"])
def test_int_tensor_cannot_require_grad(T, how):
    t = T.tensor([1, 2])
    with pytest.raises(RuntimeError, match="floating point"):
        if how == "attribute":
            t.requires_grad = True
        else:
            t.requires_grad_()
    assert t.requires_grad is False


def test_int_requires_grad_messages_match_torch():
    torch = _torch_or_skip()

    def msgs(lib):
        out = []
        for f in (lambda: lib.tensor([1, 2], requires_grad=True),
                  lambda: setattr(lib.tensor([1, 2]), "requires_grad", True),
                  lambda: lib.tensor([1, 2]).requires_grad_(),
                  lambda: lib.ones(2, dtype=lib.int64, requires_grad=True)):
            with pytest.raises(RuntimeError) as info:
                f()
            out.append(str(info.value))
        return out
    for ref, mine in zip(msgs(torch), msgs(jitgrad)):
        assert ref in mine


def test_failed_backward_leaves_grads_alone(T):
    """Bad input never corrupts state a later call reads."""
    x = T.ones(3, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError):
        y.backward(T.ones(4))
    assert x.grad is None
    y.backward(T.ones(3))          # the graph is still usable
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


# =============================================================================================
# 3. Behaviours the tables imply
# =============================================================================================

# ---- requires_grad / is_leaf / retain_grad -------------------------------------------------

def test_requires_grad_propagation(T):
    a = T.ones(2, requires_grad=True)
    b = T.ones(2)
    assert (a * b).requires_grad and (b * a).requires_grad and (a + 1).requires_grad
    assert not (b * b).requires_grad and (b * b).grad_fn is None
    assert T.ones(2).requires_grad is False
    assert T.tensor([1.0], requires_grad=True).requires_grad is True
    c = a.sum() + b.sum()
    assert c.requires_grad and type(c.grad_fn).__name__ == "AddBackward0"
    assert _next_names(c.grad_fn) == ("SumBackward0", None)


def test_is_leaf(T):
    a = T.ones(2, requires_grad=True)
    b = T.ones(2)
    assert a.is_leaf and b.is_leaf
    assert not (a * 2).is_leaf
    assert (b * 2).is_leaf                 # results that do not require grad are leaves
    assert (a * 2).detach().is_leaf
    with T.no_grad():
        assert (a * 2).is_leaf
    assert a.grad_fn is None


def test_retain_grad(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    assert y.retains_grad is False
    y.retain_grad()
    assert y.retains_grad is True
    (y * y).sum().backward()
    assert y.grad.tolist() == [4.0, 8.0, 12.0]      # d(sum y^2)/dy = 2y
    assert x.grad.tolist() == [8.0, 16.0, 24.0]
    x.retain_grad()                                   # no-op on leaves
    assert x.retains_grad is False


def test_retain_grad_accumulates(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert y.grad.tolist() == [2.0, 2.0]


# ---- .grad accumulation, zero_, .data ------------------------------------------------------

def test_grad_accumulates_across_backward_calls(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    assert x.grad is None
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]
    (x * x).sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]
    (3 * x).sum().backward()
    assert x.grad.tolist() == [7.0, 11.0]
    assert x.grad.requires_grad is False and x.grad.grad_fn is None
    assert x.grad.dtype == T.float32 and tuple(x.grad.shape) == (2,)


def test_grad_accumulates_in_place(T):
    """PyTorch adds into the existing .grad tensor (no create_graph): references see it."""
    x = T.ones(3, requires_grad=True)
    (x * 2).sum().backward()
    g = x.grad
    (x * 3).sum().backward()
    assert x.grad is g
    assert g.tolist() == [5.0, 5.0, 5.0]


def test_grad_zero_(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    g = x.grad
    r = x.grad.zero_()
    assert r is g and x.grad is g
    assert x.grad.tolist() == [0.0, 0.0]
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_grad_data_zero_affects_grad(T):
    x = T.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    (2 * x).sum().backward()
    x.grad.data.zero_()
    assert x.grad.tolist() == [[0.0, 0.0, 0.0, 0.0]]
    (2 * x).sum().backward()
    assert x.grad.tolist() == [[2.0, 2.0, 2.0, 2.0]]


def test_data_shares_storage_and_is_untracked(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    d = x.data
    assert d.requires_grad is False and d.is_leaf and d.grad_fn is None
    d.mul_(10)                       # allowed: not tracked
    assert x.tolist() == [10.0, 20.0]
    assert x.requires_grad


def test_grad_set_to_none_then_backward(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    x.grad = None
    (x * 3).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


# ---- .grad setter validation ----------------------------------------------------------------

def test_grad_setter_accepts_matching_tensor(T):
    x = T.ones(3, requires_grad=True)
    g = T.full((3,), 2.0)
    x.grad = g
    assert x.grad is g
    (x * 1).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 3.0]
    x.grad = None
    assert x.grad is None


def test_grad_setter_wrong_size(T):
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x.grad = T.ones(2)
    assert "attempting to assign a gradient of size '[2]' to a tensor of size '[3]'" in str(
        info.value)
    assert x.grad is None


def test_grad_setter_wrong_dtype(T):
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as info:
        x.grad = T.ones(3, dtype=T.float64)
    assert "attempting to assign a gradient with dtype 'double' to a tensor with grad_dtype " \
           "'Float'" in str(info.value)
    with pytest.raises(RuntimeError) as info:
        x.grad = T.ones(3, dtype=T.int64)
    assert "attempting to assign a gradient with dtype 'long int'" in str(info.value)
    assert x.grad is None


@pytest.mark.parametrize("value", [5, [1.0, 2.0, 3.0]], ids=["int", "list"])
def test_grad_setter_non_tensor(T, value):
    x = T.ones(3, requires_grad=True)
    with pytest.raises(TypeError) as info:
        x.grad = value
    assert str(info.value) == ("assigned grad expected to be a Tensor or None but got grad of "
                               f"type {type(value).__name__}")


def test_grad_setter_messages_match_torch():
    torch = _torch_or_skip()

    def msgs(lib):
        out = []
        for val in (lambda: lib.ones(2), lambda: lib.ones(3, dtype=lib.float64),
                    lambda: lib.ones(3, dtype=lib.int64), lambda: 5):
            x = lib.ones(3, requires_grad=True)
            try:
                x.grad = val()
            except (RuntimeError, TypeError) as e:
                out.append((type(e), str(e)))
            else:
                out.append(None)
        return out
    for ref, mine in zip(msgs(torch), msgs(jitgrad)):
        assert mine is not None and mine[0] is ref[0] and ref[1] in mine[1]


# ---- hooks ------------------------------------------------------------------------------

def test_register_hook_replaces_gradient(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    h = x.register_hook(lambda g: (seen.append(g.tolist()), g * 10)[1])
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0]]
    assert x.grad.tolist() == [20.0, 40.0]
    h.remove()
    x.grad = None
    (x * x).sum().backward()
    assert seen == [[2.0, 4.0]]
    assert x.grad.tolist() == [2.0, 4.0]


def test_hook_on_intermediate_changes_upstream_gradient(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: g * 0 + 1)       # replace dL/dy by ones
    (y * y).sum().backward()                     # dL/dy would be 2y = [6, 12]
    assert x.grad.tolist() == [3.0, 3.0]


def test_hook_returning_none_keeps_gradient_and_order(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    calls = []
    x.register_hook(lambda g: calls.append(("a", g.tolist())))
    x.register_hook(lambda g: (calls.append(("b", g.tolist())), g + 1)[1])
    x.register_hook(lambda g: calls.append(("c", g.tolist())))
    (x * 2).sum().backward()
    assert calls == [("a", [2.0, 2.0]), ("b", [2.0, 2.0]), ("c", [3.0, 3.0])]
    assert x.grad.tolist() == [3.0, 3.0]


def test_register_hook_requires_grad(T):
    with pytest.raises(RuntimeError,
                       match="cannot register a hook on a tensor that doesn't require gradient"):
        T.ones(3).register_hook(lambda g: g)


# ---- grad modes -----------------------------------------------------------------------------

def test_no_grad_context(T):
    x = T.ones(2, requires_grad=True)
    assert T.is_grad_enabled()
    with T.no_grad():
        assert not T.is_grad_enabled()
        y = x * 2
        with T.enable_grad():
            assert T.is_grad_enabled()
            z = x * 2
        assert not T.is_grad_enabled()
    assert T.is_grad_enabled()
    assert y.requires_grad is False and y.grad_fn is None
    assert z.requires_grad is True and type(z.grad_fn).__name__ == "MulBackward0"


def test_no_grad_restores_after_exception(T):
    with pytest.raises(ValueError):
        with T.no_grad():
            raise ValueError
    assert T.is_grad_enabled()


def test_grad_mode_decorators(T):
    x = T.ones(2, requires_grad=True)

    @T.no_grad()
    def f(a):
        return a * 2

    @T.enable_grad()
    def g(a):
        return a * 2

    @T.set_grad_enabled(False)
    def h(a):
        return a * 2

    @T.inference_mode()
    def k(a):
        return a * 2

    assert f(x).requires_grad is False
    assert f.__name__ == "f"
    with T.no_grad():
        assert g(x).requires_grad is True
        assert not T.is_grad_enabled()
    assert h(x).requires_grad is False
    assert k(x).requires_grad is False
    assert T.is_grad_enabled()


def test_no_grad_bare_decorator(T):
    x = T.ones(2, requires_grad=True)

    @T.no_grad
    def f(a):
        return a * 2
    assert f(x).requires_grad is False


def test_set_grad_enabled(T):
    x = T.ones(2, requires_grad=True)
    with T.set_grad_enabled(False):
        assert (x * 2).requires_grad is False
    with T.set_grad_enabled(True):
        assert (x * 2).requires_grad is True
    assert T.is_grad_enabled()
    T.set_grad_enabled(False)          # as a plain call it switches the mode
    try:
        assert not T.is_grad_enabled()
        assert (x * 2).requires_grad is False
    finally:
        T.set_grad_enabled(True)
    assert T.is_grad_enabled()


def test_inference_mode(T):
    x = T.ones(2, requires_grad=True)
    with T.inference_mode():
        assert not T.is_grad_enabled()
        y = x * 2
    assert y.requires_grad is False and y.grad_fn is None
    assert T.is_grad_enabled()
    with T.inference_mode(False):
        assert (x * 2).requires_grad is True


def test_autograd_module_exports_grad_modes(T):
    for name in ("no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "grad",
                 "backward", "Variable", "Function"):
        assert hasattr(T.autograd, name), name
    with T.autograd.no_grad():
        assert not T.is_grad_enabled()


# ---- detach / detach_ / requires_grad_ --------------------------------------------------

def test_detach(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.requires_grad is False and d.grad_fn is None and d.is_leaf
    assert d.tolist() == [2.0, 4.0]
    d[0] = 7.0                         # shares storage with y
    assert y.tolist() == [7.0, 4.0]
    assert x.detach().data_ptr() == x.data_ptr()


def test_detach_shares_version_counter(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    a = x + 1
    b = a * a                  # saves a
    a.detach().mul_(2)         # in-place through the detached alias bumps a's version
    assert a._version == 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        b.sum().backward()


def test_detach_(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    r = y.detach_()
    assert r is y
    assert y.requires_grad is False and y.grad_fn is None and y.is_leaf


def test_requires_grad_(T):
    x = T.tensor([1.0, 2.0])
    r = x.requires_grad_()
    assert r is x and x.requires_grad
    x.requires_grad_(False)
    assert not x.requires_grad
    x.requires_grad = True
    (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_requires_grad_on_nonleaf(T):
    x = T.ones(2, requires_grad=True)
    y = x * 2
    y.requires_grad_(True)         # already True: allowed
    assert y.requires_grad
    z = T.ones(2) * 2              # does not require grad -> it is a leaf and may be switched
    z.requires_grad_()
    assert z.is_leaf and z.requires_grad


# ---- autograd.grad --------------------------------------------------------------------------

def test_autograd_grad_basic(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = (x ** 2).sum()
    (g,) = T.autograd.grad(y, x)
    assert g.tolist() == [2.0, 4.0, 6.0]
    assert x.grad is None                     # grad() does not accumulate into .grad
    assert isinstance(T.autograd.grad((x * 3).sum(), [x]), tuple)


def test_autograd_grad_outputs(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    (g,) = T.autograd.grad(y, x, grad_outputs=T.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 40.0]
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        T.autograd.grad(x * x, x)


def test_autograd_grad_allow_unused(T):
    x = T.ones(2, requires_grad=True)
    z = T.ones(2, requires_grad=True)
    gx, gz = T.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    assert gx.tolist() == [2.0, 2.0] and gz is None


def test_autograd_grad_second_derivative(T):
    x = T.tensor([1.0, 2.0, -3.0], requires_grad=True)
    y = (x ** 3).sum()
    (g,) = T.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad and g.grad_fn is not None
    assert g.tolist() == [3.0, 12.0, 27.0]                   # 3x^2
    (h,) = T.autograd.grad(g.sum(), x)
    assert h.tolist() == [6.0, 12.0, -18.0]                  # 6x


def test_second_derivative_via_backward_create_graph(T):
    x = T.tensor(2.0, requires_grad=True)
    y = x ** 3
    (g,) = T.autograd.grad(y, x, create_graph=True)          # 3x^2 = 12
    g.backward()
    assert x.grad.item() == 12.0                              # d(3x^2)/dx = 6x = 12
    # third derivative of sin: -cos
    x = T.tensor(0.5, requires_grad=True)
    (g1,) = T.autograd.grad(T.sin(x), x, create_graph=True)
    (g2,) = T.autograd.grad(g1, x, create_graph=True)
    (g3,) = T.autograd.grad(g2, x)
    assert g3.item() == pytest.approx(-math.cos(0.5), rel=1e-6)


def test_autograd_grad_frees_graph(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    T.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        T.autograd.grad(y, x)


def test_autograd_backward_function(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    T.autograd.backward([(x * x).sum()])
    assert x.grad.tolist() == [2.0, 4.0]
    T.autograd.backward(x * 3, grad_tensors=T.ones(2))
    assert x.grad.tolist() == [5.0, 7.0]


# ---- backward(inputs=...), retain_graph --------------------------------------------------

def test_backward_inputs(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    w = T.tensor([3.0, 4.0], requires_grad=True)
    loss = (x * w).sum()
    loss.backward(inputs=[w])
    assert w.grad.tolist() == [1.0, 2.0]
    assert x.grad is None
    loss = (x * w).sum()
    loss.backward(inputs=x)
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad.tolist() == [1.0, 2.0]


def test_backward_inputs_nonleaf(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    (y * y).sum().backward(inputs=[y])
    assert y.grad.tolist() == [4.0, 8.0]
    assert x.grad is None


def test_retain_graph_reruns(T):
    x = T.tensor([2.0, 3.0], requires_grad=True)
    y = (x ** 2).sum()
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [12.0, 18.0]
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_graph_without_saved_tensors_can_rerun(T):
    """Backward twice is fine when no node saved a tensor (PyTorch: x + y, sum)."""
    x = T.ones(2, requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_long_chain_backward_no_recursion(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x
    n = 100_000
    for _ in range(n):
        y = y + 1.0
    limit = sys.getrecursionlimit()
    y.sum().backward()
    assert sys.getrecursionlimit() == limit
    assert x.grad.tolist() == [1.0, 1.0]
    assert y.tolist() == [1.0 + n, 2.0 + n]
    del y
    gc.collect()               # freeing a 100k-node graph must not recurse either


def test_long_chain_delete_without_backward(T):
    x = T.ones(1, requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y * 1.0
    del y
    gc.collect()


# ---- in-place ops and versions ----------------------------------------------------------

def test_inplace_bumps_version(T):
    x = T.ones(3)
    assert x._version == 0
    x.add_(1)
    assert x._version == 1
    x[0] = 5.0
    assert x._version == 2
    x.zero_()
    assert x._version == 3
    x.mul_(2).add_(1)
    assert x._version == 5
    v = x[1:]
    v.fill_(2.0)                       # views share the version counter
    assert x._version == 6 and v._version == 6
    assert x.tolist() == [1.0, 2.0, 2.0]
    y = x + 1
    assert y._version == 0


def test_inplace_version_error_message(T):
    with pytest.raises(RuntimeError) as info:
        e_inplace_saved(T)
    assert INPLACE_VERSION in str(info.value)


def test_inplace_on_unsaved_input_is_fine(T):
    x = T.ones(3, requires_grad=True)
    a = x + 1
    b = a + 2          # AddBackward0 saves nothing
    a.add_(1)
    b.sum().backward()
    assert x.grad.tolist() == [1.0, 1.0, 1.0]


def test_inplace_on_nonleaf_is_recorded(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    y.mul_(3)
    assert type(y.grad_fn).__name__ == "MulBackward0"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_inplace_leaf_requires_grad_raises(T):
    x = T.ones(3, requires_grad=True)
    for op in (lambda: x.add_(1), lambda: x.mul_(2), lambda: x.zero_(),
               lambda: x.__setitem__(0, 2.0), lambda: x.fill_(1.0)):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used "
                                               "in an in-place operation."):
            op()
    assert x.tolist() == [1.0, 1.0, 1.0] and x._version == 0


def test_inplace_leaf_allowed_under_no_grad(T):
    x = T.ones(3, requires_grad=True)
    with T.no_grad():
        x.add_(1)
        x[0] = 7.0
    assert x.tolist() == [7.0, 2.0, 2.0] and x.is_leaf and x.requires_grad
    (x * x).sum().backward()
    assert x.grad.tolist() == [14.0, 4.0, 4.0]


def test_iadd_operator(T):
    x = T.ones(2)
    ident = id(x)
    x += 1
    assert id(x) == ident and x._version == 1 and x.tolist() == [2.0, 2.0]
    w = T.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w += 1


# ---- NumPy interop ------------------------------------------------------------------------

def test_numpy_shares_memory(T):
    t = T.ones(3)
    a = t.numpy()
    assert isinstance(a, np.ndarray) and a.dtype == np.float32
    a[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 1.0]
    t.add_(1)
    assert a.tolist() == [6.0, 2.0, 2.0]
    d = T.ones(2, requires_grad=True).detach().numpy()
    assert d.tolist() == [1.0, 1.0]


def test_from_numpy_shares_memory(T):
    a = np.array([1.0, 2.0, 3.0])
    t = T.from_numpy(a)
    assert t.dtype == T.float64
    a[0] = 10.0
    assert t[0].item() == 10.0
    t.mul_(2)
    assert a.tolist() == [20.0, 4.0, 6.0]
    assert t.requires_grad is False
    t.requires_grad = True
    assert t.is_leaf
    i = T.from_numpy(np.arange(3))
    assert i.dtype == T.int64


def test_tensor_copies_numpy(T):
    a = np.array([1.0, 2.0], dtype=np.float32)
    t = T.tensor(a)
    a[0] = 9.0
    assert t.tolist() == [1.0, 2.0]


# ---- dtype promotion ----------------------------------------------------------------------

def _promo_cases(T):
    i = T.tensor([1, 2, 3])
    f = T.tensor([1.0, 2.0, 3.0])
    d = T.tensor([1.0, 2.0, 3.0], dtype=T.float64)
    b = T.tensor([True, False, True])
    i32 = T.tensor([1, 2, 3], dtype=T.int32)
    u8 = T.tensor([1, 2, 3], dtype=T.uint8)
    return [
        ("int + 2.5", lambda: i + 2.5, T.float32, [3.5, 4.5, 5.5]),
        ("int + float64 0-d", lambda: i + T.tensor(2.5, dtype=T.float64), T.float64,
         [3.5, 4.5, 5.5]),
        ("float32 + float64 0-d", lambda: f + T.tensor(2.5, dtype=T.float64), T.float32,
         [3.5, 4.5, 5.5]),
        ("float32 + float64", lambda: f + d, T.float64, [2.0, 4.0, 6.0]),
        ("bool + int", lambda: b + i, T.int64, [2, 2, 4]),
        ("bool + 1", lambda: b + 1, T.int64, [2, 1, 2]),
        ("bool + True", lambda: b + True, T.bool, [True, True, True]),
        ("bool + 1.5", lambda: b + 1.5, T.float32, [2.5, 1.5, 2.5]),
        ("int / int", lambda: i / i, T.float32, [1.0, 1.0, 1.0]),
        ("int // 2", lambda: i // 2, T.int64, [0, 1, 1]),
        ("int * 2", lambda: i * 2, T.int64, [2, 4, 6]),
        ("int32 + int64", lambda: i32 + i, T.int64, [2, 4, 6]),
        ("int32 + 2", lambda: i32 + 2, T.int32, [3, 4, 5]),
        ("int32 + int64 0-d", lambda: i32 + T.tensor(2), T.int32, [3, 4, 5]),
        ("uint8 + int32", lambda: u8 + i32, T.int32, [2, 4, 6]),
        ("uint8 - 1", lambda: u8 - 1, T.uint8, [0, 1, 2]),
        ("int < 2", lambda: i < 2, T.bool, [True, False, False]),
        ("float == float", lambda: f == f, T.bool, [True, True, True]),
        ("int > float", lambda: i > f, T.bool, [False, False, False]),
        ("int ** 2", lambda: i ** 2, T.int64, [1, 4, 9]),
        ("2 ** int", lambda: 2 ** i, T.int64, [2, 4, 8]),
        ("2.0 ** int", lambda: 2.0 ** i, T.float32, [2.0, 4.0, 8.0]),
        ("int.sum()", lambda: i.sum(), T.int64, 6),
        ("bool.sum()", lambda: b.sum(), T.int64, 2),
        ("int.sqrt()", lambda: T.tensor([1, 4, 9]).sqrt(), T.float32, [1.0, 2.0, 3.0]),
        ("where(bool, int, 2.5)", lambda: T.where(b, i, 2.5), T.float32, [1.0, 2.5, 3.0]),
        ("int * np.float64", lambda: i * np.float64(2), T.float32, [2.0, 4.0, 6.0]),
        ("float32 * np.float64", lambda: f * np.float64(2), T.float32, [2.0, 4.0, 6.0]),
        ("int + float32", lambda: i + f, T.float32, [2.0, 4.0, 6.0]),
        ("tensor(2.5)", lambda: T.tensor(2.5), T.float32, 2.5),
        ("tensor(2)", lambda: T.tensor(2), T.int64, 2),
        ("tensor(True)", lambda: T.tensor(True), T.bool, True),
        ("tensor([1, 2.])", lambda: T.tensor([1, 2.0]), T.float32, [1.0, 2.0]),
        ("arange(3)", lambda: T.arange(3), T.int64, [0, 1, 2]),
        ("arange(3.)", lambda: T.arange(3.0), T.float32, [0.0, 1.0, 2.0]),
    ]


_PROMO_IDS = [c[0] for c in _promo_cases(jitgrad)]


@pytest.mark.parametrize("case", range(len(_PROMO_IDS)), ids=_PROMO_IDS)
def test_dtype_promotion(T, case):
    _, fn, dtype, values = _promo_cases(T)[case]
    r = fn()
    assert r.dtype == dtype
    assert r.tolist() == values


@pytest.mark.parametrize("dt", ["float16"])
def test_half_arithmetic(T, dt):
    h = T.tensor([1.0, 2.0, 3.0], dtype=getattr(T, dt))
    r = h + 1.5
    assert r.dtype == getattr(T, dt) and r.tolist() == [2.5, 3.5, 4.5]
    assert (h + T.tensor([1.0, 1.0, 1.0])).dtype == T.float32


def test_float64_gradients_keep_dtype(T):
    x = T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)
    (x * x).sum().backward()
    assert x.grad.dtype == T.float64
    y = T.tensor([1.0, 2.0], requires_grad=True)
    (y * T.tensor([1.0, 1.0], dtype=T.float64)).sum().backward()
    assert y.grad.dtype == T.float32            # gradient is cast back to the input's dtype


# ---- repr / str / format ------------------------------------------------------------------

def test_tensor_repr(T):
    x = T.tensor(2.0, requires_grad=True)
    assert repr(x) == "tensor(2., requires_grad=True)"
    y = x * 2
    assert repr(y) == "tensor(4., grad_fn=<MulBackward0>)"
    v = T.tensor([1.0, 2.0], requires_grad=True)
    assert repr(v * 2) == "tensor([2., 4.], grad_fn=<MulBackward0>)"
    assert repr((v * 2).sum()) == "tensor(6., grad_fn=<SumBackward0>)"
    assert repr(v[0]) == "tensor(1., grad_fn=<SelectBackward0>)"
    assert repr(T.tensor([1.5, 2.0])) == "tensor([1.5000, 2.0000])"
    assert repr(T.tensor([1.0, 2.0], dtype=T.float64)) == "tensor([1., 2.], dtype=torch.float64)"
    assert repr(T.tensor([1.0, 2.0], dtype=T.float64, requires_grad=True)) == \
        "tensor([1., 2.], dtype=torch.float64, requires_grad=True)"
    assert repr(T.tensor([1, 2])) == "tensor([1, 2])"
    assert repr(T.tensor([1, 2], dtype=T.int32)) == "tensor([1, 2], dtype=torch.int32)"
    assert repr(T.tensor([True, False])) == "tensor([ True, False])"
    assert repr(T.ones(2, 2, requires_grad=True)) == \
        "tensor([[1., 1.],\n        [1., 1.]], requires_grad=True)"
    assert repr(T.zeros(0)) == "tensor([])"
    assert repr(T.tensor([1e-8, 1.0])) == "tensor([1.0000e-08, 1.0000e+00])"
    assert str(T.tensor([1.0, 2.0])) == "tensor([1., 2.])"
    with T.no_grad():
        assert repr(v * 2) == "tensor([2., 4.])"


def test_grad_fn_repr(T):
    y = T.ones(2, requires_grad=True) * 2
    assert re.fullmatch(r"<MulBackward0 object at 0x[0-9a-f]+>", repr(y.grad_fn))
    acc = y.grad_fn.next_functions[0][0]
    assert re.fullmatch(r"<AccumulateGrad object at 0x[0-9a-f]+>", str(acc))


def test_size_repr(T):
    assert repr(T.Size([2, 3])) == "torch.Size([2, 3])"
    assert str(T.Size([])) == "torch.Size([])"
    assert repr(T.ones(5).shape) == "torch.Size([5])"
    s = T.ones(2, 3).size()
    assert isinstance(s, tuple) and s == (2, 3) and s[1] == 3
    assert T.ones(2, 3).size(1) == 3 and T.ones(2, 3).shape[-1] == 3
    assert f"{T.ones(2, 3).shape}" == "torch.Size([2, 3])"
    assert repr(T.ones(2, 3).shape[:1]) == "torch.Size([2])"


def test_zero_dim_format(T):
    assert f"{T.tensor(2.5)}" == "2.5"
    assert f"{T.tensor(2.5):.2f}" == "2.50"
    assert f"{T.tensor(1 / 3)}" == "0.3333333432674408"          # float32 -> Python float
    assert f"{T.tensor(1 / 3, dtype=T.float64)}" == "0.3333333333333333"
    assert f"{T.tensor(0.1)}" == "0.10000000149011612"
    assert f"{T.tensor(3)}" == "3"
    assert f"{T.tensor(True)}" == "True"
    assert f"{T.tensor(2.5, requires_grad=True)}" == "2.5"
    assert f"{T.tensor([1.5])}" == "tensor([1.5000])"
    with pytest.raises(TypeError, match="unsupported format string passed to Tensor.__format__"):
        f"{T.tensor([1.5]):.2f}"
    x = T.tensor(1.0, requires_grad=True)
    (x * 1.2).backward()
    assert f"{x.grad}" == "1.2000000476837158"


def test_item_and_tolist_types(T):
    assert type(T.tensor(2.5).item()) is float
    assert type(T.tensor(2).item()) is int
    assert type(T.tensor(True).item()) is bool
    assert T.tensor([1.5]).item() == 1.5
    assert T.tensor([[1, 2]]).tolist() == [[1, 2]]
    assert float(T.tensor(2.5)) == 2.5 and int(T.tensor(3.7)) == 3


# ---- more behaviours users rely on ----------------------------------------------------------

def test_leaf_hook_sees_summed_gradient_once(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    (x * 2 + x * x).sum().backward()           # two paths into x
    assert seen == [[4.0, 6.0]]                # 2 + 2x, once
    assert x.grad.tolist() == [4.0, 6.0]


def test_nonleaf_hook_sees_summed_gradient_once(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y * 3 + y).sum().backward()
    assert seen == [[4.0, 4.0]]


def test_comparisons_and_int_results_do_not_require_grad(T):
    x = T.tensor([1.0, -2.0], requires_grad=True)
    for r in (x > 0, x == x, x.argmax(), (x > 0).sum()):
        assert r.requires_grad is False and r.grad_fn is None


def test_backward_scalar_with_explicit_gradient(T):
    x = T.tensor(3.0, requires_grad=True)
    (x * x).backward(T.tensor(2.0))
    assert x.grad.item() == 12.0
    y = T.tensor([3.0], requires_grad=True)
    (y * y).backward()                          # one element, shape (1,): implicit gradient allowed
    assert y.grad.tolist() == [6.0]


def test_backward_create_graph_makes_grad_differentiable(T):
    x = T.tensor([1.0, 2.0], requires_grad=True)
    (x ** 3).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.grad_fn is not None
    assert x.grad.tolist() == [3.0, 12.0]
    g = x.grad
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_inplace_on_view_of_leaf_raises(T):
    x = T.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError,
                       match="a view of a leaf Variable that requires grad is being used in an "
                             "in-place operation."):
        x[:2].mul_(2)


def test_inplace_on_view_of_nonleaf_is_recorded(T):
    x = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[:2].mul_(3)
    assert type(y.grad_fn).__name__ == "CopySlices"
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0, 1.0]


def test_item_tolist_on_requires_grad(T):
    x = T.tensor([1.5, 2.5], requires_grad=True)
    assert x.tolist() == [1.5, 2.5]
    assert x[0].item() == 1.5
    assert (x * 2).sum().item() == 8.0


def test_grad_of_tensor_not_requiring_grad_is_none(T):
    a = T.ones(2)
    b = T.ones(2, requires_grad=True)
    (a * b).sum().backward()
    assert a.grad is None
    assert b.grad.tolist() == [1.0, 1.0]


def test_setting_data(T):
    x = T.ones(2, requires_grad=True)
    x.data = T.tensor([5.0, 6.0])
    assert x.tolist() == [5.0, 6.0] and x.requires_grad and x.is_leaf
    (x * x).sum().backward()
    assert x.grad.tolist() == [10.0, 12.0]


def test_variable_and_floattensor_legacy(T):
    from_var = T.autograd.Variable(T.FloatTensor([1.0, 2.0]), requires_grad=True)
    assert isinstance(from_var, T.Tensor) and from_var.requires_grad and from_var.is_leaf
    assert T.FloatTensor([1, 2]).dtype == T.float32
    assert T.LongTensor([1, 2]).dtype == T.int64
    assert isinstance(T.ones(2), T.FloatTensor)
    assert not isinstance(T.ones(2, dtype=T.float64), T.FloatTensor)
    assert T.Tensor([1, 2]).dtype == T.float32
    assert T.Tensor(2, 3).shape == (2, 3)
    assert T.autograd.Variable(T.ones(2)).requires_grad is False


def test_expand_and_broadcast_gradients_reduce(T):
    b = T.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x = T.ones(4, 3)
    (x * b).sum().backward()
    assert b.grad.tolist() == [4.0, 4.0, 4.0]
    s = T.tensor(2.0, requires_grad=True)
    (x * s).sum().backward()
    assert s.grad.item() == 12.0 and tuple(s.grad.shape) == ()


@pytest.mark.parametrize("label,expr", [pytest.param(r[0], r[1], id=r[0]) for r in NODE_TABLE
                                        if "empty" not in r[1]])
def test_node_table_values_print_like_torch(label, expr):
    """Same inputs, same printed result (values to 4 decimals, grad_fn, formatting)."""
    torch = _torch_or_skip()
    reprs = []
    for lib in (torch, jitgrad):
        lib.manual_seed(0)
        out, _ = _eval_row(lib, label, expr)
        reprs.append(repr(out))
    assert reprs[1] == reprs[0]


def test_relu_of_negative_is_positive_zero(T):
    """PyTorch's relu gives +0.0 for negative inputs (prints ``0.``, not ``-0.``)."""
    r = T.relu(T.tensor([-1.5, 0.0, 2.0]))
    assert repr(r) == "tensor([0., 0., 2.])"
    assert not np.signbit(r.numpy()).any()


def test_bce_with_logits_large_logits_is_silent_and_finite(T):
    x = T.tensor([-100.0, 100.0, 0.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loss = _F(T).binary_cross_entropy_with_logits(x, T.tensor([1.0, 0.0, 1.0]))
        loss.backward()
    # mean of softplus(-100), softplus(100), softplus(0) = (100 + 100 + ln 2) / 3
    assert loss.item() == pytest.approx((200 + math.log(2)) / 3, rel=1e-6)
    assert x.grad.tolist() == pytest.approx([-1 / 3, 1 / 3, -1 / 6], rel=1e-6)


def test_cross_entropy_ignore_index_prints_like_torch(T):
    x = T.tensor([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]], requires_grad=True)
    _F(T).cross_entropy(x, T.tensor([2, -100])).backward()
    assert repr(x.grad[1]) == "tensor([0., 0., 0.])"


@pytest.mark.parametrize("conv", [float, int, bool], ids=["float", "int", "bool"])
def test_python_scalar_conversion_of_multi_element(T, conv):
    """``float(t)`` / ``int(t)`` raise ValueError (what user code catches); ``bool(t)``
    raises RuntimeError (error table)."""
    exc = RuntimeError if conv is bool else ValueError
    msg = ("Boolean value of Tensor with more than one value is ambiguous" if conv is bool
           else "only one element tensors can be converted to Python scalars")
    with pytest.raises(exc, match=re.escape(msg)):
        conv(T.ones(3))


def test_index_into_zero_dim(T):
    with pytest.raises(IndexError, match=re.escape("invalid index of a 0-dim tensor. Use "
                                                   "`tensor.item()` in Python")):
        T.tensor(1.0)[0]


def _capture_events(T):
    """What runs, and what lands in .grad, for autograd.grad / backward(inputs=) on a non-leaf."""
    events = []
    a = T.ones(3, requires_grad=True)
    x = a * 2
    x.grad_fn.register_hook(lambda gi, go: events.append("grad: MulBackward0 ran"))
    events.append(("grad", T.autograd.grad(x.exp().sum(), x)[0].tolist(), a.grad))
    a = T.ones(3, requires_grad=True)
    x = a * 2
    x.retain_grad()
    x.grad_fn.register_hook(lambda gi, go: events.append("backward: MulBackward0 ran"))
    x.exp().sum().backward(inputs=[x])
    events.append(("backward", x.grad.tolist(), a.grad))
    a = T.ones(3, requires_grad=True)
    (a * 2 * a).sum().backward(inputs=[a])
    events.append(("leaf", a.grad.tolist()))
    return events


def test_grad_and_backward_inputs_run_what_torch_runs():
    """autograd.grad does not execute the input's own node; backward(inputs=) does (its hooks
    fire) without going further, and a retained non-leaf gradient is stored once."""
    torch = _torch_or_skip()
    mine, ref = _capture_events(jitgrad), _capture_events(torch)
    assert [e if isinstance(e, str) else e[:2] for e in mine] == \
        [e if isinstance(e, str) else e[:2] for e in ref]
    assert mine[0][2] is None and ref[0][2] is None


def test_grad_through_a_fused_chain_reaches_leaf_and_non_leaf_inputs():
    """autograd.grad where the path to the inputs is an elementwise chain the fusion planner
    turns into one kernel: the gradients at the chain's exit edges are still captured."""
    torch = _torch_or_skip()
    data = np.linspace(-1.0, 1.0, 12).reshape(3, 4)
    out = []
    for T in (jitgrad, torch):
        b = T.tensor(data, requires_grad=True)
        h = b * 3
        loss = ((h - b * 2).exp() * h).tanh().mean()
        out.append([g.detach().numpy() for g in T.autograd.grad(loss, [b, h])])
    for mine, ref in zip(*out):
        np.testing.assert_allclose(mine, ref, rtol=1e-10, atol=1e-15)


def _returns_no_gradient(T):
    class NoGrad(T.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return None

    return NoGrad


@pytest.mark.parametrize("path", ["direct", "through_ops", "plus_other_path"])
def test_a_backward_returning_none_stops_the_gradient(T, path):
    """An undefined gradient flows nowhere: nodes below it don't run, a leaf's .grad stays."""
    NoGrad = _returns_no_gradient(T)
    x = T.ones(3, requires_grad=True)
    y = {"direct": lambda: NoGrad.apply(x),
         "through_ops": lambda: NoGrad.apply(x.exp().sin() * 3),
         "plus_other_path": lambda: NoGrad.apply(x * 3) + x}[path]()
    y.sum().backward()
    if path == "plus_other_path":
        assert x.grad.tolist() == [1.0, 1.0, 1.0]
    else:
        assert x.grad is None
    assert T.autograd.grad(NoGrad.apply(x * 3).sum(), x, allow_unused=True) == (None,)
    z = T.autograd.grad(NoGrad.apply(x * 3).sum(), x, allow_unused=True, materialize_grads=True)
    assert z[0].tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        T.autograd.grad(NoGrad.apply(x * 3).sum(), x)
