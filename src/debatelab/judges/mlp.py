"""A multilayer perceptron on the pixel game's two input planes, the alternative pixel judge.

Flatten(2 x 28 x 28) - Linear(hidden) - ReLU - Dropout - Linear(hidden) - ReLU - Dropout -
Linear(n_classes). A judge that sees six scattered pixels gains little from a convolution's
translation sharing and much from weights tied to each pixel's place: on K random nonzero pixels
this net classifies MNIST better than the pixel CNN (docs/results-pixel-debate.md, issue 18), and its first layer on a
position is a sum of K columns, so the search judges positions cheaply
(:class:`~debatelab.judges.pixel_fast.SparsePixelMLPForward`).
"""

from __future__ import annotations

import torch
from torch import nn


class PixelMLP(nn.Module):
    """``forward`` maps planes ``(B, in_channels, S, S)`` to logits ``(B, n_classes)``."""

    def __init__(self, in_channels: int = 2, image_size: int = 28, hidden: int = 1024,
                 n_classes: int = 10, dropout: float = 0.3):  # fmt: skip
        super().__init__()
        if hidden < 1:
            raise ValueError(f"hidden must be >= 1, got {hidden}")
        self.in_channels, self.image_size, self.n_classes = in_channels, image_size, n_classes
        self.fc1 = nn.Linear(in_channels * image_size**2, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, n_classes)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1:] != (self.in_channels, self.image_size, self.image_size):
            raise ValueError(
                f"PixelMLP expects planes (B, {self.in_channels}, {self.image_size}, "
                f"{self.image_size}), got {tuple(x.shape)}"
            )
        h = self.dropout(torch.relu(self.fc1(x.flatten(1))))
        h = self.dropout(torch.relu(self.fc2(h)))
        return self.fc3(h)

    def config(self) -> dict:
        """The constructor arguments, stored in checkpoints."""
        return {
            "in_channels": self.in_channels, "image_size": self.image_size,
            "hidden": self.fc1.out_features, "n_classes": self.n_classes,
            "dropout": self.dropout.p,
        }  # fmt: skip
