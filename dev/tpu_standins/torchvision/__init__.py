"""A stand-in for torchvision, for the lent TPU machine only (dev/tpu_run.py).

There, torch installs as a CPU build from the machine's wheel folder, but the torchvision
wheel it holds fails at import beside it, and nothing else can be downloaded. The chapters
use one thing from torchvision: `torchvision.datasets.MNIST(root, train=..., download=True,
transform=...)`, its `.data` and `.targets` tensors, `len()` and indexing (a PIL image, or the
transform of one, and an int label), also through torch's DataLoader and Subset. This package
implements exactly that, from the same files (root/MNIST/raw/*-ubyte.gz, or the unpacked
files), and never downloads. dev/tpu_run.py puts it on sys.path only where the real
torchvision does not import, and the record of every chapter that imported it says so
(`stand_ins`). Readers and `make test` always use the real torchvision.
"""

from . import datasets

__version__ = "0.0+jaxbook.standin"
STANDIN = True
__all__ = ["datasets"]
