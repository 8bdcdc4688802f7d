"""nn.Module, Parameter and containers: registration, traversal, modes, conversion, printing,
state dicts, and forward / backward hooks."""
import math
import warnings
from collections import OrderedDict

import numpy as np
import pytest

import jitgrad as jt
import jitgrad.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 3)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(3, 2, bias=False)
        self.register_buffer("running", jt.zeros(2))
        self.register_buffer("scratch", jt.ones(1), persistent=False)
        self.scale = nn.Parameter(jt.ones(1))

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x))) * self.scale + self.running


# ----------------------------------------------------------------------------- Parameter


def test_parameter_is_a_leaf_tensor_with_grad():
    p = nn.Parameter(jt.tensor([1.0, 2.0]))
    assert isinstance(p, jt.Tensor) and isinstance(p, nn.Parameter)
    assert p.requires_grad and p.is_leaf and p.grad_fn is None
    assert repr(p) == "Parameter containing:\ntensor([1., 2.], requires_grad=True)"
    q = nn.Parameter(jt.zeros(2), requires_grad=False)
    assert not q.requires_grad
    assert type(p * 2) is jt.Tensor
    assert tuple(nn.Parameter().shape) == (0,)


def test_parameter_shares_storage_with_its_tensor():
    t = jt.zeros(3)
    p = nn.Parameter(t)
    with jt.no_grad():
        p.add_(1)
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])


# ----------------------------------------------------------------------------- registration


def test_registration_and_traversal_order():
    net = Net()
    assert [n for n, _ in net.named_parameters()] == ["scale", "fc1.weight", "fc1.bias",
                                                      "fc2.weight"]
    assert [n for n, _ in net.named_buffers()] == ["running", "scratch"]
    assert [n for n, _ in net.named_children()] == ["fc1", "act", "fc2"]
    assert [n for n, _ in net.named_modules()] == ["", "fc1", "act", "fc2"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert list(net.state_dict().keys()) == ["scale", "running", "fc1.weight", "fc1.bias",
                                             "fc2.weight"]
    assert net.fc2.bias is None
    assert net.get_submodule("fc1") is net.fc1
    assert net.get_parameter("fc1.bias") is net.fc1.bias


def test_shared_modules_and_parameters_are_listed_once():
    lin = nn.Linear(2, 2)
    seq = nn.Sequential(lin, lin)
    assert len(list(seq.parameters())) == 2
    assert len(list(seq.modules())) == 2
    assert len(list(seq.named_modules(remove_duplicate=False))) == 3


def test_setattr_rules_and_errors():
    net = Net()
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' as parameter "
                                        "'scale' \\(torch.nn.Parameter or None expected\\)"):
        net.scale = jt.ones(1)
    net.scale = None
    assert net.scale is None and "scale" not in dict(net.named_parameters())
    with pytest.raises(TypeError, match="cannot assign 'int' as child module 'fc1'"):
        net.fc1 = 3
    net.running = jt.ones(2)  # a tensor assigned to a buffer name stays a buffer
    assert "running" in dict(net.named_buffers())
    with pytest.raises(KeyError, match="attribute 'fc1' already exists"):
        net.register_buffer("fc1", jt.zeros(1))
    with pytest.raises(KeyError, match="parameter name can"):
        net.register_parameter("a.b", nn.Parameter(jt.zeros(1)))
    with pytest.raises(AttributeError, match="'Net' object has no attribute 'nope'"):
        net.nope  # noqa: B018

    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(jt.zeros(1))

    with pytest.raises(AttributeError, match="cannot assign parameters before "
                                             "Module.__init__\\(\\) call"):
        Early()
    del net.fc1
    assert "fc1" not in net._modules


def test_non_leaf_parameter_rejected():
    m = nn.Module()
    p = nn.Parameter(jt.ones(2))
    with pytest.raises(TypeError, match="cannot assign 'torch.FloatTensor' object to parameter"):
        m.register_parameter("x", p * 2)


# ----------------------------------------------------------------------------- modes


def test_train_eval_and_requires_grad():
    net = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.5))
    assert net.training and net[1].training
    net.eval()
    assert not net.training and not net[1].training
    x = jt.ones(3, 2)
    np.testing.assert_array_equal(net[1](x).numpy(), x.numpy())
    net.train()
    assert net[1].training
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train(1)
    net.requires_grad_(False)
    assert not any(p.requires_grad for p in net.parameters())


def test_zero_grad():
    lin = nn.Linear(3, 2)
    lin(jt.randn(4, 3)).sum().backward()
    assert lin.weight.grad is not None
    lin.zero_grad(set_to_none=False)
    np.testing.assert_array_equal(lin.weight.grad.numpy(), np.zeros((2, 3)))
    lin.zero_grad()
    assert lin.weight.grad is None and lin.bias.grad is None


def test_to_dtype_keeps_parameter_objects():
    lin = nn.Linear(3, 2)
    w = lin.weight
    before = w.detach().numpy().astype(np.float64)
    assert lin.to(jt.float64) is lin
    assert lin.weight is w and lin.weight.dtype is jt.float64
    np.testing.assert_array_equal(lin.weight.detach().numpy(), before)
    assert lin(jt.randn(2, 3, dtype=jt.float64)).dtype is jt.float64
    lin.float()
    assert lin.weight.dtype is jt.float32
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point"):
        lin.to(jt.int64)
    assert lin.to("cpu") is lin


# ----------------------------------------------------------------------------- printing


def test_reprs_match_pytorch():
    assert repr(nn.Linear(100, 2)) == "Linear(in_features=100, out_features=2, bias=True)"
    model = nn.Sequential(
        nn.Linear(4, 3), nn.ReLU(),
        nn.Sequential(OrderedDict([("inner", nn.Linear(3, 3, bias=False)),
                                   ("act", nn.GELU())])),
        nn.LayerNorm(3), nn.Dropout(0.1), nn.Softmax(dim=1), nn.Flatten(),
        nn.Embedding(10, 3, padding_idx=0), nn.Identity(), nn.Tanh(), nn.Sigmoid(),
        nn.LogSoftmax(dim=-1), nn.CrossEntropyLoss(), nn.MSELoss(), nn.BCEWithLogitsLoss(),
    )
    expected = """Sequential(
  (0): Linear(in_features=4, out_features=3, bias=True)
  (1): ReLU()
  (2): Sequential(
    (inner): Linear(in_features=3, out_features=3, bias=False)
    (act): GELU(approximate='none')
  )
  (3): LayerNorm((3,), eps=1e-05, elementwise_affine=True, bias=True)
  (4): Dropout(p=0.1, inplace=False)
  (5): Softmax(dim=1)
  (6): Flatten(start_dim=1, end_dim=-1)
  (7): Embedding(10, 3, padding_idx=0)
  (8): Identity()
  (9): Tanh()
  (10): Sigmoid()
  (11): LogSoftmax(dim=-1)
  (12): CrossEntropyLoss()
  (13): MSELoss()
  (14): BCEWithLogitsLoss()
)"""
    assert repr(model) == expected
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)] + [nn.ReLU(inplace=True)])
    assert repr(ml) == ("ModuleList(\n  (0-2): 3 x Linear(in_features=2, out_features=2, "
                        "bias=True)\n  (3): ReLU(inplace=True)\n)")


def test_reprs_identical_to_torch():
    torch = pytest.importorskip("torch")

    def build(lib):
        n = lib.nn
        return n.Sequential(n.Linear(5, 4), n.LeakyReLU(0.2), n.Softplus(), n.Dropout(),
                            n.ModuleDict({"a": n.Linear(4, 4), "b": n.GELU("tanh")}),
                            n.ModuleList([n.Tanh(), n.Tanh()]), n.NLLLoss(), n.BCELoss())
    assert repr(build(jt)) == repr(build(torch))


# ----------------------------------------------------------------------------- containers


def test_sequential_and_module_list_dict():
    seq = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    assert len(seq) == 3 and isinstance(seq[1], nn.ReLU)
    assert isinstance(seq[-1], nn.Linear) and len(seq[:2]) == 2
    seq.append(nn.Sigmoid())
    assert [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    with pytest.raises(IndexError, match="index 5 is out of range"):
        seq[5]  # noqa: B018
    ml = nn.ModuleList([nn.Linear(1, 1)])
    ml.extend([nn.ReLU()])
    ml.insert(0, nn.Tanh())
    assert [type(m).__name__ for m in ml] == ["Tanh", "Linear", "ReLU"]
    md = nn.ModuleDict({"a": nn.Linear(1, 2)})
    md["b"] = nn.ReLU()
    assert list(md.keys()) == ["a", "b"] and "a" in md
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    pl = nn.ParameterList([nn.Parameter(jt.ones(2)), jt.zeros(3)])
    assert len(pl) == 2 and isinstance(pl[1], nn.Parameter)
    assert len(list(pl.parameters())) == 2


# ----------------------------------------------------------------------------- state dict


def test_state_dict_round_trip_and_detached():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert not any(v.requires_grad for v in sd.values())
    assert "scratch" not in sd
    with jt.no_grad():
        a.running.add_(3)
    res = b.load_state_dict(a.state_dict())
    assert repr(res) == "<All keys matched successfully>"
    for (k, v), (k2, v2) in zip(a.state_dict().items(), b.state_dict().items()):
        assert k == k2
        np.testing.assert_array_equal(v.numpy(), v2.numpy())
    x = jt.randn(2, 4)
    np.testing.assert_array_equal(a(x).detach().numpy(), b(x).detach().numpy())
    kv = a.state_dict(keep_vars=True)
    assert kv["fc1.weight"] is a.fc1.weight


def test_load_state_dict_errors_like_torch():
    net = Net()
    sd = net.state_dict()
    del sd["fc1.bias"]
    sd["extra.weight"] = jt.zeros(1)
    sd["fc2.weight"] = jt.zeros(5, 5)
    with pytest.raises(RuntimeError) as e:
        net.load_state_dict(sd)
    assert str(e.value) == (
        "Error(s) in loading state_dict for Net:\n"
        '\tMissing key(s) in state_dict: "fc1.bias". \n'
        '\tUnexpected key(s) in state_dict: "extra.weight". \n'
        "\tsize mismatch for fc2.weight: copying a param with shape torch.Size([5, 5]) from "
        "checkpoint, the shape in current model is torch.Size([2, 3]).")
    sd["fc2.weight"] = net.fc2.weight.detach()
    res = net.load_state_dict(sd, strict=False)  # reports, like PyTorch, without raising
    assert res.missing_keys == ["fc1.bias"] and res.unexpected_keys == ["extra.weight"]
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like"):
        net.load_state_dict([1, 2])


def test_load_state_dict_error_text_matches_torch():
    torch = pytest.importorskip("torch")

    def attempt(lib):
        m = lib.nn.Sequential(lib.nn.Linear(2, 3), lib.nn.Linear(3, 1))
        sd = m.state_dict()
        sd.pop("0.weight")
        sd["1.weight"] = lib.zeros(2, 2)
        sd["2.bias"] = lib.zeros(1)
        with pytest.raises(RuntimeError) as e:
            m.load_state_dict(sd)
        return str(e.value)

    assert attempt(jt) == attempt(torch)


# ----------------------------------------------------------------------------- forward hooks


def test_forward_hooks_and_pre_hooks():
    lin = nn.Linear(2, 2)
    calls = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0,))
    h2 = lin.register_forward_hook(lambda m, args, out: calls.append(out.shape) or out + 1)
    out = lin(jt.ones(3, 2))
    np.testing.assert_allclose(out.detach().numpy(),
                               np.broadcast_to(lin.bias.detach().numpy() + 1, (3, 2)),
                               rtol=1e-6)
    assert calls == [jt.Size([3, 2])]
    h1.remove()
    h2.remove()
    np.testing.assert_allclose(lin(jt.zeros(1, 2)).detach().numpy()[0],
                               lin.bias.detach().numpy())
    seen = []
    lin.register_forward_hook(lambda m, a, kw, out: seen.append(kw), with_kwargs=True)
    lin(input=jt.zeros(1, 2))
    assert "input" in seen[0]


# ----------------------------------------------------------------------------- backward hooks


class TwoIn(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(jt.tensor([[1.0, 2.0], [3.0, -1.0]], dtype=jt.float64))

    def forward(self, x, y, scale=2.0):
        return (x @ self.w) * y, x.sum() * scale


def test_full_backward_hook_semantics():
    m = TwoIn()
    log = []

    def hook(mod, grad_input, grad_output):
        log.append(("hook", mod, [None if g is None else g.numpy().copy() for g in grad_input],
                    [None if g is None else g.numpy().copy() for g in grad_output]))

    def pre(mod, grad_output):
        log.append(("pre", [g.numpy().copy() for g in grad_output]))

    m.register_full_backward_hook(hook)
    m.register_full_backward_pre_hook(pre)
    xv = np.array([[1.0, 2.0], [0.5, -1.0]])
    yv = np.array([[0.5, 1.0], [2.0, 3.0]])
    x = jt.tensor(xv, requires_grad=True)
    y = jt.tensor(yv)
    a, b = m(x, y)
    (a.sum() + b * 3).backward()
    w = m.w.detach().numpy()
    # d/dx [sum((x@w)*y) + 3*2*sum(x)] = y @ w.T + 6
    gx = yv @ w.T + 6
    assert [e[0] for e in log] == ["pre", "hook"]
    np.testing.assert_allclose(log[0][1][0], np.ones((2, 2)))
    np.testing.assert_allclose(log[0][1][1], 3.0)
    _, mod, gin, gout = log[1]
    assert mod is m and len(gin) == 2 and len(gout) == 2
    np.testing.assert_allclose(gin[0], gx)
    # like PyTorch, an input that does not require grad gets a zero gradient, not None
    np.testing.assert_array_equal(gin[1], np.zeros((2, 2)))
    np.testing.assert_allclose(x.grad.numpy(), gx)


def test_full_backward_hook_can_replace_grad_input():
    lin = nn.Linear(3, 2)
    lin.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
    x = jt.randn(1, 3, requires_grad=True)
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 10 * lin.weight.detach().numpy().sum(0,
                                                                                     keepdims=True),
                               rtol=1e-5)
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of "
                                           "grad_input, got 2, but expected 1"):
        lin2 = nn.Linear(3, 2)
        lin2.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
        lin2(jt.randn(1, 3, requires_grad=True)).sum().backward()


def test_full_backward_hook_without_input_grad_fires_on_outputs():
    lin = nn.Linear(3, 2)
    log = []
    lin.register_full_backward_hook(lambda m, gi, go: log.append((gi, go[0].shape)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lin(jt.randn(4, 3)).sum().backward()
    assert log == [((None,), jt.Size([4, 2]))]


def test_full_backward_hooks_order_in_sequential():
    seq = nn.Sequential(nn.Linear(3, 3), nn.ReLU(), nn.Linear(3, 1))
    order = []
    for i, mod in enumerate(seq):
        mod.register_full_backward_hook(lambda m, gi, go, i=i: order.append(i))
    seq(jt.randn(2, 3, requires_grad=True)).sum().backward()
    assert order == [2, 1, 0]


def test_full_backward_hook_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.Tanh(), lib.nn.Linear(4, 2))
        out = []
        for mod in m:
            mod.register_full_backward_hook(
                lambda mm, gi, go: out.append(([None if g is None else g.detach().numpy().copy()
                                                for g in gi],
                                               [g.detach().numpy().copy() for g in go])))
        x = lib.tensor(np.arange(6.0).reshape(2, 3) / 5, requires_grad=True,
                       dtype=lib.float64)
        m.double()
        (m(x) ** 2).sum().backward()
        return out

    for (gi_a, go_a), (gi_b, go_b) in zip(run(torch), run(jt)):
        for a, b in zip(gi_a + go_a, gi_b + go_b):
            np.testing.assert_allclose(a, b, rtol=1e-12)


# ----------------------------------------------------------------------------- init


def test_default_inits_match_torch_for_a_seed():
    torch = pytest.importorskip("torch")
    for seed in (0, 1, 123):
        torch.manual_seed(seed)
        jt.manual_seed(seed)
        a = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Embedding(6, 3),
                                torch.nn.LayerNorm(4), torch.nn.Linear(5, 2))
        b = nn.Sequential(nn.Linear(7, 5), nn.Embedding(6, 3), nn.LayerNorm(4),
                          nn.Linear(5, 2))
        for (na, pa), (nb, pb) in zip(a.named_parameters(), b.named_parameters()):
            assert na == nb
            np.testing.assert_array_equal(pa.detach().numpy(), pb.detach().numpy())


def test_init_functions_bounds_and_gains():
    init = nn.init
    assert init.calculate_gain("relu") == math.sqrt(2)
    assert init.calculate_gain("tanh") == 5 / 3
    assert init.calculate_gain("leaky_relu", 0.2) == math.sqrt(2 / 1.04)
    with pytest.raises(ValueError, match="Unsupported nonlinearity foo"):
        init.calculate_gain("foo")
    w = jt.empty(200, 100)
    init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = math.sqrt(6 / ((1 + 5) * 100))
    assert np.abs(w.numpy()).max() <= bound
    init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 300)
    init.kaiming_normal_(w, nonlinearity="relu")
    assert abs(w.numpy().std() - math.sqrt(2 / 100)) < 0.01
    init.xavier_normal_(w, gain=2.0)
    assert abs(w.numpy().std() - 2 * math.sqrt(2 / 300)) < 0.01
    init.normal_(w, 3.0, 0.5)
    assert abs(w.numpy().mean() - 3) < 0.02
    init.uniform_(w, -1, 2)
    assert w.numpy().min() >= -1 and w.numpy().max() < 2
    init.constant_(w, 0.25)
    assert np.all(w.numpy() == 0.25)
    init.ones_(w)
    init.zeros_(w)
    assert np.all(w.numpy() == 0)
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init.kaiming_uniform_(jt.empty(3))
    p = nn.Parameter(jt.empty(3, 3))
    init.eye_(p)  # works on a leaf that requires grad (no_grad inside)
    np.testing.assert_array_equal(p.detach().numpy(), np.eye(3))
