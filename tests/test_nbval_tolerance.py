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
    text = "epoch 3: loss 0.0712, accuracy 97.80%, 49,920 images, step 1.00e-03, float32 -1.5"
    assert plugin.split_numbers(text)[1] == ["3", "0.0712", "97.80", "49,920", "1.00e-03", "-1.5"]


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
    cell = {"metadata": {"tags": ["hide-input", "tol-abs=0.002", "tol-count=5"]}}
    assert plugin.tolerance_of(cell) == {"abs": 0.002, "rel": 0.0, "count": 5.0}
    assert plugin.tolerance_of({"metadata": {"tags": ["hide-input"]}}) is None


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda path: path.name)
def test_tolerances_are_declared_well(path):
    """Only tol-abs/tol-rel/tol-count tags, each parsable, and never on an ignored cell."""
    for cell in code_cells(load(path)):
        tags = cell.get("metadata", {}).get("tags", [])
        odd = [tag for tag in tags if tag.startswith("tol") and not plugin.TAG.match(tag)]
        assert not odd, f"{path.name}: malformed tolerance tag {odd}"
        if plugin.tolerance_of(cell):
            assert "NBVAL_IGNORE_OUTPUT" not in "".join(cell["source"]), path.name


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
