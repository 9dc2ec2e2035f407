"""Reveal games: grid geometry and mask indexing (solvers arrive with later modules)."""

from .grid import Grid, all_masks, masks_to_bool, rank_masks, unrank_masks

__all__ = ["Grid", "all_masks", "masks_to_bool", "rank_masks", "unrank_masks"]
