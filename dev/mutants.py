"""Mutation testing for the book: plant a fault in a chapter and see whether a test catches it.

    python dev/mutants.py                 every fault of tests/mutants/*.json
    python dev/mutants.py --ci            only the faults marked "ci": true (one or more per
                                          chapter, chosen to be caught early: CI runs these)
    python dev/mutants.py --only ID ...   the named faults
    python dev/mutants.py --chapter 08    the faults of one chapter
    python dev/mutants.py --list          the faults, without running anything

The faults of a chapter are in tests/mutants/NN_name.json (NN_name: its notebook, without
.ipynb), as {"faults": [...]}, each fault:

    {"id": "ch16-fsdp-grad-x8",              unique name
     "cell": "a1b2c3d4",                     the nbformat id of the cell to change
     "find": "...", "replace": "...",        an exact substring of that cell, found once
     "bug": "what real mistake it stands for",
     "ci": true,                             optional: part of the CI subset
     "tests": ["tests/test_x.py::test_y"],   optional: tests that also read the chapter
                                             (JAXBOOK_MUTANT_NOTEBOOK names the copy), run
                                             when every cell passed: for code that only a
                                             TPU exercises, checked on a recorded TPU trace
     "equivalent": "why it is harmless"}     optional: a survivor that changes nothing real

A run applies the fault to a fresh copy of the chapter in a temporary folder and then:
- a fault in a code cell: runs the chapter's nbval test on the copy (the same plugin,
  sanitizer and strictness as `make test`), stopping at the first failing cell;
- a fault in a markdown cell: runs the prose-number check (dev/prose_numbers.py) on the
  copy, which is what guards the prose.

Verdicts:
- caught: an assert failed (AssertionError), a stored output differed (nbval's comparison,
  including the tolerance plugin), or, for prose, the prose check reported the sentence;
- broken: the mutated code crashed with an error that is not a check (NameError,
  SyntaxError, TypeError, ...): the fault is badly written, not caught; fix the fault;
- SURVIVED: everything passed;
- stale: the cell id or the find text is not in the chapter any more (the chapter changed):
  rewrite the fault. tests/test_mutants.py fails on stale faults without running anything.

Exit status 1 when a fault survived (and is not marked "equivalent"), or is broken or stale.
Each result is printed as it comes, then a table and the catch rate.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAULTS_DIR = ROOT / "tests" / "mutants"
NOTEBOOK_DIR = ROOT / "notebooks"

# The errors that say "the mutated code is wrong Python", not "a check fired".
CRASHES = (
    "NameError", "SyntaxError", "IndentationError", "ImportError", "ModuleNotFoundError",
    "AttributeError", "TypeError", "UnboundLocalError", "KeyError", "IndexError",
)


def load_faults(folder: Path = FAULTS_DIR) -> list[dict]:
    """Every fault of tests/mutants/NN_name.json (one file a chapter, NN_name the notebook),
    in chapter order, each with its "chapter" filled in from the file name."""
    faults = []
    for path in sorted(folder.glob("*.json")):
        for fault in json.loads(path.read_text())["faults"]:
            faults.append({"chapter": path.stem, **fault})
    return faults


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def apply_fault(notebook: dict, fault: dict) -> tuple[dict, str] | str:
    """(the mutated notebook, the cell's type), or a string saying why the fault is stale."""
    cells = [cell for cell in notebook["cells"] if cell.get("id") == fault["cell"]]
    if len(cells) != 1:
        return f"no cell with id {fault['cell']!r}"
    cell = cells[0]
    text = cell_source(cell)
    count = text.count(fault["find"])
    if count != 1:
        return f"find text occurs {count} times in cell {fault['cell']}"
    if fault["find"] == fault["replace"]:
        return "find and replace are the same"
    cell["source"] = text.replace(fault["find"], fault["replace"])
    return notebook, cell["cell_type"]


def stale_reason(fault: dict) -> str | None:
    path = NOTEBOOK_DIR / f"{fault['chapter']}.ipynb"
    if not path.exists():
        return f"no chapter {fault['chapter']}"
    result = apply_fault(json.loads(path.read_text()), fault)
    return result if isinstance(result, str) else None


# A small pytest plugin, written next to the copy, that records each failing report.
RECORDER = '''
import json, os
def pytest_runtest_logreport(report):
    if report.failed:
        with open(os.environ["MUTANT_REPORT"], "a") as out:
            out.write(json.dumps({"nodeid": report.nodeid, "text": str(report.longrepr)}) + "\\n")
'''


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def classify(text: str) -> tuple[str, str]:
    """(verdict, how) from nbval's report of the first failing cell: a changed output or an
    assert is a catch; an exception is a catch when it is not a Python crash (CRASHES), so a
    ValueError from a chapter's own check counts and a NameError does not."""
    text = ANSI.sub("", text)
    message = re.search(r"^Cell \d+: (.*)$", text, re.M)
    message = message.group(1) if message else ""
    if "outputs differ" in message:
        return "caught", "output differs"
    if "exception" in message:
        raised = re.findall(r"^(\w+(?:Error|Exception|Exit))\b", text, re.M) or \
            re.findall(r"\b(\w+(?:Error|Exception))\b", text)
        name = raised[-1] if raised else "unknown exception"
        if name == "AssertionError":
            return "caught", "assert"
        return ("broken" if name in CRASHES or not raised else "caught"), name
    return "broken", message or "unknown failure"


def run_code_fault(copy: Path, workdir: Path, timeout: int, first_cell: int) -> tuple[str, str]:
    report = workdir / "report.jsonl"
    (workdir / "mutant_recorder.py").write_text(RECORDER)
    env = {**os.environ, "MUTANT_REPORT": str(report),
           "PYTHONPATH": os.pathsep.join([str(workdir), str(ROOT / "tests"),
                                          os.environ.get("PYTHONPATH", "")])}
    env.setdefault("JAXBOOK_DATA", str(ROOT / "data"))
    env["PYTHONHASHSEED"] = "0"
    command = [
        sys.executable, "-m", "pytest", str(copy), "-x", "-q", "--nbval", "--nbval-current-env",
        "--nbval-sanitize-with", str(ROOT / "tests" / "sanitize.cfg"),
        f"--nbval-cell-timeout={timeout}", "-p", "no:cacheprovider", "-p", "nbval_tolerance",
        "-p", "mutant_recorder", "-c", os.devnull, "--rootdir", str(workdir),
        "-W", "ignore::DeprecationWarning",
    ]
    try:
        result = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True,
                                timeout=timeout * 4)
    except subprocess.TimeoutExpired:
        return "broken", "timed out"
    failures = [json.loads(line) for line in report.read_text().splitlines()] \
        if report.exists() else []
    if result.returncode == 0 and not failures:
        return "SURVIVED", "every cell passed"
    if not failures:
        return "broken", (result.stdout + result.stderr)[-500:]
    first = failures[0]
    where = first["nodeid"].split("::")[-1]
    number = re.search(r"(\d+)$", where)
    if number and int(number.group(1)) < first_cell:
        return "broken", f"{where} failed before the planted fault (cell {first_cell})"
    verdict, how = classify(first["text"])
    lines = [line.strip() for line in ANSI.sub("", first["text"]).splitlines()
             if line.strip().startswith(("-", "+", "E ", "Assertion")) or "Error" in line]
    return verdict, f"{where}: {how}; {lines[-1][:160] if lines else ''}"


def run_tests_on_copy(copy: Path, tests: list[str], timeout: int) -> tuple[str, str]:
    """The fault's own tests, with JAXBOOK_MUTANT_NOTEBOOK naming the mutated copy: caught on
    a failed assert, broken on any other error."""
    env = {**os.environ, "JAXBOOK_MUTANT_NOTEBOOK": str(copy), "PYTHONHASHSEED": "0"}
    env.setdefault("JAXBOOK_DATA", str(ROOT / "data"))
    command = [sys.executable, "-m", "pytest", *tests, "-x", "-q", "-p", "no:cacheprovider"]
    try:
        result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=timeout)
    except subprocess.TimeoutExpired:
        return "broken", "its tests timed out"
    if result.returncode == 0:
        return "SURVIVED", "every cell and its tests passed"
    output = ANSI.sub("", result.stdout + result.stderr)
    failed = re.search(r"^FAILED (\S+)", output, re.M)
    where = failed.group(1) if failed else "its tests"
    if re.search(r"^E\s+(AssertionError|assert )", output, re.M):
        return "caught", f"{where}: assert"
    return "broken", f"{where}: {output[-300:]}"


def run_prose_fault(original: Path, copy: Path) -> tuple[str, str]:
    """Caught when the prose check reports a number of the mutated chapter that it does not
    report in the chapter as it is."""
    sys.path.insert(0, str(ROOT / "dev"))
    import prose_numbers  # noqa: PLC0415

    allowed = prose_numbers.load_allowed()
    before = {(n["written"], n["why"]) for n in prose_numbers.check(original, allowed)}
    new = [n for n in prose_numbers.check(copy, allowed) if (n["written"], n["why"]) not in before]
    if new:
        return "caught", f"prose check: {new[0]['written']!r}: {new[0]['why'][:120]}"
    return "SURVIVED", "the prose check passed"


def run_fault(fault: dict, timeout: int = 900) -> dict:
    start = time.perf_counter()
    path = NOTEBOOK_DIR / f"{fault['chapter']}.ipynb"
    stale = stale_reason(fault)
    if stale:
        return {**fault, "verdict": "stale", "detail": stale, "seconds": 0.0}
    notebook, kind = apply_fault(json.loads(path.read_text()), fault)
    with tempfile.TemporaryDirectory(prefix="mutant-") as folder:
        workdir = Path(folder)
        copy = workdir / path.name
        copy.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
        # What a chapter may read beside itself: nothing but the data root (set by env).
        if kind == "markdown":
            verdict, detail = run_prose_fault(path, copy)
        else:
            code_ids = [cell.get("id") for cell in notebook["cells"] if cell["cell_type"] == "code"]
            verdict, detail = run_code_fault(copy, workdir, timeout,
                                             code_ids.index(fault["cell"]))
            if verdict == "SURVIVED" and fault.get("tests"):
                verdict, detail = run_tests_on_copy(copy, fault["tests"], timeout)
    if verdict == "SURVIVED" and fault.get("equivalent"):
        verdict = "equivalent"
    return {**fault, "verdict": verdict, "detail": detail,
            "seconds": round(time.perf_counter() - start, 1)}


def table(results: list[dict]) -> str:
    lines = ["| fault | chapter | bug | verdict | where / why | s |", "|---|---|---|---|---|---|"]
    for result in results:
        detail = result["detail"].replace("|", "/")
        lines.append(f"| {result['id']} | {result['chapter'][:2]} | {result['bug']} | "
                     f"{result['verdict']} | {detail} | {result['seconds']:.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--only", nargs="+", metavar="ID")
    parser.add_argument("--chapter", help="chapter number prefix, e.g. 08")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args(argv)
    faults = load_faults()
    if args.ci:
        faults = [fault for fault in faults if fault.get("ci")]
    if args.only:
        faults = [fault for fault in faults if fault["id"] in args.only]
    if args.chapter:
        faults = [fault for fault in faults if fault["chapter"].startswith(args.chapter)]
    if args.list:
        for fault in faults:
            print(f"{fault['id']:32} {fault['chapter'][:2]}  {fault['bug']}")
        return 0
    results = []
    for fault in faults:
        result = run_fault(fault)
        results.append(result)
        print(f"{result['verdict']:10} {result['id']:32} {result['seconds']:6.0f} s  "
              f"{result['detail']}", flush=True)
    print()
    print(table(results))
    counted = [result for result in results if result["verdict"] != "equivalent"]
    caught = sum(result["verdict"] == "caught" for result in counted)
    bad = [result["id"] for result in counted if result["verdict"] != "caught"]
    print(f"\n{caught} of {len(counted)} faults caught"
          f" ({100 * caught / max(len(counted), 1):.0f}%), "
          f"{len(results) - len(counted)} marked equivalent; "
          f"{sum(result['seconds'] for result in results):.0f} s in all")
    if bad:
        print("not caught, broken or stale: " + ", ".join(bad))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
