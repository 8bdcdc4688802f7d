"""What tutorial/course-style programs (session 13: training loops with AdamW/RMSprop/Adagrad
and their schedulers, module features, losses, selection ops, data loading, error messages)
showed differing under ``import jitgrad as torch``, pinned against PyTorch run in the same
test; and a whole program compared by what it prints."""
import contextlib
import io

import numpy as np
import pytest
from _parity import agree

import jitgrad

torch = pytest.importorskip("torch")


# ------------------------------------------- nll_loss's reduced forward: ATen's cascade bits

def _log_probs(shape, dtype, seed):
    """Log-probabilities along dim 1 (dim 0 for 1-D), computed in NumPy: the same input bits
    for both libraries."""
    rs = np.random.RandomState(seed)
    x = rs.randn(*shape) * 2
    d = 0 if len(shape) == 1 else 1
    x = x - np.log(np.exp(x).sum(axis=d, keepdims=True))
    return x.astype(dtype)


_NLL_SHAPES = [(64, 10), (5, 4), (300, 7), (1000, 3), (4, 3, 6), (2, 4, 3, 5), (6,),
               (3, 4, 2, 2, 2)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", _NLL_SHAPES)
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignored", [False, True])
def test_nll_loss_reduced_bits(dtype, shape, reduction, weighted, ignored):
    """The printed loss and its gradient bit for bit: ATen sums ``-x[i, t[i]] * w`` and the
    weights in the input's dtype over an 8-level cascade and divides in the dtype; the
    backward is ``w[t] * -(g / total_weight)``. A float64 sum rounded once put about half of
    all float32 classification losses an ulp off (``print(loss.item())`` differed)."""
    x = _log_probs(shape, dtype, sum(shape))
    rs = np.random.RandomState(len(shape))
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rs.randint(0, c, tshape)
    if ignored and t.ndim:
        t[rs.rand(*tshape) < 0.2] = -100
    w = (rs.rand(c) + 0.3).astype(dtype) if weighted else None

    def f(T):
        xx = T.tensor(x, requires_grad=True)
        loss = T.nn.functional.nll_loss(xx, T.tensor(t), None if w is None else T.tensor(w),
                                        reduction=reduction)
        (loss * 0.37).backward()  # a cotangent other than 1: -(g / W), not (-1 / W) * g
        return [loss.item(), type(loss.grad_fn).__name__, xx.grad,
                np.signbit(xx.grad.numpy()).tolist()]
    agree(f)


@pytest.mark.parametrize("case", ["all_ignored", "zero_weight"])
def test_nll_loss_zero_total_weight(case):
    """0 / 0: the loss is NaN; ATen's gradient -(g / 0) * w is NaN at kept targets, ignored
    ones and the other classes stay +0."""
    def f(T):
        x = T.zeros(3, 4, requires_grad=True)
        if case == "all_ignored":
            loss = T.nn.functional.nll_loss(x, T.tensor([-100, -100, -100]))
        else:
            loss = T.nn.functional.nll_loss(x, T.tensor([1, 1, -100]),
                                            weight=T.tensor([1.0, 0.0, 0.0, 1.0]))
        loss.backward()
        return [loss, x.grad, np.signbit(x.grad.numpy()).tolist()]
    agree(f)


def test_cross_entropy_training_loss_sums():
    """A classifier's epoch loss accumulated from ``loss.item() * len(batch)``, given the same
    log-probabilities (log_softmax's own bits are a separate matter): nll_loss's mean."""
    def f(T):
        rs = np.random.RandomState(0)
        total = 0.0
        for step in range(20):
            lp = T.tensor(_log_probs((32, 10), "float32", step))
            y = T.tensor(rs.randint(0, 10, 32))
            total += T.nn.functional.nll_loss(lp, y).item() * 32
        return total
    agree(f)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 10), (5, 3), (128, 1000), (7, 17)])
@pytest.mark.parametrize("kw", ["plain", "smoothing", "weight", "ignore"])
def test_cross_entropy_loss_and_grad_bits(dtype, shape, kw):
    """``F.cross_entropy`` end to end (the fast (N, C) path and the general one): its
    log-softmax is ATen's row kernel (SLEEF exp/log, reduce_all's order) and its NLL ATen's
    cascade, so ``loss.item()`` and the logits' gradient are PyTorch's bits (the fast path's
    own kernel summed in float64 with libm's exp: ~10% of float32 losses an ulp off)."""
    rs = np.random.RandomState(shape[1])
    x = (rs.randn(*shape) * 2).astype(dtype)
    y = rs.randint(0, shape[1], shape[0])
    w = rs.rand(shape[1]).astype(dtype)

    def f(T):
        xx = T.tensor(x, requires_grad=True)
        extra = {"plain": {}, "smoothing": {"label_smoothing": 0.1},
                 "weight": {"weight": T.tensor(w)}, "ignore": {"ignore_index": int(y[0])}}[kw]
        loss = T.nn.functional.cross_entropy(xx, T.tensor(y), **extra)
        loss.backward()
        return [loss.item(), xx.grad]
    agree(f)


def test_classifier_epoch_losses_printed():
    """A tutorial classifier (Linear-ReLU-Linear, SGD with momentum, CrossEntropyLoss over
    batches): every printed batch loss, full precision, bit for bit. (With Tanh it drifts:
    PyTorch's float32 tanh is MKL VML, not reproduced.)"""
    def f(T):
        T.manual_seed(42)
        X = T.randn(64, 2)
        y = ((X[:, 0] * X[:, 1]) > 0).long()
        model = T.nn.Sequential(T.nn.Linear(2, 16), T.nn.ReLU(), T.nn.Linear(16, 2))
        opt = T.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        losses = []
        for _ in range(3):
            for i in range(0, 64, 16):
                opt.zero_grad()
                loss = T.nn.CrossEntropyLoss()(model(X[i:i + 16]), y[i:i + 16])
                loss.backward()
                opt.step()
                losses.append(loss.item())
        return losses
    agree(f)


# ---------------------------------------- ties: topk / kthvalue / median / unstable sort

def _tied(shape, dtype, seed, nan=False):
    rs = np.random.RandomState(seed)
    a = rs.randint(0, 4, shape).astype(dtype)
    if nan:
        a[rs.rand(*shape) < 0.2] = np.nan
    return a


@pytest.mark.parametrize("n,k", [(7, 3), (10, 1), (5, 2), (16, 16), (30, 10), (33, 16),
                                 (200, 2), (200, 3), (1000, 5), (130, 65)])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("sorted_", [True, False])
@pytest.mark.parametrize("nan", [False, True])
def test_topk_ties_as_aten(n, k, largest, sorted_, nan):
    """Among equal values topk returns the indices ATen's topk_impl_loop leaves: libstdc++'s
    partial_sort (k * 64 <= n) or nth_element then sort of the first k - 1 (``x.topk(3)`` of
    ``[3, 1, 2, 3, 0, 1, 5]`` is indices [6, 3, 0] in PyTorch; jitgrad said [6, 0, 3])."""
    a = _tied((3, n), np.float32, n * 7 + k, nan)
    agree(lambda T: list(T.tensor(a).topk(k, dim=1, largest=largest, sorted=sorted_)))


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.uint8, np.float16, np.float64])
def test_topk_ties_dtypes_and_dims(dtype):
    a = _tied((5, 40, 3), dtype, 3)
    agree(lambda T: [list(T.tensor(a).topk(4, dim=1)), list(T.tensor(a).topk(2, dim=0)),
                     list(T.topk(T.tensor(a), 3, dim=-1, largest=False))])


def test_topk_accuracy_on_rounded_logits():
    """Top-2 accuracy over quantized scores (ties between classes): which class index is
    reported decides the count."""
    def f(T):
        T.manual_seed(0)
        logits = (T.randn(50, 6) * 2).round()
        labels = T.randint(0, 6, (50,))
        top = logits.topk(2, dim=1).indices
        return [top, (top == labels[:, None]).any(1).sum().item()]
    agree(f)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 9, 17, 33, 100, 257])
@pytest.mark.parametrize("nan", [False, True])
def test_kthvalue_ties_as_aten(n, nan):
    """kthvalue's index among equal values is where ATen's quick_select_template leaves it."""
    a = _tied((4, n), np.float32, n, nan)
    agree(lambda T: [list(T.tensor(a).kthvalue(k, dim=1)) for k in sorted({1, (n + 1) // 2,
                                                                            n})])


@pytest.mark.parametrize("n", [1, 2, 4, 5, 9, 16, 17, 100])
@pytest.mark.parametrize("nan", [False, True])
def test_median_ties_by_index(n, nan):
    """median/nanmedian with dim: ATen's comparator breaks ties by index (the position in a
    stable sort), a NaN slice gives its first NaN; jitgrad returned the first equal value."""
    a = _tied((3, n), np.float32, n + 1, nan)
    agree(lambda T: [list(T.median(T.tensor(a), 1)), list(T.nanmedian(T.tensor(a), 1)),
                     list(T.median(T.tensor(a).t(), 0, keepdim=True))])


@pytest.mark.parametrize("n", [1, 4, 9, 50])
def test_nanmedian_all_nan_index(n):
    """An all-NaN slice: the index libstdc++'s nth_element leaves at position 0."""
    a = np.full((2, n), np.nan, np.float32)
    agree(lambda T: list(T.nanmedian(T.tensor(a), 1)))


@pytest.mark.parametrize("n", [16, 17, 20, 33, 100, 1000])
@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_])
def test_unstable_sort_ties_as_std_sort(n, descending, dtype):
    """``sort``/``argsort`` default to stable=False: ATen runs std::sort (introsort) on
    (value, index) pairs, so equal values beyond 16 elements come out in its order, not in
    index order; ``stable=True`` keeps index order."""
    a = _tied((2, n), dtype, n)

    def f(T):
        x = T.tensor(a)
        return [list(x.sort(descending=descending)), x.argsort(dim=1, descending=descending),
                list(T.sort(x.t(), dim=0, descending=descending)),
                list(x.sort(stable=True, descending=descending))]
    agree(f)


def test_unstable_sort_nan_and_distinct_rows():
    """NaN ties (NaN last ascending, first descending) and a row without ties beside a tied
    one (only tied slices are re-sorted)."""
    a = np.stack([np.arange(40, dtype=np.float32)[::-1], _tied((40,), np.float32, 1, True)])
    agree(lambda T: [list(T.tensor(a).sort()), list(T.tensor(a).sort(descending=True))])


def test_pack_padded_sequence_unsorted_tied_lengths():
    """``enforce_sorted=False`` sorts the lengths with torch.sort(descending=True): with more
    than 16 sequences and tied lengths, sorted_indices follow std::sort's order."""
    def f(T):
        T.manual_seed(0)
        lengths = T.randint(1, 5, (24,))
        x = T.randn(24, 4, 2)
        packed = T.nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True,
                                                     enforce_sorted=False)
        return [packed.sorted_indices, packed.unsorted_indices, packed.batch_sizes,
                packed.data]
    agree(f)


# --------------------------------------------------- whole programs, compared by their prints

def _printed(lib, code):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            exec(code, {"torch": lib, "__name__": "__main__"})
        except Exception as e:  # noqa: BLE001 - the error is part of what is compared
            print("raised", type(e).__name__, str(e).split("\n")[0])
    return out.getvalue().replace("jitgrad", "torch")


def _check_program(code):
    mine, ref = _printed(jitgrad, code), _printed(torch, code)
    assert mine == ref


SCHEDULER_COMBINATIONS = """
nn = torch.nn
p = [nn.Parameter(torch.zeros(1))]
opt = torch.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True)
warm = torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3)
cos = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5)
seq = torch.optim.lr_scheduler.SequentialLR(opt, [warm, cos], milestones=[3])
lrs = []
for _ in range(9):
    opt.step(); seq.step(); lrs.append(opt.param_groups[0]["lr"])
print(lrs, seq.state_dict()["_milestones"])
opt2 = torch.optim.Adam(p, lr=1.0)
ch = torch.optim.lr_scheduler.ChainedScheduler([
    torch.optim.lr_scheduler.LambdaLR(opt2, lambda e: 0.5 ** e),
    torch.optim.lr_scheduler.ExponentialLR(opt2, 0.9)])
for _ in range(3): opt2.step(); ch.step()
print(opt2.param_groups[0]["lr"], ch.get_last_lr())
opt3 = torch.optim.SGD(p, lr=0.01)
cyc = torch.optim.lr_scheduler.CyclicLR(opt3, base_lr=0.001, max_lr=0.1, step_size_up=2,
                                        mode="triangular2")
for _ in range(8): opt3.step(); cyc.step(); print(cyc.get_last_lr())
opt4 = torch.optim.SGD(p, lr=1.0)
poly = torch.optim.lr_scheduler.PolynomialLR(opt4, total_iters=4, power=2.0)
st = torch.optim.lr_scheduler.StepLR(opt4, step_size=2, gamma=0.5)
for _ in range(5): opt4.step(); poly.step(); st.step()
print(opt4.param_groups[0]["lr"], poly.state_dict()["_last_lr"])
opt5 = torch.optim.RMSprop(p, lr=0.01)
wr = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt5, T_0=3, T_mult=2, eta_min=1e-4)
for epoch in range(10):
    for it in range(2):
        opt5.step(); wr.step(epoch + it / 2)
    print(epoch, wr.get_last_lr(), wr.T_cur, wr.T_i)
try:
    torch.optim.lr_scheduler.OneCycleLR(opt4, max_lr=1.0)
except ValueError as e:
    print(e)
"""

def test_scheduler_combinations_program():
    """SequentialLR (LinearLR warm-up into cosine), ChainedScheduler, CyclicLR triangular2,
    PolynomialLR beside StepLR, and CosineAnnealingWarmRestarts stepped with fractional epochs
    (``step(epoch + it / iters)``, the tutorial spelling), compared by what they print."""
    _check_program(SCHEDULER_COMBINATIONS)
