"""The gate arithmetic of one LSTM time step, fused (``nn/modules/rnn_stack.py`` uses them in
the ``LSTM`` layer loop; ``LSTMCell`` keeps the separate ops, whose node names PyTorch shows).

Each body performs the floating-point operations of the separate ops in the same order
(``sigmoid(f) * c + sigmoid(i) * tanh(g)``, then ``sigmoid(o) * tanh(c_new)``), and each VJP is
the chain of the separate ops' VJPs (mul, sigmoid, tanh), recomputing sigmoid/tanh from the
saved inputs, so values and gradients match the unfused graph bit for bit (a test checks it):
``lstm_cell_state`` gives each product a second use through NaN selects, which keeps LLVM's
``contract`` from turning the sum into an FMA (the separate ops round both products).
"""
# ruff: noqa: N801 - op namespaces are named after the op, lower case like PyTorch's functions
# ruff: noqa: F821 - scalar bodies use the vocabulary names, bound by each target at compile time
from .registry import elementwise


@elementwise(node="LstmCellStateBackward0", dtype="float")
class lstm_cell_state:
    """c_new = sigmoid(forgetgate) * cx + sigmoid(ingate) * tanh(cellgate)."""

    def f(ingate, forgetgate, cellgate, cx):
        # the NaN selects give each product a second use, which keeps LLVM from contracting
        # the sum into an FMA (the separate mul and add ops round each product)
        return select(isnan(sigmoid(forgetgate) * cx), sigmoid(forgetgate) * cx,
                      select(isnan(sigmoid(ingate) * tanh(cellgate)),
                             sigmoid(ingate) * tanh(cellgate),
                             sigmoid(forgetgate) * cx + sigmoid(ingate) * tanh(cellgate)))

    def dingate(g, ingate, cellgate):
        return g * tanh(cellgate) * sigmoid(ingate) * (lit(ingate, 1.0) - sigmoid(ingate))

    def dforgetgate(g, forgetgate, cx):
        return g * cx * sigmoid(forgetgate) * (lit(forgetgate, 1.0) - sigmoid(forgetgate))

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
        return g * tanh(cy) * sigmoid(outgate) * (lit(outgate, 1.0) - sigmoid(outgate))

    def dcy(g, outgate, cy):
        return g * sigmoid(outgate) * (lit(cy, 1.0) - tanh(cy) * tanh(cy))
