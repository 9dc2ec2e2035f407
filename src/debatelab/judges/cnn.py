"""The classifier of REFERENCE B, used both as the gold classifier and as the sparse judge.

Conv3x3(c1) - ReLU - MaxPool2 - Conv3x3(c2) - ReLU - MaxPool2 - Flatten - Linear(128) - ReLU -
Dropout(0.3) - Linear(n_classes). Hidden cells are zeros in the input.
"""

from __future__ import annotations

import torch
from torch import nn


class JudgeCNN(nn.Module):
    """Two conv blocks and a two-layer head; ``forward`` maps ``(B, C, S, S)`` to logits ``(B, K)``.

    Widths ``(32, 64)`` for 1-channel data and ``(64, 128)`` for CIFAR-10, as published.
    """

    def __init__(
        self,
        in_channels: int = 1,
        widths: tuple[int, int] = (32, 64),
        image_size: int = 18,
        hidden: int = 128,
        n_classes: int = 10,
        dropout: float = 0.3,
    ):
        super().__init__()
        if image_size < 4:
            raise ValueError(f"image_size {image_size} is too small for two 2x2 poolings")
        c1, c2 = widths
        self.in_channels, self.widths, self.image_size = in_channels, (c1, c2), image_size
        self.n_classes = n_classes
        self.final_size = (image_size // 2) // 2
        self.conv1 = nn.Conv2d(in_channels, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(c2 * self.final_size**2, hidden)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The conv trunk: ``(B, C, S, S)`` to ``(B, c2, S//4, S//4)``."""
        x = self.pool(torch.relu(self.conv1(x)))
        return self.pool(torch.relu(self.conv2(x)))

    def head(self, features: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(features.flatten(1)))
        return self.fc2(self.dropout(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1:] != (self.in_channels, self.image_size, self.image_size):
            raise ValueError(
                f"JudgeCNN expects images (B, {self.in_channels}, {self.image_size}, "
                f"{self.image_size}), got {tuple(x.shape)}"
            )
        return self.head(self.features(x))

    def config(self) -> dict:
        """The constructor arguments, stored in checkpoints."""
        return {
            "in_channels": self.in_channels,
            "widths": list(self.widths),
            "image_size": self.image_size,
            "hidden": self.fc1.out_features,
            "n_classes": self.n_classes,
            "dropout": self.dropout.p,
        }


def default_widths(in_channels: int) -> tuple[int, int]:
    """Published widths: (32, 64) for grey images, (64, 128) for colour."""
    return (32, 64) if in_channels == 1 else (64, 128)
