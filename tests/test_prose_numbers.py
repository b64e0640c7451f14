"""The prose quotes the stored outputs: a measurement in a chapter's text is in its outputs.

A number in a markdown cell that looks like a measurement (a decimal, a percentage, a ratio,
a time or a size) must appear, rounded as the prose rounds it, among the numbers of the
chapter's committed outputs, or be a fact on tests/prose_numbers_allowed.json with the
reason it is one. A chapter re-executed without its prose updated fails here. The
heuristics are in tools/prose_numbers.py's docstring; `python3 tools/prose_numbers.py NB`
prints the same report.
"""

import sys

import pytest

from conftest import ROOT, all_notebooks

sys.path.insert(0, str(ROOT / "tools"))
import prose_numbers  # noqa: E402

ALLOWED = prose_numbers.load_allowed()


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda path: path.name)
def test_prose_numbers_are_in_the_stored_outputs(path):
    offenders = prose_numbers.check(path, ALLOWED)
    assert not offenders, (
        prose_numbers.report(path.name, offenders)
        + "\nchange the prose to what the stored outputs show, or, for a fact that is not a "
        "measurement of this run, add it with its reason to tests/prose_numbers_allowed.json"
    )


def test_allow_list_is_small_explained_and_current():
    names = {path.name for path in all_notebooks()}
    assert set(ALLOWED) <= names, f"allow-list names no such notebook: {set(ALLOWED) - names}"
    for name, entries in ALLOWED.items():
        assert all(isinstance(why, str) and len(why) > 20 for why in entries.values()), (
            f"{name}: every allowed number needs its reason"
        )
        stale = prose_numbers.unused_allowed(ROOT / "notebooks" / name, ALLOWED)
        assert not stale, f"{name}: allowed numbers no longer in the prose: {stale}"


def written(text):
    return [number["written"] for number in prose_numbers.measurements(prose_numbers.prose(text))]


def test_what_counts_as_a_measurement():
    assert written("reaches 98.35% in 3.5 s, 1.75x faster, 2.17 times as fast, 0.053") == [
        "98.35%", "3.5 s", "1.75x", "2.17 times", "0.053",
    ]
    assert written("took 12 ms and 2 GB; 63–79% of peak; between 0.08 and 0.10") == [
        "12 ms", "2 GB", "63%", "79%", "0.08", "0.10",
    ]
    # Not measurements: integers, counts, years, versions, sci notation, shapes, code, math.
    assert written(
        "60,000 images, 200 steps, in 2025, 3 times, JAX 0.7.2, Python 3.11 or newer, "
        "Python ≥ 3.12, a step of 1e-3, a 5 × 7 matrix, 28x28 pixels, v5e, bfloat16, "
        "`x = 0.5`, $\\alpha = 0.3$, [link](https://example.com/1.5.html), chapter 3.2"
    ) == []
    assert written("```python\nlr = 0.01\n```\nthen 0.2") == ["0.2"]


def matches(prose_text, values):
    [number] = prose_numbers.measurements(prose_text)
    return prose_numbers.matches(number, sorted(values))


def test_how_a_prose_number_matches_the_outputs():
    assert matches("3.5 s", [3.47])
    assert not matches("3.5 s", [3.56])
    assert matches("98.3%", [0.9835]) and matches("98.4%", [0.9835])
    assert matches("98.35%", [98.35]) and not matches("98.35%", [0.9837])
    assert matches("1.75x", [1.75])
    assert matches("350 ms", [0.35]) and matches("0.08 ms", [80.2])
    assert not matches("0.08", [0.1])
