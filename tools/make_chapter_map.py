"""Draw the chapter map shown on the landing page: book/images/chapter_map.png.

Run from the repository root after changing the chapter list below:

    .venv/bin/python tools/make_chapter_map.py

The PNG is committed; the site build does not run this script. The output is the same
bytes on every run (no timestamps in the metadata).
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

OUTPUT = Path(__file__).resolve().parent.parent / "book" / "images" / "chapter_map.png"

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
        ],
    ),
    (
        "Part II: Training an MLP",
        "#dcefd4",
        [
            (6, "An MLP\nfrom scratch"),
            (7, "Optimizers\nand schedules"),
            (8, "Making\ntraining fast"),
        ],
    ),
    (
        "Part III: TPUs",
        "#fbe2d0",
        [
            (9, "Cloud TPU\nand the TRC"),
            (10, "Data\nparallelism"),
            (11, "Beyond\none host"),
        ],
    ),
]

LABEL_WIDTH = 0.2
TITLE_HEIGHT = 0.42
BOX_WIDTH = 1.8
BOX_GAP = 0.32
ROW_HEIGHT = 1.62
ROW_GAP = 0.3
BOX_HEIGHT = 1.05


def draw(output: Path = OUTPUT) -> Path:
    most_chapters = max(len(chapters) for _, _, chapters in PARTS)
    width = 2 * LABEL_WIDTH + most_chapters * (BOX_WIDTH + BOX_GAP) - BOX_GAP
    height = len(PARTS) * (ROW_HEIGHT + ROW_GAP)
    figure, axes = plt.subplots(figsize=(width, height), dpi=120)
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")

    def arrow(start, end, **style):
        axes.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14,
                                       color="#333333", linewidth=1.3, **style))

    previous_last_box = None
    for row, (title, colour, chapters) in enumerate(PARTS):
        bottom = height - (row + 1) * (ROW_HEIGHT + ROW_GAP) + ROW_GAP / 2
        axes.add_patch(
            FancyBboxPatch(
                (0.05, bottom), width - 0.1, ROW_HEIGHT,
                boxstyle="round,pad=0.0,rounding_size=0.12", facecolor=colour, edgecolor="none",
            )
        )
        # The title sits on the right, clear of the arrow that comes down on the left.
        axes.text(width - LABEL_WIDTH, bottom + ROW_HEIGHT - TITLE_HEIGHT / 2 - 0.04, title,
                  ha="right", va="center", fontsize=15, fontweight="bold", color="#222222")
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
                      va="top", fontsize=15, fontweight="bold", color="#1a5a96")
            axes.text(left + BOX_WIDTH / 2 + 0.12, box_bottom + BOX_HEIGHT / 2, name,
                      ha="center", va="center", fontsize=13.5, color="#111111",
                      linespacing=1.1)
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


if __name__ == "__main__":
    print(f"wrote {draw()}")
