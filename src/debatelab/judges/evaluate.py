"""Accuracy of judges on full images and on random masks."""

from __future__ import annotations

import torch

from ..geometry import Grid


@torch.inference_mode()
def predict_proba(model: torch.nn.Module, images: torch.Tensor, batch: int = 4096) -> torch.Tensor:
    """Softmax probabilities of ``model`` (in eval mode) on ``images``, batched."""
    model.eval()
    return torch.cat([torch.softmax(model(chunk), dim=1) for chunk in images.split(batch)])


def accuracy(model: torch.nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of images whose argmax class equals the label."""
    return (predict_proba(model, images).argmax(1) == labels).float().mean().item()


def random_mask_accuracy(
    model: torch.nn.Module,
    images: torch.Tensor,
    labels: torch.Tensor,
    grid: Grid,
    reveal: int,
    generator: torch.Generator,
    draws: int = 1,
) -> float:
    """Accuracy on ``draws`` uniformly random masks of ``reveal`` cells per image (Monte Carlo)."""
    hits = 0.0
    for _ in range(draws):
        masks = grid.random_masks(len(images), reveal, generator)
        hits += accuracy(model, grid.apply(images, masks), labels)
    return hits / draws
