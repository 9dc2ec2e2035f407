"""One checkpoint format and one cache for every trained thing, and one registry of their
families (:data:`FAMILIES`): the judges of every family
(cell, pixel, on-policy of every design) and the learned debaters.

A checkpoint (``debatelab-judge/2``) holds the family, the training config, the model class and
its config, the weights and the per-epoch history; a partial one (written every epoch by
:func:`.train.fit_classifier`) also the optimiser, scheduler and RNG states. The cache keys each
finished checkpoint by its config's ``key()`` (:func:`judge_path`); :func:`cached_judge` is the
cache-or-train step every trained model shares.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from ..atomic import atomic_path
from ..errors import CacheError
from ..paths import cache_dir
from .cnn import JudgeCNN

#: One checkpoint format for every judge family: family, training config, model config, weights
#: and history in one file.
CHECKPOINT_FORMAT = "debatelab-judge/2"
#: Older formats that are still read, and the family each held.
LEGACY_FORMATS = {"debatelab-judge/1": "cell", "debatelab-pixel-judge/1": "pixel"}


def _resolve(ref: str):
    module, name = ref.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class CheckpointFamily:
    """A family of trained models stored in the one checkpoint format: its training config
    class and, for a family whose model classes live outside :func:`_model_class` (the learned
    debaters, above this layer), the loader of a finished checkpoint; both as
    ``module:name``, imported on first use."""

    name: str
    config: str
    """The training config class, ``module:Class`` (its ``family`` is ``name``)."""
    loader: str | None = None
    """``module:function`` reading a finished checkpoint into a :class:`TrainedJudge`; None:
    :func:`load_judge`."""
    summary: str = ""

    def config_class(self):
        return _resolve(self.config)

    def load(self, path: Path) -> TrainedJudge:
        return _resolve(self.loader)(path) if self.loader else load_judge(path, self.name)


#: Every family of trained things (judges of every kind and the learned debaters), by the
#: name its checkpoints record (``pixel-sparse`` and ``pixel-mlp`` keep their hyphens, so this is
#: a plain mapping rather than a :class:`debatelab.registry.Registry`).
FAMILIES: dict[str, CheckpointFamily] = {}


def register_family(family: CheckpointFamily) -> CheckpointFamily:
    """Add a family of trained models; a second one of the same name is refused."""
    if not isinstance(family, CheckpointFamily):
        raise TypeError(f"expected a CheckpointFamily, got {type(family).__name__}")
    if family.name in FAMILIES:
        raise ValueError(f"two checkpoint families are named {family.name!r}")
    FAMILIES[family.name] = family
    return family


def checkpoint_family(name: str) -> CheckpointFamily:
    """The registered family ``name``; an unknown one is a :class:`CacheError`."""
    if name not in FAMILIES:
        raise CacheError(f"unknown judge family {name!r}; known: {sorted(FAMILIES)}")
    return FAMILIES[name]


for _family in (
    CheckpointFamily("cell", "debatelab.judges.train:TrainConfig", None,
                     "the gold classifier and the sparse judge of a cell grid"),
    CheckpointFamily("pixel", "debatelab.judges.pixel:PixelTrainConfig", None,
                     "the pixel judge of the 2018 debate"),
    CheckpointFamily("pixel-sparse", "debatelab.judges.pixel:DemoSparseConfig", None,
                     "the demo's sparse pixel classifier"),
    CheckpointFamily("pixel-mlp", "debatelab.judges.pixel:PixelMLPConfig", None,
                     "the pixel task learned by an MLP"),
    CheckpointFamily("pixel-paper", "debatelab.judges.pixel:PixelPaperConfig", None,
                     "the pixel judge trained with the 2018 paper's own recipe"),
    CheckpointFamily("onpolicy", "debatelab.judges.onpolicy:OnPolicyConfig", None,
                     "judges trained on-policy, every design (debatelab.judges.designs)"),
    CheckpointFamily("debaters", "debatelab.training.debaters:DebaterTrainConfig",
                     "debatelab.training.debaters:load_debaters",
                     "the learned pixel debaters (debatelab agents train)"),
):  # fmt: skip
    register_family(_family)


@dataclass
class TrainedJudge:
    """A trained judge of any family, as the cache returns it."""

    model: nn.Module
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
    """The training config class of checkpoint ``family``."""
    return checkpoint_family(family).config_class()


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
    """Load a checkpoint of any family, with the family's own loader where it has one (the
    learned debaters), else :func:`load_judge`."""
    payload = read_checkpoint(Path(path))
    family = payload.get("family") or LEGACY_FORMATS.get(payload["format"])
    return checkpoint_family(family).load(Path(path))


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
    store the result atomically in the one checkpoint format. A finished checkpoint is read by
    ``load``, else by its family's loader (:data:`FAMILIES`)."""
    path = judge_path(config, cache)
    if path.exists() and not retrain:
        return load(path) if load is not None else checkpoint_family(config.family).load(path)
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
