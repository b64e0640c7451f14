"""Keep the prose honest: a measurement quoted in a chapter's text must be in its outputs.

    python3 tools/prose_numbers.py [NOTEBOOK ...]   (default: every notebooks/*.ipynb)

prints, per chapter, each measurement-looking number of the markdown prose that is neither
found in the chapter's stored outputs nor on the allow-list, with its cell id and some
context, and exits 1 if there is any. Plain python3 (json and re only); tests/
test_prose_numbers.py runs it on every English chapter.

Heuristics:
- Only markdown cells are read. Fenced code, code spans (`...`), math ($...$, $$...$$,
  \\(...\\), \\[...\\]), HTML tags and comments, link targets `](...)` / `<...>` and bare
  URLs are removed before scanning (a link's text is kept).
- A number is checked when it looks like a measurement: a decimal (3.5, 0.053); a number
  followed by % (98.35%); a ratio (1.75x, 1.75×, "2.17 times"; an integer with "times" only
  before faster/slower/more/fewer/less/larger/smaller/bigger/as, "3 times" is a count); or
  a number followed by a unit of time, size or speed (s, ms, µs, us, ns, seconds, minutes,
  min, hours, MB, MiB, GB, GiB, kB, KB, KiB, TB, MFLOP, GFLOP, TFLOP, GFLOP/s, TFLOP/s,
  GB/s, examples/s, samples/s, images/s, steps/s, it/s). Not checked: plain integers (layer
  sizes, "60,000 images", years, "200 steps"), scientific notation (1e-3: hyper-parameters),
  version numbers (after Python/JAX/jaxlib/optax/torch/torchvision/CUDA/cuDNN/libtpu/
  NumPy/version/v/>=/==, or with two dots like 0.7.2), numbers inside a word or an
  identifier (v5e, bfloat16, x86_64) and section/chapter/part/figure/table numbers.
- Ranges "63–79%", "1.5-2x", "0.08 to 0.10", "between 0.08 and 0.10": each end is checked,
  the first end taking the second's unit.
- Matching: every number token of the chapter's stored outputs (stream text, text/plain,
  text/html, text/markdown, error messages; outputs of `# NBVAL_IGNORE_OUTPUT` cells
  included) is collected, signs dropped. A prose number matches an output number if they
  differ by at most half a unit of the prose number's last digit (so "3.5 s" matches 3.47,
  "98.3%" matches 98.35 or 98.25). A percentage also matches an output fraction times 100
  (0.9835 -> 98.35%); a ratio matches the bare number (1.75x -> 1.75). A time in prose also
  matches an output in another time unit (350 ms <-> 0.35 s, 80 µs <-> 0.08 ms).
- The allow-list, tests/prose_numbers_allowed.json, maps a notebook file name to
  {"<number as written, with its unit, one space: '96.7%', '16 GiB', '0.01'>": "<why it is a
  fact and not this run's measurement>"}. Facts only (hyper-parameters, cited figures,
  hardware specs, mathematics); a number from another run is what this check reports.
"""

import bisect
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"
ALLOWED_PATH = ROOT / "tests" / "prose_numbers_allowed.json"

# --- removing what is not prose -------------------------------------------------------
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).+?(?<!`)\1(?!`)", re.S)
MATH = re.compile(r"\$\$.+?\$\$|(?<![\\\w])\$(?!\s)[^$\n]+?(?<![\s\\])\$|\\\(.+?\\\)|\\\[.+?\\\]",
                  re.S)
HTML = re.compile(r"<!--.*?-->|<[a-zA-Z/!][^<>]*>", re.S)
LINK_TARGET = re.compile(
    r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)|^\s*\[[^\]]+\]:.*$", re.M
)
URL = re.compile(r"\b(?:https?|ftp)://\S+|\bwww\.\S+")
MYST_TARGET = re.compile(r"^\s*\([\w.:-]+\)=\s*$", re.M)


def prose(markdown: str) -> str:
    """The markdown with code, math, HTML, URLs and link targets replaced by spaces."""
    for pattern in (FENCE, CODE_SPAN, MATH, HTML, MYST_TARGET, LINK_TARGET, URL):
        markdown = pattern.sub(" ", markdown)
    return markdown


# --- measurement-looking numbers ------------------------------------------------------
NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+"
TIME_UNITS = {
    "ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0,
    "second": 1.0, "seconds": 1.0, "min": 60.0, "mins": 60.0, "minute": 60.0,
    "minutes": 60.0, "h": 3600.0, "hour": 3600.0, "hours": 3600.0, "nanoseconds": 1e-9,
    "microseconds": 1e-6, "milliseconds": 1e-3,
}
OTHER_UNITS = [
    "GFLOP/s", "TFLOP/s", "MFLOP/s", "GFLOPS", "TFLOPS", "GFLOPs", "TFLOPs", "MFLOP", "GFLOP",
    "TFLOP", "FLOPs", "GB/s", "MB/s", "TB/s", "MiB", "GiB", "KiB", "TiB", "MB", "GB", "kB", "KB",
    "TB", "bytes", "examples/s", "samples/s", "images/s", "steps/s", "tokens/s", "it/s",
    "examples per second", "samples per second", "images per second", "steps per second",
]
UNITS = sorted(OTHER_UNITS + list(TIME_UNITS), key=len, reverse=True)
UNIT = "|".join(re.escape(unit) for unit in UNITS)
COMPARATIVE = r"faster|slower|more|fewer|less|larger|smaller|bigger|as|longer|shorter|higher|lower"
SPACE = r"[ \t\u00a0\u2009\u202f]"
# suffix: %, ratio, unit (longest first), each ending at a word boundary.
SUFFIX = (
    rf"(?P<pct>{SPACE}?%)"
    rf"|(?P<ratio>[x×](?![\w×])(?!{SPACE}*\d)|{SPACE}×(?!{SPACE}*[\w(])|{SPACE}+times(?=\W|$))"
    rf"|(?P<unit>{SPACE}*(?:{UNIT})(?![\w/]))"
)
TOKEN = re.compile(
    rf"(?<![\w./])(?P<num>{NUM})(?![\w.]*\.\d)(?:[eE][-+]?\d+(?P<sci>))?(?:{SUFFIX})?"
)
RANGE_JOIN = re.compile(rf"^{SPACE}*(?:–|—|-|to|and|or){SPACE}*$")
VERSION_BEFORE = re.compile(
    r"(?:python|jax|jaxlib|optax|flax|torch|torchvision|cuda|cudnn|libtpu|numpy|version|"
    r"versions|release|v|ubuntu|debian|nbformat|pip|chapters?|sections?|parts?|§|figures?|"
    r"fig\.|tables?|eq\.|equations?|exercises?|>=|<=|==|~=|>|<|≥|≤)"
    r"[ \t\u00a0]*(?:\d+(?:\.\d+)*[ \t]*(?:,|and|or|to|–|-)[ \t]*)*$",
    re.I,
)


VERSION_AFTER = re.compile(
    rf"^{SPACE}*(?:or|and){SPACE}+(?:newer|later|above|higher|older|earlier)\b"
)


def _decimals(number: str) -> int:
    return len(number.split(".")[1]) if "." in number else 0


def _value(number: str) -> float:
    return float(number.replace(",", ""))


def measurements(text: str) -> list[dict]:
    """Measurement-looking numbers of a prose string (already passed through `prose`).

    Each: {"written": "98.35%", "value": 98.35, "decimals": 2, "kind": "pct"|"ratio"|
    "unit"|"decimal", "unit": "ms" or None, "start": offset}.
    """
    raw = []
    for m in TOKEN.finditer(text):
        if m.group("sci") is not None:
            continue
        num = m.group("num")
        before = text[max(0, m.start() - 40):m.start()]
        if VERSION_BEFORE.search(before) or VERSION_AFTER.match(text[m.end():m.end() + 20]):
            continue
        kind = next((k for k in ("pct", "ratio", "unit") if m.group(k)), None)
        unit = m.group("unit").strip(" \t\u00a0\u2009\u202f") if kind == "unit" else None
        if kind == "ratio" and "times" in m.group("ratio") and "." not in num:
            after = text[m.end():m.end() + 20]
            if not re.match(rf"{SPACE}+(?:{COMPARATIVE})\b", after):
                kind = None
        raw.append({"m": m, "num": num, "kind": kind, "unit": unit})
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
                continue
            kind = "decimal"
        suffix = item.get("suffix", item["m"].group(0)[len(num):])
        suffix = re.sub(rf"{SPACE}+", " ", suffix)
        found.append({
            "written": num + suffix,
            "value": _value(num),
            "decimals": _decimals(num),
            "kind": kind,
            "unit": item["unit"],
            "start": item["m"].start(),
        })
    return found


# --- the outputs ----------------------------------------------------------------------
OUTPUT_NUM = re.compile(r"\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?")


def _text(value) -> str:
    return "".join(value) if isinstance(value, list) else (value or "")


def output_texts(notebook: dict) -> list[str]:
    texts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []) if cell["cell_type"] == "code" else []:
            texts.append(_text(output.get("text")))
            for mime in ("text/plain", "text/html", "text/markdown"):
                texts.append(_text(output.get("data", {}).get(mime)))
            if output.get("output_type") == "error":
                texts.append(output.get("ename", "") + " " + output.get("evalue", ""))
    return texts


def output_numbers(notebook: dict) -> list[float]:
    """Every number in the stored outputs, sorted; 60,000 counts as 60000 and as 60, 0."""
    values = set()
    for text in output_texts(notebook):
        for m in OUTPUT_NUM.finditer(text):
            try:
                values.add(float(m.group(0)))
            except ValueError:
                pass
        for m in re.finditer(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", text):
            values.add(_value(m.group(0)))
    return sorted(values)


def _near(values: list[float], target: float, tolerance: float) -> bool:
    i = bisect.bisect_left(values, target - tolerance)
    return i < len(values) and values[i] <= target + tolerance


def matches(number: dict, values: list[float]) -> bool:
    """Whether a prose number (from `measurements`) is one of the output numbers, rounded."""
    value = number["value"]
    half = 0.5 * 10 ** -number["decimals"] + 1e-9
    if _near(values, value, half):
        return True
    if number["kind"] == "pct" and _near(values, value / 100, half / 100):
        return True
    if number["unit"] in TIME_UNITS:
        scale = TIME_UNITS[number["unit"]]
        for other in {1e-9, 1e-6, 1e-3, 1.0, 60.0} - {scale}:
            factor = scale / other  # the prose value in the other unit
            if _near(values, value * factor, half * factor):
                return True
    return False


# --- a chapter ------------------------------------------------------------------------
def load_allowed(path: Path = ALLOWED_PATH) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def prose_numbers(notebook: dict) -> list[dict]:
    """Every measurement-looking prose number, with its cell id and some context."""
    found = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        text = prose(_text(cell.get("source")))
        for number in measurements(text):
            start = number["start"]
            context = text[max(0, start - 30):start + 30]
            number["context"] = re.sub(r"\s+", " ", context).strip()
            number["cell"] = cell.get("id", "?")
            found.append(number)
    return found


def check(path: Path, allowed: dict | None = None) -> list[dict]:
    """The prose numbers of a notebook neither in its stored outputs nor allowed."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    allowed = (load_allowed() if allowed is None else allowed).get(Path(path).name, {})
    values = output_numbers(notebook)
    return [
        number for number in prose_numbers(notebook)
        if number["written"] not in allowed and not matches(number, values)
    ]


def unused_allowed(path: Path, allowed: dict | None = None) -> list[str]:
    """Allow-list entries of a notebook that no longer occur in its prose."""
    notebook = json.loads(Path(path).read_text(encoding="utf-8"))
    allowed = (load_allowed() if allowed is None else allowed).get(Path(path).name, {})
    written = {number["written"] for number in prose_numbers(notebook)}
    return [key for key in allowed if key not in written]


def report(name: str, offenders: list[dict]) -> str:
    lines = [f"{name}: {len(offenders)} prose number(s) not in the stored outputs"]
    for number in offenders:
        lines.append(f"  cell {number['cell']}: {number['written']!r:12} ...{number['context']}...")
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
