"""Linear regression with manual SGD on param.data, written for PyTorch."""

import torch

torch.manual_seed(0)
x = torch.linspace(-1, 1, 64).unsqueeze(1)
y = 3.0 * x - 0.5 + 0.05 * torch.randn(64, 1)
w = torch.zeros(1, 1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(300):
    loss = ((x @ w + b - y) ** 2).mean()
    loss.backward()
    for p in (w, b):
        p.data -= 0.2 * p.grad.data
        p.grad.zero_()
print(f"step {step}: loss {loss:.5f}, w {w.item():+.3f}, b {b.item():+.3f}")
assert loss.item() < 0.01, loss.item()
assert abs(w.item() - 3.0) < 0.1 and abs(b.item() + 0.5) < 0.1
print("OK")
