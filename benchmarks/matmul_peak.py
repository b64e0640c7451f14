"""The square-matmul peak both benchmarks measure this machine's arithmetic against."""

import time

import jax
import jax.numpy as jnp


def matmul_peak_gflops(sizes=(512, 1024, 2048), seconds_per_size=1.0):
    """Best float32 GFLOP/s of a jitted square `jnp` matmul over a few sizes."""
    best = 0.0
    matmul = jax.jit(jnp.matmul)
    for size in sizes:
        key_a, key_b = jax.random.split(jax.random.key(size))
        a = jax.random.normal(key_a, (size, size), jnp.float32)
        b = jax.random.normal(key_b, (size, size), jnp.float32)
        matmul(a, b).block_until_ready()
        deadline = time.perf_counter() + seconds_per_size
        while time.perf_counter() < deadline:
            start = time.perf_counter()
            matmul(a, b).block_until_ready()
            best = max(best, 2 * size**3 / (time.perf_counter() - start) / 1e9)
    return best
