"""Draw the chapter map shown on each edition's landing page: book/images/chapter_map.png
(English) and zh/book/images/chapter_map.png (Chinese).

Run from the repository root after changing a chapter list below:

    .venv/bin/python dev/make_chapter_map.py            # both maps
    .venv/bin/python dev/make_chapter_map.py --lang zh  # only the Chinese one

The PNGs are committed; neither the site build nor CI runs this script. The output is the
same bytes on every run (no timestamps in the metadata).

The English map uses matplotlib's default font (DejaVu Sans). The Chinese map needs a CJK
font: Noto Sans CJK SC, from /usr/share/fonts/opentype/noto/NotoSansCJK-{Regular,Bold}.ttc
(Debian/Ubuntu package fonts-noto-cjk, which dev/ensure_chromium.sh also installs for
the browser test). Its labels are the Chinese chapter titles (the H1 of each
zh/notebooks/NN_*.ipynb) with line breaks added; tests/test_titles.py checks that they
still match.
"""

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "book" / "images" / "chapter_map.png"
OUTPUT_ZH = ROOT / "zh" / "book" / "images" / "chapter_map.png"
CJK_FONT_DIR = Path("/usr/share/fonts/opentype/noto")
CJK_FONT_FILES = ("NotoSansCJK-Regular.ttc", "NotoSansCJK-Bold.ttc")
CJK_FAMILY = "Noto Sans CJK SC"  # the Simplified Chinese face of the .ttc collections

# One row per part: (part title, colour, [(number, title with a line break where needed)]).
PARTS = [
    ("Getting started", "#e6e6e6", [(0, "Setup:\nJAX, devices,\nMNIST")]),
    (
        "Part I: JAX basics",
        "#d6e6f5",
        [
            (1, "JAX as\naccelerated\nNumPy"),
            (2, "Automatic\ndifferentiation"),
            (3, "XLA and jit"),
            (4, "vmap and\ncomposition"),
            (5, "Randomness,\npytrees,\nsharp bits"),
            (6, "Custom\nderivatives,\nremat,\ndebugging"),
        ],
    ),
    (
        "Part II: Training an MLP",
        "#dcefd4",
        [
            (7, "An MLP\nfrom scratch"),
            (8, "Optimizers\nand schedules"),
            (9, "Where the\ntraining\ntime goes"),
            (10, "A fast,\ntuned training\nrecipe"),
        ],
    ),
    (
        "Part III: TPUs",
        "#fbe2d0",
        [
            (11, "Cloud TPU\nand the TRC"),
            (12, "Data\nparallelism"),
            (13, "Beyond\none host"),
        ],
    ),
    ("Part IV: Scaling up", "#eadcf2", [(14, "From hand-\nwritten JAX\nto the JAX\nAI stack"),
                                         (15, "A small GPT\nfrom scratch"),
                                         (16, "Sharding the\ntransformer"),
                                         (17, "Training that\nsurvives\npreemption")]),
    ("Part V: On the chip", "#f5e6c8", [(18, "Reading a\nprofile"),
                                        (19, "A kernel\nwith Pallas"),
                                        (20, "Serving\nthe GPT")]),
]

# The Chinese map: part titles as in zh/_toc.yml, chapter labels as the chapters' H1s.
PARTS_ZH = [
    ("入门", "#e6e6e6", [(0, "准备环境")]),
    (
        "第一部分：JAX 基础",
        "#d6e6f5",
        [
            (1, "JAX：\n加速版 NumPy"),
            (2, "自动微分"),
            (3, "XLA 与 jit"),
            (4, "vmap 与\n变换的组合"),
            (5, "随机数、\npytree\n与易错点"),
            (6, "自定义导数、\n重计算\n与调试"),
        ],
    ),
    (
        "第二部分：训练 MLP",
        "#dcefd4",
        [
            (7, "从零实现\nMLP"),
            (8, "用 optax 实现\n优化器与\n学习率调度"),
            (9, "训练时间\n花在哪里"),
            (10, "快速、经过\n调优的\n训练方案"),
        ],
    ),
    (
        "第三部分：TPU",
        "#fbe2d0",
        [
            (11, "Cloud TPU 与\nTPU Research\nCloud"),
            (12, "跨设备的\n数据并行"),
            (13, "走出\n单台主机"),
        ],
    ),
    ("第四部分：扩大规模", "#eadcf2", [(14, "从手写 JAX\n到 JAX AI\n技术栈"),
                                   (15, "从零实现\n一个小型\nGPT"),
                                   (16, "对 Transformer\n做分片"),
                                   (17, "经得起抢占\n的训练")]),
    ("第五部分：深入芯片", "#f5e6c8", [(18, "读懂性能\n分析记录"),
                                   (19, "用 Pallas\n写一个内核"),
                                   (20, "用 GPT 提供\n推理服务")]),
]

LABEL_WIDTH = 0.2
TITLE_HEIGHT = 0.42
BOX_WIDTH = 1.8
BOX_GAP = 0.32
ROW_HEIGHT = 1.62
ROW_GAP = 0.3
BOX_HEIGHT = 1.05


def use_cjk_font() -> dict:
    """Register Noto Sans CJK with matplotlib; the text style that selects its SC face."""
    from matplotlib import font_manager

    missing = [name for name in CJK_FONT_FILES if not (CJK_FONT_DIR / name).exists()]
    if missing:
        raise SystemExit(f"{CJK_FONT_DIR}: no {', '.join(missing)}; "
                         "install Noto Sans CJK (Debian/Ubuntu: apt-get install fonts-noto-cjk)")
    for name in CJK_FONT_FILES:
        font_manager.fontManager.addfont(str(CJK_FONT_DIR / name))
    return {"fontfamily": CJK_FAMILY}


def draw(output: Path = OUTPUT, parts=PARTS, font: dict | None = None) -> Path:
    font = font or {}
    most_chapters = max(len(chapters) for _, _, chapters in parts)
    width = 2 * LABEL_WIDTH + most_chapters * (BOX_WIDTH + BOX_GAP) - BOX_GAP
    height = len(parts) * (ROW_HEIGHT + ROW_GAP)
    figure, axes = plt.subplots(figsize=(width, height), dpi=120)
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")

    def arrow(start, end, **style):
        axes.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14,
                                       color="#333333", linewidth=1.3, **style))

    previous_last_box = None
    for row, (title, colour, chapters) in enumerate(parts):
        bottom = height - (row + 1) * (ROW_HEIGHT + ROW_GAP) + ROW_GAP / 2
        axes.add_patch(
            FancyBboxPatch(
                (0.05, bottom), width - 0.1, ROW_HEIGHT,
                boxstyle="round,pad=0.0,rounding_size=0.12", facecolor=colour, edgecolor="none",
            )
        )
        # The title sits on the right, clear of the arrow that comes down on the left.
        axes.text(width - LABEL_WIDTH, bottom + ROW_HEIGHT - TITLE_HEIGHT / 2 - 0.04, title,
                  ha="right", va="center", fontsize=15, fontweight="bold", color="#222222", **font)
        box_bottom = bottom + (ROW_HEIGHT - TITLE_HEIGHT - BOX_HEIGHT) / 2
        for index, (number, name) in enumerate(chapters):
            left = LABEL_WIDTH + index * (BOX_WIDTH + BOX_GAP)
            axes.add_patch(
                FancyBboxPatch(
                    (left, box_bottom), BOX_WIDTH, BOX_HEIGHT,
                    boxstyle="round,pad=0.0,rounding_size=0.08",
                    facecolor="white", edgecolor="#555555", linewidth=1.0,
                )
            )
            axes.text(left + 0.1, box_bottom + BOX_HEIGHT - 0.1, str(number), ha="left",
                      va="top", fontsize=15, fontweight="bold", color="#1a5a96", **font)
            axes.text(left + BOX_WIDTH / 2 + 0.12, box_bottom + BOX_HEIGHT / 2, name,
                      ha="center", va="center", fontsize=13.5, color="#111111",
                      linespacing=1.1, **font)
            if index:
                arrow((left - BOX_GAP + 0.03, box_bottom + BOX_HEIGHT / 2),
                      (left - 0.03, box_bottom + BOX_HEIGHT / 2))
        # From the last chapter of one part to the first of the next, through the white
        # gap between the two rows, so that the line crosses no box.
        first_centre = LABEL_WIDTH + BOX_WIDTH / 2
        if previous_last_box is not None:
            last_left, last_bottom = previous_last_box
            gap_y = bottom + ROW_HEIGHT + ROW_GAP / 2
            last_centre = last_left + BOX_WIDTH / 2
            axes.plot([last_centre, last_centre, first_centre],
                      [last_bottom, gap_y, gap_y], color="#333333", linewidth=1.3)
            arrow((first_centre, gap_y), (first_centre, box_bottom + BOX_HEIGHT))
        last_left = LABEL_WIDTH + (len(chapters) - 1) * (BOX_WIDTH + BOX_GAP)
        previous_last_box = (last_left, box_bottom)

    figure.tight_layout(pad=0.2)
    output.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(output, metadata={"Software": None})
    plt.close(figure)
    return output


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lang", choices=["en", "zh", "all"], default="all",
                        help="which edition's map to draw (default: both)")
    lang = parser.parse_args(argv).lang
    if lang in ("en", "all"):
        print(f"wrote {draw()}")
    if lang in ("zh", "all"):
        print(f"wrote {draw(OUTPUT_ZH, PARTS_ZH, use_cjk_font())}")


if __name__ == "__main__":
    main()
