"""Finding raw datasets under a data root, and downloading them from their public sources.

``load_raw(name, split)`` returns ``uint8`` images ``(N, H, W)`` or ``(N, H, W, 3)`` and labels.
It looks in the usual layouts under the data root; when nothing is there and the network is
reachable it downloads the canonical files (checked by MD5) into the data root; offline it raises
one :class:`DatasetNotFoundError` naming the dataset, every path tried and the variable to set.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..atomic import atomic_path
from ..errors import DatasetFormatError, DatasetNotFoundError
from ..paths import DATA_ENV, data_root, offline
from ..progress import progress
from .readers import read_cifar_batches, read_idx_pair, read_image_folder

CIFAR10_CLASSES = [
    "airplane", "automobile", "bird", "cat", "deer",
    "dog", "frog", "horse", "ship", "truck",
]  # fmt: skip

IDX_FILES = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}


@dataclass(frozen=True)
class Download:
    url: str
    filename: str
    md5: str
    md5_of_content: bool = False  # MD5 of the gunzipped bytes rather than of the file


# MD5s of the decompressed IDX files (the canonical values), and of the CIFAR-10 archive.
_MNIST_URL = "https://ossci-datasets.s3.amazonaws.com/mnist/"
_FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"
IDX_MD5 = {
    "mnist": {
        "train-images-idx3-ubyte": "6bbc9ace898e44ae57da46a324031adb",
        "train-labels-idx1-ubyte": "a25bea736e30d166cdddb491f175f624",
        "t10k-images-idx3-ubyte": "2646ac647ad5339dbf082846283269ea",
        "t10k-labels-idx1-ubyte": "27ae3e4e09519cfbb04c329615203637",
    },
    "fashionmnist": {
        "train-images-idx3-ubyte": "f4a8712d7a061bf5bd6d2ca38dc4d50a",
        "train-labels-idx1-ubyte": "9018921c3c673c538a1fc5bad174d6f9",
        "t10k-images-idx3-ubyte": "8181f5470baa50b63fa0f6fddb340f0a",
        "t10k-labels-idx1-ubyte": "15d484375f8d13e6eb1aabb0c3f46965",
    },
}
IDX_URLS = {"mnist": _MNIST_URL, "fashionmnist": _FASHION_URL}
CIFAR_DOWNLOAD = Download(
    "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
    "cifar-10-python.tar.gz",
    "c58f30108f718f92721af3b95e74349a",
)

DATASETS = {"mnist": "MNIST", "fashionmnist": "FashionMNIST", "cifar10": "CIFAR10"}

#: Revision of a dataset's images as read (their order included). Judges and all-mask stores are
#: keyed by it, so a reader change never reuses a judge or store made from the old images.
#: CIFAR-10, revision 2: the image-folder copy's classes in pseudo-random order inside each block
#: (revision 1 cycled them in a fixed order, so every tenth image was one class).
DATA_REVISIONS = {"cifar10": 2}


def data_revision(name: str) -> int:
    """The revision of built-in dataset ``name`` (1 unless its reader changed what it returns);
    :func:`debatelab.data.variants.data_revision` answers for plug-ins' datasets too."""
    return DATA_REVISIONS.get(name, 1)


def _idx_candidates(root: Path, folder: str) -> list[Path]:
    return [root / folder / "raw", root / folder, root / folder.lower(), root]


def _find_idx(root: Path, folder: str, split: str, tried: list[Path]):
    img_name, lab_name = IDX_FILES[split]

    def first(base: Path, name: str) -> Path | None:
        for suffix in (".gz", ""):
            tried.append(base / (name + suffix))
            if (base / (name + suffix)).is_file():
                return base / (name + suffix)
        return None

    for base in _idx_candidates(root, folder):
        img, lab = first(base, img_name), first(base, lab_name)
        if img and lab:
            return img, lab
    return None


def _find_cifar(root: Path, tried: list[Path]):
    """Return ``("batches", path)`` or ``("folder", path)`` for the first CIFAR-10 copy found."""
    candidates = [
        ("batches", root / "CIFAR10" / "cifar-10-batches-py"),
        ("batches", root / "cifar-10-batches-py"),
        ("batches", root / "CIFAR10" / "cifar-10-python.tar.gz"),
        ("batches", root / "cifar-10-python.tar.gz"),
        ("folder", root / "CIFAR10" / "cifar10-jpeg.tar.gz"),
        ("folder", root / "CIFAR10" / "cifar10-jpeg"),
        ("folder", root / "CIFAR10"),
    ]
    for kind, path in candidates:
        tried.append(path)
        if kind == "batches" and (path.is_file() or (path / "test_batch").is_file()):
            return kind, path
        if kind == "folder" and (path.is_file() or (path / "train").is_dir()):
            return kind, path
    return None


def _md5(path: Path, decompress: bool = False) -> str:
    digest = hashlib.md5()
    opener = gzip.open if decompress else open
    with opener(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(item: Download, dest_dir: Path) -> Path:
    """Download one file atomically into ``dest_dir`` and check its MD5."""
    dest = dest_dir / item.filename
    with atomic_path(dest) as tmp:
        with urllib.request.urlopen(item.url, timeout=30) as response, tmp.open("wb") as out:
            total = int(response.headers.get("Content-Length") or 0) or None
            with progress(total=total, unit="B", unit_scale=True, desc=item.filename) as bar:
                for block in iter(lambda: response.read(1 << 16), b""):
                    out.write(block)
                    bar.update(len(block))
        got = _md5(tmp, item.md5_of_content)
        if got != item.md5:
            raise DatasetFormatError(
                f"download of {item.url} has MD5 {got}, expected {item.md5}; try again later"
            )
    return dest


def _not_found(name: str, root: Path, tried: list[Path], why: str) -> DatasetNotFoundError:
    paths = "\n  ".join(str(p) for p in dict.fromkeys(tried))
    return DatasetNotFoundError(
        f"dataset {name!r} not found under data root {root} ({why}). Paths tried:\n  {paths}\n"
        f"Put the files in one of these places, or point ${DATA_ENV} (or --data-dir) at a "
        "folder that holds them."
    )


def _try_download(name: str, root: Path, tried: list[Path], allow: bool) -> None:
    if not allow or offline():
        raise _not_found(name, root, tried, "downloads are switched off")
    if name == "cifar10":
        items = [CIFAR_DOWNLOAD]
        dest = root / "CIFAR10"
    else:
        items = [
            Download(IDX_URLS[name] + stem + ".gz", stem + ".gz", md5, md5_of_content=True)
            for stem, md5 in IDX_MD5[name].items()
        ]
        dest = root / DATASETS[name] / "raw"
    try:
        for item in items:
            download(item, dest)
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        raise _not_found(name, root, tried, f"download failed: {exc}") from exc


def load_raw(
    name: str, split: str, data_dir: str | os.PathLike | None = None, download: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Raw ``uint8`` images and labels of a built-in dataset ``name`` (mnist, fashionmnist,
    cifar10); the built-in variants' sources (:mod:`debatelab.data.variants`) read through it."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)}")
    if split not in ("train", "test"):
        raise ValueError(f"unknown split {split!r}; choose 'train' or 'test'")
    root = data_root(data_dir)
    for attempt in range(2):
        tried: list[Path] = []
        if name == "cifar10":
            found = _find_cifar(root, tried)
            if found:
                kind, path = found
                if kind == "batches":
                    return read_cifar_batches(path, split)
                x, y, _ = read_image_folder(path, split, CIFAR10_CLASSES)
                return x, y
        else:
            found = _find_idx(root, DATASETS[name], split, tried)
            if found:
                return read_idx_pair(*found)
        if attempt == 0:
            _try_download(name, root, tried, download)
    raise _not_found(name, root, tried, "downloaded files were not where expected")
