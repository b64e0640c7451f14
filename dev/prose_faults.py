"""Measure the prose-number check on faults generated over every chapter's prose.

    python3 dev/prose_faults.py [--old COMMIT] [--json PATH] [NOTEBOOK ...]

For each chapter (default: every notebooks/*.ipynb) and its Chinese twin, this plants one
fault at a time in an in-memory copy of one markdown cell and asks two checkers whether
they see it: the binding check of dev/prose_numbers.py (against tests/prose_bindings.json)
and the line-label heuristic alone as it stood at COMMIT (default 6172b3e, the last commit
before the bindings; read with `git show`). A fault is caught when the checker reports a
number of the mutated chapter that it does not report for the chapter as it is.

Faults (every one makes a sentence false, or is skipped):
- swap-sentence: two measured numbers of one sentence, of different values, swapped (with
  their units);
- swap-paragraph: the same for two numbers in different sentences of one paragraph (at most
  the 3 nearest pairs per number);
- relabel: the label word nearest to a bound number (a word of its stretch of sentence that
  the bound cell's outputs print) replaced by a word that labels another line of the same
  cell's outputs and not the bound one;
- direction: a direction word of a bound number's stretch ("faster", "below", "not",
  更快, 低于) replaced by its opposite (a negation removed);
- replace: a bound number replaced by another number of the same unit printed by the same
  cell, written with the same decimals, where that changes it.
True variants (must pass): "reround", a bound number with two or more decimals rounded to
one decimal fewer from its bound value; "reword", a phrase without numbers, labels or
direction words put at the start of the sentence ("Here, ", 在这里，) or at its end
(", in this run" / "（本次运行）").

Prints the catch rate of each checker per kind and edition, the false alarms (true variants
flagged, and the committed prose's own offenders), and optionally writes every fault with
its verdicts to --json.

    python3 dev/prose_faults.py --rebind [--old COMMIT] [--json PATH] [NOTEBOOK ...]

measures the maintainer's workflow instead (issue 39, item 6): a false sentence is written,
bound afresh (`bind_notebook`, keeping the committed pins) and checked, by today's checker
and by the one at COMMIT (default HEAD; each with its own bindings and allow-list as they
stood), so only a binder that refuses it or a check of its comparison catches it. The
realistic classes (`realistic_faults`): neighbour-row (the figure of the line above or below
the bound one, same place on the line), wrong-label (the right figure beside a word of
another line), inverted-ratio (1/x, same decimals), unit-slip (ms for s, GiB for GB, MB for
MiB, a fraction with %, a percentage divided by 100), direction-flip (a comparative turned
round: faster -> slower, 更快 -> 更慢); true variants as above. A true variant that a coarser
rounding makes match several values is refused as ambiguous: counted apart.
"""

import copy
import importlib.util
import inspect
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dev"))
import prose_numbers as P  # noqa: E402

FAULTS = ("swap-sentence", "swap-paragraph", "relabel", "direction", "replace")
TRUE = ("reround", "reword")


def load_old(commit: str):
    """The prose-number checker as it stood at `commit`, as a module: dev/prose_numbers.py
    (tools/ before the maintenance tools moved to dev/) and, since it was split, the modules
    beside it that it imports (prose_read.py, prose_bind.py, ...), loaded from that commit
    too, apart from today's."""
    for where in ("dev", "tools"):  # tools/ before the maintenance tools moved to dev/
        shown = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{where}/prose_numbers.py"],
            capture_output=True, text=True)
        if shown.returncode == 0:
            break
    shown.check_returncode()
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "--name-only", f"{commit}:{where}"],
                            capture_output=True, text=True, check=True).stdout.split()
    siblings = [name[:-3] for name in listed if re.fullmatch(r"prose_\w+\.py", name)
                and name not in ("prose_numbers.py", "prose_faults.py")]
    folder = Path(tempfile.mkdtemp(prefix="old-prose-"))

    def write(name: str, text: str) -> Path:
        path = folder / name
        path.write_text(text.replace("ROOT = Path(__file__).resolve().parent.parent",
                                     f"ROOT = Path({str(ROOT)!r})"), encoding="utf-8")
        return path

    path = write("old_prose_numbers.py", shown.stdout)
    for name in siblings:
        write(f"{name}.py", subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{commit}:{where}/{name}.py"],
            capture_output=True, text=True, check=True).stdout)
    spec = importlib.util.spec_from_file_location("old_prose_numbers", path)
    module = importlib.util.module_from_spec(spec)
    today = {name: sys.modules.pop(name) for name in siblings if name in sys.modules}
    sys.path.insert(0, str(folder))
    try:  # the old modules import each other under today's names: only while loading
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        for name in siblings:
            sys.modules.pop(name, None)
        sys.modules.update(today)
    return module


def patch(module, name: str, new) -> None:
    """Replace a function of the checker wherever its code calls it: in `module`, and in each
    module its functions come from (since the split, prose_numbers re-exports the functions
    of prose_read.py, prose_match.py, ..., which call each other there)."""
    original = getattr(module, name)
    spaces = [vars(module)] + [value.__globals__ for value in vars(module).values()
                               if inspect.isfunction(value) and value.__globals__ is not globals()]
    for space in {id(space): space for space in spaces}.values():
        if space.get(name) is original:
            space[name] = new


ONLY = {"cell": None}  # while a mutant is checked: the one markdown cell it changed


def only_the_changed_cell(module) -> None:
    """Check only the mutated markdown cell: the others read as before (their scope depends
    on the headings and code cells, which no fault touches)."""
    original = module.blocks

    def blocks(notebook):
        found = original(notebook)
        return found if ONLY["cell"] is None else [b for b in found if b["cell"] == ONLY["cell"]]

    patch(module, "blocks", blocks)


def memoize_cell_numbers(module) -> None:
    """Parse each code cell's outputs once: a mutant shares its code cells with the chapter."""
    original, cache = module.cell_numbers, {}

    def cached(cell):
        key = id(cell)
        if key not in cache:
            cache[key] = (cell, original(cell))
        return cache[key][1]

    patch(module, "cell_numbers", cached)


# --- where things are in a cell's source --------------------------------------------------
def source_span(number: dict, start: int, end: int) -> tuple[int, int]:
    """A span of a number's block text as a span of its cell's markdown source."""
    where, offset = number["block"]["where"], number["block"]["offset"]
    return where[offset + start], where[offset + end]


def mutant(notebook: dict, cell_id: str, edits: list[tuple[int, int, str]]) -> dict:
    """A copy of the notebook (sharing its other cells) with edits to one cell's source."""
    result = dict(notebook)
    result["cells"] = list(notebook["cells"])
    for i, cell in enumerate(result["cells"]):
        if cell.get("id") == cell_id:
            source = P._text(cell["source"])
            for start, end, new in sorted(edits, reverse=True):
                source = source[:start] + new + source[end:]
            cell = copy.copy(cell)
            cell["source"] = source
            result["cells"][i] = cell
    return result


def same_value(a: dict, b: dict) -> bool:
    """Whether two prose numbers say the same (then swapping them is no fault): the same
    value and unit, or a fraction and its percentage (0.8 and 80%)."""
    tolerance = max(a["tolerance"], b["tolerance"])
    if a["unit"] == b["unit"]:
        return abs(a["value"] - b["value"]) <= tolerance
    for x, y in ((a, b), (b, a)):
        if x["unit"] == "%" and y["unit"] is None:
            return abs(x["value"] - 100 * y["value"]) <= max(x["tolerance"], 100 * y["tolerance"])
    return False


# --- the faults --------------------------------------------------------------------------
def faults(notebook: dict, name: str, edition: str, bindings: dict) -> list[dict]:
    """Every fault and true variant of a notebook's prose, each {"kind", "cell", "edits",
    "what"}."""
    cells = {cell.get("id"): cell for cell in notebook["cells"]}
    bound = bindings.get(name, {}).get(edition, {})
    found = []
    source_of = {cid: P._text(cell["source"]) for cid, cell in cells.items()}
    for cell_id, numbers in P._by_cell(P.prose_numbers(notebook)).items():
        entries = dict(enumerate(bound.get(cell_id, [])))
        text_of = source_of[cell_id]

        def written(number, text_of=text_of):
            return text_of[number["src"][0]:number["src"][1]]

        def place(number):
            text = number["block"]["text"]
            lo, _ = P.sentence_of(text, number["start"], number["end"])
            paragraph = len(re.findall(r"\n[ \t]*\n", text[:number["start"]]))
            return id(number["block"]), paragraph, lo

        # swaps
        for i, a in enumerate(numbers):
            for j in range(i + 1, len(numbers)):
                b = numbers[j]
                pa, pb = place(a), place(b)
                if pa[:2] != pb[:2] or same_value(a, b) or written(a) == written(b):
                    continue
                if pa[2] == pb[2]:
                    kind = "swap-sentence"
                else:
                    between = sum(1 for k in range(i + 1, j) if place(numbers[k])[:2] == pa[:2])
                    if between >= 3:
                        continue
                    kind = "swap-paragraph"
                found.append({"kind": kind, "cell": cell_id,
                              "what": f"{written(a)} <-> {written(b)}",
                              "edits": [(*a["src"], written(b)), (*b["src"], written(a))]})
        seen_direction = set()
        for k, number in enumerate(numbers):
            entry = entries.get(k) if len(entries) == len(numbers) else None
            text = number["block"]["text"]
            lo, hi = P.region(text, number, number["siblings"])
            at = (entry or {}).get("at")
            # direction flips
            for _word, start, end in P.direction_words(text, lo, hi):
                span = source_span(number, start, end)
                if span in seen_direction:
                    continue
                seen_direction.add(span)
                raw = text_of[span[0]:span[1]]
                opposite = (P.DIRECTIONS.get(raw.lower()) if raw.isascii()
                            else P.ZH_DIRECTIONS.get(raw, {"快": "慢", "慢": "快"}.get(raw)))
                if opposite is None:
                    continue
                if raw[:1].isupper():
                    opposite = opposite.capitalize()
                edits = [(*span, opposite)]
                if not opposite and raw.isascii():  # "not" removed: and one space
                    edits = [(span[0], span[1] + 1, "")] if text_of[span[1]:span[1] + 1] == " " \
                        else edits
                found.append({"kind": "direction", "cell": cell_id, "edits": edits,
                              "what": f"{raw} -> {opposite or '(removed)'}"})
            if not at or "code" in at or at["cell"] not in cells:
                continue
            located, _ = P.locate(at, cells)
            if located is None:
                continue
            code_cell = cells[at["cell"]]
            vocab = P.vocabulary(code_cell, False)
            # relabel: the nearest label word, by another cell's line label
            words = [w for w in P.context_words(text, lo, hi) if w[0] in vocab]
            if words:
                word, start, end = min(words, key=lambda w: min(abs(w[1] - number["end"]),
                                                                abs(number["start"] - w[2])))
                outputs = P.cell_numbers(code_cell)[0]
                mine = {w for w in located["labels"]}
                others = sorted({w for o in outputs if o["line"] != located["line"]
                                 for w in o["labels"]} - mine - {w for w, _, _ in words})
                others = [w for w in others if re.fullmatch(r"[a-z][a-z_.\-]{2,}", w)]
                if others:
                    new = others[(k * 7 + len(word)) % len(others)]
                    span = source_span(number, start, end)
                    raw = text_of[span[0]:span[1]]
                    if not raw.isascii():
                        chinese = [z for z, e in P.ZH_LABELS.items() if e == new]
                        new = chinese[0] if chinese else new
                    found.append({"kind": "relabel", "cell": cell_id, "edits": [(*span, new)],
                                  "what": f"{raw} -> {new} (by {written(number)})"})
            numeral = re.match(P.NUM, number["written"])
            values = P.comparable_values(number, located, False)
            if not numeral or not values:
                continue
            digits = P._decimals(numeral.group(0))
            start = number["src"][0]
            # replace: another number of the same unit from the same outputs
            outputs = P.cell_numbers(code_cell)[0]
            choices = []
            for other in outputs:
                if other is located:
                    continue
                for value in P.comparable_values(number, other, False):
                    new = P._format(value, numeral.group(0))
                    if abs(P._value(new) - number["value"]) > number["tolerance"] and \
                            not P.agrees({**number, "value": P._value(new)}, located, False, entry):
                        choices.append((abs(other["line_no"] - located["line_no"]), new))
                        break
            if choices:
                new = min(choices)[1]
                found.append({"kind": "replace", "cell": cell_id,
                              "edits": [(start, start + len(numeral.group(0)), new)],
                              "what": f"{written(number)} -> {new}"})
            # true variants
            new = f"{values[0]:.{max(digits - 1, 0)}f}"
            if digits >= 2 and not number.get("bound") and P._value(new) != 0:
                found.append({"kind": "reround", "cell": cell_id,
                              "edits": [(start, start + len(numeral.group(0)), new)],
                              "what": f"{written(number)} -> {new}"})
            sentence_start = next((i for i in range(lo, hi) if text[i].isalnum()), None)
            if sentence_start is not None and k == 0 or (
                    sentence_start is not None and place(numbers[k - 1])[2] != place(number)[2]):
                first = P.sentence_of(text, number["start"], number["end"])[0]
                first = next((i for i in range(first, hi) if text[i].isalnum()), None)
                if first is not None:
                    phrase = "Here, " if edition == "en" else "在这里，"
                    where = source_span(number, first, first)[0]
                    found.append({"kind": "reword", "cell": cell_id,
                                  "edits": [(where, where, phrase)],
                                  "what": f"{phrase!r} before the sentence of {written(number)}"})
            _, end = P.sentence_of(text, number["start"], number["end"])
            after = source_span(number, end, end)[0]
            phrase = ", in this run" if edition == "en" else "（本次运行）"
            found.append({"kind": "reword", "cell": cell_id, "edits": [(after, after, phrase)],
                          "what": f"{phrase!r} at the end of the sentence of {written(number)}"})
    return found


# --- realistic faults, written as a maintainer would and then bound (--rebind) -----------
REALISTIC = ("neighbour-row", "wrong-label", "inverted-ratio", "unit-slip", "direction-flip")
UNIT_SLIPS = {"ms": "s", "s": "ms", "µs": "ms", "us": "ms", "GB": "GiB", "GiB": "GB",
              "MB": "MiB", "MiB": "MB", "GB/s": "GiB/s", "秒": "毫秒", "毫秒": "秒"}
COMPARATIVES = {"faster", "slower", "higher", "lower", "more", "fewer", "less", "larger",
                "smaller", "bigger", "above", "below", "longer", "shorter", "better", "worse",
                "quicker"}
RATIO_LINE = re.compile(r"ratio|speed-?up|slowdown|\bx\b|/| as long| of the |times", re.I)


def realistic_faults(notebook: dict, name: str, edition: str, bindings: dict) -> list[dict]:
    """The realistic classes: a figure of the neighbouring row (line) of the bound output; the
    right figure beside another row's label; an inverted ratio (1/x); a unit slip (ms for s,
    GiB for GB, a fraction written as a percentage or a percentage divided by 100); a
    comparative flipped ("faster" -> "slower"). Each is planted in the prose and then bound
    afresh (the maintainer's workflow: write, --bind, check), so only a binder that refuses
    or a check of the comparison catches it. True variants (reround, reword) as in `faults`."""
    cells = {cell.get("id"): cell for cell in notebook["cells"]}
    bound = bindings.get(name, {}).get(edition, {})
    found = []
    for fault in faults(notebook, name, edition, bindings):  # their relabels and flips
        if fault["kind"] == "relabel":
            found.append({**fault, "kind": "wrong-label"})
        elif fault["kind"] == "direction":
            raw = fault["what"].split(" -> ")[0]
            if raw.lower() in COMPARATIVES or raw in P.ZH_DIRECTIONS and P.ZH_DIRECTIONS[raw]:
                found.append({**fault, "kind": "direction-flip"})
        elif fault["kind"] in TRUE:
            found.append(fault)
    for cell_id, numbers in P._by_cell(P.prose_numbers(notebook)).items():
        entries = bound.get(cell_id, [])
        source = P._text(cells[cell_id]["source"])
        for k, number in enumerate(numbers):
            entry = entries[k] if len(entries) == len(numbers) else None
            at = (entry or {}).get("at")
            numeral = re.match(P.NUM, number["written"])
            if not numeral or number.get("bound"):
                continue
            start, end = number["src"]
            was = source[start:end]
            digits = P._decimals(numeral.group(0))

            def plant(kind, new, start=start, end=end, was=was, cell_id=cell_id):
                if new and new != was:
                    found.append({"kind": kind, "cell": cell_id, "edits": [(start, end, new)],
                                  "what": f"{was} -> {new}"})
            # unit slip: the same digits, the unit of another scale
            unit = was[len(numeral.group(0)):].strip()
            if unit in UNIT_SLIPS:
                gap = was[len(numeral.group(0)):len(was) - len(unit)]
                plant("unit-slip", numeral.group(0) + gap + UNIT_SLIPS[unit])
            elif number["unit"] == "%" and was.endswith("%") and number["value"] > 1:
                plant("unit-slip", P._format(number["value"] / 100, "0." + "0" * (digits + 2))
                      + "%")
            elif number["kind"] == "decimal" and 0 < number["value"] < 1:
                plant("unit-slip", numeral.group(0) + "%")
            if not at or "code" in at or at["cell"] not in cells:
                continue
            located, _ = P.locate(at, cells)
            if located is None:
                continue
            value = next(iter(P.comparable_values(number, located, False)), None)
            # inverted ratio: 1/x, written with the same decimals
            if value and (number["unit"] == "x" or number["kind"] == "decimal" and
                          RATIO_LINE.search(located["line"])) and abs(value - 1) > 0.05:
                new = P._format(1 / value, numeral.group(0))
                if P._value(new) > 0 and abs(P._value(new) - number["value"]) > number["tolerance"]:
                    plant("inverted-ratio", new + was[len(numeral.group(0)):])
            # the neighbouring row: the number of the same place on the line above or below
            outputs = P.cell_numbers(cells[at["cell"]])[0]
            for step in (1, -1):
                row = [o for o in outputs if o["output"] == located["output"]
                       and o["line_no"] == located["line_no"] + step]
                row = [o for o in row if o["index"] == located["index"]] or row[:1]
                values = P.comparable_values(number, row[0], False) if row else []
                if values:
                    new = P._format(values[0], numeral.group(0))
                    if abs(P._value(new) - number["value"]) > number["tolerance"]:
                        plant("neighbour-row", new + was[len(numeral.group(0)):])
                        break
    return found


def rebind_offenders(module, notebook, name, edition, english, allowed, bindings):
    """The maintainer's workflow: bind the (mutated) notebook afresh, keeping the committed
    pins, then check it against those bindings."""
    committed = bindings.get(name, {})
    mine = allowed.get(name, {})
    if edition == "zh":
        hybrid = module.records(notebook, english)
        fresh = module.bind_notebook(hybrid, mine, committed.get("en"), committed.get("zh"))
    else:
        hybrid = notebook
        fresh = module.bind_notebook(notebook, mine, previous=committed.get("en"))
    return {(n["cell"], n["written"], n["why"]) for n in module.check_notebook(
        hybrid, name, edition, allowed, {name: {edition: fresh}})}


def editions(paths: list[Path]):
    """(name, edition, English notebook, that edition's notebook) for each chapter in paths
    and each of its editions that exists."""
    for path in paths:
        name = path.name
        english = json.loads((P.NOTEBOOK_DIR / name).read_text(encoding="utf-8"))
        for edition in ("en", "zh"):
            file = P.NOTEBOOK_DIR / name if edition == "en" else P.twin_path(name)
            if file.exists():
                yield name, edition, english, json.loads(file.read_text(encoding="utf-8"))


def measure_rebind(paths: list[Path], checkers: dict) -> tuple[dict, list[dict]]:
    """Each realistic fault, planted and bound afresh, checked by each checker: {label:
    (module, bindings, allowed)}. tally[(kind, edition)] = [n, caught by each checker...]."""
    tally, rows = {}, []
    _, now_bindings, _ = next(iter(checkers.values()))
    for name, edition, english, notebook in editions(paths):
        readable = P.records(notebook, english) if edition == "zh" else notebook
        baseline = {}
        for fault in realistic_faults(readable, name, edition, now_bindings):
            changed = mutant(notebook, fault["cell"], fault["edits"])
            ONLY["cell"] = fault["cell"]
            row = {"chapter": name, "edition": edition, "kind": fault["kind"],
                   "cell": fault["cell"], "what": fault["what"]}
            counts = tally.setdefault((fault["kind"], edition), [0] + [0] * len(checkers))
            counts[0] += 1
            for i, (label, (module, bindings, allowed)) in enumerate(checkers.items()):
                key = (label, fault["cell"])
                if key not in baseline:
                    baseline[key] = rebind_offenders(module, notebook, name, edition,
                                                     english, allowed, bindings)
                new = rebind_offenders(module, changed, name, edition, english, allowed,
                                       bindings) - baseline[key]
                row[label] = sorted(new)[0][2][:100] if new else None
                counts[i + 1] += bool(new)
            ONLY["cell"] = None
            rows.append(row)
    return tally, rows


def rebind_table(tally: dict, labels: list[str]) -> str:
    lines = [f"{'kind':16s} {'edition':8s} {'n':>5s} " + " ".join(f"{x[:18]:>18s}" for x in labels)]
    for kinds, title in ((REALISTIC, "realistic faults, planted then bound afresh"),
                         (TRUE, "true variants (flagged = false alarm)")):
        lines.append(f"-- {title}")
        total = {}
        for kind in kinds:
            for edition in ("en", "zh"):
                counts = tally.get((kind, edition))
                if not counts or not counts[0]:
                    continue
                sums = total.setdefault(edition, [0] * len(counts))
                for i, v in enumerate(counts):
                    sums[i] += v
                lines.append(f"{kind:16s} {edition:8s} {counts[0]:5d} " + " ".join(
                    f"{c:6d} {100 * c / counts[0]:9.1f}% " for c in counts[1:]))
        for edition, sums in total.items():
            lines.append(f"{'all':16s} {edition:8s} {sums[0]:5d} " + " ".join(
                f"{c:6d} {100 * c / sums[0]:9.1f}% " for c in sums[1:]))
    return "\n".join(lines)


# --- the checkers ---------------------------------------------------------------------
def new_offenders(notebook, name, edition, english, allowed, bindings):
    hybrid = P.records(notebook, english) if edition == "zh" else notebook
    return {(n["cell"], n["written"], n["why"])
            for n in P.check_notebook(hybrid, name, edition, allowed, bindings)}


def old_offenders(old, notebook, name, allowed):
    mine = allowed.get(name, {})
    return {(n["cell"], n["written"], n["why"]) for n in old.prose_numbers(notebook)
            if n["why"] and not old.is_allowed(n, mine)}


def measure(paths: list[Path], old) -> tuple[dict, list[dict], dict]:
    allowed, bindings = P.load_allowed(), P.load_bindings()
    tally, rows, baseline = {}, [], {}
    for name, edition, english, notebook in editions(paths):
        new_before = new_offenders(notebook, name, edition, english, allowed, bindings)
        old_before = old_offenders(old, notebook, name, allowed)
        baseline[f"{edition}/{name}"] = {"new": len(new_before), "old": len(old_before)}
        for fault in faults(P.records(notebook, english) if edition == "zh" else notebook,
                            name, edition, bindings):
            changed = mutant(notebook, fault["cell"], fault["edits"])
            ONLY["cell"] = fault["cell"]
            new = new_offenders(changed, name, edition, english, allowed, bindings) - new_before
            was = old_offenders(old, changed, name, allowed) - old_before
            ONLY["cell"] = None
            row = {"chapter": name, "edition": edition, "kind": fault["kind"],
                   "cell": fault["cell"], "what": fault["what"],
                   "new": sorted(new)[0][2][:100] if new else None,
                   "old": sorted(was)[0][2][:100] if was else None}
            rows.append(row)
            counts = tally.setdefault((fault["kind"], edition), [0, 0, 0])
            counts[0] += 1
            counts[1] += bool(new)
            counts[2] += bool(was)
    return tally, rows, baseline


def table(tally: dict) -> str:
    lines = [f"{'kind':16s} {'edition':8s} {'n':>5s} {'new caught':>12s} {'old caught':>12s}"]
    for kinds, label in ((FAULTS, "faults"), (TRUE, "true variants (flagged = false alarm)")):
        total = {"en": [0, 0, 0], "zh": [0, 0, 0]}
        lines.append(f"-- {label}")
        for kind in kinds:
            for edition in ("en", "zh"):
                n, new, old = tally.get((kind, edition), (0, 0, 0))
                for i, v in enumerate((n, new, old)):
                    total[edition][i] += v
                if n:
                    lines.append(f"{kind:16s} {edition:8s} {n:5d} {new:5d} {100 * new / n:5.1f}% "
                                 f"{old:5d} {100 * old / n:5.1f}%")
        for edition, (n, new, old) in total.items():
            if n:
                lines.append(f"{'all':16s} {edition:8s} {n:5d} {new:5d} {100 * new / n:5.1f}% "
                             f"{old:5d} {100 * old / n:5.1f}%")
    return "\n".join(lines)


def committed_file(commit: str, path: str) -> dict:
    """A JSON file of the repository as it stood at `commit`."""
    return json.loads(subprocess.run(["git", "-C", str(ROOT), "show", f"{commit}:{path}"],
                                     capture_output=True, text=True, check=True).stdout)


def main(argv: list[str]) -> int:
    commit, out, rebind = None, None, False
    while argv and argv[0] in ("--old", "--json", "--rebind"):
        if argv[0] == "--rebind":
            rebind, argv = True, argv[1:]
            continue
        if argv[0] == "--old":
            commit = argv[1]
        else:
            out = Path(argv[1])
        argv = argv[2:]
    paths = [Path(a) for a in argv] or sorted(P.NOTEBOOK_DIR.glob("*.ipynb"))
    if rebind:  # today's checker against the one at COMMIT (default HEAD), both binding afresh
        commit = commit or "HEAD"
        old = load_old(commit)
        for module in (P, old):
            memoize_cell_numbers(module)
            only_the_changed_cell(module)
        checkers = {
            "today": (P, P.load_bindings(), P.load_allowed()),
            f"at {commit}": (old, committed_file(commit, "tests/prose_bindings.json"),
                             committed_file(commit, "tests/prose_numbers_allowed.json")),
        }
        tally, rows = measure_rebind(paths, checkers)
        print(rebind_table(tally, list(checkers)))
        refused = sum(1 for row in rows if row["kind"] in TRUE and row["today"]
                      and row["today"].startswith("ambiguous"))
        flagged = sum(1 for row in rows if row["kind"] in TRUE and row["today"])
        print(f"of the {flagged} true variant(s) that today's checker flags, {refused} are "
              "refused as ambiguous (a coarser figure matches several values: a pin names it)")
        if out:
            out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n",
                           encoding="utf-8")
        return 0
    old = load_old(commit or "6172b3e")
    for module in (P, old):
        memoize_cell_numbers(module)
        only_the_changed_cell(module)
    tally, rows, baseline = measure(paths, old)
    print(table(tally))
    dirty = {k: v for k, v in baseline.items() if v["new"]}
    print(f"committed prose flagged by the binding check: {sum(v['new'] for v in dirty.values())} "
          f"number(s) {dirty or ''}")
    if out:
        out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
