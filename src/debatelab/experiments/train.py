"""``debatelab train``: the gold classifier and/or the sparse judge of a dataset variant, or the
MNIST pixel judge of the 2018 debate, trained once and cached (keyed by variant, settings and
seed; a second call loads them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import torch

from ..data import load_raw, load_variant
from ..judges import get_judge
from ..judges.pixel import PixelJudge, PixelTrainConfig, get_pixel_judge, random_pixel_accuracy
from ..report.runs import RunFolder
from .setup import JudgeSetupConfig, monte_carlo_accuracy


@dataclass
class TrainJudgesConfig(JudgeSetupConfig):
    """Settings of one training command."""

    kind: Literal["gold", "sparse", "both", "pixel"] = "both"
    """Which judge to train: the cell-grid judges (gold, sparse, both) or the MNIST pixel judge
    of the 2018 debate (pixel, with --pixels)."""
    pixels: int = field(default=6, metadata={"min": 1, "max": 784})
    """Nonzero pixels the pixel judge sees (--kind pixel only)."""
    retrain: bool = field(default=False, compare=False)
    """Ignore the cache and train again."""


def run(config: TrainJudgesConfig, folder: RunFolder) -> dict:
    """The experiment shape: train or load, then measure on the test set (gold on full images,
    sparse on random masks, Monte Carlo, pixel on random nonzero pixels, 5 draws per image)."""
    folder.seeds["train"] = config.seed
    if config.kind == "pixel":
        return _train_pixel(config, folder)
    data = load_variant(config.variant, folder.data_dir)
    metrics, paths = {}, {}
    for k in ["gold", "sparse"] if config.kind == "both" else [config.kind]:
        judge = get_judge(config.judge_config(k), data, folder.cache_dir, folder.progress,
                          config.retrain)  # fmt: skip
        metrics[f"{k}_accuracy"] = monte_carlo_accuracy(judge, data, config)
        metrics[f"{k}_final_train_loss"] = judge.history[-1]["loss"]
        paths[k] = str(judge.path)
        folder.echo(f"{k} judge: {100 * metrics[f'{k}_accuracy']:.2f} % test accuracy, "
                    f"{'cached' if judge.cached else 'trained'}: {judge.path}")  # fmt: skip
    folder.extra["checkpoints"] = paths
    return metrics


def _train_pixel(config: TrainJudgesConfig, folder: RunFolder) -> dict:
    cfg = PixelTrainConfig(pixels=config.pixels, seed=config.seed, epochs=config.epochs)
    trained = get_pixel_judge(cfg, folder.data_dir, folder.cache_dir, folder.progress,
                              config.retrain)  # fmt: skip
    images, labels = load_raw("mnist", "test", folder.data_dir)
    gen = torch.Generator().manual_seed(config.seed)  # as `debatelab pixels` measures it
    acc = random_pixel_accuracy(PixelJudge(trained.model), images, labels, config.pixels, gen,
                                draws=5)  # fmt: skip
    folder.echo(f"pixel judge K={config.pixels}: {100 * acc:.2f} % on random nonzero pixels, "
                f"{'cached' if trained.cached else 'trained'}: {trained.path}")  # fmt: skip
    folder.extra["checkpoints"] = {"pixel": str(trained.path)}
    return {"judge_accuracy": acc}
