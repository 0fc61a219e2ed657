"""Library references (issue 24): conv2d of a batch of 64 images of 1x28x28 with 32 filters of
3x3 in PyTorch eager, forward alone and forward with backward; NumPy's sort of 10^6 floats and svd
of a 512x512 matrix; exp(a) * b + c over 10^7 elements in NumPy and in PyTorch; all in float64."""

import numpy as np
import torch

from timing import THREADS, measure

torch.set_num_threads(THREADS)

BATCH, FILTERS = 64, 32


def conv2d():
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(BATCH, 1, 28, 28, dtype=torch.float64, generator=generator)
    w = torch.randn(FILTERS, 1, 3, 3, dtype=torch.float64, generator=generator) * 0.3

    def forward():
        with torch.no_grad():
            return torch.nn.functional.conv2d(x, w)

    xv, wv = x.clone().requires_grad_(), w.clone().requires_grad_()

    def gradient():
        y = torch.nn.functional.conv2d(xv, wv)
        (y * y).sum().backward()
        xv.grad, wv.grad = None, None

    measure("conv2d_forward.torch", forward, repeat=21, warmup=3)
    measure("conv2d_gradient.torch", gradient, repeat=21, warmup=3)


def sort_svd_fused():
    rng = np.random.default_rng(0)
    x = rng.random(1_000_000)
    measure("sort.numpy", lambda: np.sort(x), repeat=7, warmup=1)
    a = rng.standard_normal((512, 512))
    measure("svd.numpy", lambda: np.linalg.svd(a, full_matrices=False), repeat=5, warmup=1)
    n = 10_000_000
    u, v, w = rng.random(n), rng.random(n), rng.random(n)
    measure("fused.numpy", lambda: np.exp(u) * v + w, repeat=7, warmup=1)
    tu, tv, tw = (torch.from_numpy(array) for array in (u, v, w))
    measure("fused.torch", lambda: torch.exp(tu) * tv + tw, repeat=7, warmup=1)


if __name__ == "__main__":
    conv2d()
    sort_svd_fused()
