"""Cell geometry now lives in :mod:`debatelab.geometry`, below games and judges; these names
stay importable from here."""

from ..geometry import Grid, all_masks, masks_to_bool, rank_masks, unrank_masks

__all__ = ["Grid", "all_masks", "masks_to_bool", "rank_masks", "unrank_masks"]
