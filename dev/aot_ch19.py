"""Chapter 19's chip-sized kernels compiled ahead of time for a TPU v5e, from a CPU.

Nothing runs on a chip. It execs the chapter's definitions (cells c19-imports, c19-flash,
c19-backward, c19-time, c19-lower, c19-bwd, c19-bwd-time, each up to its TPU-only part) and
compiles, for one device of a libtpu topology (default v5e:2x4), our flash forward and
forward+backward at lengths 2048 (blocks 128 and 512) and 8192 (blocks 512), XLA's
dot_product_attention forward and forward+backward at 2048 and 8192, the library's
flash_attention, and the gradients the chapter's TPU check takes, printing each compile's peak
memory or its error (out of memory is a compile error there); and (hbm) the compiler's count of
bytes accessed by XLA's attention forward at cell c19-hbm's per-chip size, against that cell's
model. Findings: dev/aot_findings.md, "Chapter 19's backward" and "Chapter 19's HBM model".
Run it in a separate environment with the chip's versions, never in the book's .venv:

    python3.11 -m venv /tmp/venv-aot-0102
    /tmp/venv-aot-0102/bin/pip install 'jax[tpu]==0.10.2'
    /tmp/venv-aot-0102/bin/python dev/aot_ch19.py v5e:2x4 [ours,xla,lib,hbm,check]
"""

import functools
import json
import math
import os
import sys
import time

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the host needs no TPU: libtpu only compiles

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import topologies  # noqa: E402

NOTEBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "notebooks",
                        "19_pallas_kernels.ipynb")


def chapter_definitions() -> dict:
    """The chapter's code cells up to their TPU-only parts, executed in one namespace."""
    cells = json.load(open(NOTEBOOK))["cells"]
    source = {c["id"]: "".join(c["source"]) for c in cells if c["cell_type"] == "code"}
    ns: dict = {}

    def upto(cell, marker=None):
        text = source[cell]
        exec(text if marker is None else text[:text.index(marker)], ns)

    upto("c19-imports")
    upto("c19-flash")
    upto("c19-backward", "probe = ")
    upto("c19-time", "device = jax.devices()[0]")
    ns.update(ON_TPU=False, device=ns["CPU"], interpret=False, chip=ns["UNKNOWN_CHIP"])
    exec(source["c19-lower"].split("q_heads = ")[0], ns)
    upto("c19-bwd", "# On a TPU: compiled")
    upto("c19-bwd-time", "if ON_TPU:\n    library")
    return ns


def main(argv: list[str]) -> None:
    from jax.experimental.pallas.ops.tpu import flash_attention as library_flash

    ns = chapter_definitions()
    topology = argv[0] if argv else "v5e:2x4"
    which = argv[1].split(",") if len(argv) > 1 else ["all"]
    device = topologies.get_topology_desc(platform="tpu", topology_name=topology).devices[0]
    print(device.device_kind, flush=True)
    sharding = jax.sharding.SingleDeviceSharding(device)

    def shape(dims, dtype):
        return jax.ShapeDtypeStruct(dims, dtype, sharding=sharding)

    def report(name, function, *args):
        start = time.perf_counter()
        try:
            compiled = jax.jit(function).trace(*args).lower().compile()
            memory = compiled.memory_analysis()
            peak = getattr(memory, "peak_memory_in_bytes", None)
            peak_gib = peak / 2**30 if peak else float("nan")
            print(f"OK   {name}: {time.perf_counter() - start:.1f}s peak {peak_gib:.2f} GiB "
                  f"temp {memory.temp_size_in_bytes / 2**30:.2f} GiB", flush=True)
        except Exception as error:  # noqa: BLE001 - out of memory is a compile error here
            print(f"FAIL {name}: {type(error).__name__}: "
                  f"oom={ns['is_out_of_memory'](error)} {str(error)[:400]}", flush=True)

    def want(kind):
        return "all" in which or kind in which

    bf16, f32 = jnp.bfloat16, jnp.float32
    gradient = ns["gradient_function"]
    for length, block in [(2048, 128), (2048, 512), (8192, 512)]:
        flat, probe = shape((128, length, 128), bf16), shape((128, length, 128), f32)
        ours = ns["make_flash_dense_attention"](block, block)
        if want("ours"):
            report(f"ours fwd L={length} b={block}", ours, flat, flat, flat)
            report(f"ours fwd+bwd L={length} b={block}", gradient(ours), flat, flat, flat, probe)
    for length in (2048, 8192):
        blhd, probe = shape((8, length, 16, 128), bf16), shape((8, length, 16, 128), f32)
        xla = functools.partial(jax.nn.dot_product_attention, is_causal=True)
        if want("xla"):
            report(f"XLA fwd L={length}", xla, blhd, blhd, blhd)
            report(f"XLA fwd+bwd L={length}", gradient(xla), blhd, blhd, blhd, probe)
    if want("lib"):
        bhld, probe = shape((8, 16, 2048, 128), bf16), shape((8, 16, 2048, 128), f32)
        theirs = functools.partial(library_flash.flash_attention, causal=True,
                                   sm_scale=1 / math.sqrt(128))
        report("library fwd", theirs, bhld, bhld, bhld)
        report("library fwd+bwd", gradient(theirs), bhld, bhld, bhld, probe)
    if want("hbm"):  # cell c19-hbm's model against the compiler's count of bytes accessed
        blhd = shape((8, 2048, 16, 128), bf16)
        xla = functools.partial(jax.nn.dot_product_attention, is_causal=True)
        counted = jax.jit(xla).trace(blhd, blhd, blhd).lower().compile().cost_analysis()
        counted = counted[0] if isinstance(counted, list) else counted
        scores, qkvo = 8 * 16 * 2048**2, 4 * 8 * 2048 * 2048 * 2
        for name, per_score in [("f32 scores, f32 exponentials, bf16 P (20 B)", 20),
                                ("four bf16 passes (8 B)", 8)]:
            model = scores * per_score + qkvo
            print(f"XLA fwd L=2048 bytes accessed {counted['bytes accessed'] / 1e9:.2f} GB; "
                  f"model {name} {model / 1e9:.2f} GB, ratio "
                  f"{counted['bytes accessed'] / model:.2f}", flush=True)
    if want("check"):
        q, p, q32 = (shape((8, 2048, 128), bf16), shape((8, 2048, 128), f32),
                     shape((8, 2048, 128), f32))
        report("reference grad (check)", gradient(ns["reference_attention"]), q32, q32, q32, p)
        for block in (128, 512):
            report(f"check grad b={block}",
                   gradient(ns["make_flash_dense_attention"](block, block)), q, q, q, p)
        report("check without D", gradient(ns["make_flash_dense_attention"](
            512, 512, with_correction=False)), q, q, q, p)


if __name__ == "__main__":
    main(sys.argv[1:])
