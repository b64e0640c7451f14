"""Chapter 18's benchmark verdict (benchmarks/gpt_step_targets.py): pure helpers, no JAX.

The benchmark itself is `make bench-gpt`; this checks that its verdict follows the issue's
target (at least 1.5 times faster, or at least 0.5 of the matmul peak, or a measured reason
neither is reachable) and that the stored reference run says what its numbers say.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpt_step_targets import check_target, reason, spread  # noqa: E402

REFERENCE = ROOT / "benchmarks" / "reference_run_gpt_step.txt"


def summary(**changes):
    base = {"speedup": 1.3, "peak_fraction": 0.18, "speedup_bound": 1.32,
            "peak_fraction_bound": 0.4, "after_dispatch_ms": 1.85}
    return base | changes


def test_either_target_passes_and_needs_no_reason():
    assert check_target(summary(speedup=1.5))[0]
    assert check_target(summary(peak_fraction=0.5))[0]
    assert reason(summary(speedup=1.5)) is None


def test_missing_both_targets_fails_and_gives_the_bounds_as_reason():
    passed, text = check_target(summary())
    assert not passed
    assert "1.32 times" in text and "0.40 of the square-matmul peak" in text


def test_bounds_that_leave_room_are_not_a_reason():
    why = reason(summary(speedup_bound=2.0, peak_fraction_bound=0.7))
    assert "reachable in principle" in why


def test_spread_is_median_min_max():
    assert spread([3.0, 1.0, 2.0, 10.0]) == {"median": 2.5, "min": 1.0, "max": 10.0}
    assert spread([5.0]) == {"median": 5.0, "min": 5.0, "max": 5.0}


def test_the_reference_run_verdict_matches_its_numbers():
    lines = REFERENCE.read_text().splitlines()
    stored = json.loads(next(line for line in lines if line.startswith("{")))
    passed, text = check_target(stored)
    assert passed == stored["target_met"]
    for line in text.splitlines():
        assert line in lines, f"the reference run does not print {line!r}"
