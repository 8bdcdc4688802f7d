"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits with jitgrad.

    python examples/train_cnn.py                      # defaults: >= 0.98 test accuracy
    python examples/train_cnn.py --epochs 5 --device cuda --out /tmp/run

The first CNN of any PyTorch tutorial, with ``import jitgrad as torch``: two blocks of
``Conv2d -> BatchNorm2d -> ReLU -> MaxPool2d`` (8x8 -> 4x4 -> 2x2), then a ``Linear`` layer,
trained with ``CrossEntropyLoss``, AdamW and a cosine learning-rate schedule. Same shape as
``train_mlp.py`` (whose data, training loop, evaluation, plot and checkpoint helpers it
reuses): a tqdm
progress bar per epoch, one line per epoch with the training loss and accuracy and the test
accuracy, then ``curves.png`` and ``checkpoint.pt`` in ``--out`` and ``test accuracy: 0.xxx``.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import jitgrad as torch
import jitgrad.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_mlp import (  # noqa: E402
    check_common_args,
    evaluate,
    load_data,
    save_plot,
    to_cpu,
    train,
)

sys.path.pop(0)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="Train a small CNN on the 8x8 digits with jitgrad.")
    p.add_argument("--epochs", type=int, default=10, help="passes over the training set")
    p.add_argument("--batch-size", type=int, default=32, help="mini-batch size")
    p.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (AdamW)")
    p.add_argument("--seed", type=int, default=0, help="seed for the split, init and shuffling")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--out", default=os.path.join("examples", "out_cnn"),
                   help="folder for curves.png and checkpoint.pt")
    p.add_argument("--channels", type=int, default=16,
                   help="channels of the first convolution (the second has twice as many)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    p.add_argument("--compile", action="store_true",
                   help="run the training step under jitgrad.compile (capture and replay)")
    p.add_argument("--limit", type=int, default=0,
                   help="use only the first N training and N test samples (quick runs, e.g. "
                        "on the CUDA simulator); 0: all")
    args = p.parse_args(argv)
    check_common_args(p, args)
    if args.channels < 1:
        p.error("--channels must be at least 1")
    return args


def make_model(channels, n_classes=10):
    c1, c2 = channels, 2 * channels
    return nn.Sequential(
        nn.Conv2d(1, c1, 3, padding=1), nn.BatchNorm2d(c1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(c1, c2, 3, padding=1), nn.BatchNorm2d(c2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(c2 * 2 * 2, n_classes),
    )


def main(argv=None):
    args = parse_args(argv)

    t_start = time.perf_counter()
    torch.manual_seed(args.seed)
    (X_train, y_train), (X_test, y_test) = load_data(args.seed)
    if args.limit:
        X_train, y_train = X_train[:args.limit], y_train[:args.limit]
        X_test, y_test = X_test[:args.limit], y_test[:args.limit]
    device = torch.device(args.device)
    # images as (N, 1, 8, 8); the loader batches host tensors, each batch goes to the device in
    # one copy per tensor
    Xtr = torch.from_numpy(X_train.reshape(-1, 1, 8, 8).copy())
    ytr = torch.from_numpy(y_train)
    Xte = torch.from_numpy(X_test.reshape(-1, 1, 8, 8).copy()).to(device)
    yte = torch.from_numpy(y_test).to(device)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xtr, ytr),
                                         batch_size=args.batch_size, shuffle=True)

    model = make_model(args.channels).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.epochs)
    criterion = nn.CrossEntropyLoss()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"jitgrad {torch.__version__} | digits: {len(Xtr)} train / {len(Xte)} test | "
          f"model: {n_params} parameters | device: {args.device}")

    history = train(model, model, loader, optimizer, scheduler, criterion, device, args.epochs,
                    (Xte, yte), progress=not args.no_progress, compile=args.compile)

    os.makedirs(args.out, exist_ok=True)
    plot_path = os.path.join(args.out, "curves.png")
    ckpt_path = os.path.join(args.out, "checkpoint.pt")
    save_plot(history, plot_path, title="jitgrad CNN on 8x8 digits")
    torch.save({"model": to_cpu(model.state_dict()), "optimizer": to_cpu(optimizer.state_dict()),
                "epoch": args.epochs, "history": history, "args": vars(args)}, ckpt_path)
    print(f"saved {plot_path} and {ckpt_path} ({time.perf_counter() - t_start:.1f} s)")
    _, test_acc = evaluate(model, Xte, yte)
    print(f"test accuracy: {test_acc:.3f}")
    return test_acc


if __name__ == "__main__":
    main()
