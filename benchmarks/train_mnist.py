"""Part II training benchmark: chapter 7's pipeline against chapter 10's fastest one.

Run with `make bench` (MNIST root from the environment variable JAXBOOK_DATA; `make bench
BENCH_ARGS=--check` exits 1 when a target fails), or `python benchmarks/train_mnist.py --tune`
to redo chapter 10's hyper-parameter search on the validation split. Both train the same
784-512-512-10 ReLU MLP in this one process, on the same 50,000 training images: the split is
`np.random.default_rng(0).permutation(60_000)`, whose last 10,000 are the validation split and
the first 50,000 the training set of both pipelines.

- "baseline" (chapter 7): torchvision dataset with a per-sample flatten-and-cast transform, a
  DataLoader (num_workers=0) over the 50,000 training images with a NumPy collate function, the
  classic example's loss (the cross-entropy divided by 10), a jitted SGD step (step size 0.01,
  batch 128), 8 epochs of 390 steps.
- "fast" (chapter 10): the dataset as standardized float32 arrays on the device, a new
  permutation every epoch from the run's data key, ten Adam steps of batch 500 per compiled call
  under `lax.scan` with donated parameters and optimizer state, He initialization, label
  smoothing, warmup + cosine schedule, 3 epochs of 100 steps. The hyper-parameters are those
  chapter 10 chose on the validation split, never on the test set; `--tune` reruns that search
  here, on the validation split only, and prints the table. (Chapter 10's final runs train on
  all 60,000 images; here the fast recipe trains on the 50,000, like the baseline.)

Both run with seeds 0, 1 and 2 (initialization and data order), paired by seed. The time ratio
is symmetric: both pipelines are timed to the same validation accuracy, evaluated on both sides
every tenth of an epoch (baseline every 39 steps of 128 = 4,992 images, fast every chunk of
5,000 images), and both crossings are found the same way, the first evaluation at or above
the target. Each clock starts before the data is loaded, includes compilation, and stops while
the accuracy is measured. The target of seed i is the validation accuracy that baseline run i
ends its 8 epochs with: it is what the baseline pipeline delivers, every baseline run reaches
it by construction, and it leaves nothing to choose (a fixed line would be a free parameter,
picked after seeing the curves). The baseline is then charged its first crossing too, not its
whole run. The test set is evaluated once, at the end of each run, outside the clock.

FLOPs are XLA's count (`compiled.cost_analysis()`) of one step of chapter 7's SGD update at the
batch size concerned, as chapter 10 counts them (about 3.22 MFLOP per example).

Output: one JSON line per run, one summary line, then the targets block (also in the summary's
"targets"):
- the fast recipe's test accuracy after 3 epochs, mean of the 3 seeds, at least 0.980;
- "step_vs_matmuls": the fast step's throughput over that of its own matrix products (same
  shapes, forward and backward) run alone in a scan of the same length, median of interleaved
  repeats, at least 0.85;
- "step_vs_square_peak": the step's GFLOP/s over the best square-matmul GFLOP/s, at least 0.65;
- "time_ratio": for each seed, the fast run's seconds to the target over the baseline run's
  seconds to the same target, mean of the 3 seeds, at most 0.10.
The exit code is 0 whatever the targets (this is a measurement) unless --check is given.
"""

import argparse
import functools
import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
import torch
from bench_targets import check_targets, first_reaching, format_targets, spread
from matmul_peak import matmul_peak_gflops

# The book's MNIST loader, from its one source (the chapters carry copies of the same file).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "dev" / "snippets"))
from mnist_loader import load_mnist  # noqa: E402

LAYER_SIZES = [784, 512, 512, 10]
SEEDS = (0, 1, 2)
VALIDATION_SIZE = 10_000
EVALUATIONS_PER_EPOCH = 10
BASELINE_EPOCHS = 8
BASELINE_BATCH_SIZE = 128
FAST_BATCH_SIZE = 500
STEPS_PER_CHUNK = 10
N_EPOCHS = 3
# Chosen in chapter 10 on the validation split (the "b1 0.8 and label smoothing 0.1" row).
CHOSEN = {"peak_learning_rate": 1e-2, "b1": 0.8, "label_smoothing": 0.1}
# Chapter 10's candidates, as (peak learning rate, b1, label smoothing).
SETTINGS = {
    "base: peak 0.01, b1 0.9, no smoothing": (1e-2, 0.9, 0.0),
    "peak learning rate 0.005": (5e-3, 0.9, 0.0),
    "peak learning rate 0.02": (2e-2, 0.9, 0.0),
    "b1 0.8": (1e-2, 0.8, 0.0),
    "label smoothing 0.1": (1e-2, 0.9, 0.1),
    "b1 0.8 and label smoothing 0.1": (1e-2, 0.8, 0.1),
}


def split_rows(n_images=60_000):
    """(training rows, validation rows): the validation split is the last 10,000."""
    split = np.random.default_rng(0).permutation(n_images)
    return split[:-VALIDATION_SIZE], split[-VALIDATION_SIZE:]


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def history_fields(history, examples, test_accuracy):
    """The fields both pipelines report from [(training seconds, validation accuracy)]."""
    return {
        "train_seconds": round(history[-1][0], 3),
        "validation_accuracy": round(history[-1][1], 4),
        "test_accuracy": round(test_accuracy, 4),
        "end_to_end_samples_per_second": round(examples / history[-1][0]),
        "validation_history": [round(accuracy, 4) for _, accuracy in history],
    }


# ---------------------------------------------------------------- chapter 7: the baseline


def baseline_model():
    def init_params(key, scale=0.01):
        params = []
        for n_in, n_out, layer_key in zip(LAYER_SIZES[:-1], LAYER_SIZES[1:],
                                          jax.random.split(key, len(LAYER_SIZES) - 1),
                                          strict=True):
            weight_key, bias_key = jax.random.split(layer_key)
            params.append((scale * jax.random.normal(weight_key, (n_out, n_in)),
                           scale * jax.random.normal(bias_key, (n_out,))))
        return params

    def predict(params, image):
        activations = image
        for weights, biases in params[:-1]:
            activations = jnp.maximum(0, jnp.dot(weights, activations) + biases)
        final_weights, final_biases = params[-1]
        logits = jnp.dot(final_weights, activations) + final_biases
        return logits - jax.scipy.special.logsumexp(logits)

    batched_predict = jax.vmap(predict, in_axes=(None, 0))

    def loss(params, images, labels):
        # The classic example's loss: the mean over batch x 10 entries, i.e. cross-entropy / 10.
        return -jnp.mean(batched_predict(params, images) * jax.nn.one_hot(labels, 10))

    @jax.jit
    def accuracy(params, images, labels):
        return jnp.mean(jnp.argmax(batched_predict(params, images), axis=1) == labels)

    return init_params, loss, accuracy


def sgd_update(loss, step_size):
    @jax.jit
    def update(params, images, labels):
        batch_loss, grads = jax.value_and_grad(loss)(params, images, labels)
        return jax.tree.map(lambda p, g: p - step_size * g, params, grads), batch_loss

    return update


@functools.cache
def step_flops(batch_size):
    """XLA's FLOP count of one step of chapter 7's SGD update at this batch size.

    Chapter 10 counts the step's FLOPs the same way (`step_cost`, from `cost_analysis()`); it is
    about 3.22 MFLOP per example, a little more than the matmuls' 3.209 by hand.
    """
    init_params, loss, _ = baseline_model()
    images = jnp.zeros((batch_size, LAYER_SIZES[0]))
    labels = jnp.zeros(batch_size, jnp.int32)
    compiled = sgd_update(loss, 0.01).lower(init_params(jax.random.key(0)), images,
                                            labels).compile()
    return float(compiled.cost_analysis()["flops"])


def flatten_and_cast(picture):
    return np.ravel(np.asarray(picture, dtype=np.float32))


def numpy_collate(examples):
    images, labels = zip(*examples, strict=True)
    return np.stack(images), np.array(labels)


def run_baseline(seed, n_epochs=BASELINE_EPOCHS, batch_size=BASELINE_BATCH_SIZE,
                 step_size=0.01):
    init_params, loss, accuracy = baseline_model()
    update = sgd_update(loss, step_size)  # a new function: this run compiles it

    start = time.perf_counter()
    train_set = load_mnist(train=True, transform=flatten_and_cast)
    train_rows, validation_rows = split_rows(len(train_set))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.Subset(train_set, train_rows.tolist()), batch_size=batch_size,
        shuffle=True, num_workers=0, collate_fn=numpy_collate, drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )
    params = init_params(jax.random.key(seed))
    # The baseline's inputs are unscaled pixels (flatten_and_cast), and so are these.
    validation_images = train_set.data.numpy()[validation_rows].reshape(-1, 784).astype(
        np.float32)
    validation_labels = train_set.targets.numpy()[validation_rows]
    eval_every = len(loader) // EVALUATIONS_PER_EPOCH  # 39 steps of 390
    total_steps = n_epochs * len(loader)
    history, seconds, steps, step_times = [], 0.0, 0, []
    for _ in range(n_epochs):
        for images, labels in loader:
            params, _ = update(params, images, labels)
            steps += 1
            if steps % eval_every == 0 or steps == total_steps:
                jax.block_until_ready(params)
                seconds += time.perf_counter() - start
                history.append((seconds, float(accuracy(params, validation_images,
                                                        validation_labels))))
                start = time.perf_counter()
    # The test set, once, with the clock stopped.
    test_set = load_mnist(train=False)
    test_accuracy = float(accuracy(params, test_set.data.numpy().reshape(-1, 784).astype(
        np.float32), test_set.targets.numpy()))
    # The jitted step alone, on batches already fetched: no DataLoader time.
    batches = [batch for batch, _ in zip(loader, range(50), strict=False)]
    for _ in range(3):
        begin = time.perf_counter()
        for images, labels in batches:
            params, _ = update(params, images, labels)
        jax.block_until_ready(params)
        step_times.append((time.perf_counter() - begin) / len(batches))
    step_seconds = float(np.median(step_times))
    return {
        "pipeline": "baseline (chapter 7: torchvision loader, jit per step, classic loss, "
                    "SGD 0.01, batch 128)",
        "seed": seed,
        "epochs": n_epochs,
        "training_images": len(train_rows),
        **history_fields(history, total_steps * batch_size, test_accuracy),
        "step_alone_ms": round(step_seconds * 1e3, 3),
        "step_alone_gflops": round(step_flops(batch_size) / step_seconds / 1e9, 1),
        "history": history,
    }


# ---------------------------------------------------------------- chapter 10: the fastest


def he_init(key):
    params = []
    keys = jax.random.split(key, len(LAYER_SIZES) - 1)
    for n_in, n_out, layer_key in zip(LAYER_SIZES[:-1], LAYER_SIZES[1:], keys, strict=True):
        weights = jax.random.normal(layer_key, (n_out, n_in)) * jnp.sqrt(2.0 / n_in)
        params.append((weights, jnp.zeros(n_out)))
    return params


def batched_logits(params, images):
    activations = images
    for weights, biases in params[:-1]:
        activations = jax.nn.relu(activations @ weights.T + biases)
    final_weights, final_biases = params[-1]
    return activations @ final_weights.T + final_biases


@jax.jit
def standardize(fit_pixels, other_pixels):
    """uint8 pixels to float32, scaled with the mean and std of the images we fit on."""
    fit = fit_pixels.astype(jnp.float32) / 255
    other = other_pixels.astype(jnp.float32) / 255
    mean, std = jnp.mean(fit), jnp.std(fit)
    return (fit - mean) / std, (other - mean) / std


def load_mnist_arrays(train):
    """(uint8 pixels of shape (n, 784), int32 labels) of the training or the test set."""
    dataset = load_mnist(train=train)
    return dataset.data.numpy().reshape(-1, 784), dataset.targets.numpy().astype(np.int32)


def make_trainer(n_train, n_epochs=N_EPOCHS, batch_size=FAST_BATCH_SIZE):
    """Chapter 10's compiled pieces for one training-set size; hyper-parameters are arguments."""
    steps_per_epoch, left_over = divmod(n_train, batch_size)
    chunks_per_epoch, left_over_steps = divmod(steps_per_epoch, STEPS_PER_CHUNK)
    assert left_over == 0 and left_over_steps == 0, "an epoch must be whole chunks of batches"
    unit_schedule = optax.warmup_cosine_decay_schedule(
        init_value=0.0, peak_value=1.0, warmup_steps=steps_per_epoch // 8,
        decay_steps=n_epochs * steps_per_epoch,
    )

    def optimizer_for(hyper):
        return optax.adam(lambda step: hyper["peak_learning_rate"] * unit_schedule(step),
                          b1=hyper["b1"])

    def loss_fn(params, images, labels, smoothing):
        targets = optax.smooth_labels(jax.nn.one_hot(labels, 10), smoothing)
        return optax.softmax_cross_entropy(batched_logits(params, images), targets).mean()

    @functools.partial(jax.jit, donate_argnums=(0, 1))
    def train_chunk(params, opt_state, hyper, images, labels, order, chunk_index):
        # The dataset is an argument, not a closed-over constant: closing over a 188 MB array
        # would embed it in the compiled program.
        optimizer = optimizer_for(hyper)
        chunk_size = STEPS_PER_CHUNK * batch_size
        chunk_order = jax.lax.dynamic_slice_in_dim(order, chunk_index * chunk_size, chunk_size)

        def step(carry, batch_indices):
            params, opt_state = carry
            batch_loss, grads = jax.value_and_grad(loss_fn)(
                params, images[batch_indices], labels[batch_indices], hyper["label_smoothing"]
            )
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return (optax.apply_updates(params, updates), opt_state), batch_loss

        (params, opt_state), losses = jax.lax.scan(
            step, (params, opt_state), chunk_order.reshape(STEPS_PER_CHUNK, batch_size)
        )
        return params, opt_state, losses.mean()

    @jax.jit
    def epoch_order(data_key, epoch):
        return jax.random.permutation(jax.random.fold_in(data_key, epoch), n_train)

    @jax.jit
    def accuracy(params, images, labels):
        return jnp.mean(jnp.argmax(batched_logits(params, images), axis=1) == labels)

    def train(hyper, seed, images, labels, eval_images, eval_labels, every_chunk=False,
              seconds_before=0.0):
        start, seconds, history = time.perf_counter(), seconds_before, []
        init_key, data_key = jax.random.split(jax.random.key(seed))
        params = he_init(init_key)
        opt_state = optimizer_for(hyper).init(params)
        for epoch in range(n_epochs):
            order = epoch_order(data_key, epoch)
            for chunk_index in range(chunks_per_epoch):
                params, opt_state, _ = train_chunk(params, opt_state, hyper, images, labels,
                                                   order, chunk_index)
                if every_chunk or (epoch, chunk_index) == (n_epochs - 1, chunks_per_epoch - 1):
                    jax.block_until_ready(params)
                    seconds += time.perf_counter() - start
                    history.append((seconds, float(accuracy(params, eval_images, eval_labels))))
                    start = time.perf_counter()
        return params, history

    return train, train_chunk, optimizer_for, chunks_per_epoch, accuracy


def run_fast(seed, hyper=CHOSEN):
    """The chosen recipe on the 50,000 training images; loading and compiling counted."""
    start = time.perf_counter()
    pixels, labels = load_mnist_arrays(train=True)
    train_rows, validation_rows = split_rows(len(labels))
    images, validation_images = standardize(pixels[train_rows], pixels[validation_rows])
    train, _, _, chunks_per_epoch, accuracy = make_trainer(len(train_rows))
    assert chunks_per_epoch == EVALUATIONS_PER_EPOCH, "one evaluation per chunk"
    params, history = train(hyper, seed, images, jnp.asarray(labels[train_rows]),
                            validation_images, jnp.asarray(labels[validation_rows]),
                            every_chunk=True, seconds_before=time.perf_counter() - start)
    # The test set, once, with the clock stopped (standardized with the training statistics).
    test_pixels, test_labels = load_mnist_arrays(train=False)
    _, test_images = standardize(pixels[train_rows], test_pixels)
    test_accuracy = float(accuracy(params, test_images, jnp.asarray(test_labels)))
    return {
        "pipeline": "fast (chapter 10: device-resident data, lax.scan, donation, Adam, "
                    "batch 500)",
        "seed": seed,
        "hyper_parameters": hyper,
        "epochs": N_EPOCHS,
        "training_images": len(train_rows),
        **history_fields(history, N_EPOCHS * len(train_rows), test_accuracy),
        "history": history,
    }


def matmuls_of_the_step(weights, batches):
    """The step's matrix products alone, forward and backward, for a scan of batches."""
    def step(weights, images):
        w1, w2, w3 = weights
        h1 = images @ w1.T
        h2 = h1 @ w2.T
        out = h2 @ w3.T
        d_w3, d_h2 = out.T @ h2, out @ w3  # stand-ins for the gradients, same shapes
        d_w2, d_h1 = d_h2.T @ h1, d_h2 @ w2
        d_w1 = d_h1.T @ images
        return (w1 - 1e-6 * d_w1, w2 - 1e-6 * d_w2, w3 - 1e-6 * d_w3), None

    return jax.lax.scan(step, weights, batches)[0]


def fast_step_alone(repeats=21):
    """Median seconds per step of the fast chunk and of its matmuls alone, interleaved."""
    pixels, labels = load_mnist_arrays(train=True)
    train_rows, validation_rows = split_rows(len(labels))
    images, _ = standardize(pixels[train_rows], pixels[validation_rows])
    labels = jnp.asarray(labels[train_rows])
    _, train_chunk, optimizer_for, chunks_per_epoch, _ = make_trainer(len(train_rows))
    params = he_init(jax.random.key(0))
    opt_state = optimizer_for(CHOSEN).init(params)
    order = jax.random.permutation(jax.random.key(0), len(train_rows))
    weights = tuple(w for w, _ in he_init(jax.random.key(1)))
    batches = images[: STEPS_PER_CHUNK * FAST_BATCH_SIZE].reshape(STEPS_PER_CHUNK,
                                                                  FAST_BATCH_SIZE, 784)
    matmuls_alone = jax.jit(matmuls_of_the_step)
    jax.block_until_ready(matmuls_alone(weights, batches))
    chunk_times, matmul_times = [], []
    for repeat in range(repeats + 1):
        start = time.perf_counter()
        params, opt_state, _ = train_chunk(params, opt_state, CHOSEN, images, labels, order,
                                           repeat % chunks_per_epoch)
        jax.block_until_ready(params)
        chunk_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        jax.block_until_ready(matmuls_alone(weights, batches))
        matmul_times.append(time.perf_counter() - start)
    step = float(np.median(chunk_times[1:])) / STEPS_PER_CHUNK  # the first call compiles
    return step, float(np.median(matmul_times[1:])) / STEPS_PER_CHUNK


def tune():
    """Chapter 10's search: every setting, three seeds, validation accuracy after 3 epochs."""
    pixels, labels = load_mnist_arrays(train=True)
    fit_rows, validation_rows = split_rows(len(labels))
    fit_images, validation_images = standardize(pixels[fit_rows], pixels[validation_rows])
    train, *_ = make_trainer(len(fit_rows))
    results = {}
    for name, (peak_learning_rate, b1, label_smoothing) in SETTINGS.items():
        hyper = {"peak_learning_rate": peak_learning_rate, "b1": b1,
                 "label_smoothing": label_smoothing}
        accuracies = [
            round(train(hyper, seed, fit_images, jnp.asarray(labels[fit_rows]),
                        validation_images, jnp.asarray(labels[validation_rows]))[1][-1][1], 4)
            for seed in SEEDS
        ]
        results[name] = {"hyper_parameters": hyper, "validation_accuracy": accuracies,
                         **spread(accuracies)}
        print(json.dumps({"setting": name, **results[name]}), flush=True)
    chosen = max(results, key=lambda name: results[name]["mean"])
    print(json.dumps({"chosen_on_validation": chosen,
                      "hyper_parameters": results[chosen]["hyper_parameters"]}))


def time_to_same_accuracy(baseline, fast):
    """Both runs of one seed timed to the baseline's final validation accuracy."""
    target = baseline["history"][-1][1]
    baseline_index = first_reaching(baseline["history"], target)  # never None
    fast_index = first_reaching(fast["history"], target)
    baseline_seconds = baseline["history"][baseline_index][0]
    fast_seconds = None if fast_index is None else fast["history"][fast_index][0]
    return {
        "seed": baseline["seed"],
        "target_validation_accuracy": round(target, 4),
        "baseline_seconds": round(baseline_seconds, 3),
        "baseline_evaluation": f"{baseline_index + 1} of {len(baseline['history'])}",
        "fast_seconds": None if fast_seconds is None else round(fast_seconds, 3),
        "fast_evaluation": None if fast_index is None
        else f"{fast_index + 1} of {len(fast['history'])}",
        "ratio": None if fast_seconds is None else round(fast_seconds / baseline_seconds, 4),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true",
                        help="redo the hyper-parameter search on the validation split")
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 when a target is not met")
    args = parser.parse_args()
    print(
        f"# JAX {jax.__version__} on {jax.default_backend()}, {os.cpu_count()} CPUs, "
        f"{platform.machine()}, Python {platform.python_version()}",
        file=sys.stderr,
    )
    if args.tune:
        tune()
        return 0
    # The peak is measured before and after the training runs and the higher value kept,
    # so that a moment of load from other processes does not lower it.
    peak_before = matmul_peak_gflops()
    baselines = [run_baseline(seed) for seed in SEEDS]
    fasts = [run_fast(seed) for seed in SEEDS]
    step_seconds, matmul_seconds = fast_step_alone()
    peak = max(peak_before, matmul_peak_gflops())
    for result in baselines + fasts:
        printable = {key: value for key, value in result.items() if key != "history"}
        print(json.dumps(printable), flush=True)
    crossings = [time_to_same_accuracy(baseline, fast)
                 for baseline, fast in zip(baselines, fasts, strict=True)]
    time_ratio = spread([crossing["ratio"] for crossing in crossings])
    missing = sum(crossing["ratio"] is None for crossing in crossings)
    if time_ratio is not None and missing:
        time_ratio["missing"] = missing
    step_gflops = step_flops(FAST_BATCH_SIZE) / step_seconds / 1e9
    summary = {
        "seeds": list(SEEDS),
        "fast_test_accuracy": spread([fast["test_accuracy"] for fast in fasts]),
        "fast_validation_accuracy": spread([fast["validation_accuracy"] for fast in fasts]),
        "fast_train_seconds": spread([fast["train_seconds"] for fast in fasts]),
        "baseline_test_accuracy": spread([baseline["test_accuracy"] for baseline in baselines]),
        "baseline_validation_accuracy": spread(
            [baseline["validation_accuracy"] for baseline in baselines]),
        "baseline_train_seconds": spread([baseline["train_seconds"] for baseline in baselines]),
        "time_to_same_accuracy": crossings,
        "time_ratio": time_ratio,
        "time_ratio_definition": "seconds for fast seed i to first reach, on validation, the "
                                 "final validation accuracy of baseline seed i, over the "
                                 "seconds baseline seed i took to first reach it; both "
                                 "evaluated every tenth of an epoch",
        "baseline_step_alone_ms": spread([baseline["step_alone_ms"] for baseline in baselines]),
        "fast_step_alone_ms": round(step_seconds * 1e3, 3),
        "fast_matmuls_alone_ms": round(matmul_seconds * 1e3, 3),
        "step_vs_matmuls": round(matmul_seconds / step_seconds, 3),
        "step_mflop_per_example_xla": round(step_flops(FAST_BATCH_SIZE) / FAST_BATCH_SIZE / 1e6,
                                            3),
        "step_gflops": round(step_gflops, 1),
        "matmul_peak_gflops": round(peak, 1),
        "step_vs_square_peak": round(step_gflops / peak, 3),
        "fast_end_to_end_samples_per_second": spread(
            [fast["end_to_end_samples_per_second"] for fast in fasts]),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    rows = check_targets(summary)
    summary["targets"] = rows
    summary["all_targets_met"] = all(row["passed"] for row in rows)
    print(json.dumps(summary))
    print(format_targets(rows), flush=True)
    return 1 if args.check and not summary["all_targets_met"] else 0


if __name__ == "__main__":
    sys.exit(main())
