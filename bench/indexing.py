"""Indexing references (issue 26): an embedding lookup of 10^5 ids into a 10^4 x 64 table in
PyTorch eager (`torch.nn.functional.embedding`), forward alone and forward with backward, in
float64."""

import torch

from timing import THREADS, measure

torch.set_num_threads(THREADS)

VOCABULARY, WIDTH, IDS = 10_000, 64, 100_000


def embedding():
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(VOCABULARY, WIDTH, dtype=torch.float64, generator=generator)
    ids = torch.randint(0, VOCABULARY, (IDS,), generator=generator)

    def forward():
        with torch.no_grad():
            return torch.nn.functional.embedding(ids, table)

    tracked = table.clone().requires_grad_()

    def gradient():
        y = torch.nn.functional.embedding(ids, tracked)
        (y * y).sum().backward()
        tracked.grad = None

    measure("embedding_forward.torch", forward, repeat=21, warmup=3)
    measure("embedding_gradient.torch", gradient, repeat=21, warmup=3)


if __name__ == "__main__":
    embedding()
