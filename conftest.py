"""Root conftest: loads the nbval tolerance plugin for the notebooks (tests/nbval_tolerance.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

pytest_plugins = ["nbval_tolerance"]
