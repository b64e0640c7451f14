import hashlib
import os
import urllib.request
from pathlib import Path

DATA_ROOT = Path(os.environ.get("JAXBOOK_DATA", "data"))
SHAKESPEARE_URL = (
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
)
SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


class ShakespeareNotFoundError(FileNotFoundError):
    pass


def load_tiny_shakespeare():
    """The Tiny Shakespeare text (1,115,394 characters), downloaded once into DATA_ROOT."""
    path = DATA_ROOT / "tinyshakespeare" / "input.txt"
    if not path.exists():
        try:
            with urllib.request.urlopen(SHAKESPEARE_URL, timeout=60) as response:
                payload = response.read()
        except OSError as error:
            raise ShakespeareNotFoundError(
                f"Tiny Shakespeare is not in {path.parent.resolve()} and could not be "
                f"downloaded ({type(error).__name__}). Connect to the internet and re-run this "
                "cell, or set JAXBOOK_DATA to a folder whose tinyshakespeare/ holds input.txt."
            ) from None
        if hashlib.sha256(payload).hexdigest() != SHAKESPEARE_SHA256:
            raise ValueError("the download of input.txt does not have the published checksum")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
    return path.read_text(encoding="utf-8")
