"""ruff over the notebooks' code cells and the repository's Python files."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_is_clean():
    ruff = Path(sys.executable).parent / "ruff"
    folders = [
        name
        for name in ("notebooks", "tests", "tools", "dev", "benchmarks", "book/_ext")
        if (ROOT / name).exists()
    ]
    result = subprocess.run(
        [str(ruff), "check", *folders],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
