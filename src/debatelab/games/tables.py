"""Index tables of the subset game tree.

Against a judge that sees only the union of revealed cells, a node of a reveal game is the set of
cells revealed so far; whose turn it is follows from the set's size. Level ``t`` of a game with
``moves = (m_0, m_1, ...)`` holds every set of ``m_0 + ... + m_{t-1}`` cells (combinations
order); a node's children are its unions with each ``m_t``-subset of the unrevealed cells. The
ordered tree (1.4M paths for 4 one-cell turns on 36 cells) collapses to 36 + 630 + 7,140 + 58,905
nodes. Tables are built once per ``(n_cells, moves)`` and cached; :func:`.core.reveal_game` makes
them the game core's stack of levels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np

from ..geometry import all_masks, rank_masks


@dataclass(frozen=True)
class GameTables:
    """Child (and parent) index tables of the subset tree of one ``(n_cells, moves)`` game.

    ``children[t]`` is ``(n_nodes[t], n_options[t])``: the index, among the sets of level ``t+1``,
    of each option of each node of level ``t``. ``parents[t]`` is ``(n_nodes[t+1], P_t)``: the
    level-``t`` nodes that lead to each node of level ``t+1`` (each appears once), so forward
    passes (reach probabilities) and backward passes use the same tables.
    """

    n_cells: int
    moves: tuple[int, ...]
    children: tuple[np.ndarray, ...]
    parents: tuple[np.ndarray, ...]

    @property
    def n_turns(self) -> int:
        return len(self.moves)

    @property
    def reveal(self) -> int:
        return sum(self.moves)

    @property
    def n_nodes(self) -> tuple[int, ...]:
        """Nodes per level, root first, leaves last."""
        sizes, revealed = [1], 0
        for m in self.moves:
            revealed += m
            sizes.append(comb(self.n_cells, revealed))
        return tuple(sizes)

    @property
    def n_options(self) -> tuple[int, ...]:
        """Options of the player to move at each level (``C(cells left, m_t)``)."""
        out, revealed = [], 0
        for m in self.moves:
            out.append(comb(self.n_cells - revealed, m))
            revealed += m
        return tuple(out)

    def player(self, t: int) -> str:
        """``'A'`` on even turns (A moves first), ``'B'`` on odd ones: the players of the
        ``moves`` form, which alternate. The tables are the same for any players; a protocol's
        own players are :attr:`debatelab.protocols.Protocol.players`."""
        return "A" if t % 2 == 0 else "B"


def check_game(n_cells: int, moves) -> tuple[int, ...]:
    """Validate ``moves`` against ``n_cells``; return it as a tuple of ints."""
    try:
        moves = tuple(int(m) for m in moves)
    except TypeError:
        raise ValueError(
            f"moves must be a sequence of cell counts like (2, 2), got {moves!r}"
        ) from None
    if not moves or any(m < 1 for m in moves):
        raise ValueError(f"moves must be a non-empty sequence of positive cell counts, got {moves}")
    if n_cells < 1 or sum(moves) > n_cells:
        raise ValueError(f"moves {moves} reveal {sum(moves)} cells, the grid has {n_cells}")
    return moves


@lru_cache(maxsize=16)
def game_tables(n_cells: int, moves: tuple[int, ...]) -> GameTables:
    """The (cached, read-only) index tables of the game ``moves`` on ``n_cells`` cells."""
    moves = check_game(n_cells, moves)
    children, parents = [], []
    revealed = 0
    for m in moves:
        table = _child_table(n_cells, revealed, m)
        table.flags.writeable = False
        children.append(table)
        par = _parent_table(table, comb(n_cells, revealed + m))
        par.flags.writeable = False
        parents.append(par)
        revealed += m
    return GameTables(n_cells, moves, tuple(children), tuple(parents))


def _child_table(n_cells: int, revealed: int, m: int) -> np.ndarray:
    """``(C(n, revealed), C(n - revealed, m))`` indices of ``S | M`` among ``revealed + m`` sets."""
    nodes = all_masks(n_cells, revealed).astype(np.int64)  # (N, revealed)
    is_in = np.zeros((len(nodes), n_cells), dtype=bool)
    np.put_along_axis(is_in, nodes, True, axis=1)
    # unrevealed cells of each node, ascending (a stable sort puts False first, in cell order)
    free = np.argsort(is_in, axis=1, kind="stable")[:, : n_cells - revealed]
    picks = all_masks(n_cells - revealed, m).astype(np.int64)  # (O, m) positions among free cells
    added = free[:, picks]  # (N, O, m)
    union = np.concatenate([np.broadcast_to(nodes[:, None, :], added.shape[:2] + (revealed,)),
                            added], axis=2)  # fmt: skip
    union.sort(axis=2)
    flat = union.reshape(-1, revealed + m)
    return rank_masks(flat, n_cells).reshape(len(nodes), len(picks))


def _parent_table(children: np.ndarray, n_next: int) -> np.ndarray:
    """Invert a child table: for each next-level node, the parents that reach it."""
    nodes = np.repeat(np.arange(children.shape[0]), children.shape[1])
    order = np.argsort(children.ravel(), kind="stable")
    counts = np.bincount(children.ravel(), minlength=n_next)
    if counts.min() != counts.max():
        raise AssertionError("every set of a level must have the same number of parents")
    return nodes[order].reshape(n_next, counts[0])
