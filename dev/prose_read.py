"""Reading a chapter: its prose (markdown without code, math, HTML, URLs and link targets)
cut into blocks with their scope, the measured numbers of the prose, the numbers of the
outputs and the code, and the label and direction words around a number; where the two
editions' notebooks are. Rule 1 and what rules 2-4 read; the rules are in prose_numbers.py.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"

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
    "tokens per second": "tokens/s", "useful tokens per second": "tokens/s",
    "useful tokens/s": "tokens/s",  # chapter 20's serving counts only the requests' tokens
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
RANGE_JOIN = re.compile(rf"^{SPACE}*(?:–|—|-|to|and|or|到|至|和){SPACE}*$")
_LIST_OF_NUMBERS = r"[ \t\u00a0]*(?:\d+(?:\.\d+)*[ \t]*(?:,|and|or|to|–|-)[ \t]*)*$"
# After a library's name only a version-shaped number is its version: a bare number ("JAX
# 0.12", "Python 3.11"), not one with a unit, % or x ("torch 2.97 ms", "JAX 1.3x faster").
LIBRARY_BEFORE = re.compile(
    r"\b(?:python|jax|jaxlib|optax|flax|torch|torchvision|cuda|cudnn|libtpu|numpy|ubuntu|"
    r"debian|nbformat|pip)" + _LIST_OF_NUMBERS, re.I)
VERSION_BEFORE = re.compile(
    r"(?:version|"
    r"versions|release|chapters?|sections?|parts?|§|figures?|"
    r"fig\.|tables?|eq\.|equations?|exercises?|>=|<=|==|~=|>|<|≥|≤|第)"
    + _LIST_OF_NUMBERS +
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


# Integers without a unit that are read all the same, from 100 up: whole-number results
# ("12,940 device operations", "against 490", "1201 against 1186 ms" before its unit) and the
# settings and sizes the prose quotes ("batches of 500", "10,000 images", "width 2,048"),
# which bind to the code or its outputs like any other number. Not read: smaller integers
# (counts such as "3 seeds", "8 devices"), years, exit statuses, ports, issue numbers and
# the parts of a shape (784-512-512-10, 28 x 28).
NOT_A_RESULT_BEFORE = re.compile(
    r"(?:\b(?:status|port|code|signal|issues?|PR|pull|exit)|SIG\w*|#|端口|状态码?|退出码|"
    rf"[-‐→×/^]|\d{SPACE}*[-→×x*/]){SPACE}*$", re.I)
NOT_A_RESULT_AFTER = re.compile(rf"^{SPACE}*(?:[-‐→×/^]|[*x]{SPACE}*\d|B\b|\.\d|端口)")
# Chinese puts a rate's unit around the number: 每秒 32,349 个词元, 每秒的有用词元为 1845 个.
ZH_RATE_BEFORE = re.compile(r"每秒[^\d，。；：,;:]{0,10}$")
ZH_RATE_AFTER = re.compile(rf"^{SPACE}*(?:个|张)(?:有用的?)?(?:词元|样本|图像)?")


def measured_integer(text: str, m: re.Match) -> bool:
    """Whether a plain integer of the prose is a result to check (see above)."""
    value = _value(m.group("num"))
    if value < 100:
        return False
    if 1900 <= value <= 2100 and "," not in m.group("num"):
        return False  # a year
    before = text[max(0, m.start() - 12):m.start()]
    return not (NOT_A_RESULT_BEFORE.search(before) or NOT_A_RESULT_AFTER.match(text[m.end():]))


def measurements(text: str) -> list[dict]:
    """The checked numbers of a prose string (already passed through `prose`), in order.

    Each: {"written": "98.35%", "value": 98.35, "tolerance": 0.005, "kind": "pct"|"ratio"|
    "unit"|"decimal"|"whole"|"fraction", "unit": "ms" (canonical) or None, "start", "end"};
    "whole" is a plain integer that `measured_integer` reads as a result.
    """
    raw = []
    for m in TOKEN.finditer(text):
        if m.group("sci") is not None:
            continue
        before = text[max(0, m.start() - 40):m.start()]
        if VERSION_BEFORE.search(before) or VERSION_AFTER.match(text[m.end():m.end() + 20]):
            continue
        kind = next((k for k in ("pct", "ratio", "unit") if m.group(k)), None)
        counted = False
        zh_before, zh_after = ZH_RATE_BEFORE.search(before), ZH_RATE_AFTER.match(text[m.end():])
        if kind is None and zh_before and zh_after:
            words = zh_before.group(0) + zh_after.group(0)
            rate = "tokens/s" if "词元" in words else "examples/s"
            raw.append({"m": m, "num": m.group("num"), "kind": "unit", "unit": rate,
                        "suffix": " " + rate})
            continue
        if kind is None and LIBRARY_BEFORE.search(before):
            continue  # "JAX 0.12": a version
        unit = m.group("unit").strip(" \t\u00a0\u2009\u202f") if kind == "unit" else None
        integer = "." not in m.group("num")
        if kind == "unit" and integer and (
            unit in ("s", "h") and not m.group("unit")[0].isspace()  # "4s and 1s": digits
            or unit in ("points", "point")  # "101 points": samples, not percentage points
        ):
            kind, counted = None, True  # a count with its noun, not a result
        if kind == "pct" and re.match(r"100%\s*(?:minus|减去|-|−)", text[m.start():m.end() + 9]):
            kind = None  # "100% minus the accuracy": a definition
        if kind == "ratio" and "times" in m.group("ratio") and integer:
            if not re.match(rf"{SPACE}+(?:{COMPARATIVE})\b", text[m.end():m.end() + 20]):
                kind = None
        raw.append({"m": m, "num": m.group("num"), "kind": kind, "unit": unit,
                    "counted": counted})
    # A range's first end takes the unit of the second: 63–79%, 0.08 to 0.10 s.
    for first, second in zip(raw, raw[1:], strict=False):
        if first["kind"] is None and second["kind"] is not None:
            gap = text[first["m"].end():second["m"].start()]
            between = text[max(0, first["m"].start() - 9):first["m"].start()].lower()
            # "and" joins a range only after "between" (介于), or between two numbers with a
            # thousands separator, which are measurements ("medians of 36,143 and 720,992
            # images/s"), not counts ("4 and 1.3 ms" is not a range).
            listed = "and" in gap or "和" in gap
            if RANGE_JOIN.match(gap) and (not listed or "between" in between
                                          or "介于" in between or "," in first["num"]):
                first["kind"], first["unit"] = second["kind"], second["unit"]
                first["suffix"] = second["m"].group(0)[len(second["num"]):]
    # A range of two figures with thousands separators and no unit, "(range 617,765 to
    # 813,398)", is a pair of measurements too, not two counts.
    for first, second in zip(raw, raw[1:], strict=False):
        if first["kind"] is None and second["kind"] is None and "," in first["num"] \
                and "," in second["num"]:
            gap = text[first["m"].end():second["m"].start()]
            if RANGE_JOIN.match(gap) and not ("and" in gap or "和" in gap):
                first["kind"] = second["kind"] = "decimal"
    found = []
    for item in raw:
        num, kind = item["num"], item["kind"]
        if kind is None:
            whole = "." not in num
            if whole and (item.get("counted") or not measured_integer(text, item["m"])):
                continue  # a plain integer: a count or a setting, not a measurement
            kind = "whole" if whole else "decimal"
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
    rf"(?<![A-Za-z0-9_.,])(?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?(?!\d|,\d)|\d+(?:\.\d+)?|\.\d+)"
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


def _named_units(line: str, attached: set[tuple[int, int]]) -> set[str]:
    """Units named on a line but not written after a number: "seconds to 98%: 3.45"."""
    named = set()
    for m in re.finditer(rf"(?<![A-Za-z0-9_])(?:{UNIT})", line):
        in_parentheses = line[m.start() - 1:m.end() + 1] == f"({m.group(0)})"
        inside_a_number = any(start <= m.start() <= end for start, end in attached)
        if (m.group(0) not in AMBIGUOUS_UNITS or in_parentheses) and not inside_a_number:
            named.add(canonical(m.group(0)))
    return named


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
    named = set(header[1]) | _named_units(line, {(n["start"], n["end"]) for n in numbers})
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
        # its units, also where it has no number to name them on ("time (ms)   speedup")
        header = (words, first[0]["named_units"] if first else _named_units(lines[0], set()))
    numbers = []
    for line_no, line in enumerate(lines):
        for index, number in enumerate(_line_numbers(line, header)):
            number["line"] = line.strip()
            number["line_no"], number["index"] = line_no, index
            numbers.append(number)
    return numbers


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


UNDERSCORED = re.compile(r"(?<![\w.])\d{1,3}(?:_\d{3})+(?![\w.])")
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
        # Python's 10_001 is 10,001 (the same length, so every position stays)
        digits = UNDERSCORED.sub(lambda m: m.group(0).replace("_", ","), line)
        for index, number in enumerate(_line_numbers(digits)):
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

# --- sentences ------------------------------------------------------------------------
SENTENCE_END = re.compile(r"[.;!?](?=\s)|[。；！？]|\n")


def sentence_of(text: str, start: int, end: int) -> tuple[int, int]:
    """The bounds of the sentence around text[start:end]."""
    before = [m.end() for m in SENTENCE_END.finditer(text, 0, start)]
    after = SENTENCE_END.search(text, end)
    return (before[-1] if before else 0), (after.start() if after else len(text))


# --- the words of a number's stretch: labels and directions ---------------------------
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


# --- the two editions -------------------------------------------------------------------
ZH_NOTEBOOK_DIR = ROOT / "zh" / "notebooks"


def edition_of(path: Path) -> str:
    """"zh" for a notebook of zh/notebooks, else "en"."""
    path = Path(path).resolve()
    return "zh" if path.parent.name == "notebooks" and path.parent.parent.name == "zh" else "en"


def twin_path(path: Path) -> Path:
    return ZH_NOTEBOOK_DIR / Path(path).name


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
