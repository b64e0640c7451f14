"""Chapter 18's benchmark (issue #34): its target, and the pure helpers that check it.

No JAX here, so a test can import this in a fraction of a second. `gpt_step.py` fills a summary
dict; `check_target(summary)` reads it.

The issue's target for chapter 15's training step made faster with what the profile shows: at
least 1.5 times faster (wall-clock time per step, before over after, fastest round of each,
measured in the same run), or at least 0.5 of the square-matmul peak (the faster step's GFLOP/s
by XLA's count over the best square-matmul GFLOP/s), or the measured reason neither is reachable
at this model size. The reason is recorded as two measured bounds (see `reason`).
"""

SPEEDUP_TARGET = 1.5
PEAK_FRACTION_TARGET = 0.5


def spread(values):
    """{"median", "min", "max"} of a list of numbers, rounded to 4 significant places."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return {"median": round(median, 4), "min": round(ordered[0], 4), "max": round(ordered[-1], 4)}


def reason(summary):
    """Why neither target is reachable, from two measured bounds, or None if one is met.

    - `speedup_bound`: the before step's fastest wall time over the after step's, less the
      after loop's host time per step (its dispatch, read from a trace). The after loop has
      only that host work left: removing all of it cannot make the step faster than this, so
      if it is below the speed-up target, a further speed-up must come from the device's
      operations themselves (fewer, fused or faster kernels), not from the host program.
    - `peak_fraction_bound`: the model's matrix-product FLOPs over the time of the step's matrix
      products alone (profile of the single step), as a fraction of the square-matmul peak:
      even with every other operation removed, the step could not run faster than its products
      do at these shapes.
    """
    if summary["speedup"] >= SPEEDUP_TARGET or summary["peak_fraction"] >= PEAK_FRACTION_TARGET:
        return None
    lines = []
    if summary["speedup_bound"] < SPEEDUP_TARGET:
        lines.append(f"the after loop has {summary['after_dispatch_ms']:.2f} ms of host work per "
                     f"step left, so no further host-side change can make it more than "
                     f"{summary['speedup_bound']:.2f} times faster than the before step; the rest "
                     "is the device's operations")
    if summary["peak_fraction_bound"] < PEAK_FRACTION_TARGET:
        lines.append(f"the step's matrix products alone run at "
                     f"{summary['peak_fraction_bound']:.2f} of the square-matmul peak at these "
                     "shapes, so the whole step cannot reach 0.5")
    if not lines:
        lines.append("both bounds leave room: the target is reachable in principle but was "
                     "not reached by these changes")
    return "; ".join(lines)


def check_target(summary):
    """(passed, text): the verdict block printed at the end of the benchmark."""
    speedup_ok = summary["speedup"] >= SPEEDUP_TARGET
    peak_ok = summary["peak_fraction"] >= PEAK_FRACTION_TARGET
    why = reason(summary)
    lines = [
        "# target (issue #34, chapter 18)",
        f"{'PASS' if speedup_ok else 'FAIL'}  speed-up of the step (fastest rounds) >= "
        f"{SPEEDUP_TARGET}: {summary['speedup']:.2f}",
        f"{'PASS' if peak_ok else 'FAIL'}  after step GFLOP/s / square-matmul peak >= "
        f"{PEAK_FRACTION_TARGET}: {summary['peak_fraction']:.3f}",
    ]
    if why is not None:
        lines.append(f"REASON  {why}")
    passed = speedup_ok or peak_ok
    lines.append(f"# {'met' if passed else 'not met'}" + (", with a measured reason" if why
                                                          and not passed else ""))
    return passed, "\n".join(lines)
