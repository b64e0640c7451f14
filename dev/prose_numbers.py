"""Keep the prose honest: a number quoted in a chapter's text must come from the output it
describes, bound to it, not merely found somewhere in the chapter.

    python3 dev/prose_numbers.py [NOTEBOOK ...]        check (default: notebooks/*.ipynb;
                                                       zh/notebooks/X.ipynb: the twin)
    python3 dev/prose_numbers.py --bind [NOTEBOOK ...]     (re)write the bindings
    python3 dev/prose_numbers.py --rewrite [NOTEBOOK ...]  numbers from the bound outputs
    python3 dev/prose_numbers.py --heuristic [NOTEBOOK ...]  rules 1-5 alone

The workflow. An author who edits a chapter's prose (either edition) runs `--bind` on the
English notebook, which rebinds it and its Chinese twin, and reviews the diff of
tests/prose_bindings.json: each changed line is a number whose source, label or direction
words changed, and should be one the author meant to change. After a chapter is
re-executed, `--rewrite` on it writes each bound number of both editions as its bound
output now reads, rounded as the prose rounds it (a spelled-out number or a bound such as
"more than 3 s" it lists for a person to rewrite; the Chinese cells' translation stamps
follow when they were current), then the check shows what still needs a person: a
conclusion the new numbers no longer support is not something a tool can rewrite.
`--bind` is deterministic (the same tree gives the same file) and takes seconds.

The check prints, per chapter, each measured number of the markdown prose that disagrees
with its binding (rule 6), or has none and fails rules 1-4 and is not on the allow-list
(rule 5), with its cell id, the sentence and the reason, and exits 1 if there is any. Plain
python3 (json and re only); tests/test_prose_numbers.py runs it on every chapter, English
and Chinese (the same digits and units, a few Chinese units, label and direction words).
Rules 1-5 are the heuristic that proposes the bindings.

1. What is checked. Only markdown cells. Fenced code, math, HTML, URLs and link targets
   are removed; a code span (`...`) is kept as a label (`jax.jit`) with its free-standing
   digits masked, so `lr = 0.5` is not a number. Checked are:
   - a decimal (3.5, 0.053), whatever follows it;
   - any number followed by %, a ratio sign (1.75x, 2 ×, "2.17 times", an integer with
     "times" only before faster/slower/more/... or "as"; "3 times" alone is a count), or a
     unit: time (ms, s, seconds, minutes, ...), size (MB, GiB, bytes, ...), speed (GFLOP/s,
     GB/s, examples/s, ...), count (epochs, steps, rounds, runs: "in all 7 rounds") or
     percentage points;
   - spelled-out numbers that carry a comparison or a unit: a fraction followed by "of"
     ("a tenth of", "four fifths of"), "N-fold"/"sixfold", "twice"/"half"/"ten times" before
     a comparative ("twice as fast", "ten times shorter"), "three seconds", "ten steps";
     in Chinese X分之Y (五分之四) and N倍.
   Not checked: integers without a unit (layer sizes, "60,000 images", years, "batch 128",
   "three seeds", "chapter 7"), scientific notation (hyper-parameters), versions (after
   Python/JAX/..., ">=", or with two dots; Chinese "0.7 版"), numbers inside words
   (v5e, bfloat16, x86_64).
2. Where it must be found: the scope of a paragraph is its "##" section (from the "##"
   heading above it to the next "##" or "#" heading, "###" subsections included: a
   subsection often recalls a figure of the one before), plus, for the text that opens a
   markdown cell, the code cells right before that cell. Text under the "#" title only
   (the chapter's introduction), and a section without a code cell of its own (the
   summary), may quote the whole chapter. A number is found in the stored outputs of the
   scope's code cells (stream text, text/plain, text/html, text/markdown, errors;
   `# NBVAL_IGNORE_OUTPUT` cells included), rounded as the prose rounds it (within half a
   unit of its last digit; a spelled fraction n/d within a quarter of its value and
   1/(2d)); a bound ("more than a hundred times", "well under 1 %") by a number past it,
   printed with its unit. Or it is in the code: any literal of the scope's code, or a
   constant (NAME = 0.01, n_epochs=8, "rounds": 15) anywhere in the chapter; a hyper-parameter or a
   count such as "200 steps" needs no output.
3. With its unit: an output number's unit is the one written right after it ("3.34 ms",
   "1.500 epochs", "98%", "1.39x"), else a unit named elsewhere on its line or in its table's
   header line ("seconds to 98%: 3.45, 2.56", "fast step alone (ms): 9.64"; "s", "min",
   "steps" name a unit there only in parentheses). A prose time needs an output time
   (converted: 350 ms = 0.35 s); a size or speed the same unit; a percentage an output
   percentage or a printed fraction (0.9835 -> 98.35%; a whole number is a count); a ratio
   an "x" or a printed non-integer ("ten times" is not the 10 of a shape); percentage
   points "points" on the line; epochs/steps a bare number or the same unit; a bare decimal
   any number. From the code, a time, size, speed or ratio only with the same unit written
   after it (a comment saying "256 MB"; a constant named timeout/seconds is in seconds);
   a fraction also as its reciprocal ("a third of an epoch": CHUNKS_PER_EPOCH = 3).
4. With its label, so that swapped figures and a ratio quoted for the wrong comparison
   fail. The label of a prose number is the nearest word of its sentence, with no other
   number in between and at most MAX_GAP letters of other words (2 per punctuation mark),
   that tells apart the lines of the output cell(s) that printed the value: a word on some,
   not all, of that cell's numbers of a compatible unit (`torch.compile`, "mean", "peak",
   "throughput"; not "step" when every timing line says "per step"). Words after "per"
   (the unit) or "than" (the reference) are not labels; "average" reads as "mean" (平均
   too), "training" as "train". The output line that holds the value must carry the label,
   on each side of the number where there is one: every word of a line labels every number
   on it, except a statistic's name (mean, min, max, median, best, worst, total), which
   labels only the number right after it; the header line of a table (a first line without
   decimals) labels all of its rows. So "98.38% on average", one seed's accuracy, fails,
   "torch.compile took 2.97 ms" fails where 2.97 ms is printed on jax.jit's line, and
   "0.99 of the square-matmul peak" fails where 0.99 is printed as "step throughput /
   matmuls-alone throughput".
5. The allow-list, tests/prose_numbers_allowed.json, maps a notebook file name to
   {"<number as written, with its unit, one space: '96.7%', '16 GiB', 'a tenth'>": "<why
   it is a fact and not this run's measurement>"}; an entry also allows the same value
   and unit written otherwise ("24 hours" allows the Chinese "24 小时"). Facts only (cited
   figures, hardware specs, arithmetic on the data set); a number from another run is what
   this reports.
6. Bindings, tests/prose_bindings.json: {notebook: {"en"|"zh": {markdown cell id: [one
   entry per measured number of the cell, in order]}}}. An entry says where the number's
   value is: "at" {code cell id, output index, line index, the line's text with its numbers
   masked (#), the number's index on the line} (or, for a code literal, the masked code
   line), or "allowed" (the allow-list key), or "unbound" (why: the check fails). `--bind`
   takes the best source that rules 2-4 accept (the most label words of the number's stretch
   of sentence on the line, then the closest value; a number printed with that value before
   an allowed fact, before a code literal, before a number merely past a bound). The entry
   also records "labels", the words of the number's stretch of sentence (from the measured
   number before it to the one after it) that the bound cell prints, and "direction", the
   direction words of that stretch (faster/slower, above/below, more/fewer, beats/trails,
   not, ...; 更快/更慢, 高于/低于, 领先/落后, 不, ...). The check pairs a cell's numbers
   with its entries by order (if their counts differ, which fails by itself, by their
   units, to say which numbers are new), finds the bound
   number (the recorded line, else the same masked line nearest to it), and fails when
   - the prose no longer reads it, rounded as written (in the prose's unit, or as printed;
     a bound "more than X" is met by a number at or past X): two figures swapped, one
     replaced by another of the same output, a re-run's new value not yet rewritten;
   - a label or direction word of its stretch changed ("eager" for "jit", "faster" for
     "slower", a "not" added): the number now claims something else;
   - the binding points nowhere (the cell or its line is gone), or the number has none.
   The Chinese twin's numbers are bound to the English cell's entry with the same value
   (a fraction 五分之一 also to a ratio 5x), so both editions read the same records; the
   Chinese prose is checked against the English notebook's code cells.
"""

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
ALLOWED_PATH = ROOT / "tests" / "prose_numbers_allowed.json"

# --- removing what is not prose -------------------------------------------------------
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\\w])\$(?!\s)[^$\n]+?(?<![\s\\])\$|\\\(.+?\\\)|\\\[.+?\\\]",
                  re.S)
HTML = re.compile(r"<!--.*?-->|<[a-zA-Z/!][^<>]*>", re.S)
LINK_TARGET = re.compile(
    r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:.*$", re.M
)
URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
MYST_TARGET = re.compile(r"^\s*\([\w.:-]+\)=\s*$", re.M)


def _code_span_as_label(match: re.Match) -> str:
    """`jax.jit` stays as a label word; a free-standing number becomes D (`b1=0.8` -> b1=D)."""
    number = r"(?<![A-Za-z0-9_.])(?:\d+(?:\.\d+)*|\.\d+)"
    return " " + re.sub(number, "D", match.group(2).replace("\n", " ")) + " "


def _sub_tracked(pattern: re.Pattern, replace, text: str, where: list[int]):
    """pattern.sub(replace, text), and for each character of the result the offset in the
    original markdown it came from (`where` maps text to the markdown)."""
    pieces, places, last = [], [], 0
    for m in pattern.finditer(text):
        pieces.append(text[last:m.start()])
        places.extend(where[last:m.start()])
        new = replace(m) if callable(replace) else replace
        pieces.append(new)
        places.extend([where[m.start()]] * len(new))
        last = m.end()
    pieces.append(text[last:])
    places.extend(where[last:])
    return "".join(pieces), places


def prose_map(markdown: str) -> tuple[str, list[int]]:
    """`prose(markdown)`, and where each of its characters is in the markdown (plus one
    entry for the end), so that a tool can rewrite a number of the prose in the source."""
    text, where = markdown, list(range(len(markdown) + 1))
    text, where = _sub_tracked(FENCE, " ", text, where)
    text, where = _sub_tracked(CODE_SPAN, _code_span_as_label, text, where)
    for pattern in (MATH, HTML, MYST_TARGET, LINK_TARGET, URL):
        text, where = _sub_tracked(pattern, " ", text, where)
    return text, where


def prose(markdown: str) -> str:
    """The markdown with code blocks, math, HTML, URLs and link targets replaced by spaces,
    and code spans by their text with the digits of numbers masked."""
    return prose_map(markdown)[0]


# --- units ----------------------------------------------------------------------------
TIME_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
    "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0,
    "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "nanoseconds": 1e-9,
    "microseconds": 1e-6, "milliseconds": 1e-3,
    "秒": 1.0, "毫秒": 1e-3, "微秒": 1e-6, "分钟": 60.0, "小时": 3600.0,
}
# Other units, by the name they are compared under.
OTHER_UNITS = {
    "GFLOP/s": "GFLOP/s", "TFLOP/s": "TFLOP/s", "MFLOP/s": "MFLOP/s", "GFLOPS": "GFLOP/s",
    "TFLOPS": "TFLOP/s", "GFLOPs": "GFLOP/s", "TFLOPs": "TFLOP/s", "MFLOP": "MFLOP",
    "GFLOP": "GFLOP", "TFLOP": "TFLOP", "FLOPs": "FLOPs", "FLOP": "FLOPs", "GB/s": "GB/s",
    "MB/s": "MB/s",
    "TB/s": "TB/s", "MiB": "MiB", "GiB": "GiB", "KiB": "KiB", "TiB": "TiB", "MB": "MB",
    "GB": "GB", "kB": "kB", "KB": "kB", "TB": "TB", "bytes": "bytes",
    "examples/s": "examples/s", "samples/s": "examples/s", "images/s": "examples/s",
    "张/秒": "examples/s",  # the Chinese edition's images/s (#33)
    "steps/s": "steps/s", "tokens/s": "tokens/s", "it/s": "it/s", "s/it": "s/it",
    "examples per second": "examples/s", "samples per second": "examples/s",
    "images per second": "examples/s", "steps per second": "steps/s",
}
# Counts: a bare number in the outputs or the code may stand for them.
COUNT_UNITS = {
    "epochs": "epochs", "epoch": "epochs", "steps": "steps", "percentage points": "points",
    "points": "points", "point": "points", "轮": "epochs", "步": "steps", "个百分点": "points",
    "rounds": "rounds", "runs": "runs",
}
CJK_UNITS = {"秒", "毫秒", "微秒", "分钟", "小时", "轮", "步", "个百分点"}  # no word boundary
ALL_UNITS = {**{u: u for u in TIME_UNITS}, **OTHER_UNITS, **COUNT_UNITS}
UNITS = sorted(ALL_UNITS, key=len, reverse=True)
UNIT = "|".join(
    re.escape(unit) + ("" if unit in CJK_UNITS else r"(?![A-Za-z0-9_/])") for unit in UNITS
)


def canonical(unit: str | None) -> str | None:
    """The name a unit is compared under: 'seconds' -> 's', 'epoch' -> 'epochs', 'x', '%'."""
    if unit is None or unit in ("%", "x"):
        return unit
    unit = ALL_UNITS.get(unit, unit)
    if unit in TIME_UNITS:
        return {1e-9: "ns", 1e-6: "µs", 1e-3: "ms", 1.0: "s", 60.0: "min", 3600.0: "h"}[
            TIME_UNITS[unit]]
    return unit


SECONDS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0}

# --- the numbers of the prose ----------------------------------------------------------
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
COMPARATIVE = (r"faster|slower|more|fewer|less|larger|smaller|bigger|as|longer|shorter|higher|"
               r"lower|greater|quicker")
# "twice more" is two more times, not a ratio: twice and half need a stricter comparative.
STRICT_COMPARATIVE = r"as|faster|slower|larger|smaller|bigger|longer|shorter|higher|lower"
SPACE = r"[ \t\u00a0\u2009\u202f]"
SUFFIX = (
    rf"(?P<pct>{SPACE}?%)"
    rf"|(?P<ratio>[x×](?![A-Za-z0-9_×])(?!{SPACE}*\d)|{SPACE}×(?!{SPACE}*[\w(])"
    rf"|{SPACE}+times(?=\W|$)|{SPACE}*倍)"
    rf"|(?P<unit>{SPACE}*(?:{UNIT}))"
)
TOKEN = re.compile(
    rf"(?<![A-Za-z0-9_./])(?P<num>{NUM})(?![A-Za-z0-9_.]*\.\d)(?:[eE][-+]?\d+(?P<sci>))?"
    rf"(?:{SUFFIX})?"
)
RANGE_JOIN = re.compile(rf"^{SPACE}*(?:–|—|-|to|and|or|到|至){SPACE}*$")
VERSION_BEFORE = re.compile(
    r"(?:python|jax|jaxlib|optax|flax|torch|torchvision|cuda|cudnn|libtpu|numpy|version|"
    r"versions|release|ubuntu|debian|nbformat|pip|chapters?|sections?|parts?|§|figures?|"
    r"fig\.|tables?|eq\.|equations?|exercises?|>=|<=|==|~=|>|<|≥|≤|第)"
    r"[ \t\u00a0]*(?:\d+(?:\.\d+)*[ \t]*(?:,|and|or|to|–|-)[ \t]*)*$"
    # "v 0.4" is a version, but "v4, 197 TFLOP/s" (a TPU generation, then a figure) is not a
    # list of versions: after a bare v only the number itself.
    r"|\bv[ \t\u00a0]*$",
    re.I,
)
VERSION_AFTER = re.compile(
    rf"^{SPACE}*(?:(?:or|and){SPACE}+(?:newer|later|above|higher|older|earlier)\b"
    rf"|版|或更高|或更新|及以上|以上版本)"
)

# Spelled-out numbers.
SMALL = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14,
    "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90, "hundred": 100, "a": 1, "an": 1,
}
ORDINAL = {
    "half": 2, "halve": 2, "third": 3, "quarter": 4, "fourth": 4, "fifth": 5, "sixth": 6,
    "seventh": 7, "eighth": 8, "ninth": 9, "tenth": 10, "hundredth": 100, "thousandth": 1000,
}
_SMALL = "|".join(sorted(SMALL, key=len, reverse=True))
_ORDINAL = "|".join(sorted(ORDINAL, key=len, reverse=True))
SPELLED = re.compile(
    rf"\b(?P<frac>(?P<n>{_SMALL})[ -](?P<d>{_ORDINAL})s?)(?={SPACE}+of\b)"
    rf"|\b(?P<fold>(?P<fn>{_SMALL}|\d+)-?fold)\b"
    rf"|\b(?P<times>(?P<tn>{_SMALL}){SPACE}+times)(?={SPACE}+(?:{COMPARATIVE})\b)"
    rf"|\b(?P<twice>twice|half)(?={SPACE}+(?:{STRICT_COMPARATIVE})\b)"
    rf"|\b(?P<count>(?P<cn>{_SMALL})){SPACE}+(?P<cu>{UNIT})",
    re.I,
)
CJK_DIGITS = {"一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
              "九": 9, "十": 10, "百": 100}
CJK_SPELLED = re.compile(r"(?P<d>[一二三四五六七八九十百]+)分之(?P<n>[一二三四五六七八九十]+)"
                         r"|(?P<fn>[两二三四五六七八九十百]+)倍")


def _cjk(numeral: str) -> int:
    """十 -> 10, 十二 -> 12, 二十 -> 20, 五 -> 5."""
    if "十" in numeral:
        tens, _, ones = numeral.partition("十")
        return CJK_DIGITS.get(tens, 1) * 10 + CJK_DIGITS.get(ones, 0)
    return CJK_DIGITS.get(numeral, 0)


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def _half_unit(decimals: int) -> float:
    return 0.5 * 10 ** -decimals + 1e-9


def _fraction_tolerance(denominator: str | None, value: float) -> float:
    """A spelled fraction n/d stands for values within a quarter of it and within 1/(2d):
    "a tenth" is 0.075-0.125, "four fifths" 0.7-0.9, "half" 0.375-0.625."""
    d = ORDINAL.get((denominator or "").lower()) or _cjk(denominator or "") or 2
    return min(value / 4, 1 / (2 * d)) + 1e-9


def _spelled(text: str) -> list[dict]:
    """The spelled-out numbers that carry a comparison or a unit (rule 1)."""
    found = []
    for m in SPELLED.finditer(text):
        if m.group("frac"):
            value = SMALL[m.group("n").lower()] / ORDINAL[m.group("d").lower()]
            kind, unit = "fraction", None
            if re.match(r"\s+of\s+a\s+(?:percentage\s+)?point", text[m.end():]):
                kind, unit = "unit", "points"
        elif m.group("fold"):
            number = m.group("fn").lower()
            value, kind, unit = float(SMALL.get(number) or number), "ratio", "x"
        elif m.group("times"):
            value, kind, unit = float(SMALL[m.group("tn").lower()]), "ratio", "x"
        elif m.group("twice"):
            word = m.group("twice").lower()
            value, kind, unit = (2.0, "ratio", "x") if word == "twice" else (0.5, "fraction", None)
        else:
            if m.group("cn").lower() in ("a", "an") or canonical(m.group("cu")) == "points":
                continue  # "two points": geometry, not percentage points
            value, kind, unit = float(SMALL[m.group("cn").lower()]), "unit", m.group("cu")
        found.append({"written": m.group(0), "value": value, "kind": kind,
                      "unit": canonical(unit), "start": m.start(), "end": m.end(),
                      "tolerance": _fraction_tolerance(m.group("d"), value)
                      if m.group("frac") or kind == "fraction" else 0.5})
    for m in CJK_SPELLED.finditer(text):
        if text[:m.start()].endswith(("几个", "几")):
            continue  # 几个百分之一: "a few hundredths", no number
        if m.group("d"):
            value, kind = _cjk(m.group("n")) / max(_cjk(m.group("d")), 1), "fraction"
            unit = None
            if text[m.end():].lstrip().startswith(("个百分点", "百分点")):
                kind, unit = "unit", "points"
        elif re.search(r"[快慢大小多少高低长短][了出近约]{0,2}$", text[:m.start()][-3:]):
            value, kind, unit = float(_cjk(m.group("fn"))), "ratio", "x"  # 快十倍, 大了两倍
        else:
            continue  # 两倍的种子波动: "twice the seed spread", not a measured ratio
        found.append({"written": m.group(0), "value": value, "kind": kind, "unit": unit,
                      "start": m.start(), "end": m.end(),
                      "tolerance": _fraction_tolerance(m.group("d"), value)
                      if "分之" in m.group(0) else 0.5})
    return found


def measurements(text: str) -> list[dict]:
    """The checked numbers of a prose string (already passed through `prose`), in order.

    Each: {"written": "98.35%", "value": 98.35, "tolerance": 0.005, "kind": "pct"|"ratio"|
    "unit"|"decimal"|"fraction", "unit": "ms" (canonical) or None, "start", "end"}.
    """
    raw = []
    for m in TOKEN.finditer(text):
        if m.group("sci") is not None:
            continue
        before = text[max(0, m.start() - 40):m.start()]
        if VERSION_BEFORE.search(before) or VERSION_AFTER.match(text[m.end():m.end() + 20]):
            continue
        kind = next((k for k in ("pct", "ratio", "unit") if m.group(k)), None)
        unit = m.group("unit").strip(" \t\u00a0\u2009\u202f") if kind == "unit" else None
        integer = "." not in m.group("num")
        if kind == "unit" and integer and (
            unit in ("s", "h") and not m.group("unit")[0].isspace()  # "4s and 1s": digits
            or unit in ("points", "point")  # "101 points": samples, not percentage points
        ):
            kind = None
        if kind == "pct" and re.match(r"100%\s*(?:minus|减去|-|−)", text[m.start():m.end() + 9]):
            kind = None  # "100% minus the accuracy": a definition
        if kind == "ratio" and "times" in m.group("ratio") and integer:
            if not re.match(rf"{SPACE}+(?:{COMPARATIVE})\b", text[m.end():m.end() + 20]):
                kind = None
        raw.append({"m": m, "num": m.group("num"), "kind": kind, "unit": unit})
    # A range's first end takes the unit of the second: 63–79%, 0.08 to 0.10 s.
    for first, second in zip(raw, raw[1:], strict=False):
        if first["kind"] is None and second["kind"] is not None:
            gap = text[first["m"].end():second["m"].start()]
            between = text[max(0, first["m"].start() - 9):first["m"].start()].lower()
            if RANGE_JOIN.match(gap) and ("and" not in gap or "between" in between):
                first["kind"], first["unit"] = second["kind"], second["unit"]
                first["suffix"] = second["m"].group(0)[len(second["num"]):]
    found = []
    for item in raw:
        num, kind = item["num"], item["kind"]
        if kind is None:
            if "." not in num:
                continue  # a plain integer: a count, not a measurement
            kind = "decimal"
        suffix = item.get("suffix", item["m"].group(0)[len(num):])
        suffix = re.sub(rf"{SPACE}+", " ", suffix)
        unit = {"pct": "%", "ratio": "x"}.get(kind, canonical(item["unit"]))
        found.append({
            "written": num + suffix, "value": _value(num),
            "tolerance": _half_unit(_decimals(num)), "kind": kind, "unit": unit,
            "start": item["m"].start(), "end": item["m"].end(),
        })
    found += _spelled(text)
    return sorted(found, key=lambda number: number["start"])


# --- label words ----------------------------------------------------------------------
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:['’.\-/][A-Za-z_][A-Za-z0-9_]*)*")
STOPWORDS = set("""
a an the of in on at to for with by from as and or but not no nor is are was were be been
being has have had do does did it its it's this that these those their there than then so
such per each every all both any some one two three into over under after before about
against between within without while when where which who what how than up down out off
only also just more most less least much many very can could would should will may might
we you your our they them he she his her i me my us ran run runs took take takes took
gave give gives same other another here now again once still yet even this's twice half
four five six seven eight nine ten hundred thousand
""".split())
STATISTICS = {"mean", "min", "max", "median", "best", "worst", "total", "minimum", "maximum"}
SYNONYMS = {"training": "train", "average": "mean", "averaged": "mean", "averages": "mean",
            "minimum": "min", "maximum": "max", "平均": "mean", "中位数": "median",
            "最小": "min", "最大": "max", "种子": "seed", "基线": "baseline", "峰值": "peak",
            "吞吐量": "throughput"}
CJK_LABELS = re.compile("|".join(key for key in SYNONYMS if not key.isascii()))
UNIT_WORDS = {unit.lower() for unit in ALL_UNITS} | {"x", "%"}


def normalize(word: str) -> str | None:
    """A label word as compared: lower case, no possessive, no plural s; None if not one."""
    word = re.sub(r"['’]s$", "", word.lower())
    if word in UNIT_WORDS or word in STOPWORDS or len(word) < 2:
        return None
    word = SYNONYMS.get(word, word)
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    return word


def label_words(text: str) -> list[tuple[str, int, int]]:
    """(normalized word, start, end) for the label words of a text, in order."""
    words = []
    for m in WORD.finditer(text):
        word = normalize(m.group(0))
        if word:
            words.append((word, m.start(), m.end()))
    for m in CJK_LABELS.finditer(text):
        words.append((SYNONYMS[m.group(0)], m.start(), m.end()))
    return sorted(words, key=lambda item: item[1])


def _with_parts(word: str) -> set[str]:
    """An output word labels with its parts too: jax.jit -> jax.jit, jax, jit."""
    parts = {word}
    for part in re.split(r"[.\-/]", word):
        part = normalize(part)
        if part:
            parts.add(part)
    return parts


# --- the numbers of the outputs and the code ---------------------------------------------
OUT_TOKEN = re.compile(
    rf"(?<![A-Za-z0-9_.,])(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?(?![\d,])|\d+(?:\.\d+)?|\.\d+)"
    rf"(?![A-Za-z0-9_]*\.\d)"
    rf"(?:[eE][-+]?\d+)?(?P<suffix>{SPACE}?%|x(?![A-Za-z0-9_])|{SPACE}*(?:{UNIT}))?"
)


def _unit_of_suffix(suffix: str | None) -> str | None:
    if not suffix:
        return None
    suffix = suffix.strip(" \t\u00a0\u2009\u202f")
    return "%" if suffix == "%" else "x" if suffix == "x" else canonical(suffix)


# Words that name a unit only right after a number or in parentheses, "time (s)": "min 0.98"
# is a minimum, "seed 1 step 3" counts.
AMBIGUOUS_UNITS = {"s", "sec", "min", "mins", "h", "us", "step", "steps", "epoch", "epochs",
                   "bytes"}


def _line_numbers(line: str, header: tuple[set, set] = (set(), set())) -> list[dict]:
    """The numbers of one output (or code) line: value, unit, units named on the line, labels.

    `header` is (words, units) of the table header the line belongs to, if any.
    """
    numbers = []
    for m in OUT_TOKEN.finditer(line):
        try:
            value = _value(m.group(0)[:len(m.group(0)) - len(m.group("suffix") or "")])
        except ValueError:
            continue
        numbers.append({"value": value, "unit": _unit_of_suffix(m.group("suffix")),
                        "start": m.start(), "end": m.end(), "integer": "." not in m.group("num")})
        if "," in m.group("num"):  # 60,000 is 60000, but (512,784) is 512 and 784
            for part in m.group("num").split(","):
                numbers.append({"value": _value(part), "unit": None, "start": m.start(),
                                "end": m.end(), "integer": "." not in part})
    # Units named on the line but not written after a number: "seconds to 98%: 3.45".
    attached = {(n["start"], n["end"]) for n in numbers}
    named = set(header[1])
    for m in re.finditer(rf"(?<![A-Za-z0-9_])(?:{UNIT})", line):
        in_parentheses = line[m.start() - 1:m.end() + 1] == f"({m.group(0)})"
        inside_a_number = any(start <= m.start() <= end for start, end in attached)
        if (m.group(0) not in AMBIGUOUS_UNITS or in_parentheses) and not inside_a_number:
            named.add(canonical(m.group(0)))
    words = label_words(line)
    common = set(header[0])
    owned = {}  # statistic word -> the number right after it
    for word, _start, end in words:
        following = next((n for n in numbers if n["start"] >= end), None)
        if word in STATISTICS:
            if following is not None and re.fullmatch(r"[\s:=(]*", line[end:following["start"]]):
                owned.setdefault(id(following), set()).add(word)
            continue
        common |= _with_parts(word)
    for number in numbers:
        number["named_units"] = named
        number["labels"] = common | owned.get(id(number), set())
    return numbers


def _output_text(output: dict) -> str:
    parts = [_text(output.get("text"))]
    for mime in ("text/plain", "text/html", "text/markdown"):
        parts.append(_text(output.get("data", {}).get(mime)))
    if output.get("output_type") == "error":
        parts.append(output.get("ename", "") + ": " + output.get("evalue", ""))
    return "\n".join(part for part in parts if part)


def text_numbers(text: str) -> list[dict]:
    """The numbers of an output's text, line by line; a first line without decimals, of a
    longer text, is a table header whose words and units label every line."""
    lines = text.splitlines()
    header = (set(), set())
    if len(lines) > 1 and not re.search(r"\d\.\d", lines[0]):
        first = _line_numbers(lines[0])
        words = {w for word, _, _ in label_words(lines[0]) for w in _with_parts(word)}
        header = (words, first[0]["named_units"] if first else set())
    numbers = []
    for line_no, line in enumerate(lines):
        for index, number in enumerate(_line_numbers(line, header)):
            number["line"] = line.strip()
            number["line_no"], number["index"] = line_no, index
            numbers.append(number)
    return numbers


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


TIME_NAME = r"timeout|seconds|_secs?$|_s$|delay|wait"  # a constant named so is in seconds


def cell_numbers(cell: dict) -> tuple[list[dict], list[dict]]:
    """(numbers of the cell's stored outputs, numbers written in its code)."""
    outputs = []
    for output_no, output in enumerate(cell.get("outputs", [])):
        for number in text_numbers(_output_text(output)):
            number["output"], number["cell_id"] = output_no, cell.get("id")
            outputs.append(number)
    code = []
    for line_no, line in enumerate(_text(cell.get("source")).splitlines()):
        for index, number in enumerate(_line_numbers(line)):
            number["line"], number["code_line"] = "code", line.strip()
            number["line_no"], number["index"], number["cell_id"] = line_no, index, cell.get("id")
            # A constant: NAME = 0.01, a keyword's value, n_epochs=8, or a dict entry's,
            # "rounds": 15; timeout=6 is in s.
            name = re.search(r"([A-Za-z_]\w*)\s*=\s*$|[\"']([A-Za-z_]\w*)[\"']\s*:\s*$",
                             line[:number["start"]])
            number["constant"] = bool(name)
            if name and number["unit"] is None and re.search(
                    TIME_NAME, name.group(1) or name.group(2), re.I):
                number["unit"] = "s"
            code.append(number)
    return outputs, code


# --- matching -------------------------------------------------------------------------
def comparable_values(number: dict, other: dict, from_code: bool = False) -> list[float]:
    """The values of an output or code number to compare with a prose number, in the prose
    number's unit; [] where the units do not fit (rule 3)."""
    kind, unit = number["kind"], number["unit"]
    value, its_unit, named = other["value"], other["unit"], other.get("named_units", set())
    if kind == "decimal":
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


# --- sections -------------------------------------------------------------------------
SECTION_LEVEL = 2  # a "###" subsection quotes its whole "##" section
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+\S.*$", re.M)


def blocks(notebook: dict) -> list[dict]:
    """The markdown of a notebook cut at its headings, each block with its scope (rule 2):
    {"cell": id, "text": prose, "outputs": [numbers], "code": [numbers]}."""
    cells = notebook["cells"]
    numbers = {i: cell_numbers(cell) for i, cell in enumerate(cells) if cell["cell_type"] == "code"}
    levels, code_under = [], []  # per heading: its level, the code cells of its section
    open_headings, pieces = [], []  # the headings above the current cell, outermost first
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            for heading in open_headings:
                code_under[heading].append(i)
            continue
        text, where = prose_map(_text(cell.get("source")))
        cuts = [m.start() for m in HEADING.finditer(text)]
        for n, (start, end) in enumerate(zip([0, *cuts], [*cuts, len(text)], strict=True)):
            if n:  # a heading opens this block
                level = len(HEADING.match(text, start).group(1))
                while open_headings and levels[open_headings[-1]] >= level:
                    open_headings.pop()
                levels.append(level)
                code_under.append([])
                open_headings.append(len(levels) - 1)
            section = [h for h in open_headings if levels[h] <= SECTION_LEVEL]
            pieces.append((i, cell.get("id", "?"), text[start:end], n == 0,
                           section[-1] if section else None, start, where))
    constants = [n for j in sorted(numbers) for n in numbers[j][1] if n["constant"]]
    result = []
    for i, cell_id, text, opens_cell, heading, offset, where in pieces:
        scope = set(code_under[heading]) if heading is not None else set()
        if not scope:
            scope = set(numbers)  # no heading, or a section without code: the whole chapter
        if opens_cell:  # the code cells right before this markdown cell
            j = i - 1
            while j >= 0 and cells[j]["cell_type"] != "code":
                j -= 1
            while j >= 0 and cells[j]["cell_type"] == "code":
                scope.add(j)
                j -= 1
        for j in scope:
            for number in numbers[j][0]:
                number["cell"] = j
        result.append({
            "cell": cell_id, "text": text, "offset": offset, "where": where,
            "outputs": [n for j in sorted(scope) for n in numbers[j][0]],
            "code": [n for j in sorted(scope) for n in numbers[j][1]] + constants,
        })
    return result


# --- labels in the prose ----------------------------------------------------------------
SENTENCE_END = re.compile(r"[.;!?](?=\s)|[。；！？]|\n")
ANY_NUMBER = re.compile(rf"(?<![A-Za-z0-9_.])(?:{NUM})")


def sentence_of(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the sentence around text[start:end]."""
    before = [m.end() for m in SENTENCE_END.finditer(text, 0, start)]
    after = SENTENCE_END.search(text, end)
    return (before[-1] if before else 0), (after.start() if after else len(text))


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
            for bound, pattern in BOUNDS.items():
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


# --- bindings: where each prose number comes from ------------------------------------
BINDINGS_PATH = ROOT / "tests" / "prose_bindings.json"
ZH_NOTEBOOK_DIR = ROOT / "zh" / "notebooks"

# Words that give a comparison its direction, with the word that reverses it. A binding
# records those of its number's stretch of sentence, so a flipped one is stale.
DIRECTIONS = {
    "faster": "slower", "slower": "faster", "quicker": "slower", "higher": "lower",
    "lower": "higher", "above": "below", "below": "above", "more": "fewer", "fewer": "more",
    "less": "more", "larger": "smaller", "smaller": "larger", "bigger": "smaller",
    "longer": "shorter", "shorter": "longer", "better": "worse", "worse": "better",
    "beats": "trails", "trails": "beats", "beat": "trail", "trail": "beat", "ahead": "behind",
    "behind": "ahead", "increase": "decrease", "decrease": "increase",
    "increases": "decreases", "decreases": "increases", "speedup": "slowdown",
    "slowdown": "speedup", "over": "under", "under": "over", "up": "down", "down": "up",
    "fastest": "slowest", "slowest": "fastest", "highest": "lowest", "lowest": "highest",
    "largest": "smallest", "smallest": "largest", "best": "worst", "worst": "best",
    "most": "least", "least": "most", "gains": "loses", "loses": "gains", "wins": "loses",
    "exceeds": "misses", "misses": "exceeds", "not": "", "no": "", "never": "always",
    "always": "never", "within": "outside", "outside": "within",
}
ZH_DIRECTIONS = {
    "更快": "更慢", "更慢": "更快", "较快": "较慢", "较慢": "较快", "最快": "最慢",
    "最慢": "最快", "快了": "慢了", "慢了": "快了", "加速": "减速", "减速": "加速",
    "提高": "降低", "降低": "提高", "提升": "下降", "下降": "上升", "上升": "下降",
    "高于": "低于", "低于": "高于", "多于": "少于", "少于": "多于", "大于": "小于",
    "小于": "大于", "更高": "更低", "更低": "更高", "更多": "更少", "更少": "更多",
    "更大": "更小", "更小": "更大", "更长": "更短", "更短": "更长", "更好": "更差",
    "更差": "更好", "最高": "最低", "最低": "最高", "最多": "最少", "最少": "最多",
    "最好": "最差", "最差": "最好", "领先": "落后", "落后": "领先", "超过": "不到",
    "不到": "超过", "增加": "减少", "减少": "增加", "降到": "升到", "升到": "降到",
    "之内": "之外", "之外": "之内", "不": "", "没有": "有",
}
# Chinese words for labels that the (English) outputs print.
ZH_LABELS = {
    "训练": "train", "测试": "test", "验证": "validation", "准确率": "accuracy",
    "损失": "loss", "种子": "seed", "平均": "mean", "均值": "mean", "中位数": "median",
    "峰值": "peak", "基线": "baseline", "基准": "baseline", "编译": "compile",
    "权重": "weight", "误差": "error", "动量": "momentum", "内存": "memory",
    "批次": "batch", "预热": "warmup", "吞吐量": "throughput", "最小": "min", "最大": "max",
}
EN_DIRECTION = re.compile(r"\b(?:" + "|".join(sorted(DIRECTIONS, key=len, reverse=True))
                          + r")\b", re.I)
ZH_DIRECTION = re.compile("|".join(sorted(ZH_DIRECTIONS, key=len, reverse=True))
                          + r"|快(?!速)|慢")
ZH_LABEL = re.compile("|".join(sorted(ZH_LABELS, key=len, reverse=True)))


def edition_of(path: Path) -> str:
    """"zh" for a notebook of zh/notebooks, else "en"."""
    path = Path(path).resolve()
    return "zh" if path.parent.name == "notebooks" and path.parent.parent.name == "zh" else "en"


def region(text: str, number: dict, numbers: list[dict]) -> tuple[int, int]:
    """A prose number's stretch of its sentence: from the measured number before it (or the
    sentence's start) to the one after it (or the sentence's end)."""
    lo, hi = sentence_of(text, number["start"], number["end"])
    lo = max([n["end"] for n in numbers if lo <= n["start"] and n["end"] <= number["start"]],
             default=lo)
    hi = min([n["start"] for n in numbers if number["end"] <= n["start"] < hi], default=hi)
    return lo, hi


def context_words(text: str, lo: int, hi: int) -> list[tuple[str, int, int]]:
    """(label word, start, end) of text[lo:hi], the Chinese label words in English."""
    words = [(w, s + lo, e + lo) for w, s, e in label_words(text[lo:hi])]
    starts = {start for _, start, _ in words}
    words += [(ZH_LABELS[m.group(0)], m.start(), m.end())
              for m in ZH_LABEL.finditer(text, lo, hi) if m.start() not in starts]
    return sorted(words, key=lambda item: item[1])


def direction_words(text: str, lo: int, hi: int) -> list[tuple[str, int, int]]:
    """(direction word, start, end) of text[lo:hi]: "faster", "below", "not", 更快, 低于."""
    found = [(m.group(0).lower(), m.start(), m.end()) for m in EN_DIRECTION.finditer(text, lo, hi)]
    found += [(m.group(0), m.start(), m.end()) for m in ZH_DIRECTION.finditer(text, lo, hi)]
    return sorted(found, key=lambda item: item[1])


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
                entry.update({k: v for k, v in english[0][1].items() if k in ("at", "allowed")})
                if english[0][1].get("scale", 1.0) != scale_of(number):
                    entry["at_scale"] = english[0][1].get("scale", 1.0)
            elif ranked and (exact(number, *ranked[0]) and not ranked[0][1] or key is None):
                entry["at"] = locator(*ranked[0])  # printed; or only a bound, or the code
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


def records(notebook: dict, english: dict | None) -> dict:
    """The notebook whose code and outputs a Chinese twin's prose is read against: its own
    markdown, the English notebook's code cells (the same code, outputs and ids; only the
    comments are translated), so both editions read the same records."""
    if english is None:
        return notebook
    code = {cell.get("id"): cell for cell in english["cells"] if cell["cell_type"] == "code"}
    hybrid = dict(notebook)
    hybrid["cells"] = [code.get(cell.get("id"), cell) if cell["cell_type"] == "code" else cell
                       for cell in notebook["cells"]]
    return hybrid


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


def load_bindings(path: Path = BINDINGS_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


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


def twin_path(path: Path) -> Path:
    return ZH_NOTEBOOK_DIR / Path(path).name


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
            notes += rewrite_notebook(chinese, name, "zh", bindings)
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


def report(name: str, offenders: list[dict]) -> str:
    lines = [f"{name}: {len(offenders)} prose number(s) stale, unbound or not found"]
    for number in offenders:
        lines.append(f"  cell {number['cell']}: {number['written']!r}: {number['why']}")
        lines.append(f"      {number['sentence'][:200]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    mode = argv[0] if argv and argv[0] in ("--bind", "--rewrite", "--heuristic") else None
    args = argv[1:] if mode else argv
    paths = [Path(arg) for arg in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if mode == "--bind":
        bind(paths)
        print(f"bound the prose numbers of {len(paths)} chapter(s) in {BINDINGS_PATH}")
        return 0
    if mode == "--rewrite":
        for note in rewrite(paths):
            print(note)
        return 0
    allowed, bindings = load_allowed(), load_bindings()
    failed = False
    for path in paths:
        offenders = (heuristic_check(path, allowed) if mode == "--heuristic"
                     else check(path, allowed, bindings))
        if offenders:
            failed = True
            print(report(f"{edition_of(path)}/{path.name}", offenders))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
