"""``debatelab train``: the gold classifier and/or the sparse judge of a dataset variant, or the
MNIST pixel judge of the 2018 debate, trained once and cached (keyed by variant, settings and
seed; a second call loads them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

import torch

from ..data import load_raw, load_variant
from ..geometry import pixel_values
from ..judges import TrainConfig, get_judge
from ..judges.pixel import PixelJudge, get_pixel_judge, pixel_judge_config, random_pixel_accuracy
from ..report.runs import RunFolder
from .setup import JudgeSetupConfig, monte_carlo_accuracy

#: ``--kind`` of a pixel judge -> its kind in :data:`debatelab.judges.pixel.JUDGE_KINDS`.
PIXEL_KINDS = {
    "pixel": "nonzero",
    "pixel-mlp": "mlp",
    "pixel-paper": "paper",
    "pixel-sparse": "sparse",
}


@dataclass
class TrainJudgesConfig(JudgeSetupConfig):
    """Settings of one training command."""

    kind: Literal["gold", "sparse", "both", "pixel", "pixel-mlp", "pixel-paper", "pixel-sparse"] = (
        "both"
    )
    """Which judge to train: the cell-grid judges (gold, sparse, both), the MNIST pixel judge
    of the 2018 debate (pixel, with --pixels; pixel-mlp: the same task learned by an MLP;
    pixel-paper: the paper's own network and schedule, 64 or 107 epochs) or
    the demo's sparse classifier (pixel-sparse: about 10 % of all pixels visible; measured on
    --pixels random nonzero pixels too)."""
    pixels: int = field(default=6, metadata={"min": 1, "max": 784})
    """Nonzero pixels the pixel judge sees (--kind pixel, pixel-mlp, pixel-paper and
    pixel-sparse only)."""
    epochs: int | None = field(default=None, metadata={"min": 1})
    """Training epochs (default: 10, as published; 30 for pixel-mlp; the paper's 30,000 or
    50,000 batches for pixel-paper)."""
    batch_size: int | None = field(default=None, metadata={"min": 1, "before": 256})
    """Images per training step (default: 128 for the cell judges, which reproduces the
    published ones; the pixel judge's own, 256, or 128 for pixel-paper)."""
    retrain: bool = field(default=False, compare=False)
    """Ignore the cache and train again."""

    def judge_config(self, kind: str):
        """A cell judge's training config (``epochs`` None: the published 10; ``batch_size``
        None: 128)."""
        filled = replace(self, epochs=self.epochs or 10,
                         batch_size=self.batch_size or TrainConfig.batch_size)  # fmt: skip
        return JudgeSetupConfig.judge_config(filled, kind)


def run(config: TrainJudgesConfig, folder: RunFolder) -> dict:
    """The experiment shape: train or load, then measure on the test set (gold on full images,
    sparse on random masks, Monte Carlo, pixel on random nonzero pixels, 5 draws per image)."""
    folder.seeds["train"] = config.seed
    if config.kind in PIXEL_KINDS:
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
    kind = PIXEL_KINDS[config.kind]
    cfg = pixel_judge_config(kind, config.pixels, config.seed, config.epochs, config.batch_size)
    trained = get_pixel_judge(cfg, folder.data_dir, folder.cache_dir, folder.progress,
                              config.retrain)  # fmt: skip
    images, labels = load_raw("mnist", "test", folder.data_dir)
    gen = torch.Generator().manual_seed(config.seed)  # as `debatelab pixels` measures it
    judge = PixelJudge(trained.model)
    acc = random_pixel_accuracy(judge, images, labels, config.pixels, gen, draws=5)
    metrics = {"judge_accuracy": acc}
    folder.echo(f"{config.kind} judge K={config.pixels}: {100 * acc:.2f} % on random nonzero "
                f"pixels, {'cached' if trained.cached else 'trained'}: {trained.path}")  # fmt: skip
    if kind == "sparse":  # and on its own training distribution
        values = pixel_values(images)
        mask = torch.rand(values.shape, generator=gen) < cfg.visible
        hits = judge.logits(values, mask).argmax(1) == torch.as_tensor(labels).long()
        metrics["visible_accuracy"] = hits.float().mean().item()
        folder.echo(f"  {100 * metrics['visible_accuracy']:.2f} % with each pixel visible "
                    f"with probability {cfg.visible}")  # fmt: skip
    folder.extra["checkpoints"] = {"pixel": str(trained.path)}
    return metrics
