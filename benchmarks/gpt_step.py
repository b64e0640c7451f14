"""Chapter 18's benchmark: chapter 15's GPT training step, before and after the changes the
profile suggests (issue #34).

Run with `python benchmarks/gpt_step.py` (Tiny Shakespeare from $JAXBOOK_DATA/tinyshakespeare;
`--check` exits 1 when the target is not met). The model, batch and optimizer are chapter 15's
(2 layers, width 128, 4 heads, context 64, batch 32, AdamW with warmup, cosine decay and
clipping), copied from chapter 18, which copies them from chapter 15.

- "before": chapter 15's loop, one call of the jitted step per step, the state passed in and
  handed back, a block at the end of each chunk of 8 steps.
- "after": the same step inside `jax.lax.scan`, 8 steps per call, with the state donated.

Both are first checked to train the same: 8 steps from one state with the same keys give the
same losses and parameters to 1e-5. They are then timed alternately, ROUNDS rounds of one chunk
each, wall clock and process CPU time per step; the figures are the median and range over the
rounds. The target is judged on the fastest round of each (the least disturbed on a machine
shared with other jobs, as for the peak); the speed-up of the medians and of the CPU times are
reported beside it. The square-matmul peak is the best GFLOP/s of a jitted float32 matmul of
sizes 512, 1024 and 2048, measured before and after the timings (the higher kept). The step's
FLOPs are XLA's count (`cost_analysis()`).

The after loop is traced for one call, whose dispatch (the host's share of it) is read from the
trace; and the single step is profiled over PROFILED_STEPS steps (`jax.profiler.trace`, read
with `jax.profiler.ProfileData`): for its least disturbed step, the time during which at least
one of its operations ran (the union of their intervals), and the same for its matrix products
alone. The single step, because on the CPU backend the operations inside a scan's loop are
recorded only in part. These give the two bounds of `gpt_step_targets.reason`, the measured
reason when neither target is met.

Output: one JSON summary line, then the target block. Exit code 0 whatever the target, unless
--check is given.
"""

import argparse
import collections
import functools
import glob
import json
import os
import platform
import re
import sys
import tempfile
import time
import warnings
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from flax import nnx
from gpt_step_targets import check_target, spread
from jax.profiler import ProfileData
from matmul_peak import matmul_peak_gflops

CONTEXT, D_MODEL, N_HEADS, N_LAYERS, BATCH_SIZE = 64, 128, 4, 2, 32
TRAIN_STEPS, WARMUP_STEPS, PEAK_LEARNING_RATE = 600, 100, 4e-3
STEPS_PER_CALL = 8
ROUNDS = 9
PROFILED_STEPS = 5
SMALL_INIT = nnx.initializers.normal(0.02)


def load_train_ids():
    root = Path(os.environ.get("JAXBOOK_DATA", Path(__file__).resolve().parent.parent / "data"))
    text = (root / "tinyshakespeare" / "input.txt").read_text(encoding="utf-8")
    vocab = sorted(set(text))
    index = {char: i for i, char in enumerate(vocab)}
    ids = np.array([index[char] for char in text], dtype=np.int32)
    return jnp.asarray(ids[:int(0.9 * len(ids))]), len(vocab)


TRAIN_IDS, VOCAB_SIZE = load_train_ids()


class CausalSelfAttention(nnx.Module):
    def __init__(self, d_model, n_heads, *, rngs):
        self.n_heads = n_heads
        self.qkv = nnx.Linear(d_model, 3 * d_model, rngs=rngs)
        self.output = nnx.Linear(d_model, d_model, rngs=rngs)

    def __call__(self, x):
        batch, length, d_model = x.shape
        heads = (batch, length, self.n_heads, d_model // self.n_heads)
        query, key, value = (part.reshape(heads) for part in jnp.split(self.qkv(x), 3, axis=-1))
        attended = jax.nn.dot_product_attention(query, key, value, is_causal=True)
        return self.output(attended.reshape(batch, length, d_model))


class MLP(nnx.Module):
    def __init__(self, d_model, *, rngs):
        self.up = nnx.Linear(d_model, 4 * d_model, rngs=rngs)
        self.down = nnx.Linear(4 * d_model, d_model, rngs=rngs)

    def __call__(self, x):
        return self.down(nnx.gelu(self.up(x)))


class Block(nnx.Module):
    def __init__(self, d_model, n_heads, *, rngs):
        self.attention_norm = nnx.LayerNorm(d_model, rngs=rngs)
        self.attention = CausalSelfAttention(d_model, n_heads, rngs=rngs)
        self.mlp_norm = nnx.LayerNorm(d_model, rngs=rngs)
        self.mlp = MLP(d_model, rngs=rngs)

    def __call__(self, x):
        x = x + self.attention(self.attention_norm(x))
        return x + self.mlp(self.mlp_norm(x))


class GPT(nnx.Module):
    def __init__(self, *, rngs):
        self.token_embedding = nnx.Embed(VOCAB_SIZE, D_MODEL, embedding_init=SMALL_INIT,
                                         rngs=rngs)
        self.position_embedding = nnx.Embed(CONTEXT, D_MODEL, embedding_init=SMALL_INIT,
                                            rngs=rngs)
        self.blocks = nnx.data([Block(D_MODEL, N_HEADS, rngs=rngs) for _ in range(N_LAYERS)])
        self.final_norm = nnx.LayerNorm(D_MODEL, rngs=rngs)
        self.head = nnx.Linear(D_MODEL, VOCAB_SIZE, kernel_init=SMALL_INIT, rngs=rngs)

    def __call__(self, tokens):
        x = self.token_embedding(tokens) + self.position_embedding(jnp.arange(tokens.shape[1]))
        for block in self.blocks:
            x = block(x)
        return self.head(self.final_norm(x)).astype(jnp.float32)


def loss_fn(model, inputs, targets):
    return optax.softmax_cross_entropy_with_integer_labels(model(inputs), targets).mean()


def get_batch(data, key):
    starts = jax.random.randint(key, (BATCH_SIZE,), 0, len(data) - CONTEXT)
    windows = data[starts[:, None] + jnp.arange(CONTEXT + 1)]
    return windows[:, :-1], windows[:, 1:]


def make_optimizer():
    schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0, peak_value=PEAK_LEARNING_RATE, warmup_steps=WARMUP_STEPS,
        decay_steps=TRAIN_STEPS, end_value=PEAK_LEARNING_RATE / 10)
    return optax.chain(optax.clip_by_global_norm(1.0),
                       optax.adamw(schedule, b2=0.99, weight_decay=0.1))


def make_steps(graphdef):
    @jax.jit
    def train_step(state, key):
        model, optimizer = nnx.merge(graphdef, state)
        inputs, targets = get_batch(TRAIN_IDS, key)
        loss, grads = nnx.value_and_grad(lambda model: loss_fn(model, inputs, targets))(model)
        optimizer.update(model, grads)
        return nnx.state((model, optimizer)), loss

    @functools.partial(jax.jit, donate_argnums=0)
    def train_steps(state, keys):
        return jax.lax.scan(train_step, state, keys)

    return train_step, train_steps


def copy_of(state):
    return jax.tree.map(jnp.copy, state)


def busy_ms(intervals):
    """Length of the union of (start, end) intervals, in the intervals' unit."""
    total, reach = 0.0, -np.inf
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


def profile_step(train_step, state, keys, compiled):
    """Per step, over one call of the single step per key: ms with any of its operations
    running, and ms with a matrix product running (operations classified from the compiled
    HLO: a dot, or a fusion calling a computation that holds one)."""
    hlo = compiled.as_text()
    module = re.match(r"HloModule (\S+?),", hlo).group(1)
    dot_computations = set()
    computation = None
    callers = {}
    for line in hlo.splitlines():
        header = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if header and " = " not in line:
            computation = header.group(1)
            continue
        found = re.match(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*? ([a-z][\w\-]*)\(", line)
        if found:
            calls = re.search(r"calls=%?([\w.\-]+)", line)
            callers[found.group(1)] = (found.group(2), calls.group(1) if calls else None)
            if found.group(2) in ("dot", "convolution"):
                dot_computations.add(computation)
    log_dir = tempfile.mkdtemp(prefix="jaxbook-bench18-")
    state = jax.block_until_ready(state)
    with jax.profiler.trace(log_dir):
        for key in keys:
            state, _ = train_step(state, key)
        jax.block_until_ready(state)
    (path,) = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.xplane.pb"))
    all_ops, matmul_ops = collections.defaultdict(list), collections.defaultdict(list)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # nanobind's notice on stats
        for plane in ProfileData.from_file(path).planes:
            for line in plane.lines:
                if line.name == "python":
                    continue
                for event in line.events:
                    stats = dict(event.stats)
                    if stats.get("hlo_module") != module or "hlo_op" not in stats:
                        continue
                    run = stats.get("run_id")
                    interval = (event.start_ns / 1e6, event.end_ns / 1e6)
                    all_ops[run].append(interval)
                    opcode, calls = callers[stats["hlo_op"]]
                    if opcode in ("dot", "convolution") or calls in dot_computations:
                        matmul_ops[run].append(interval)
    assert len(all_ops) == len(keys), f"{len(all_ops)} runs traced for {len(keys)} steps"
    # The least disturbed step of each (the machine may be shared), as for the timings.
    return (min(busy_ms(ops) for ops in all_ops.values()),
            min(busy_ms(ops) for ops in matmul_ops.values()))


def dispatch_ms(train_steps, state, keys):
    """Host time per step of the after loop: the duration of its one dispatch (the outermost
    `PjitFunction(train_steps)` event of a trace of one call), divided by the steps."""
    log_dir = tempfile.mkdtemp(prefix="jaxbook-bench18-")
    with jax.profiler.trace(log_dir):
        state = jax.block_until_ready(train_steps(state, keys)[0])
    (path,) = glob.glob(os.path.join(log_dir, "plugins", "profile", "*", "*.xplane.pb"))
    durations = [event.duration_ns / 1e6 for plane in ProfileData.from_file(path).planes
                 for line in plane.lines for event in line.events
                 if event.name == "PjitFunction(train_steps)"]
    return max(durations) / len(keys), state  # nested events of one call: the outermost


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 when the target is not met")
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    args = parser.parse_args()
    print(f"# JAX {jax.__version__} on {jax.default_backend()}, {os.cpu_count()} CPUs, "
          f"{platform.machine()}, Python {platform.python_version()}", file=sys.stderr)
    peak_before = matmul_peak_gflops()
    model = GPT(rngs=nnx.Rngs(0))
    graphdef, state = nnx.split((model, nnx.Optimizer(model, make_optimizer(), wrt=nnx.Param)))
    train_step, train_steps = make_steps(graphdef)
    key = jax.random.key(2)
    compiled_step = train_step.lower(state, key).compile()
    analysis = compiled_step.cost_analysis()
    analysis = analysis[0] if isinstance(analysis, (list, tuple)) else analysis
    step_flops = analysis["flops"]
    keys = jnp.stack([jax.random.fold_in(key, s) for s in range(STEPS_PER_CALL)])

    # The same training: 8 steps one call at a time against one scanned call.
    one_by_one, losses = copy_of(state), []
    for step_key in keys:
        one_by_one, loss = train_step(one_by_one, step_key)
        losses.append(loss)
    scanned, scanned_losses = train_steps(copy_of(state), keys)
    same = bool(np.allclose(scanned_losses, jnp.stack(losses), rtol=0, atol=1e-5) and all(
        np.allclose(a, b, rtol=0, atol=1e-5) for a, b in zip(
            jax.tree.leaves(scanned[0]), jax.tree.leaves(one_by_one[0]), strict=True)))
    if not same:
        raise SystemExit("the scanned steps do not train like chapter 15's steps")

    def before(state):
        for step_key in keys:
            state, _ = train_step(state, step_key)
        return jax.block_until_ready(state)

    def after(state):
        return jax.block_until_ready(train_steps(state, keys)[0])

    loops = {"before": before, "after": after}
    states = {name: copy_of(state) for name in loops}
    for name, run in loops.items():  # one untimed chunk each
        states[name] = run(states[name])
    wall = {name: [] for name in loops}
    cpu = {name: [] for name in loops}
    for _ in range(args.rounds):
        for name, run in loops.items():
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            states[name] = run(states[name])
            wall[name].append(1000 * (time.perf_counter() - start_wall) / STEPS_PER_CALL)
            cpu[name].append(1000 * (time.process_time() - start_cpu) / STEPS_PER_CALL)
    step_ops_ms, step_matmul_ms = profile_step(train_step, states["before"],
                                               keys[:PROFILED_STEPS], compiled_step)
    after_dispatch_ms, states["after"] = dispatch_ms(train_steps, states["after"], keys)
    peak = max(peak_before, matmul_peak_gflops())
    tokens = BATCH_SIZE * CONTEXT
    matmul_flops = (6 * tokens * (N_LAYERS * 12 * D_MODEL**2 + D_MODEL * VOCAB_SIZE)
                    + 12 * BATCH_SIZE * CONTEXT**2 * D_MODEL * N_LAYERS)
    before_ms, after_ms = spread(wall["before"]), spread(wall["after"])
    summary = {
        "model": f"chapter 15's GPT: {N_LAYERS} layers, width {D_MODEL}, {N_HEADS} heads, "
                 f"context {CONTEXT}, batch {BATCH_SIZE}",
        "rounds": args.rounds, "steps_per_call": STEPS_PER_CALL,
        "same_training": same,
        "step_gflop_xla": round(step_flops / 1e9, 4),
        "before_wall_ms": before_ms, "after_wall_ms": after_ms,
        "before_cpu_ms": spread(cpu["before"]), "after_cpu_ms": spread(cpu["after"]),
        "speedup": round(before_ms["min"] / after_ms["min"], 3),
        "speedup_of_medians": round(before_ms["median"] / after_ms["median"], 3),
        "speedup_cpu": round(np.median(cpu["before"]) / np.median(cpu["after"]), 3),
        "matmul_peak_gflops": round(peak, 1),
        "before_peak_fraction": round(step_flops / before_ms["min"] / 1e6 / peak, 3),
        "peak_fraction": round(step_flops / after_ms["min"] / 1e6 / peak, 3),
        "step_ops_ms": round(step_ops_ms, 2),
        "step_matmul_ms": round(step_matmul_ms, 2),
        "after_dispatch_ms": round(after_dispatch_ms, 3),
        "speedup_bound": round(before_ms["min"] / (after_ms["min"] - after_dispatch_ms), 3),
        "peak_fraction_bound": round(matmul_flops / step_matmul_ms / 1e6 / peak, 3),
        "load_average": os.getloadavg(),
    }
    passed, block = check_target(summary)
    summary["target_met"] = passed
    print(json.dumps(summary))
    print(block, flush=True)
    return 1 if args.check and not passed else 0


if __name__ == "__main__":
    sys.exit(main())
