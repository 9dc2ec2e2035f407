"""Judges: the CNN families (cell grid, pixel), supervised training, one checkpoint format and
cache, evaluation. Every family implements :class:`debatelab.interfaces.Judge`."""

from .cell import CellJudge
from .cnn import JudgeCNN, default_widths
from .evaluate import accuracy, predict_proba, random_mask_accuracy
from .train import (
    TrainConfig,
    TrainedJudge,
    find_cached,
    get_judge,
    judge_path,
    load_checkpoint,
    load_judge,
    train_judge,
)

__all__ = [
    "CellJudge", "JudgeCNN", "TrainConfig", "TrainedJudge", "accuracy", "default_widths",
    "find_cached", "get_judge", "judge_path", "load_checkpoint", "load_judge", "predict_proba",
    "random_mask_accuracy", "train_judge",
]  # fmt: skip
