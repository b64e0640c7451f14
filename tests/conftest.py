"""Shared helpers for the book's tests."""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = ROOT / "notebooks"


def toc_files(toc_path: Path = ROOT / "book" / "_toc.yml") -> list[str]:
    """Every `file:` entry of a TOC (the English book/_toc.yml unless told), in reading
    order, without suffix. zh/_toc.yml gives the Chinese edition's, relative to zh/."""
    toc = yaml.safe_load(toc_path.read_text())
    files = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def toc_notebooks() -> list[Path]:
    return [ROOT / f"{name}.ipynb" for name in toc_files() if name.startswith("notebooks/")]


def all_notebooks() -> list[Path]:
    return sorted(NOTEBOOK_DIR.glob("*.ipynb"))


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def output_text(output: dict) -> str:
    text = output.get("text", "")
    data = output.get("data", {})
    parts = [text if isinstance(text, str) else "".join(text)]
    for mime in ("text/plain", "text/html", "text/markdown"):
        value = data.get(mime, "")
        parts.append(value if isinstance(value, str) else "".join(value))
    if output.get("output_type") == "error":
        parts.append(output.get("ename", "") + ": " + output.get("evalue", ""))
    return "\n".join(parts)


def code_cells(notebook: dict) -> list[dict]:
    return [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]


def source(cell: dict) -> str:
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


NOTEBOOK_PARAMS = [pytest.param(p, id=p.name) for p in all_notebooks()]
ABSOLUTE_PATH = re.compile(r"(?<![\w.])/(root|home|work|Users|tmp|opt|usr/local)/[\w.-]+")


@pytest.fixture(scope="session")
def built_site():
    """Build the site once per test session into _build/html, the Chinese edition into
    _build/html/zh: (result of both builds, seconds, html folder).

    `--all` re-reads every page, so warnings from pages that did not change since the last
    build are reported again (`-W`: warnings are errors). Used by test_site.py and the
    browser test (test_browser.py).
    """
    html = ROOT / "_build" / "html"
    # `make book` just built these very sources from nothing, with -W (in CI, on a clean
    # clone): reuse that build instead of making a second one (dev/site_stamp.py).
    sys.path.insert(0, str(ROOT / "dev"))
    import site_stamp

    stamp = site_stamp.read_matching()
    if stamp is not None:
        note = f"reused make book's full build of the same sources ({stamp['seconds']:.0f} s)"
        return subprocess.CompletedProcess([], 0, note, ""), stamp["seconds"], html
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    result = subprocess.run(
        [str(jupyter_book), "build", ".", "--toc", "book/_toc.yml", "--config", "_config.yml",
         "-W", "-n", "--keep-going", "--all"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    # The Chinese edition, as `make book` builds it: book root zh/, copied to html/zh.
    zh_result = subprocess.run(
        [str(jupyter_book), "build", "zh", "-W", "-n", "--keep-going", "--all"],  # zh/_toc.yml
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if zh_result.returncode == 0 and html.exists():
        shutil.rmtree(html / "zh", ignore_errors=True)
        shutil.copytree(ROOT / "zh" / "_build" / "html", html / "zh")
    seconds = time.perf_counter() - start
    result = subprocess.CompletedProcess(
        result.args, result.returncode or zh_result.returncode,
        result.stdout + "\n--- Chinese edition (zh/) ---\n" + zh_result.stdout,
        result.stderr + zh_result.stderr,
    )
    return result, seconds, html
