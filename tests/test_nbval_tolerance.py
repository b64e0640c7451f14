"""The tolerance plugin (tests/nbval_tolerance.py): numbers move within what a cell declares,
nothing else does."""

import json
import subprocess
import sys

import nbval_tolerance as plugin
import pytest

from conftest import ROOT, all_notebooks, code_cells, load

TOLERANCE = {"abs": 0.003, "rel": 0.0, "count": 10.0}


def test_numbers_are_found_as_written():
    text = ("epoch 3: loss 0.0712, accuracy 97.80%, 49,920 images, step 1.00e-03, float32 -1.5, "
            "gain +0.44")
    assert plugin.split_numbers(text)[1] == ["3", "0.0712", "97.80", "49,920", "1.00e-03", "-1.5",
                                             "+0.44"]


def test_within_tolerance_passes_and_padding_may_shift():
    stored = "test accuracy 0.9660,   98 misclassified\n"
    computed = "test accuracy 0.9681,  103 misclassified\n"
    assert plugin.number_problems(stored, computed, TOLERANCE) == []


def test_a_number_outside_its_tolerance_is_named():
    problems = plugin.number_problems("accuracy 0.9660", "accuracy 0.9700", TOLERANCE)
    assert len(problems) == 1 and "stored 0.9660, computed 0.9700" in problems[0]
    # whole numbers have their own tolerance, and none unless a cell declares it
    assert plugin.number_problems("342 wrong", "353 wrong", TOLERANCE)
    assert plugin.number_problems("342 wrong", "343 wrong", {**TOLERANCE, "count": 0.0})


def test_relative_tolerance_scales_with_the_stored_value():
    tolerance = {"abs": 0.0, "rel": 0.01, "count": 0.0}
    assert plugin.number_problems("loss 200.0", "loss 201.9", tolerance) == []
    assert plugin.number_problems("loss 2.000", "loss 2.030", tolerance)


def test_changed_words_are_not_a_number_problem():
    assert plugin.number_problems("chose b1 0.8", "chose peak 0.8", TOLERANCE) is None
    assert plugin.number_problems("0.1 0.2", "0.1 0.2 0.3", TOLERANCE) is None


def test_tags_are_read():
    cell = {"metadata": {"tags": ["hide-input", "tol-abs=0.002", "tol-count=5@misread",
                                  "margin=0.04@gain", "margin=none"]}}
    assert plugin.tolerance_of(cell) == [plugin.Rule("abs", 0.002),
                                         plugin.Rule("count", 5.0, "misread")]
    assert plugin.margins_of(cell) == [plugin.Rule("margin", 0.04, "gain"),
                                       plugin.Rule("margin", None)]
    assert plugin.tolerance_of({"metadata": {"tags": ["hide-input"]}}) is None
    assert not plugin.TAG.match("tol-abs=0.01@two words")
    assert not plugin.MARGIN.match("margin=none@gain")


def test_a_scoped_tolerance_covers_only_its_lines():
    rules = [plugin.Rule("abs", 0.01, "accuracy"), plugin.Rule("count", 3, "misread")]
    # a scope names lines, not numbers: what must stay exact goes on a line of its own
    stored = "best step 0.3\naccuracy 0.9660\na 5 read as a 3\nmisread 28 times\n"
    moved = "best step 0.3\naccuracy 0.9700\na 5 read as a 3\nmisread 30 times\n"
    assert plugin.number_problems(stored, moved, rules) == []
    # the step size, the digit classes and a count beyond its tolerance are exact
    for wrong in ("best step 0.1\naccuracy 0.9660\na 5 read as a 3\nmisread 28 times\n",
                  "best step 0.3\naccuracy 0.9660\na 7 read as a 2\nmisread 28 times\n",
                  "best step 0.3\naccuracy 0.9660\na 5 read as a 3\nmisread 45 times\n"):
        assert plugin.number_problems(stored, wrong, rules), wrong
    # a number on a line no scoped tag names compares exactly, even beside an unscoped tag
    # of another kind
    assert plugin.number_problems("loss 0.51\n", "loss 0.52\n", rules)


def test_a_scoped_tag_overrides_an_unscoped_one_of_its_kind():
    rules = [plugin.Rule("abs", 0.5), plugin.Rule("abs", 0.001, "gain")]
    assert plugin.number_problems("gap 1.0\ngain 0.440\n", "gap 1.4\ngain 0.440\n",
                                  rules) == []
    assert plugin.number_problems("gap 1.0\ngain 0.440\n", "gap 1.0\ngain 0.450\n", rules)


def test_a_change_of_sign_is_a_mismatch_even_within_tolerance():
    rules = [plugin.Rule("abs", 0.1)]
    problems = plugin.number_problems("gain +0.05 points", "gain -0.01 points", rules)
    assert problems and "changes sign" in problems[0]
    assert plugin.number_problems("gain 0.05", "gain -0.01", rules)
    assert plugin.number_problems("gap 3", "gap -3", [plugin.Rule("count", 10)])
    # zero has no sign: -0.00 is 0.00, and a stored 0 may move within tolerance
    assert plugin.number_problems("gain 0.00", "gain -0.00", []) == []
    assert plugin.number_problems("gain 0.000", "gain -0.004", rules) == []
    assert plugin.number_problems("gain +0.05", "gain +0.07", rules) == []


def cell_with(text, tags):
    return {"cell_type": "code", "metadata": {"tags": tags},
            "outputs": [{"output_type": "stream", "name": "stdout", "text": text}]}


def test_margins_bound_the_tolerances_of_their_scope():
    text = "accuracy 0.9660 and 0.9712\ngain +0.52 points, seed_spread 0.10 points\n"
    good = cell_with(text, ["tol-abs=0.004@accuracy", "tol-abs=0.2@points",
                            "margin=0.32@gain"])
    assert plugin.margin_problems(good) == []
    assert plugin.margin_problems(cell_with(text, ["tol-abs=0.004@accuracy"]))  # no margin
    assert plugin.margin_problems(cell_with(text, ["tol-abs=0.004@accuracy", "margin=none"])) \
        == []
    # a tolerance wider than the margin on the same line; an unscoped tolerance reaches it
    for tags in (["tol-abs=0.004@accuracy", "tol-abs=0.6@points", "margin=0.32@gain"],
                 ["tol-abs=0.6", "margin=0.32@gain"],
                 ["tol-abs=0.6@gain", "margin=0.1"],
                 ["tol-rel=0.9@gain", "margin=0.32@gain"]):
        problems = plugin.margin_problems(cell_with(text, tags))
        assert any("wider than" in problem for problem in problems), tags
    # scopes must name a printed line; margin=none is alone; scoped tags must not overlap
    assert plugin.margin_problems(cell_with(text, ["tol-abs=0.1@gian", "margin=none"]))
    assert plugin.margin_problems(cell_with(text, ["tol-abs=0.1", "margin=none",
                                                   "margin=0.3"]))
    assert plugin.margin_problems(cell_with(text, ["tol-abs=0.1@gain", "tol-abs=0.2@points",
                                                   "margin=none"]))


# Chapters whose tolerance-tagged cells do not declare margins yet (issue 30). Each is
# migrated by scoping its tolerances, adding margin tags and asserting its conclusions; then
# it leaves this list (the test is a strict xfail, so a migrated chapter left here fails).
NOT_YET_MIGRATED: set[str] = set()  # every chapter is migrated


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda path: path.name)
def test_tolerances_are_declared_well(path):
    """Only tol-*/margin tags that parse, never on an ignored cell."""
    for cell in code_cells(load(path)):
        tags = cell.get("metadata", {}).get("tags", [])
        odd = [tag for tag in tags if (tag.startswith("tol") and not plugin.TAG.match(tag))
               or (tag.startswith("margin") and not plugin.MARGIN.match(tag))]
        assert not odd, f"{path.name}: malformed tolerance or margin tag {odd}"
        if plugin.tolerance_of(cell):
            assert "NBVAL_IGNORE_OUTPUT" not in "".join(cell["source"]), path.name


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda path: path.name)
def test_no_tolerance_is_wider_than_a_margin(request, path):
    """Every tolerance-tagged cell has a margin tag, and no number's tolerance is wider
    than a margin whose scope is on its line (design: tests/nbval_tolerance.py)."""
    if path.name in NOT_YET_MIGRATED:
        request.applymarker(pytest.mark.xfail(strict=True, reason="not yet migrated (#30)"))
    problems = [f"cell {index}: {problem}"
                for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
                for problem in plugin.margin_problems(cell)]
    assert not problems, f"{path.name}:\n" + "\n".join(problems)


def notebook(stored_text, tags):
    return {
        "cells": [{
            "cell_type": "code", "execution_count": 1, "id": "c1",
            "metadata": {"tags": tags}, "source": 'print("accuracy 0.9662, 340 wrong")',
            "outputs": [{"name": "stdout", "output_type": "stream", "text": stored_text}],
        }],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                    "language": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


def run_nbval(tmp_path, stored_text, tags):
    (tmp_path / "check.ipynb").write_text(json.dumps(notebook(stored_text, tags)))
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT / 'tests')!r})\n"
        "pytest_plugins = ['nbval_tolerance']\n"
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--nbval", "--nbval-current-env", "-p",
         "no:cacheprovider", "-q", "check.ipynb"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )


def test_plugin_under_nbval(tmp_path):
    """End to end, in a real kernel: within tolerance passes, outside fails with the number
    named, and a cell without tags is compared to the letter."""
    inside = run_nbval(tmp_path, "accuracy 0.9660, 338 wrong\n", ["tol-abs=0.001", "tol-count=3"])
    assert inside.returncode == 0, inside.stdout
    outside = run_nbval(tmp_path, "accuracy 0.9600, 338 wrong\n", ["tol-abs=0.001", "tol-count=3"])
    assert outside.returncode == 1
    assert "stored 0.9600, computed 0.9662" in outside.stdout
    untagged = run_nbval(tmp_path, "accuracy 0.9660, 338 wrong\n", [])
    assert untagged.returncode == 1 and "mismatch" in untagged.stdout
    # scoped tags of two kinds on one line; a count's tolerance does not cover a fraction
    scoped = run_nbval(tmp_path, "accuracy 0.9660, 338 wrong\n",
                       ["tol-abs=0.001@accuracy", "tol-count=3@wrong", "margin=none"])
    assert scoped.returncode == 0, scoped.stdout
    unscoped_line = run_nbval(tmp_path, "accuracy 0.9660, 338 wrong\n",
                              ["tol-count=3@accuracy", "margin=none"])
    assert unscoped_line.returncode == 1
    assert "stored 0.9660, computed 0.9662" in unscoped_line.stdout
