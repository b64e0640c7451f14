"""Every timed region of the book's code waits for the device before it stops the clock.

JAX dispatches asynchronously: `f(x)` returns as soon as the work is queued, so a clock
stopped right after it measures the dispatch, not the computation, and still prints a
plausible number that every assert on it accepts. A dropped `block_until_ready` is a bug
that no stored output shows on a fast CPU and that a TPU turns into a factor of 100.

So this test reads each code cell of the English notebooks (the zh twins share the code)
for a timed region: `NAME = time.perf_counter()` (or `time.time()`, `time.monotonic()`) up
to the line that subtracts NAME from the clock again. The region must contain a
synchronisation: `block_until_ready`, `jax.device_get`, or a conversion to a host value
(`float(...)`, `int(...)`, `.item()`, `np.asarray`, `np.array`, `.tolist()`), which waits
for the value it converts. A region that times something other than device work (a
compile, a child process, a host-side data pipeline, a loop whose every step converts its
loss) is listed in ALLOWED with the reason, keyed by notebook, cell id and the start of the
region's first timed line. The tests at the end show the check catching a region whose
synchronisation was removed, and an allow-list entry that no longer matches anything.
"""

import json
import re

from conftest import ROOT, all_notebooks, code_cells, source

START = re.compile(r"^\s*(\w+)\s*=\s*time\.(?:perf_counter|time|monotonic)\(\)\s*(?:#.*)?$")
SYNC = re.compile(r"block_until_ready|device_get|\bfloat\(|\bint\(|\.item\(|np\.asarray\(|"
                  r"np\.array\(|\.tolist\(")

# (notebook, cell id, the start of the first timed line): why the region needs no device
# synchronisation.
ALLOWED = {
    ("01_jax_numpy.ipynb", "ce499d96", "function()"):
        "the helper times whatever `function` does; its callers pass either a synchronised "
        "product or the dispatch alone, on purpose (the lesson of the cells after it)",
    ("01_jax_numpy.ipynb", "d9f77cc0", "dispatch_only()"):
        "times the dispatch alone, on purpose: the naive timing the section warns about",
    ("08_optax_training.ipynb", "5e1a7c23", "for name, (make_optimizer, step_sizes"):
        "the sweep's wall time for the reader's information; each run ends in a host value",
    ("09_where_time_goes.ipynb", "fefe39ad", "compiled_torch_steps[name](*arguments)"):
        "torch on the CPU is synchronous",
    ("09_where_time_goes.ipynb", "fefe39ad", "jax.jit(function).lower(*arguments).compile()"):
        "times tracing and compilation, which run on the host and finish before they return",
    ("09_where_time_goes.ipynb", "2841995e", "lowered = new_scan_steps().lower("):
        "times tracing and lowering (host work)",
    ("09_where_time_goes.ipynb", "2841995e", "compiled = lowered.compile()"):
        "times compilation (host work)",
    ("09_where_time_goes.ipynb", "54c46269", "jax.jit(train_chunk).lower(*args).compile()"):
        "times compilation (host work)",
    ("10_fast_tuned_recipe.ipynb", "e0d5b2b3", "for name, (peak_learning_rate, b1,"):
        "the search's wall time for the reader's information; each run ends in host values",
    ("11_cloud_tpu.ipynb", "c11-chip", "transfer()"):
        "the helper times whatever `transfer` does; its callers pass transfers that end in "
        "block_until_ready (device_put, a tiny jitted call) or in a NumPy copy on the host",
    ("13_multi_host.ipynb", "d45b449a", "(single_output,) = run_processes("):
        "times child processes, which have exited when it returns",
    ("13_multi_host.ipynb", "c453d732", "outputs = run_processes("):
        "times child processes, which have exited when it returns",
    ("20_serving_gpt.ipynb", "c20-serve-run", "outputs, n_steps, _ = serve(weights, requests,"):
        "serve() ends by converting every step's tokens with np.asarray (its output is Python "
        "ints), which waits for the device's last step",
    ("20_serving_gpt.ipynb", "c20-serve-spec", "speculative(weights, int8_weights, *caches,"):
        "speculative() ends by reading every round's count with int() and its tokens with "
        "np.asarray, which waits for the device's last round",
    ("14_jax_ai_stack.ipynb", "c14-throughput", "for _ in range(n_batches):"):
        "times Grain's host-side data pipeline, which yields NumPy arrays",
    ("14_jax_ai_stack.ipynb", "c14-workers", "worker_labels.append(next(workers)[\"label\"])"):
        "times Grain's host-side data pipeline, which yields NumPy arrays",
    ("14_jax_ai_stack.ipynb", "c14-workers", "for _ in range(100):"):
        "times Grain's host-side data pipeline, which yields NumPy arrays",
    ("16_sharding_transformer.ipynb", "c16-scan-compile", "if way == \"loop\":"):
        "times tracing and compilation (host work)",
    ("16_sharding_transformer.ipynb", "c16-cal-step", "run(steps)"):
        "run() ends in jax.block_until_ready on the last queued step's loss; each step takes "
        "the one before's donated state, so that waits for every step it timed",
    ("17_preemption.ipynb", "c17-reference", "returncode, reference_log = run_training("):
        "times a child process, which has exited when it returns",
    ("17_preemption.ipynb", "c17-sharded-save", "saved_reports = run_sharded("):
        "times child processes, which have exited when they return",
}


def timed_regions(code: str) -> list[tuple[str, str]]:
    """(first timed line, the region's text) of each timed region of a cell's code."""
    lines, regions = code.splitlines(), []
    for i, line in enumerate(lines):
        match = START.match(line)
        if not match:
            continue
        stop = re.compile(rf"time\.(?:perf_counter|time|monotonic)\(\)\s*-\s*{match[1]}\b")
        for j in range(i + 1, len(lines)):
            if stop.search(lines[j]):
                body = [text for text in lines[i + 1:j + 1] if text.strip()]
                if body:
                    regions.append((body[0].strip(), "\n".join(body)))
                break
    return regions


def unsynchronised(notebooks) -> tuple[list[str], set]:
    """The regions without a synchronisation that ALLOWED does not list, and the keys used."""
    found, used = [], set()
    for path in notebooks:
        for cell in code_cells(json.loads(path.read_text(encoding="utf-8"))):
            for first, region in timed_regions(source(cell)):
                if SYNC.search(region):
                    continue
                key = next((key for key in ALLOWED if key[:2] == (path.name, cell.get("id"))
                            and first.startswith(key[2])), None)
                if key is not None:
                    used.add(key)
                else:
                    found.append(f"{path.name} cell {cell.get('id')}: the region from "
                                 f"{first!r} stops the clock without waiting for the device")
    return found, used


def test_every_timed_region_waits_for_the_device():
    found, used = unsynchronised(all_notebooks())
    assert not found, "\n".join(found)
    stale = set(ALLOWED) - used
    assert not stale, f"ALLOWED entries that match no unsynchronised region: {sorted(stale)}"


def test_a_removed_synchronisation_is_caught(tmp_path):
    """Negative control: chapter 11's timing helper with its synchronisation removed."""
    path = ROOT / "notebooks" / "11_cloud_tpu.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    cells = [c for c in code_cells(notebook) if c.get("id") == "c11-chip"]
    assert cells and "        jax.block_until_ready(result)\n" in source(cells[0])
    assert not unsynchronised([path])[0]
    broken = source(cells[0]).replace("        jax.block_until_ready(result)\n", "")
    assert broken != source(cells[0])
    cells[0]["source"] = broken
    copy = tmp_path / path.name
    copy.write_text(json.dumps(notebook), encoding="utf-8")
    found, _ = unsynchronised([copy])
    assert len(found) == 1 and "c11-chip" in found[0], found


def test_a_method_call_synchronisation_counts():
    region = ("start = time.perf_counter()\nf(x).block_until_ready()\n"
              "t = time.perf_counter() - start\n")
    assert timed_regions(region) and SYNC.search(timed_regions(region)[0][1])
    lazy = "start = time.perf_counter()\ny = f(x)\nt = time.perf_counter() - start\n"
    assert not SYNC.search(timed_regions(lazy)[0][1])
