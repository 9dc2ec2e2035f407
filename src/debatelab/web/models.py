"""The models and data the demo serves, taken from the cache the other commands fill.

The demo trains nothing: it loads the MNIST gold classifier and sparse judge (``debatelab run``
or ``debatelab train``), the pixel judges (``debatelab train --kind pixel --pixels K``) and the
learned pixel debaters (``debatelab agents train --pixels K``) that are already cached, and
names the command that makes each missing one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import torch

from ..data import load_raw
from ..data.preprocess import apply_standardise, channel_stats, resize
from ..games.learned import DebaterNets
from ..judges import JudgeCNN, TrainConfig, find_cached
from ..judges.pixel import PixelTrainConfig
from ..judges.train import judge_path
from ..training.debaters import DebaterTrainConfig, load_debaters

#: The pixel game's K slider.
PIXEL_RANGE = (2, 12)
CLASSES = [str(d) for d in range(10)]


@dataclass
class DemoModels:
    """What the demo page runs on. ``None`` (or a missing K) means "not in the cache"."""

    gold: JudgeCNN | None
    """Gold classifier on full 18x18 images."""
    sparse: JudgeCNN | None
    """Sparse judge on 4 of the 6x6 cells."""
    mean: list[float]
    """Training-set pixel mean of the 18x18 images (standardisation)."""
    std: list[float]
    """Training-set pixel std of the 18x18 images."""
    test_images: np.ndarray
    """MNIST test images, ``uint8 (N, 28, 28)``."""
    test_labels: np.ndarray
    """Their labels."""
    pixel: dict[int, JudgeCNN] = field(default_factory=dict)
    """Pixel judges by K."""
    missing: dict[str, str] = field(default_factory=dict)
    """Missing model name -> the command that makes it."""
    debaters: dict[int, DebaterNets] = field(default_factory=dict)
    """Learned pixel debaters by K."""
    image_size: int = 18
    grid: int = 6
    reveal: int = 4

    def prepare(self, images: np.ndarray) -> torch.Tensor:
        """Images ``(N, 28, 28)`` in [0, 1] as the cell judges see them: resized, standardised."""
        x = resize(np.asarray(images, dtype=np.float32) * 255.0, self.image_size)
        return apply_standardise(x, self.mean, self.std)

    def small_view(self, image: np.ndarray) -> np.ndarray:
        """The resized ``(18, 18)`` image in [0, 1], for display."""
        x = resize(np.asarray(image, dtype=np.float32)[None] * 255.0, self.image_size)
        return x[0, 0].clamp(0, 1).numpy()


def train_command(name: str, seed: int = 0) -> str:
    """The command that makes model ``name`` (``gold``, ``sparse``, ``pixel6``, ``debaters6``,
    ...)."""
    if name.startswith("debaters"):
        command = f"debatelab agents train --pixels {int(name[8:])}"
    elif name.startswith("pixel"):
        command = f"debatelab train --kind pixel --pixels {int(name[5:])}"
    else:
        command = f"debatelab train --kind {name}"
    return command + (f" --seed {seed}" if seed else "")


def load_demo_models(
    cache: str | os.PathLike | None = None,
    data_dir: str | os.PathLike | None = None,
    seed: int = 0,
) -> DemoModels:
    """The cached MNIST judges of ``seed`` and the MNIST data; nothing is trained."""
    train_images, _ = load_raw("mnist", "train", data_dir)
    test_images, test_labels = load_raw("mnist", "test", data_dir)
    mean, std = channel_stats(resize(train_images, DemoModels.image_size))
    found: dict[str, JudgeCNN | None] = {}
    missing: dict[str, str] = {}
    for kind in ("gold", "sparse"):  # the MNIST judges `debatelab run` trains, default settings
        judge = find_cached(TrainConfig(variant="mnist", kind=kind, seed=seed), cache)
        found[kind] = None if judge is None else judge.model
        if judge is None:
            missing[kind] = train_command(kind, seed)
    pixel, debaters = {}, {}
    for k in range(PIXEL_RANGE[0], PIXEL_RANGE[1] + 1):
        judge = find_cached(PixelTrainConfig(pixels=k, seed=seed), cache)
        if judge is not None:
            pixel[k] = judge.model
        else:
            missing[f"pixel{k}"] = train_command(f"pixel{k}", seed)
        path = judge_path(DebaterTrainConfig(pixels=k, seed=seed), cache)
        if path.exists():
            debaters[k] = load_debaters(path).model
        else:
            missing[f"debaters{k}"] = train_command(f"debaters{k}", seed)
    return DemoModels(found["gold"], found["sparse"], mean, std, test_images, test_labels,
                      pixel, missing, debaters)  # fmt: skip


def missing_command(models: DemoModels, name: str) -> str:
    """The command that makes model ``name``, as recorded when the models were loaded."""
    return models.missing.get(name) or train_command(name)
