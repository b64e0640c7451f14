"""Keep the code that several chapters must each carry identical to its one source.

A chapter runs alone in Colab, with nothing from this repository beside it, so code that
several chapters need (the MNIST loader) is carried as a code cell in each of them. The
source of each such cell is a file in dev/snippets/; a notebook's copy is the code cell
that contains the snippet's marker line.

    python dev/sync_snippets.py          rewrite every copy from its source
    python dev/sync_snippets.py --check  only report copies that differ; exit 1 if any

tests/test_snippets.py runs the check. The Chinese notebooks get the English cells through
dev/zh_sync.py, and the benchmark imports the source file instead of carrying a copy. A
Chinese copy may translate the snippet's comments: it must equal the source token for token
with comments left out (zh_sync's rule), and a sync leaves such a copy alone.
(The setup cell has its own rule: chapter 0's copy is the source, see tests/test_setup_cell.py.)
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNIPPET_DIR = ROOT / "dev" / "snippets"
# snippet file -> the line that identifies a notebook's copy of it
SNIPPETS = {
    "mnist_loader.py": "def load_mnist(",  # torchvision datasets (Parts II and III)
    "mnist_idx.py": "def read_idx(",  # NumPy arrays from the IDX files (Part IV)
    "tiny_shakespeare.py": "def load_tiny_shakespeare(",  # the text of Part IV's GPT chapters
}
NOTEBOOK_DIRS = [ROOT / "notebooks", ROOT / "zh" / "notebooks"]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from zh_sync import same_code  # noqa: E402  (dev/, beside this file)


def source_text(cell):
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def snippet_text(name):
    return (SNIPPET_DIR / name).read_text().rstrip("\n")


def copies(notebook):
    """(cell, snippet name) for every code cell of `notebook` that carries a snippet."""
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        for name, marker in SNIPPETS.items():
            if marker in source_text(cell):
                yield cell, name


def is_chinese(path):
    return path.resolve().parent == (ROOT / "zh" / "notebooks").resolve()


def equal(path, copy, source):
    """A copy equals its source; a Chinese copy may have translated comments."""
    return copy == source or (is_chinese(path) and same_code(source, copy))


def drift(paths):
    """[(path, cell id, snippet name)] for every copy that differs from its source."""
    found = []
    for path in paths:
        notebook = json.loads(path.read_text())
        for cell, name in copies(notebook):
            if not equal(path, source_text(cell).rstrip("\n"), snippet_text(name)):
                found.append((path, cell.get("id"), name))
    return found


def sync(paths):
    changed = []
    for path in paths:
        notebook = json.loads(path.read_text())
        touched = False
        for cell, name in copies(notebook):
            text = snippet_text(name)
            if not equal(path, source_text(cell).rstrip("\n"), text):
                cell["source"] = text.splitlines(keepends=True)
                touched = True
        if touched:
            path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
            changed.append(path)
    return changed


def all_notebooks():
    return sorted(p for folder in NOTEBOOK_DIRS for p in folder.glob("*.ipynb"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report drift, change nothing")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args()
    paths = args.notebooks or all_notebooks()
    if args.check:
        found = drift(paths)
        for path, cell_id, name in found:
            print(f"{path.relative_to(ROOT)}: cell {cell_id} differs from dev/snippets/{name}")
        sys.exit(1 if found else 0)
    for path in sync(paths):
        print("updated", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
