"""Keep the prose honest: a number quoted in a chapter's text must come from the output it
describes, not merely from somewhere in the chapter.

    python3 tools/prose_numbers.py [NOTEBOOK ...]   (default: every notebooks/*.ipynb)

prints, per chapter, each checked number of the markdown prose that fails one of the rules
below and is not on the allow-list, with its cell id, the sentence and the reason, and exits
1 if there is any. Plain python3 (json and re only); tests/test_prose_numbers.py runs it on
every English chapter. It reads the Chinese twins as well (zh/notebooks/*.ipynb: the same
digits and units, a few Chinese units and label words), but the test does not run them.

1. What is checked. Only markdown cells. Fenced code, math, HTML, URLs and link targets
   are removed; a code span (`...`) is kept as a label (`jax.jit`) with its free-standing
   digits masked, so `lr = 0.5` is not a number. Checked are:
   - a decimal (3.5, 0.053), whatever follows it;
   - any number followed by %, a ratio sign (1.75x, 2 ×, "2.17 times", an integer with
     "times" only before faster/slower/more/... or "as"; "3 times" alone is a count), or a
     unit: time (ms, s, seconds, minutes, ...), size (MB, GiB, bytes, ...), speed (GFLOP/s,
     GB/s, examples/s, ...), count (epochs, steps) or percentage points;
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
   constant (NAME = 0.01, n_epochs=8) anywhere in the chapter; a hyper-parameter or a
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


def prose(markdown: str) -> str:
    """The markdown with code blocks, math, HTML, URLs and link targets replaced by spaces,
    and code spans by their text with the digits of numbers masked."""
    markdown = FENCE.sub(" ", markdown)
    markdown = CODE_SPAN.sub(_code_span_as_label, markdown)
    for pattern in (MATH, HTML, MYST_TARGET, LINK_TARGET, URL):
        markdown = pattern.sub(" ", markdown)
    return markdown


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
    "steps/s": "steps/s", "tokens/s": "tokens/s", "it/s": "it/s", "s/it": "s/it",
    "examples per second": "examples/s", "samples per second": "examples/s",
    "images per second": "examples/s", "steps per second": "steps/s",
}
# Counts: a bare number in the outputs or the code may stand for them.
COUNT_UNITS = {
    "epochs": "epochs", "epoch": "epochs", "steps": "steps", "percentage points": "points",
    "points": "points", "point": "points", "轮": "epochs", "步": "steps", "个百分点": "points",
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
    r"versions|release|v|ubuntu|debian|nbformat|pip|chapters?|sections?|parts?|§|figures?|"
    r"fig\.|tables?|eq\.|equations?|exercises?|>=|<=|==|~=|>|<|≥|≤|第)"
    r"[ \t\u00a0]*(?:\d+(?:\.\d+)*[ \t]*(?:,|and|or|to|–|-)[ \t]*)*$",
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
    "twenty": 20, "hundred": 100, "a": 1, "an": 1,
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
    for line in lines:
        for number in _line_numbers(line, header):
            number["line"] = line.strip()
            numbers.append(number)
    return numbers


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


TIME_NAME = r"timeout|seconds|_secs?$|_s$|delay|wait"  # a constant named so is in seconds


def cell_numbers(cell: dict) -> tuple[list[dict], list[dict]]:
    """(numbers of the cell's stored outputs, numbers written in its code)."""
    outputs = [n for output in cell.get("outputs", []) for n in text_numbers(_output_text(output))]
    code = []
    for line in _text(cell.get("source")).splitlines():
        for number in _line_numbers(line):
            number["line"] = "code"
            # A constant: NAME = 0.01, or a keyword's value, n_epochs=8; timeout=6 is in s.
            name = re.search(r"([A-Za-z_]\w*)\s*=\s*$", line[:number["start"]])
            number["constant"] = bool(name)
            if name and number["unit"] is None and re.search(TIME_NAME, name.group(1), re.I):
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
    bare = its_unit is None and named <= {"%", "x", "points", "epochs", "steps"}
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
    if unit in ("epochs", "steps"):
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
        text = prose(_text(cell.get("source")))
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
                           section[-1] if section else None))
    constants = [n for j in sorted(numbers) for n in numbers[j][1] if n["constant"]]
    result = []
    for i, cell_id, text, opens_cell, heading in pieces:
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
            "cell": cell_id, "text": text,
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
                if re.search(pattern, before):
                    number["bound"] = bound
            lo, hi = sentence_of(text, number["start"], number["end"])
            number["sentence"] = re.sub(r"\s+", " ", text[lo:hi]).strip()
            number["cell"] = block["cell"]
            number["why"] = verdict(text, number, numbers, block)
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


def check(path: Path, allowed: dict | None = None) -> list[dict]:
    """The prose numbers of a notebook that fail a rule and are not allowed."""
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
    lines = [f"{name}: {len(offenders)} prose number(s) not found with their unit and label"]
    for number in offenders:
        lines.append(f"  cell {number['cell']}: {number['written']!r}: {number['why']}")
        lines.append(f"      {number['sentence'][:200]}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    paths = [Path(arg) for arg in argv] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    allowed = load_allowed()
    failed = False
    for path in paths:
        offenders = check(path, allowed)
        if offenders:
            failed = True
            print(report(path.name, offenders))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
