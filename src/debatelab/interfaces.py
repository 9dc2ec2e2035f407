"""The small typed protocols that pluggable parts implement.

Games, agents and experiments talk to a judge only through :class:`Judge`; concrete families
(the cell-grid CNN judges, the pixel judge of the 2018 game, later trained and LLM judges) live
in :mod:`debatelab.judges` and satisfy it. This module sits below both ``games/`` and
``judges/`` and imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # torch is only needed by implementations
    import numpy as np
    import torch


@runtime_checkable
class Judge(Protocol):
    """A frozen judge: class scores for a batch of partly revealed images.

    What it sees: ``values``, the images as the family encodes them (``(B, 784)`` pixel values
    in [0, 1] for the pixel game, ``(B, C, S, S)`` preprocessed images for the cell grid), and
    ``mask``, which positions are revealed (``(B, 784)`` pixels or ``(B, n_cells)`` cells,
    boolean). What it returns: logits ``(B, n_classes)``. How it batches: any ``B``; the judge
    splits into forward passes of at most ``max_batch`` and counts ``evaluations`` (judged
    positions), so search agents can batch leaves and benchmarks can count work.
    """

    n_classes: int
    max_batch: int
    evaluations: int

    def logits(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...


@runtime_checkable
class FactorisedJudge(Judge, Protocol):
    """A judge with an exact all-positions path: its probabilities on every mask of ``reveal``
    cells of each image at once (masks in combinations order), much faster than
    :meth:`Judge.logits` on each masked copy."""

    def all_mask_probs(self, images: torch.Tensor, reveal: int) -> np.ndarray: ...
