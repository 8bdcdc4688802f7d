"""Train an MLP classifier on scikit-learn's bundled 8x8 handwritten digits with jitgrad.

    python examples/train_mlp.py                      # defaults: ~0.97 test accuracy
    python examples/train_mlp.py --epochs 5 --out /tmp/run
    mpiexec -n 2 python examples/train_mlp.py --distributed   # data parallel over MPI

The script is plain PyTorch code with ``import jitgrad as torch``: a ``Dataset``/``DataLoader``
pipeline, an ``nn.Sequential`` model, ``CrossEntropyLoss``, an ``optim`` optimizer with a cosine
learning-rate schedule. Each epoch shows a tqdm progress bar (on a terminal; in a log, one
finished bar line per epoch) and prints one line with the training loss and accuracy and the
test accuracy. At the end it writes ``curves.png`` (loss and accuracy per epoch) and
``checkpoint.pt`` (model and optimizer state, ``jitgrad.save``'s safe format) into ``--out``,
and prints ``test accuracy: 0.xxx``.

With ``--distributed`` (under ``mpiexec -n N``) every process trains a replica wrapped in
``DistributedDataParallel``: a ``DistributedSampler`` gives each rank ``batch-size / N`` samples
of every global batch, gradients are averaged over MPI, and only rank 0 prints, plots and saves.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import jitgrad as torch
import jitgrad.nn as nn
import jitgrad.nn.functional as F
from jitgrad.utils.data import DataLoader, TensorDataset


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train an MLP on the 8x8 digits with jitgrad.")
    p.add_argument("--epochs", type=int, default=20, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=64, help="mini-batch size")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--seed", type=int, default=0, help="seed for the split, init and shuffling")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", default=os.path.join("examples", "out"),
                   help="folder for curves.png and checkpoint.pt")
    p.add_argument("--hidden", type=int, default=128, help="width of the hidden layers")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.add_argument("--compile", action="store_true",
                   help="run the training step under jitgrad.compile (capture and replay)")
    p.add_argument("--limit", type=int, default=0,
                   help="use only the first N training and N test samples (quick runs, e.g. "
                        "on the CUDA simulator); 0: all")
    p.add_argument("--distributed", action="store_true",
                   help="data-parallel training over MPI: launch with mpiexec -n N; each rank "
                        "takes batch-size/N samples of every batch")
    args = p.parse_args(argv)
    check_common_args(p, args)
    return args


def check_common_args(p, args):
    """The checks every example's flags share (train_cnn.py calls this too)."""
    if args.epochs < 1:
        p.error("--epochs must be at least 1")
    if args.batch_size < 1:
        p.error("--batch-size must be at least 1")
    if args.limit < 0:
        p.error("--limit must be >= 0")
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        p.error(f"--device {args.device} requested, but jitgrad's CUDA backend is not available "
                "on this machine (jitgrad.cuda.is_available() is False); use --device cpu")
    if args.device != "cpu" and not args.device.startswith("cuda"):
        p.error(f"unknown --device {args.device!r}: expected cpu or cuda")


def load_data(seed):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    X = (digits.data / 16.0).astype(np.float32)  # pixel intensities 0..16 -> 0..1
    y = digits.target.astype(np.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.2, random_state=seed, stratify=y)
    # standardize with training statistics; near-constant border pixels keep a unit scale so a
    # stray test pixel does not blow up
    mean, std = X_train.mean(0), np.maximum(X_train.std(0), 0.1)
    return ((X_train - mean) / std, y_train), ((X_test - mean) / std, y_test)


def make_model(n_in, hidden, n_classes):
    return nn.Sequential(
        nn.Linear(n_in, hidden), nn.ReLU(), nn.Dropout(0.1),
        nn.Linear(hidden, hidden), nn.ReLU(),
        nn.Linear(hidden, n_classes),
    )


@torch.no_grad()
def evaluate(model, X, y):
    model.eval()
    logits = model(X)
    loss = F.cross_entropy(logits, y).item()
    acc = (logits.argmax(1) == y).float().mean().item()
    model.train()
    return loss, acc


def make_figure(history, title="jitgrad MLP on 8x8 digits"):
    """Loss and accuracy per epoch (train and test); epochs are whole numbers on the axis."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator
    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.plot(epochs, history["train_loss"], label="train")
    ax1.plot(epochs, history["test_loss"], label="test")
    ax1.set_ylabel("cross-entropy loss")
    ax1.set_title("loss")
    ax2.plot(epochs, history["train_acc"], label="train")
    ax2.plot(epochs, history["test_acc"], label="test")
    ax2.set_ylabel("accuracy")
    ax2.set_title("accuracy")
    ax2.set_ylim(0.0, 1.02)
    for ax in (ax1, ax2):
        ax.set_xlabel("epoch")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # no 2.5, 7.5 epochs
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def save_plot(history, path, title="jitgrad MLP on 8x8 digits"):
    import matplotlib.pyplot as plt
    fig = make_figure(history, title)
    fig.savefig(path, dpi=100)
    plt.close(fig)


class Progress:
    """One epoch's progress bar. On a terminal: tqdm's live bar, cleared at the end. In a log
    (stderr redirected): one finished bar line per epoch, not a stream of carriage returns.

    The count advances with ``step()`` (``tqdm.update``), and the postfix is set without a
    refresh of its own: refreshing from ``set_postfix`` while tqdm iterates a loader redraws its
    lazily updated count, which stays at 0/N for the whole epoch."""

    def __init__(self, total, desc, enabled=True, file=None, mininterval=0.1):
        from tqdm import tqdm
        self.file = sys.stderr if file is None else file
        self.total, self.desc, self.n, self.postfix = total, desc, 0, ""
        self.live = enabled and self.file.isatty()
        self.log = enabled and not self.live
        self.started = time.perf_counter()
        self.bar = tqdm(total=total, desc=desc, leave=False, unit="batch", file=self.file,
                        disable=not self.live, mininterval=mininterval, dynamic_ncols=True)

    def step(self, loss_value):
        self.n += 1
        self.postfix = f"loss={loss_value:.4f}"
        self.bar.set_postfix_str(self.postfix, refresh=False)
        self.bar.update(1)

    def close(self):
        from tqdm import tqdm
        self.bar.close()
        if self.log:
            line = tqdm.format_meter(self.n, self.total, time.perf_counter() - self.started,
                                     prefix=self.desc, unit="batch", postfix=self.postfix,
                                     ncols=100)
            self.file.write(line + "\n")
            self.file.flush()


def to_cpu(obj):
    """``obj`` (nested dicts/lists of tensors) with every tensor copied to the host."""
    if isinstance(obj, torch.Tensor):
        return obj.cpu()
    if isinstance(obj, dict):
        out = type(obj)((k, to_cpu(v)) for k, v in obj.items())
        if hasattr(obj, "_metadata"):
            out._metadata = obj._metadata
        return out
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def make_train_step(net, criterion, optimizer, compile=False):
    """One optimization step on a batch, returning (logits, loss); ``compile``: under
    ``torch.compile`` (the first call per batch shape and train/eval switch records, later ones
    replay)."""
    def step(xb, yb):
        optimizer.zero_grad()
        logits = net(xb)
        loss = criterion(logits, yb)
        loss.backward()
        optimizer.step()
        return logits, loss

    return torch.compile(step) if compile else step


def train(net, model, loader, optimizer, scheduler, criterion, device, epochs, test, *,
          sampler=None, progress=True, say=print, distributed=False, compile=False):
    """The training loop the examples share: ``epochs`` passes over ``loader`` (each batch moved
    to ``device``; ``net`` is ``model`` or its DistributedDataParallel wrapper), a progress bar
    per epoch, the scheduler stepped per epoch, then one line per epoch with the training loss
    and accuracy and the loss and accuracy of ``model`` on ``test`` = (X, y) in eval mode.
    ``distributed``: the epoch's totals are summed over every rank; ``compile``: the step under
    ``torch.compile``. Returns the history."""
    step = make_train_step(net, criterion, optimizer, compile)
    history = {"train_loss": [], "train_acc": [], "test_loss": [], "test_acc": []}
    for epoch in range(1, epochs + 1):
        if sampler is not None:
            sampler.set_epoch(epoch)
        total_loss, correct, seen = 0.0, 0, 0
        bar = Progress(len(loader), f"epoch {epoch:>3}/{epochs}", enabled=progress)
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            logits, loss = step(xb, yb)
            n = yb.shape[0]
            loss_value = loss.item()  # one device->host read per step on CUDA
            total_loss += loss_value * n
            correct += int((logits.argmax(1) == yb).sum().item())
            seen += n
            bar.step(loss_value)
        bar.close()
        scheduler.step()
        if distributed:  # the epoch's totals over every rank's samples
            import jitgrad.distributed as dist
            totals = torch.tensor([total_loss, correct, seen], dtype=torch.float64)
            dist.all_reduce(totals)
            total_loss, correct, seen = totals.tolist()
        train_loss, train_acc = total_loss / seen, correct / seen
        test_loss, test_acc = evaluate(model, *test)  # eval mode (dropout off, BN running stats)
        for key, value in (("train_loss", train_loss), ("train_acc", train_acc),
                           ("test_loss", test_loss), ("test_acc", test_acc)):
            history[key].append(value)
        say(f"epoch {epoch:>3}/{epochs}  loss {train_loss:.4f}  train acc "
            f"{train_acc:.3f}  test loss {test_loss:.4f}  test acc {test_acc:.3f}  "
            f"lr {scheduler.get_last_lr()[0]:.2e}", flush=True)
    return history


def main(argv=None):
    args = parse_args(argv)
    rank, world = 0, 1
    if args.distributed:
        import jitgrad.distributed as dist
        dist.init_process_group("mpi")
        rank, world = dist.get_rank(), dist.get_world_size()
        if args.batch_size % world:
            if rank == 0:
                print(f"--batch-size {args.batch_size} does not split evenly over {world} "
                      "processes", file=sys.stderr)
            dist.destroy_process_group()
            raise SystemExit(2)
    lead = rank == 0  # the one process that prints, plots and saves
    say = print if lead else (lambda *a, **k: None)

    t_start = time.perf_counter()
    torch.manual_seed(args.seed)
    (X_train, y_train), (X_test, y_test) = load_data(args.seed)
    if args.limit:
        X_train, y_train = X_train[:args.limit], y_train[:args.limit]
        X_test, y_test = X_test[:args.limit], y_test[:args.limit]
    device = torch.device(args.device)
    # the loader batches host tensors; each batch goes to the device in one copy per tensor
    # (the usual PyTorch pattern: per-sample indexing of device tensors would be a launch each)
    Xtr, ytr = torch.from_numpy(X_train), torch.from_numpy(y_train)
    Xte, yte = torch.from_numpy(X_test).to(device), torch.from_numpy(y_test).to(device)
    train_set = TensorDataset(Xtr, ytr)

    model = make_model(Xtr.shape[1], args.hidden, 10).to(device)
    sampler = None
    if args.distributed:
        from jitgrad.nn.parallel import DistributedDataParallel
        from jitgrad.utils.data import DistributedSampler
        net = DistributedDataParallel(model)  # rank 0's initial weights on every rank
        sampler = DistributedSampler(train_set, shuffle=True, seed=args.seed)
        torch.manual_seed(args.seed + rank)  # each rank its own dropout masks
    else:
        net = model
    loader = DataLoader(train_set, batch_size=args.batch_size // world, shuffle=sampler is None,
                        sampler=sampler)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    criterion = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    where = f"{world} processes x {args.batch_size // world} samples per batch" \
        if args.distributed else f"device: {args.device}"
    say(f"jitgrad {torch.__version__} | digits: {len(Xtr)} train / {len(Xte)} test | "
        f"model: {n_params} parameters | {where}")

    history = train(net, model, loader, optimizer, scheduler, criterion, device, args.epochs,
                    (Xte, yte), sampler=sampler, progress=lead and not args.no_progress,
                    say=say, distributed=args.distributed, compile=args.compile)

    _, test_acc = evaluate(model, Xte, yte)
    if lead:
        os.makedirs(args.out, exist_ok=True)
        plot_path = os.path.join(args.out, "curves.png")
        ckpt_path = os.path.join(args.out, "checkpoint.pt")
        save_plot(history, plot_path)
        # host copies: a checkpoint loads on any machine, with or without a GPU
        torch.save({"model": to_cpu(model.state_dict()),
                    "optimizer": to_cpu(optimizer.state_dict()), "epoch": args.epochs,
                    "history": history, "args": vars(args)}, ckpt_path)
        say(f"saved {plot_path} and {ckpt_path} ({time.perf_counter() - t_start:.1f} s)")
        say(f"test accuracy: {test_acc:.3f}")
    if args.distributed:
        dist.destroy_process_group()
    return test_acc


if __name__ == "__main__":
    main()
