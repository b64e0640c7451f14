import hashlib
import os
import urllib.request
from pathlib import Path

DATA_ROOT = Path(os.environ.get("JAXBOOK_DATA", "data"))
# JAXBOOK_SHAKESPEARE_URL names a mirror where raw.githubusercontent.com is out of reach.
SHAKESPEARE_URL = os.environ.get(
    "JAXBOOK_SHAKESPEARE_URL",
    "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt",
)
SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"


class ShakespeareNotFoundError(FileNotFoundError):
    pass


def check_shakespeare(payload, where):
    """Raise unless `payload` is the published file, byte for byte."""
    digest = hashlib.sha256(payload).hexdigest()
    if digest != SHAKESPEARE_SHA256:
        raise ValueError(
            f"{where} is not Tiny Shakespeare's input.txt: {len(payload):,} bytes with SHA-256 "
            f"{digest[:12]}..., where the published file has 1,115,394 bytes and "
            f"{SHAKESPEARE_SHA256[:12]}.... Delete it and re-run this cell, or put the right "
            "file there."
        )


def load_tiny_shakespeare():
    """The Tiny Shakespeare text (1,115,394 characters), downloaded once into DATA_ROOT.

    Every read checks the file's SHA-256, so a copy placed by hand is checked too."""
    path = DATA_ROOT / "tinyshakespeare" / "input.txt"
    if not path.exists():
        try:
            with urllib.request.urlopen(SHAKESPEARE_URL, timeout=60) as response:
                payload = response.read()
        except (OSError, ValueError) as error:
            raise ShakespeareNotFoundError(
                f"Tiny Shakespeare is not in {path.parent.resolve()} and could not be "
                f"downloaded from {SHAKESPEARE_URL} ({type(error).__name__}). Connect to the "
                "internet and re-run this cell, set JAXBOOK_SHAKESPEARE_URL to a mirror of "
                "input.txt, or set JAXBOOK_DATA to a folder whose tinyshakespeare/ holds it."
            ) from None
        check_shakespeare(payload, f"the download from {SHAKESPEARE_URL}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
    payload = path.read_bytes()
    check_shakespeare(payload, str(path))
    return payload.decode("utf-8")
