"""The Chinese edition (zh/) stays the English book, translated.

Each zh/notebooks/NN_name.ipynb is its English twin with the markdown translated: the same
cells (paired by cell id), the same code once comments are stripped, the same stored
outputs. nbval re-executes only the English notebooks, so these checks are what make the
Chinese pages tested too: an English chapter changed without its Chinese twin fails here.
`python dev/zh_sync.py` brings the code and outputs across (see its docstring); a changed
English paragraph is reported until its translation is updated and stamped.
"""

import copy
import re
import sys

import pytest
import yaml

from conftest import NOTEBOOK_DIR, ROOT, load, toc_files

sys.path.insert(0, str(ROOT / "dev"))
import zh_sync  # noqa: E402
from test_zh_terms import comments  # noqa: E402  (the same comment reader as the terms test)

ZH = ROOT / "zh"
CJK = zh_sync.CJK


def test_every_chinese_notebook_matches_its_english_twin():
    problems = zh_sync.check_all()
    report = "\n".join(
        f"{name}:\n" + "\n".join(f"  {line}" for line in found) for name, found in problems.items()
    )
    assert not problems, (
        "the Chinese notebooks drifted from the English ones; run `python dev/zh_sync.py`, "
        "translate what it reports and stamp it (`--stamp NB`):\n" + report
    )


def test_every_english_notebook_has_a_chinese_twin():
    english = sorted(path.name for path in NOTEBOOK_DIR.glob("*.ipynb"))
    chinese = sorted(path.name for path in (ZH / "notebooks").glob("*.ipynb"))
    assert english == chinese


def test_chinese_toc_mirrors_the_english_one():
    english = toc_files()
    chinese = toc_files(ZH / "_toc.yml")
    assert chinese == english, "zh/_toc.yml must list the same pages in the same order"
    missing = [name for name in chinese
               if not any((ZH / f"{name}{suffix}").exists() for suffix in (".md", ".ipynb"))]
    assert not missing, f"pages in zh/_toc.yml that zh/ lacks: {missing}"
    captions = [part["caption"] for part in yaml.safe_load((ZH / "_toc.yml").read_text())["parts"]]
    assert all(CJK.search(caption) for caption in captions), captions


@pytest.mark.parametrize("page", sorted((ROOT / "book").glob("*.md")), ids=lambda p: p.name)
def test_every_prose_page_is_translated(page):
    twin = ZH / "book" / page.name
    assert twin.exists(), f"no Chinese {twin.relative_to(ROOT)}"
    text = twin.read_text(encoding="utf-8")
    assert len(CJK.findall(text)) > 100, f"{twin.relative_to(ROOT)} is hardly Chinese"
    # The same figures and the same links to chapters as the English page.
    def targets(markdown):
        return sorted(re.findall(r"\]\((\.\./notebooks/[\w.]+)\)", markdown))
    assert targets(text) == targets(page.read_text(encoding="utf-8"))


def test_chinese_config_differs_from_the_english_only_where_it_must():
    english = yaml.safe_load((ROOT / "_config.yml").read_text())
    chinese = yaml.safe_load((ZH / "_config.yml").read_text())

    def neutral(config):
        config = copy.deepcopy(config)
        config.pop("title")
        config.pop("exclude_patterns")
        config["repository"].pop("path_to_book")
        config["html"].pop("extra_footer")
        config["sphinx"].pop("local_extensions")
        for key in ("jaxbook_language", "language", "html_static_path",
                    "nb_code_prompt_show", "nb_code_prompt_hide"):
            config["sphinx"]["config"].pop(key, None)
        return config

    assert neutral(chinese) == neutral(english)
    assert chinese["repository"]["path_to_book"] == "zh"  # Colab opens zh/notebooks/...
    assert chinese["sphinx"]["config"]["jaxbook_language"] == "zh"
    assert english["sphinx"]["config"]["jaxbook_language"] == "en"


def test_a_changed_english_code_cell_is_reported():
    """The drift check itself: change one English code cell, keep the Chinese twin."""
    name = "01_jax_numpy.ipynb"
    english, chinese = load(NOTEBOOK_DIR / name), load(ZH / "notebooks" / name)
    cell = next(c for c in english["cells"] if c["cell_type"] == "code" and c.get("outputs"))
    cell["source"] = zh_sync.source_text(cell) + "\nprint('one more line')"
    _, problems = zh_sync.synced(english, chinese)
    assert any(cell["id"] in line and "code differs" in line for line in problems), problems

    english = load(NOTEBOOK_DIR / name)
    cell = next(c for c in english["cells"] if c["cell_type"] == "code" and c.get("outputs"))
    cell["outputs"] = []
    _, problems = zh_sync.synced(english, chinese)
    assert any(cell["id"] in line and "outputs differ" in line for line in problems), problems


def test_translated_comments_do_not_count_as_drift():
    english = "x = 1  # one\n# a note\ny = x + 1\n"
    chinese = "x = 1  # 一\n# 说明\ny = x + 1\n"
    assert zh_sync.same_code(english, chinese)
    assert not zh_sync.same_code(english, chinese.replace("x + 1", "x + 2"))
    assert not zh_sync.same_code("# NBVAL_IGNORE_OUTPUT\nx = 1\n", "x = 1\n")


# A script held in a string (chapter 17 writes its training scripts from two): its own
# comments are comments, the rest of it is code, line for line.
SCRIPT_EN = ('SCRIPT = """\nimport os\n\nx = 1  # one\n# a note\n'
             'label = f"# {x} steps"  # the label\nUSAGE = \'\'\'\n# run it twice\n\'\'\'\n"""\n'
             'print(SCRIPT)\n')
SCRIPT_ZH = (SCRIPT_EN.replace("# one", "# 一").replace("# a note", "# 说明")
             .replace("# the label", "# 标签"))


@pytest.mark.parametrize("chinese, same", [
    (SCRIPT_ZH, True),
    (SCRIPT_ZH.replace("x = 1", "x = 2"), False),  # a statement of the script
    (SCRIPT_ZH.replace("# 说明", "y = 2  # 说明"), False),  # code added on a comment's line
    # a `#` inside one of the script's strings is no comment: the f-string, the nested
    # string's line that looks like a comment
    (SCRIPT_ZH.replace('f"# {x} steps"', 'f"# {x} 步"'), False),
    (SCRIPT_ZH.replace("# run it twice", "# 运行两次"), False),
    (SCRIPT_ZH.replace("# 说明\n", ""), False),  # the script's lines (its length is printed)
    (SCRIPT_ZH.replace('SCRIPT = """', 'SCRIPT = r"""'), False),  # another literal
    (SCRIPT_ZH.replace("# 一", "# NBVAL_IGNORE_OUTPUT"), False),  # a marker
])
def test_comments_of_a_script_in_a_string_are_comments(chinese, same):
    assert zh_sync.same_code(SCRIPT_EN, chinese) == same


def test_a_string_that_is_not_python_is_compared_exactly():
    english = 'TEXT = """\nsome words # one\n"""\n'
    assert not zh_sync.same_code(english, english.replace("# one", "# 一"))
    english = 'NOTE = """\nx = 1  # one\n"""\n'  # Python, so a script: its comment translates
    assert zh_sync.same_code(english, english.replace("# one", "# 一"))


def test_a_changed_statement_in_chapter_17s_scripts_is_drift():
    """The two script cells with their translated comments pass; a change to the code fails."""
    name = "17_preemption.ipynb"
    english, chinese = load(NOTEBOOK_DIR / name), load(ZH / "notebooks" / name)
    changes = {"c17-script": [("BATCH_SIZE = 128", "BATCH_SIZE = 64"),
                              ("\nstate = {", "\nstate = None  # ...\nstate = {")],
               "c17-sharded-script": [("max_to_keep=2", "max_to_keep=3")]}
    english_cells = {cell.get("id"): cell for cell in english["cells"]}
    for cell in chinese["cells"]:
        if cell.get("id") in changes:
            code = zh_sync.source_text(cell)
            assert CJK.search(code) and zh_sync.same_code(
                zh_sync.source_text(english_cells[cell["id"]]), code)
            for old, new in changes[cell["id"]]:
                assert code.count(old) == 1, old
                changed = copy.deepcopy(chinese)
                twin = next(c for c in changed["cells"] if c.get("id") == cell["id"])
                twin["source"] = code.replace(old, new)
                _, problems = zh_sync.synced(english, changed)
                assert f"cell {cell['id']}: the code differs from the English cell" in problems


# --- code comments are Chinese too (#33) -------------------------------------------------
# A comment that holds words must hold Chinese. Allowed without: the markers tools read
# (NBVAL_*, noqa, type: ignore, fmt:, `# %%` cell separators), a lone identifier, number,
# path or URL (`# logits`, `# https://...`), and a shebang.
ALLOWED_COMMENT = re.compile(
    r"#\s*(?:NBVAL_\w+|noqa\b|type:\s*ignore|fmt:|%%|!)"  # markers and shebangs
    r"|#\s*[\w.:/\-+*=<>()\[\],]+\s*$"  # one token: an identifier, a number, a path, a URL
)
WORDS = re.compile(r"[A-Za-z]{2,}")


def english_comments(code: str) -> list[str]:
    """The comments of a code cell that hold words and no Chinese, outside the allow-list."""
    return [line for line in comments(code).splitlines()
            if WORDS.search(line) and not CJK.search(line) and not ALLOWED_COMMENT.match(line)]


@pytest.mark.parametrize("path", sorted((ZH / "notebooks").glob("*.ipynb")), ids=lambda p: p.name)
def test_code_comments_are_translated(path):
    """One test per chapter, so the report names each chapter that still has English comments."""
    found = [f"[{index}] id={cell.get('id')}: {line}"
             for index, cell in enumerate(load(path)["cells"]) if cell["cell_type"] == "code"
             for line in english_comments(zh_sync.source_text(cell))]
    assert not found, (f"{path.relative_to(ROOT)}: English code comments (translate them; "
                       "zh_sync keeps a translated comment):\n" + "\n".join(found))


@pytest.mark.parametrize("code, flagged", [
    ("x = 1  # the first step compiles", True),
    ("# Twice the peak: the usual rule\nx = 1", True),
    ("x = 1  # 第一次调用会编译", False),
    ("x = 1  # logits", False),
    ("# NBVAL_IGNORE_OUTPUT\nx = 1", False),
    ("import os  # noqa: F401 (used below)", False),
    ("# https://example.com/data.txt\nx = 1", False),
    ("# %%\nx = 1", False),
    ("x = 1  # 6 * L * d", False),
    ("x = 1  # in [0, 1]", True),
])
def test_the_comment_rule_flags_english_and_spares_markers(code, flagged):
    assert bool(english_comments(code)) == flagged


def test_a_chinese_number_that_no_output_holds_fails_the_prose_check():
    """#33: 10 [25] once added "低 1.8 个百分点", in neither the English twin nor any output."""
    import prose_numbers  # dev/, on the path above

    name = "10_fast_tuned_recipe.ipynb"
    english = load(NOTEBOOK_DIR / name)
    chinese = prose_numbers.records(load(ZH / "notebooks" / name), english)
    bindings = prose_numbers.load_bindings()
    assert not prose_numbers.check_notebook(chinese, name, "zh", None, bindings)
    cells = chinese["cells"]
    at = next(i for i, cell in enumerate(cells) if cell["cell_type"] == "markdown" and i > 20)
    cells.insert(at + 1, {"cell_type": "markdown", "id": "inserted", "metadata": {},
                          "source": "验证准确率比测试准确率低 1.8 个百分点。"})
    flagged = [(n["cell"], n["written"])
               for n in prose_numbers.check_notebook(chinese, name, "zh", None, bindings)]
    assert flagged == [("inserted", "1.8 个百分点")], flagged


# --- quotation marks: Chinese prose quotes with “…”, half-width "…" only in code ----------

NOT_PROSE = re.compile(
    r"```.*?```"             # fenced code and MyST directives
    r"|`[^`\n]*`"            # code spans (and a role's argument)
    r"|\$\$.*?\$\$|\$[^$\n]*\$"  # maths
    r"|<[^>\n]*>"            # HTML tags and their attributes
    r"|\]\([^)\n]*\)",       # a link's target (and title)
    re.S)


def half_width_quotes(text: str) -> list[str]:
    """Each half-width double quote in the prose of a zh text, with the text around it."""
    prose = NOT_PROSE.sub(" ", text)
    return [prose[max(0, m.start() - 20):m.end() + 20].replace("\n", " ")
            for m in re.finditer('"', prose)]


def zh_prose():
    for page in sorted((ZH / "book").glob("*.md")):
        yield page.relative_to(ROOT).as_posix(), page.read_text(encoding="utf-8")
    for path in sorted((ZH / "notebooks").glob("*.ipynb")):
        for cell in load(path)["cells"]:
            if cell["cell_type"] == "markdown":
                yield f"{path.name} id={cell.get('id')}", zh_sync.source_text(cell)


def test_chinese_prose_uses_full_width_quotes():
    found = [f"{where}: …{quote}…"
             for where, text in zh_prose() for quote in half_width_quotes(text)]
    assert not found, "half-width quotes in Chinese prose (write “…”):\n" + "\n".join(found)


def test_negative_control_half_width_quotes():
    # c11 d5a81f34 before #43: an English message quoted with half-width quotes
    original = ('它就会在第一个 JAX 操作处失败，报错 '
                '"TPU is already in use by process with pid …"。')
    assert half_width_quotes(original)
    assert not half_width_quotes(original.replace('"', "“", 1).replace('"', "”", 1))
    # code, maths, HTML and link targets keep their quotes
    assert not half_width_quotes('写成 `print("x")`，或 $"a"$，<img alt="x">，'
                                 '[文档](https://a.b "标题")。\n```python\nprint("x")\n```')
