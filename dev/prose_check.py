"""Checking: each prose number of a chapter against its binding (rule 6 of prose_numbers.py),
or, with `heuristic_check`, against rules 1-5 alone; the allow-list entries no longer used;
the report.
"""

import json
from pathlib import Path

from prose_bind import _by_cell, _context, load_bindings, locate, vocabulary
from prose_match import comparable_values, is_allowed, load_allowed, prose_numbers
from prose_read import NOTEBOOK_DIR, edition_of, records


def _pairs(numbers: list[dict], entries: list[dict]) -> list[tuple[dict, dict | None]]:
    """Each prose number of a cell with its binding: by order when the cell has as many
    numbers as bindings (so a swap is seen), else aligned on their units."""
    if len(numbers) == len(entries):
        return list(zip(numbers, entries, strict=True))
    import difflib  # noqa: PLC0415
    keys = [(n["unit"], n["kind"] == "decimal") for n in numbers]
    bound = [(e.get("unit"), "." in e["n"] and e.get("unit") is None) for e in entries]
    pairs = {}
    for block in difflib.SequenceMatcher(None, keys, bound, autojunk=False).get_matching_blocks():
        for k in range(block.size):
            pairs[block.a + k] = entries[block.b + k]
    return [(n, pairs.get(i)) for i, n in enumerate(numbers)]


def agrees(number: dict, other: dict, from_code: bool, entry: dict) -> bool:
    """Whether a prose number reads its bound value, rounded as it is written: in its unit,
    or as the printed number itself (the binding already says which number it is), or, for
    a Chinese fraction bound as an English ratio, as its reciprocal; a bound ("more than",
    "at most"; the English binding's, when the Chinese words do not say so) is met by the
    value past it or at it."""
    bound = number.get("bound") or entry.get("bound")
    factor = entry.get("scale", 1.0) / entry.get("at_scale", entry.get("scale", 1.0))
    if factor != 1.0:  # 10.4 亿 bound as the English 1.04 billion
        number = {**number, "value": number["value"] * factor,
                  "tolerance": number["tolerance"] * factor}
    values = comparable_values(number, other, from_code) + [other["value"]]
    if number["kind"] == "fraction" and other["value"] > 1:
        values.append(1 / other["value"])
    return any(abs(v - number["value"]) <= number["tolerance"]
               or (bound == "above" and v > number["value"])
               or (bound == "below" and v < number["value"]) for v in values)


def stale(number: dict, entry: dict | None, cells: dict, allowed: dict) -> str | None:
    """Why a prose number no longer agrees with its binding, or None."""
    if entry is None:
        return (number["why"] or "a measured number with no binding") + (
            "; bind it: python dev/prose_numbers.py --bind NOTEBOOK, and review the diff")
    if "unbound" in entry:
        return number["why"] or entry["unbound"]
    if "allowed" in entry:
        key = entry["allowed"]
        same = entry.get("unit") == number["unit"] and abs(
            entry["value"] - number["value"]) <= number["tolerance"] + 1e-9
        if key not in allowed:
            return f"bound to the allow-list's {key!r}, which is no longer on it"
        if not same:
            return f"bound to the allowed fact {key!r}, but the prose says {number['written']!r}"
        vocab = set()
    else:
        at = entry["at"]
        other, why = locate(at, cells)
        if other is None:
            return f"its binding points nowhere: {why}"
        from_code = "code" in at
        if not agrees(number, other, from_code, entry):
            where = other["code_line"] if from_code else other["line"]
            shown = comparable_values(number, other, from_code)
            value = f"{shown[0]:.6g}" if shown else "a number of another unit"
            return (f"stale: bound to {value} on {where[:80]!r} (cell {at['cell']}), "
                    f"the prose says {number['written']!r}")
        vocab = vocabulary(cells[at["cell"]], from_code)
    vocab |= set(entry.get("labels", []))
    labels, direction = _context(number, vocab)
    if labels != entry.get("labels", []):
        return (f"its label changed: bound beside {' '.join(entry.get('labels', [])) or 'none'!r},"
                f" now beside {' '.join(labels) or 'none'!r}")
    if direction != entry.get("direction", []):
        was = " ".join(entry.get("direction", [])) or "none"
        return f"its direction changed: bound with {was!r}, now {' '.join(direction) or 'none'!r}"
    return None


def check_notebook(notebook: dict, name: str, edition: str = "en", allowed: dict | None = None,
                   bindings: dict | None = None) -> list[dict]:
    """The prose numbers of a notebook that disagree with their bindings (or have none and
    are not allowed), each with "why"."""
    allowed = (load_allowed() if allowed is None else allowed).get(name, {})
    bound = (load_bindings() if bindings is None else bindings).get(name, {}).get(edition, {})
    cells = {cell.get("id"): cell for cell in notebook["cells"]}
    offenders = []
    for cell_id, numbers in _by_cell(prose_numbers(notebook)).items():
        entries = bound.get(cell_id, [])
        if entries and len(entries) != len(numbers):  # a number added, removed or unread
            offenders.append({**numbers[0], "why": (
                f"the cell has {len(numbers)} measured number(s), its bindings {len(entries)} "
                f"({', '.join(e['n'] for e in entries)}): if the prose is right, rebind it")})
        for number, entry in _pairs(numbers, entries):
            why = stale(number, entry, cells, allowed)
            if why and not (entry is None and is_allowed(number, allowed)):
                offenders.append({**number, "why": why})
    return offenders


def check(path: Path, allowed: dict | None = None, bindings: dict | None = None,
          edition: str | None = None) -> list[dict]:
    """The prose numbers of a notebook that are stale, unbound or point nowhere."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    edition = edition or edition_of(path)
    english = NOTEBOOK_DIR / Path(path).name
    if edition == "zh" and english.exists():
        notebook = records(notebook, json.loads(english.read_text(encoding="utf-8")))
    return check_notebook(notebook, Path(path).name, edition, allowed, bindings)


def heuristic_check(path: Path, allowed: dict | None = None) -> list[dict]:
    """Rules 1-4 alone (no bindings): the prose numbers not found with their unit and label."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    allowed = (load_allowed() if allowed is None else allowed).get(Path(path).name, {})
    return [number for number in prose_numbers(notebook)
            if number["why"] and not is_allowed(number, allowed)]


def unused_allowed(path: Path, allowed: dict | None = None) -> list[str]:
    """Allow-list entries of a notebook that no longer occur in its prose."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    allowed = (load_allowed() if allowed is None else allowed).get(Path(path).name, {})
    written = {number["written"] for number in prose_numbers(notebook)}
    return [key for key in allowed if key not in written]


def report(name: str, offenders: list[dict]) -> str:
    lines = [f"{name}: {len(offenders)} prose number(s) stale, unbound or not found"]
    for number in offenders:
        lines.append(f"  cell {number['cell']}: {number['written']!r}: {number['why']}")
        lines.append(f"      {number['sentence'][:200]}")
    return "\n".join(lines)
