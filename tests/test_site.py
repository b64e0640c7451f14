"""The website builds from the committed notebooks with warnings treated as errors."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def built_site():
    """Build the site once per test session into _build/html and return its folder."""
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    start = time.perf_counter()
    result = subprocess.run(
        [str(jupyter_book), "build", ".", "--toc", "book/_toc.yml", "--config", "_config.yml",
         "-W", "-n", "--keep-going"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - start
    return result, seconds, ROOT / "_build" / "html"


def test_site_builds_with_warnings_as_errors(built_site):
    result, seconds, html = built_site
    assert result.returncode == 0, (result.stdout + result.stderr)[-5000:]
    assert (html / "index.html").exists()
    print(f"site built in {seconds:.1f} s")
