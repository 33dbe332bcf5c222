#!/usr/bin/env python
"""Train a small CNN on scikit-learn's 8x8 handwritten digits with rumus.

    bash scripts/train.sh                         # set-up, then this script
    .venv/bin/python examples/train_digits.py --epochs 12 --seed 0

The 1,797 images (pixels scaled to [0, 1]) are split 80/20, stratified, into a
training and a test set. Each epoch trains with AdamW under a one-cycle learning
rate schedule, shows a progress bar with the running loss and accuracy, then
evaluates on the test set. At the end the script

* checks the test accuracy reached the target (97 %; skipped for short runs),
* saves a checkpoint (model + optimizer state + epoch) with `rumus.save`,
* loads it into a fresh model and checks its test predictions are identical,
* writes a PNG with the loss and accuracy curves.

It exits with status 1 when a check fails. Port to PyTorch: replace `rumus`
with `torch`.
"""

import argparse
import os
import sys
import tempfile
import time
from typing import Any, Optional

import numpy as np
import numpy.typing as npt
import rumus
import rumus.nn.functional as F
from rumus import nn
from rumus.optim.lr_scheduler import LRScheduler, OneCycleLR
from rumus.utils.data import DataLoader, TensorDataset

TARGET_ACCURACY = 0.97
# Below this many epochs the schedule is too short to promise the target.
MIN_EPOCHS_FOR_TARGET = 8


def parse_args(argv: Optional[list[str]]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument(
        "--lr", type=float, default=3e-3, help="peak learning rate of the one-cycle schedule"
    )
    p.add_argument("--weight-decay", type=float, default=1e-2)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--out",
        default=os.path.join(tempfile.gettempdir(), "rumus_digits"),
        help="directory for the checkpoint and the plot (default: %(default)s)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bars (e.g. in CI logs)")
    args = p.parse_args(argv)
    if args.epochs < 1:
        p.error("--epochs must be >= 1")
    return args


def load_digits_split(seed: int) -> tuple[npt.NDArray[Any], ...]:
    """(x_train, y_train, x_test, y_test) as NumPy arrays, images shaped (N, 1, 8, 8)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    x, y = load_digits(return_X_y=True)
    x = (x / 16.0).astype(np.float32).reshape(-1, 1, 8, 8)
    y = y.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=0.2, stratify=y, random_state=seed)
    return x_tr, y_tr, x_te, y_te


def make_model() -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.BatchNorm2d(32),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Dropout(0.25),
        nn.Linear(64 * 4 * 4, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def evaluate(
    model: nn.Module, loader: DataLoader, device: str
) -> tuple[float, float, npt.NDArray[np.float32]]:
    """(mean loss, accuracy, logits as NumPy) over `loader`, in eval mode."""
    model.eval()
    loss_sum, correct, n = 0.0, 0, 0
    logits: list[npt.NDArray[np.float32]] = []
    with rumus.no_grad():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            out = model(x)
            loss_sum += F.cross_entropy(out, y, reduction="sum").item()
            correct += (out.argmax(dim=1) == y).sum().item()
            n += y.shape[0]
            logits.append(out.to("cpu").numpy().copy())
    return loss_sum / n, correct / n, np.concatenate(logits)


def train_epoch(
    model: nn.Module,
    loader: DataLoader,
    opt: rumus.optim.Optimizer,
    sched: LRScheduler,
    device: str,
    bar: Any,
) -> tuple[float, float]:
    """One pass over `loader`; returns (mean loss, accuracy) of the training batches."""
    model.train()
    loss_sum, correct, n = 0.0, 0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()  # one-cycle schedules step per batch
        b = y.shape[0]
        loss_sum += loss.item() * b
        correct += (out.argmax(dim=1) == y).sum().item()
        n += b
        bar.update(1)
        bar.set_postfix(loss=f"{loss_sum / n:.4f}", acc=f"{correct / n:.3f}")
    return loss_sum / n, correct / n


def plot_curves(history: dict[str, list[float]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, no display needed
    import matplotlib.pyplot as plt

    epochs = np.arange(1, len(history["train_loss"]) + 1)
    fig, (ax_loss, ax_acc) = plt.subplots(1, 2, figsize=(10, 4))
    ax_loss.plot(epochs, history["train_loss"], "o-", label="train loss")
    ax_loss.plot(epochs, history["test_loss"], "s-", label="test loss")
    ax_loss.set_xlabel("epoch")
    ax_loss.set_ylabel("cross-entropy")
    ax_loss.set_yscale("log")
    ax_loss.legend()
    ax_loss.grid(alpha=0.3)
    ax_acc.plot(
        epochs, np.asarray(history["test_acc"]) * 100, "s-", color="C2", label="test accuracy"
    )
    ax_acc.axhline(
        TARGET_ACCURACY * 100, color="grey", ls="--", label=f"target {TARGET_ACCURACY:.0%}"
    )
    ax_acc.set_xlabel("epoch")
    ax_acc.set_ylabel("accuracy (%)")
    ax_acc.legend()
    ax_acc.grid(alpha=0.3)
    fig.suptitle("rumus: small CNN on sklearn digits")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv: Optional[list[str]] = None) -> int:
    args = parse_args(argv)
    from tqdm.auto import tqdm

    rumus.manual_seed(args.seed)  # weight init and dropout masks
    x_tr, y_tr, x_te, y_te = load_digits_split(args.seed)
    train_ds = TensorDataset(rumus.from_numpy(x_tr), rumus.from_numpy(y_tr))
    test_ds = TensorDataset(rumus.from_numpy(x_te), rumus.from_numpy(y_te))
    shuffle_gen = rumus.Generator().manual_seed(args.seed)
    train_loader = DataLoader(
        train_ds, batch_size=args.batch_size, shuffle=True, generator=shuffle_gen
    )
    test_loader = DataLoader(test_ds, batch_size=256)
    print(f"digits: {len(train_ds)} train / {len(test_ds)} test images, device {args.device}")

    model = make_model().to(args.device)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params:,} parameters")
    opt = rumus.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    sched = OneCycleLR(opt, max_lr=args.lr, epochs=args.epochs, steps_per_epoch=len(train_loader))

    history: dict[str, list[float]] = {
        "train_loss": [],
        "train_acc": [],
        "test_loss": [],
        "test_acc": [],
    }
    start = time.perf_counter()
    for epoch in range(1, args.epochs + 1):
        with tqdm(
            total=len(train_loader),
            desc=f"epoch {epoch:2d}/{args.epochs}",
            unit="batch",
            leave=False,
            disable=args.no_progress,
        ) as bar:
            tr_loss, tr_acc = train_epoch(model, train_loader, opt, sched, args.device, bar)
        te_loss, te_acc, _ = evaluate(model, test_loader, args.device)
        for k, v in zip(history, (tr_loss, tr_acc, te_loss, te_acc)):
            history[k].append(v)
        print(
            f"epoch {epoch:2d}/{args.epochs}  train loss {tr_loss:.4f} acc {tr_acc:.3f}  "
            f"test loss {te_loss:.4f} acc {te_acc:.3f}  lr {sched.get_last_lr()[0]:.2e}",
            flush=True,
        )
    print(f"training took {time.perf_counter() - start:.1f} s")

    failures: list[str] = []
    final_acc = history["test_acc"][-1]
    if args.epochs >= MIN_EPOCHS_FOR_TARGET:
        if final_acc < TARGET_ACCURACY:
            failures.append(
                f"test accuracy {final_acc:.2%} is below the target {TARGET_ACCURACY:.0%}"
            )
        else:
            print(f"test accuracy {final_acc:.2%} >= target {TARGET_ACCURACY:.0%}")
    else:
        print(
            f"test accuracy {final_acc:.2%} (target not checked for fewer than "
            f"{MIN_EPOCHS_FOR_TARGET} epochs)"
        )

    os.makedirs(args.out, exist_ok=True)
    ckpt_path = os.path.join(args.out, "digits_cnn.safetensors")
    rumus.save(
        {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": args.epochs},
        ckpt_path,
    )
    print(f"checkpoint: {ckpt_path}")

    # A fresh model (different random init) must reproduce the predictions exactly.
    ckpt = rumus.load(ckpt_path)
    restored = make_model().to(args.device)
    restored.load_state_dict(ckpt["model"])
    rumus.optim.AdamW(restored.parameters(), lr=args.lr).load_state_dict(ckpt["optimizer"])
    _, _, logits = evaluate(model, test_loader, args.device)
    _, restored_acc, restored_logits = evaluate(restored, test_loader, args.device)
    same_preds = np.array_equal(logits.argmax(1), restored_logits.argmax(1))
    same_logits = np.array_equal(logits, restored_logits)
    print(
        f"reloaded checkpoint (epoch {ckpt['epoch']}): test accuracy {restored_acc:.2%}, "
        f"predictions identical: {same_preds}, logits bit-identical: {same_logits}"
    )
    if not (same_preds and same_logits):
        failures.append("the reloaded model's test predictions differ from the trained model's")

    plot_path = os.path.join(args.out, "digits_curves.png")
    plot_curves(history, plot_path)
    print(f"curves: {plot_path}")

    if failures:
        for f in failures:
            print(f"FAILED: {f}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
