"""The two editions compared cell by cell (#43).

zh/notebooks/NN.ipynb and notebooks/NN.ipynb pair their cells by id (tests/test_zh.py keeps
them paired), so a check can read an English cell and its Chinese twin side by side:

- Terms: when an English markdown cell (its prose: code spans, code blocks and link targets
  left out) or an English code cell's comments (a script's in one of its strings included)
  use a glossary term of TERMS, the twin contains the term's rendering, the one
  zh/book/glossary.md's 术语对照表 prescribes.
- Numbers, both ways: a number written in digits in an English markdown cell appears in its
  twin, and one in a Chinese cell appears in the English cell (same value: 1,040 = 1040;
  "1.04 billion" = "10.4 亿"), apart from the exceptions below.
- Comments inside strings (a script held in a Python string, as chapter 17's launcher
  writes) are comments too: the glossary's rejected renderings (test_zh_terms.py, the
  "少 N 倍" rule among them) are looked for in them as in markdown and ordinary comments.
  (`%%writefile` cells are Python after their first line; their comments are ordinary.)
- Those script comments are translated: zh_sync reads a multi-line string whose text
  parses as Python as a script, whose comments may be translated and whose code must match
  the English line for line (dev/zh_sync.py, same_code). Each comment of such a script in
  an English cell that holds words (test_zh.py's english_comments: markers such as `# noqa`
  and lone identifiers, paths or numbers are spared) has a twin on the same line of the
  same script in the zh cell, and that twin contains Chinese.
- LaTeX: an English word inside `\\text{}` in a Chinese markdown cell is prose left
  untranslated, unless the whole `\\text{}` is a name (an identifier with `_`, or one of
  TEXT_NAMES: subscripts and labels the formulas share with the English edition).
- The overview box: each zh chapter's box (the first ```{admonition} of the chapter) is
  titled 本章概览 and has the headings 本章内容, 准备工作, 耗时, in that order.

Exceptions to the term and number rules, each with its reason, are in
tests/zh_pairs_allowed.json; an entry that no longer matches anything fails too, so the list
only shrinks. Each rule has negative controls below taken from issue 43's original texts.
"""

import ast
import io
import json
import re
import sys
import tokenize
from decimal import Decimal

import pytest
from test_zh import english_comments
from test_zh_terms import (
    GLOSSARY,
    avoided_patterns,
    comments,
    hits,
    prose_only,
    split_glossary,
    table_rows,
)

from conftest import NOTEBOOK_DIR, ROOT, load, source

sys.path.insert(0, str(ROOT / "dev"))
import zh_sync  # noqa: E402  (the sync's reading of a script in a string)

ZH = ROOT / "zh"
ALLOWED_PATH = ROOT / "tests" / "zh_pairs_allowed.json"
CHAPTERS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))

# (the row of the glossary table: a piece of its English column, the English words that
# call for the term, the rendering: a piece of the row's 本书用法 column)
TERMS = [
    ("dispatch", r"\bdispatch(?:es|ed|ing|er)?\b", "分派"),
    ("token", r"\btokens?\b", "词元"),
    ("attention scores",
     r"\battention scores?\b|\bscore matrix\b"
     r"|\bscores(?= (?:path|traffic|and the|kept|in HBM|cost))"
     r"|(?<=the )scores\b(?! highest)|(?<=\$ )scores\b", "分数"),
    ("combiner (XLA)", r"\bcombiners?\b", "合并器"),
    ("pass (compiler)",
     r"\b(?:compiler(?:'s)?|reassociation|optimi[sz]ation) pass(?:es)?\b|\bhas a pass\b", "pass"),
    ("billion (parameters)", r"(?<![\w.])1B\b|\bbillion\b", "亿"),
    ("cost model", r"\bcost models?\b", "成本模型"),
    ("buffer donation", r"\bbuffer donation\b", "缓冲区捐赠"),
    ("arithmetic intensity", r"\barithmetic intensit(?:y|ies)\b", "算术强度"),
    ("mixed precision", r"\bmixed precision\b", "混合精度"),
    ("data parallelism", r"\bdata parallelism\b", "数据并行"),
    ("tensor parallelism", r"\btensor parallelism\b", "张量并行"),
    ("hyperparameter", r"\bhyper-?parameters?\b", "超参数"),
    ("validation set", r"\bvalidation sets?\b", "验证集"),
    ("tracer", r"\btracers?\b", "追踪器"),
    ("weak type", r"\bweak(?:ly)?[ -]typed?\b", "弱类型"),
    ("rematerialisation", r"\bremateriali[sz](?:e|es|ed|ing|ation)\b", "重计算"),
    ("troubleshooting", r"\btroubleshooting\b", "故障排查"),
    ("prefill", r"\bprefill\b", "预填充"),
]
TERM_PATTERNS = [(english, re.compile(trigger, re.I if english != "billion (parameters)" else 0),
                  rendering) for english, trigger, rendering in TERMS]

# LaTeX \text{} contents accepted as names: subscripts and labels in formulas.
TEXT_NAMES = {"limit", "inputs", "end", "peak", "in", "out", "char", "softmax", "attention",
              "norm", "MLP", "bytes", "round", "mean"}
OVERVIEW = ("本章概览", ["本章内容", "准备工作", "耗时"])


def allowed() -> dict:
    return json.loads(ALLOWED_PATH.read_text(encoding="utf-8"))


# --- reading the cells --------------------------------------------------------------------

def string_comments(code: str) -> str:
    """The comments of the Python scripts held in a code cell's multi-line string literals."""
    lines = ["" if line.lstrip()[:1] in "%!" else line for line in code.splitlines()]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return ""
    found = []
    for tok in tokens:
        if tok.type == tokenize.STRING and "\n" in tok.string:
            try:
                script = ast.literal_eval(tok.string)
            except (ValueError, SyntaxError):
                continue
            if isinstance(script, str):
                found.append(comments(script))
    return "\n".join(text for text in found if text)


def script_comment_lines(code: str) -> dict[tuple[int, int], str]:
    """{(which multi-line string of the cell, line of its script): comment} for each comment
    of a script held in a string, as zh_sync reads them (a string that is not Python has
    none)."""
    lines = ["" if line.lstrip()[:1] in "%!" else line for line in code.splitlines()]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    found = {}
    strings = [tok.string for tok in tokens if tok.type == tokenize.STRING and "\n" in tok.string]
    for number, token in enumerate(strings):
        script = zh_sync.script_of(token)
        for row, _, comment in (zh_sync.script_comments(script) or []) if script else []:
            found[number, row] = comment
    return found


def prose(text: str) -> str:
    """Markdown without code, link targets and inline math's commands (numbers kept)."""
    return prose_only(text)


def pairs(path):
    """(where, English cell, Chinese cell) for each cell id, in the English order."""
    twin = {cell.get("id"): cell for cell in load(ZH / "notebooks" / path.name)["cells"]}
    for cell in load(path)["cells"]:
        other = twin.get(cell.get("id"))
        if other is not None and other["cell_type"] == cell["cell_type"]:
            yield f"{path.name} id={cell.get('id')}", cell, other


# --- the term rule ------------------------------------------------------------------------

def term_problems(where: str, english: str, chinese: str) -> list[str]:
    """english: the text the English reader reads; chinese: the whole twin."""
    found = []
    for term, trigger, rendering in TERM_PATTERNS:
        match = trigger.search(english)
        if match and rendering not in chinese:
            found.append(f"{where} [{term}]: the English says {match.group(0)!r}, "
                         f"the twin lacks {rendering}")
    return found


def chapter_term_problems(path) -> list[str]:
    found = []
    for where, en, zh in pairs(path):
        if en["cell_type"] == "markdown":
            found += term_problems(where, prose(source(en)), source(zh))
        elif en["cell_type"] == "code":  # its comments, those of its scripts included
            zh_comments = comments(source(zh)) + "\n" + string_comments(source(zh))
            # only where the comments were translated (a cell without comments has none)
            if re.search(r"[\u4e00-\u9fff]", zh_comments):
                found += term_problems(f"{where} (comment)", comments(source(en)) + "\n"
                                       + string_comments(source(en)), zh_comments)
    return found


# --- comments of scripts in strings are translated -----------------------------------------

def script_comment_problems(where: str, english: str, chinese: str) -> list[str]:
    """english, chinese: the code of a cell and of its twin."""
    theirs = script_comment_lines(chinese)
    return [f"{where} (string {number}, line {row + 1}): {comment!r} became "
            f"{theirs.get((number, row), 'nothing')!r}"
            for (number, row), comment in script_comment_lines(english).items()
            if english_comments(comment)
            and not re.search(r"[\u4e00-\u9fff]", theirs.get((number, row), ""))]


def chapter_script_comment_problems(path) -> list[str]:
    return [problem for where, en, zh in pairs(path) if en["cell_type"] == "code"
            for problem in script_comment_problems(where, source(en), source(zh))]


# --- the number rule ----------------------------------------------------------------------

NUMBER = re.compile(
    r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:[eE]([-+]?\d+))?"
    r"(?:[\s-]*(billion|million|thousand|亿|万)|([kMB])(?![A-Za-z]))?")
SCALE = {"billion": 9, "亿": 8, "million": 6, "万": 4, "thousand": 3, "k": 3, "M": 6, "B": 9}
SMALL_CHINESE = {0: "零", 1: "一", 2: "二两双", 3: "三", 4: "四", 5: "五", 6: "六", 7: "七",
                 8: "八", 9: "九", 10: "十"}
SMALL_ENGLISH = {0: "zero", 1: "one|once|single|first", 2: "two|twice|both|second|double",
                 3: "three|third", 4: "four|fourth", 5: "five|fifth", 6: "six|sixth",
                 7: "seven|seventh", 8: "eight|eighth", 9: "nine|ninth", 10: "ten|tenth"}
SMALL_ENGLISH_WORDS = "zero one two three four five six seven eight nine ten".split()
MONTHS = "January February March April May June July August September October November December"


def numbers(text: str) -> list[tuple[str, Decimal]]:
    """(as written, value) for each number in digits; a scale word multiplies it."""
    found = []
    for match in NUMBER.finditer(text):
        value = Decimal(match.group(1).replace(",", "") + (match.group(2) or ""))
        if match.group(3):
            value = value.scaleb(int(match.group(3)))
        scale = match.group(4) or match.group(5)
        if scale:
            value = value.scaleb(SCALE[scale])
        found.append((match.group(0).strip(), value.normalize()))
    return found


def spelled(value: Decimal, other: str, other_is_chinese: bool) -> bool:
    """The exceptions: a count up to ten may be written in words (八个设备, eight devices), and
    a month in digits (8 月) is the other edition's month name (August)."""
    if value != value.to_integral_value() or not 0 <= value <= 12:
        return False
    number = int(value)
    if other_is_chinese:
        return number <= 10 and any(char in other for char in SMALL_CHINESE[number])
    if number <= 10 and re.search(rf"\b(?:{SMALL_ENGLISH[number]})\b", other, re.I):
        return True
    return number >= 1 and MONTHS.split()[number - 1] in other


SPELLED_TIMES = re.compile(r"\b(two|three|four|five|six|seven|eight|nine|ten) times\b", re.I)


def number_problems(where: str, english: str, chinese: str) -> list[str]:
    en_text, zh_text = prose(english), prose(chinese)
    found = []
    for match in SPELLED_TIMES.finditer(en_text):  # "three times too low": a number in words
        number = SMALL_ENGLISH_WORDS.index(match.group(1).lower())
        if str(number) not in zh_text and not any(c in zh_text for c in SMALL_CHINESE[number]):
            found.append(f"{where}: the English cell's {match.group(0)!r} is not in its twin")
    for text, other, name, other_is_chinese in ((en_text, zh_text, "English", True),
                                                (zh_text, en_text, "Chinese", False)):
        have = {value for _, value in numbers(other)}
        for written, value in numbers(text):
            if value not in have and not spelled(value, other, other_is_chinese):
                found.append(f"{where}: the {name} cell's {written!r} is not in its twin")
    return found


def chapter_number_problems(path) -> list[str]:
    return [problem for where, en, zh in pairs(path) if en["cell_type"] == "markdown"
            for problem in number_problems(where, source(en), source(zh))]


# --- \text{} and the overview box --------------------------------------------------------

def text_problems(where: str, markdown: str) -> list[str]:
    found = []
    for match in re.finditer(r"\\text\{([^{}]*)\}", markdown):
        content = match.group(1)
        if not re.search(r"[A-Za-z]{2,}", content):
            continue
        if content.strip() in TEXT_NAMES or re.fullmatch(r"\s*[A-Za-z]\w*(?:\\_\w+)+\s*", content):
            continue
        found.append(f"{where}: English inside {match.group(0)}")
    return found


def overview_problems(where: str, markdown: str) -> list[str]:
    title, headings = OVERVIEW
    box = re.search(r"```\{admonition\}([^\n]*)\n(.*?)\n```", markdown, re.S)
    if not box:
        return [f"{where}: no overview box"]
    found = []
    if box.group(1).strip() != title:
        found.append(f"{where}: the box is titled {box.group(1).strip()!r}, not {title}")
    bold = re.findall(r"\*\*([^*\n]+?)[：:]?\*\*", box.group(2))
    if bold != headings:
        found.append(f"{where}: the box's headings are {bold}, not {headings}")
    return found


def first_box(path) -> tuple[str, str]:
    for cell in load(path)["cells"]:
        if cell["cell_type"] == "markdown" and "```{admonition}" in source(cell):
            return f"{path.relative_to(ROOT)} id={cell.get('id')}", source(cell)
    return str(path.relative_to(ROOT)), ""


# --- the tests on the book ----------------------------------------------------------------

def without_allowed(found: list[str], rule: str) -> tuple[list[str], set[str]]:
    """(problems not on the allow-list, allow-list entries of this rule that matched)."""
    entries = allowed()[rule]
    used = {key for key in entries for problem in found if problem.startswith(key)}
    return [p for p in found if not any(p.startswith(key) for key in entries)], used


def test_the_terms_exist_in_the_glossary_table():
    _, section = split_glossary(GLOSSARY.read_text(encoding="utf-8"))
    rows = table_rows(section)
    for english, _, rendering in TERMS:
        assert any(english in row[0] and rendering in row[1] for row in rows), (
            f"zh/book/glossary.md's table has no row {english!r} prescribing {rendering}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_twin_uses_the_glossary_rendering(path):
    found, _ = without_allowed(chapter_term_problems(path), "terms")
    assert not found, "glossary terms without their rendering in the twin:\n" + "\n".join(found)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_the_numbers_appear_in_both_editions(path):
    found, _ = without_allowed(chapter_number_problems(path), "numbers")
    assert not found, "numbers in one edition only:\n" + "\n".join(found)


def test_every_allow_list_entry_is_still_needed():
    stale = []
    for rule, problems in (("terms", [p for path in CHAPTERS for p in chapter_term_problems(path)]),
                           ("numbers", [p for path in CHAPTERS
                                        for p in chapter_number_problems(path)])):
        _, used = without_allowed(problems, rule)
        stale += [f"{rule}: {key}" for key in allowed()[rule] if key not in used]
    assert not stale, "allow-list entries that match nothing (remove them):\n" + "\n".join(stale)


def test_comments_inside_strings_use_the_glossary():
    texts = []
    for path in sorted((ZH / "notebooks").glob("*.ipynb")):
        for cell in load(path)["cells"]:
            if cell["cell_type"] == "code":
                texts.append((f"{path.name} id={cell.get('id')} (string)",
                              string_comments(source(cell))))
    found = hits(avoided_patterns(), texts)
    assert not found, "rejected renderings in comments inside strings:\n" + "\n".join(found)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_comments_of_scripts_in_strings_are_translated(path):
    found = chapter_script_comment_problems(path)
    assert not found, "English comments in the zh twin's scripts:\n" + "\n".join(found)


@pytest.mark.parametrize("path", sorted((ZH / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_latex_text_is_translated(path):
    found = [problem for cell in load(path)["cells"] if cell["cell_type"] == "markdown"
             for problem in text_problems(f"{path.name} id={cell.get('id')}", source(cell))]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", sorted((ZH / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_the_overview_box_uses_the_book_headings(path):
    found = overview_problems(*first_box(path))
    assert not found, "\n".join(found)


# --- negative controls: issue 43's original texts ------------------------------------------

@pytest.mark.parametrize("english, chinese", [
    # ch18 (c18-retrace-text): dispatch as 派发
    ("JAX dispatches asynchronously: calling a jit-compiled step queues it",
     "JAX 是异步派发的：调用 jit 编译的训练步时，它把程序放进队列就立即返回"),
    # ch18 (c18-cost-md): token untranslated, attention scores as 得分
    ("each parameter takes part in one multiply-add per token in the forward pass",
     "矩阵中的每个参数，对每个 token 在前向传播中参与一次乘加"),
    ("plus attention's two products of $T \\times T$ scores, $4 B T^2 d$ per layer",
     "再加上注意力中 $T \\times T$ 得分的两次矩阵乘法，每层前向 $4 B T^2 d$"),
    # ch16 (c16-tp-after-md): the combiner as 合并遍
    ("which XLA's all-reduce combiner packed into a single tuple all-reduce",
     "XLA 的 all-reduce 合并遍把它们打包成了一次元组 all-reduce"),
    # ch16 (c16-robust-md): a pass translated as 遍
    ("as Megatron-LM does and XLA's reassociation pass would",
     "就像 Megatron-LM 的做法，也是 XLA 的重组遍会做到的"),
    # ch16 (c16-cost-md): 1B against 10 亿参数
    ("## A cost model for a 1B-parameter model on TPU", "## 1B 参数模型在 TPU 上的成本模型"),
])
def test_the_term_rule_catches_the_originals(english, chinese):
    assert term_problems("example", english, chinese)


@pytest.mark.parametrize("english, chinese", [
    ("JAX dispatches asynchronously", "JAX 是异步分派的"),
    ("one multiply-add per token", "每个词元一次乘加"),
    ("XLA's all-reduce combiner packed", "XLA 的 all-reduce 合并器把它们打包"),
    ("XLA's reassociation pass would", "XLA 的重结合（reassociation）pass 会做到的"),
    ("a cost model for a 1B-parameter model", "10 亿参数模型的成本模型"),
    ("the forward pass and one bfloat16 pass", "前向传播和一遍 bfloat16 运算"),
    ("10 class scores", "10 个类别得分"),
    ("the uniform distribution over the vocabulary, scores $\\ln 65$", "均匀分布得分是 $\\ln 65$"),
])
def test_the_term_rule_spares_the_renderings(english, chinese):
    assert not term_problems("example", english, chinese)


@pytest.mark.parametrize("english, chinese, flagged", [
    # c17-compare-md: "steps 0 to 99" once became 第一步到最后一步
    ("the losses of steps 0 to 99 are identical", "第一步到最后一步的损失完全相同", True),
    ("the losses of steps 0 to 99 are identical", "第 0 步到第 99 步的损失完全相同",
     False),
    # c17-how-md: "120 for standard ones" once became 标准 VM 则是两分钟
    ("30 seconds for Spot VMs, 120 for standard ones", "Spot 虚拟机 30 秒，标准 VM 则是两分钟",
     True),
    # c18-cost-md: "three times too low" once became 远远偏低 (a number the other way round)
    ("a formula without the backward pass would be three times too low", "算出的值会远远偏低",
     True),
    ("would be three times too low", "算出的值会偏低（只有正确值的三分之一）", False),
    # #33: a Chinese number that the English does not have
    ("validation accuracy is lower than test accuracy", "验证准确率比测试准确率低 1.8 个百分点",
     True),
    ("about 1.04 billion", "约 10.4 亿", False),
    ("a 1-billion-parameter model", "一个 10 亿参数的模型", False),
    ("8 devices and 1,024 rows", "八个设备和 1024 行", False),
    ("on the book's shared 2-core CPU", "在本书共享的双核 CPU 上", False),
    ("(August 2026)", "（2026 年 8 月）", False),
])
def test_the_number_rule(english, chinese, flagged):
    assert bool(number_problems("example", english, chinese)) == flagged


@pytest.mark.parametrize("markdown, flagged", [
    # c19-backward-md's original
    (r"$D_i = \sum_j P_{ij} dP_{ij} \text{ (per row)}$", True),
    (r"$D_i = \sum_j P_{ij} dP_{ij} \text{（每行）}$", False),
    (r"$\text{small\_layer}(x)$", False),
    (r"$t_\text{peak}$ and $\frac{\text{bytes}}{s}$", False),
    (r"$\text{time per step}$", True),
])
def test_the_text_rule(markdown, flagged):
    assert bool(text_problems("example", markdown)) == flagged


OVERVIEW_BOOK = ("```{admonition} 本章概览\n:class: tip\n**本章内容**：……\n\n"
                 "**准备工作**：……**耗时**：……\n```")
# ch18 and ch19's boxes before #43
OVERVIEW_18 = ("```{admonition} 本章内容\n:class: tip\n**你将学到**：……\n\n**你需要**：一颗 CPU"
               "……**本章耗时**：……\n```")


@pytest.mark.parametrize("markdown, flagged", [
    (OVERVIEW_BOOK, False), (OVERVIEW_18, True),
    (OVERVIEW_BOOK.replace("**耗时**", "**本章的耗时**"), True),
    ("# 第 1 章\n没有概览框", True),
])
def test_the_overview_rule(markdown, flagged):
    assert bool(overview_problems("example", markdown)) == flagged


@pytest.mark.parametrize("code, flagged", [
    # c19-hbm-text's original sentence, as a comment inside a script string
    ('SCRIPT = """\nx = 1  # 内核搬运 0.67 GB，少 6.4 倍。\n"""\n', True),
    ('SCRIPT = """\nx = 1  # 内核搬运的字节数只有前者的 1/6.4\n"""\n', False),
    ('SCRIPT = """\n# JAX 是异步派发的\n"""\n', True),
    ('x = "# 少 6.4 倍"  # a one-line string is not a script\n', False),
])
def test_the_glossary_rules_reach_comments_inside_strings(code, flagged):
    assert bool(hits(avoided_patterns(), [("example", string_comments(code))])) == flagged


def chapter_17_scripts():
    """(where, English code, Chinese code) of chapter 17's two script cells."""
    path = NOTEBOOK_DIR / "17_preemption.ipynb"
    return [(where, source(en), source(zh)) for where, en, zh in pairs(path)
            if en.get("id") in ("c17-script", "c17-sharded-script")]


def test_the_script_comment_rule_catches_the_english_original():
    """Issue 43: both script cells of chapter 17 kept their English comments in the zh twin
    (the twin was the English cell). Every comment with words is flagged, `# dropout` and
    the `# noqa` marker are not; and the same when a single comment is left in English."""
    cells = chapter_17_scripts()
    assert len(cells) == 2
    flagged = [problem for where, english, _ in cells
               for problem in script_comment_problems(where, english, english)]
    assert len(flagged) == 27, flagged
    assert not any("# dropout" in problem or "noqa" in problem for problem in flagged)
    where, english, chinese = cells[0]
    assert not script_comment_problems(where, english, chinese)
    line = "  # 每行只调用一次 write"
    assert chinese.count(line) == 1
    left = chinese.replace(line, "  # one write per line")
    assert zh_sync.same_code(english, left)  # a sync would keep it
    assert [p.split(": ", 1)[1] for p in script_comment_problems(where, english, left)] == [
        "'# one write per line' became '# one write per line'"]
    # the term rule reads the scripts' comments too: "token" in c17-sharded-script's
    where, english, chinese = cells[1]
    assert not term_problems(where, string_comments(english), string_comments(chinese))
    assert term_problems(where, string_comments(english),
                         string_comments(chinese.replace("随机词元流", "随机 token 流")))
    where, english, chinese = cells[0]
    # a translation moved to another line is no translation of this one
    moved = chinese.replace(line, "").replace("\nimport grain\n", "\nimport grain" + line + "\n")
    assert script_comment_problems(where, english, moved)


@pytest.mark.parametrize("english, chinese, flagged", [
    ('S = """\nx = 1  # the first step\n"""\n', 'S = """\nx = 1  # 第一步\n"""\n', False),
    ('S = """\nx = 1  # the first step\n"""\n', 'S = """\nx = 1  # the first step\n"""\n', True),
    ('S = """\nx = 1  # the first step\n"""\n', 'S = """\nx = 1\n"""\n', True),
    ('S = """\nx = 1  # logits\n"""\n', 'S = """\nx = 1  # logits\n"""\n', False),
    ('S = """\nsome words here # a note\n"""\n', 'S = """\nsome words here # a note\n"""\n',
     False),
])
def test_the_script_comment_rule(english, chinese, flagged):
    assert bool(script_comment_problems("example", english, chinese)) == flagged
