"""Rewriting (`prose_numbers.py --rewrite`): each bound number of a chapter's prose, in both
editions, written as its bound output now reads, rounded as the prose rounds it.
"""

import json
import re
from pathlib import Path

from prose_bind import BINDINGS_PATH, _by_cell, dump_bindings, load_bindings, locate
from prose_check import _pairs
from prose_match import comparable_values, matches, prose_numbers
from prose_read import NOTEBOOK_DIR, NUM, _decimals, _text, _value, records, twin_path

# A new value this far from the old one (a factor, or a change of sign or to zero) is more
# often a binding to the wrong line (a progress bar, another row) than a new measurement:
# it is listed for a person instead of written.
LARGEST_CHANGE = 2.0


def _format(value: float, written: str) -> str:
    """A value written with the decimals (and thousands separators) of `written`."""
    numeral = re.match(NUM, written).group(0)
    digits = _decimals(numeral)
    return f"{value:,.{digits}f}" if "," in numeral else f"{value:.{digits}f}"


def rewrite_notebook(notebook: dict, name: str, edition: str, bindings: dict) -> list[str]:
    """Write each bound number of the notebook's prose as its bound value now reads, rounded
    as the prose rounds it; returns what changed, and what a person must rewrite (a
    spelled-out number, a bound such as "more than 3 s", a number with no binding)."""
    cells = {cell.get("id"): cell for cell in notebook["cells"]}
    bound = bindings.get(name, {}).get(edition, {})
    notes, edits = [], {}
    for cell_id, numbers in _by_cell(prose_numbers(notebook)).items():
        for number, entry in _pairs(numbers, bound.get(cell_id, [])):
            if entry is None or "at" not in entry:
                continue
            other, why = locate(entry["at"], cells)
            if other is None:
                notes.append(f"{edition} cell {cell_id}: {number['written']!r}: {why}")
                continue
            from_code = "code" in entry["at"]
            if matches(number, other, from_code):
                continue
            values = comparable_values(number, other, from_code)
            if not re.match(NUM, number["written"]) or number.get("bound") or not values:
                notes.append(f"{edition} cell {cell_id}: {number['written']!r} is now "
                             f"{values[0] if values else '?'}: rewrite it by hand")
                continue
            new = _format(values[0], number["written"])
            old, now = number["value"], _value(new)
            if old and (now * old <= 0 or not 1 / LARGEST_CHANGE <= now / old <= LARGEST_CHANGE):
                notes.append(f"{edition} cell {cell_id}: {number['written']!r} would become "
                             f"{new}: check its binding, and rewrite it by hand")
                continue
            start = number["src"][0]
            numeral = re.match(NUM, number["written"]).group(0)
            edits.setdefault(cell_id, []).append((start, start + len(numeral), new))
            entry["n"] = new + number["written"][len(numeral):]
            entry["value"] = _value(new)
            notes.append(f"{edition} cell {cell_id}: {numeral} -> {new}")
    for cell_id, changes in edits.items():
        cell = cells[cell_id]
        source = _text(cell["source"])
        for start, end, new in sorted(changes, reverse=True):
            source = source[:start] + new + source[end:]
        cell["source"] = source.splitlines(keepends=True)
    return notes


def rewrite(paths: list[Path], bindings_path: Path = BINDINGS_PATH) -> list[str]:
    """`rewrite_notebook` on these English notebooks and their Chinese twins; a Chinese
    cell whose translation stamp matched the English text still matches after."""
    import hashlib  # noqa: PLC0415
    bindings = load_bindings(bindings_path)
    notes = []
    for path in paths:
        name = Path(path).name
        en_path, zh_path = NOTEBOOK_DIR / name, twin_path(name)
        english = json.loads(en_path.read_text(encoding="utf-8"))
        digest = {c.get("id"): hashlib.sha1(_text(c["source"]).encode()).hexdigest()[:12]
                  for c in english["cells"]}
        notes += rewrite_notebook(english, name, "en", bindings)
        en_path.write_text(json.dumps(english, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
        if zh_path.exists():
            chinese = json.loads(zh_path.read_text(encoding="utf-8"))
            # read against the English code cells, as the check does (records): the
            # twin's own copies of the outputs are refreshed only by dev/zh_sync.py
            notes += rewrite_notebook(records(chinese, english), name, "zh", bindings)
            for cell in english["cells"]:
                new = hashlib.sha1(_text(cell["source"]).encode()).hexdigest()[:12]
                for zh_cell in chinese["cells"]:
                    stamp = zh_cell.get("metadata", {}).get("zh", {})
                    if (zh_cell.get("id") == cell.get("id") and new != digest[cell.get("id")]
                            and stamp.get("translated_from") == digest[cell.get("id")]):
                        stamp["translated_from"] = new
            zh_path.write_text(json.dumps(chinese, indent=1, ensure_ascii=False) + "\n",
                               encoding="utf-8")
    bindings_path.write_text(dump_bindings(bindings), encoding="utf-8")
    return notes
