"""A small CNN on synthetic images with a DataLoader and an lr scheduler,
written for PyTorch."""

import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 2 * 2, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(torch.flatten(x, 1))


def main():
    torch.manual_seed(0)
    device = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cpu")
    # Class 1 images have a bright top half, class 0 a bright bottom half.
    n = 256
    labels = torch.randint(0, 2, (n,))
    images = 0.3 * torch.randn(n, 1, 8, 8)
    images[labels == 1, :, :4] += 1.0
    images[labels == 0, :, 4:] += 1.0
    loader = DataLoader(TensorDataset(images, labels), batch_size=32, shuffle=True)
    model = Net().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = StepLR(opt, step_size=2, gamma=0.5)
    for epoch in range(4):
        total = 0.0
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            total += loss.item() * len(xb)
        sched.step()
        print(f"epoch {epoch}: loss {total / n:.4f}, lr {sched.get_last_lr()[0]:.3f}")
    with torch.no_grad():
        acc = (model(images.to(device)).argmax(1).cpu() == labels).float().mean()
    print(f"accuracy {acc:.3f}")
    assert total / n < 0.1 and acc > 0.97, (total / n, acc)
    print("OK")


if __name__ == "__main__":
    main()
