"""Part II training benchmark: chapter 6's pipeline against chapter 8's fastest one.

Run with `make bench` (MNIST root from the environment variable JAXBOOK_DATA), or
`python benchmarks/train_mnist.py --tune` to redo chapter 8's hyper-parameter search on the
validation split. Both train the same 784-512-512-10 ReLU MLP in this one process.

- "baseline" (chapter 6): torchvision dataset with a per-sample flatten-and-cast transform, a
  DataLoader (num_workers=0) with a NumPy collate function, the classic example's loss (the
  cross-entropy divided by 10), a jitted SGD step (step size 0.01, batch 128), 8 epochs.
- "fast" (chapter 8): the dataset as standardized float32 arrays on the device, a new
  permutation every epoch from the run's data key, ten Adam steps of batch 500 per compiled call
  under `lax.scan` with donated parameters and optimizer state, He initialization, label
  smoothing, warmup + cosine schedule, 3 epochs. Batch 500 divides 60,000, so every epoch is a
  full pass (120 batches). The hyper-parameters are those chapter 8 chose on a validation split
  (the last 10,000 of `np.random.default_rng(0).permutation(60_000)`), never on the test set;
  `--tune` reruns that search here, on the validation split only, and prints the table.

Both run with seeds 0, 1 and 2 (initialization and data order). The test accuracy is measured
every sixteenth of an epoch (baseline, every 29 steps) or every chunk of 5,000 examples (fast);
the training clock includes data loading and compilation and stops while it is measured.

Output: one JSON line per run, then one summary line with
- the fast recipe's test accuracy after 3 epochs and its seconds to 98.0%: mean, min, max;
- "ratio_to_baseline_final": for each seed, the fast run's seconds to reach the accuracy the
  baseline run of that seed ends with, divided by that baseline run's whole time (which does
  not depend on where a curve happens to cross a fixed line): mean, min, max;
- the training steps alone, without loading or evaluation (median of repeated calls), next to
  the end-to-end throughput, for both pipelines;
- "step_vs_matmuls": the fast step's throughput over that of its own matrix products (same
  shapes, forward and backward) run alone in a scan of the same length, median of interleaved
  repeats; "step_vs_square_peak": the step's GFLOP/s over the best square-matmul GFLOP/s.
"""

import argparse
import contextlib
import functools
import io
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
import torchvision

LAYER_SIZES = [784, 512, 512, 10]
DATA_ROOT = Path(os.environ.get("JAXBOOK_DATA", "data"))
SEEDS = (0, 1, 2)
VALIDATION_SIZE = 10_000
FAST_BATCH_SIZE = 500
STEPS_PER_CHUNK = 10
N_EPOCHS = 3
# Chosen in chapter 8 on the validation split (the "b1 0.8 and label smoothing 0.1" row).
CHOSEN = {"peak_learning_rate": 1e-2, "b1": 0.8, "label_smoothing": 0.1}
# Chapter 8's candidates, as (peak learning rate, b1, label smoothing).
SETTINGS = {
    "base: peak 0.01, b1 0.9, no smoothing": (1e-2, 0.9, 0.0),
    "peak learning rate 0.005": (5e-3, 0.9, 0.0),
    "peak learning rate 0.02": (2e-2, 0.9, 0.0),
    "b1 0.8": (1e-2, 0.8, 0.0),
    "label smoothing 0.1": (1e-2, 0.9, 0.1),
    "b1 0.8 and label smoothing 0.1": (1e-2, 0.8, 0.1),
}


def load_mnist(train, transform=None):
    with contextlib.redirect_stdout(io.StringIO()):
        return torchvision.datasets.MNIST(DATA_ROOT, train=train, download=True,
                                          transform=transform)


def train_flops_per_example():
    """Matmul FLOPs of one example's forward and backward pass.

    Forward: 2 * n_in * n_out per layer. Backward: the same again for the weight gradient and
    for the input gradient, except the input gradient of the first layer, which nobody needs.
    """
    pairs = list(zip(LAYER_SIZES[:-1], LAYER_SIZES[1:], strict=True))
    forward = sum(2 * n_in * n_out for n_in, n_out in pairs)
    return 3 * forward - 2 * LAYER_SIZES[0] * LAYER_SIZES[1]


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


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def first_reaching(history, threshold):
    """Seconds of the first evaluation at or above threshold, or None."""
    # An accuracy is k / 10000 in float32: round, so that 9800 correct count as 98.0%.
    return next((round(seconds, 3) for seconds, acc in history if round(acc, 6) >= threshold),
                None)


def history_fields(history, examples):
    """The fields both pipelines report from [(training seconds, test accuracy)]."""
    return {
        "train_seconds": round(history[-1][0], 3),
        "test_accuracy": round(history[-1][1], 4),
        "seconds_to_96_7": first_reaching(history, 0.967),
        "seconds_to_98_0": first_reaching(history, 0.980),
        "end_to_end_samples_per_second": round(examples / history[-1][0]),
        "accuracy_history": [round(acc, 4) for _, acc in history],
    }


def spread(values):
    values = [value for value in values if value is not None]
    if not values:
        return None
    return {"mean": round(float(np.mean(values)), 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


# ---------------------------------------------------------------- chapter 6: the baseline


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


def flatten_and_cast(picture):
    return np.ravel(np.asarray(picture, dtype=np.float32))


def numpy_collate(examples):
    images, labels = zip(*examples, strict=True)
    return np.stack(images), np.array(labels)


def run_baseline(seed, n_epochs=8, batch_size=128, step_size=0.01):
    init_params, loss, accuracy = baseline_model()

    @jax.jit
    def update(params, images, labels):
        batch_loss, grads = jax.value_and_grad(loss)(params, images, labels)
        return jax.tree.map(lambda p, g: p - step_size * g, params, grads), batch_loss

    start = time.perf_counter()
    loader = torch.utils.data.DataLoader(
        load_mnist(train=True, transform=flatten_and_cast), batch_size=batch_size,
        shuffle=True, num_workers=0, collate_fn=numpy_collate, drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )
    params = init_params(jax.random.key(seed))
    test_set = load_mnist(train=False)
    test_images = test_set.data.numpy().reshape(-1, 784).astype(np.float32)
    test_labels = test_set.targets.numpy()
    eval_every = len(loader) // 16
    total_steps = n_epochs * len(loader)
    history, seconds, steps, step_times = [], 0.0, 0, []
    for _ in range(n_epochs):
        for images, labels in loader:
            params, _ = update(params, images, labels)
            steps += 1
            if steps % eval_every == 0 or steps == total_steps:
                jax.block_until_ready(params)
                seconds += time.perf_counter() - start
                history.append((seconds, float(accuracy(params, test_images, test_labels))))
                start = time.perf_counter()
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
        "pipeline": "baseline (chapter 6: torchvision loader, jit per step, classic loss, "
                    "SGD 0.01, batch 128)",
        "seed": seed,
        "epochs": n_epochs,
        **history_fields(history, total_steps * batch_size),
        "step_alone_ms": round(step_seconds * 1e3, 3),
        "step_alone_gflops": round(batch_size * train_flops_per_example() / step_seconds / 1e9,
                                   1),
    }


# ---------------------------------------------------------------- chapter 8: the fastest


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


def load_mnist_arrays():
    train, test = load_mnist(train=True), load_mnist(train=False)
    return (train.data.numpy().reshape(-1, 784), train.targets.numpy().astype(np.int32),
            test.data.numpy().reshape(-1, 784), test.targets.numpy().astype(np.int32))


def make_trainer(n_train, n_epochs=N_EPOCHS, batch_size=FAST_BATCH_SIZE):
    """Chapter 8's compiled pieces for one training-set size; hyper-parameters are arguments."""
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

    return train, train_chunk, optimizer_for, chunks_per_epoch


def run_fast(seed, hyper=CHOSEN):
    """The chosen recipe on all 60,000 training images; loading and compiling counted."""
    start = time.perf_counter()
    pixels, labels, test_pixels, test_labels = load_mnist_arrays()
    images, test_images = standardize(pixels, test_pixels)
    train, *_ = make_trainer(len(labels))
    _, history = train(hyper, seed, images, jnp.asarray(labels), test_images,
                       jnp.asarray(test_labels), every_chunk=True,
                       seconds_before=time.perf_counter() - start)
    return {
        "pipeline": "fast (chapter 8: device-resident data, lax.scan, donation, Adam, "
                    "batch 500)",
        "seed": seed,
        "hyper_parameters": hyper,
        "epochs": N_EPOCHS,
        **history_fields(history, N_EPOCHS * len(labels)),
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
    pixels, labels, test_pixels, _ = load_mnist_arrays()
    images, _ = standardize(pixels, test_pixels)
    labels = jnp.asarray(labels)
    _, train_chunk, optimizer_for, chunks_per_epoch = make_trainer(len(labels))
    params = he_init(jax.random.key(0))
    opt_state = optimizer_for(CHOSEN).init(params)
    order = jax.random.permutation(jax.random.key(0), len(labels))
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
    """Chapter 8's search: every setting, three seeds, validation accuracy after 3 epochs."""
    pixels, labels, _, _ = load_mnist_arrays()
    split = np.random.default_rng(0).permutation(len(labels))
    fit_rows, validation_rows = split[:-VALIDATION_SIZE], split[-VALIDATION_SIZE:]
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true",
                        help="redo the hyper-parameter search on the validation split")
    args = parser.parse_args()
    print(
        f"# JAX {jax.__version__} on {jax.default_backend()}, {os.cpu_count()} CPUs, "
        f"{platform.machine()}, Python {platform.python_version()}",
        file=sys.stderr,
    )
    if args.tune:
        tune()
        return
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
    ratios = []
    for baseline, fast in zip(baselines, fasts, strict=True):
        reached = first_reaching(fast["history"], baseline["test_accuracy"])
        ratios.append(None if reached is None else reached / baseline["train_seconds"])
    step_gflops = FAST_BATCH_SIZE * train_flops_per_example() / step_seconds / 1e9
    summary = {
        "seeds": list(SEEDS),
        "fast_test_accuracy": spread([fast["test_accuracy"] for fast in fasts]),
        "fast_seconds_to_98_0": spread([fast["seconds_to_98_0"] for fast in fasts]),
        "fast_train_seconds": spread([fast["train_seconds"] for fast in fasts]),
        "baseline_test_accuracy": spread([baseline["test_accuracy"] for baseline in baselines]),
        "baseline_train_seconds": spread([baseline["train_seconds"] for baseline in baselines]),
        "ratio_to_baseline_final": spread(ratios),
        "ratio_definition": "seconds for fast seed i to reach the final test accuracy of "
                            "baseline seed i, over the whole time of baseline seed i",
        "baseline_step_alone_ms": spread([baseline["step_alone_ms"] for baseline in baselines]),
        "fast_step_alone_ms": round(step_seconds * 1e3, 3),
        "fast_matmuls_alone_ms": round(matmul_seconds * 1e3, 3),
        "step_vs_matmuls": round(matmul_seconds / step_seconds, 3),
        "step_gflops": round(step_gflops, 1),
        "matmul_peak_gflops": round(peak, 1),
        "step_vs_square_peak": round(step_gflops / peak, 3),
        "fast_end_to_end_samples_per_second": spread(
            [fast["end_to_end_samples_per_second"] for fast in fasts]),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
