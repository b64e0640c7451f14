import gzip
import hashlib
import os
import urllib.request
from pathlib import Path

import numpy as np

DATA_ROOT = Path(os.environ.get("JAXBOOK_DATA", "data"))
MNIST_MIRROR = "https://ossci-datasets.s3.amazonaws.com/mnist/"  # torchvision's mirror
MNIST_MD5 = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


def mnist_file(name):
    """The path of one MNIST .gz file under DATA_ROOT/MNIST/raw, downloaded if it is missing."""
    path = DATA_ROOT / "MNIST" / "raw" / name
    if not path.exists():
        try:
            with urllib.request.urlopen(MNIST_MIRROR + name, timeout=60) as response:
                payload = response.read()
        except OSError as error:
            raise FileNotFoundError(
                f"{name} is not in {path.parent.resolve()} and could not be downloaded "
                f"({type(error).__name__}). Connect to the internet and re-run this cell, or "
                "set JAXBOOK_DATA to a folder whose MNIST/raw/ holds the four .gz files."
            ) from None
        if hashlib.md5(payload).hexdigest() != MNIST_MD5[name]:
            raise ValueError(f"the download of {name} does not have the published checksum")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(payload)
    return path


def read_idx(path):
    """The array in one gzip-compressed IDX file of unsigned bytes (the MNIST format)."""
    with gzip.open(path, "rb") as file:
        raw = file.read()
    if raw[:3] != b"\x00\x00\x08":
        raise ValueError(f"{path.name} is not an IDX file of unsigned bytes")
    n_dims = raw[3]
    shape = tuple(int(size) for size in np.frombuffer(raw, dtype=">u4", count=n_dims, offset=4))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * n_dims).reshape(shape)


def load_mnist_arrays(train=True):
    """Flat float32 images (n, 784) with values 0..255, and int32 labels (n,)."""
    prefix = "train" if train else "t10k"
    images = read_idx(mnist_file(f"{prefix}-images-idx3-ubyte.gz"))
    labels = read_idx(mnist_file(f"{prefix}-labels-idx1-ubyte.gz"))
    return images.reshape(len(images), -1).astype(np.float32), labels.astype(np.int32)
