"""Every chapter's last TPU run is on record, for the code the chapter has now (issue 40).

tests/tpu_record.json holds, per notebook, its last run on a TPU (dev/tpu_run.py, merged
with dev/tpu_record.py; README, "Testing on a TPU"). CI has no TPU, so it checks the
record instead: a chapter fails when it has no record, when its code cells changed since
that run (their hash differs), when the run was not on a TPU, or when a cell failed there.
The escapes are visible: cells tagged `needs-sockets` (the lent TPU machine refuses sockets)
may fail; a chapter marked `stale` with its date and a valid reason skips the hash check
with a warning; a chapter in the record's `open_errors` may have error cells, reported as
xfail, and fails once it has none (so that list only shrinks). The rules are
dev/tpu_record.py's `check_chapter`; the tests below it show each rule failing on purpose.
"""

import copy
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import warnings

import pytest

from conftest import ROOT, all_notebooks

sys.path.insert(0, str(ROOT / "dev"))
import tpu_record  # noqa: E402

NO_RECORD = ("tests/tpu_record.json does not exist yet, so NO chapter's TPU run is checked: "
             "run the chapters on a TPU (README, 'Testing on a TPU') and commit the record")


@pytest.mark.skipif(not tpu_record.RECORD.exists(), reason=NO_RECORD)
@pytest.mark.parametrize("path", all_notebooks(), ids=lambda path: path.stem)
def test_chapter_has_a_current_tpu_run(path):
    record = tpu_record.load(tpu_record.RECORD)
    result = tpu_record.check_chapter(path, record)
    assert not result["problems"], "\n".join(result["problems"])
    for note in result["notes"]:
        warnings.warn(note, UserWarning, stacklevel=1)
    if result["open"]:
        pytest.xfail(f"open TPU errors ({record['open_errors'][path.name]}): "
                     + "; ".join(result["open"]))


@pytest.mark.skipif(not tpu_record.RECORD.exists(), reason=NO_RECORD)
def test_record_names_only_chapters_that_exist():
    record = tpu_record.load(tpu_record.RECORD)
    names = {path.name for path in all_notebooks()}
    assert set(record["chapters"]) <= names, set(record["chapters"]) - names
    assert set(record["open_errors"]) <= set(record["chapters"]), record["open_errors"]
    for name, reason in record["open_errors"].items():
        assert "issue" in reason, f"{name}: open_errors must name the issue that tracks it"


def test_socket_tags_are_where_the_machine_refuses_sockets():
    """Only cells that start processes talking over sockets (chapters 13 and 17) carry it."""
    tagged = {path.name: tpu_record.socket_cells(json.loads(path.read_text()))
              for path in all_notebooks()}
    tagged = {name: cells for name, cells in tagged.items() if cells}
    assert set(tagged) <= {"13_multi_host.ipynb", "17_preemption.ipynb"}, tagged


# --- the rules, shown failing on fake records ----------------------------------------------


def fake_notebook(tmp_path, cells=None, name="05_fake.ipynb"):
    cells = cells or [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": "# Title"},
        {"cell_type": "code", "id": "c1", "metadata": {}, "source": "x = 1",
         "outputs": [], "execution_count": 1},
        {"cell_type": "code", "id": "c2", "metadata": {}, "source": ["y = x + 1\n", "y"],
         "outputs": [], "execution_count": 2},
    ]
    path = tmp_path / name
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    return path


def fake_run(path, statuses=("ok", "ok")):
    notebook = json.loads(path.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    cells = [{"index": number, "id": cell["id"], "status": status, "seconds": 0.1,
              "output": ""} | ({"error": {"ename": "AssertionError", "evalue": "off"}}
                               if status != "ok" else {})
             for number, (cell, status) in enumerate(zip(code, statuses, strict=True), 1)]
    return {"code_sha256": tpu_record.code_hash(notebook), "device_kind": "TPU v5 lite",
            "date": "2026-12-06T04:00:00Z", "jax": "0.10.2", "cells": cells,
            "error_cells": sum(status != "ok" for status in statuses), "seconds": 1.0}


def check(path, entry=None, open_errors=None):
    record = {"chapters": {} if entry is None else {path.name: entry},
              "open_errors": open_errors or {}}
    return tpu_record.check_chapter(path, record, today=dt.date(2026, 12, 6))


def test_a_clean_run_of_the_current_code_passes(tmp_path):
    path = fake_notebook(tmp_path)
    assert check(path, fake_run(path)) == {"problems": [], "open": [], "notes": []}


def test_a_missing_record_fails(tmp_path):
    (problem,) = check(fake_notebook(tmp_path))["problems"]
    assert "no TPU record" in problem


def test_a_changed_chapter_fails_until_it_is_run_again(tmp_path):
    """The check CI relies on: a real chapter, one code line changed after its run."""
    path = tmp_path / "02_autodiff.ipynb"
    shutil.copy(ROOT / "notebooks" / path.name, path)
    notebook = json.loads(path.read_text())
    code = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    entry = fake_run(path, ["ok"] * len(code))
    assert check(path, entry)["problems"] == []
    lines = tpu_record.cell_source(code[3]).splitlines()
    lines[0] = lines[0] + "  # edited"
    code[3]["source"] = "\n".join(lines)
    path.write_text(json.dumps(notebook))
    (problem,) = check(path, entry)["problems"]
    assert problem == f"{path.name}: chapter code changed since its TPU run: re-run it on a TPU"
    # A re-run of the changed code (a new hash in the record) passes again.
    assert check(path, fake_run(path, ["ok"] * len(entry["cells"])))["problems"] == []


def test_tags_outputs_and_markdown_do_not_change_the_hash(tmp_path):
    path = fake_notebook(tmp_path)
    before = tpu_record.notebook_hash(path)
    notebook = json.loads(path.read_text())
    notebook["cells"][0]["source"] = "# Another title"
    notebook["cells"][1]["metadata"]["tags"] = ["needs-sockets"]
    notebook["cells"][1]["outputs"] = [{"output_type": "stream", "name": "stdout",
                                        "text": "1\n"}]
    assert tpu_record.code_hash(notebook) == before
    notebook["cells"][2]["source"] = "y = x + 2\ny"
    assert tpu_record.code_hash(notebook) != before
    # moving a line across a cell boundary changes it too
    moved = json.loads(path.read_text())
    moved["cells"][1]["source"], moved["cells"][2]["source"] = "x = 1\ny = x + 1\n", "y"
    assert tpu_record.code_hash(moved) != before


def test_an_error_cell_fails(tmp_path):
    path = fake_notebook(tmp_path)
    (problem,) = check(path, fake_run(path, ("ok", "error")))["problems"]
    assert "1 error cell(s) on the TPU" in problem and "(c2)" in problem


def test_an_error_in_a_needs_sockets_cell_passes(tmp_path):
    path = fake_notebook(tmp_path)
    notebook = json.loads(path.read_text())
    notebook["cells"][2]["metadata"]["tags"] = ["needs-sockets"]
    path.write_text(json.dumps(notebook))
    assert check(path, fake_run(path, ("ok", "error")))["problems"] == []
    # the tag covers its own cell only
    assert check(path, fake_run(path, ("error", "ok")))["problems"]


def test_a_run_elsewhere_than_a_tpu_fails(tmp_path):
    path = fake_notebook(tmp_path)
    entry = fake_run(path) | {"device_kind": "cpu"}
    (problem,) = check(path, entry)["problems"]
    assert "not a TPU" in problem


def test_a_run_cut_short_fails(tmp_path):
    path = fake_notebook(tmp_path)
    assert check(path, fake_run(path) | {"timed_out": True})["problems"]


def test_open_errors_are_reported_and_the_list_only_shrinks(tmp_path):
    path = fake_notebook(tmp_path)
    listed = {path.name: "float32 check_grads on the TPU, issue 40"}
    result = check(path, fake_run(path, ("ok", "error")), listed)
    assert result["problems"] == [] and len(result["open"]) == 1
    (problem,) = check(path, fake_run(path), listed)["problems"]
    assert "no error cell any more" in problem


def test_stale_skips_the_hash_check_only_with_a_valid_reason_and_date(tmp_path):
    path = fake_notebook(tmp_path)
    old_run = fake_run(path) | {"code_sha256": "0" * 64}
    for reason in tpu_record.STALE_REASONS:
        result = check(path, old_run | {"stale": {"date": "2026-12-05", "reason": reason}})
        assert result["problems"] == [] and "STALE" in result["notes"][0]
    (problem,) = check(path, old_run | {"stale": {"date": "2026-12-05",
                                                  "reason": "it takes too long"}})["problems"]
    assert "valid reasons" in problem
    for date in ("", "yesterday", "2026-12-07"):
        assert check(path, old_run | {"stale": {"date": date,
                                                "reason": tpu_record.STALE_REASONS[0]}}
                     )["problems"]
    # a stale chapter's last run still counts: its error cells fail
    failed = fake_run(path, ("error", "ok")) | {"stale": {"date": "2026-12-05",
                                                          "reason": tpu_record.STALE_REASONS[1]}}
    assert check(path, failed)["problems"]
    # a chapter never run, stale with a valid reason, passes with two notes
    never = {"stale": {"date": "2026-12-05", "reason": tpu_record.STALE_REASONS[0]}}
    result = check(path, never)
    assert result["problems"] == [] and "never run on a TPU" in result["notes"][1]


def test_merge_stale_and_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(tpu_record, "NOTEBOOKS", tmp_path)
    path = fake_notebook(tmp_path)
    record_path = tmp_path / "record.json"
    older, newer = fake_run(path), fake_run(path, ("ok", "error"))
    newer["date"] = "2026-12-06T05:00:00Z"
    for entry in (newer, older):  # the newer run stays, whatever the order of merging
        bundle = tmp_path / "bundle.json"
        bundle.write_text(json.dumps({"chapters": {path.name: entry}}))
        tpu_record.merge(bundle, record_path)
    record = tpu_record.load(record_path)
    assert record["chapters"][path.name]["date"] == newer["date"]
    tpu_record.mark_stale("05", tpu_record.STALE_REASONS[0], "2026-12-06", record_path)
    entry = tpu_record.load(record_path)["chapters"][path.name]
    assert entry["stale"] == {"date": "2026-12-06", "reason": tpu_record.STALE_REASONS[0]}
    assert entry["cells"] == newer["cells"]  # the last run is kept beside the mark
    with pytest.raises(SystemExit):
        tpu_record.mark_stale("05", "no time", record_path=record_path)
    table = tpu_record.summary(record_path)
    assert "| 05_fake |" in table and "stale since 2026-12-06" in table
    # a merged re-run replaces the stale mark
    rerun = copy.deepcopy(older) | {"date": "2026-12-07T00:00:00Z"}
    bundle.write_text(json.dumps({"chapters": {path.name: rerun}}))
    tpu_record.merge(bundle, record_path)
    assert "stale" not in tpu_record.load(record_path)["chapters"][path.name]


def test_the_runner_records_every_cell_and_goes_on_after_an_error(tmp_path):
    """dev/tpu_run.py on a small notebook, here on the CPU (what it writes, not a TPU)."""
    cells = [
        {"cell_type": "code", "id": "print", "metadata": {},
         "source": "import sys\nprint('to stdout')\nprint('to stderr', file=sys.stderr)"},
        {"cell_type": "code", "id": "write", "metadata": {},
         "source": "%%writefile helper.py\nVALUE = 41\n"},
        {"cell_type": "code", "id": "fails", "metadata": {},
         "source": "from helper import VALUE\nassert VALUE == 42, f'VALUE is {VALUE}'"},
        {"cell_type": "code", "id": "value", "metadata": {},
         "source": "import os\nVALUE + 1, os.environ['MPLBACKEND'], os.getcwd() != HERE"},
    ]
    path = fake_notebook(tmp_path, cells)
    cells[3]["source"] = cells[3]["source"].replace("HERE", repr(str(tmp_path)))
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, str(ROOT / "dev" / "tpu_run.py"), "--out", str(out), "--stand-in",
         "never", "--data", str(tmp_path), str(path)],
        env=dict(os.environ, JAX_PLATFORMS="cpu"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    bundle = json.loads((out / "tpu_bundle.json").read_text())
    entry = bundle["chapters"][path.name]
    assert entry["code_sha256"] == tpu_record.notebook_hash(path)
    assert [cell["status"] for cell in entry["cells"]] == ["ok", "ok", "error", "ok"]
    assert entry["cells"][0]["output"] == "to stdout\nto stderr\n"
    assert entry["error_cells"] == 1 and entry["finished"] and entry["device_kind"] == "cpu"
    error = entry["cells"][2]["error"]
    assert error["ename"] == "AssertionError" and error["evalue"] == "VALUE is 41"
    assert "(42, 'Agg', True)" in entry["cells"][3]["output"]
    problems = tpu_record.check_chapter(path, bundle)["problems"]
    assert any("not a TPU" in problem for problem in problems)
    assert any("1 error cell(s)" in problem and "(fails)" in problem for problem in problems)
