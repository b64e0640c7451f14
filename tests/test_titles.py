"""A chapter's title is its notebook's H1, and every other place says the same.

In both editions the first cell of notebooks/NN_name.ipynb (zh/notebooks/ for the Chinese
one) starts with "# N. Title". That title is the single source of truth: the table "The
chapters" on the landing page (book/intro.md, zh/book/intro.md), the chapter lists of the
part pages (book/part*.md, zh/book/part*.md: "N. *Title*: what it covers") and the labels
of the Chinese chapter map (dev/make_chapter_map.py) must use it, word for word. The
sidebar needs no check: Jupyter Book takes each chapter's entry from its H1. A part page's
own title must be its part's caption in the edition's _toc.yml.
"""

import re
import sys

import pytest
import yaml

from conftest import ROOT, load, source

sys.path.insert(0, str(ROOT / "dev"))
import make_chapter_map  # noqa: E402

EDITIONS = {"en": ROOT, "zh": ROOT / "zh"}
TOC = {"en": ROOT / "book" / "_toc.yml", "zh": ROOT / "zh" / "_toc.yml"}


def chapter_titles(edition: str) -> dict[str, tuple[int, str]]:
    """{notebook stem: (number, title)} from each notebook's H1."""
    titles = {}
    for path in sorted((EDITIONS[edition] / "notebooks").glob("*.ipynb")):
        first_line = source(load(path)["cells"][0]).splitlines()[0]
        match = re.fullmatch(r"# (\d+)\. (.+)", first_line.strip())
        assert match, f"{path.relative_to(ROOT)}: the first line must be '# N. Title'"
        titles[path.stem] = (int(match.group(1)), match.group(2))
    return titles


def by_number(edition: str) -> dict[int, str]:
    return {number: title for number, title in chapter_titles(edition).values()}


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_landing_page_table_uses_the_chapter_titles(edition):
    intro = (EDITIONS[edition] / "book" / "intro.md").read_text(encoding="utf-8")
    rows = re.findall(r"\[(\d+)\. ([^\]]+)\]\(\.\./notebooks/(\w+)\.ipynb\)", intro)
    titles = chapter_titles(edition)
    assert sorted(stem for _, _, stem in rows) == sorted(titles), "a chapter missing from the table"
    wrong = [f"{stem}: table says {number}. {title!r}, the H1 says {titles[stem][0]}. "
             f"{titles[stem][1]!r}"
             for number, title, stem in rows if (int(number), title) != titles[stem]]
    assert not wrong, "\n".join(wrong)


def part_pages(edition: str):
    """(part page, its caption in the TOC, the chapter numbers the TOC puts in that part)."""
    numbers = {f"notebooks/{stem}": number for stem, (number, _) in chapter_titles(edition).items()}
    for part in yaml.safe_load(TOC[edition].read_text())["parts"]:
        files = [entry["file"] for entry in part["chapters"]]
        pages = [name for name in files if re.fullmatch(r"book/part\d+", name)]
        if pages:
            chapters = sorted(numbers[name] for name in files if name in numbers)
            yield EDITIONS[edition] / f"{pages[0]}.md", part["caption"], chapters


@pytest.mark.parametrize("edition", EDITIONS)
def test_the_part_pages_use_the_chapter_titles(edition):
    titles = by_number(edition)
    pages = list(part_pages(edition))
    assert len(pages) == 5  # Parts I to V
    for page, caption, chapters in pages:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT)
        assert text.splitlines()[0] == f"# {caption}", f"{name}: its H1 must be the TOC caption"
        listed = re.findall(r"^(\d+)\. \*(.+?)\*[:：]", text, re.M)
        assert sorted(int(number) for number, _ in listed) == chapters, (
            f"{name} must list chapters {chapters}, as the TOC does"
        )
        wrong = [f"{name}: {number}. {title!r}, the H1 says {titles[int(number)]!r}"
                 for number, title in listed if title != titles[int(number)]]
        assert not wrong, "\n".join(wrong)


def test_the_chinese_chapter_map_uses_the_chapter_titles():
    """Its labels are the H1s with line breaks (and without the backticks of `jit`)."""
    def words(text):
        return "".join(text.replace("`", "").split())

    titles = by_number("zh")
    labels = {number: label for _, _, chapters in make_chapter_map.PARTS_ZH
              for number, label in chapters}
    assert sorted(labels) == sorted(titles)
    wrong = [f"{number}: map {label!r}, H1 {titles[number]!r}"
             for number, label in labels.items() if words(label) != words(titles[number])]
    assert not wrong, "dev/make_chapter_map.py, PARTS_ZH:\n" + "\n".join(wrong)
    parts = yaml.safe_load(TOC["zh"].read_text())["parts"]
    captions = [part["caption"] for part in parts
                if any(entry["file"].startswith("notebooks/") for entry in part["chapters"])]
    assert [title for title, _, _ in make_chapter_map.PARTS_ZH] == captions
