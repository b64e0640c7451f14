"""Binding (rule 6 of prose_numbers.py): where each prose number comes from, the source that
the heuristic ranks best (or a person pinned), recorded with its label and direction words
in tests/prose_bindings.json, and found again in a notebook (`locate`); reading and writing
that file.
"""

import json
import re
from pathlib import Path

from prose_match import (
    _gap,
    comparable_values,
    label_of,
    load_allowed,
    matches,
    measurements,
    prose_numbers,
)
from prose_read import (
    NOTEBOOK_DIR,
    OUT_TOKEN,
    ROOT,
    _output_text,
    _text,
    _with_parts,
    cell_numbers,
    context_words,
    direction_words,
    label_words,
    records,
    region,
    sentence_of,
    twin_path,
)

BINDINGS_PATH = ROOT / "tests" / "prose_bindings.json"


def _mask(line: str) -> str:
    """A line with its numbers masked: where a bound number is, whatever the run printed."""
    return OUT_TOKEN.sub("#", line.strip())[:160]


def vocabulary(cell: dict, from_code: bool) -> set[str]:
    """The label words of a code cell's outputs (or, for a number of the code, its source)."""
    texts = [_text(cell.get("source"))] if from_code else [
        _output_text(output) for output in cell.get("outputs", [])]
    return {part for text in texts for word, _, _ in label_words(text)
            for part in _with_parts(word)}


def sources(text: str, number: dict, numbers: list[dict], block: dict) -> list[tuple]:
    """The output (or code) numbers that rules 2-4 accept for a prose number, best first,
    each as (number, from_code): the most words of the number's stretch of sentence on the
    line, then the closest value, then a printed value before a literal of the code."""
    compatible = [o for o in block["outputs"] if comparable_values(number, o)]
    found = [o for o in compatible if matches(number, o)]
    good = []
    if found:
        printed_by = {o["cell"] for o in found}
        label = label_of(text, number, numbers, [o for o in compatible if o["cell"] in printed_by])
        sides = [{w for w, side in label.items() if side == s} for s in ("before", "after")]
        good = [o for o in found if all(not words or words & o["labels"] for words in sides)]
    code = [o for o in block["code"] if matches(number, o, from_code=True)]
    lo, hi = region(text, number, numbers)
    words = {w for w, _, _ in context_words(text, lo, hi)}

    def rank(item):
        other, from_code = item
        values = comparable_values(number, other, from_code)
        distance = min((abs(v - number["value"]) for v in values), default=float("inf"))
        if distance > number["tolerance"]:  # a bound met by a number past it: the nearest
            return True, from_code, distance, -len(words & other["labels"])
        return False, -len(words & other["labels"]), distance, from_code

    return sorted([(o, False) for o in good] + [(o, True) for o in code], key=rank)


COUNTS = {"epochs", "steps", "rounds", "runs"}  # settings, printed many times by design


def _nearest(number: dict, other: dict, from_code: bool = False) -> float | None:
    """A source's value in the prose number's unit, the reading nearest to the prose."""
    values = comparable_values(number, other, from_code)
    return min(values, key=lambda v: abs(v - number["value"])) if values else None


def rivals(text: str, number: dict, numbers: list[dict], ranked: list[tuple]) -> list[dict]:
    """The printed values that the best source ties with: every output value in scope that
    matches the prose number (rounded as written) and carries as many of the label words of
    its stretch of sentence as the best one does, when their values differ (a value printed
    twice, on two lines, is still one value). [] when the best source is the only one, or
    when it is not a printed value (a code literal, a number past a bound) or the number is a
    count (epochs, steps: settings that the outputs print everywhere)."""
    if (number["unit"] in COUNTS or number["kind"] == "fraction" or not ranked
            or ranked[0][1] or not exact(number, *ranked[0])):
        return []
    lo, hi = region(text, number, numbers)
    words = {w for w, _, _ in context_words(text, lo, hi)}
    best = len(words & ranked[0][0]["labels"])
    tied = [o for o, from_code in ranked if not from_code and exact(number, o, False)
            and len(words & o["labels"]) == best]
    values = [_nearest(number, o) for o in tied]
    if max(values) - min(values) <= 1e-9 * max(1.0, abs(max(values))):
        return []
    return tied


def own_words(text: str, number: dict, numbers: list[dict]) -> set[str]:
    """The label words of a number's stretch of sentence that are nearer to it than to the
    measured number before or after it, not counting a comparison's reference (the words
    after "than")."""
    lo, hi = region(text, number, numbers)
    first, last = sentence_of(text, number["start"], number["end"])
    words = set()
    for word, start, end in context_words(text, lo, hi):
        if end <= number["start"]:
            if lo > first and _gap(text[end:number["start"]]) > _gap(text[lo:start]):
                continue  # nearer to the number before
        else:
            if re.search(r"\bthan\b", text[number["end"]:start]):
                continue
            if hi < last and _gap(text[number["end"]:start]) > _gap(text[end:hi]):
                continue  # nearer to the number after
        words.add(word)
    return words


def mislabelled(text: str, number: dict, numbers: list[dict], other: dict,
                cell: dict) -> set[str]:
    """The words beside a prose number that name other lines of the bound cell's output and
    not the bound one (the figure of a neighbouring row, a right figure beside the wrong
    label); empty when its words name its own line, or none of the cell's lines."""
    if number["unit"] in COUNTS or number["kind"] == "fraction":
        return set()
    lines = {}
    for candidate in cell_numbers(cell)[0]:
        if comparable_values(number, candidate):
            lines.setdefault((candidate["output"], candidate["line_no"]), set()).update(
                candidate["labels"])
    if len(lines) < 2:
        return set()
    telling = set.union(*lines.values()) - set.intersection(*lines.values())
    words = own_words(text, number, numbers) & telling
    return set() if words & other["labels"] else words


def exact(number: dict, other: dict, from_code: bool) -> bool:
    """Whether a source has the prose number's value itself, not merely one past its bound."""
    return any(abs(v - number["value"]) <= number["tolerance"]
               for v in comparable_values(number, other, from_code))


def locator(other: dict, from_code: bool) -> dict:
    """Where a bound value is: its code cell, and the output's line (its text with the
    numbers masked, and its place) and the number's index on it; or the line of the code."""
    if from_code:
        return {"cell": other["cell_id"], "code": _mask(other["code_line"]),
                "line": other["line_no"], "index": other["index"]}
    return {"cell": other["cell_id"], "output": other["output"], "line": other["line_no"],
            "text": _mask(other["line"]), "index": other["index"]}


def locate(at: dict, cells: dict) -> tuple[dict | None, str | None]:
    """The output (or code) number a locator points to today, or None and why not."""
    cell = cells.get(at["cell"])
    if cell is None or cell.get("cell_type") != "code":
        return None, f"its code cell {at['cell']} is gone"
    outputs, code = cell_numbers(cell)
    if "code" in at:
        same = [n for n in code
                if n["index"] == at["index"] and _mask(n["code_line"]) == at["code"]]
        place = lambda n: abs(n["line_no"] - at["line"])  # noqa: E731
    else:
        same = [n for n in outputs if n["index"] == at["index"] and _mask(n["line"]) == at["text"]]
        place = lambda n: (abs(n["output"] - at["output"]), abs(n["line_no"] - at["line"]))  # noqa: E731
    if not same:
        what = at.get("code") or at.get("text")
        return None, f"its line {what!r} is no longer in cell {at['cell']}"
    return min(same, key=place), None


def _context(number: dict, vocab: set[str]) -> tuple[list[str], list[str]]:
    """The label words (those in `vocab`) and direction words of a number's stretch."""
    text = number["block"]["text"]
    lo, hi = region(text, number, number["siblings"])
    labels = [w for w, _, _ in context_words(text, lo, hi) if w in vocab]
    return labels, [w for w, _, _ in direction_words(text, lo, hi)]


def _allowed_key(number: dict, allowed: dict) -> str | None:
    if number["written"] in allowed:
        return number["written"]
    for key in allowed:
        [other] = measurements(key) or [None]
        if other and (other["value"], other["unit"]) == (number["value"], number["unit"]):
            return key
    return None


def _by_cell(numbers: list[dict]) -> dict[str, list[dict]]:
    cells = {}
    for number in numbers:
        cells.setdefault(number["cell"], []).append(number)
    return cells


def bind_notebook(notebook: dict, allowed: dict, twin: dict | None = None,
                  previous: dict | None = None) -> dict:
    """The bindings of a notebook's prose numbers, {markdown cell id: [binding, ...]} in the
    order of the numbers in the cell. `twin`: the English notebook's bindings, for the
    Chinese twin, whose numbers are bound as the English cell's with the same value.
    `previous`: this edition's committed bindings; an entry there with a "pin" (a person's
    reason for a source the heuristic would not choose) keeps its source, for the same
    number written the same way in the same cell."""
    cells = {cell.get("id"): cell for cell in notebook["cells"]}
    result = {}
    for cell_id, numbers in _by_cell(prose_numbers(notebook)).items():
        entries, used = [], set()
        pins = [e for e in (previous or {}).get(cell_id, []) if e.get("pin")]
        for number in numbers:
            entry = {"n": number["written"]}
            pin = next((e for e in pins if e["n"] == number["written"]), None)
            if pin is not None:  # a source named by a person: kept as it is
                pins.remove(pin)
                entry.update({k: pin[k] for k in ("at", "allowed", "pin") if k in pin})
                vocab = (vocabulary(cells[pin["at"]["cell"]], "code" in pin["at"])
                         if "at" in pin and pin["at"]["cell"] in cells else set())
                entry["labels"], entry["direction"] = _context(number, vocab)
                entry["value"], entry["unit"] = number["value"], number["unit"]
                for key in ("bound", "scale", "at_scale"):
                    if key in pin:
                        entry[key] = pin[key]
                entries.append(entry)
                continue
            english = [(k, b) for k, b in enumerate((twin or {}).get(cell_id, []))
                       if "unbound" not in b and _same_number(number, b)]
            english.sort(key=lambda item: item[0] in used)
            key = _allowed_key(number, allowed)
            ranked = [] if number["why"] else sources(
                number["block"]["text"], number, number["siblings"], number["block"])
            if english:  # the Chinese twin: the English cell's number of the same value
                used.add(english[0][0])
                entry.update({k: v for k, v in english[0][1].items()
                              if k in ("at", "allowed", "ambiguous")})
                source = locate(entry["at"], cells)[0] if "output" in entry.get(
                    "at", {}) and not english[0][1].get("pin") else None
                wrong = source and mislabelled(number["block"]["text"], number,
                                               number["siblings"], source,
                                               cells[entry["at"]["cell"]])
                if wrong:  # the English figure, beside another line's label word
                    del entry["at"]
                    entry["unbound"] = (
                        f"mislabelled: the words beside it ({', '.join(sorted(wrong))}) name "
                        f"other lines of cell {source['cell_id']}, not {source['line'][:60]!r}, "
                        "where the English binding's value is")
                if english[0][1].get("scale", 1.0) != scale_of(number):
                    entry["at_scale"] = english[0][1].get("scale", 1.0)
            elif ranked and (exact(number, *ranked[0]) and not ranked[0][1] or key is None):
                tied = rivals(number["block"]["text"], number, number["siblings"], ranked)
                setting = [o for o, from_code in ranked if from_code and exact(number, o, True)]
                if tied and setting:  # printed by several lines: a setting of the code
                    entry["at"] = locator(setting[0], True)
                elif tied and key is not None:  # a fact of the allow-list, printed by chance
                    entry["allowed"] = key
                elif tied:  # several values, and no label word to choose: a person names it
                    entry["ambiguous"] = [locator(o, False) for o in tied[:6]]
                else:
                    entry["at"] = locator(*ranked[0])  # printed; or only a bound, or the code
                    wrong = set() if ranked[0][1] else mislabelled(
                        number["block"]["text"], number, number["siblings"], ranked[0][0],
                        cells[ranked[0][0]["cell_id"]])
                    if wrong:  # a person checks it, and pins it if it is right
                        del entry["at"]
                        entry["unbound"] = (
                            f"mislabelled: the words beside it ({', '.join(sorted(wrong))}) "
                            f"name other lines of cell {ranked[0][0]['cell_id']}, not "
                            f"{ranked[0][0]['line'][:60]!r}, where its value is")
            elif key is not None:
                entry["allowed"] = key
            elif ranked:
                entry["at"] = locator(*ranked[0])
            else:
                entry["unbound"] = number["why"] or "no source"
            if "at" in entry:
                vocab = vocabulary(cells[entry["at"]["cell"]], "code" in entry["at"])
            else:
                vocab = set()
            entry["labels"], entry["direction"] = _context(number, vocab)
            entry["value"], entry["unit"] = number["value"], number["unit"]
            bound = number.get("bound") or (english[0][1].get("bound") if english else None)
            if bound:
                entry["bound"] = bound
            if scale_of(number) != 1.0:  # "1.04 billion": the English binding's, in words
                entry["scale"] = scale_of(number)
            entries.append(entry)
        result[cell_id] = entries
    return result


SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12, "千": 1e3,
          "万": 1e4, "亿": 1e8}


def scale_of(number: dict) -> float:
    """The word after a number that multiplies it: 1.04 billion, 10.4 亿."""
    after = re.match(r"\s*(thousand|million|billion|trillion|千|万|亿)",
                     number["block"]["text"][number["end"]:number["end"] + 12])
    return SCALES[after.group(1)] if after else 1.0


def _same_number(number: dict, entry: dict) -> bool:
    """Whether a Chinese number is the English binding's: the same value and unit (10.4 亿
    for 1.04 billion), or a fraction for a ratio ("五分之一" for "5 times" smaller)."""
    value, unit = entry.get("value"), entry.get("unit")
    if value is None:
        return False
    ratio = scale_of(number) / entry.get("scale", 1.0)
    if unit == number["unit"] and abs(
            value - number["value"] * ratio) <= number["tolerance"] * ratio + 1e-9:
        return True
    return (number["kind"] == "fraction" and unit == "x" and value > 0
            and abs(1 / value - number["value"]) <= number["tolerance"] + 1e-9)


def load_bindings(path: Path = BINDINGS_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def dump_bindings(bindings: dict) -> str:
    """The bindings file: one binding a line, so that a review reads its diff."""
    lines = ["{"]
    names = sorted(bindings)
    for i, name in enumerate(names):
        lines.append(f" {json.dumps(name)}: {{")
        editions = [e for e in ("en", "zh") if e in bindings[name]]
        for j, edition in enumerate(editions):
            lines.append(f"  {json.dumps(edition)}: {{")
            cells = bindings[name][edition]
            for k, (cell_id, entries) in enumerate(cells.items()):
                lines.append(f"   {json.dumps(cell_id)}: [")
                for m, entry in enumerate(entries):
                    comma = "," if m < len(entries) - 1 else ""
                    lines.append("    " + json.dumps(entry, ensure_ascii=False) + comma)
                lines.append("   ]" + ("," if k < len(cells) - 1 else ""))
            lines.append("  }" + ("," if j < len(editions) - 1 else ""))
        lines.append(" }" + ("," if i < len(names) - 1 else ""))
    lines.append("}")
    return "\n".join(lines) + "\n"


def bind(paths: list[Path], bindings_path: Path = BINDINGS_PATH) -> dict:
    """Rewrite the bindings of these (English) notebooks and their Chinese twins from
    today's heuristic match; the other notebooks' bindings are kept."""
    allowed = load_allowed()
    bindings = load_bindings(bindings_path)
    for path in paths:
        name = Path(path).name
        committed = bindings.get(name, {})
        english = bind_notebook(json.loads((NOTEBOOK_DIR / name).read_text(encoding="utf-8")),
                                allowed.get(name, {}), previous=committed.get("en"))
        bindings[name] = {"en": english}
        if twin_path(name).exists():
            chinese = records(json.loads(twin_path(name).read_text(encoding="utf-8")),
                              json.loads((NOTEBOOK_DIR / name).read_text(encoding="utf-8")))
            bindings[name]["zh"] = bind_notebook(chinese, allowed.get(name, {}), english,
                                                 previous=committed.get("zh"))
    bindings_path.write_text(dump_bindings(bindings), encoding="utf-8")
    return bindings
