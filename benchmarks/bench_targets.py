"""The Part II benchmark's targets (issue #22) and the pure helpers that check them.

No JAX or PyTorch here, so tests/test_bench_targets.py can import this in a fraction of a second.
`train_mnist.py` fills a summary dict; `check_targets(summary)` reads four of its fields.
"""

# (summary field, what it measures, comparison, threshold). A field is either a number or a
# spread {"mean", "min", "max"} over the seeds, whose mean is compared.
TARGETS = (
    ("fast_test_accuracy", "fast recipe's test accuracy, mean of 3 seeds", ">=", 0.980),
    ("step_vs_matmuls", "fast step's throughput / its own matmuls' throughput", ">=", 0.85),
    ("step_vs_square_peak", "fast step's GFLOP/s / square-matmul peak GFLOP/s", ">=", 0.65),
    ("time_ratio", "time ratio fast / baseline to the same validation accuracy, mean of "
                   "3 seeds", "<=", 0.10),
)


def first_reaching(history, threshold):
    """Index of the first evaluation of [(seconds, accuracy)] at or above threshold, or None.

    Both pipelines' crossings are found with this one function. An accuracy is k / 10000 in
    float32, so both sides are rounded: 9800 correct count as 98.0%.
    """
    threshold = round(threshold, 6)
    return next((index for index, (_, accuracy) in enumerate(history)
                 if round(accuracy, 6) >= threshold), None)


def spread(values):
    """{"mean", "min", "max"} of the values that are not None, or None if there are none."""
    values = [value for value in values if value is not None]
    if not values:
        return None
    return {"mean": round(sum(values) / len(values), 4), "min": round(min(values), 4),
            "max": round(max(values), 4)}


def check_targets(summary):
    """One row per target: field, what, comparison, threshold, measured, passed.

    A target whose measurement is missing (None), or a spread with a seed missing
    (`"missing": n`, e.g. a fast run that never reached the baseline's accuracy), fails.
    """
    rows = []
    for field, what, comparison, threshold in TARGETS:
        measured = summary.get(field)
        value = measured["mean"] if isinstance(measured, dict) else measured
        if value is None or (isinstance(measured, dict) and measured.get("missing")):
            passed = False
        elif comparison == ">=":
            passed = value >= threshold
        else:
            passed = value <= threshold
        rows.append({"field": field, "what": what, "comparison": comparison,
                     "threshold": threshold, "measured": measured, "passed": bool(passed)})
    return rows


def format_measured(measured):
    if measured is None:
        return "not measured"
    if isinstance(measured, dict):
        text = f"mean {measured['mean']:.4f} (min {measured['min']:.4f}, max {measured['max']:.4f})"
        if measured.get("missing"):
            text += f", {measured['missing']} seed(s) never reached it"
        return text
    return f"{measured:.3f}"


def format_targets(rows):
    """The targets block printed at the end of the benchmark."""
    lines = ["# targets (issue #22)"]
    for row in rows:
        lines.append(f"{'PASS' if row['passed'] else 'FAIL'}  {row['what']} "
                     f"{row['comparison']} {row['threshold']}: {format_measured(row['measured'])}")
    failed = sum(not row["passed"] for row in rows)
    lines.append(f"# {len(rows) - failed} of {len(rows)} targets met")
    return "\n".join(lines)
