#!/usr/bin/env python
"""A short tour of rumus tensors (CPU, eager).  Run:

.venv/bin/python examples/demo.py
"""

import numpy as np
import rumus


def section(title: str) -> None:
    print(f"\n== {title} " + "=" * (60 - len(title)))


print("rumus", rumus.__version__, "| numpy", np.__version__)

# ---------------------------------------------------------------- creation
section("creation")
a = rumus.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print("a =", a)
print("a.shape", tuple(a.shape), " a.dtype", a.dtype, " a.device", a.device)
print("zeros(2, 3) =", rumus.zeros(2, 3))
print("ones(3, dtype=int64) =", rumus.ones(3, dtype=rumus.int64))
print("arange(6).reshape(2, 3) =", rumus.arange(6).reshape(2, 3))
print("linspace(0, 1, 5) =", rumus.linspace(0, 1, 5))
print("eye(3) =", rumus.eye(3))
rumus.manual_seed(0)
print("randn(2, 3) (seed 0) =", rumus.randn(2, 3))

# ------------------------------------------------ from_numpy is zero-copy
section("from_numpy shares memory")
arr = np.arange(6, dtype=np.float32).reshape(2, 3)
t = rumus.from_numpy(arr)
arr[0, 0] = 100.0  # NumPy write, seen by rumus
print("after arr[0, 0] = 100:  t[0, 0] =", t[0, 0].item())
assert t[0, 0].item() == 100.0
t[1, 2] = -1.0  # rumus write, seen by NumPy
print("after t[1, 2] = -1:     arr[1, 2] =", arr[1, 2])
assert arr[1, 2] == -1.0
t.mul_(2)  # in-place op, seen by NumPy too
print("after t.mul_(2):        arr =", arr.tolist())
assert arr[0, 0] == 200.0
assert np.shares_memory(t.numpy(), arr)

# ----------------------------------------------------------- broadcasting
section("broadcasting arithmetic")
col = rumus.tensor([[10.0], [20.0]])  # (2, 1)
row = rumus.tensor([1.0, 2.0, 3.0])  # (3,)
print("col + row =", col + row)  # (2, 3)
print("a * 2 - 1 =", a * 2 - 1)
print("a / row =", a / row)
print("exp(a - a.max()) =", rumus.exp(a - a.max()))
assert np.allclose((col + row).numpy(), np.array([[11, 12, 13], [21, 22, 23]]))

# ------------------------------------------------------------- reductions
section("reductions")
print("a.sum() =", a.sum(), "  a.sum(dim=0) =", a.sum(dim=0))
print("a.mean(dim=1) =", a.mean(dim=1))
m = a.max(dim=1)
print("a.max(dim=1): values =", m.values, " indices =", m.indices)
assert a.sum().item() == 21.0
assert m.indices.tolist() == [2, 2]

# ----------------------------------------------------------------- matmul
section("matmul")
g = a @ a.T  # (2, 3) @ (3, 2) -> (2, 2)
print("a @ a.T =", g)
assert np.allclose(g.numpy(), a.numpy() @ a.numpy().T)
v = rumus.tensor([1.0, 0.0, -1.0])
print("a @ v =", a @ v)  # matrix-vector

# --------------------------------------------------------------- indexing
section("indexing")
print("a[0] =", a[0])
print("a[:, 1] =", a[:, 1])
print("a[..., ::2] =", a[..., ::2])
print("a[a > 2] =", a[a > 2])  # boolean mask -> copy
print("a[[1, 0]] =", a[[1, 0]])  # integer list -> copy
view = a[:, 1]
view += 100  # a basic-index view writes through
print("after a[:, 1] += 100: a =", a)
assert a[0, 1].item() == 102.0

# ------------------------------------- linear regression, closed form
section("least squares fit of y = 3x + 2")
rumus.manual_seed(0)
n = 200
x = rumus.rand(n, 1, dtype=rumus.float64) * 10
y = 3 * x + 2 + 0.1 * rumus.randn(n, 1, dtype=rumus.float64)
X = rumus.cat([x, rumus.ones_like(x)], dim=1)  # (n, 2) design matrix
XtX = X.T @ X  # (2, 2)
Xty = X.T @ y  # (2, 1)
# normal equations: w = (X^T X)^-1 X^T y, with the 2x2 inverse written out
p, q, r, s = XtX[0, 0], XtX[0, 1], XtX[1, 0], XtX[1, 1]
det = p * s - q * r
inv = rumus.stack([rumus.stack([s, -q]), rumus.stack([-r, p])]) / det
w = inv @ Xty  # (2, 1)
slope, intercept = w[0, 0].item(), w[1, 0].item()
rmse = ((X @ w - y) ** 2).mean().sqrt().item()
print(f"slope = {slope:.4f}, intercept = {intercept:.4f}, residual rms = {rmse:.4f}")
ref = np.linalg.lstsq(X.numpy(), y.numpy(), rcond=None)[0].ravel()
print(f"numpy.linalg.lstsq: slope = {ref[0]:.4f}, intercept = {ref[1]:.4f}")
assert abs(slope - 3) < 0.05 and abs(intercept - 2) < 0.05, (slope, intercept)
assert np.allclose([slope, intercept], ref, rtol=1e-6, atol=1e-8)
print("\nall demo checks passed")
