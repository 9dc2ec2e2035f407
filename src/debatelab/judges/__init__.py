"""Judges: the CNN family, supervised training, evaluation."""

from .cnn import JudgeCNN, default_widths
from .evaluate import accuracy, predict_proba, random_mask_accuracy
from .train import TrainConfig, TrainedJudge, get_judge, load_checkpoint, train_judge

__all__ = [
    "JudgeCNN", "TrainConfig", "TrainedJudge", "accuracy", "default_widths", "get_judge",
    "load_checkpoint", "predict_proba", "random_mask_accuracy", "train_judge",
]  # fmt: skip
