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
SHAKESPEARE_CHAPTERS = ["15_small_gpt.ipynb", "16_sharding_transformer.ipynb"]


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
