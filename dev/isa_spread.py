"""Measure how far a chapter's outputs move when XLA compiles for another instruction set.

XLA's CPU code depends on the instruction set it targets, and so does the rounding of
long floating-point computations. `XLA_FLAGS=--xla_cpu_max_isa=...` caps it on one
machine, which shows on one machine what other readers' CPUs would print.

    python dev/isa_spread.py run notebooks/07_mlp_from_scratch.ipynb [--isa SSE4_2 AVX]
        executes each notebook once per instruction set (never in place) into
        _build/isa/<ISA>/<name>.ipynb; "native" means no cap.
    python dev/isa_spread.py report notebooks/07_mlp_from_scratch.ipynb [...]
        compares every run found under _build/isa/ with the stored outputs, cell by cell:
        the largest change of a number with a fractional part (absolute and relative) and
        of a whole number, sign changes, whether the cell's tolerances
        (tests/nbval_tolerance.py) cover what was seen, and for each tol-* and margin= tag
        the largest change seen on the lines it covers (a margin must stay above it). Cells
        whose text changed in more than numbers are listed as such. Cells marked
        NBVAL_IGNORE_OUTPUT are skipped.

This is how the tol-* tags in the chapters were set: the largest change seen across the
instruction sets, with headroom (CONTRIBUTING.md, "How the tolerances were found"), and never wider
than the cell's margin= tag; where the change seen exceeds a margin, the prose must not
draw that conclusion. AVX2 and native gave identical outputs so far, and so did SSE4_2 and
AVX, so `--isa SSE4_2 AVX` is the useful pair on an AVX-512 machine.
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
    margins_of,
    number_problems,
    numbers_by_line,
    sign,
    split_numbers,
    stored_texts,
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
    """The cell's text outputs as nbval compares them, joined."""
    return "\n".join(stored_texts(cell))


def changes(stored_text, run_text):
    """[(stored line, stored number, run number)] for every number, or None if the texts
    differ in more than numbers."""
    stored_skeleton, stored_numbers = split_numbers(stored_text)
    run_skeleton, run_numbers = split_numbers(run_text)
    if stored_skeleton != run_skeleton or len(stored_numbers) != len(run_numbers):
        return None
    return [(line, old, new) for (line, old), new
            in zip(numbers_by_line(stored_text), run_numbers, strict=True)]


def compare(stored_text, run_text):
    """(largest abs change, largest relative change, largest whole-number change, number
    of sign changes) or None if the texts differ in more than numbers."""
    found = changes(stored_text, run_text)
    if found is None:
        return None
    largest = [0.0, 0.0, 0.0, 0]
    for _, old, new in found:
        gap = abs(value(new) - value(old))
        if sign(value(old)) * sign(value(new)) < 0:
            largest[3] += 1
        if is_whole(old) and is_whole(new):
            largest[2] = max(largest[2], gap)
        else:
            largest[0] = max(largest[0], gap)
            if value(old):
                largest[1] = max(largest[1], gap / abs(value(old)))
    return tuple(largest)


def largest_under(rule, found):
    """The largest change seen among the numbers a scoped (or unscoped) tag covers."""
    return max((abs(value(new) - value(old)) for line, old, new in found
                if rule.applies_to(line)), default=0.0)


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
            worst, changed, moved_by, uncovered = [0.0, 0.0, 0.0, 0], [], [], []
            per_tag = {}
            for isa, notebook in runs.items():
                result = compare(texts(cell), texts(notebook.cells[index]))
                if result is None:
                    changed.append(isa)
                    continue
                if any(result):
                    moved_by.append(isa)
                worst = [max(a, b) for a, b in zip(worst, result, strict=True)]
                found = changes(texts(cell), texts(notebook.cells[index]))
                for rule in (tolerance or []) + margins_of(cell):
                    if rule.value is not None:
                        per_tag[str(rule)] = max(per_tag.get(str(rule), 0.0),
                                                 largest_under(rule, found))
                if tolerance and number_problems(texts(cell), texts(notebook.cells[index]),
                                                 tolerance):
                    uncovered.append(isa)
            if not changed and not any(worst) and tolerance is None:
                continue
            covered = tolerance is not None and not changed and not uncovered
            print(f"  cell {index:3d}: abs {worst[0]:.2g}  rel {worst[1]:.2g}  "
                  f"count {worst[2]:g}  sign changes {worst[3]}  moved under "
                  f"{moved_by or '-'}"
                  + (f"  TEXT CHANGED under {changed}" if changed else "")
                  + ("" if covered or tolerance is None else "  ! NOT COVERED"))
            for tag, seen in per_tag.items():
                print(f"      {tag:<28} largest change seen on its lines {seen:.3g}")


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
