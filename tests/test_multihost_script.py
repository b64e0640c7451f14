"""Chapter 13 runs tools/multihost_train.py, the script a reader copies to a TPU slice.

The chapter must run alone in Colab, so it carries the script as a `%%writefile` cell; these
tests check that the file that cell writes is tools/multihost_train.py byte for byte (the
Chinese edition: the same code and lines, comments translated), and that the script joins a
cluster the way the chapter says: with no arguments on a slice, with the coordinator it is
given elsewhere, not at all for one process.
"""

import ast
import io
import json
import sys
import tokenize
from pathlib import Path

import pytest
from IPython.core.inputtransformer2 import TransformerManager

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tools" / "multihost_train.py"
CHAPTERS = [ROOT / "notebooks" / "13_multi_host.ipynb",
            ROOT / "zh" / "notebooks" / "13_multi_host.ipynb"]
MAGIC = "%%writefile multihost_train.py\n"


def without_comments(text):
    """The script's tokens, comments and layout left out (the Chinese copy translates them)."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    return [(token.type, token.string) for token in tokenize.generate_tokens(
        io.StringIO(text).readline) if token.type not in skip]


def written_text(cell_source):
    """What IPython's %%writefile writes for this cell: the body it hands to the magic."""
    python = TransformerManager().transform_cell(cell_source)
    call = ast.parse(python).body[0].value
    assert call.func.attr == "run_cell_magic", python[:200]
    name, line, body = (ast.literal_eval(argument) for argument in call.args)
    assert (name, line) == ("writefile", "multihost_train.py")
    return body


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.parent.parent.name)
def test_the_chapter_writes_the_repository_script(chapter):
    notebook = json.loads(chapter.read_text())
    cells = [
        "".join(cell["source"]) for cell in notebook["cells"]
        if cell["cell_type"] == "code" and "".join(cell["source"]).startswith(MAGIC)
    ]
    assert len(cells) == 1, f"{chapter.name}: {len(cells)} cells write the script"
    written = written_text(cells[0])
    if chapter.parent.parent.name == "zh":  # comments translated, the code the same
        assert without_comments(written) == without_comments(SCRIPT.read_text())
        assert written.count("\n") == SCRIPT.read_text().count("\n")
    else:  # the English edition's copy is the file, byte for byte
        assert written == SCRIPT.read_text(), (
            f"{chapter.relative_to(ROOT)}: the %%writefile cell differs from "
            "tools/multihost_train.py"
        )


def test_the_comparison_sees_a_one_character_change():
    source = MAGIC + SCRIPT.read_text().rstrip("\n")
    assert written_text(source) == SCRIPT.read_text()
    assert written_text(source.replace("STEP_SIZE = 0.05", "STEP_SIZE = 0.5")) != SCRIPT.read_text()


@pytest.fixture
def script(monkeypatch):
    """The script as a module, with jax.distributed.initialize recording its calls."""
    for name in ("JAXBOOK_COORDINATOR", "JAXBOOK_NUM_PROCESSES", "JAXBOOK_PROCESS_ID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.syspath_prepend(str(SCRIPT.parent))
    sys.modules.pop("multihost_train", None)
    import multihost_train

    calls = []
    monkeypatch.setattr(multihost_train.jax.distributed, "initialize",
                        lambda *args, **kwargs: calls.append((args, kwargs)))
    multihost_train.calls = calls
    return multihost_train


def test_a_slice_initializes_with_no_arguments(script):
    assert script.join_cluster(script.parse_args([])) == "detected"
    assert script.calls == [((), {})]


def test_elsewhere_the_coordinator_is_passed_on(script, monkeypatch):
    args = ["--coordinator", "127.0.0.1:1234", "--num-processes", "2", "--process-id", "1"]
    assert script.join_cluster(script.parse_args(args)) == "given coordinator"
    expected = {"coordinator_address": "127.0.0.1:1234", "num_processes": 2, "process_id": 1}
    assert script.calls == [((), expected)]
    monkeypatch.setenv("JAXBOOK_COORDINATOR", "10.0.0.1:99")
    monkeypatch.setenv("JAXBOOK_NUM_PROCESSES", "4")
    monkeypatch.setenv("JAXBOOK_PROCESS_ID", "3")
    script.join_cluster(script.parse_args([]))
    assert script.calls[-1] == ((), {"coordinator_address": "10.0.0.1:99", "num_processes": 4,
                                     "process_id": 3})


def test_one_process_joins_nothing_and_a_half_given_cluster_is_refused(script):
    assert script.join_cluster(script.parse_args(["--num-processes", "1"])) == "single process"
    assert script.calls == []
    with pytest.raises(SystemExit):
        script.parse_args(["--coordinator", "127.0.0.1:1234", "--num-processes", "2"])
