"""The sparse-pixel judge of the 2018 MNIST debate (REFERENCE A).

A CNN on 28x28 images with two input planes: the mask of revealed pixels and the revealed
values (pixel / 255, zero where hidden). It is trained with supervised learning on ``pixels``
uniformly random **nonzero** pixels per image (a fresh draw per sample) and frozen afterwards.
The network is :class:`JudgeCNN` with two input channels; training and the checkpoint cache are
shared with the cell-grid judges (:func:`debatelab.judges.train.fit_classifier`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
import torch

from ..data import load_raw
from ..errors import CacheError
from ..geometry import N_PIXELS, SIDE, pixel_values
from ..resume import settings_key
from .cnn import JudgeCNN
from .mlp import PixelMLP
from .pixel_fast import compact_pixels, sparse_pixel_forward
from .train import TrainedJudge, cached_judge, fit_classifier, load_judge

__all__ = [
    "JUDGE_KINDS", "N_PIXELS", "PAPER_BATCHES", "SIDE", "DemoSparseConfig", "PixelJudge", "PixelMLPConfig", "PixelPaperConfig", "pixel_judge_config", "PixelTrainConfig", "TrainedPixelJudge", "get_pixel_judge",
    "gradcam", "load_pixel_checkpoint", "make_pixel_model", "pixel_planes", "pixel_values",
    "random_nonzero_masks", "random_pixel_accuracy", "train_pixel_judge",
]  # fmt: skip


@dataclass
class PixelTrainConfig:
    """Settings of one pixel-judge training run."""

    family: ClassVar[str] = "pixel"

    pixels: int = 6
    """Nonzero pixels revealed per training sample (the paper: 4 or 6)."""
    seed: int = 0
    """Seeds the weight init, the shuffling, the pixel draws and dropout."""
    epochs: int = 10
    """Passes over the training set."""
    batch_size: int = 256
    """Samples per optimiser step."""
    lr: float = 1e-3
    """Adam learning rate."""
    gamma: float = 0.85
    """ExponentialLR decay, applied once per epoch."""
    widths: tuple[int, int] = (16, 32)
    """Conv widths (c1, c2); narrower than the cell judges' (32, 64) so tree search stays cheap."""
    train_limit: int | None = None
    """Use only the first N training images (quick tests); ``None`` uses all 60,000."""
    extra: dict = field(default_factory=dict)
    """Free-form tags that become part of the cache key."""

    def __post_init__(self):
        if self.pixels < 1 or self.pixels > N_PIXELS:
            raise ValueError(f"pixels must be in 1..{N_PIXELS}, got {self.pixels}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        self.widths = tuple(int(w) for w in self.widths)

    def key(self) -> str:
        """Cache key: pixels, seed and a hash of every setting."""
        return settings_key(f"mnist-pixel{self.pixels}-s{self.seed}", self)


@dataclass
class DemoSparseConfig(PixelTrainConfig):
    """The sparse classifier of the public in-browser demo (seed 002): trained with about 10 %
    of the pixels visible, each of the 784 pixels (ink or background) shown independently with
    probability ``visible`` in every sample, rather than K nonzero pixels. ``pixels`` is the K
    of the games it judges (its accuracy is measured on K random nonzero pixels); it does not
    change the training, though each K keys its own cache entry."""

    family: ClassVar[str] = "pixel-sparse"

    visible: float = 0.1
    """Probability that a pixel is visible in a training sample (the demo: about 10 %)."""

    def __post_init__(self):
        super().__post_init__()
        if not 0 < self.visible <= 1:
            raise ValueError(f"visible must be in (0, 1], got {self.visible}")

    def key(self) -> str:
        return settings_key(f"mnist-pixelsparse{round(100 * self.visible)}-s{self.seed}", self)


@dataclass
class PixelMLPConfig(PixelTrainConfig):
    """The paper's judge task (K random nonzero pixels, a fresh draw per sample) learned by a
    multilayer perceptron (:class:`PixelMLP`) instead of the CNN, trained three times as long
    with a slower decay: the recipe that comes closest to the paper's judge accuracy here
    (docs/results-pixel-debate.md, issue 18). ``widths`` is unused."""

    family: ClassVar[str] = "pixel-mlp"

    epochs: int = 30
    """Passes over the training set (each with a fresh mask per image)."""
    gamma: float = 0.9
    """ExponentialLR decay, applied once per epoch."""
    hidden: int = 1024
    """Width of both hidden layers."""

    def __post_init__(self):
        super().__post_init__()
        if self.hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {self.hidden}")

    def key(self) -> str:
        return settings_key(f"mnist-pixelmlp{self.pixels}-s{self.seed}", self)


#: Optimiser steps of the paper's judge training, by K: "30k (resp. 50k) batches of 128" for
#: 6 (resp. 4) pixels (REFERENCE A, section 3.1); other K take the 6-pixel budget.
PAPER_BATCHES = {6: 30_000, 4: 50_000}


@dataclass
class PixelPaperConfig(PixelTrainConfig):
    """The 2018 paper's own judge recipe (REFERENCE A, section 3.1): the TensorFlow layers
    tutorial's MNIST network (5x5 convolutions of 32 and 64 channels, a 1024-unit layer, dropout
    0.4) on the same two input planes, Adam at a constant 1e-4, batches of 128, for 30,000
    (K = 6) or 50,000 (K = 4) batches: 64 or 107 epochs of the 60,000 training images. Its 5x5
    convolutions have no sparse path: games judge with the dense forward."""

    family: ClassVar[str] = "pixel-paper"

    epochs: int | None = None
    """Passes over the training set (default: the paper's batches, ``PAPER_BATCHES``, rounded
    up to whole epochs of the training images: 64 or 107 on all 60,000, more with a
    ``train_limit``)."""
    batch_size: int = 128
    """Samples per optimiser step (the paper: 128)."""
    lr: float = 1e-4
    """Adam learning rate (the paper: 1e-4)."""
    gamma: float = 1.0
    """ExponentialLR decay per epoch (the paper: none, 1.0)."""
    widths: tuple[int, int] = (32, 64)
    """Conv widths (the tutorial's 32 and 64)."""
    kernel: int = 5
    """Conv kernel size (the tutorial's 5)."""
    hidden: int = 1024
    """Units of the dense layer (the tutorial's 1024)."""
    dropout: float = 0.4
    """Dropout before the output layer (the tutorial's 0.4)."""

    def __post_init__(self):
        if self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if self.epochs is None:
            images = min(self.train_limit or 60_000, 60_000)
            batches = PAPER_BATCHES.get(self.pixels, PAPER_BATCHES[6])
            self.epochs = -(-batches // -(-images // self.batch_size))
        super().__post_init__()
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")

    def key(self) -> str:
        return settings_key(f"mnist-pixelpaper{self.pixels}-s{self.seed}", self)


#: The pixel judges a game can use: the paper's task (K random nonzero pixels) learned by our
#: small CNN (nonzero), by an MLP (mlp) or with the paper's own recipe (paper), or the demo's
#: sparse classifier (about 10 % of all pixels).
JUDGE_KINDS = ("nonzero", "sparse", "mlp", "paper")
_JUDGE_CONFIGS = {"nonzero": PixelTrainConfig, "sparse": DemoSparseConfig, "mlp": PixelMLPConfig,
                  "paper": PixelPaperConfig}  # fmt: skip


def pixel_judge_config(kind: str, pixels: int, seed: int, epochs: int | None = None,
                       batch_size: int | None = None) -> PixelTrainConfig:  # fmt: skip
    """The training config of the pixel judge ``kind`` for the ``pixels``-pixel game
    (``epochs``: None keeps the kind's own, 10 for nonzero and sparse, 30 for mlp, the paper's
    64 or 107 for paper; ``batch_size``: None keeps the kind's own)."""
    if kind not in _JUDGE_CONFIGS:
        raise ValueError(f"judge must be one of {JUDGE_KINDS}, got {kind!r}")
    more = {} if epochs is None else {"epochs": epochs}
    if batch_size is not None:
        more["batch_size"] = batch_size
    return _JUDGE_CONFIGS[kind](pixels=pixels, seed=seed, **more)


def _check_positions(values: torch.Tensor, mask: torch.Tensor) -> None:
    if values.shape != mask.shape or values.ndim != 2 or values.shape[-1] != N_PIXELS:
        raise ValueError(
            f"values {tuple(values.shape)} and mask {tuple(mask.shape)} must both be (B, 784)"
        )


def pixel_planes(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Judge input ``(B, 2, 28, 28)``: the mask plane and the revealed values (0 where hidden)."""
    _check_positions(values, mask)
    m = mask.to(values.dtype)
    return torch.stack([m, values * m], dim=1).reshape(-1, 2, SIDE, SIDE)


def random_nonzero_masks(
    values: torch.Tensor, pixels: int, generator: torch.Generator
) -> torch.Tensor:
    """Boolean masks ``(B, 784)`` of ``pixels`` uniformly random nonzero pixels per image."""
    nonzero = values > 0
    short = nonzero.sum(1) < pixels
    if short.any():
        raise ValueError(
            f"{int(short.sum())} image(s) have fewer than {pixels} nonzero pixels; cannot reveal "
            f"{pixels} nonzero pixels"
        )
    keys = torch.rand(values.shape, generator=generator)
    keys[~nonzero] = -1.0
    idx = keys.topk(pixels, dim=1).indices
    return torch.zeros(values.shape, dtype=torch.bool).scatter_(1, idx, True)


def make_pixel_model(config: PixelTrainConfig) -> JudgeCNN | PixelMLP:
    if isinstance(config, PixelMLPConfig):
        return PixelMLP(in_channels=2, image_size=SIDE, hidden=config.hidden)
    if isinstance(config, PixelPaperConfig):
        return JudgeCNN(in_channels=2, widths=config.widths, image_size=SIDE,
                        hidden=config.hidden, dropout=config.dropout, kernel=config.kernel)  # fmt: skip
    return JudgeCNN(in_channels=2, widths=config.widths, image_size=SIDE)


#: A trained pixel judge is a :class:`TrainedJudge` of family "pixel" (one checkpoint format).
TrainedPixelJudge = TrainedJudge


def train_pixel_judge(
    config: PixelTrainConfig,
    images: np.ndarray,
    labels: np.ndarray,
    resume_path: Path | None = None,
    progress: bool = True,
) -> TrainedPixelJudge:
    """Train on ``uint8`` images ``(N, 28, 28)`` with a fresh random nonzero-pixel mask per
    sample (a :class:`DemoSparseConfig`: a fresh mask of independently visible pixels); with
    ``resume_path`` it checkpoints every epoch and resumes from it."""
    values = pixel_values(images)
    y = torch.as_tensor(np.asarray(labels)).long()
    if config.train_limit is not None:
        values, y = values[: config.train_limit], y[: config.train_limit]

    visible = getattr(config, "visible", None)

    def inputs(idx: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        v = values[idx]
        if visible is not None:  # the demo's sparse classifier: any pixel, independently
            return pixel_planes(v, torch.rand(v.shape, generator=gen) < visible)
        return pixel_planes(v, random_nonzero_masks(v, config.pixels, gen))

    model, history = fit_classifier(
        lambda: make_pixel_model(config), inputs, y, config, resume_path, progress,
        desc=f"pixel judge K={config.pixels}",
    )  # fmt: skip
    for p in model.parameters():
        p.requires_grad_(False)
    return TrainedPixelJudge(model, config, history)


def load_pixel_checkpoint(path: str | os.PathLike) -> TrainedJudge:
    """Load a pixel-judge checkpoint (frozen; the paper's or the demo's sparse classifier);
    :class:`CacheError` when it is unreadable or holds another family."""
    judge = load_judge(path)
    if judge.family not in ("pixel", "pixel-sparse", "pixel-mlp", "pixel-paper"):
        raise CacheError(f"{path} holds a {judge.family} judge, not a pixel judge")
    for p in judge.model.parameters():
        p.requires_grad_(False)
    return judge


def get_pixel_judge(
    config: PixelTrainConfig,
    data_dir: str | os.PathLike | None = None,
    cache: str | os.PathLike | None = None,
    progress: bool = True,
    retrain: bool = False,
) -> TrainedPixelJudge:
    """Load the pixel judge for ``config`` from the cache, or train it on MNIST and cache it."""

    def train(partial):
        images, labels = load_raw("mnist", "train", data_dir)
        return train_pixel_judge(config, images, labels, resume_path=partial, progress=progress)

    judge = cached_judge(config, cache, retrain, train)
    for p in judge.model.parameters():
        p.requires_grad_(False)
    return judge


class PixelJudge:
    """A frozen pixel judge as the games use it (a :class:`debatelab.interfaces.Judge`): logits
    of revealed pixels, counted and batched.

    On the CPU, positions that reveal at most ``sparse_limit`` pixels go through
    :class:`~debatelab.judges.pixel_fast.SparsePixelForward` (the same logits to float32
    rounding, several times faster); ``sparse_limit=0`` always runs the dense forward.
    ``evaluations`` counts judged positions and ``calls`` forward passes, for benchmarks.
    """

    def __init__(self, model: torch.nn.Module, device: str = "cpu", max_batch: int = 4096,
                 sparse_limit: int = 32):  # fmt: skip
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.model = model.to(device).eval()
        self.n_classes = getattr(model, "n_classes", 10)  # MNIST digits unless it says
        self.device = device
        self.max_batch = max_batch
        self.sparse_limit = sparse_limit
        self._sparse = None  # built on first use
        self.evaluations = 0
        self.calls = 0

    def sparse_forward(self):
        """The sparse path of this judge's model (``SparsePixelForward`` for the CNN,
        ``SparsePixelMLPForward`` for the MLP), or None where it does not apply (another
        layout, float64 weights, a GPU, ``sparse_limit=0``, the model in train mode); rebuilt
        when the model's weights have changed since."""
        if self.sparse_limit <= 0 or str(self.device) != "cpu" or self.model.training:
            return None
        if self._sparse is None or not self._sparse.matches(self.model):
            self._sparse = sparse_pixel_forward(self.model)
        return self._sparse

    @torch.inference_mode()
    def logits(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, 10)`` for images ``values (B, 784)`` with revealed ``mask (B, 784)``."""
        _check_positions(values, mask)  # the sparse path skips pixel_planes' own check
        sparse = self.sparse_forward()
        if sparse is not None and len(mask) and int(mask.sum(1).max()) > self.sparse_limit:
            sparse = None
        out = []
        for v, m in zip(values.split(self.max_batch), mask.split(self.max_batch), strict=True):
            if sparse is not None:
                out.append(sparse(*compact_pixels(v, m)))
            else:
                planes = pixel_planes(v.to(self.device), m.to(self.device))
                out.append(self.model(planes).float().cpu())
            self.calls += 1
        self.evaluations += len(values)
        if not out:
            return torch.zeros(0, self.n_classes)
        return torch.cat(out)


def random_pixel_accuracy(
    judge: PixelJudge,
    images: np.ndarray,
    labels: np.ndarray,
    pixels: int,
    generator: torch.Generator,
    draws: int = 1,
) -> float:
    """The judge's accuracy on ``pixels`` uniformly random nonzero pixels (Monte Carlo over
    ``draws`` masks per image)."""
    if draws < 1:
        raise ValueError(f"draws must be >= 1, got {draws}")
    values = pixel_values(images)
    y = torch.as_tensor(np.asarray(labels)).long()
    hits = 0.0
    for _ in range(draws):
        mask = random_nonzero_masks(values, pixels, generator)
        hits += (judge.logits(values, mask).argmax(1) == y).float().mean().item()
    return hits / draws


def gradcam(model: JudgeCNN, values: torch.Tensor, mask: torch.Tensor,
            classes: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """Grad-CAM saliency ``(B, 784)`` of each position's ``classes`` logit: the second conv
    layer's rectified maps (14x14) weighted by the spatial mean of that logit's gradient,
    rectified and spread back to the 28x28 pixels (each map cell covers 2x2 pixels)."""
    planes = pixel_planes(values, mask)
    was_training = model.training
    model.eval()
    with torch.enable_grad():
        maps = torch.relu(model.conv2(model.pool(torch.relu(model.conv1(planes)))))
        maps = maps.detach().requires_grad_(True)
        logits = model.head(model.pool(maps))
        chosen = logits.gather(1, classes.long()[:, None]).sum()
        (grads,) = torch.autograd.grad(chosen, maps)
    model.train(was_training)
    cam = torch.relu((grads.mean((2, 3), keepdim=True) * maps.detach()).sum(1))  # (B, 14, 14)
    return cam.repeat_interleave(2, 1).repeat_interleave(2, 2).reshape(len(values), N_PIXELS)
