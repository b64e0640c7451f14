"""The planted faults of tests/mutants/ (run by `make test-mutants`, dev/mutants.py) are
well formed and still apply to the chapters as they are, so a changed chapter cannot quietly
turn its faults into no-ops. Running them is `make test-mutants`; this only reads files.
"""

import sys
from collections import Counter

from conftest import ROOT, all_notebooks

sys.path.insert(0, str(ROOT / "dev"))
import mutants  # noqa: E402

FAULTS = mutants.load_faults()
# Chapters that train, shard or survive preemption need at least two faults each.
TWO_OR_MORE = ("07", "08", "10", "12", "13", "14", "15", "16", "17")


def test_every_fault_applies_to_the_chapter_as_it_is():
    stale = {fault["id"]: mutants.stale_reason(fault) for fault in FAULTS}
    stale = {name: why for name, why in stale.items() if why}
    assert not stale, f"faults that no longer apply (rewrite them): {stale}"


def test_faults_are_well_formed():
    ids = Counter(fault["id"] for fault in FAULTS)
    assert not [name for name, count in ids.items() if count > 1], "fault ids must be unique"
    for fault in FAULTS:
        assert {"id", "cell", "find", "replace", "bug"} <= set(fault), fault
        assert len(fault["bug"]) > 15, f"{fault['id']}: say what real mistake it stands for"
        assert set(fault) <= {"id", "chapter", "cell", "find", "replace", "bug", "ci",
                              "equivalent", "tests"}, fault
        for test in fault.get("tests", []):  # a test file of tests/, optionally ::a_test
            assert (ROOT / test.split("::")[0]).is_file(), f"{fault['id']}: no {test}"


def test_every_chapter_has_faults_and_a_ci_fault():
    chapters = [path.stem for path in all_notebooks()]
    per_chapter = Counter(fault["chapter"] for fault in FAULTS)
    with_ci = {fault["chapter"] for fault in FAULTS if fault.get("ci")}
    assert not [name for name in chapters if per_chapter[name] == 0], per_chapter
    thin = [name for name in chapters if name.startswith(TWO_OR_MORE) and per_chapter[name] < 2]
    assert not thin, f"training, sharding and preemption chapters need 2 faults or more: {thin}"
    assert set(chapters) <= with_ci, f"chapters with no CI fault: {set(chapters) - with_ci}"
    assert len(FAULTS) >= 40


def test_the_verdicts_of_nbval_reports():
    differs = "Notebook cell execution failed\nCell 4: Cell outputs differ\n\nInput:\nx = 1\n"
    assert mutants.classify(differs) == ("caught", "output differs")
    asserted = ("Cell 7: Cell execution caused an exception\n\nInput:\nassert x\n"
                "Traceback:\n---\nAssertionError                 Traceback (most recent call)\n"
                "AssertionError: gain 0.02 is not past twice the seed spread\n")
    assert mutants.classify(asserted) == ("caught", "assert")
    checked = ("Cell 7: Cell execution caused an exception\n\nInput:\ncheck(x)\n"
               "Traceback:\nValueError: gradients differ from the single-device run\n")
    assert mutants.classify(checked) == ("caught", "ValueError")
    crashed = ("Cell 7: Cell execution caused an exception\n\nInput:\nprint(y)\n"
               "Traceback:\nNameError: name 'y' is not defined\n")
    assert mutants.classify(crashed) == ("broken", "NameError")
    timeout = "Cell 2: Timeout of 900 seconds exceeded while executing cell.\n"
    assert mutants.classify(timeout)[0] == "broken"
