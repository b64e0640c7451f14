"""The Part II benchmark's targets (issue #22): the checks, and the stored reference run.

Imports benchmarks/bench_targets.py only (no JAX, no training), so this takes well under a
second; the benchmark itself is `make bench`.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_targets import TARGETS, check_targets, first_reaching, format_targets  # noqa: E402

REFERENCE = ROOT / "benchmarks" / "reference_run.txt"


def test_the_targets_are_the_issues():
    assert {field: (comparison, threshold) for field, _, comparison, threshold in TARGETS} == {
        "fast_test_accuracy": (">=", 0.980),
        "step_vs_matmuls": (">=", 0.85),
        "step_vs_square_peak": (">=", 0.65),
        "time_ratio": ("<=", 0.10),
    }


def test_first_reaching_is_the_first_evaluation_at_or_above():
    history = [(1.0, 0.95), (2.0, 0.9700000286102295), (3.0, 0.96), (4.0, 0.98)]
    assert first_reaching(history, 0.97) == 1  # float32 9700 / 10000 counts as 97.0%
    assert first_reaching(history, 0.9700000286102295) == 1  # a target read off a curve
    assert first_reaching(history, 0.975) == 3
    assert first_reaching(history, 0.99) is None
    assert first_reaching(history, history[-1][1]) == 3  # the last point is always reached


def passing_summary():
    return {
        "fast_test_accuracy": {"mean": 0.9813, "min": 0.9807, "max": 0.982},
        "step_vs_matmuls": 0.85,
        "step_vs_square_peak": 0.757,
        "time_ratio": {"mean": 0.1, "min": 0.09, "max": 0.11},
    }


def test_check_targets_pass_and_fail():
    assert all(row["passed"] for row in check_targets(passing_summary()))
    for field, value in [("fast_test_accuracy", {"mean": 0.9799, "min": 0.97, "max": 0.99}),
                         ("step_vs_matmuls", 0.849), ("step_vs_square_peak", None),
                         ("time_ratio", {"mean": 0.1001, "min": 0.09, "max": 0.11}),
                         ("time_ratio", {"mean": 0.05, "min": 0.05, "max": 0.05, "missing": 1})]:
        summary = {**passing_summary(), field: value}
        verdicts = {row["field"]: row["passed"] for row in check_targets(summary)}
        assert verdicts == {name: name != field for name in verdicts}, (field, value)
    block = format_targets(check_targets({**passing_summary(), "step_vs_matmuls": 0.5}))
    assert block.splitlines()[2].startswith("FAIL  ")
    assert block.splitlines()[-1] == "# 3 of 4 targets met"


def test_reference_run_is_stored_with_its_machine_and_consistent_verdicts():
    text = REFERENCE.read_text()
    header = [line for line in text.splitlines() if line.startswith("# ")][:7]
    for label in ("# date: ", "# machine: ", "# lscpu flags: AVX-512 ", "# Python ",
                  "# command: "):
        assert any(line.startswith(label) for line in header), label
    assert re.search(r"jax \S+.*torch \S+", text)
    summary = json.loads(next(line for line in text.splitlines()
                              if line.startswith('{"seeds"')))
    stored = {row["field"]: row["passed"] for row in summary["targets"]}
    assert stored == {row["field"]: row["passed"] for row in check_targets(summary)}
    for row in summary["targets"]:  # the printed block says the same as the JSON
        verdict = "PASS" if row["passed"] else "FAIL"
        assert f"{verdict}  {row['what']} {row['comparison']} {row['threshold']}:" in text
    assert "# exit code 0" in text  # a measurement: no --check in the reference run


def readme_target_rows():
    """The README's targets table: [(target text, reference-run text)], in order."""
    lines = (ROOT / "README.md").read_text().splitlines()
    start = lines.index("| target | reference run |")
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(tuple(cell.strip() for cell in line.strip("|").split("|")))
    return rows


def test_readme_states_the_targets_and_the_reference_run():
    """The README's table says, row by row, what TARGETS and the stored reference run say:
    the comparison, the threshold, the measured value (mean and range of the seeds) and the
    verdict. A changed threshold, a re-run reference or a verdict typed the wrong way round
    fails here."""
    readme = (ROOT / "README.md").read_text()
    assert "benchmarks/reference_run.txt" in readme
    summary = json.loads(next(line for line in REFERENCE.read_text().splitlines()
                              if line.startswith('{"seeds"')))
    rows = readme_target_rows()
    assert len(rows) == len(TARGETS) == len(summary["targets"])
    for (target_text, run_text), (field, _, comparison, threshold), stored in zip(
            rows, TARGETS, summary["targets"], strict=True):
        percent = field.endswith("accuracy")
        word = {">=": "at least", "<=": "at most"}[comparison]
        written = f"{100 * threshold:.1f}%" if percent else f"{threshold:.2f}"
        assert f"{word} {written}" in target_text, (target_text, word, written)
        verdict = "PASS" if stored["passed"] else "**FAIL**"
        assert run_text.endswith(f": {verdict}"), (run_text, verdict)
        measured = stored["measured"]
        values = [measured["mean"], measured["min"], measured["max"]] \
            if isinstance(measured, dict) else [measured]
        shown = [float(number) for number in re.findall(r"\d+\.\d+", run_text)][:len(values)]
        scale = 100 if percent else 1
        assert len(shown) == len(values), run_text
        for value, number in zip(values, shown, strict=True):
            digits = len(str(number).split(".")[1])
            assert abs(scale * value - number) <= 0.5 * 10 ** -digits + 1e-9, (run_text, value)
