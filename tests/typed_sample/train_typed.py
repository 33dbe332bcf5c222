"""A small training script with every name annotated: tests/test_typing.py runs
``mypy --strict`` on it (and on examples/), and runs it, so the stubs and the package's
annotations are checked against what a user writes. Two-moons-like data, a two-layer
MLP, AdamW with a cosine schedule, and a checkpoint saved and loaded.

Run: .venv/bin/python tests/typed_sample/train_typed.py
"""

import math
import os
import tempfile
from typing import Any

import rumus
import rumus.nn.functional as F
from rumus import Tensor, nn
from rumus.optim import AdamW, Optimizer
from rumus.optim.lr_scheduler import CosineAnnealingLR, LRScheduler
from rumus.utils.data import DataLoader, Dataset, TensorDataset


class MLP(nn.Module):
    def __init__(self, n_in: int, hidden: int, n_out: int, p_drop: float = 0.1) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Linear(n_in, hidden),
            nn.ReLU(),
            nn.Dropout(p_drop),
            nn.Linear(hidden, hidden),
            nn.GELU(),
        )
        self.head = nn.Linear(hidden, n_out)
        nn.init.xavier_uniform_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, x: Tensor) -> Tensor:
        # Module.__call__ returns Any (as in PyTorch): name the type where it matters.
        features: Tensor = self.body(x)
        logits: Tensor = self.head(features)
        return logits


def make_data(n: int, seed: int) -> tuple[Tensor, Tensor]:
    """Two interleaved half circles with noise: (n, 2) float32 points, (n,) int64 labels."""
    gen = rumus.Generator().manual_seed(seed)
    angle = rumus.rand(n, generator=gen) * math.pi
    label = rumus.randint(0, 2, (n,), generator=gen)
    upper = label == 0
    x = rumus.where(upper, angle.cos(), 1.0 - angle.cos())
    y = rumus.where(upper, angle.sin(), 0.5 - angle.sin())
    points = rumus.stack([x, y], dim=1) + 0.1 * rumus.randn(n, 2, generator=gen)
    return points, label


def train_epoch(
    model: nn.Module,
    loader: DataLoader,
    optimizer: Optimizer,
    scheduler: LRScheduler,
) -> float:
    model.train()
    total, count = 0.0, 0
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = F.cross_entropy(model(inputs), targets)
        loss.backward()
        optimizer.step()
        total += loss.item() * len(targets)
        count += len(targets)
    scheduler.step()
    return total / count


@rumus.no_grad()
def accuracy(model: nn.Module, dataset: Dataset) -> float:
    model.eval()
    points, labels = dataset[:]
    predicted: Tensor = model(points).argmax(dim=1)
    return float((predicted == labels).float().mean())


def save_checkpoint(path: str, model: nn.Module, optimizer: Optimizer, epoch: int) -> None:
    state: dict[str, Any] = {
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "epoch": epoch,
    }
    rumus.save(state, path)


def load_checkpoint(path: str, model: nn.Module, optimizer: Optimizer) -> int:
    state = rumus.load(path, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    epoch: int = state["epoch"]
    return epoch


def main(epochs: int = 20) -> float:
    rumus.manual_seed(0)
    train_x, train_y = make_data(256, seed=1)
    test_x, test_y = make_data(128, seed=2)
    train_set = TensorDataset(train_x, train_y)
    test_set = TensorDataset(test_x, test_y)
    loader = DataLoader(train_set, batch_size=32, shuffle=True)

    model = MLP(2, 32, 2)
    optimizer = AdamW(model.parameters(), lr=1e-2, weight_decay=1e-4)
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    losses: list[float] = []
    for _ in range(epochs):
        losses.append(train_epoch(model, loader, optimizer, scheduler))
    acc = accuracy(model, test_set)
    lr: list[float] = scheduler.get_last_lr()
    print(f"loss {losses[0]:.3f} -> {losses[-1]:.3f}, test accuracy {acc:.3f}, lr {lr[0]:.2e}")

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "ckpt.rumus")
        save_checkpoint(path, model, optimizer, epochs)
        restored = MLP(2, 32, 2)
        restored_opt = AdamW(restored.parameters(), lr=1e-2)
        assert load_checkpoint(path, restored, restored_opt) == epochs
    assert accuracy(restored, test_set) == acc
    return acc


if __name__ == "__main__":
    main()
