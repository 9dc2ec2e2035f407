"""Readers for the raw dataset formats: IDX (MNIST, FashionMNIST), CIFAR-10 python batches,
and class-folder images (``train/<class>/*.jpg``) in a folder or a ``.tar.gz``.

Every reader returns ``(images, labels)`` as ``uint8`` arrays, images ``(N, H, W)`` or
``(N, H, W, C)``, and raises :class:`DatasetFormatError` naming the file for anything corrupt,
truncated or misshapen.
"""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tarfile
from pathlib import Path

import numpy as np
from PIL import Image

from ..errors import DatasetFormatError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")


def _open_maybe_gzip(path: Path) -> bytes:
    try:
        raw = path.read_bytes()
        if raw[:2] == b"\x1f\x8b":
            return gzip.decompress(raw)
        return raw
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise DatasetFormatError(
            f"{path}: cannot read ({exc}); the file is corrupt or truncated, delete it and "
            "download it again"
        ) from exc


def read_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (gzipped or not) of unsigned bytes into an array of its shape."""
    path = Path(path)
    data = _open_maybe_gzip(path)
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DatasetFormatError(f"{path}: not an IDX file (bad magic number)")
    dtype_code, ndim = data[2], data[3]
    if dtype_code != 0x08:
        raise DatasetFormatError(
            f"{path}: IDX type code 0x{dtype_code:02x} is not unsigned byte (0x08)"
        )
    header = 4 + 4 * ndim
    if ndim == 0 or len(data) < header:
        raise DatasetFormatError(f"{path}: truncated IDX header")
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    expected = int(np.prod(shape))
    if len(data) - header != expected:
        raise DatasetFormatError(
            f"{path}: IDX header promises shape {shape} ({expected} bytes) but the file holds "
            f"{len(data) - header}; it is truncated or corrupt, delete it and download it again"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape).copy()


def write_idx(path: str | os.PathLike, array: np.ndarray) -> None:
    """Write a ``uint8`` array as an IDX file (gzipped when the name ends in ``.gz``)."""
    array = np.ascontiguousarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(d).to_bytes(4, "big") for d in array.shape
    )
    payload = header + array.tobytes()
    path = Path(path)
    path.write_bytes(gzip.compress(payload) if path.suffix == ".gz" else payload)


def read_idx_pair(images_path: Path, labels_path: Path, image_shape=(28, 28)):
    """Read matching IDX image and label files and check that they agree."""
    images = read_idx(images_path)
    labels = read_idx(labels_path)
    if images.ndim != 3 or images.shape[1:] != tuple(image_shape):
        raise DatasetFormatError(
            f"{images_path}: images have shape {images.shape[1:]}, expected {tuple(image_shape)}"
        )
    if labels.ndim != 1 or len(labels) != len(images):
        raise DatasetFormatError(
            f"{labels_path}: {len(labels)} labels for {len(images)} images in {images_path}"
        )
    if labels.size and labels.max() > 9:
        raise DatasetFormatError(f"{labels_path}: label {labels.max()} is outside 0..9")
    return images, labels


# ---------------------------------------------------------------- CIFAR-10 python batches

CIFAR_TRAIN_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6))
CIFAR_TEST_BATCHES = ("test_batch",)


def _decode_cifar_batch(raw: bytes, name: str) -> tuple[np.ndarray, np.ndarray]:
    try:
        batch = pickle.loads(raw, encoding="bytes")
        data = np.asarray(batch[b"data"], dtype=np.uint8)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except Exception as exc:  # pickle raises many kinds on corrupt input
        raise DatasetFormatError(f"{name}: not a readable CIFAR-10 batch ({exc})") from exc
    if data.ndim != 2 or data.shape[1] != 3 * 32 * 32 or len(labels) != len(data):
        raise DatasetFormatError(
            f"{name}: CIFAR-10 batch has data shape {data.shape} and {len(labels)} labels; "
            "expected (N, 3072) and N labels"
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise DatasetFormatError(f"{name}: labels outside 0..9")
    images = data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(images), labels.astype(np.uint8)


def read_cifar_batches(source: str | os.PathLike, split: str) -> tuple[np.ndarray, np.ndarray]:
    """Read the official CIFAR-10 python batches of ``split`` from a folder or a ``.tar.gz``."""
    names = CIFAR_TRAIN_BATCHES if split == "train" else CIFAR_TEST_BATCHES
    source = Path(source)
    parts = []
    if source.is_dir():
        for name in names:
            path = source / name
            if not path.is_file():
                raise DatasetFormatError(f"{source}: missing CIFAR-10 batch file {name}")
            parts.append(_decode_cifar_batch(path.read_bytes(), str(path)))
    else:
        try:
            with tarfile.open(source, "r:*") as tar:
                members = {Path(m.name).name: m for m in tar.getmembers() if m.isfile()}
                for name in names:
                    if name not in members:
                        raise DatasetFormatError(f"{source}: archive has no batch {name}")
                    raw = tar.extractfile(members[name]).read()
                    parts.append(_decode_cifar_batch(raw, f"{source}:{name}"))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise DatasetFormatError(
                f"{source}: cannot read archive ({exc}); it is corrupt or truncated"
            ) from exc
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


# ---------------------------------------------------------------- class-folder images


def _decode_image(raw: bytes, name: str) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(raw)) as img:
            return np.asarray(img.convert("RGB"), dtype=np.uint8)
    except Exception as exc:  # PIL raises several kinds on corrupt input
        raise DatasetFormatError(f"{name}: not a readable image ({exc})") from exc


def _stack(images: list[np.ndarray], labels: list[int], source, split, classes):
    if not images:
        raise DatasetFormatError(f"{source}: no images under {split}/<class>/")
    shapes = {im.shape for im in images}
    if len(shapes) != 1:
        raise DatasetFormatError(
            f"{source}: images of split {split!r} have different shapes {sorted(shapes)}; "
            "all must be the same size"
        )
    return np.stack(images), np.asarray(labels, dtype=np.uint8)


#: Seed of the class order inside each block of an image folder read by :func:`read_image_folder`.
BLOCK_ORDER_SEED = 10


def read_image_folder(
    source: str | os.PathLike, split: str, classes: list[str] | None = None
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Read ``<split>/<class>/*.jpg`` images from a folder or a ``.tar.gz`` archive.

    Labels follow ``classes`` if given, else the class folders sorted by name. Returns
    ``(images (N, H, W, 3), labels, classes)``. The order stands in for the random order of
    the official CIFAR-10 batches: block r holds the r-th image of each class (file-name order
    within a class), the classes of each block in a fixed pseudo-random order
    (:data:`BLOCK_ORDER_SEED`). So every prefix is balanced to within one image per class, and an
    evenly spaced slice is balanced in expectation whatever its step (a fixed class order would
    make ``0:10000:10`` one class and ``0:10000:2`` half of them); class by class,
    ``train_limit`` or ``--images 0:1000`` would see one or two classes only.
    """
    source = Path(source)
    found: dict[str, list[tuple[str, bytes]]] = {}
    if source.is_dir():
        split_dir = source / split
        if not split_dir.is_dir():
            raise DatasetFormatError(f"{source}: no folder {split}/")
        for class_dir in sorted(p for p in split_dir.iterdir() if p.is_dir()):
            files = sorted(p for p in class_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
            found[class_dir.name] = [(str(f), f.read_bytes()) for f in files]
    else:
        try:
            with tarfile.open(source, "r:*") as tar:
                for member in tar:
                    if not member.isfile():
                        continue
                    parts = Path(member.name).parts
                    if parts and parts[0] == ".":
                        parts = parts[1:]
                    # accept an optional top-level folder: [top/]split/class/file
                    if len(parts) >= 3 and parts[-3] == split:
                        if Path(parts[-1]).suffix.lower() in IMAGE_SUFFIXES:
                            raw = tar.extractfile(member).read()
                            found.setdefault(parts[-2], []).append((member.name, raw))
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise DatasetFormatError(
                f"{source}: cannot read archive ({exc}); it is corrupt or truncated"
            ) from exc
    if classes is None:
        classes = sorted(found)
    unknown = set(found) - set(classes)
    if unknown:
        raise DatasetFormatError(f"{source}: unknown class folders {sorted(unknown)}")
    per_class = [sorted(found.get(name, [])) for name in classes]
    images, labels = [], []
    rng = np.random.default_rng(BLOCK_ORDER_SEED)
    for rank in range(max((len(files) for files in per_class), default=0)):
        for label in rng.permutation(len(per_class)).tolist():
            files = per_class[label]
            if rank < len(files):
                fname, raw = files[rank]
                images.append(_decode_image(raw, fname))
                labels.append(label)
    x, y = _stack(images, labels, source, split, classes)
    return x, y, list(classes)
