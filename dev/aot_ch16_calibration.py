"""Chapter 16's calibration step (cells c16-cal-step) compiled ahead of time for a TPU v5e.

Nothing runs on a chip. It executes the definitions of cell c16-cal-step at the TPU size of
cell c16-cal-size and compiles each variant's training step (full remat, the named policy,
or the named values offloaded to host memory as cell c16-offload does; XLA's attention or
the library's flash-attention kernel for the TPU) for one device of a libtpu topology,
printing the compiler's memory (arguments + outputs + temporaries - aliased, the figure the
cell prints) and its temporaries in host memory, or the compile error. Findings:
dev/aot_findings.md, "Chapter 16's calibration step". Run it in an environment with the
chip's versions, never the book's .venv:

    python3.11 -m venv /tmp/venv-aot-0102
    /tmp/venv-aot-0102/bin/pip install 'jax[tpu]==0.10.2' optax
    /tmp/venv-aot-0102/bin/python dev/aot_ch16_calibration.py [xla_full,flash512_full,...]
"""

import json
import os
import sys
import time
from functools import partial
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the host needs no TPU: libtpu only compiles

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from jax import lax  # noqa: E402
from jax.ad_checkpoint import checkpoint_name  # noqa: E402
from jax.experimental import topologies  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parent.parent / "notebooks" / "16_sharding_transformer.ipynb"
TPU_SIZE = {"layers": 14, "width": 1536, "heads": 12, "vocab": 32_000, "context": 2048,
            "batch": 2}  # cell c16-cal-size's TPU branch


def definitions() -> dict:
    """Cell c16-cal-step's functions, up to its runs, in a namespace of their own."""
    cells = {c["id"]: "".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"]}
    size = cells["c16-cal-size"]
    assert repr(TPU_SIZE["layers"]) in size and repr(TPU_SIZE["width"]) in size, "size changed"
    source = cells["c16-cal-step"]
    source = source[:source.index("calibration_tokens = ")]  # definitions only: no data, no runs
    namespace = {"jax": jax, "jnp": jnp, "np": np, "optax": optax, "lax": lax, "time": time,
                 "partial": partial, "checkpoint_name": checkpoint_name, "CAL": TPU_SIZE}
    exec(source, namespace)
    return namespace


def main(argv: list[str]) -> None:
    which = argv[0].split(",") if argv else ["xla_full", "xla_named", "flash_full", "flash512_full"]
    ns = definitions()
    device = topologies.get_topology_desc(platform="tpu", topology_name="v5e:2x4").devices[0]
    sharding = jax.sharding.SingleDeviceSharding(device)
    on_device = lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)  # noqa: E731
    params = jax.eval_shape(lambda key: ns["init_calibration"](TPU_SIZE, key), jax.random.key(0))
    opt_state = jax.eval_shape(ns["calibration_optimizer"].init, params)
    params, opt_state = jax.tree.map(on_device, params), jax.tree.map(on_device, opt_state)
    tokens = jax.ShapeDtypeStruct((TPU_SIZE["batch"], TPU_SIZE["context"]), jnp.int32,
                                  sharding=sharding)
    policies = {"full": jax.checkpoint_policies.nothing_saveable,
                "named": jax.checkpoint_policies.save_only_these_names("attention", "mlp_hidden"),
                "offload": jax.checkpoint_policies.save_and_offload_only_these_names(
                    names_which_can_be_saved=[], names_which_can_be_offloaded=[
                        "attention", "mlp_hidden"], offload_src="device",
                    offload_dst="pinned_host")}
    print(jax.__version__, device.device_kind, flush=True)
    for name in which:
        kind, remat = name.split("_")
        attention = ns[{"flash": "library_flash_attention", "flash512": "library_flash_512",
                        "xla": "xla_attention"}[kind]]
        policy = policies[remat]

        def train_step(params, opt_state, inputs, targets, policy=policy, attention=attention):
            loss, grads = jax.value_and_grad(ns["calibration_loss"])(params, inputs, targets,
                                                                     policy, attention)
            updates, opt_state = ns["calibration_optimizer"].update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, loss

        start = time.perf_counter()
        try:
            compiled = jax.jit(train_step, donate_argnums=(0, 1)).trace(
                params, opt_state, tokens, tokens).lower().compile()
            memory = compiled.memory_analysis()
            needed = (memory.argument_size_in_bytes + memory.output_size_in_bytes
                      + memory.temp_size_in_bytes - memory.alias_size_in_bytes)
            print(f"OK   {name}: {time.perf_counter() - start:.1f} s, compiler's memory "
                  f"{needed / 1e9:.2f} GB (host: temporaries "
                  f"{getattr(memory, 'host_temp_size_in_bytes', 0) / 1e9:.2f} GB)", flush=True)
        except Exception as error:  # noqa: BLE001 - a failed compile is the finding
            print(f"FAIL {name}: {type(error).__name__}: {str(error)[:400]}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
