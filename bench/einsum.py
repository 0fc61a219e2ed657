"""Tensor-network references (issue 6): NumPy, opt_einsum and PyTorch contracting a chain and a
ring of four tensors, and the gradient of their sum with respect to the first operand under
jax.grad (jitted) and PyTorch's backward."""

import jax
import jax.numpy as jnp
import numpy as np
import opt_einsum
import torch

from timing import THREADS, emit, measure

jax.config.update("jax_enable_x64", True)
torch.set_num_threads(THREADS)

# Each network is sized so that the fastest tool takes 0.1-1 s.
NETWORKS = {
    "chain": ("ia,ajb,bkc,cl->ijkl", dict(a=64, b=64, c=64, i=64, j=64, k=64, l=64)),
    "ring": ("iab,jbc,kcd,lda->ijkl", dict(a=64, b=64, c=64, d=64, i=32, j=32, k=32, l=32)),
}
# NumPy's default memory limit (the largest operand or result) forbids every pairwise
# intermediate of the ring, so both of its path searches fall back to one unoptimised
# contraction of all four operands: days of work here. Such a path is reported, not run.
NAIVE_FLOP_LIMIT = 1e11


def operands(spec, extents, rng):
    terms = spec.split("->")[0].split(",")
    return [rng.random([extents[label] for label in term]) for term in terms]


def numpy_einsum(name, spec, arrays):
    for label, optimize in [
        ("numpy_optimal", "optimal"),
        ("numpy_true", True),
        ("numpy_unlimited", ("optimal", 2**62)),
    ]:
        path, text = np.einsum_path(spec, *arrays, optimize=optimize)
        flops = float(text.split("Optimized FLOP count:")[1].split()[0])
        steps = path[1:]
        note = f"path {steps}, {flops:.2g} FLOPs"
        if len(steps) == 1 and len(arrays) > 2 and flops > NAIVE_FLOP_LIMIT:
            emit(f"{name}.{label}", None, note=f"not run: one unoptimised step, {flops:.2g} FLOPs")
            continue
        measure(f"{name}.{label}", lambda: np.einsum(spec, *arrays, optimize=path), note=note)


def gradients(name, spec, arrays):
    first, *rest = [torch.from_numpy(array) for array in arrays]
    first.requires_grad_()

    def torch_gradient():
        first.grad = None
        torch.einsum(spec, first, *rest).sum().backward()
        return first.grad

    measure(f"{name}_grad.torch", torch_gradient)
    gradient = jax.jit(jax.grad(lambda a, *others: jnp.einsum(spec, a, *others).sum()))
    inputs = [jnp.asarray(array) for array in arrays]
    measure(f"{name}_grad.jax", lambda: gradient(*inputs).block_until_ready())


def main():
    rng = np.random.default_rng(0)
    for name, (spec, extents) in NETWORKS.items():
        arrays = operands(spec, extents, rng)
        numpy_einsum(name, spec, arrays)
        measure(f"{name}.opt_einsum", lambda: opt_einsum.contract(spec, *arrays))
        tensors = [torch.from_numpy(array) for array in arrays]
        measure(f"{name}.torch", lambda: torch.einsum(spec, *tensors))
        gradients(name, spec, arrays)


if __name__ == "__main__":
    main()
