"""Measure how far a chapter's outputs move when XLA compiles for another instruction set.

XLA's CPU code depends on the instruction set it targets, and so does the rounding of
long floating-point computations. `XLA_FLAGS=--xla_cpu_max_isa=...` caps it on one
machine, which shows on one machine what other readers' CPUs would print.

    python tools/isa_spread.py run notebooks/07_mlp_from_scratch.ipynb [--isa SSE4_2 AVX]
        executes each notebook once per instruction set (never in place) into
        _build/isa/<ISA>/<name>.ipynb; "native" means no cap.
    python tools/isa_spread.py report notebooks/07_mlp_from_scratch.ipynb [...]
        compares every run found under _build/isa/ with the stored outputs, cell by cell:
        the largest change of a number with a fractional part (absolute and relative) and
        of a whole number, the tolerance the cell declares (tests/nbval_tolerance.py), and
        whether it covers what was seen. Cells whose text changed in more than numbers
        are listed as such. Cells marked NBVAL_IGNORE_OUTPUT are skipped.

This is how the tol-* tags in the chapters were set: the largest change seen across the
instruction sets, with a margin (README, "How the tolerances were found").
"""

import argparse
import os
import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from nbval_tolerance import (  # noqa: E402
    is_whole,
    number_problems,
    split_numbers,
    tolerance_of,
    value,
)

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "_build" / "isa"
ISAS = ["SSE4_2", "AVX", "AVX2", "native"]


def run(paths, isas):
    from execute_notebook import execute

    flags = os.environ.get("XLA_FLAGS", "")
    for isa in isas:
        for path in paths:
            if isa != "native":
                os.environ["XLA_FLAGS"] = f"{flags} --xla_cpu_max_isa={isa}".strip()
            target = RUNS / isa / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                seconds = execute(path, target)  # the kernel inherits XLA_FLAGS
            finally:
                os.environ["XLA_FLAGS"] = flags
            print(f"{isa:>7} {path.name}: {seconds:.0f} s", flush=True)


def texts(cell):
    """The cell's text outputs, streams joined by name as nbval does (a stream may arrive
    in one piece or several)."""
    streams, found = {}, []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            streams[output["name"]] = streams.get(output["name"], "") + output["text"]
        for mime in ("text/plain", "text/html"):
            if mime in output.get("data", {}):
                found.append(output["data"][mime])
    return "\n".join([*streams.values(), *found])


def compare(stored_text, run_text):
    """(largest abs change, largest relative change, largest whole-number change) or None
    if the texts differ in more than numbers."""
    stored_skeleton, stored_numbers = split_numbers(stored_text)
    run_skeleton, run_numbers = split_numbers(run_text)
    if stored_skeleton != run_skeleton or len(stored_numbers) != len(run_numbers):
        return None
    largest = [0.0, 0.0, 0.0]
    for old, new in zip(stored_numbers, run_numbers, strict=True):
        gap = abs(value(new) - value(old))
        if is_whole(old) and is_whole(new):
            largest[2] = max(largest[2], gap)
        else:
            largest[0] = max(largest[0], gap)
            if value(old):
                largest[1] = max(largest[1], gap / abs(value(old)))
    return tuple(largest)


def report(paths):
    for path in paths:
        stored = nbformat.read(path, as_version=4)
        runs = {isa: nbformat.read(RUNS / isa / path.name, as_version=4)
                for isa in ISAS if (RUNS / isa / path.name).exists()}
        print(f"== {path.name}: runs {', '.join(runs) or 'none'}")
        for index, cell in enumerate(stored.cells):
            if cell.cell_type != "code" or "NBVAL_IGNORE_OUTPUT" in cell.source:
                continue
            tolerance = tolerance_of(cell)
            worst, changed, moved_by, uncovered = [0.0, 0.0, 0.0], [], [], []
            for isa, notebook in runs.items():
                result = compare(texts(cell), texts(notebook.cells[index]))
                if result is None:
                    changed.append(isa)
                    continue
                if any(result):
                    moved_by.append(isa)
                worst = [max(a, b) for a, b in zip(worst, result, strict=True)]
                if tolerance and number_problems(texts(cell), texts(notebook.cells[index]),
                                                 tolerance):
                    uncovered.append(isa)
            if not changed and not any(worst) and tolerance is None:
                continue
            covered = tolerance is not None and not changed and not uncovered
            print(f"  cell {index:3d}: abs {worst[0]:.2g}  rel {worst[1]:.2g}  "
                  f"count {worst[2]:g}  moved under {moved_by or '-'}"
                  + (f"  TEXT CHANGED under {changed}" if changed else "")
                  + f"  declared {tolerance}" + ("" if covered or tolerance is None else "  !"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["run", "report"])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--isa", nargs="+", default=ISAS, choices=ISAS)
    arguments = parser.parse_args()
    paths = [path.resolve() for path in arguments.notebooks]
    if arguments.command == "run":
        run(paths, arguments.isa)
    else:
        report(paths)
