"""Chip numbers in the prose are quoted from the book's TPU record (tests/tpu_record.json).

A chapter's stored outputs come from a CPU, so a figure measured on a TPU is not among them;
the prose may quote it from the chapter's last run on a TPU, which the record holds per code
cell (`output`: its printed text). Two places say where such a number comes from, with one
format, `tpu_record: NN_name.ipynb cell <cell id>`:

- an allow-list entry (tests/prose_numbers_allowed.json) whose reason starts with it: the
  number (a decimal, a percentage, points, ...; what tests/test_prose_numbers.py checks) is
  quoted from that cell's recorded output;
- an HTML comment `<!-- tpu_record: NN_name.ipynb cell <id> -->` in a paragraph: that
  paragraph's numbers in scientific notation (2.5e-03), which tests/test_prose_numbers.py
  does not check, are quoted from that cell's output, and the paragraph names the run's date
  and JAX version.

The test fails when such a number is not in the recorded output, rounded as the prose
rounds it (dev/prose_numbers.py's rule: within half a unit of its last digit, in its
unit), in either edition; so a chapter re-run on a TPU whose figures moved fails until its
prose is updated. The tests at the end show a wrong number caught, on a fake record.
"""

import json
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT, all_notebooks

sys.path.insert(0, str(ROOT / "dev"))
import prose_numbers  # noqa: E402
import tpu_record  # noqa: E402

SOURCE = re.compile(r"tpu_record: (?P<notebook>\d\d_\w+\.ipynb) cell (?P<cell>[\w-]+)")
MARKER = re.compile(r"<!--\s*" + SOURCE.pattern + r"\s*-->")
SCIENTIFIC = re.compile(r"(?<![\w.])(\d+(?:\.(\d+))?)[eE]([-+]?\d+)(?![\w.])")


def recorded_output(record: dict, notebook: str, cell: str) -> tuple[dict, str]:
    """The chapter's record entry and the printed text of one of its cells."""
    entry = record["chapters"].get(notebook)
    assert entry is not None, f"tests/tpu_record.json has no run of {notebook}"
    outputs = [c.get("output", "") for c in entry.get("cells", []) if c["id"] == cell]
    assert outputs, f"tests/tpu_record.json: {notebook} has no cell {cell}"
    return entry, outputs[0]


def quoted_from(number: dict, output: str) -> bool:
    """A prose number (prose_numbers.measurements) is in the output, as the prose rounds it."""
    return any(prose_numbers.matches(number, other)
               for line in output.splitlines() for other in prose_numbers.text_numbers(line))


def scientific(text: str) -> list[tuple[str, float, float]]:
    """Each number in scientific notation: as written, its value, half a unit of its last digit."""
    return [(m[0], float(m[0]), 0.5 * 10.0 ** (int(m[3]) - len(m[2] or "")))
            for m in SCIENTIFIC.finditer(text)]


def problems(notebooks: list[Path], allowed: dict, record: dict) -> list[str]:
    """What is wrong with the notebooks' quotes of the record (both editions: pass the twins)."""
    found = []
    for path in notebooks:
        notebook = json.loads(path.read_text(encoding="utf-8"))
        edition, entries = prose_numbers.edition_of(path), allowed.get(path.name, {})
        # 1. allow-list entries quoted from the record: the key, and each number of this
        #    edition's prose that the entry allows (the Chinese twin's "0.47 个百分点")
        sourced = {key: SOURCE.match(why) for key, why in entries.items()}
        sourced = {key: match for key, match in sourced.items() if match}
        numbers = [(key, number) for key in sourced for number in prose_numbers.measurements(key)]
        numbers += [(key, number) for number in prose_numbers.prose_numbers(notebook)
                    if (key := prose_numbers._allowed_key(number, entries)) in sourced]
        for key, number in {(key, number["written"]): (key, number)
                            for key, number in numbers}.values():
            match = sourced[key]
            _, output = recorded_output(record, match["notebook"], match["cell"])
            if not quoted_from(number, output):
                found.append(f"{edition}/{path.name}: {number['written']!r} (allow-list "
                             f"{key!r}) is not in the recorded output of {match['notebook']} "
                             f"cell {match['cell']}: {output!r}")
        # 2. paragraphs marked as quoting the record: their numbers in scientific notation
        for cell in notebook["cells"]:
            if cell["cell_type"] != "markdown":
                continue
            for paragraph in re.split(r"\n\s*\n", prose_numbers._text(cell["source"])):
                for match in MARKER.finditer(paragraph):
                    entry, output = recorded_output(record, match["notebook"], match["cell"])
                    printed = scientific(output)
                    quoted = scientific(prose_numbers.prose(paragraph))
                    where = f"{edition}/{path.name} cell {cell.get('id')}"
                    if not quoted:
                        found.append(f"{where}: a tpu_record marker with no number to quote")
                    for written, value, half in quoted:
                        if not any(abs(value - other) <= half * (1 + 1e-9)
                                   for _, other, _ in printed):
                            found.append(f"{where}: {written} is not in the recorded output "
                                         f"of {match['notebook']} cell {match['cell']}: "
                                         f"{output!r}")
                    for fact in (entry["date"][:10], f"JAX {entry['jax']}"):
                        if fact not in paragraph:
                            found.append(f"{where}: the paragraph does not name the run's "
                                         f"{fact!r}")
    return found


BOTH_EDITIONS = [path for en in all_notebooks()
                 for path in (en, prose_numbers.twin_path(en)) if path.exists()]


@pytest.mark.skipif(not tpu_record.RECORD.exists(), reason="no tests/tpu_record.json yet")
def test_chip_numbers_in_the_prose_are_in_the_tpu_record():
    record = tpu_record.load(tpu_record.RECORD)
    assert not problems(BOTH_EDITIONS, prose_numbers.load_allowed(), record)


def test_every_tpu_record_reason_has_the_format():
    """A reason that means to cite the record names its notebook and cell, as above."""
    for name, entries in prose_numbers.load_allowed().items():
        for key, why in entries.items():
            if why.startswith("tpu_record"):
                assert SOURCE.match(why), (
                    f"{name} {key!r}: write 'tpu_record: NN_name.ipynb cell ID'")


# --- the check, failing on purpose --------------------------------------------------------

FAKE_RECORD = {"chapters": {"08_fake.ipynb": {
    "date": "2026-12-06T04:38:53Z", "jax": "0.10.2",
    "cells": [{"id": "c1", "status": "ok", "seconds": 1.0,
               "output": "Adam:\n  constant step 97.46%, warmup + cosine 97.93% (+0.47 points)\n"
                         "float32 matmul at DEFAULT   relative error 2.5e-03\n"}]}}}
ALLOWED = {"08_fake.ipynb": {"0.47 points": "tpu_record: 08_fake.ipynb cell c1: the gain"}}
MARKED = ("Measured on a TPU v5e on 2026-12-06, JAX 0.10.2: a relative error of 2.5e-03 at "
          "DEFAULT. <!-- tpu_record: 08_fake.ipynb cell c1 -->")


def fake_chapter(tmp_path: Path, *markdown: str) -> Path:
    path = tmp_path / "08_fake.ipynb"
    cells = [{"cell_type": "markdown", "id": f"m{i}", "metadata": {}, "source": text}
             for i, text in enumerate(markdown)]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4,
                                "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_a_right_number_passes(tmp_path):
    path = fake_chapter(tmp_path, "On the chip, the schedule gains 0.47 points.", MARKED,
                        "在芯片上，调度提高了 0.47 个百分点。")
    assert problems([path], ALLOWED, FAKE_RECORD) == []
    # rounded as the prose rounds it: 2.5e-3 is 2.5e-03
    path = fake_chapter(tmp_path, MARKED.replace("2.5e-03", "2.5e-3"))
    assert problems([path], ALLOWED, FAKE_RECORD) == []


def test_a_wrong_number_is_caught(tmp_path):
    path = fake_chapter(tmp_path, "On the chip, the schedule gains 0.47 points.")
    # the allow-list key is not what the cell printed
    wrong = {"08_fake.ipynb": {"0.48 points": ALLOWED["08_fake.ipynb"]["0.47 points"]}}
    (problem,) = problems([path], wrong, FAKE_RECORD)
    assert "'0.48 points'" in problem and "cell c1" in problem
    # the right value, from another cell of the record
    other = {"08_fake.ipynb": {"0.47 points": "tpu_record: 08_fake.ipynb cell c2: the gain"}}
    with pytest.raises(AssertionError, match="no cell c2"):
        problems([path], other, FAKE_RECORD)
    # a number in scientific notation the cell did not print, a third digit it did not
    # print, and a paragraph that does not name the run's date
    for text, culprit in ((MARKED.replace("2.5e-03", "2.6e-03"), "2.6e-03"),
                          (MARKED.replace("2.5e-03", "2.54e-03"), "2.54e-03"),
                          (MARKED.replace("2026-12-06", "2026-12-05"), "2026-12-06")):
        (problem,) = problems([fake_chapter(tmp_path, text)], ALLOWED, FAKE_RECORD)
        assert culprit in problem, problem
