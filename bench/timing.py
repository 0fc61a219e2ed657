"""Timing shared by the reference scripts of `cargo xtask bench`.

Each script times only its kernel with `time.perf_counter`, after a warm-up, and prints one JSON
object per figure on standard output: `{"key": ..., "seconds": median or null, ...}`. Run as a
script, this module prints the versions and thread settings of the reference tools instead.
"""

import json
import os
import statistics
import sys
import time

THREADS = int(os.environ.get("NABLA_BENCH_THREADS", "1"))


def median_seconds(kernel, repeat=7, warmup=1):
    """The median wall-clock time of `repeat` calls of `kernel`, after `warmup` untimed ones."""
    for _ in range(warmup):
        kernel()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        kernel()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def emit(key, seconds, **extra):
    """Prints one figure for the harness; `seconds` is None for a figure that was not measured."""
    print(json.dumps({"key": key, "seconds": seconds, **extra}), flush=True)


def measure(key, kernel, repeat=7, warmup=1, per=1, **extra):
    """Times `kernel` and prints its median divided by `per` (iterations in one call)."""
    print(f"    {key}", file=sys.stderr, flush=True)
    emit(key, median_seconds(kernel, repeat, warmup) / per, repeat=repeat, **extra)


def environment():
    """Versions and thread settings of the reference tools, as one JSON object."""
    import ctypes
    import platform

    import jax
    import numpy
    import opt_einsum
    import torch

    torch.set_num_threads(THREADS)
    info = {
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "numpy": numpy.__version__,
        "opt_einsum": opt_einsum.__version__,
        "torch": torch.__version__,
        "jax": f"{jax.__version__} (jaxlib {jax.lib.__version__})",
        "threads": THREADS,
        "torch_threads": torch.get_num_threads(),
        "xla_flags": os.environ.get("XLA_FLAGS", ""),
    }
    # NumPy's wheel bundles its own OpenBLAS; ask it which kernel it chose for this CPU.
    blas = numpy.show_config(mode="dicts")["Build Dependencies"]["blas"]
    info["numpy_blas"] = f"{blas['name']} {blas['version']}"
    libs = os.path.join(os.path.dirname(numpy.__file__), os.pardir, "numpy.libs")
    for name in sorted(os.listdir(libs)) if os.path.isdir(libs) else []:
        if "openblas" in name:
            lib = ctypes.CDLL(os.path.join(libs, name))
            corename = getattr(lib, "scipy_openblas_get_corename64_", None)
            if corename is not None:
                corename.restype = ctypes.c_char_p
                info["numpy_blas"] += f", {corename().decode()} kernels"
    info["torch_blas"] = "MKL" if torch.backends.mkl.is_available() else "other"
    return info


if __name__ == "__main__":
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    print(json.dumps({"environment": environment()}))
