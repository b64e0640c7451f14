"""The committed record of each chapter's last run on a TPU (tests/tpu_record.json).

Usage:
  python3 dev/tpu_record.py merge BUNDLE.json [--record tests/tpu_record.json]
  python3 dev/tpu_record.py stale 07 --reason "no device was lent" [--date 2026-12-06]
  python3 dev/tpu_record.py open 02 --reason "float32 check_grads on the chip, issue 40"
  python3 dev/tpu_record.py open 02 --remove
  python3 dev/tpu_record.py summary      # a markdown table of the record
  python3 dev/tpu_record.py check        # what tests/test_tpu_record.py checks, as text

`dev/tpu_run.py` executes chapters on a TPU and writes a bundle: one entry per chapter
with the versions, the device, every code cell's status, seconds and (trimmed) printed
text, and `code_sha256`, the hash of the chapter's code cells (`code_hash` below, the one
definition the runner and the test share). `merge` puts a bundle's chapters into the
record, keyed by notebook file name; a newer run replaces an older one.

A chapter that changed but could not be re-run on a TPU in the session that changed it is
marked `stale` with the date and one of two reasons (STALE_REASONS); the test then skips
its hash check and says so. The next session with device time re-runs the stale chapters
first (README, "Testing on a TPU").

`open_errors` in the record lists, by notebook file name, the chapters that still have
error cells on the TPU with the reason (issue 40): the test reports them instead of failing,
and fails when a listed chapter has no error cell any more, so the list only shrinks.

Cells that cannot run on the device machine only because it refuses sockets carry the tag
`needs-sockets` in the notebook; their errors are allowed. Tags do not change the hash.
"""

import argparse
import datetime as dt
import hashlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "tests" / "tpu_record.json"
NOTEBOOKS = ROOT / "notebooks"
STALE_REASONS = ("no device was lent", "the session's device time was spent")
SOCKET_TAG = "needs-sockets"
CHANGED = "chapter code changed since its TPU run: re-run it on a TPU"


def cell_source(cell: dict) -> str:
    source = cell.get("source", "")
    return source if isinstance(source, str) else "".join(source)


def code_hash(notebook: dict) -> str:
    """sha256 over the sources of the code cells, in order (metadata, tags, outputs and
    markdown do not count). Each source is length-prefixed, so moving a line from one cell
    to the next changes the hash."""
    digest = hashlib.sha256()
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "code":
            data = cell_source(cell).encode()
            digest.update(f"{len(data)}:".encode() + data)
    return digest.hexdigest()


def notebook_hash(path: Path) -> str:
    return code_hash(json.loads(Path(path).read_text()))


def cells_hash(path: Path, cell_ids) -> str:
    """code_hash over only the code cells named in cell_ids, in that order (dev/aot_tpu.py's
    record depends on these cells of chapter 16 and on no others). A missing cell counts as
    empty, so that removing one changes the hash."""
    cells = {cell.get("id"): cell for cell in json.loads(Path(path).read_text())["cells"]
             if cell.get("cell_type") == "code"}
    return code_hash({"cells": [cells.get(i, {"cell_type": "code"}) for i in cell_ids]})


def load(path: Path = RECORD) -> dict:
    if Path(path).exists():
        record = json.loads(Path(path).read_text())
    else:
        record = {}
    # Always today's wording, so the next save corrects a record written before a move.
    record["about"] = ("Each chapter's last run on a TPU: dev/tpu_record.py, "
                       "dev/tpu_run.py, tests/test_tpu_record.py (README: Testing on a TPU)")
    record.setdefault("open_errors", {})
    record.setdefault("chapters", {})
    return record


def save(record: dict, path: Path = RECORD) -> None:
    record["chapters"] = dict(sorted(record["chapters"].items()))
    record["open_errors"] = dict(sorted(record["open_errors"].items()))
    Path(path).write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")


def chapter_name(text: str, folder: Path | None = None) -> str:
    """'7', '07', '07_mlp_from_scratch' or a path -> '07_mlp_from_scratch.ipynb'."""
    folder = folder or NOTEBOOKS
    name = Path(text).name
    if name.endswith(".ipynb"):
        return name
    matches = sorted(path.name for path in folder.glob(f"{name.zfill(2)}*.ipynb"))
    if len(matches) != 1:
        raise SystemExit(f"no single notebook in {folder} for {text!r}: {matches}")
    return matches[0]


def error_cells(entry: dict) -> list[dict]:
    return [cell for cell in entry.get("cells", []) if cell.get("status") != "ok"]


def socket_cells(notebook: dict) -> set[str]:
    return {cell.get("id") for cell in notebook["cells"]
            if SOCKET_TAG in cell.get("metadata", {}).get("tags", [])}


def check_chapter(path: Path, record: dict, today: dt.date | None = None) -> dict:
    """What the test checks for one notebook: {'problems': [...], 'open': [...],
    'notes': [...]}. Problems fail the test; 'open' lists the error cells a chapter of
    `open_errors` still has (reported, not failed); notes are shown (stale entries)."""
    path = Path(path)
    today = today or dt.datetime.now(dt.UTC).date()
    notebook = json.loads(path.read_text())
    entry = record.get("chapters", {}).get(path.name)
    result = {"problems": [], "open": [], "notes": []}
    problems = result["problems"]
    if entry is None:
        problems.append(f"{path.name}: no TPU record: run it on a TPU (dev/tpu_run.py) and "
                        "merge the bundle (dev/tpu_record.py merge)")
        return result
    stale = entry.get("stale")
    if stale:
        reason, date = stale.get("reason"), stale.get("date", "")
        try:
            stale_date = dt.date.fromisoformat(date)
        except (TypeError, ValueError):
            stale_date = None
        if reason not in STALE_REASONS:
            problems.append(f"{path.name}: stale with reason {reason!r}; the only valid reasons "
                            f"are {' or '.join(repr(r) for r in STALE_REASONS)}")
        if stale_date is None or stale_date > today:
            problems.append(f"{path.name}: stale needs a date (YYYY-MM-DD, not in the future), "
                            f"has {date!r}")
        result["notes"].append(f"{path.name}: STALE since {date} ({reason}): its code may have "
                               "changed since its TPU run; re-run it first when a TPU is lent")
        if "cells" not in entry:
            result["notes"].append(f"{path.name}: never run on a TPU")
            return result
    elif entry.get("code_sha256") != code_hash(notebook):
        problems.append(f"{path.name}: {CHANGED}")
    kind = entry.get("device_kind") or ""
    if "TPU" not in kind.upper():
        problems.append(f"{path.name}: ran on {kind or 'no device kind'!r}, not a TPU")
    sockets = socket_cells(notebook)
    errors = [cell for cell in error_cells(entry) if cell.get("id") not in sockets]
    described = [f"cell {cell.get('index')} ({cell.get('id')}): {cell.get('status')}: "
                 f"{(cell.get('error') or {}).get('ename', '')}: "
                 f"{(cell.get('error') or {}).get('evalue', '')[:200]}" for cell in errors]
    listed = record.get("open_errors", {}).get(path.name)
    if listed:
        if errors:
            result["open"] = described
        else:
            problems.append(f"{path.name}: listed in open_errors ({listed}) but its TPU run has "
                            "no error cell any more: remove it from open_errors")
    elif errors:
        problems.append(f"{path.name}: {len(errors)} error cell(s) on the TPU:\n  "
                        + "\n  ".join(described))
    if entry.get("timed_out") or entry.get("unfinished"):
        problems.append(f"{path.name}: its TPU run did not reach the end "
                        f"({entry.get('unfinished') or 'timed out'})")
    return result


def merge(bundle_path: Path, record_path: Path = RECORD) -> list[str]:
    bundle = json.loads(Path(bundle_path).read_text())
    record = load(record_path)
    merged = []
    for name, entry in bundle.get("chapters", {}).items():
        old = record["chapters"].get(name, {})
        if old.get("date", "") > entry.get("date", ""):
            print(f"{name}: the record's run ({old['date']}) is newer than the bundle's; kept")
            continue
        record["chapters"][name] = entry
        merged.append(name)
        print(f"{name}: merged ({entry.get('device_kind')}, {entry.get('error_cells')} error "
              f"cells, {entry.get('seconds', 0):.0f} s)")
    for name, why in bundle.get("not_run", {}).items():
        print(f"{name}: not run ({why}): mark it stale if its code changed")
    save(record, record_path)
    return merged


def mark_stale(chapter: str, reason: str, date: str | None = None,
               record_path: Path = RECORD) -> None:
    if reason not in STALE_REASONS:
        raise SystemExit(f"reason must be one of {STALE_REASONS}, not {reason!r}")
    record = load(record_path)
    name = chapter_name(chapter)
    entry = record["chapters"].setdefault(name, {})
    entry["stale"] = {"date": date or dt.datetime.now(dt.UTC).date().isoformat(),
                      "reason": reason}
    save(record, record_path)
    print(f"{name}: marked stale ({entry['stale']['date']}, {reason})")


def summary(record_path: Path = RECORD) -> str:
    record = load(record_path)
    lines = ["| chapter | run (UTC) | device | jax / jaxlib / libtpu | seconds | error cells "
             "| note |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        entry = record["chapters"].get(path.name)
        if entry is None:
            lines.append(f"| {path.stem} | - | - | - | - | - | no record |")
            continue
        notes = []
        if entry.get("stale"):
            notes.append(f"stale since {entry['stale']['date']}: {entry['stale']['reason']}")
        elif entry.get("code_sha256") != notebook_hash(path):
            notes.append("code changed since the run")
        if path.name in record["open_errors"]:
            notes.append("open: " + record["open_errors"][path.name])
        if entry.get("stand_ins"):
            notes.append("stand-in: " + ", ".join(entry["stand_ins"]))
        sockets = socket_cells(json.loads(path.read_text()))
        errors = error_cells(entry)
        socket_errors = sum(cell.get("id") in sockets for cell in errors)
        count = f"{len(errors)}" + (f" ({socket_errors} needs-sockets)" if socket_errors else "")
        ran = "cells" in entry
        versions = " / ".join(str(entry.get(key)) for key in ("jax", "jaxlib", "libtpu"))
        seconds = f"{entry.get('seconds', 0):.0f}" if ran else "-"
        lines.append(f"| {path.stem} | {entry.get('date', '-')} | {entry.get('device_kind', '-')}"
                     f" | {versions if ran else '-'} | {seconds} | "
                     f"{count if ran else '-'} | {'; '.join(notes)} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", type=Path, default=RECORD)
    commands = parser.add_subparsers(dest="command", required=True)
    merge_cmd = commands.add_parser("merge", help="merge a bundle from dev/tpu_run.py")
    merge_cmd.add_argument("bundle", type=Path)
    stale_cmd = commands.add_parser("stale", help="mark a chapter stale")
    stale_cmd.add_argument("chapter")
    stale_cmd.add_argument("--reason", required=True, choices=STALE_REASONS)
    stale_cmd.add_argument("--date", help="YYYY-MM-DD, today (UTC) unless given")
    open_cmd = commands.add_parser("open", help="list a chapter in open_errors, or --remove")
    open_cmd.add_argument("chapter")
    open_cmd.add_argument("--reason", help="why it still fails on the TPU, naming its issue")
    open_cmd.add_argument("--remove", action="store_true")
    commands.add_parser("summary", help="print a markdown table of the record")
    commands.add_parser("check", help="print what tests/test_tpu_record.py checks")
    args = parser.parse_args(argv)
    if args.command == "merge":
        merge(args.bundle, args.record)
    elif args.command == "stale":
        mark_stale(args.chapter, args.reason, args.date, args.record)
    elif args.command == "open":
        record = load(args.record)
        name = chapter_name(args.chapter)
        if args.remove:
            record["open_errors"].pop(name, None)
        elif not args.reason or "issue" not in args.reason:
            raise SystemExit("--reason must say why and name the issue (\"..., issue 40\")")
        else:
            record["open_errors"][name] = args.reason
        save(record, args.record)
        print(f"{name}: {'removed from' if args.remove else 'listed in'} open_errors")
    elif args.command == "summary":
        print(summary(args.record))
    else:
        record = load(args.record)
        failed = 0
        for path in sorted(NOTEBOOKS.glob("*.ipynb")):
            result = check_chapter(path, record)
            for line in result["problems"]:
                print("FAIL", line)
            for line in result["open"]:
                print(f"OPEN {path.name}: {line}")
            for line in result["notes"]:
                print("NOTE", line)
            failed += bool(result["problems"])
        print(f"{failed} chapter(s) fail the TPU record check")
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
