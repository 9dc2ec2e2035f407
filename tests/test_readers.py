"""Dataset readers on small files the tests write themselves, and their bad-input errors."""

from __future__ import annotations

import gzip
import io
import pickle
import tarfile

import numpy as np
import pytest
from PIL import Image

from debatelab.data import load_raw
from debatelab.data.readers import read_cifar_batches, read_idx, read_image_folder, write_idx
from debatelab.errors import DatasetFormatError, DatasetNotFoundError

rng = np.random.default_rng(0)


@pytest.mark.parametrize("name", ["x.idx", "x.idx.gz"])
def test_idx_round_trip(tmp_path, name):
    array = rng.integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    write_idx(tmp_path / name, array)
    assert np.array_equal(read_idx(tmp_path / name), array)


def test_idx_truncated_is_a_clear_error(tmp_path):
    path = tmp_path / "t.idx"
    write_idx(path, rng.integers(0, 256, size=(4, 28, 28), dtype=np.uint8))
    path.write_bytes(path.read_bytes()[:-10])
    with pytest.raises(DatasetFormatError, match="truncated"):
        read_idx(path)


def test_idx_corrupt_gzip_and_bad_magic(tmp_path):
    gz = tmp_path / "c.idx.gz"
    gz.write_bytes(gzip.compress(b"\x00\x00\x08\x01" + (5).to_bytes(4, "big") + b"12345")[:-6])
    with pytest.raises(DatasetFormatError, match="corrupt or truncated"):
        read_idx(gz)
    bad = tmp_path / "m.idx"
    bad.write_bytes(b"\x12\x34\x08\x01\x00\x00\x00\x01\x00")
    with pytest.raises(DatasetFormatError, match="magic"):
        read_idx(bad)


def _write_mnist_layout(root, n_train=6, n_test=4, shape=(28, 28)):
    raw = root / "MNIST" / "raw"
    raw.mkdir(parents=True)
    data = {}
    for split, n, stem in [("train", n_train, "train"), ("test", n_test, "t10k")]:
        x = rng.integers(0, 256, size=(n, *shape), dtype=np.uint8)
        y = rng.integers(0, 10, size=n, dtype=np.uint8)
        write_idx(raw / f"{stem}-images-idx3-ubyte.gz", x)
        write_idx(raw / f"{stem}-labels-idx1-ubyte", y)  # mixed: one gzipped, one plain
        data[split] = (x, y)
    return data


def test_load_raw_reads_mnist_layout(tmp_path):
    data = _write_mnist_layout(tmp_path)
    for split in ("train", "test"):
        x, y = load_raw("mnist", split, tmp_path, download=False)
        assert np.array_equal(x, data[split][0]) and np.array_equal(y, data[split][1])


def test_wrong_image_shape_is_a_clear_error(tmp_path):
    _write_mnist_layout(tmp_path, shape=(20, 20))
    with pytest.raises(DatasetFormatError, match=r"shape \(20, 20\), expected \(28, 28\)"):
        load_raw("mnist", "train", tmp_path, download=False)


def test_missing_dataset_names_paths_and_variable(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_raw("fashionmnist", "test", tmp_path, download=False)
    msg = str(err.value)
    assert "'fashionmnist'" in msg and "DEBATELAB_DATA" in msg
    assert str(tmp_path / "FashionMNIST" / "raw" / "t10k-images-idx3-ubyte.gz") in msg


def test_unknown_dataset_name():
    with pytest.raises(ValueError, match="unknown dataset 'svhn'"):
        load_raw("svhn", "train")


def _cifar_batch(n):
    data = rng.integers(0, 256, size=(n, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, size=n).tolist()
    return {b"data": data, b"labels": labels}, data, labels


def test_cifar_batches_from_folder_and_tar(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    expected = []
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch, data, labels = _cifar_batch(3)
        (folder / name).write_bytes(pickle.dumps(batch))
        expected.append((data, labels))
    x, y = read_cifar_batches(folder, "test")
    assert x.shape == (3, 32, 32, 3)
    # channel-first rows of 1024 become HWC: red plane of the first image
    assert np.array_equal(x[0, :, :, 0].ravel(), expected[5][0][0, :1024])
    assert y.tolist() == expected[5][1]
    archive = tmp_path / "cifar-10-python.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(folder, arcname="cifar-10-batches-py")
    xt, yt = read_cifar_batches(archive, "train")
    assert xt.shape == (15, 32, 32, 3) and np.array_equal(
        xt[:3], read_cifar_batches(folder, "train")[0][:3]
    )
    assert yt.tolist() == sum((e[1] for e in expected[:5]), [])


def test_cifar_batch_corrupt(tmp_path):
    folder = tmp_path / "b"
    folder.mkdir()
    (folder / "test_batch").write_bytes(b"not a pickle")
    with pytest.raises(DatasetFormatError, match="not a readable CIFAR-10 batch"):
        read_cifar_batches(folder, "test")


def _png(array):
    buf = io.BytesIO()
    Image.fromarray(array).save(buf, format="PNG")
    return buf.getvalue()


def test_image_folder_in_tar_gz_and_folder(tmp_path):
    classes = ["cat", "dog"]
    images = {
        c: [rng.integers(0, 256, (8, 8, 3), dtype=np.uint8) for _ in range(2)] for c in classes
    }
    archive = tmp_path / "imgs.tar.gz"
    folder = tmp_path / "imgs"
    with tarfile.open(archive, "w:gz") as tar:
        for c in classes:
            for i, im in enumerate(images[c]):
                raw = _png(im)
                info = tarfile.TarInfo(f"test/{c}/{i:04d}.png")
                info.size = len(raw)
                tar.addfile(info, io.BytesIO(raw))
                (folder / "test" / c).mkdir(parents=True, exist_ok=True)
                (folder / "test" / c / f"{i:04d}.png").write_bytes(raw)
    for source in (archive, folder):
        x, y, found = read_image_folder(source, "test")
        assert found == classes and sorted(y[:2]) == sorted(y[2:]) == [0, 1]  # one per block
        for i, label in enumerate(y):  # block i // 2 holds image i // 2 of each class; lossless
            assert np.array_equal(x[i], images[classes[label]][i // 2])


def test_image_folder_mixed_sizes_is_an_error(tmp_path):
    for i, size in enumerate([8, 9]):
        (tmp_path / "train" / "a").mkdir(parents=True, exist_ok=True)
        (tmp_path / "train" / "a" / f"{i}.png").write_bytes(
            _png(np.zeros((size, size, 3), np.uint8))
        )
    with pytest.raises(DatasetFormatError, match="different shapes"):
        read_image_folder(tmp_path, "train")


def test_offline_copies_read(data_root):
    """The shared offline copies have the canonical sizes."""
    x, y = load_raw("mnist", "test", data_root)
    assert x.shape == (10000, 28, 28) and np.bincount(y).sum() == 10000
    x, y = load_raw("fashionmnist", "test", data_root)
    assert x.shape == (10000, 28, 28)


def test_offline_cifar_copy_is_balanced_in_every_prefix_and_slice(data_root):
    """The JPEG copy lies class by class on disk; read, every prefix is balanced to within one
    image per class, and evenly spaced slices hold every class (a fixed cycle of the ten classes
    made ``0:10000:10`` all airplanes and ``0:10000:2`` the even classes only)."""
    if not (data_root / "CIFAR10").exists():
        pytest.skip("no offline CIFAR-10 copy")
    x, y = load_raw("cifar10", "test", data_root)
    assert x.shape == (10000, 32, 32, 3)
    assert np.bincount(y[:100], minlength=10).tolist() == [10] * 10
    assert np.bincount(y, minlength=10).tolist() == [1000] * 10
    for step in (2, 5, 10, 50):
        counts = np.bincount(y[::step], minlength=10)
        expected = 1000 / step  # binomial spread: 4 standard deviations
        assert np.all(np.abs(counts - expected) < 4 * np.sqrt(expected)), (step, counts)
