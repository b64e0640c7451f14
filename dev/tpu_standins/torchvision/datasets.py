"""torchvision.datasets.MNIST, as the chapters use it (see the package's docstring)."""

import gzip
from pathlib import Path

import numpy as np

try:
    import torch
except ImportError:  # the chapters that index MNIST import torch, but stay usable without
    torch = None
try:
    from PIL import Image
except ImportError:
    Image = None

__all__ = ["MNIST"]


class _Tensor(np.ndarray):
    """Where torch is missing: a NumPy array with torch's `.numpy()`."""

    def numpy(self):
        return np.asarray(self)


class _Picture:
    """Where PIL is missing: what the chapters read from a PIL image."""

    mode = "L"

    def __init__(self, pixels):
        self._pixels = pixels
        self.size = (pixels.shape[1], pixels.shape[0])  # PIL's (width, height)

    def __array__(self, dtype=None, copy=None):
        return self._pixels if dtype is None else self._pixels.astype(dtype)


def _read_idx(path: Path) -> np.ndarray:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as file:
        raw = file.read()
    dims = raw[3]
    shape = tuple(int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


class MNIST:
    """MNIST from root/MNIST/raw, like torchvision's (no download: the files must be there)."""

    resources = [
        "train-images-idx3-ubyte.gz",
        "train-labels-idx1-ubyte.gz",
        "t10k-images-idx3-ubyte.gz",
        "t10k-labels-idx1-ubyte.gz",
    ]
    classes = ["0 - zero", "1 - one", "2 - two", "3 - three", "4 - four", "5 - five",
               "6 - six", "7 - seven", "8 - eight", "9 - nine"]

    def __init__(self, root, train=True, transform=None, target_transform=None,
                 download=False):
        self.root = Path(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        images = self._find(f"{prefix}-images-idx3-ubyte")
        labels = self._find(f"{prefix}-labels-idx1-ubyte")
        if images is None or labels is None:
            raise RuntimeError(
                "Dataset not found" + (" and this stand-in for torchvision (dev/tpu_standins)"
                                       " cannot download it" if download else
                                       ". You can use download=True to download it"))
        data = _read_idx(images)
        targets = _read_idx(labels).astype(np.int64)
        if torch is not None:
            self.data, self.targets = torch.from_numpy(data.copy()), torch.from_numpy(targets)
        else:
            self.data, self.targets = data.view(_Tensor), targets.view(_Tensor)

    @property
    def raw_folder(self) -> Path:
        return self.root / "MNIST" / "raw"

    def _find(self, stem: str) -> Path | None:
        for name in (stem, stem + ".gz"):
            if (self.raw_folder / name).is_file():
                return self.raw_folder / name
        return None

    def __len__(self) -> int:
        return len(self.data)

    def __getitem__(self, index):
        pixels = np.asarray(self.data[index].numpy())
        picture = Image.fromarray(pixels) if Image is not None else _Picture(pixels)
        target = int(self.targets[index])
        if self.transform is not None:
            picture = self.transform(picture)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return picture, target

    def __repr__(self) -> str:
        split = "Train" if self.train else "Test"
        return (f"Dataset MNIST (stand-in)\n    Number of datapoints: {len(self)}\n"
                f"    Root location: {self.root}\n    Split: {split}")
