"""Offline with no MNIST, the loader every chapter defines stops with one clear message."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Any attempt to open a network connection fails at once, as on a machine with no network.
NO_NETWORK = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network disabled by the test")
socket.socket.connect = _refuse
socket.create_connection = _refuse
"""


def loader_source() -> str:
    notebook = json.loads((ROOT / "notebooks" / "00_setup.ipynb").read_text())
    for cell in notebook["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and "def load_mnist" in text:
            return text
    raise AssertionError("00_setup.ipynb defines no load_mnist")


def test_missing_mnist_offline_gives_a_clear_message(tmp_path):
    empty_root = tmp_path / "empty"
    empty_root.mkdir()
    script = NO_NETWORK + loader_source() + "\nload_mnist(train=True)\n"
    result = subprocess.run(
        [sys.executable, "-c", script],
        env={"JAXBOOK_DATA": str(empty_root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode != 0
    last_line = result.stderr.strip().splitlines()[-1]
    assert "MnistNotFoundError: MNIST is not in" in last_line, result.stderr
    assert "JAXBOOK_DATA" in last_line
    assert "train-images-idx3-ubyte.gz" in last_line
    # Our frame only: no traceback from inside torchvision or urllib.
    assert "torchvision" not in result.stderr.replace("torchvision.datasets.MNIST", "")
    assert "urllib" not in result.stderr
