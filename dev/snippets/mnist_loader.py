import contextlib
import io
import os
from pathlib import Path

import torchvision

DATA_ROOT = Path(os.environ.get("JAXBOOK_DATA", "data"))
MNIST_FILES = [
    "train-images-idx3-ubyte.gz",
    "train-labels-idx1-ubyte.gz",
    "t10k-images-idx3-ubyte.gz",
    "t10k-labels-idx1-ubyte.gz",
]


class MnistNotFoundError(RuntimeError):
    pass


def load_mnist(train=True, transform=None):
    """MNIST from DATA_ROOT; torchvision downloads it the first time if it can."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return torchvision.datasets.MNIST(
                DATA_ROOT, train=train, download=True, transform=transform
            )
    except (RuntimeError, OSError) as error:
        raise MnistNotFoundError(
            f"MNIST is not in {DATA_ROOT.resolve() / 'MNIST' / 'raw'} and could not be "
            f"downloaded ({type(error).__name__}). Either connect to the internet and "
            f"re-run this cell, or copy the four files {', '.join(MNIST_FILES)} into that "
            "folder, or set the environment variable JAXBOOK_DATA to a folder whose "
            "MNIST/raw/ has them."
        ) from None
