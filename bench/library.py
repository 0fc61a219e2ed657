"""Library references (issue 24): conv2d of a batch of 64 images of 1x28x28 with 32 filters of
3x3 in PyTorch eager, forward alone and forward with backward, in float64."""

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


if __name__ == "__main__":
    conv2d()
