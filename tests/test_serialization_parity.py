"""jitgrad.save / jitgrad.load against torch.save / torch.load: what comes back (values, dtypes,
shapes, strides, shared storage, containers, flags) is what PyTorch gives back; and loading
never unpickles (files from torch.save are refused with a clear error)."""
import collections
import io
import os
import pickle

import numpy as np
import pytest
from _parity import agree, neutral_form

import jitgrad

torch = pytest.importorskip("torch")


def rt(t, obj, **kw):
    b = io.BytesIO()
    t.save(obj, b)
    b.seek(0)
    return t.load(b, **kw)


DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("layout", ["contiguous", "transposed_view", "zero_dim", "empty",
                                    "strided", "expanded", "broadcast_column"])
def test_tensor_round_trip(dt, layout):
    def f(t):
        base = (t.arange(24) % 3).to(getattr(t, dt)).reshape(4, 6)
        x = {"contiguous": base, "transposed_view": base.t()[1:], "zero_dim": base[1, 2],
             "empty": base[:0], "strided": base[:, ::2], "expanded": base[1:2].expand(3, 6),
             "broadcast_column": base[:, 2:3].expand(4, 5)}[layout]
        y = rt(t, x)
        return [y, str(y.dtype), y.stride(), y.is_contiguous(), y.storage_offset()
                if layout == "contiguous" else 0]
    agree(f)


def test_shared_storage_and_views():
    def f(t):
        x = t.arange(6.)
        d = rt(t, {"a": x, "b": x[2:].view(2, 2), "c": x})
        d["a"].add_(10)  # the loaded tensors share memory again
        return [d["b"], d["c"]]
    agree(f)

    def tied(t):
        t.manual_seed(0)
        emb = t.nn.Embedding(4, 3)
        head = t.nn.Linear(3, 4, bias=False)
        head.weight = emb.weight
        sd = rt(t, {"emb": emb.state_dict(), "head": head.state_dict()})
        sd["emb"]["weight"].zero_()
        return sd["head"]["weight"]
    agree(tied)


def test_expanded_views_share_their_storage_again():
    def f(t):
        x = t.arange(4.)
        d = rt(t, {"x": x, "rows": x.expand(1000, 4), "one": x[3:].expand(2, 3, 5)})
        d["x"].mul_(2)  # the expanded views still read the one saved storage
        return [d["rows"][999], d["one"], d["rows"].stride(), d["one"].stride()]
    agree(f)


def test_tensor_flags():
    agree(lambda t: (lambda x: [x.requires_grad, x.is_leaf, x.grad])(
        rt(t, t.ones(2, requires_grad=True))))
    agree(lambda t: (lambda x: [type(x).__name__, x.requires_grad])(
        rt(t, t.nn.Parameter(t.ones(2)))))
    agree(lambda t: (lambda x: [type(x).__name__, x.requires_grad])(
        rt(t, t.nn.Parameter(t.ones(2), requires_grad=False))))


OBJECTS = {
    "nested": lambda t: {"a": [1, 2.5, "s", None, True, (t.ones(2), {"x": float("inf")})],
                         3: "z", 2.5: "f", None: "n"},
    "tuple_keys": lambda t: {(1, 2): 5, ("a", (1,)): [t.zeros(1)]},
    "bytes": lambda t: [b"abc", bytearray(b"x")],
    "set": lambda t: {1, 2, "a"},
    "complex": lambda t: 1 + 2j,
    "nan": lambda t: float("nan"),
    "negative_zero": lambda t: str(-0.0),
    "big_int": lambda t: 2**70,
    "unicode": lambda t: "a\x00b\u1234",
    "int_float_bool": lambda t: [type(v).__name__ for v in [1, 1.0, True]],
    "dtype": lambda t: [t.float16, t.int64, t.bool],
    "device": lambda t: t.device("cpu"),
    "size": lambda t: t.Size([2, 3]),
    "ordered_dict": lambda t: collections.OrderedDict(b=1, a=t.ones(1)),
    "long_list": lambda t: list(range(1000)),
}


@pytest.mark.parametrize("case", sorted(OBJECTS))
def test_object_round_trip(case):
    agree(lambda t: (lambda o: [o, type(o).__name__])(rt(t, OBJECTS[case](t))))


def test_state_dicts():
    def model(t):
        t.manual_seed(0)
        m = t.nn.Sequential(t.nn.Linear(3, 2), t.nn.LayerNorm(2))
        sd = rt(t, m.state_dict())
        return [sd, type(sd).__name__, sd._metadata]
    agree(model)

    def optim(t):
        t.manual_seed(0)
        m = t.nn.Linear(3, 2)
        for opt_cls in (t.optim.Adam, t.optim.SGD):
            o = opt_cls(m.parameters(), lr=0.1, **({"momentum": 0.9} if opt_cls is t.optim.SGD
                                                  else {}))
            m(t.ones(1, 3)).sum().backward()
            o.step()
            sd = rt(t, o.state_dict())
            # now: torch's load_state_dict keeps (aliases) these tensors
            loaded = repr(neutral_form(sd))
            o2 = opt_cls(m.parameters(), lr=0.5)
            o2.load_state_dict(sd)
            o2.step()
            yield [loaded, repr(neutral_form(o2.state_dict())),
                   [p.detach().clone() for p in m.parameters()]]
    agree(lambda t: list(optim(t)))


def test_paths_and_file_objects(tmp_path):
    def f(t):
        p = os.path.join(tmp_path, f"x_{t.__name__}.pt")
        t.save({"a": t.arange(3)}, p)
        with open(p, "rb") as fh:
            via_file = t.load(fh)
        return [t.load(p), via_file, t.load(str(p))]
    agree(f)


MAP_LOCATIONS = {
    "str": "cpu",
    "device": "DEVICE",
    "dict": {"cpu": "cpu"},
}


@pytest.mark.parametrize("case", sorted(MAP_LOCATIONS))
def test_map_location(case):
    def f(t):
        ml = MAP_LOCATIONS[case]
        ml = t.device("cpu") if ml == "DEVICE" else ml
        x = rt(t, {"w": t.ones(2)}, map_location=ml)["w"]
        return [x, str(x.device)]
    agree(f)


def test_weights_only_argument():
    agree(lambda t: rt(t, {"a": t.ones(2), "b": [1, "x"]}, weights_only=True))
    agree(lambda t: rt(t, {"a": t.ones(2)}, weights_only=False))


def test_unsupported_objects_fail_clearly():
    """PyTorch pickles anything and refuses it at load (weights_only); jitgrad refuses at save,
    naming the object and the remedy."""
    class Foo:
        pass
    for obj in (jitgrad.nn.Linear(2, 2), Foo(), object(), lambda: 1):
        with pytest.raises(TypeError, match="cannot save an object of type"):
            jitgrad.save(obj, io.BytesIO())
        b = io.BytesIO()
        try:
            torch.save(obj if not isinstance(obj, jitgrad.nn.Module) else torch.nn.Linear(2, 2),
                       b)
        except Exception:
            continue  # the lambda: torch cannot pickle it either
        b.seek(0)
        with pytest.raises(Exception, match="Weights only load failed"):
            torch.load(b)


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo PWNED > /dev/null",))


@pytest.mark.parametrize("source", ["torch_save", "pickle", "torch_save_evil"])
def test_load_refuses_torch_files_and_pickles(source):
    """torch.load(weights_only=True) reads its own files; jitgrad.load refuses them (it never
    unpickles) with an error that says what the file is."""
    b = io.BytesIO()
    if source == "torch_save":
        torch.save({"w": torch.ones(2)}, b)
        b.seek(0)
        assert torch.load(b, weights_only=True)["w"].tolist() == [1.0, 1.0]
        b.seek(0)
        match = "written by torch.save"
    elif source == "pickle":
        pickle.dump({"a": 1}, b)
        match = "never unpickles"
    else:
        torch.save(_Evil(), b)
        match = "written by torch.save"
    b.seek(0)
    with pytest.raises(RuntimeError, match=match):
        jitgrad.load(b)


def test_malformed_entries_are_rejected():
    """A hand-edited structure cannot make load read outside a storage or build objects."""
    import json
    import zipfile
    b = io.BytesIO()
    jitgrad.save({"w": jitgrad.arange(4.)}, b)
    z = zipfile.ZipFile(io.BytesIO(b.getvalue()))
    members = {n: np.load(io.BytesIO(z.read(n)), allow_pickle=False) for n in z.namelist()}
    doc = json.loads(str(members["__jitgrad__.npy"][()]))
    for field, value in (("offset", 8), ("dtype", "|O"), ("shape", [100])):
        bad = json.loads(json.dumps(doc))
        bad["root"]["__dict__"][0][1][field] = value
        out = io.BytesIO()
        arrays = {n[:-4]: a for n, a in members.items() if n != "__jitgrad__.npy"}
        np.savez(out, __jitgrad__=np.array(json.dumps(bad)), **arrays)
        out.seek(0)
        with pytest.raises(RuntimeError, match="malformed tensor entry"):
            jitgrad.load(out)
    assert np.array_equal(jitgrad.load(io.BytesIO(b.getvalue()))["w"].numpy(), np.arange(4.))
