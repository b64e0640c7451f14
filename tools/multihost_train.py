"""Data-parallel training with one JAX process per host: the script of chapter 13.

On a Cloud TPU slice, run it on every worker at once, with no arguments:

    python multihost_train.py

and jax.distributed.initialize() finds the coordinator, the number of processes and this
process's id by itself. Anywhere else (chapter 13 runs it as two processes on one CPU),
name them, on the command line or in environment variables:

    python multihost_train.py --coordinator 127.0.0.1:1234 --num-processes 2 --process-id 0
    JAXBOOK_COORDINATOR=127.0.0.1:1234 JAXBOOK_NUM_PROCESSES=2 JAXBOOK_PROCESS_ID=0 \
        python multihost_train.py

--num-processes 1 trains in one ordinary process that joins no cluster (the reference run).
Every process prints two JSON lines: where it stands in the cluster, then the losses it saw
and a fingerprint of its own copy of the final parameters. With --checkpoint, process 0
writes the final parameters there (an .npz file).
"""

import argparse
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

LAYER_SIZES = (784, 512, 512, 10)
STEP_SIZE = 0.05


def parse_args(argv=None):
    env = os.environ.get
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--coordinator", default=env("JAXBOOK_COORDINATOR"),
                        help="host:port of process 0; leave out on a Cloud TPU slice")
    parser.add_argument("--num-processes", type=int, default=env("JAXBOOK_NUM_PROCESSES"))
    parser.add_argument("--process-id", type=int, default=env("JAXBOOK_PROCESS_ID"))
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--global-batch", type=int, default=64)
    parser.add_argument("--checkpoint", default="", help="an .npz path for process 0")
    args = parser.parse_args(argv)
    if args.coordinator and (args.num_processes is None or args.process_id is None):
        parser.error("--coordinator needs --num-processes and --process-id too")
    return args


def join_cluster(args):
    """Connect this process to the others, the way this run needs; say which way."""
    if args.num_processes == 1:
        return "single process"
    if not args.coordinator:
        jax.distributed.initialize()  # Cloud TPU (also Slurm, Open MPI): all detected
        return "detected"
    jax.distributed.initialize(
        coordinator_address=args.coordinator,
        num_processes=args.num_processes,
        process_id=args.process_id,
    )
    return "given coordinator"


def init_params(key):
    keys = jax.random.split(key, len(LAYER_SIZES) - 1)
    params = []
    for layer_key, n_in, n_out in zip(keys, LAYER_SIZES[:-1], LAYER_SIZES[1:], strict=True):
        w = jax.random.normal(layer_key, (n_in, n_out)) * jnp.sqrt(2.0 / n_in)
        params.append((w, jnp.zeros(n_out)))
    return params


def loss_fn(params, images, labels):
    activations = images
    for w, b in params[:-1]:
        activations = jax.nn.relu(activations @ w + b)
    w, b = params[-1]
    log_probs = jax.nn.log_softmax(activations @ w + b)
    return -jnp.mean(jnp.take_along_axis(log_probs, labels[:, None], axis=1))


@jax.jit
def train_step(params, images, labels):
    loss, grads = jax.value_and_grad(loss_fn)(params, images, labels)
    return jax.tree.map(lambda p, g: p - STEP_SIZE * g, params, grads), loss


def main(argv=None):
    args = parse_args(argv)
    # CPU devices of different processes talk through Gloo (the default in current JAX).
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    # float32 matrix products on any backend, so a comparison with one device to 1e-5
    # holds on a TPU too (chapter 12 explains why).
    jax.config.update("jax_default_matmul_precision", "float32")
    joined = join_cluster(args)  # before any other JAX call

    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(AxisType.Auto,))
    replicated = NamedSharding(mesh, P())
    batch_sharding = NamedSharding(mesh, P("data"))
    print(json.dumps({
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "global_devices": jax.device_count(),
        "local_devices": jax.local_device_count(),
        "local_device_ids": [device.id for device in jax.local_devices()],
        "joined": joined,
    }), flush=True)

    global_batch = args.global_batch
    if global_batch % jax.device_count():
        raise SystemExit(f"--global-batch {global_batch} does not divide over "
                         f"{jax.device_count()} devices")
    # A synthetic, seeded data set: every process makes the same one and keeps only its
    # rows, as each host of a slice would read only its own files.
    rng = np.random.default_rng(0)
    all_images = rng.normal(size=(args.steps * global_batch, 784)).astype(np.float32)
    all_labels = all_images[:, :10].argmax(axis=1).astype(np.int32)
    rows_per_process = global_batch // jax.process_count()
    first_row = jax.process_index() * rows_per_process

    # Created inside jit with a replicated output sharding: identical on every process.
    params = jax.jit(init_params, out_shardings=replicated)(jax.random.key(0))
    losses = []
    for step in range(args.steps):
        start = step * global_batch + first_row
        local = slice(start, start + rows_per_process)
        images = jax.make_array_from_process_local_data(
            batch_sharding, all_images[local], (global_batch, 784)
        )
        labels = jax.make_array_from_process_local_data(
            batch_sharding, all_labels[local], (global_batch,)
        )
        params, loss = train_step(params, images, labels)
        losses.append(float(loss))

    # This process's own copy of the replicated parameters, reduced to one number: the
    # copies of all processes must agree.
    leaves = [np.asarray(leaf.addressable_shards[0].data) for leaf in jax.tree.leaves(params)]
    fingerprint = float(sum(np.abs(leaf).astype(np.float64).sum() for leaf in leaves))
    print(json.dumps({"losses": losses, "fingerprint": fingerprint}), flush=True)
    if jax.process_index() == 0 and args.checkpoint:
        np.savez(args.checkpoint, *leaves)
    # Nobody leaves (and nobody reads the checkpoint) before process 0 has written it.
    multihost_utils.sync_global_devices("checkpoint written")


if __name__ == "__main__":
    main()
