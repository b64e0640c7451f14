"""The Chinese edition uses one terminology: the glossary's table is the single source.

zh/book/glossary.md ends with a section 术语对照表, a markdown table with the columns
English | 本书用法 | 不用的写法. Every code span (`...`) in the last column is a Python
regular expression for a rendering the book does not use: most are plain text (`即时执行`),
a few use lookarounds (`单元(?!格)`); none contains `|`, which would split the table cell.
This test scans every zh/book/*.md page, and the markdown cells and code comments of every
zh/notebooks/*.ipynb, for those patterns; the table's own section is left out. A hit names
the file, the cell id and the text around it.
"""

import io
import re
import tokenize

import pytest

from conftest import ROOT, load, source

ZH = ROOT / "zh"
GLOSSARY = ZH / "book" / "glossary.md"
SECTION = "## 术语对照表"
COLUMNS = ["English", "本书用法", "不用的写法"]


def split_glossary(text: str) -> tuple[str, str]:
    """(the glossary without the terminology section, the terminology section)."""
    start = text.index(SECTION)
    following = re.search(r"^#{1,2} ", text[start + len(SECTION):], re.M)
    end = start + len(SECTION) + following.start() if following else len(text)
    return text[:start] + text[end:], text[start:end]


def table_rows(section: str) -> list[list[str]]:
    lines = [line.strip() for line in section.splitlines() if line.strip().startswith("|")]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]
    assert rows and rows[0] == COLUMNS, f"{SECTION}: the header must be {COLUMNS}, got {rows[:1]}"
    assert rows[1] and all(set(cell) <= set("-: ") for cell in rows[1]), rows[1]
    body = rows[2:]
    for row in body:
        assert len(row) == len(COLUMNS), f"{SECTION}: a row without three cells: {row}"
    return body


def avoided_patterns() -> list[tuple[str, re.Pattern]]:
    """(English term, compiled pattern) for every code span in the last column."""
    _, section = split_glossary(GLOSSARY.read_text(encoding="utf-8"))
    patterns = []
    for english, _, avoid in table_rows(section):
        for expression in re.findall(r"`([^`]+)`", avoid):
            patterns.append((english, re.compile(expression)))
    return patterns


def comments(code: str) -> str:
    """The comments of a code cell, one a line (IPython magics are skipped)."""
    lines = ["" if line.lstrip()[:1] in "%!" else line for line in code.splitlines()]
    try:
        tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
        return "\n".join(tok.string for tok in tokens if tok.type == tokenize.COMMENT)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return "\n".join(line[line.index("#"):] for line in lines if "#" in line)


def zh_texts():
    """(where, text) for everything the terminology applies to."""
    for page in sorted((ZH / "book").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        if page == GLOSSARY:
            text, _ = split_glossary(text)
        yield page.relative_to(ROOT).as_posix(), text
    for path in sorted((ZH / "notebooks").glob("*.ipynb")):
        name = path.relative_to(ROOT).as_posix()
        for index, cell in enumerate(load(path)["cells"]):
            where = f"{name} [{index}] id={cell.get('id')}"
            if cell["cell_type"] == "markdown":
                yield where, source(cell)
            elif cell["cell_type"] == "code":
                yield f"{where} (comment)", comments(source(cell))


def hits(patterns, texts):
    found = []
    for where, text in texts:
        for english, pattern in patterns:
            for match in pattern.finditer(text):
                around = text[max(0, match.start() - 12):match.end() + 12].replace("\n", " ")
                found.append(f"{where}: {match.group(0)!r} ({english}) in …{around}…")
    return found


def test_the_terminology_table_is_there_and_its_patterns_compile():
    patterns = avoided_patterns()
    english = {term for term, _ in patterns}
    assert {"eager execution", "batch size", "lowering", "TPU Research Cloud"} <= english, english
    assert any(pattern.search("即时执行") for _, pattern in patterns)


@pytest.mark.parametrize(
    "text, flagged",
    [
        ("这个单元会打印", True), ("这个单元格会打印", False), ("代码单元只安装", True),
        ("向量单元负责", False), ("张量处理单元（TPU）", False), ("eager 模式即时执行", True),
        ("首次使用时下载", False), ("训练步的用时", True), ("批大小为 128", True),
        ("批次大小为 128", False), ("批量大小为 128", True),
        ("一台 CPU 即可", True), ("一台 CPU 机器", False), ("一颗 CPU", False),
        ("「引号」", True), ("代码执行程序 → 更改运行时类型", False),
        ("运行时 → 更改运行时类型", True), ("（更改运行时类型）", True),
        ("网格 (mesh) 轴", True), ("网格（mesh）轴", False), ("形状为 (8, 3) 的矩阵", False),
        ("形状为 (n, per_device, 784)", False),
        ("# 参数, 梯度", True), ("# 参数，梯度", False), ("# 加速器.", True), ("x.shape", False),
        # #33: the punctuation rule without whitespace, and Chinese inside ASCII parentheses
        ("参数,梯度", True), ("参数:梯度", True), ("JAX,梯度", True), ("f(x, y)", False),
        ("(见第 3 章)", True), ("（见第 3 章）", False), ("[本章](#数组是不可变的)", False),
        # #33: the new rows
        ("它立即执行", True), ("急切执行", True), ("即时编译的函数", True),
        ("jit 编译的函数", False), ("基准流水线", True), ("基准设置", True),
        ("基准测试的目标", False), ("基线流水线", False), ("分段函数", True), ("分块函数", False),
        ("代价模型", True), ("成本模型", False), ("query、key 和 value", True),
        ("查询、键和值", False), ("性能剖析", True), ("性能分析", False), ("吞吐量 0.22x", True),
        ("TPU7x 之前", False), ("$f'(x) = 2x$", False), ("7,096 images/s", True),
        ("7,096 张/秒", False), ("残差路径", True), ("残差流", False), ("输出核", True),
        ("输出投影的权重矩阵", False), ("可抢占 TPU", True), ("抢占式 TPU", False),
        ("用 Spot VM 训练", True), ("Spot 虚拟机（Spot VM）", False),
        ("Spot 虚拟机\nSpot VM", False),
        ("[Manage TPU Spot VMs](https://cloud.google.com)", False),
        ("没有批次维的矩阵乘积", True), ("批次维度", False),
    ],
)
def test_the_patterns_flag_what_they_should(text, flagged):
    assert bool(hits(avoided_patterns(), [("example", text)])) == flagged


def test_the_chinese_edition_uses_the_terminology_table():
    found = hits(avoided_patterns(), zh_texts())
    assert not found, (
        "renderings that zh/book/glossary.md's 术语对照表 lists under 不用的写法 "
        "(use the 本书用法 column):\n" + "\n".join(found)
    )
