"""Matching, the heuristic that proposes the bindings (rules 2-5 of prose_numbers.py):
whether an output or code number is a prose number, rounded as written and with its unit,
the label of a prose number, and every prose number of a chapter with its verdict.
"""

import json
import re
from pathlib import Path

from prose_read import NUM, ROOT, SECONDS, blocks, label_words, measurements, normalize, sentence_of

ALLOWED_PATH = ROOT / "tests" / "prose_numbers_allowed.json"


# --- matching -------------------------------------------------------------------------
def comparable_values(number: dict, other: dict, from_code: bool = False) -> list[float]:
    """The values of an output or code number to compare with a prose number, in the prose
    number's unit; [] where the units do not fit (rule 3)."""
    kind, unit = number["kind"], number["unit"]
    value, its_unit, named = other["value"], other["unit"], other.get("named_units", set())
    if kind in ("decimal", "whole"):  # a bare number: any number, from an output or the code
        return [value]
    # A number with no unit of its own on a line that names a time, size or speed is one.
    bare = its_unit is None and named <= {"%", "x", "points", "epochs", "steps", "rounds", "runs"}
    if kind == "pct":
        if its_unit == "%":
            return [value]
        if not bare or other.get("integer"):  # a bare whole number is a count, not a fraction
            return []
        return [value * 100] + ([value] if "%" in named else [])
    if kind == "fraction":  # a third of the time = 3x less; "a third of an epoch": CHUNKS = 3
        if from_code:
            return [value, 1 / value] if its_unit is None and value else []
        return [value] if bare else [1 / value] if its_unit == "x" and value > 0 else []
    if unit == "points":  # percentage points: printed as such, from outputs only
        ok = its_unit == "points" or (its_unit is None and "points" in named)
        return [value] if ok and not from_code else []
    if from_code and its_unit is None and kind == "ratio":
        return []
    if kind == "ratio":  # "ten times" is not any 10 of a shape: an x, or a printed ratio
        whole = number["tolerance"] >= 0.5 and other.get("integer")
        return [value] if its_unit == "x" or (bare and not whole) else []
    if unit in ("epochs", "steps", "rounds", "runs"):
        return [value] if its_unit == unit or bare else []
    if from_code and its_unit is None:
        return []
    if unit in SECONDS:
        units = [its_unit] if its_unit else [u for u in named if u in SECONDS]
        return [value * SECONDS[u] / SECONDS[unit] for u in units if u in SECONDS]
    return [value] if its_unit == unit or (its_unit is None and unit in named) else []


def matches(number: dict, other: dict, from_code: bool = False) -> bool:
    """Whether a prose number is this output (or code) number, rounded as the prose rounds;
    a bound ("more than a hundred times", "under 1 %") is met by any number past it."""
    bound = number.get("bound")
    if bound and other["unit"] is None and number["kind"] != "pct":
        return False  # a bound is checked against a number printed with its unit only
    return any(
        value > number["value"] if bound == "above" else value < number["value"]
        if bound == "below" else abs(value - number["value"]) <= number["tolerance"]
        for value in comparable_values(number, other, from_code)
    )



# --- labels in the prose ----------------------------------------------------------------
ANY_NUMBER = re.compile(rf"(?<![A-Za-z0-9_.])(?:{NUM})")


def _gap(text: str) -> int:
    """How far apart two things are: the letters of the words between them that are not
    stop words or units, plus 2 for each mark of punctuation (a comma or a parenthesis
    between a number and a word loosens their tie)."""
    words = [m.group(0) for m in re.finditer(r"[A-Za-z_][\w'’.\-/]*|[^\W\d_A-Za-z]", text)]
    marks = re.findall(r"[,;:()（）。，；：、]", text)
    return sum(len(word) for word in words if normalize(word)) + 2 * len(marks)


MAX_GAP = 8  # at most this many letters of other words (2 per punctuation mark) between


def label_of(text: str, number: dict, numbers: list[dict], candidates: list[dict]) -> set[str]:
    """The label of a prose number (rule 4): the nearest word of its sentence, nearer to it
    than to any other number of the sentence, that is on some but not all of `candidates`
    (the scope's output numbers of a compatible unit). An empty set when there is none."""
    if not candidates:
        return set()
    lo, hi = sentence_of(text, number["start"], number["end"])
    spans = [(n["start"], n["end"]) for n in numbers if lo <= n["start"] < hi]
    spans += [(m.start(), m.end()) for m in ANY_NUMBER.finditer(text, lo, hi)
              if not any(s <= m.start() < e for s, e in spans)]
    counts = {}
    for candidate in candidates:
        for word in candidate["labels"]:
            counts[word] = counts.get(word, 0) + 1
    # Only the words between the previous and the next number of the sentence are its own.
    lo = max([e for s, e in spans if e <= number["start"]], default=lo)
    hi = min([s for s, e in spans if s >= number["end"]], default=hi)
    best, best_gap = {}, None  # word -> side ("before" or "after" the number)
    for word, start, end in label_words(text[lo:hi]):
        start, end = start + lo, end + lo
        if re.search(r"\b(?:per|than)\s+(?:an?\s+|the\s+)?$", text[lo:start]):
            continue  # "ms per step" is the unit, "faster than a loop" the reference
        if start >= number["end"] and re.search(r"\bthan\b", text[number["end"]:start]):
            continue  # "1.32x faster than one call per step": the reference, not its label
        if not 0 < counts.get(word, 0) < len(candidates):
            continue  # not a label here, or one that every candidate carries

        def gap(span, start=start, end=end):
            return _gap(text[span[1]:start] if span[1] <= start else text[end:span[0]])

        own = gap((number["start"], number["end"]))
        if any(gap(span) < own for span in spans if span[0] != number["start"]):
            continue  # the word belongs to another number
        if own > MAX_GAP:
            continue  # too far to be its label
        side = "before" if end <= number["start"] else "after"
        if best_gap is None or own < best_gap:
            best, best_gap = {word: side}, own
        elif own == best_gap:
            best[word] = side
    return best


# --- a chapter ------------------------------------------------------------------------
def load_allowed(path: Path = ALLOWED_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


# A number after these words is a bound, not a value.
BOUNDS = {"above": r"(?:\b(?:more than|over|at least|above)(?:\s+an?)?|超过|至少)\s*$",
          "below": r"(?:\b(?:less than|under|below|at most|up to)(?:\s+an?)?|不到|至多)\s*$"}


def prose_numbers(notebook: dict) -> list[dict]:
    """Every checked prose number with its cell id, its sentence and its verdict: "why" is
    None when it is found with its unit and label, else the reason it is not."""
    found = []
    for block in blocks(notebook):
        text = block["text"]
        numbers = measurements(text)
        for number in numbers:
            before = text[max(0, number["start"] - 20):number["start"]].lower()
            # "below 964 tokens per chip": a whole number is a threshold read to the unit
            for bound, pattern in BOUNDS.items() if number["kind"] != "whole" else ():
                if re.search(pattern, before) and not (  # "over five rounds": during
                        before.rstrip().endswith("over")
                        and number["unit"] in ("epochs", "steps", "rounds", "runs")):
                    number["bound"] = bound
            lo, hi = sentence_of(text, number["start"], number["end"])
            number["sentence"] = re.sub(r"\s+", " ", text[lo:hi]).strip()
            number["cell"] = block["cell"]
            number["why"] = verdict(text, number, numbers, block)
            number["block"], number["siblings"] = block, numbers
            where, offset = block["where"], block["offset"]
            number["src"] = (where[offset + number["start"]], where[offset + number["end"]])
            found.append(number)
    return found


def verdict(text: str, number: dict, numbers: list[dict], block: dict) -> str | None:
    """None if the number is in its scope's outputs with its unit and label, or in its code."""
    if any(matches(number, other, from_code=True) for other in block["code"]):
        return None
    compatible = [other for other in block["outputs"] if comparable_values(number, other)]
    found = [other for other in compatible if matches(number, other)]
    if not found:
        return "not in the outputs of its section with its unit"
    # The label must tell apart the lines of the output cells that printed the value.
    printed_by = {other["cell"] for other in found}
    label = label_of(text, number, numbers, [o for o in compatible if o["cell"] in printed_by])
    sides = [{w for w, side in label.items() if side == s} for s in ("before", "after")]
    if label and not any(all(not words or words & other["labels"] for words in sides)
                         for other in found):
        lines = sorted({other["line"] for other in found})
        return (f"labelled {'/'.join(sorted(label))!r} in the prose, but printed on "
                + "; ".join(repr(line[:70]) for line in lines[:3]))
    return None


def is_allowed(number: dict, allowed: dict) -> bool:
    """Whether an allow-list key is this number: as written, or the same value and unit
    ("24 hours" also allows the Chinese twin's "24 小时")."""
    if number["written"] in allowed:
        return True
    for key in allowed:
        [other] = measurements(key) or [None]
        if other and (other["value"], other["unit"]) == (number["value"], number["unit"]):
            return True
    return False
