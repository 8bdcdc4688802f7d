"""TransformerDecoderLayer, TransformerDecoder and Transformer against PyTorch: seeded
construction bit for bit (state dict keys and values, parameter order, repr, warnings), outputs
and every gradient in eval and train mode (dropout draws are bit-exact, so training runs compare
too) with masks, padding masks, causal hints, norm_first, batch_first and unbatched inputs;
``generate_square_subsequent_mask``; PyTorch's errors word for word."""
from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
import torch

import jitgrad as jg
from tests._parity import agree, assert_parity

RNG = np.random.default_rng(17)
TOL = {np.float32: dict(rtol=1e-4, atol=3e-6), np.float64: dict(rtol=1e-10, atol=1e-12)}
E, H, FF, S, T, N = 8, 2, 16, 5, 4, 3


def randn(*shape, dt=np.float64):
    return RNG.standard_normal(shape).astype(dt)


def _ctor(lib, ctor):
    """The constructor keywords for ``lib`` (a callable activation is each library's own)."""
    kw = dict(ctor)
    if kw.get("activation") == "tanh_fn":
        kw["activation"] = lib.tanh
    return kw


def build(lib, kind, ctor, dt=np.float64, heads=H):
    """A seeded model of ``kind`` and the warnings its construction raised."""
    kw = _ctor(lib, ctor)
    kw["dtype"] = lib.float64 if dt == np.float64 else lib.float32
    lib.manual_seed(0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "transformer":
            m = lib.nn.Transformer(E, heads, 2, 2, FF, **kw)
        else:
            layer = lib.nn.TransformerDecoderLayer(E, heads, FF, **kw)
            if kind == "decoder":
                m = lib.nn.TransformerDecoder(layer, 2, norm=lib.nn.LayerNorm(
                    E, dtype=kw["dtype"]))
            else:
                m = layer
    return m, [str(w.message) for w in caught]


# ----------------------------------------------------------------------------- construction


CTORS = [dict(), dict(batch_first=True), dict(norm_first=True, activation="gelu"),
         dict(bias=False, layer_norm_eps=1e-3, dropout=0.3), dict(activation="tanh_fn"),
         dict(batch_first=True, nhead_odd=True)]


@pytest.mark.parametrize("kind", ["transformer", "decoder", "layer"])
@pytest.mark.parametrize("case", range(len(CTORS)))
def test_seeded_construction_matches_torch(kind, case):
    ctor = dict(CTORS[case])
    heads = 1 if ctor.pop("nhead_odd", False) else H  # PyTorch's nested-tensor warning names it
    made = {lib: build(lib, kind, ctor, np.float32, heads) for lib in (jg, torch)}
    (mj, wj), (mt, wt) = made[jg], made[torch]
    assert wj == wt
    assert [n for n, _ in mj.named_parameters()] == [n for n, _ in mt.named_parameters()]
    sj, st = mj.state_dict(), mt.state_dict()
    assert list(sj) == list(st)
    for k in st:  # jitgrad's CPU generator is PyTorch's: the same draws in the same order
        np.testing.assert_array_equal(sj[k].numpy(), st[k].numpy(), err_msg=k)
        assert str(sj[k].dtype) == str(st[k].dtype)
    if ctor.get("activation") != "tanh_fn":  # a function's repr names its library
        assert repr(mj) == repr(mt)


def test_custom_encoder_and_decoder_are_reinitialized_like_torch():
    res = {}
    for lib in (jg, torch):
        lib.manual_seed(3)
        enc = lib.nn.TransformerEncoder(lib.nn.TransformerEncoderLayer(E, H, FF), 1,
                                        enable_nested_tensor=False)
        dec = lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(E, H, FF), 1)
        m = lib.nn.Transformer(E, H, custom_encoder=enc, custom_decoder=dec)
        assert m.encoder is enc and m.decoder is dec and dec.norm is None
        res[lib] = {k: v.numpy() for k, v in m.state_dict().items()}
    assert list(res[jg]) == list(res[torch])
    for k in res[torch]:
        np.testing.assert_array_equal(res[jg][k], res[torch][k], err_msg=k)


def test_clones_are_deep_copies_and_legacy_pickles_get_relu():
    for lib in (jg, torch):
        layer = lib.nn.TransformerDecoderLayer(E, H, FF)
        dec = lib.nn.TransformerDecoder(layer, 2)
        a, b = dec.layers
        assert a is not layer and a.linear1.weight is not b.linear1.weight
        assert (a.linear1.weight == layer.linear1.weight).all()
        state = {k: v for k, v in layer.__dict__.items() if k != "activation"}
        fresh = copy.copy(layer)
        fresh.__dict__.clear()
        fresh.__setstate__(state)
        assert fresh.activation is lib.nn.functional.relu


# ----------------------------------------------------------------------------- forward


def _masks(lib, call, dt):
    """The forward keywords ``call`` names, as ``lib`` tensors (fixed NumPy draws)."""
    unb = call.get("unbatched")
    out = {k: v for k, v in call.items() if k.endswith("is_causal")}
    fdt = lib.float64 if dt == np.float64 else lib.float32
    pad = {"src": np.zeros((N, S), bool), "tgt": np.zeros((N, T), bool),
           "memory": np.zeros((N, S), bool)}
    pad["src"][1, 3:] = True
    pad["src"][2, 0] = True
    pad["tgt"][0, 3] = True
    pad["memory"][2, 1:3] = True
    for name in ("src", "tgt", "memory"):
        kind = call.get(f"{name}_kpm")
        if kind:
            m = pad[name][0] if unb else pad[name]
            if kind == "float":
                m = np.where(m, -np.inf, 0.0).astype(dt)
            out[f"{name}_key_padding_mask"] = lib.tensor(m)
    kinds = {"causal": lambda n: lib.nn.Transformer.generate_square_subsequent_mask(n, dtype=fdt),
             "bool": lambda n: lib.tensor(np.triu(np.ones((n, n), bool), 1)),
             "float": lambda n: lib.tensor(np.tril(randn_fixed(n, n), 0).astype(dt)),
             "3d": lambda n: lib.tensor(randn_fixed(N * H, n, n).astype(dt))}
    for name, n in (("src_mask", S), ("tgt_mask", T)):
        if call.get(name):
            out[name] = kinds[call[name]](n)
    if call.get("memory_mask"):
        m = np.zeros((T, S), bool)
        m[1, 2:] = True
        m[3, 0] = True
        out["memory_mask"] = lib.tensor(m)
    return out


def randn_fixed(*shape):
    return np.random.default_rng(len(shape) * 100 + shape[-1]).standard_normal(shape)


def run(lib, kind, ctor, call, train, dt):
    """Output, input gradients and every parameter gradient of a seeded model of ``kind``
    (``sum(out * w)`` with fixed ``w``), plus the warnings of the call."""
    m, _ = build(lib, kind, ctor, dt)
    m.train(train)
    bf = ctor.get("batch_first", False)
    if call.get("unbatched"):
        shapes = [(S, E), (T, E)]
    else:
        shapes = [(N, S, E), (N, T, E)] if bf else [(S, N, E), (T, N, E)]
    src0, tgt0 = (np.random.default_rng(i).standard_normal(s).astype(dt)
                  for i, s in enumerate(shapes))
    src = lib.tensor(src0, requires_grad=True)
    tgt = lib.tensor(tgt0, requires_grad=True)
    kw = _masks(lib, call, dt)
    if kind != "transformer":  # the memory is an input of the decoder alone
        kw = {k: v for k, v in kw.items() if not k.startswith("src")}
    lib.manual_seed(7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = m(src, tgt, **kw) if kind == "transformer" else m(tgt, src, **kw)
    w = np.random.default_rng(9).standard_normal(tuple(out.shape)).astype(dt)
    (out * lib.tensor(w)).sum().backward()
    grads = [p.grad.numpy() for p in m.parameters()]
    return [out.detach().numpy(), src.grad.numpy(), tgt.grad.numpy()] + grads, \
        [str(c.message) for c in caught]


CALLS = [
    ("plain", dict(), dict()),
    ("causal_tgt", dict(), dict(tgt_mask="causal")),
    ("padding_bf", dict(batch_first=True),
     dict(tgt_mask="causal", src_kpm="bool", tgt_kpm="bool", memory_kpm="bool")),
    ("norm_first", dict(norm_first=True), dict(src_mask="float", memory_mask=True)),
    ("gelu_nobias_3d", dict(activation="gelu", bias=False, layer_norm_eps=1e-3),
     dict(tgt_mask="3d", src_mask="bool")),
    ("callable_float_kpm", dict(activation="tanh_fn"),
     dict(tgt_kpm="float", memory_kpm="float", tgt_mask="float")),
    ("mismatched_mask_types", dict(), dict(tgt_mask="bool", tgt_kpm="float")),
    ("unbatched", dict(), dict(unbatched=True, tgt_mask="causal", src_kpm="bool",
                               memory_kpm="bool")),
    ("unbatched_bf", dict(batch_first=True), dict(unbatched=True, tgt_kpm="bool",
                                                   memory_mask=True)),
    ("hints", dict(batch_first=True, norm_first=True),
     dict(tgt_mask="causal", tgt_is_causal=True, memory_mask=True, memory_is_causal=True,
          src_mask="causal", src_is_causal=False)),
    ("hint_false", dict(), dict(tgt_mask="causal", tgt_is_causal=False, tgt_kpm="bool")),
]


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
@pytest.mark.parametrize("name,ctor,call", CALLS, ids=[c[0] for c in CALLS])
def test_transformer_matches_torch(name, ctor, call, train):
    ctor = dict(ctor, dropout=0.2)
    (rj, wj), (rt, wt) = (run(lib, "transformer", ctor, call, train, np.float64)
                          for lib in (jg, torch))
    assert wj == wt
    assert len(rj) == len(rt)
    for a, b in zip(rj, rt):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_allclose(a, b, **TOL[np.float64])


DECODER_CALLS = [c for c in CALLS if c[0] in ("padding_bf", "norm_first", "unbatched", "hints")]


@pytest.mark.parametrize("kind", ["decoder", "layer"])
@pytest.mark.parametrize("name,ctor,call", DECODER_CALLS, ids=[c[0] for c in DECODER_CALLS])
def test_decoder_matches_torch(kind, name, ctor, call):
    ctor = dict(ctor, dropout=0.1)
    for train in (False, True):
        (rj, wj), (rt, wt) = (run(lib, kind, ctor, call, train, np.float64)
                              for lib in (jg, torch))
        assert wj == wt
        for a, b in zip(rj, rt):
            np.testing.assert_allclose(a, b, **TOL[np.float64])


@pytest.mark.parametrize("train", [False, True], ids=["eval", "train"])
def test_float32_matches_torch(train):
    ctor = dict(batch_first=True, dropout=0.2)
    call = dict(tgt_mask="causal", src_kpm="bool", memory_kpm="bool")
    (rj, _), (rt, _) = (run(lib, "transformer", ctor, call, train, np.float32)
                        for lib in (jg, torch))
    for a, b in zip(rj, rt):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, **TOL[np.float32])


def test_inference_zeroes_padded_memory_like_torch_nested_path():
    """In eval mode without grad, PyTorch's encoder runs a left-aligned padded batch as a
    nested tensor, so the memory is 0 at the padded positions; the decoder reads that."""
    src0, tgt0 = randn(N, S, E, dt=np.float32), randn(N, T, E, dt=np.float32)
    pad = np.zeros((N, S), bool)
    pad[1, 3:] = True
    res = {}
    for lib in (jg, torch):
        m, _ = build(lib, "transformer", dict(batch_first=True), np.float32)
        m.eval()
        with lib.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyTorch: nested tensors are a prototype
            mem = m.encoder(lib.tensor(src0), src_key_padding_mask=lib.tensor(pad))
            out = m(lib.tensor(src0), lib.tensor(tgt0), src_key_padding_mask=lib.tensor(pad))
        res[lib] = (mem.numpy(), out.numpy())
    assert (res[torch][0][1, 3:] == 0).all()
    for a, b in zip(res[jg], res[torch]):
        np.testing.assert_allclose(a, b, **TOL[np.float32])


def test_loads_torch_state_dict():
    torch.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor (compared above)
        tm = torch.nn.Transformer(E, H, 1, 2, FF, dropout=0.0).eval()
        jm = jg.nn.Transformer(E, H, 1, 2, FF, dropout=0.0).eval()
    jm.load_state_dict({k: jg.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    src0, tgt0 = randn(S, N, E, dt=np.float32), randn(T, N, E, dt=np.float32)
    want = tm(torch.tensor(src0), torch.tensor(tgt0)).detach().numpy()
    got = jm(jg.tensor(src0), jg.tensor(tgt0)).detach().numpy()
    np.testing.assert_allclose(got, want, **TOL[np.float32])


# ----------------------------------------------------------------------------- masks, errors


@pytest.mark.parametrize("args", [(3,), (1,), (0,), (4, None, "float64"), (3, "cpu", "bool"),
                                  (2, None, "float16"), (3, None, "int64"), (-1,)])
def test_generate_square_subsequent_mask_matches_torch(args):
    sz, device, dtype = (args + (None, None))[:3]

    def make(lib):
        dt = None if dtype is None else getattr(lib, dtype)
        return lib.nn.Transformer.generate_square_subsequent_mask(sz, device=device, dtype=dt)
    agree(make)


def test_generate_square_subsequent_mask_follows_default_dtype():
    def make(lib):
        old = lib.get_default_dtype()
        lib.set_default_dtype(lib.float64)
        try:
            return lib.nn.Transformer.generate_square_subsequent_mask(3)
        finally:
            lib.set_default_dtype(old)
    agree(make)


def _model(lib, **kw):
    lib.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return lib.nn.Transformer(E, H, 1, 1, FF, dropout=0.0, **kw)


ERRORS = [
    ("batch", {}, lambda lib: (lib.zeros(S, 2, E), lib.zeros(T, 3, E)), {}),
    ("batch_bf", dict(batch_first=True), lambda lib: (lib.zeros(2, S, E), lib.zeros(3, T, E)),
     {}),
    ("feature_src", {}, lambda lib: (lib.zeros(S, N, 6), lib.zeros(T, N, E)), {}),
    ("feature_tgt", {}, lambda lib: (lib.zeros(S, E), lib.zeros(T, 6)), {}),
    ("one_dim", {}, lambda lib: (lib.zeros(E), lib.zeros(T, E)), {}),
    ("batched_src_unbatched_tgt", {}, lambda lib: (lib.zeros(S, N, E), lib.zeros(N, E)), {}),
    ("causal_hint_without_mask", {}, lambda lib: (lib.zeros(S, E), lib.zeros(T, E)),
     dict(tgt_is_causal=True)),
    ("memory_hint_without_mask", {}, lambda lib: (lib.zeros(S, E), lib.zeros(T, E)),
     dict(memory_is_causal=True)),
    ("memory_mask_shape", {}, lambda lib: (lib.zeros(S, E), lib.zeros(T, E)),
     dict(memory_mask=np.zeros((T, T), bool))),
    ("memory_kpm_int", {}, lambda lib: (lib.zeros(S, E), lib.zeros(T, E)),
     dict(memory_key_padding_mask=np.zeros(S, np.int64))),
    ("tgt_mask_3d_shape", {}, lambda lib: (lib.zeros(S, N, E), lib.zeros(T, N, E)),
     dict(tgt_mask=np.zeros((N, T, T), bool))),
]


@pytest.mark.parametrize("name,ctor,inputs,kw", ERRORS, ids=[e[0] for e in ERRORS])
def test_forward_errors_match_torch(name, ctor, inputs, kw):
    def call(lib):
        m = _model(lib, **ctor)
        return m(*inputs(lib), **{k: lib.tensor(v) if isinstance(v, np.ndarray) else v
                                  for k, v in kw.items()})
    out = assert_parity(call)
    assert out.error is not None


@pytest.mark.parametrize("make", [
    lambda lib: lib.nn.TransformerDecoderLayer(E, H, activation="tanh"),
    lambda lib: lib.nn.Transformer(E, H, 1, 1, FF, activation="swish"),
    lambda lib: lib.nn.Transformer(E, 3, 1, 1, FF),
    lambda lib: lib.nn.TransformerDecoderLayer(E, 0),
], ids=["layer_activation", "transformer_activation", "heads", "zero_heads"])
def test_constructor_errors_match_torch(make):
    assert assert_parity(make).error is not None


def test_decoder_memory_feature_error_matches_torch():
    def call(lib):
        dec = lib.nn.TransformerDecoder(lib.nn.TransformerDecoderLayer(E, H, FF), 1)
        return dec(lib.zeros(T, N, E), lib.zeros(S, N, 6))
    assert assert_parity(call).error is not None


def test_torch_module_path_holds_the_whole_family():
    import torch.nn.modules.transformer as tm

    import jitgrad.nn.modules.transformer as jm
    for name in tm.__all__ + ["_get_clones", "_get_activation_fn", "_get_seq_len",
                              "_detect_is_causal_mask", "_generate_square_subsequent_mask"]:
        assert hasattr(jm, name), name
    for name in tm.__all__:
        assert getattr(jm, name) is getattr(jg.nn, name)
