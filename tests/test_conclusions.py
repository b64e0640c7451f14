"""The asserted comparisons of the chapters hold, with room, on every platform measured.

tests/conclusions.json (dev/conclusions.py, dev/margins.py) holds, for each chapter it lists,
every assert that compares two quantities (`a < b`, `a >= b`, ...) and its relative margin on
each platform the chapter was run on: this CPU's pinned JAX (`cpu`), XLA capped at AVX,
Colab's JAX, the TPU v5e, other device counts. These tests hold the table to the chapters:

- the `cpu` run of a listed chapter is of its current code (re-run it with
  `python dev/conclusions.py matrix --platform cpu NN`); other platforms' runs of older code
  are reported as stale, as the TPU record's are, and their margins are not used;
- every comparison the chapter's code has is a row of the table;
- every row holds on every current platform that reached it: a strict comparison by a
  positive margin, `<=` and `>=` by at least zero.

Chapters not yet in the table are listed by a warning.
"""

import json
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dev"))
import conclusions  # noqa: E402
import margins  # noqa: E402
import tpu_record  # noqa: E402

TABLE = conclusions.load()
CHAPTERS = sorted(TABLE["chapters"])


def notebook(name):
    return json.loads((ROOT / "notebooks" / name).read_text())


def current_platforms(name):
    code = tpu_record.code_hash(notebook(name))
    platforms = TABLE["chapters"][name]["platforms"]
    stale = sorted(p for p, run in platforms.items() if run.get("code_sha256") != code)
    return [p for p in platforms if p not in stale], stale


def test_the_table_lists_chapters():
    assert CHAPTERS, "tests/conclusions.json lists no chapter"
    missing = [p.name for p in sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
               if p.name not in TABLE["chapters"]]
    if missing:
        warnings.warn("not yet measured across platforms: " + ", ".join(missing),
                      UserWarning, stacklevel=1)


@pytest.mark.parametrize("name", CHAPTERS)
def test_the_cpu_run_is_of_the_current_code(name):
    current, stale = current_platforms(name)
    assert "cpu" in current, (
        f"{name}: its code changed since its margins were measured on this CPU; re-run "
        f"python dev/conclusions.py matrix --platform cpu {name[:2]}")
    if stale:
        warnings.warn(f"{name}: margins of older code, not used: {', '.join(stale)}",
                      UserWarning, stacklevel=1)


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_comparison_has_a_row(name):
    rows = TABLE["chapters"][name]["rows"]
    missing = [key for key, text in conclusions.comparisons(notebook(name)).items()
               if key not in rows or rows[key]["test"] != text]
    assert not missing, f"{name}: comparisons without a row (re-run the matrix): {missing}"


@pytest.mark.parametrize("name", CHAPTERS)
def test_every_row_holds_where_it_ran(name):
    current, _ = current_platforms(name)
    failing = [f"{key} `{row['test']}` on {platform}: {found['margin']:+.4g}"
               for key, row in TABLE["chapters"][name]["rows"].items()
               for platform, found in row["margins"].items()
               if platform in current and not conclusions.holds(row["op"], found["margin"])]
    assert not failing, f"{name}: comparisons that do not hold: {failing}"


def test_the_recorder_keeps_the_chapter_and_measures_the_margin():
    """The rewrite returns what the comparison returns, and records its margin; a failing
    comparison is recorded with a negative margin and still fails (the negative control)."""
    recorder = margins.Recorder()
    recorder.cell = "c"
    assert recorder(0, 1.0, "<", 2.0) is True
    assert recorder(1, 3.0, ">=", 4.0) is False
    found = {entry["number"]: entry for entry in recorder.take("c")}
    assert found[0]["margin"] == pytest.approx(0.5) and conclusions.holds("<", 0.5)
    assert found[1]["margin"] == pytest.approx(-0.25) and not conclusions.holds(">=", -0.25)
    assert conclusions.holds("<=", 0.0) and not conclusions.holds("<", 0.0)


def test_the_rewrite_numbers_comparisons_as_the_table_does():
    import ast

    source = "x = 3\nassert x > 1 and x <= 3, 'm'\nfor i in range(2):\n    assert i < 5\n"
    texts = margins.asserted_comparisons(source)
    assert texts == ["x > 1", "x <= 3", "i < 5"]
    tree = margins.Rewrite().visit(ast.parse(source))
    recorder = margins.Recorder()
    recorder.cell = "c"
    exec(compile(tree, "<cell>", "exec"), {margins.NAME: recorder})
    found = {entry["number"]: entry for entry in recorder.take("c")}
    assert sorted(found) == [0, 1, 2] and found[2]["runs"] == 2
    assert found[1]["margin"] == 0.0 and found[2]["left"] == 1.0  # the worst run: i = 1
