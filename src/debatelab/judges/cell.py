"""The cell-grid judges (gold classifier and sparse judge) behind the judge interface."""

from __future__ import annotations

import numpy as np
import torch

from ..geometry import Grid
from .allmask import all_mask_probs
from .cnn import JudgeCNN


class CellJudge:
    """A frozen :class:`JudgeCNN` on a cell grid, as a :class:`debatelab.interfaces.Judge`:
    hidden cells are zeros of the preprocessed image. It has the factorised all-masks path
    (:func:`debatelab.judges.allmask.all_mask_probs`)."""

    def __init__(self, model: JudgeCNN, grid: Grid, max_batch: int = 4096):
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        if model.image_size != grid.image_size:
            raise ValueError(
                f"the judge takes {model.image_size}x{model.image_size} images, the grid is "
                f"{grid.image_size}x{grid.image_size}"
            )
        self.model = model.eval()
        self.grid = grid
        self.n_classes = model.n_classes
        self.max_batch = max_batch
        self.evaluations = 0

    @torch.inference_mode()
    def logits(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Logits ``(B, K)`` of images ``values (B, C, S, S)`` with revealed cells ``mask
        (B, n_cells)``."""
        out = [
            self.model(self.grid.apply(v, m))
            for v, m in zip(values.split(self.max_batch), mask.split(self.max_batch), strict=True)
        ]
        self.evaluations += len(values)
        return torch.cat(out) if out else torch.zeros(0, self.n_classes)

    def all_mask_probs(self, images: torch.Tensor, reveal: int) -> np.ndarray:
        """Probabilities ``(N, C(n_cells, reveal), K)`` on every mask, exactly and fast."""
        return all_mask_probs(self.model, images, grid=self.grid.grid, reveal=reveal)
