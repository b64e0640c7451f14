"""Run every chapter alone, as a Colab reader would, and fail on any error cell.

Usage: python dev/run_compat.py [--recorded NN ...] [notebooks/NN_name.ipynb ...]

`make test-compat` runs this with the interpreter of a second venv that holds Colab's
versions (see requirements-colab.txt). Each notebook is copied into an empty folder of
its own (nothing from the repository beside it) and executed top to bottom in a fresh
kernel; only JAXBOOK_DATA is set, as the README tells a reader. Outputs are not compared
with the committed ones (the versions differ); an error in any cell fails the run.
Nothing is written back into the repository.

--recorded NN ...: these chapters are not run again when the conclusions table
(tests/conclusions.json, `make conclusions`) holds a `colab` run of their current code (the
hash of their code cells, dev/tpu_record.py's code_hash) with the JAX of
requirements-colab.txt: dev/conclusions.py keeps only runs that finished with no error cell,
so that run is this check, made earlier and recorded. A chapter whose code changed since is
run here as any other. CI passes the longest training chapters (.ci/run says why).
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # the colours of IPython's tracebacks


def run_alone(path: Path) -> tuple[float, str | None]:
    with tempfile.TemporaryDirectory(prefix="jaxbook-compat-") as folder:
        copy = Path(folder) / path.name
        shutil.copy(path, copy)
        notebook = nbformat.read(copy, as_version=4)
        client = NotebookClient(
            notebook,
            timeout=900,
            kernel_name="python3",
            resources={"metadata": {"path": folder}},
            allow_errors=True,  # run every cell, then report each one that failed
        )
        start = time.perf_counter()
        try:
            client.execute()
        except CellExecutionError as error:  # a timeout or a dead kernel
            return time.perf_counter() - start, str(error)[-3000:]
        seconds = time.perf_counter() - start
        errors = [
            f"cell {number} ({cell.get('id')}): {output['ename']}: {output['evalue']}\n"
            + "".join(cell.source.splitlines(keepends=True)[:3])
            + "  ...\n" + "\n".join(ANSI.sub("", line) for line in output.get("traceback", [])[-2:])
            for number, cell in enumerate(notebook.cells, 1)
            for output in cell.get("outputs", [])
            if output.get("output_type") == "error"
        ]
        # Colab already has every package and a new enough JAX: the setup cell must stay
        # silent there (no upgrade, no "restart the runtime").
        setup = next(cell for cell in notebook.cells if cell.cell_type == "code")
        if setup.get("outputs"):
            errors.append("the setup cell printed something (did it install a package?): "
                          + " ".join(output.get("text", "") for output in setup.outputs)[:500])
        warnings = sorted({
            line.strip()
            for cell in notebook.cells
            for output in cell.get("outputs", [])
            if output.get("name") == "stderr"
            for line in output.get("text", "").splitlines()
            if "DeprecationWarning" in line or "FutureWarning" in line
        })
        for line in warnings:
            print(f"  note ({path.name}): {line[:200]}")
        return seconds, "\n".join(errors) or None


def recorded_run(path: Path) -> str | None:
    """Why this chapter need not run again: its current code's recorded Colab run, or None."""
    if str(ROOT / "dev") not in sys.path:
        sys.path.insert(0, str(ROOT / "dev"))
    import conclusions  # standard library only, as tpu_record
    import tpu_record

    run = conclusions.load()["chapters"].get(path.name, {}).get("platforms", {}).get("colab")
    pin = re.search(r"^jax==(\S+)", (ROOT / "requirements-colab.txt").read_text(), re.M)
    if not run or not pin or run.get("jax") != pin.group(1):
        return None
    if run.get("code_sha256") != tpu_record.code_hash(json.loads(path.read_text())):
        return None
    return (f"its current code ran with JAX {run['jax']} and no error cell on "
            f"{run['date'][:10]} (tests/conclusions.json, colab)")


def main(argv: list[str]) -> int:
    recorded = set()
    if argv[:1] == ["--recorded"]:
        argv = argv[1:]
        while argv and re.fullmatch(r"\d\d", argv[0]):
            recorded.add(argv.pop(0))
    names = argv
    paths = [Path(n) for n in names] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    import jax

    print(f"Python {sys.version.split()[0]}, jax {jax.__version__}, "
          f"JAXBOOK_DATA={os.environ.get('JAXBOOK_DATA', '(unset)')}")
    failed = {}
    total = time.perf_counter()
    skipped = 0
    for path in paths:
        why = recorded_run(path) if path.name[:2] in recorded else None
        if why:
            print(f"{path.name}: not run again: {why}", flush=True)
            skipped += 1
            continue
        seconds, error = run_alone(path)
        print(f"{path.name}: {'FAILED' if error else 'ok'} in {seconds:.1f} s", flush=True)
        if error:
            print(error, flush=True)
            failed[path.name] = error
    print(f"{len(paths) - skipped - len(failed)} of {len(paths) - skipped} chapters ran with no "
          f"error cell in {time.perf_counter() - total:.0f} s"
          + (f"; {skipped} recorded, not run again" if skipped else ""))
    # Again at the end, where a CI log that keeps only its tail still shows them.
    for name, error in failed.items():
        print(f"FAILED {name}:\n{error[-1500:]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
