"""Preprocessing of REFERENCE B: antialiased resize, per-channel standardisation with training
statistics, and optional per-class ZCA whitening.

The variants (six built-in: ``mnist``, ``mnist-whitened``, ``fashionmnist``,
``fashionmnist-whitened``, ``cifar10``, ``cifar10-whitened``; plug-ins add more) are declared in
:mod:`debatelab.data.variants`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ..errors import DatasetFormatError
from .variants import VariantNames, get_variant

#: The registered variants by name (a read-only view of the registry, plug-ins included).
VARIANTS = VariantNames()

ZCA_SHRINKAGE = 0.05  # Sigma_reg = Sigma + 0.05 * tr(Sigma) / D * I
ZCA_EIG_FLOOR = 1e-8  # eigenvalues clamped at max * 1e-8


def check_variant(name: str) -> tuple[str, bool]:
    """Return ``(dataset, whitened)`` for a variant name, or raise a ``ValueError`` listing them."""
    variant = get_variant(name)
    return variant.dataset, variant.whitened


def resize(images: np.ndarray, size: int) -> torch.Tensor:
    """``uint8`` images ``(N, H, W[, C])`` to float ``(N, C, size, size)`` in [0, 1], antialiased."""
    x = torch.from_numpy(np.asarray(images))
    if x.ndim == 3:
        x = x[:, None]
    elif x.ndim == 4:
        x = x.permute(0, 3, 1, 2)
    else:
        raise DatasetFormatError(f"images have shape {tuple(x.shape)}; expected (N,H,W[,C])")
    x = x.float().div_(255.0)
    if x.shape[-2:] == (size, size):
        return x.contiguous()
    out = [
        F.interpolate(chunk, size=(size, size), mode="bilinear", antialias=True,
                      align_corners=False)
        for chunk in x.split(8192)
    ]  # fmt: skip
    return torch.cat(out)


def standardise(train: torch.Tensor, *others: torch.Tensor):
    """Per-channel standardisation with the mean and std of ``train``."""
    mean, std = channel_stats(train)
    return [apply_standardise(t, mean, std) for t in (train, *others)], mean, std


def channel_stats(train: torch.Tensor) -> tuple[list[float], list[float]]:
    """Per-channel mean and std (1 where the std is 0) of ``(N, C, S, S)`` training images."""
    mean = train.double().mean(dim=(0, 2, 3))
    std = train.double().std(dim=(0, 2, 3))
    std = torch.where(std > 0, std, torch.ones_like(std))
    return mean.tolist(), std.tolist()


def apply_standardise(x: torch.Tensor, mean: list[float], std: list[float]) -> torch.Tensor:
    """``(x - mean) / std`` per channel of ``(N, C, S, S)``, with statistics from training data."""
    m = torch.tensor(mean, dtype=torch.float64).view(1, -1, 1, 1)
    s = torch.tensor(std, dtype=torch.float64).view(1, -1, 1, 1)
    return ((x.double() - m) / s).float()


def zca_matrix(cov: np.ndarray) -> np.ndarray:
    """The symmetric whitening matrix of the shrunk covariance, as in REFERENCE B."""
    d = cov.shape[0]
    reg = cov + ZCA_SHRINKAGE * (np.trace(cov) / d) * np.eye(d)
    eigval, eigvec = np.linalg.eigh(reg)
    eigval = np.maximum(eigval, eigval.max() * ZCA_EIG_FLOOR)
    return (eigvec / np.sqrt(eigval)) @ eigvec.T


def per_class_zca(
    x: torch.Tensor, y: np.ndarray, n_classes: int = 10
) -> tuple[torch.Tensor, dict[int, np.ndarray]]:
    """Whiten each class with its own ZCA and move it onto the global mean (float64 statistics).

    ``x`` is ``(N, C, H, W)``. Returns the whitened data and the per-class whitening matrices.
    """
    flat = x.reshape(len(x), -1).double().numpy()
    global_mean = flat.mean(axis=0)
    out = np.empty_like(flat)
    matrices = {}
    for k in range(n_classes):
        idx = np.flatnonzero(y == k)
        if len(idx) < 2:
            raise DatasetFormatError(f"class {k} has {len(idx)} samples; ZCA needs at least 2")
        xk = flat[idx]
        mu = xk.mean(axis=0)
        centred = xk - mu
        cov = centred.T @ centred / (len(idx) - 1)
        w = zca_matrix(cov)
        out[idx] = centred @ w + global_mean
        matrices[k] = w
    return torch.from_numpy(out).float().reshape(x.shape), matrices


@dataclass
class ImageData:
    """A preprocessed dataset variant: float32 images ``(N, C, S, S)`` and int64 labels."""

    variant: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    channel_mean: list[float]
    channel_std: list[float]

    @property
    def in_channels(self) -> int:
        return self.x_train.shape[1]

    @property
    def image_size(self) -> int:
        return self.x_train.shape[-1]


def preprocess(
    variant: str,
    train: tuple[np.ndarray, np.ndarray],
    test: tuple[np.ndarray, np.ndarray],
    image_size: int = 18,
) -> ImageData:
    """Apply REFERENCE B's preprocessing of a variant to raw ``(images, labels)`` pairs."""
    declared = get_variant(variant)
    whitened = declared.whitened
    xtr, xte = resize(train[0], image_size), resize(test[0], image_size)
    (xtr, xte), mean, std = standardise(xtr, xte)
    ytr = np.asarray(train[1], dtype=np.int64)
    yte = np.asarray(test[1], dtype=np.int64)
    if whitened:
        both, _ = per_class_zca(torch.cat([xtr, xte]), np.concatenate([ytr, yte]),
                                declared.n_classes)  # fmt: skip
        xtr, xte = both[: len(xtr)], both[len(xtr) :]
    return ImageData(
        declared.name, xtr, torch.from_numpy(ytr), xte, torch.from_numpy(yte), mean, std
    )


def load_variant(
    variant: str,
    data_dir: str | os.PathLike | None = None,
    image_size: int | None = None,
    download: bool = True,
) -> ImageData:
    """Load and preprocess a named dataset variant (at its declared image size by default)."""
    declared = get_variant(variant)
    train = declared.load_raw("train", data_dir, download)
    test = declared.load_raw("test", data_dir, download)
    prep = declared.preprocess or preprocess
    return prep(declared.name, train, test, image_size or declared.image_size)
