"""The gate arithmetic of one LSTM or GRU time step, fused (``nn/modules/rnn_stack.py`` uses them
in the per-op ``LSTM``/``GRU`` layer loops; the per-op ``LSTMCell``/``GRUCell``, where
``rnn_cells_fused.py``'s kernels do not run, keep the separate ops, whose node names PyTorch
shows).

Each body performs the floating-point operations of the separate ops in the same order
(``sigmoid(f) * c + sigmoid(i) * tanh(g)``, then ``sigmoid(o) * tanh(c_new)``), and each VJP is
the chain of the separate ops' VJPs (mul, sigmoid, tanh; sigmoid's as ATen's and
``ops/elementwise_math.py``'s ``grad * (1 - y) * y``), recomputing sigmoid/tanh from the saved
inputs, so values and gradients match the unfused graph bit for bit (a test checks it):
``lstm_cell_state`` gives each product a second use through NaN selects, which keeps LLVM's
``contract`` from turning the sum into an FMA (the separate ops round both products).
``gru_cell`` does the same for ``i_n + h_n * r``, ``(hx - n) * z + n`` and, in its VJPs, for the
accumulation ``g - g * z`` of the two gradients that reach ``n`` in the separate graph.
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node="LstmCellStateBackward0", dtype="float")
class lstm_cell_state:
    """c_new = sigmoid(forgetgate) * cx + sigmoid(ingate) * tanh(cellgate)."""

    def f(ingate, forgetgate, cellgate, cx):
        # the NaN selects give each product a second use, which keeps LLVM from contracting
        # the sum into an FMA (the separate mul and add ops round each product); the products
        # are named once so that this does not depend on LLVM merging repeated sigmoid calls
        kept = sigmoid(forgetgate) * cx
        added = sigmoid(ingate) * tanh(cellgate)
        return select(isnan(kept), kept, select(isnan(added), added, kept + added))

    def dingate(g, ingate, cellgate):
        return g * tanh(cellgate) * (lit(ingate, 1.0) - sigmoid(ingate)) * sigmoid(ingate)

    def dforgetgate(g, forgetgate, cx):
        return g * cx * (lit(forgetgate, 1.0) - sigmoid(forgetgate)) * sigmoid(forgetgate)

    def dcellgate(g, ingate, cellgate):
        return g * sigmoid(ingate) * (lit(cellgate, 1.0) - tanh(cellgate) * tanh(cellgate))

    def dcx(g, forgetgate):
        return g * sigmoid(forgetgate)


@elementwise(node="LstmCellHiddenBackward0", dtype="float")
class lstm_cell_hidden:
    """h_new = sigmoid(outgate) * tanh(cy)."""

    def f(outgate, cy):
        return sigmoid(outgate) * tanh(cy)

    def doutgate(g, outgate, cy):
        return g * tanh(cy) * (lit(outgate, 1.0) - sigmoid(outgate)) * sigmoid(outgate)

    def dcy(g, outgate, cy):
        return g * sigmoid(outgate) * (lit(cy, 1.0) - tanh(cy) * tanh(cy))


@elementwise(node="GruCellBackward0", dtype="float")
class gru_cell:
    """hy = (hx - n) * z + n, with r = sigmoid(h_r + i_r), z = sigmoid(h_z + i_z) and
    n = tanh(i_n + h_n * r): RNN.cpp's GRUCell on the chunks of the input and hidden
    projections. Each VJP repeats the forward's prologue (bodies cannot share a helper)."""

    def f(i_r, i_z, i_n, h_r, h_z, h_n, hx):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        p = (hx - n) * z
        return select(isnan(p), p, p + n)

    # the separate graph's chain: add -> mul/sub (g * z to hx, g * (hx - n) to z, g - g * z to
    # n: its two incoming gradients summed) -> tanh (1 - n * n) -> add/mul -> sigmoid -> add

    def di_r(g, i_r, i_z, i_n, h_r, h_z, h_n, hx):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        gz = g * z
        gu = select(isnan(gz), gz, g - gz) * (lit(n, 1.0) - n * n)
        return gu * h_n * (lit(r, 1.0) - r) * r

    def dh_r(g, i_r, i_z, i_n, h_r, h_z, h_n, hx):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        gz = g * z
        gu = select(isnan(gz), gz, g - gz) * (lit(n, 1.0) - n * n)
        return gu * h_n * (lit(r, 1.0) - r) * r

    def di_z(g, i_r, i_z, i_n, h_r, h_z, h_n, hx):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        return g * (hx - n) * (lit(z, 1.0) - z) * z

    def dh_z(g, i_r, i_z, i_n, h_r, h_z, h_n, hx):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        return g * (hx - n) * (lit(z, 1.0) - z) * z

    def di_n(g, i_r, i_z, i_n, h_r, h_z, h_n):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        gz = g * z
        return select(isnan(gz), gz, g - gz) * (lit(n, 1.0) - n * n)

    def dh_n(g, i_r, i_z, i_n, h_r, h_z, h_n):
        r = sigmoid(h_r + i_r)
        z = sigmoid(h_z + i_z)
        q = h_n * r
        n = tanh(select(isnan(q), q, i_n + q))
        gz = g * z
        return select(isnan(gz), gz, g - gz) * (lit(n, 1.0) - n * n) * r

    def dhx(g, i_z, h_z):
        return g * sigmoid(h_z + i_z)
