"""torch.convolution, conv_tbc (+ F.conv_tbc), affine_grid_generator, grid_sampler(_2d/_3d),
native_dropout, native_group_norm, embedding_renorm_ (nn/functional/_aten_more.py), the RNN
cells and stacks torch.rnn_tanh/rnn_relu/lstm/gru (_aten_rnn.py), and the top-level spellings
of F bound earlier (torch.conv1d, max_pool1d, pixel_shuffle, ...) against PyTorch: values,
grad_fn names, gradients and the errors where ATen's forms differ from F's."""
import numpy as np
import pytest

from tests._parity import agree, compare, raises_like, torch

pytestmark = pytest.mark.skipif(torch is None, reason="needs PyTorch")

R = np.random.default_rng(3)
X = R.standard_normal((2, 3, 6))
W = R.standard_normal((4, 3, 2))
B = R.standard_normal(4)

CASES = {
    "convolution": lambda T, x, w, b: T.convolution(x, w, b, [1], [1], [1], False, [0], 1),
    "convolution_strided": lambda T, x, w, b: T.convolution(x, w, None, (2,), (0,), (2,),
                                                            False, (0,), 1),
    "convolution_2d": lambda T, x, w, b: T.convolution(
        x.reshape(2, 3, 2, 3), w.reshape(4, 3, 1, 2), b, [1], [0, 1], [1, 1], False, [0], 1),
    "convolution_transposed": lambda T, x, w, b: T.convolution(
        x, w.transpose(0, 1), b, [2], [1], [1], True, [1], 1),
    "convolution_groups": lambda T, x, w, b: T.convolution(
        x[:, :2], w[:, :1], None, [1], [0], [1], False, [0], 2),
    "conv_tbc": lambda T, x, w, b: T.conv_tbc(x.permute(2, 0, 1).contiguous(),
                                              w.permute(2, 1, 0).contiguous(), b),
    "conv_tbc_pad": lambda T, x, w, b: T.conv_tbc(x.permute(2, 0, 1).contiguous(),
                                                  w.permute(2, 1, 0).contiguous(), b, 2),
    "F_conv_tbc": lambda T, x, w, b: T.nn.functional.conv_tbc(
        x.permute(2, 0, 1).contiguous(), w.permute(2, 1, 0).contiguous(), b, 1),
    "affine_grid_generator": lambda T, x, w, b: T.affine_grid_generator(
        x[:, :2, :3], [2, 1, 4, 5], False),
    "affine_grid_generator_3d": lambda T, x, w, b: T.affine_grid_generator(
        x[:, :, :4], (2, 1, 2, 3, 2), True),
    "grid_sampler": lambda T, x, w, b: T.grid_sampler(
        x.reshape(2, 1, 6, 3), w.reshape(2, 2, 3, 2).tanh(), 0, 0, False),
    "grid_sampler_2d_nearest_border": lambda T, x, w, b: T.grid_sampler_2d(
        x.reshape(2, 1, 6, 3), w.reshape(2, 2, 3, 2).tanh() * 1.2, 1, 1, True),
    "grid_sampler_2d_bicubic_reflect": lambda T, x, w, b: T.grid_sampler_2d(
        x.reshape(2, 1, 6, 3), w.reshape(2, 2, 3, 2).tanh() * 1.2, 2, 2, False),
    "grid_sampler_3d": lambda T, x, w, b: T.grid_sampler_3d(
        x.reshape(2, 1, 3, 3, 2), w.reshape(2, 2, 2, 1, 3).tanh(), 0, 2, False),
    "native_group_norm": lambda T, x, w, b: T.native_group_norm(
        x, b[:3], b[1:], 2, 3, 6, 3, 1e-5),
    "native_group_norm_no_affine": lambda T, x, w, b: T.native_group_norm(
        x.reshape(2, 6, 3), None, None, 2, 6, 3, 2, 1e-3),
    "native_dropout_eval": lambda T, x, w, b: T.native_dropout(x, 0.3, False),
    # the ATen spellings bound earlier (nn/functional/_aten.py and F's own)
    "conv1d": lambda T, x, w, b: T.conv1d(x, w, b, 1, 1),
    "conv_transpose1d": lambda T, x, w, b: T.conv_transpose1d(x, w.transpose(0, 1), b, 2),
    "adaptive_avg_pool1d": lambda T, x, w, b: T.adaptive_avg_pool1d(x, 4),
    "adaptive_max_pool1d": lambda T, x, w, b: T.adaptive_max_pool1d(x, 4),
    "avg_pool1d": lambda T, x, w, b: T.avg_pool1d(x, 2),
    "max_pool1d": lambda T, x, w, b: T.max_pool1d(x, 3, 2, 1),
    "max_pool1d_with_indices": lambda T, x, w, b: T.max_pool1d_with_indices(x, 2),
    "max_pool2d": lambda T, x, w, b: T.max_pool2d(x.reshape(2, 1, 6, 3), 2),
    "max_pool3d": lambda T, x, w, b: T.max_pool3d(x.reshape(1, 2, 3, 3, 2), 2, 1),
    "pixel_shuffle": lambda T, x, w, b: T.pixel_shuffle(x.reshape(1, 4, 3, 3), 2),
    "pixel_unshuffle": lambda T, x, w, b: T.pixel_unshuffle(x.reshape(1, 1, 6, 6), 2),
    "layer_norm": lambda T, x, w, b: T.layer_norm(x, [6]),
    "native_layer_norm": lambda T, x, w, b: T.native_layer_norm(x, [6], None, None, 1e-5),
    "group_norm": lambda T, x, w, b: T.group_norm(x, 3),
    "native_batch_norm": lambda T, x, w, b: T.native_batch_norm(x, None, None, None, None, True,
                                                                0.1, 1e-5),
    "batch_norm": lambda T, x, w, b: T.batch_norm(x, b[:3], b[1:], None, None, True, 0.1, 1e-5,
                                                  False),
    "instance_norm": lambda T, x, w, b: T.instance_norm(x, None, None, None, None, True, 0.1,
                                                        1e-5, False),
    "rms_norm": lambda T, x, w, b: T.rms_norm(x, [6]),
    "ctc_loss": lambda T, x, w, b: T.ctc_loss(
        x.permute(2, 0, 1).log_softmax(2), T.tensor([[1, 2], [2, 2]]), [6, 5], [2, 1], 0, 1,
        False),
    "pdist": lambda T, x, w, b: T.pdist(x[0], 3),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_values_nodes_and_gradients(name):
    compare(CASES[name], [X, W, B], grad=True, rtol=1e-10, atol=1e-12)


def test_native_dropout_draws_as_pytorch():
    def fn(T):
        T.manual_seed(7)
        x = T.ones(3, 5, dtype=T.float64, requires_grad=True)
        out, mask = T.native_dropout(x, 0.4, True)
        out2, mask2 = T.native_dropout(x, 0.4, None)
        out3, mask3 = T.native_dropout(x, 1.0, True)
        (out * T.arange(15.0, dtype=T.float64).reshape(3, 5)).sum().backward()
        return (out, mask, out.grad_fn.name(), out2, mask2, out3, mask3, x.grad,
                T.native_dropout(T.ones(0), 0.5, True)[1].dtype)
    agree(fn)


def test_embedding_renorm_():
    def fn(T):
        w = T.tensor(np.arange(12.0).reshape(4, 3) / 3 - 1.5)
        r = T.embedding_renorm_(w, T.tensor([[0, 3], [3, 1]]), 1.5, 2.0)
        w1 = T.tensor(np.arange(12.0).reshape(4, 3) - 5.0, dtype=T.float32)
        T.embedding_renorm_(w1, T.tensor([2, 0]), 3.0, 1.0)
        return r is w, w, w1
    compare(lambda T, _: fn(T), [X], rtol=1e-6, atol=1e-7)
    raises_like(lambda T, x: T.embedding_renorm_(x.requires_grad_(), T.tensor([0]), 1.0, 2.0),
                W[0])


# ----------------------------------------------------------------------------- RNN

H = R.standard_normal((2, 4))
WIH = R.standard_normal((16, 6)) * 0.5
WHH = R.standard_normal((16, 4)) * 0.5
BIAS = R.standard_normal(16) * 0.5

CELLS = {
    "rnn_tanh_cell": lambda T, x, h, wi, wh, b: T.rnn_tanh_cell(x[:, 0], h, wi[:4], wh[:4],
                                                                b[:4], b[4:8]),
    "rnn_relu_cell": lambda T, x, h, wi, wh, b: T.rnn_relu_cell(x[:, 0], h, wi[:4], wh[:4]),
    "gru_cell": lambda T, x, h, wi, wh, b: T.gru_cell(x[:, 0], h, wi[:12], wh[:12], b[:12],
                                                      b[4:]),
    "lstm_cell": lambda T, x, h, wi, wh, b: T.lstm_cell(x[:, 0], (h, h * 0.5), wi, wh, b, b),
    "lstm_cell_no_bias": lambda T, x, h, wi, wh, b: T.lstm_cell(x[:, 0], [h, h], wi, wh),
}


@pytest.mark.parametrize("name", sorted(CELLS))
def test_cells(name):
    compare(CELLS[name], [X, H, WIH, WHH, BIAS], grad=True, rtol=1e-10, atol=1e-12)


def _stack_params(T, wi, wh, b, gates, layers, dirs, bias):
    """PyTorch's flat weight order for (layers, dirs): w_ih, w_hh[, b_ih, b_hh] each."""
    n = gates * 4
    params = []
    for k in range(layers * dirs):
        layer = k // dirs
        w_ih = wi[:n] if layer == 0 else T.cat([wi, wi], 1)[:n, :4 * dirs] * 0.7
        params += [w_ih + 0.01 * k, wh[:n] - 0.01 * k]
        if bias:
            params += [b[:n], b[:n] * 0.5]
    return params


STACKS = {
    # (function, gates, layers, bidirectional, bias, batch_first)
    "rnn_tanh": ("rnn_tanh", 1, 1, False, True, False),
    "rnn_relu_bidirectional": ("rnn_relu", 1, 1, True, False, False),
    "gru_two_layers": ("gru", 3, 2, False, True, True),
    "gru_bidirectional": ("gru", 3, 1, True, True, False),
    "lstm": ("lstm", 4, 1, False, True, False),
    "lstm_two_layers_bidirectional": ("lstm", 4, 2, True, False, True),
}


@pytest.mark.parametrize("name", sorted(STACKS))
def test_stacks(name):
    fname, gates, layers, bidir, bias, batch_first = STACKS[name]
    dirs = 2 if bidir else 1

    def fn(T, x, h, wi, wh, b):
        params = _stack_params(T, wi, wh, b, gates, layers, dirs, bias)
        inp = x.transpose(1, 2)  # (2, 6, 3): (seq, batch, feature) or (batch, seq, feature)
        inp = T.cat([inp, inp[..., :3] * 0.5], 2)  # 6 features
        nb = inp.shape[0] if batch_first else inp.shape[1]
        h0 = (h[:1].expand(layers * dirs, 1, 4) + T.zeros(layers * dirs, nb, 4,
                                                          dtype=T.float64))
        hx = [h0, h0 * 0.3] if fname == "lstm" else h0
        return getattr(T, fname)(inp, hx, params, bias, layers, 0.0, False, bidir, batch_first)
    compare(fn, [X, H, WIH, WHH, BIAS], grad=True, rtol=1e-10, atol=1e-12)


def test_lstm_float32_and_packed():
    """float32 takes the fused layer (MkldnnRnnLayerBackward0 where PyTorch shows it); the
    packed overload takes (data, batch_sizes, hx, params, ...)."""
    def fn(T, x, h, wi, wh, b):
        params = [wi.float(), wh.float(), b.float(), b.float()]
        inp = T.cat([x, x], 1).permute(2, 0, 1).float()  # (6, 2, 6)
        hx = [h[None].float(), h[None].float()]
        dense = T.lstm(inp, hx, params, True, 1, 0.0, False, False, False)
        data = inp[:3].reshape(6, 6)
        packed = T.lstm(data.double(), T.tensor([2, 2, 2]), [t.double() for t in hx],
                        [p.double() for p in params], True, 1, 0.0, False, False)
        gru = T.gru(data.double(), T.tensor([2, 2, 2]), hx[0].double(),
                    [wi[:12], wh[:12]], False, 1, 0.0, False, False)
        return dense, packed, gru
    compare(fn, [X, H, WIH, WHH, BIAS], grad=True, rtol=1e-4, atol=1e-5)


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize("call", [
    "T.convolution(x[0], w, None, [1], [0], [1], False, [0], 1)",
    "T.convolution(x, w, None, 1, [0], [1], False, [0], 1)",
    "T.convolution(x, w, None, [1, 1], [0], [1], False, [0], 1)",
    "T.conv_tbc(x, w, b.reshape(2, 2), 0)",
    "T.conv_tbc(x, w.permute(2, 1, 0).contiguous(), b, 0)",
    "T.conv_tbc(x.permute(2, 0, 1).contiguous(), w.permute(2, 1, 0).contiguous(), b[:3], 0)",
    "T.conv_tbc(x[0], w, b, 0)",
    "T.grid_sampler_2d(x.reshape(1, 2, 3, 2, 3), x.reshape(1, 2, 3, 2, 3)[..., :3], 0, 0, False)",
    "T.native_group_norm(x, None, None, 2, 3, 5, 3, 1e-5)",
    "T.native_group_norm(x, None, None, 2, 3, 6, 2, 1e-5)",
    "T.native_dropout(x, 1.5, True)",
    "T.rnn_tanh_cell(x[:, 0], x[:, 0, :4], w[:, :, 0], w[:, :, 0])",
    "T.lstm_cell(x[:, 0], (x[:, 0, :4],), w[:, :, 0], w[:, :, 0])",
    "T.gru_cell(x[:, 0], x[:1, 0, :4], w.reshape(12, 2)[:, :1], w[:, :, 0])",
    "T.gru_cell(x[:, 0, :2], x[:, 0, :1], w.reshape(12, 2), w.reshape(12, 2)[:9, :1])",
    "T.lstm_cell(x[:, 0, :2], (x[:, 0, :3], x[:, 0, :3]), w.reshape(12, 2), w[:, :, 0])",
    "T.rnn_relu_cell(x[:, 0, :2], x[:1, 0, :3], w[:3, :, 0], w[:3, :, 0])",
])
def test_errors(call):
    raises_like(lambda T, x, w, b: eval(call), X, W, B)


def test_top_level_differs_from_F():
    """ATen's forms take list arguments and positional-only flags where F takes ints and
    keywords: torch.convolution(x, w, b, 1, ...) is a TypeError; F.grid_sample's strings are
    torch.grid_sampler's ints."""
    def fn(T):
        x = T.ones(1, 1, 3, 3, dtype=T.float64)
        g = T.zeros(1, 1, 1, 2, dtype=T.float64)
        a = T.nn.functional.grid_sample(x, g, "nearest", "border", True)
        b = T.grid_sampler(x, g, 1, 1, True)
        return T.equal(a, b)
    agree(fn)
