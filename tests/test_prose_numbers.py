"""The prose quotes the stored outputs: a number in a chapter's text comes from the output
it describes, and stays bound to it.

Each measured number of a chapter's markdown, in English and in the Chinese twin, is bound
in tests/prose_bindings.json to the output number (or code literal, or allow-listed fact)
it reads: its code cell, its output line (numbers masked) and its index on that line, with
the label and direction words beside it. The test fails when the prose no longer reads its
bound value as written (two figures swapped, a figure of another line), when a label or
direction word beside it changed ("eager" for "jit", "faster" for "slower"), when a
binding points to a line that is gone, or when a number has no binding and is not on the
allow-list. `python dev/prose_numbers.py --bind NB` writes the bindings from the
heuristic below (review the diff); `--rewrite NB` rewrites the numbers after re-execution.

The heuristic, which proposes the bindings:

A number in a markdown cell that looks like a measurement (a decimal, a percentage, a ratio,
a time, a size, epochs or steps, and spelled-out ratios such as "four fifths of" or "ten
times faster") must appear, rounded as the prose rounds it and with its unit, in the stored
outputs of its own section, on an output line that carries its label (so swapped figures
fail), or as a constant in the code, or be a fact on tests/prose_numbers_allowed.json with
the reason it is one. A chapter re-executed without its prose updated fails here. The rules
are in dev/prose_numbers.py's docstring; `python3 dev/prose_numbers.py NB` prints the
same report.
"""

import ast
import copy
import importlib
import json
import sys
from pathlib import Path

import pytest

from conftest import ROOT, all_notebooks

sys.path.insert(0, str(ROOT / "dev"))
import prose_numbers  # noqa: E402

ALLOWED = prose_numbers.load_allowed()


BINDINGS = prose_numbers.load_bindings()
BOTH_EDITIONS = [path for en in all_notebooks()
                 for path in (en, prose_numbers.twin_path(en)) if path.exists()]


@pytest.mark.parametrize("path", BOTH_EDITIONS,
                         ids=lambda path: f"{prose_numbers.edition_of(path)}/{path.name}")
def test_prose_numbers_are_bound_to_the_stored_outputs(path):
    offenders = prose_numbers.check(path, ALLOWED, BINDINGS)
    assert not offenders, (
        prose_numbers.report(path.name, offenders)
        + "\nchange the prose to what the stored outputs show (after re-executing: python "
        "dev/prose_numbers.py --rewrite NB), or, if the prose is right and was edited on "
        "purpose, rebind (python dev/prose_numbers.py --bind NB) and review the diff of "
        "tests/prose_bindings.json; a fact that is not a measurement of this run goes with "
        "its reason on tests/prose_numbers_allowed.json"
    )


def test_every_chapter_is_bound():
    for path in BOTH_EDITIONS:
        assert prose_numbers.edition_of(path) in BINDINGS.get(path.name, {}), (
            f"{path}: no bindings; run python dev/prose_numbers.py --bind {path.name}"
        )


def test_allow_list_is_small_explained_and_current():
    names = {path.name for path in all_notebooks()}
    assert set(ALLOWED) <= names, f"allow-list names no such notebook: {set(ALLOWED) - names}"
    for name, entries in ALLOWED.items():
        assert all(isinstance(why, str) and len(why) > 20 for why in entries.values()), (
            f"{name}: every allowed number needs its reason"
        )
        stale = prose_numbers.unused_allowed(ROOT / "notebooks" / name, ALLOWED)
        assert not stale, f"{name}: allowed numbers no longer in the prose: {stale}"


def written(text):
    return [number["written"] for number in prose_numbers.measurements(prose_numbers.prose(text))]


def test_what_counts_as_a_measurement():
    assert written("reaches 98.35% in 3.5 s, 1.75x faster, 2.17 times as fast, 0.053") == [
        "98.35%", "3.5 s", "1.75x", "2.17 times", "0.053",
    ]
    assert written("took 12 ms and 2 GB; 63–79% of peak; between 0.08 and 0.10") == [
        "12 ms", "2 GB", "63%", "79%", "0.08", "0.10",
    ]
    # A unit after "A and B" is A's too where A has a thousands separator (a measurement, not
    # a count): both medians are checked, in either edition; "4 and 12 ms" stays one number.
    assert written("medians of 36,143 and 720,992 images/s; 4 and 12 ms") == [
        "36,143 images/s", "720,992 images/s", "12 ms",
    ]
    assert written("中位数分别为 36,143 和 720,992 张/秒") == ["36,143 张/秒", "720,992 张/秒"]
    # So is a range of two such figures without a unit; numbers listed after "chapters" are
    # chapter numbers.
    assert written("(range 617,765 to 813,398), chapters 12 to 14, 1,000 and 2,000") == [
        "617,765", "813,398",
    ]
    # Counts with a unit and spelled-out ratios are checked (a count may come from the code).
    assert written(
        "200 steps, 3 epochs, about four fifths of the peak, a tenth of a point, sixfold, "
        "ten times shorter, twice as fast, ten steps"
    ) == ["200 steps", "3 epochs", "four fifths", "a tenth", "sixfold", "ten times",
          "twice", "ten steps"]
    # Not measurements: integers, counts, years, versions, sci notation, shapes, code, math.
    assert written(
        "in 2025, 3 times, three seeds, twice more, half the peak, 4s and 1s, "
        "101 points, JAX 0.7.2, Python 3.11 or newer, "
        "Python ≥ 3.12, a step of 1e-3, a 5 × 7 matrix, 28x28 pixels, v5e, bfloat16, "
        "`x = 0.5`, $\\alpha = 0.3$, [link](https://example.com/1.5.html), chapter 3.2"
    ) == []
    assert written("```python\nlr = 0.01\n```\nthen 0.2") == ["0.2"]
    # Integers of at least 100 are read although they have no unit, results and settings
    # alike; not a year, an exit status, a port, an issue number or a part of a shape.
    assert written(
        "12,940 device operations, 1845 useful tokens/s against 490, **3,569** MiB, max 1021, "
        "batch 500, 10,000 images, width 2,048"
    ) == ["12,940", "1845 useful tokens/s", "490", "3,569", "1021", "500", "10,000", "2,048"]
    assert written(
        "in 2026, status 143, port 8888, 784-512-512-10, a 784 × 512 matrix, 128 x 384, "
        "jax#30834, 97 of them, 101 points"
    ) == []
    # Chinese puts a rate's unit around the number; the same rule reads its plain integers.
    assert written("每秒 32,349 个词元；每秒产生的有用词元为 1845 个；每秒 38339 个样本；"
                   "8888 端口；状态码 255；中位数 22；共 302 个") == [
        "32,349 tokens/s", "1845 tokens/s", "38339 examples/s", "302"]
    # The Chinese twins: the same digits and units, a few Chinese ones.
    assert written("每步 2.97 ms，3 轮后 98.31%，快了十倍，峰值的五分之四，从 0.7 版起") == [
        "2.97 ms", "3 轮", "98.31%", "十倍", "五分之四",
    ]


def matches(prose_text, output_line):
    [number] = prose_numbers.measurements(prose_text)
    return any(prose_numbers.matches(number, other)
               for other in prose_numbers.text_numbers(output_line))


def test_how_a_prose_number_matches_an_output_with_its_unit():
    assert matches("3.5 s", "took 3.47 s")
    assert matches("3.5 s", "seconds to 98%: 3.47, 2.56")  # the unit named on the line
    assert not matches("3.5 s", "took 3.56 s")
    assert not matches("1.5 s", "1.500 epochs (seed 1)")  # the wrong unit
    assert matches("1.5 epochs", "1.500 epochs (seed 1)")
    assert matches("98.3%", "accuracy 0.9835") and matches("98.4%", "accuracy 0.9835")
    assert matches("98.35%", "98.35% right") and not matches("98.35%", "accuracy 0.9837")
    assert not matches("98%", "98 images")  # a whole number is a count, not a fraction
    assert matches("1.75x", "ratio: 1.75") and matches("3x", "(3x less)")
    assert not matches("ten times larger", "shape (10, 64)")
    assert matches("350 ms", "0.35 s") and matches("0.08 ms", "80.2 µs")
    assert matches("a tenth of it", "ratio: 0.099") and matches("a third of it", "3x less")
    assert not matches("0.08", "0.1")


# A frozen copy of chapter 8 as it stood when the review wrote these sentences (before it was
# split in two), images left out: the test checks the checker, so its chapter must not move.
CHAPTER_8 = ROOT / "tests" / "fixtures" / "prose_check_chapter_8.json"


def verdicts(sentence, after_cell):
    """The verdict on each number of a sentence, inserted as a markdown cell right after
    the cell `after_cell` of an in-memory copy of chapter 8 (None: it passes)."""
    notebook = copy.deepcopy(json.loads(CHAPTER_8.read_text(encoding="utf-8")))
    index = next(i for i, cell in enumerate(notebook["cells"]) if cell.get("id") == after_cell)
    notebook["cells"].insert(index + 1, {"cell_type": "markdown", "id": "inserted",
                                         "metadata": {}, "source": sentence})
    return {number["written"]: number["why"] for number in prose_numbers.prose_numbers(notebook)
            if number["cell"] == "inserted"}


# Chapter 8's stored outputs these sentences are read against: cell cd65fc9e prints
# "jax.jit per step: 2.97 ms" and "torch.compile per step: 3.61 ms"; cell dd7e0711
# "step throughput / matmuls-alone throughput: 0.99" and "step GFLOP/s / square-matmul
# peak: 0.78"; cell 4d5ab125 "seed 1: test accuracy 0.9838" and "mean 0.9831"; cell
# e98c4a11 "1.500 epochs (seed 1)" and cell da149b2a "seconds to 98%: 3.45, 2.56, 2.89".
FALSE_SENTENCES = [
    # two figures swapped between two labelled quantities
    ("d57e0661", "In this run `torch.compile` took 2.97 ms per step, `jax.jit` 3.61 ms.",
     "2.97 ms"),
    # a ratio given for the wrong comparison (0.99 is against the matmuls alone)
    ("83ab1264", "The step ran at 0.99 of the square-matmul peak.", "0.99"),
    # a single seed's value called an average
    ("54af91df", "The three seeds reached 98.38% on average after 3 epochs.", "98.38%"),
    # a number with the wrong unit (1.5 is in epochs)
    ("54af91df", "The fastest seed reached 98% after 1.5 s.", "1.5 s"),
]


@pytest.mark.parametrize(("after_cell", "sentence", "culprit"), FALSE_SENTENCES)
def test_false_sentences_against_chapter_8_are_flagged(after_cell, sentence, culprit):
    assert verdicts(sentence, after_cell)[culprit], f"not flagged: {sentence}"


def test_true_sentences_against_chapter_8_pass():
    assert not any(verdicts(
        "In this run `torch.compile` took 3.61 ms per step, `jax.jit` 2.97 ms.", "d57e0661"
    ).values())
    assert not any(verdicts(
        "The step ran at 0.78 of the square-matmul peak, and at 0.99 of the throughput of "
        "its matmuls alone.", "83ab1264"
    ).values())
    assert not any(verdicts(
        "The three seeds reached 98.31% on average after 3 epochs; seed 1 reached 98% after "
        "1.5 epochs and 2.56 s.", "54af91df"
    ).values())


# --- bindings, on the frozen chapter 8 --------------------------------------------------
NAME = "prose_check_chapter_8.json"


def chapter_8():
    return json.loads(CHAPTER_8.read_text(encoding="utf-8"))


def with_sentence(notebook, sentence, after_cell="d57e0661"):
    notebook = copy.deepcopy(notebook)
    index = next(i for i, cell in enumerate(notebook["cells"]) if cell.get("id") == after_cell)
    notebook["cells"].insert(index + 1, {"cell_type": "markdown", "id": "inserted",
                                         "metadata": {}, "source": sentence})
    return notebook


def bound(notebook):
    return {NAME: {"en": prose_numbers.bind_notebook(notebook, {})}}


def flagged(notebook, bindings):
    return {number["written"]: number["why"] for number in
            prose_numbers.check_notebook(notebook, NAME, "en", {}, bindings)
            if number["cell"] == "inserted"}


SENTENCE = ("Compiled against compiled, `jax.jit` was faster in this run: 2.97 ms against "
            "3.61 ms per step for `torch.compile`, and `jax.jit` with `lax.scan` took 2.51 ms.")


def test_a_bound_sentence_passes_and_so_do_true_variants():
    original = with_sentence(chapter_8(), SENTENCE)
    bindings = bound(original)
    assert [entry.get("at", {}).get("cell") for entry in bindings[NAME]["en"]["inserted"]] == [
        "cd65fc9e"] * 3
    for variant in (SENTENCE, SENTENCE.replace("2.97 ms", "3.0 ms"),
                    SENTENCE.replace("Compiled against", "Here, compiled against")):
        assert not flagged(with_sentence(chapter_8(), variant), bindings), variant


@pytest.mark.parametrize(("fault", "culprit"), [
    # two figures of one output line's labels swapped: the line heuristic cannot see this
    (SENTENCE.replace("2.97 ms", "X").replace("3.61 ms", "2.97 ms").replace("X", "3.61 ms"),
     "3.61 ms"),
    # a figure of another line of the same cell
    (SENTENCE.replace("2.51 ms", "3.25 ms"), "3.25 ms"),
    # a label beside a bound number replaced by another line's
    (SENTENCE.replace("with `lax.scan`", "with `PyTorch`"), "2.51 ms"),
    # a direction word flipped
    (SENTENCE.replace("faster", "slower"), "2.97 ms"),
])
def test_swaps_relabellings_and_flips_of_a_bound_sentence_are_stale(fault, culprit):
    bindings = bound(with_sentence(chapter_8(), SENTENCE))
    assert flagged(with_sentence(chapter_8(), fault), bindings).get(culprit), fault


def with_timing_output_edited(notebook, old, new):
    """A copy of the notebook with `old` replaced by `new` in the timing cell's output."""
    edited = copy.deepcopy(notebook)
    cell = next(c for c in edited["cells"] if c.get("id") == "cd65fc9e")
    cell["outputs"][0]["text"] = [line.replace(old, new) for line in cell["outputs"][0]["text"]]
    return edited


def test_a_binding_that_points_nowhere_and_an_unbound_number_fail():
    original = with_sentence(chapter_8(), SENTENCE)
    bindings = bound(original)
    gone = with_timing_output_edited(original, "jax.jit + lax.scan", "scan")
    assert "points nowhere" in flagged(gone, bindings)["2.51 ms"]
    added = with_sentence(chapter_8(), SENTENCE + " PyTorch eager took 3.25 ms.")
    assert "no binding" in flagged(added, bindings)["3.25 ms"]


def test_rewrite_updates_the_prose_from_the_bound_outputs():
    original = with_sentence(chapter_8(), SENTENCE)
    bindings = bound(original)
    rerun = with_timing_output_edited(original, "2.97", "3.04")
    assert flagged(rerun, bindings)["2.97 ms"].startswith("stale")
    notes = prose_numbers.rewrite_notebook(rerun, NAME, "en", bindings)
    assert notes == ["en cell d57e0661: 2.97 -> 3.04", "en cell inserted: 2.97 -> 3.04"]
    assert "`jax.jit` was faster in this run: 3.04 ms" in prose_numbers._text(
        next(c for c in rerun["cells"] if c.get("id") == "inserted")["source"])
    assert not flagged(rerun, bindings)


def test_rewrite_leaves_a_large_change_to_a_person():
    # 2.97 ms bound to a line that now reads 0.00 ms or 9.04 ms: more likely a wrong binding
    # (a progress bar, another row) than a new measurement; listed, not written
    original = with_sentence(chapter_8(), SENTENCE)
    bindings = bound(original)
    for new in ("0.00", "9.04"):
        rerun = with_timing_output_edited(original, "2.97", new)
        notes = prose_numbers.rewrite_notebook(rerun, NAME, "en", bindings)
        assert all("by hand" in note for note in notes) and notes, notes
        assert "faster in this run: 2.97 ms" in prose_numbers._text(
            next(c for c in rerun["cells"] if c.get("id") == "inserted")["source"])


def test_rewrite_reads_the_chinese_twin_against_the_english_outputs(tmp_path, monkeypatch):
    # The twin's own output copies are stale until dev/zh_sync.py runs; the rewrite reads
    # the English code cells, as the check does, so the Chinese numbers move too.
    import prose_rewrite  # noqa: PLC0415
    english = with_sentence(chapter_8(), SENTENCE)
    chinese = copy.deepcopy(english)
    cell = next(c for c in chinese["cells"] if c.get("id") == "inserted")
    cell["source"] = ["在这次运行中 `jax.jit` 更快：`jax.jit` + `lax.scan` 每步 2.51 ms，"
                      "`jax.jit` 每步 2.97 ms。"]
    bindings = {NAME: {"en": bound(english)[NAME]["en"],
                       "zh": prose_numbers.bind_notebook(
                           prose_numbers.records(chinese, english), {},
                           bound(english)[NAME]["en"])}}
    rerun = with_timing_output_edited(english, "2.97", "3.04")
    (tmp_path / "en").mkdir()
    (tmp_path / "zh").mkdir()
    (tmp_path / "en" / NAME).write_text(json.dumps(rerun), encoding="utf-8")
    (tmp_path / "zh" / NAME).write_text(json.dumps(chinese), encoding="utf-8")
    monkeypatch.setattr(prose_rewrite, "NOTEBOOK_DIR", tmp_path / "en")
    monkeypatch.setattr(prose_rewrite, "twin_path", lambda name: tmp_path / "zh" / Path(name).name)
    path = tmp_path / "bindings.json"
    path.write_text(prose_numbers.dump_bindings(bindings), encoding="utf-8")
    notes = prose_rewrite.rewrite([tmp_path / "en" / NAME], path)
    assert "zh cell inserted: 2.97 -> 3.04" in notes, notes
    zh = json.loads((tmp_path / "zh" / NAME).read_text(encoding="utf-8"))
    assert "`jax.jit` 每步 3.04 ms" in prose_numbers._text(
        next(c for c in zh["cells"] if c.get("id") == "inserted")["source"])


def test_bind_is_deterministic():
    notebook = with_sentence(chapter_8(), SENTENCE)
    assert prose_numbers.dump_bindings(bound(notebook)) == prose_numbers.dump_bindings(
        bound(copy.deepcopy(notebook)))


def test_a_fresh_bind_reproduces_the_committed_bindings(tmp_path):
    """`--bind` from scratch gives the committed file: no binding was edited by hand. A
    source the heuristic would not choose is named by a person as a "pin" (its reason),
    which a fresh bind keeps for the same number in the same cell."""
    committed = tmp_path / "prose_bindings.json"
    committed.write_text(prose_numbers.BINDINGS_PATH.read_text(encoding="utf-8"),
                         encoding="utf-8")
    before = json.loads(committed.read_text(encoding="utf-8"))
    fresh = prose_numbers.bind(all_notebooks(), committed)
    differ = [f"{name} {edition} cell {cell}: committed {before[name][edition].get(cell)}, "
              f"fresh {entries}"
              for name in fresh for edition in fresh[name]
              for cell, entries in fresh[name][edition].items()
              if before.get(name, {}).get(edition, {}).get(cell) != entries]
    differ += [f"{name} {edition} cell {cell}: committed, not bound afresh"
               for name in before for edition in before[name]
               for cell in before[name][edition]
               if cell not in fresh.get(name, {}).get(edition, {})]
    assert not differ, "\n".join(differ[:10])


def test_a_pin_keeps_its_source_and_a_fresh_bind_without_it_does_not():
    """Negative control: chapter 18's "one second" is the budget of its timing helper; the
    heuristic alone binds it to the loader's download timeout, so only the pin keeps it."""
    name = "18_reading_a_profile.ipynb"
    notebook = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))
    allowed = prose_numbers.load_allowed().get(name, {})
    committed = prose_numbers.load_bindings()[name]["en"]
    [pinned] = [e for e in committed["c18-peak-md"] if e["n"] == "one second"]
    assert pinned.get("pin") and pinned["at"]["cell"] == "c18-peak"
    kept = prose_numbers.bind_notebook(notebook, allowed, previous=committed)
    assert [e for e in kept["c18-peak-md"] if e["n"] == "one second"][0]["at"] == pinned["at"]
    unpinned = prose_numbers.bind_notebook(notebook, allowed)
    assert [e for e in unpinned["c18-peak-md"]
            if e["n"] == "one second"][0]["at"]["cell"] != "c18-peak"


# --- one value, named; comparisons against the bound values (issue 39, item 6) ---------
def tiny(output, *sentences, code="print(results)"):
    """A notebook of one section: a code cell whose stored output is `output`, then one
    markdown cell per sentence (ids md0, md1, ...)."""
    cells = [{"cell_type": "markdown", "id": "title", "metadata": {}, "source": "## Results"},
             {"cell_type": "code", "id": "run", "metadata": {}, "execution_count": 1,
              "source": code, "outputs": [{"output_type": "stream", "name": "stdout",
                                           "text": output}]}]
    cells += [{"cell_type": "markdown", "id": f"md{i}", "metadata": {}, "source": sentence}
              for i, sentence in enumerate(sentences)]
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def bound_and_flagged(notebook, previous=None):
    entries = prose_numbers.bind_notebook(notebook, {}, previous=previous)
    offenders = prose_numbers.check_notebook(notebook, "tiny.ipynb", "en", {},
                                             {"tiny.ipynb": {"en": entries}})
    return entries, {number["written"]: number["why"] for number in offenders}


TIMES = ("jax.jit per step: 2.97 ms\ntorch.compile per step: 3.61 ms\n"
         "time, torch.compile / jax.jit: 1.22x\n")


def test_a_number_that_matches_two_values_is_refused_until_its_words_or_a_pin_name_one():
    output = "adam: ratio 0.52\nsgd: ratio 0.48\n"
    entries, flagged = bound_and_flagged(tiny(output, "The ratio came out at 0.5 here."))
    [entry] = entries["md0"]
    assert "ambiguous" in entry and {at["line"] for at in entry["ambiguous"]} == {0, 1}
    assert "ambiguous" in flagged["0.5"] and "cell run" in flagged["0.5"]
    # its words name one: bound, not refused
    entries, flagged = bound_and_flagged(tiny(output, "With SGD it came out at 0.5."))
    assert entries["md0"][0]["at"]["line"] == 1 and not flagged
    # a person names it: a pin, kept by a fresh bind
    pin = {"n": "0.5", "at": entries["md0"][0]["at"], "pin": "the SGD line, read by a person"}
    entries, flagged = bound_and_flagged(tiny(output, "The ratio came out at 0.5 here."),
                                         previous={"md0": [pin]})
    assert entries["md0"][0]["pin"] and not flagged


def test_a_figure_of_the_neighbouring_line_beside_its_own_lines_words_is_refused():
    """The words beside it name another line than the one that printed its value, even
    where they are too far from it to be its label (rule 4)."""
    output = "PyTorch eager: 2.47 ms per step\nJAX eager: 8.54 ms per step\n"
    true = ("PyTorch eager, which sends each operation from Python through a thin "
            "dispatcher, took 2.47 ms per step.")
    assert not bound_and_flagged(tiny(output, true))[1]
    false = true.replace("2.47 ms", "8.54 ms")
    assert "mislabelled" in bound_and_flagged(tiny(output, false))[1]["8.54 ms"]


@pytest.mark.parametrize(("sentence", "culprit"), [
    ("`jax.jit` was slower: 2.97 ms against 3.61 ms for `torch.compile`.", "2.97 ms"),
    ("`torch.compile` took 3.61 ms per step, less than the 2.97 ms of `jax.jit`.", "3.61 ms"),
    ("`torch.compile` took 1.50x the time: 3.61 ms against 2.97 ms.", "1.50x"),
])
def test_a_comparison_that_the_bound_values_contradict_fails(sentence, culprit):
    output = TIMES + "time, torch.compile / jax.jit, worst round: 1.50x\n"
    flagged = bound_and_flagged(tiny(output, sentence))[1]
    assert flagged.get(culprit), (sentence, flagged)
    right = (sentence.replace("slower", "faster").replace("less than", "more than")
             .replace("1.50x", "1.22x"))
    assert not bound_and_flagged(tiny(output, right))[1], right


@pytest.mark.parametrize(("sentence", "flipped"), [
    # "than" far from the first number, past a colon and a name with digits in it
    ("`torch.compile` took 3.61 ms per step on the v5e-8: its whole compiled graph, more than "
     "the 2.97 ms of `jax.jit`.", ("more than", "less than")),
    # a preposition whose object is the second number; bare decimals too
    ("`torch.compile`'s 3.61 ms is above the 2.97 ms of `jax.jit`.", ("above", "below")),
    ("The ratio was 1.22x, and the worst round 0.83, just under the target of 0.97.",
     ("just under", "just over")),
    # the Chinese twins: 高于/低于, and 比 B 少/多
    ("`torch.compile` 每步 3.61 ms，高于 `jax.jit` 的 2.97 ms。", ("高于", "低于")),
    ("`jax.jit` 每步 2.97 ms，比 `torch.compile` 的 3.61 ms 少。", ("少", "多")),
])
def test_more_forms_of_comparison_are_checked_against_the_bound_values(sentence, flipped):
    output = TIMES + "worst round: 0.83\ntarget: 0.97\n"
    assert not bound_and_flagged(tiny(output, sentence))[1], sentence
    false = sentence.replace(*flipped)
    assert bound_and_flagged(tiny(output, false))[1], false
    # not a comparison: negated, or "over" a count of runs
    assert not bound_and_flagged(tiny(output, sentence.replace(flipped[0], "not " + flipped[1])
                                      if flipped[0].isascii() else sentence))[1]


@pytest.mark.parametrize("sentence", [
    "Seed 1 reached 98.20%.", "It reached 98.20% with seed 1.", "种子 1 达到 98.20%。",
])
def test_a_figure_of_another_row_of_a_keyed_table_is_caught(sentence):
    """A table whose rows differ only by a key (seed 0, seed 1, ...): the figure of the row
    the sentence does not name fails, whatever the binder bound it to."""
    output = "seed 0: 98.11%\nseed 1: 98.20%\nseed 2: 97.96%\n"
    assert not bound_and_flagged(tiny(output, sentence))[1], sentence
    false = sentence.replace("98.20%", "98.11%")
    assert "wrong row" in bound_and_flagged(tiny(output, false))[1].get("98.11%", ""), false
    # a key the table does not print, and a mention cut off by a comma, say nothing
    assert not bound_and_flagged(tiny(output, false.replace(" 1", " 7")))[1]
    assert not bound_and_flagged(tiny(output, "Seed 1, and then 98.11% for another."))[1]


def test_a_fall_from_one_figure_to_another_is_checked_and_a_ratio_below_one_is_not_faster():
    output = "loss at step 0: 2.51\nloss at step 24: 0.83\nspeed-up of the scan: 0.80x\n"
    assert not bound_and_flagged(tiny(output, "The loss falls from 2.51 to 0.83."))[1]
    assert bound_and_flagged(tiny(output, "The loss rises from 2.51 to 0.83."))[1]["2.51"]
    assert bound_and_flagged(tiny(output, "The scan is 0.80x faster than the loop."))[1]["0.80x"]


def test_versions_units_of_table_headers_and_comparison_references():
    assert written("JAX 0.12 and torch 2.97 ms; JAX 1.30x faster; Python 3.11") == [
        "2.97 ms", "1.30x"]
    [number] = [n for n in prose_numbers.text_numbers("time (ms)     speed-up\n2.97   1.32x")
                if n["value"] == 2.97]
    assert "ms" in number["named_units"]  # the header names the unit of its rows
    output = "one call per step: 80.0 ms\nscan + donation: 60.6 ms\nspeed-up: 1.32x\n"
    sentence = "The scanned loop was 1.32x faster than one call per step."
    assert not bound_and_flagged(tiny(output, sentence))[1]  # "call" is the reference


@pytest.mark.parametrize("module", ["prose_read", "prose_match", "prose_bind", "prose_check",
                                    "prose_rewrite"])
def test_prose_numbers_re_exports_every_name_of_its_modules(module):
    """dev/prose_numbers.py is the command line over the modules that read, match, bind,
    check and rewrite, and re-exports every name they define, underscored ones too, so that
    the tests and tools that call prose_numbers.X (prose_faults.py, mutants.py) still can."""
    source = importlib.import_module(module)
    tree = ast.parse(Path(source.__file__).read_text(encoding="utf-8"))
    defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    defined |= {target.id for node in tree.body if isinstance(node, ast.Assign)
                for target in node.targets if isinstance(target, ast.Name)}
    missing = sorted(name for name in defined
                     if getattr(prose_numbers, name, None) is not getattr(source, name))
    assert not missing, f"add to dev/prose_numbers.py's `from {module} import`: {missing}"
