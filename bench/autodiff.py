"""Autodiff references (issue 5): NiLang's loops in PyTorch eager and JAX, and a training step
of a 784-256-10 tanh network in PyTorch eager and in hand-written NumPy, all in float64."""

import jax
import jax.numpy as jnp
import numpy as np
import torch

from timing import THREADS, measure

jax.config.update("jax_enable_x64", True)
torch.set_num_threads(THREADS)

A, B, X0 = 0.9, 0.1, 0.5
# PyTorch records a graph node per operation in Python: 10^6 iterations would take minutes, so
# its figure is per iteration over fewer. JAX compiles the loop and runs all 10^6.
TORCH_ITERATIONS = 10_000
JAX_ITERATIONS = 1_000_000
BATCH, INPUTS, HIDDEN, CLASSES, RATE = 128, 784, 256, 10, 0.01


def torch_loop_gradient(step, iterations):
    x0 = torch.tensor(X0, dtype=torch.float64, requires_grad=True)
    x = x0
    for _ in range(iterations):
        x = step(x)
    x.backward()
    return x0.grad


def loops():
    one = torch.tensor(1.0, dtype=torch.float64)
    for key, step in [
        ("add.torch", lambda x: x + one),
        ("affine_sin.torch", lambda x: x * A + torch.sin(x) * B),
    ]:
        measure(key, lambda: torch_loop_gradient(step, TORCH_ITERATIONS), repeat=5,
                per=TORCH_ITERATIONS, iterations=TORCH_ITERATIONS)

    def affine_sin(x0):
        return jax.lax.fori_loop(0, JAX_ITERATIONS, lambda i, x: x * A + jnp.sin(x) * B, x0)

    gradient = jax.jit(jax.grad(affine_sin))
    x0 = jnp.float64(X0)
    measure("affine_sin.jax", lambda: gradient(x0).block_until_ready(), repeat=7,
            iterations=JAX_ITERATIONS)


def mlp_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, INPUTS))
    y = np.zeros((BATCH, CLASSES))
    y[np.arange(BATCH), np.arange(BATCH) % CLASSES] = 1.0
    params = [rng.standard_normal((INPUTS, HIDDEN)) * 0.05, np.zeros(HIDDEN),
              rng.standard_normal((HIDDEN, CLASSES)) * 0.05, np.zeros(CLASSES)]
    return x, y, params


def numpy_step(x, y, params):
    w1, b1, w2, b2 = params
    h = np.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    shifted = z - z.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -(y * log_p).sum() / BATCH
    dz = (np.exp(log_p) - y) / BATCH
    dh = (dz @ w2.T) * (1.0 - h * h)
    w2 -= RATE * (h.T @ dz)
    b2 -= RATE * dz.sum(axis=0)
    w1 -= RATE * (x.T @ dh)
    b1 -= RATE * dh.sum(axis=0)
    return loss


def torch_step(x, y, params):
    w1, b1, w2, b2 = params
    h = torch.tanh(x @ w1 + b1)
    z = h @ w2 + b2
    loss = -(y * torch.log_softmax(z, dim=1)).sum() / BATCH
    loss.backward()
    with torch.no_grad():
        for p in params:
            p -= RATE * p.grad
            p.grad = None
    return loss


def mlp():
    x, y, params = mlp_data()
    measure("mlp.numpy", lambda: numpy_step(x, y, params), repeat=21, warmup=3)
    x, y, params = mlp_data()
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    params = [torch.from_numpy(p).requires_grad_() for p in params]
    measure("mlp.torch", lambda: torch_step(x, y, params), repeat=21, warmup=3)


if __name__ == "__main__":
    loops()
    mlp()
