"""Code that several chapters carry has one source (dev/snippets/), and every copy equals it."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "dev"))

import sync_snippets  # noqa: E402

# The chapters that load MNIST through torchvision carry the loader; a chapter that lost its
# copy (or whose copy no longer contains the marker line) fails here, not silently.
MNIST_CHAPTERS = [
    "00_setup.ipynb",
    "07_mlp_from_scratch.ipynb",
    "08_optax_training.ipynb",
    "09_where_time_goes.ipynb",
    "10_fast_tuned_recipe.ipynb",
    "12_data_parallel.ipynb",
]
IDX_CHAPTERS = ["14_jax_ai_stack.ipynb", "17_preemption.ipynb"]
SHAKESPEARE_CHAPTERS = ["15_small_gpt.ipynb", "16_sharding_transformer.ipynb",
                        "18_reading_a_profile.ipynb", "19_pallas_kernels.ipynb",
                        "20_serving_gpt.ipynb"]


def test_every_copy_equals_its_source():
    found = sync_snippets.drift(sync_snippets.all_notebooks())
    assert not found, "run python dev/sync_snippets.py: " + ", ".join(
        f"{path.relative_to(ROOT)} cell {cell_id} ({name})" for path, cell_id, name in found
    )


def test_the_data_chapters_carry_their_loader():
    for name in MNIST_CHAPTERS:
        notebook = json.loads((ROOT / "notebooks" / name).read_text())
        carried = [snippet for _, snippet in sync_snippets.copies(notebook)]
        assert carried == ["mnist_loader.py"], f"{name} carries {carried}"
    for names, snippet_name in [(IDX_CHAPTERS, "mnist_idx.py"),
                                (SHAKESPEARE_CHAPTERS, "tiny_shakespeare.py")]:
        for name in names:
            notebook = json.loads((ROOT / "notebooks" / name).read_text())
            carried = [snippet for _, snippet in sync_snippets.copies(notebook)]
            assert carried == [snippet_name], f"{name} carries {carried}"


def test_the_benchmark_imports_the_source_instead_of_a_copy():
    text = (ROOT / "benchmarks" / "train_mnist.py").read_text()
    assert "from mnist_loader import" in text
    assert "def load_mnist(" not in text


def test_a_chinese_copy_may_translate_comments_but_not_code():
    source = sync_snippets.snippet_text("mnist_idx.py")
    zh_path = ROOT / "zh" / "notebooks" / "14_jax_ai_stack.ipynb"
    en_path = ROOT / "notebooks" / "14_jax_ai_stack.ipynb"
    commented = [line for line in source.splitlines() if "  # " in line]
    assert commented, "the snippet has no comment to translate"
    code, _ = commented[0].split("  # ", 1)
    translated = source.replace(commented[0], code + "  # 一行中文注释", 1)
    assert sync_snippets.equal(zh_path, translated, source)
    assert not sync_snippets.equal(en_path, translated, source)  # the English copy is exact
    changed_code = source.replace("def read_idx(", "def read_idx_(", 1)
    assert not sync_snippets.equal(zh_path, changed_code, source)


def _shakespeare_loader(monkeypatch, data_root, url=None):
    """A fresh namespace running the loader snippet under the given environment."""
    monkeypatch.setenv("JAXBOOK_DATA", str(data_root))
    if url is None:
        monkeypatch.delenv("JAXBOOK_SHAKESPEARE_URL", raising=False)
    else:
        monkeypatch.setenv("JAXBOOK_SHAKESPEARE_URL", url)
    namespace = {}
    exec(sync_snippets.snippet_text("tiny_shakespeare.py"), namespace)
    return namespace


def _real_shakespeare():
    import os

    import pytest
    path = Path(os.environ.get("JAXBOOK_DATA", ROOT / "data")) / "tinyshakespeare" / "input.txt"
    if not path.exists():
        pytest.skip(f"{path} is missing: run make data")
    return path.read_bytes()


def test_the_shakespeare_loader_checks_a_file_placed_by_hand(tmp_path, monkeypatch):
    """Issue 43, item 7: a hand-placed copy is checked on read. The negative control is the
    old loader's behaviour: a truncated copy used to be read as it was."""
    import pytest
    real = _real_shakespeare()
    placed = tmp_path / "tinyshakespeare" / "input.txt"
    placed.parent.mkdir()
    placed.write_bytes(real)
    namespace = _shakespeare_loader(monkeypatch, tmp_path)
    assert namespace["load_tiny_shakespeare"]() == real.decode("utf-8")
    for wrong in [real[:-1], real.replace(b"ROMEO", b"ROMEA", 1), real + b"\n"]:
        placed.write_bytes(wrong)
        with pytest.raises(ValueError, match="not Tiny Shakespeare"):
            namespace["load_tiny_shakespeare"]()


def test_the_shakespeare_mirror_variable_is_used_and_checked(tmp_path, monkeypatch):
    """JAXBOOK_SHAKESPEARE_URL names a mirror (a file:// URL stands in for one here): the right
    file is downloaded and saved, a wrong one is refused and not saved, and an unreachable
    mirror gives ShakespeareNotFoundError with the URL in its message."""
    import pytest
    real = _real_shakespeare()
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "good.txt").write_bytes(real)
    (mirror / "bad.txt").write_bytes(real[: len(real) // 2])
    data = tmp_path / "data"
    namespace = _shakespeare_loader(monkeypatch, data, (mirror / "good.txt").as_uri())
    assert namespace["load_tiny_shakespeare"]() == real.decode("utf-8")
    assert (data / "tinyshakespeare" / "input.txt").read_bytes() == real
    bad_data = tmp_path / "bad_data"
    namespace = _shakespeare_loader(monkeypatch, bad_data, (mirror / "bad.txt").as_uri())
    with pytest.raises(ValueError, match="not Tiny Shakespeare"):
        namespace["load_tiny_shakespeare"]()
    assert not (bad_data / "tinyshakespeare" / "input.txt").exists()
    missing = (mirror / "missing.txt").as_uri()
    namespace = _shakespeare_loader(monkeypatch, bad_data, missing)
    with pytest.raises(namespace["ShakespeareNotFoundError"], match="missing.txt"):
        namespace["load_tiny_shakespeare"]()
