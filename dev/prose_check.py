"""Checking: each prose number of a chapter against its binding (rule 6 of prose_numbers.py),
or, with `heuristic_check`, against rules 1-5 alone; the allow-list entries no longer used;
the report.
"""

import json
import math
import re
from pathlib import Path

from prose_bind import _by_cell, _context, load_bindings, locate, vocabulary
from prose_match import comparable_values, is_allowed, load_allowed, prose_numbers
from prose_read import NOTEBOOK_DIR, SECONDS, cell_numbers, edition_of, records, sentence_of


def _pairs(numbers: list[dict], entries: list[dict]) -> list[tuple[dict, dict | None]]:
    """Each prose number of a cell with its binding: by order when the cell has as many
    numbers as bindings (so a swap is seen), else aligned on their units."""
    if len(numbers) == len(entries):
        return list(zip(numbers, entries, strict=True))
    import difflib  # noqa: PLC0415
    keys = [(n["unit"], n["kind"] in ("decimal", "whole")) for n in numbers]
    bound = [(e.get("unit"), e.get("unit") is None and re.fullmatch(r"[\d,.]+", e["n"]) is not None)
             for e in entries]
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
    if "ambiguous" in entry:
        return ambiguous_why(entry)
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
        row = None if from_code or entry.get("pin") else wrong_row(number, other, cells[at["cell"]])
        if row:
            return row
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


# A row of a table whose lines differ by a key ("seed 2: 98.20%", "batch   32: ..."): the
# key word and its number at the start of the line; and how the prose names such a key.
ROW_KEY = re.compile(r"^\s*(?:[A-Za-z][\w.+-]*\s+){0,2}?(?P<word>[A-Za-z]+)\s*[=:]?\s*"
                     r"(?P<key>\d{1,3}(?:,\d{3})+|\d+)(?!\w|\.\d)")
ZH_KEY = {"seed": "种子", "batch": "批次大小|批次", "epoch": "第", "step": "第"}


def wrong_row(number: dict, other: dict, cell: dict) -> str | None:
    """Why a prose number bound to one row of a keyed table sits beside another row's key
    ("seed 2 reached 98.11%" bound to the "seed 1" row), or None: only where the cell prints
    several rows with the same key word, and the number's sentence names a key of that word
    (the nearest before it, else the nearest after it)."""
    match = ROW_KEY.match(other["line"])
    if not match:
        return None
    word = match.group("word").lower()
    keys = {m.group("key") for o in cell_numbers(cell)[0]
            if (m := ROW_KEY.match(o["line"])) and m.group("word").lower() == word}
    if len(keys) < 2:
        return None
    text = number["block"]["text"]
    lo, hi = sentence_of(text, number["start"], number["end"])
    names = rf"\b{word}s?" + (f"|{ZH_KEY[word]}" if word in ZH_KEY else "")
    said = []  # (distance, key) of the mentions not cut off from the number by , ; ( )
    mention = rf"(?:{names})[ \t\u00a0]*(\d{{1,3}}(?:,\d{{3}})+|\d+)(?!\w|\.\d)"
    for m in re.finditer(mention, text[lo:hi], re.I):
        start, end = lo + m.start(), lo + m.end()
        gap = text[end:number["start"]] if end <= number["start"] else text[number["end"]:start]
        if not re.search(r"[,;()，；（）]", gap):
            said.append((len(gap), m.group(1)))
    named = min(said)[1].replace(",", "") if said else None
    if named is None or named == match.group("key").replace(",", ""):
        return None
    if named not in {key.replace(",", "") for key in keys}:
        return None  # a key the table does not print: another table's, or a setting
    return (f"wrong row: bound to the {word} {match.group('key')} row of cell "
            f"{other['cell_id']} ({other['line'][:60]!r}), but the sentence names {word} "
            f"{named}")


def ambiguous_why(entry: dict) -> str:
    """Why a number the binder refused is unbound: the values it matches, none named by the
    words beside it."""
    shown = "; ".join(f"cell {at['cell']} {at['text'][:60]!r} (number {at['index']})"
                      for at in entry["ambiguous"])
    return ("ambiguous: it matches several printed values and no label word beside it names "
            f"one: {shown}; name its source in tests/prose_bindings.json with a pin (copy the "
            'candidate\'s locator as "at" and give "pin": your reason), or reword the prose '
            "so that a label word names it")


# --- comparisons: their direction against the bound values ------------------------------
GREATER = {"more", "higher", "larger", "bigger", "greater", "longer", "above", "over"}
SMALLER = {"less", "fewer", "lower", "smaller", "shorter", "below", "under"}
FAST = {"faster", "quicker"}
SLOW = {"slower"}
FALLS = (r"falls?|fell|drops?|dropped|decreases?|decreased|cuts?|reduces?|reduced|shrinks?|"
         r"shrank|goes down|went down|declines?|declined")
RISES = (r"rises?|rose|grows?|grew|increases?|increased|climbs?|climbed|goes up|went up")
FROM_TO = re.compile(rf"\b(?P<verb>{FALLS}|{RISES})\b[^\d.;:!?]{{0,70}}\bfrom(?:\s+about)?\s*$",
                     re.I)


RATIO_SLACK = math.log(1.1)  # a median of ratios is not the ratio of the medians: 10 %


def _family(unit: str | None) -> str | None:
    """Values of these units compare with each other: every time in seconds."""
    return "s" if unit in SECONDS else unit


def _faster_is_smaller(unit: str | None) -> bool | None:
    if unit in SECONDS:
        return True
    if unit and unit.endswith("/s"):
        return False
    return None


ZH_SENSE = {"更快": "faster", "较快": "faster", "更慢": "slower", "较慢": "slower",
            "更高": "higher", "更低": "lower", "更多": "more", "更少": "less", "更大": "larger",
            "更小": "smaller", "更长": "longer", "更短": "shorter"}
NAMED = re.compile(r"(?<![\d.,])[A-Za-z][\w.-]*\d[\w.-]*|\d[\w.-]*[A-Za-z][\w.-]*")
# A preposition of comparison whose object is the second number: "A, above the benchmark's
# target of B", "A per chip, just under the chip's B", "A，低于 B 的目标".
ABOVE = {"above", "exceeds", "exceeding", "over", "高于", "多于", "大于", "超过"}
PREPOSITION = re.compile(
    r"(?:(?:\b(?P<word>above|below|exceeds|exceeding)|\b(?:just|well|far|both|all|still|"
    r"slightly|only|even)\s+(?P<prep>under|over))\b[^\d;:.()（）]{0,40}"
    r"|(?P<zh>高于|低于|多于|少于|大于|小于|超过|不到)[^\d；;：:。（）()]{0,20})$")
NEGATED = re.compile(r"(?:\b(?:not|no|never)\b|不|没有|未)\s*(?:\w+\s*)?$")
ZH_BI = re.compile(r"比[^\d；;：:。（）()]{0,20}$")
ZH_BI_AFTER = re.compile(r"^[^\d；;：:。，,]{0,8}?(?:还|要|更)?(?P<word>[高低多少大小快慢长短])")
A_TO_B = re.compile(r"^\s*to(?:\s+about)?\s*$")
VERSUS = re.compile(r"^[\s,，]*(?:against|versus|vs\.?|compared with|compared to|对)\s*"
                    r"[^\d;:.。；：]{0,30}$")


def claims(text: str, numbers: list[dict]) -> list[tuple[int, int, str | None, str | None]]:
    """The pairs of measured numbers of one sentence, next to each other and of one unit, that
    the sentence compares, with the order it claims: (i, j, "<", ">" or None, the words):
    "A ... faster than B", "slower: A against B" (Chinese: 更慢：A 对 B), "falls from A to
    B"; "A against B" with no direction word gives None. Conservative by design."""
    found = []
    for i in range(len(numbers) - 1):
        a, b = numbers[i], numbers[i + 1]
        if sentence_of(text, a["start"], a["end"]) != sentence_of(text, b["start"], b["end"]):
            continue
        between = text[a["end"]:b["start"]]
        # a name with digits in it (v6e-8, float32) is a word here, not a number
        plain = NAMED.sub("X", between)
        than = re.match(r"^[^\d;]{0,120}?\b(\w+)\s+than\b[^\d;:.]{0,60}$", plain)
        than = than if than and not NEGATED.search(plain[:than.start(1)]) else None
        prep = PREPOSITION.search(plain)
        prep = prep if prep and not NEGATED.search(plain[:prep.start()]) else None
        zh = ZH_BI.search(plain)
        adjective = zh and ZH_BI_AFTER.match(text[b["end"]:b["end"] + 12])
        zh = zh if adjective and not NEGATED.search(plain[:zh.start()]) else None
        a_to_b = A_TO_B.match(between)
        if _family(a["unit"]) != _family(b["unit"]) or a["unit"] == "x" or a["unit"] is None and (
                a["kind"] != b["kind"] or not (than or prep or zh or a_to_b)):
            continue  # bare decimals only in a comparison ("more than", "above") or "A to B"
        lo = sentence_of(text, a["start"], a["end"])[0]
        lo = max([n["end"] for n in numbers[:i] if n["end"] >= lo], default=lo)
        before = text[lo:a["start"]]
        word, sense = None, None
        versus = VERSUS.match(between)
        if than:
            word = than.group(1).lower()
        elif versus:
            if any(n["end"] == lo for n in numbers[:i]):  # "ten times larger": that ratio's
                before = re.sub(r"^\s*[A-Za-z]+", "", before)
            said = [w for w in re.findall(r"[A-Za-z]+", before.lower())
                    if w in GREATER | SMALLER | FAST | SLOW]
            said += [ZH_SENSE[w] for w in re.findall("|".join(ZH_SENSE), before)]
            word = said[-1] if len(said) == 1 else None
            if word is None:
                found.append((i, i + 1, None, None))
                continue
        elif prep:  # "A, above the benchmark's target of B"; "A，低于 B 的目标"
            word = (prep.group("word") or prep.group("prep") or prep.group("zh")).lower()
            sense = ">" if word in ABOVE else "<"
        elif zh:  # "A，比 XLA 注意力的 B 少"
            word = adjective.group("word")
            if word in "快慢":
                faster_smaller = _faster_is_smaller(a["unit"])
                sense = None if faster_smaller is None else (
                    "<" if faster_smaller == (word == "快") else ">")
            else:
                sense = ">" if word in "高多大长" else "<"
        elif a_to_b and FROM_TO.search(before):
            verb = FROM_TO.search(before).group("verb").lower()
            sense = ">" if re.fullmatch(FALLS, verb) else "<"
            word = verb
        if sense is None and word is not None:
            if word in GREATER:
                sense = ">"
            elif word in SMALLER:
                sense = "<"
            elif word in FAST | SLOW and _faster_is_smaller(a["unit"]) is not None:
                smaller = _faster_is_smaller(a["unit"]) == (word in FAST)
                sense = "<" if smaller else ">"
        if sense:
            found.append((i, i + 1, sense, word))
        elif versus:
            found.append((i, i + 1, None, None))
    return found


def bound_value(number: dict, entry: dict | None, cells: dict) -> float | None:
    """The value a prose number is bound to, in its unit (times in seconds)."""
    if not entry or "at" not in entry:
        return None
    other, _ = locate(entry["at"], cells)
    if other is None:
        return None
    values = comparable_values(number, other, "code" in entry["at"])
    if not values:
        return None
    value = min(values, key=lambda v: abs(v - number["value"]))
    return value * SECONDS.get(number["unit"], 1.0)


def order_offenders(text: str, numbers: list[dict], entries: list, cells: dict) -> list[dict]:
    """The numbers whose sentence claims an order (or a ratio above one) that their bound
    values contradict."""
    offenders = []
    for i, j, sense, word in claims(text, numbers):
        a = bound_value(numbers[i], entries[i], cells)
        b = bound_value(numbers[j], entries[j], cells)
        if a is None or b is None or a <= 0 or b <= 0:
            continue
        # "1.45x the time: 2.63 ms against 1.82 ms": the ratio next to the pair is theirs
        span = sentence_of(text, numbers[i]["start"], numbers[i]["end"])
        ratios = [k for k in (i - 1, j + 1) if 0 <= k < len(numbers)
                  and numbers[k]["unit"] == "x" and span[0] <= numbers[k]["start"] < span[1]]
        ratio = bound_value(numbers[ratios[0]], entries[ratios[0]], cells) if len(
            ratios) == 1 else None
        if ratio and ratio > 0 and abs(abs(math.log(ratio)) - abs(math.log(a / b))) > RATIO_SLACK:
            offenders.append({**numbers[ratios[0]], "why": (
                f"{numbers[ratios[0]]['written']!r} is not the ratio of the two figures it "
                f"goes with, {numbers[i]['written']!r} and {numbers[j]['written']!r}, as bound "
                f"({a / b:.3g} or {b / a:.3g})")})
        if sense is None or a == b:
            continue
        if (a < b) != (sense == "<"):
            offenders.append({**numbers[i], "why": (
                f"the sentence says {numbers[i]['written']!r} is {word} than (or {sense}) "
                f"{numbers[j]['written']!r}, but the bound values are the other way round")})
    for k, number in enumerate(numbers):
        after = text[number["end"]:number["end"] + 30]
        if number["unit"] == "x" and number["kind"] == "ratio" and re.match(
                rf"\s*(?:{'|'.join(sorted(GREATER | SMALLER | FAST | SLOW))})\s+than\b", after):
            value = bound_value(number, entries[k], cells)
            if value is not None and value < 1:
                offenders.append({**number, "why": (
                    f"{number['written']!r} {after.split()[0]} than: a ratio that says more "
                    f"than one, bound to {value:.6g}, below one (an inverted ratio?)")})
    return offenders


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
        pairs = _pairs(numbers, entries)
        flagged = set()
        for number, entry in pairs:
            why = stale(number, entry, cells, allowed)
            if why and not (entry is None and is_allowed(number, allowed)):
                offenders.append({**number, "why": why})
                flagged.add(number["start"])
        # the order (and ratio) a comparison claims, against the bound values
        for block in {id(n["block"]): n["block"] for n in numbers}.values():
            mine = [(n, e) for n, e in pairs if n["block"] is block]
            offenders += [o for o in order_offenders(
                block["text"], [n for n, _ in mine], [e for _, e in mine], cells)
                if o["start"] not in flagged]
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
