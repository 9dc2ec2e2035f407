"""Reveal games: grid geometry, mask indexing, subset index tables and the subset solver."""

from ..geometry import Grid, all_masks, masks_to_bool, rank_masks, unrank_masks
from .solver import solve_capabilities, solve_reveal_game
from .tables import GameTables, game_tables

__all__ = [
    "GameTables",
    "Grid",
    "all_masks",
    "game_tables",
    "masks_to_bool",
    "rank_masks",
    "solve_capabilities",
    "solve_reveal_game",
    "unrank_masks",
]
