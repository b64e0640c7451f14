"""The Chinese edition glosses its figures' English labels (#43, item 6).

A figure is drawn by the same code in both editions, so its title, axis labels, legend and
annotations are English in the Chinese edition too. zh/book/intro.md says so once, and every
zh code cell whose stored outputs hold an image (image/png or image/svg+xml) has, in the
nearest markdown cell before it or after it, a gloss of the form

    （图中：loss = 损失，training step = 训练步，…）

that is: full-width parentheses opening with 图中：, and pairs "English words = 中文". At
least one English side of the gloss must occur in the figure's code (a label, a legend entry,
a title), so a gloss written for another figure does not count. The gloss gives words only:
no digits, so the two editions' numbers stay paired (tests/test_zh_pairs.py) and the prose
numbers stay bound to the outputs (tests/test_prose_numbers.py).

PENDING lists figures whose gloss is still to be written, each with its reason; an entry
whose figure has a gloss fails, so the list only shrinks.
"""

import re

import pytest

from conftest import ROOT, load, source

ZH = ROOT / "zh"
ZH_NOTEBOOKS = sorted((ZH / "notebooks").glob("*.ipynb"))
IMAGE_TYPES = ("image/png", "image/svg+xml")
OPENING = "（图中："
PAIR = re.compile(r"([A-Za-z][^=，；、\u4e00-\u9fff]*?)\s+=\s+(?=[\u4e00-\u9fff`])")

# (notebook, cell id): why its figure has no 图中 gloss yet.
PENDING: dict[tuple[str, str], str] = {}


def has_image(cell) -> bool:
    outputs = cell.get("outputs", []) if cell["cell_type"] == "code" else []
    return any(kind in output.get("data", {}) for output in outputs for kind in IMAGE_TYPES)


def glosses(text: str) -> list[str]:
    """The contents of each （图中：…） in a markdown text, nested full-width parentheses kept."""
    found = []
    start = text.find(OPENING)
    while start != -1:
        depth, position = 0, start
        for position in range(start, len(text)):
            depth += {"（": 1, "）": -1}.get(text[position], 0)
            if depth == 0:
                break
        found.append(text[start + len(OPENING):position])
        start = text.find(OPENING, position + 1)
    return found


def gloss_problem(code: str, neighbours: list[str]) -> str | None:
    """Why the markdown texts beside a figure's code do not gloss it (None: they do)."""
    spans = [span for text in neighbours for span in glosses(text)]
    if not spans:
        return f"no {OPENING}English = 中文） gloss in the markdown cell before or after it"
    english = [match.group(1).strip() for span in spans for match in PAIR.finditer(span)]
    if not english:
        return f"its {OPENING}…） has no pair 'English = 中文'"
    if not any(words.lower() in code.lower() for words in english):
        return f"none of the glossed words {english} is in the figure's code"
    if any(re.search(r"\d", span) for span in spans):
        return "the gloss has digits (gloss words only; numbers stay as the English text has them)"
    return None


def figures(path) -> list[tuple[str, str, list[str]]]:
    """(cell id, code, [nearest markdown before, nearest markdown after]) for each figure."""
    cells = load(path)["cells"]
    found = []
    for index, cell in enumerate(cells):
        if not has_image(cell):
            continue
        markdown = [(other, source(c)) for other, c in enumerate(cells)
                    if c["cell_type"] == "markdown"]
        before = next((text for other, text in reversed(markdown) if other < index), "")
        after = next((text for other, text in markdown if other > index), "")
        found.append((cell.get("id"), source(cell), [before, after]))
    return found


@pytest.mark.parametrize("path", ZH_NOTEBOOKS, ids=lambda path: path.name)
def test_every_figure_has_its_labels_glossed(path):
    problems = []
    for cell_id, code, neighbours in figures(path):
        problem = gloss_problem(code, neighbours)
        pending = (path.name, cell_id) in PENDING
        if problem and not pending:
            problems.append(f"{path.name} id={cell_id}: {problem}")
        if pending and not problem:
            problems.append(f"{path.name} id={cell_id}: glossed now; remove it from PENDING")
    assert not problems, "\n".join(problems)


def test_pending_entries_name_figures():
    known = {(path.name, cell_id) for path in ZH_NOTEBOOKS for cell_id, _, _ in figures(path)}
    assert not set(PENDING) - known, f"PENDING names no figure: {set(PENDING) - known}"


def test_there_are_figures_to_check():
    assert sum(len(figures(path)) for path in ZH_NOTEBOOKS) >= 20


def test_the_preface_says_the_labels_are_english():
    intro = (ZH / "book" / "intro.md").read_text(encoding="utf-8")
    assert re.search(r"图中的标题、坐标轴标签和图例都是英文", intro)
    assert OPENING in intro


# --- negative controls: the rule catches the texts as they were before the glosses ---------

CHAPTER_7_IMAGES = (
    'figure.suptitle("The first 16 MNIST training images (28x28 pixels each)")\n'
    'axis.set_title(f"label {digit}")')
CHAPTER_12_LOSSES = (
    'ax.set_xlabel("training step")\nax.set_ylabel("training loss (cross-entropy, nats)")')


def test_negative_control_a_figure_without_a_gloss():
    # c07 1bd815a6 before #43: it describes the images but says nothing of the English labels
    original = ("下面是训练集中的前 16 个数字及其标签：黑底白字，每张 28x28 像素，"
                "取值范围为 0 到 255。")
    assert gloss_problem(CHAPTER_7_IMAGES, [original, "## 训练"])
    glossed = original + ("（图中：label = 标签，MNIST training images = MNIST 训练图像，"
                          "pixels = 像素）")
    assert gloss_problem(CHAPTER_7_IMAGES, [glossed, "## 训练"]) is None
    assert gloss_problem(CHAPTER_7_IMAGES, ["## 训练", glossed]) is None


def test_negative_control_a_sentence_naming_the_axes_in_chinese_only():
    # c12 f047675d before #43: the axes are described, the English words are not glossed
    original = ("下图画出了两次运行的训练损失（交叉熵，单位为 nat）随步数的变化："
                "单设备的运行是一条浅色粗线，数据并行的运行是叠在它上面的一条深色细虚线。")
    assert gloss_problem(CHAPTER_12_LOSSES, [original, ""])


def test_negative_control_a_gloss_of_another_figure():
    other = "（图中：noisy signal = 带噪声的信号，moving average = 移动平均）"
    assert "in the figure's code" in gloss_problem(CHAPTER_12_LOSSES, [other, ""])


def test_negative_control_half_width_and_pairless_glosses():
    assert gloss_problem(CHAPTER_12_LOSSES, ["(图中: training step = 训练步)", ""])
    assert gloss_problem(CHAPTER_12_LOSSES, ["（图中：横轴是训练步）", ""])


def test_negative_control_a_gloss_with_digits():
    with_digits = "（图中：training step = 训练步，training loss = 训练损失，1 device = 1 个设备）"
    assert "digits" in gloss_problem(CHAPTER_12_LOSSES, [with_digits, ""])
