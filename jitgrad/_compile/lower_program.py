"""A lowered step's forward and backward as one compiled call (``lower_kernels.run_program``).

``lower.py`` plans a step as lowered ops (``Dense``, ``Relu``, ``CrossEntropy``), each able to
run itself from Python. ``ArrayProgram`` instead writes the same work as instructions for the
interpreter — the same kernels (``relu``, ``column_sums_aten``, ATen's log-softmax rows, ...) and
the same BLAS calls (MKL's ``cblas_?gemm``, called from compiled code through its address), so the
same bits — and runs them in one call: no Python between the GEMMs (whose memory traffic evicts
the interpreter's state: the step's non-GEMM work took 0.29 ms on its own and 0.77 ms as Python
calls between the GEMMs).

What changes from run to run is patched into the instruction table before the call: the batch
and targets, a parameter's array when ``.data`` was replaced, fresh arrays for the gradients
handed to leaves, and per weight whether SGD folds into its gradient GEMM (C = W, alpha =
-lr, beta = 1) or the GEMM writes ``.grad`` (C = a fresh array, alpha = 1, beta = 0).

Needs MKL's CBLAS (``backends/blas``) and one float dtype for the whole step; otherwise
``lower.py`` runs its ops one Python call each.
"""
from __future__ import annotations

import ctypes

import numpy as np

from .._settings import get_num_threads
from ..backends import blas, cpu
from . import lower_kernels as K
from . import pending
from .lower_ops import CrossEntropy, Dense, Relu

_GEMM_TYPES = {}


def _gemm(dtype):
    """MKL's ``cblas_sgemm``/``cblas_dgemm`` as a ctypes function the compiled interpreter calls,
    or None without MKL."""
    if dtype not in _GEMM_TYPES:
        lib = blas._find_mkl()
        fn = None
        if lib is not None:
            scalar = ctypes.c_float if dtype == np.float32 else ctypes.c_double
            i, vp = ctypes.c_int, ctypes.c_void_p
            proto = ctypes.CFUNCTYPE(None, i, i, i, i, i, i, scalar, vp, i, vp, i, scalar, vp, i)
            name = "cblas_sgemm" if dtype == np.float32 else "cblas_dgemm"
            fn = proto(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value)
        _GEMM_TYPES[dtype] = fn
    return _GEMM_TYPES[dtype]


class ArrayProgram:
    """The instruction table of one lowered step and the arrays it runs on."""

    def __init__(self, step, dtype):
        self.step, self.dtype = step, np.dtype(dtype)
        self.gemm = _gemm(self.dtype)
        self.code = []
        self.f_arrays = []  # what each slot of ``f`` holds (passed as a tuple)
        self.slot_of = {}  # value index -> slot
        self.scal = [0.0, 1.0]  # slots 0 and 1: the constants
        self.ints_of = {}  # target value index -> ints slot
        self.inputs = []  # (value index, slot): the batch, copied in when not C-contiguous
        self.params = []  # (tensor, slot, as_row, array): re-patched when .data is replaced
        self._emit_all()
        self.code = np.array(self.code, dtype=np.int64).reshape(-1, 7)
        self.scal = np.array(self.scal, dtype=self.dtype)
        self.out64 = np.zeros(max(1, len(self.ints_of)), np.float64)
        self.ints = [np.zeros(1, np.int64) for _ in self.ints_of]

    # -------------------------------------------------------------- building
    def _slot(self, array):
        self.f_arrays.append(array)
        return len(self.f_arrays) - 1

    def _scalar(self, value=0.0):
        self.scal.append(value)
        return len(self.scal) - 1

    def _emit(self, *row):
        row = list(row) + [0] * (7 - len(row))
        self.code.append(row)
        return len(self.code) - 1

    def _value_slot(self, i):
        """The slot of value ``i``: an op's output, or an input patched in each run."""
        if i not in self.slot_of:
            self.slot_of[i] = self._slot(np.zeros((1, 1), self.dtype))
            self.inputs.append((i, self.slot_of[i]))
        return self.slot_of[i]

    def _buffer(self, shape):
        return self._slot(cpu.empty(shape, self.dtype))

    def _param_slot(self, t, as_row):
        d = t._data
        slot = self._slot(d.reshape(1, -1) if as_row else d)
        self.params.append((t, slot, as_row, d))
        return slot

    def _emit_all(self):
        st = self.step
        for op in st.forward_ops:
            if isinstance(op, Dense):
                x = self._value_slot(op.inputs[0])
                if op.copies_input:
                    copy = self._buffer(op.x_shape)
                    self._emit(K.COPY, x, copy)
                    x = self.slot_of[op.inputs[0]] = copy
                out = self._buffer(op.shape)
                self.slot_of[op.out] = out
                op.slots = {"w": self._param_slot(op.weight, False),
                            "b": self._param_slot(op.bias, True), "x": x, "out": out}
                self._emit(K.FILL_ROWS, op.slots["b"], out)
                self._emit(K.GEMM, x, op.slots["w"], out, 2, 1, 1)
            elif isinstance(op, Relu):
                x = self.slot_of[op.inputs[0]]
                out = x if op.in_place else self._buffer(op.shape)
                self.slot_of[op.out] = out
                self._emit(K.RELU, x, out)
            elif isinstance(op, CrossEntropy):
                t = self.ints_of.setdefault(op.inputs[1], len(self.ints_of))
                shape = op.meta[0]
                op.slots = {"lsm": self._buffer(shape), "t": t, "g": self._buffer(shape),
                            "neg_scale": self._scalar()}
                self._emit(K.CE_FORWARD, self.slot_of[op.inputs[0]], op.slots["lsm"], t, t)
        grads = {}
        for op in st.backward_ops:
            if isinstance(op, CrossEntropy):
                s = op.slots
                self._emit(K.CE_BACKWARD, s["lsm"], s["g"], s["t"], s["neg_scale"])
                grads[op.inputs[0]] = s["g"]
            elif isinstance(op, Relu):
                g = grads.pop(op.out)
                self._emit(K.RELU_VJP, g, self.slot_of[op.out])
                grads[op.inputs[0]] = g
            elif isinstance(op, Dense):
                g = grads.pop(op.out)
                s = op.slots
                s["g"] = g
                s["gb"] = self._slot(np.zeros((1, 1), self.dtype))  # patched each run
                s["sum"] = self._emit(K.COLUMN_SUMS, g, s["gb"])
                s["lr_neg"], s["maximize"] = self._scalar(), self._scalar()
                s["sgd"] = self._emit(K.SGD, s["b"], s["gb"], s["lr_neg"], s["maximize"])
                if op.need_x:
                    if op.inputs[0] in st.ops:  # into our buffer
                        gx = self._buffer(op.x_shape)
                        grads[op.inputs[0]] = gx
                    else:  # a leaf's gradient: a fresh array each run
                        gx = self._slot(np.zeros((1, 1), self.dtype))
                    s["gx"] = gx
                    self._emit(K.GEMM, g, s["w"], gx, 0, 1, 0)
                s["gw"] = self._slot(np.zeros((1, 1), self.dtype))  # patched each run
                s["alpha"] = self._scalar()
                s["beta"] = self._scalar()
                s["wgemm"] = self._emit(K.GEMM, g, s["x"], s["gw"], 1, s["alpha"], s["beta"])

    # -------------------------------------------------------------- running
    def run(self, arr, values):
        """Forward and backward of the step (``arr``: the inputs' arrays by value index).
        Returns ``(loss arrays by value index, [(leaf tensor, gradient array)])``; folded
        weights were updated and got their PendingGrads (``step.pending``)."""
        st, code, scal = self.step, self.code, self.scal
        f = self.f_arrays  # patched in place, passed as a tuple
        dt = self.dtype
        for i, slot in self.inputs:
            a = arr[i]
            if not (a.flags.c_contiguous and a.flags.writeable):
                a = np.array(a, order="C")
            f[slot] = a
        for k, (t, slot, as_row, d) in enumerate(self.params):
            if t._data is not d:
                d = t._data
                f[slot] = d.reshape(1, -1) if as_row else d
                self.params[k] = (t, slot, as_row, d)
        for i, slot in self.ints_of.items():
            t = arr[i]
            self.ints[slot] = t if t.flags.c_contiguous else np.ascontiguousarray(t)
        leaves, folded = [], []
        for op in st.backward_ops:
            s = getattr(op, "slots", None)
            if isinstance(op, CrossEntropy):
                op.scale = 1.0 / op.meta[0][0]
                scal[s["neg_scale"]] = dt.type(-op.scale)
            elif isinstance(op, Dense):
                w, b = op.weight, op.bias
                if b._requires_grad:
                    gb = np.empty((1, b._data.shape[0]), dt)
                    f[s["gb"]] = gb
                    code[s["sum"], 0] = K.COLUMN_SUMS
                    code[s["sum"], 3] = get_num_threads()  # the eager bias gradient's split
                    leaves.append((b, gb.reshape(-1)))
                else:
                    code[s["sum"], 0] = K.NOP
                if op.bias_lr is not None:  # the optimizer's update, made here
                    code[s["sgd"], 0] = K.SGD
                    scal[s["lr_neg"]] = -op.bias_lr[0]
                    scal[s["maximize"]] = op.bias_lr[1]
                else:
                    code[s["sgd"], 0] = K.NOP
                if "gx" in s and op.inputs[0] not in st.ops:
                    gx = cpu.empty(arr[op.inputs[0]].shape, dt)
                    f[s["gx"]] = gx
                    leaves.append((values[op.inputs[0]], gx))
                row = s["wgemm"]
                if op.fold is not None:
                    code[row, 0], code[row, 3] = K.GEMM, s["w"]
                    scal[s["alpha"]], scal[s["beta"]] = op.fold, 1.0
                    folded.append(op)
                elif w._requires_grad:
                    gw = cpu.empty(w._data.shape, dt)
                    f[s["gw"]] = gw
                    code[row, 0], code[row, 3] = K.GEMM, s["gw"]
                    scal[s["alpha"]], scal[s["beta"]] = 1.0, 0.0
                    leaves.append((w, gw))
                else:
                    code[row, 0] = K.NOP
        # tuples of one array type: indexed at run time inside the compiled code, unboxed in
        # microseconds (numba's typed List cost 0.9 s per process to load its own methods)
        K.run_program(code, tuple(f), tuple(self.ints), scal, self.out64, self.gemm)
        for op in folded:
            w = op.weight
            w._grad = pending.make(f[op.slots["g"]], f[op.slots["x"]], dt)
            st.pending.append((w, w._grad))
        losses = {}
        for op in st.forward_ops:
            if isinstance(op, CrossEntropy):
                losses[op.out] = op.mean(self.out64[op.slots["t"]], dt)
        return losses, leaves
