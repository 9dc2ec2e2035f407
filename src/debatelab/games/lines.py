"""The principal line of play of one image: which cells each player reveals, turn by turn."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .grid import all_masks
from .ranked import RankedChildren, resolve
from .solver import RULES, leaf_columns, normalise_capability
from .tables import check_game, game_tables


def principal_line(
    probs: np.ndarray,
    n_cells: int,
    moves: Sequence[int],
    claim: int,
    k=1,
    rule: str = "asym",
    b_class: int | None = None,
) -> list[tuple[int, ...]]:
    """The cells revealed at each turn when every player takes its most likely move.

    ``probs`` is one image's ``(C(n_cells, sum(moves)), n_classes)``. Under exact play (k = 1)
    this is the minimax line; among tied best moves the first in combinations order is taken.
    ``b_class`` is B's class under ``sym`` (required there).
    """
    if rule not in RULES:
        raise ValueError(f"unknown rule {rule!r}; use one of {RULES}")
    moves = check_game(n_cells, moves)
    tables = game_tables(n_cells, moves)
    leaf = leaf_columns(np.asarray(probs, dtype=np.float64)[None], rule)
    if rule == "sym":
        if b_class is None:
            raise ValueError("the sym rule needs B's class (b_class)")
        column = claim * probs.shape[1] + b_class
    else:
        column = claim
    values = [leaf[0, column]]  # values per level, leaves first
    capability = normalise_capability(k)
    for t in reversed(range(tables.n_turns)):
        children = values[0][tables.children[t]]
        ranked = RankedChildren(children[None], None, maximize=(t % 2 == 0))
        reducer = resolve(capability[t % 2], tables.n_options[t])
        values.insert(0, ranked.reduce(reducer, np.float64)[0])
    line, node, revealed = [], 0, set()
    for t in range(tables.n_turns):
        kids = tables.children[t][node]
        kid_values = values[t + 1][kids]
        pick = int(np.argmax(kid_values) if t % 2 == 0 else np.argmin(kid_values))
        node = int(kids[pick])
        cells = set(all_masks(n_cells, sum(moves[: t + 1]))[node].tolist())
        line.append(tuple(sorted(cells - revealed)))
        revealed = cells
    return line
