"""Supervised training of the gold classifier and the sparse judge, with a checkpoint cache.

Both use the published recipe (REFERENCE B): Adam lr 1e-3, ExponentialLR gamma 0.85 per epoch,
10 epochs, batch 256. The sparse judge sees each sample under a fresh uniformly random mask of
``reveal`` cells. Training is deterministic given the seed, and resumes from its last finished
epoch after an interruption.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from ..atomic import atomic_path
from ..data import ImageData, check_variant, data_revision
from ..errors import CacheError
from ..geometry import Grid
from ..paths import cache_dir
from ..progress import progress as progress_bar
from ..resume import settings_key
from .cnn import JudgeCNN, default_widths

#: One checkpoint format for every judge family: family, training config, model config, weights
#: and history in one file.
CHECKPOINT_FORMAT = "debatelab-judge/2"
#: Older formats that are still read, and the family each held.
LEGACY_FORMATS = {"debatelab-judge/1": "cell", "debatelab-pixel-judge/1": "pixel"}
#: Judge families: the training config class of each, as ``module:Class``.
FAMILIES = {
    "cell": "debatelab.judges.train:TrainConfig",
    "pixel": "debatelab.judges.pixel:PixelTrainConfig",
    "pixel-sparse": "debatelab.judges.pixel:DemoSparseConfig",
    "pixel-mlp": "debatelab.judges.pixel:PixelMLPConfig",
    "onpolicy": "debatelab.judges.onpolicy:OnPolicyConfig",
}
KINDS = ("gold", "sparse")
ARCHITECTURES = ("cnn", "bit")


@dataclass
class TrainConfig:
    """Settings of one supervised judge training run."""

    family: ClassVar[str] = "cell"

    variant: str = "mnist"
    """Dataset variant (see ``debatelab.data.VARIANTS``)."""
    kind: str = "gold"
    """``gold``: full images; ``sparse``: a fresh random mask of ``reveal`` cells per sample."""
    seed: int = 0
    """Seeds the weight init, the shuffling, the masks and dropout."""
    epochs: int = 10
    batch_size: int = 256
    lr: float = 1e-3
    gamma: float = 0.85
    """ExponentialLR decay, applied once per epoch."""
    grid: int = 6
    """Cells per side (sparse judge only)."""
    reveal: int = 4
    """Cells revealed per training sample (sparse judge only)."""
    widths: tuple[int, int] | None = None
    """Conv widths (c1, c2); ``None`` picks the published ones for the channel count."""
    train_limit: int | None = None
    """Use only the first N training images (for quick tests); ``None`` uses all."""
    extra: dict = field(default_factory=dict)
    """Free-form tags that become part of the cache key."""
    architecture: str = "cnn"
    """``cnn``: the frozen study's classifier (:class:`.cnn.JudgeCNN`); ``bit``: the argument
    channel's D3-style net (trunk, projection, 3 x 64 head, dropout 0.1) with no claim or bit
    inputs, the channel experiment's gold and random-mask baselines."""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"unknown judge kind {self.kind!r}; choose one of {KINDS}")
        if self.epochs < 1 or self.batch_size < 1:
            raise ValueError("epochs and batch_size must be >= 1")
        if self.widths is not None:
            self.widths = tuple(int(w) for w in self.widths)
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"unknown architecture {self.architecture!r}; choose one of "
                             f"{ARCHITECTURES}")  # fmt: skip

    def key(self) -> str:
        """Cache key: variant, kind, seed and a hash of every setting and, once a dataset's
        reader has changed (:func:`debatelab.data.data_revision` > 1), of its revision."""
        revision = data_revision(check_variant(self.variant)[0])
        settings = asdict(self)
        if self.architecture == "cnn":  # keys of the frozen study's judges predate the option
            del settings["architecture"]
        if revision != 1:
            settings["data_revision"] = revision
        tag = self.kind if self.architecture == "cnn" else f"{self.kind}-{self.architecture}"
        return settings_key(f"{self.variant}-{tag}-s{self.seed}", settings)


@dataclass
class TrainedJudge:
    """A trained judge of any family, as the cache returns it."""

    model: JudgeCNN
    config: object
    """The family's training config (``TrainConfig``, ``PixelTrainConfig``, ...)."""
    history: list[dict]
    """Per-epoch training loss and accuracy."""
    path: Path | None = None
    """Cache file it was loaded from or saved to."""
    cached: bool = False
    """True when loaded from the cache rather than trained in this call."""

    @property
    def family(self) -> str:
        return self.config.family


def _make_model(config: TrainConfig, data: ImageData) -> nn.Module:
    if config.architecture == "bit":  # the bit design's net, reading no claim and no bits
        from .designs import design

        return design("bit").build(data.in_channels, 1, 0, data.image_size)
    widths = config.widths or default_widths(data.in_channels)
    return JudgeCNN(data.in_channels, widths, image_size=data.image_size)


def _save(path: Path, payload: dict) -> None:
    with atomic_path(path) as tmp:
        torch.save(payload, tmp)


def read_checkpoint(path: Path) -> dict:
    """Read a checkpoint's payload; :class:`CacheError` when unreadable or not in the one
    checkpoint format."""
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many kinds on a damaged file
        raise CacheError(
            f"cache entry {path} is unreadable ({type(exc).__name__}: {exc}); delete it and "
            "run again to retrain"
        ) from exc
    fmt = payload.get("format") if isinstance(payload, dict) else None
    if fmt != CHECKPOINT_FORMAT and fmt not in LEGACY_FORMATS:
        raise CacheError(
            f"{path} is not a debatelab judge checkpoint ({CHECKPOINT_FORMAT}); "
            "delete it and run again to retrain"
        )
    return payload


def config_class(family: str):
    """The training config class of judge ``family``."""
    if family not in FAMILIES:
        raise CacheError(f"unknown judge family {family!r}; known: {sorted(FAMILIES)}")
    module, name = FAMILIES[family].split(":")
    return getattr(importlib.import_module(module), name)


def load_judge(path: str | os.PathLike, family: str | None = None) -> TrainedJudge:
    """Load a judge checkpoint of any family (or only of ``family``, else :class:`CacheError`)."""
    path = Path(path)
    payload = read_checkpoint(path)
    found = payload.get("family") or LEGACY_FORMATS.get(payload["format"])
    if family is not None and found != family:
        raise CacheError(f"{path} holds a {found} judge, not a {family} judge")
    model = _model_class(payload.get("model_class", "JudgeCNN"))(**payload["model_config"])
    model.load_state_dict(payload["state_dict"])
    model.eval()
    config = config_class(found)(**payload.get("config", payload.get("train_config")))
    return TrainedJudge(model, config, payload["history"], path, cached=True)


def _model_class(name: str):
    from .cnn import ClaimJudgeCNN
    from .mlp import PixelMLP

    classes = {"JudgeCNN": JudgeCNN, "ClaimJudgeCNN": ClaimJudgeCNN, "PixelMLP": PixelMLP}
    if name not in classes:
        raise CacheError(f"unknown judge model class {name!r}; known: {sorted(classes)}")
    return classes[name]


def load_checkpoint(path: str | os.PathLike) -> TrainedJudge:
    """Load a judge checkpoint (any family; see :func:`load_judge`)."""
    return load_judge(path)


def train_judge(
    config: TrainConfig,
    data: ImageData,
    resume_path: Path | None = None,
    progress: bool = True,
) -> TrainedJudge:
    """Train a judge on ``data.x_train``; if ``resume_path`` is given, checkpoint every epoch
    there and continue from it when it exists."""
    x, y = data.x_train, data.y_train
    if config.train_limit is not None:
        x, y = x[: config.train_limit], y[: config.train_limit]
    grid = Grid(data.image_size, config.grid)

    def inputs(idx: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
        xb = x[idx]
        if config.kind == "sparse":
            xb = grid.apply(xb, grid.random_masks(len(idx), config.reveal, gen))
        return xb

    model, history = fit_classifier(
        lambda: _make_model(config, data), inputs, y, config, resume_path, progress,
        desc=f"{config.kind} {config.variant}",
    )  # fmt: skip
    return TrainedJudge(model, config, history)


def fit_classifier(
    make_model: Callable[[], nn.Module],
    inputs: Callable[[torch.Tensor, torch.Generator], torch.Tensor] | None,
    y: torch.Tensor,
    config,
    resume_path: Path | None = None,
    progress: bool = True,
    desc: str = "judge",
    step: Callable | None = None,
    evaluate: Callable[[nn.Module, int], dict] | None = None,
) -> tuple[nn.Module, list[dict]]:
    """The shared training loop: Adam, ExponentialLR per epoch, shuffled batches, a checkpoint
    per epoch.

    Supervised (the default step): ``inputs(idx, gen)`` builds the batch of training indices
    ``idx`` (drawing any masks from ``gen``) and the loss is cross-entropy against ``y[idx]``.
    Any other loop passes ``step(model, idx, gen) -> (loss, n_correct)`` instead (the on-policy
    judges search before each step). ``evaluate(model, epoch)`` adds its metrics to each
    epoch's history entry. ``config`` supplies ``seed``, ``epochs``, ``batch_size``, ``lr`` and
    ``gamma``. Deterministic given the seed; with ``resume_path`` it checkpoints every epoch and
    continues from the last finished epoch with the same numbers as an uninterrupted run.
    Returns the model in eval mode and the per-epoch history (with each epoch's wall time).
    """
    import time

    gen = torch.Generator().manual_seed(config.seed)
    n = len(y)
    with torch.random.fork_rng():
        torch.manual_seed(config.seed)  # weight init and dropout draw from the global RNG
        model = make_model()
        loop_seed = getattr(config, "loop_seed", None)
        if loop_seed is not None:  # batches, draws and dropout apart from the weights' seed
            gen.manual_seed(loop_seed)
            torch.manual_seed(loop_seed)
        optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
        scheduler = torch.optim.lr_scheduler.ExponentialLR(optimiser, gamma=config.gamma)
        history: list[dict] = []
        start = 0
        if resume_path is not None and resume_path.exists():
            state = read_checkpoint(resume_path)
            model.load_state_dict(state["state_dict"])
            optimiser.load_state_dict(state["optimiser"])
            scheduler.load_state_dict(state["scheduler"])
            gen.set_state(state["generator"])
            torch.set_rng_state(state["torch_rng"])
            history, start = state["history"], len(state["history"])
        if step is None:
            loss_fn = nn.CrossEntropyLoss()

            def step(model, idx, gen):
                logits = model(inputs(idx, gen))
                return loss_fn(logits, y[idx]), (logits.argmax(1) == y[idx]).sum().item()

        for epoch in range(start, config.epochs):
            began = time.perf_counter()
            model.train()
            order = torch.randperm(n, generator=gen)
            total_loss, correct = 0.0, 0
            batches = order.split(config.batch_size)
            bar = progress_bar(
                batches, enabled=progress, leave=False,
                desc=f"{desc} {epoch + 1}/{config.epochs}",
            )  # fmt: skip
            for idx in bar:
                loss, hits = step(model, idx, gen)
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                optimiser.step()
                total_loss += loss.item() * len(idx)
                correct += hits
            scheduler.step()
            entry = {"epoch": epoch + 1, "loss": total_loss / n, "train_accuracy": correct / n}
            entry["train_seconds"] = round(time.perf_counter() - began, 2)
            if evaluate is not None:
                model.eval()
                entry.update(evaluate(model, epoch))
            entry["wall_seconds"] = round(time.perf_counter() - began, 2)
            history.append(entry)
            if resume_path is not None:
                _save(resume_path, {
                    "format": CHECKPOINT_FORMAT, "history": history,
                    "state_dict": model.state_dict(), "optimiser": optimiser.state_dict(),
                    "scheduler": scheduler.state_dict(), "generator": gen.get_state(),
                    "torch_rng": torch.get_rng_state(),
                })  # fmt: skip
    model.eval()
    return model, history


def judge_path(config, cache=None) -> Path:
    """Where the cache keeps the judge trained with ``config`` (any family)."""
    return cache_dir(cache) / "judges" / f"{config.key()}.pt"


def find_cached(config, cache=None) -> TrainedJudge | None:
    """The cached judge of ``config``, or None when it has not been trained; trains nothing."""
    path = judge_path(config, cache)
    return load_judge(path, config.family) if path.exists() else None


def cached_judge(config, cache, retrain: bool, train: Callable[[Path], TrainedJudge],
                 load: Callable[[Path], TrainedJudge] | None = None):  # fmt: skip
    """The cache-or-train step every trained model shares: load the finished checkpoint of
    ``config``, else ``train(partial_path)`` (resumable per epoch, keyed like the checkpoint) and
    store the result atomically in the one checkpoint format. ``load`` reads a finished
    checkpoint of a family whose classes live above this layer (the learned debaters);
    judges load with :func:`load_judge`."""
    path = judge_path(config, cache)
    if path.exists() and not retrain:
        return load(path) if load is not None else load_judge(path, config.family)
    partial = path.with_name(f"{config.key()}.partial.pt")
    if retrain:  # the partial checkpoint and any a training keeps beside it (warmup-<...>)
        for stale in path.parent.glob(f"*{config.key()}.partial.pt"):
            stale.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    judge = train(partial)
    _save(path, {
        "format": CHECKPOINT_FORMAT, "family": config.family, "config": asdict(judge.config),
        "model_class": type(judge.model).__name__, "model_config": judge.model.config(),
        "state_dict": judge.model.state_dict(),
        "history": judge.history,
    })  # fmt: skip
    partial.unlink(missing_ok=True)
    judge.path = path
    return judge


def get_judge(
    config: TrainConfig,
    data: ImageData,
    cache: str | os.PathLike | None = None,
    progress: bool = True,
    retrain: bool = False,
) -> TrainedJudge:
    """Load the judge for ``config`` from the cache, or train it and cache it."""
    return cached_judge(
        config, cache, retrain,
        lambda partial: train_judge(config, data, resume_path=partial, progress=progress),
    )  # fmt: skip
