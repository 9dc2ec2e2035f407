"""Lines of play of one image: every node's value, the players' move weights, the principal line.

The solver (:mod:`.solver`) returns root values for many images; the demo and the example-plays
figure need the values at *every* node of one image's game, so that a player of any capability
can move from any position. One backward pass over the subset tree gives them: the values of
:func:`.core.solve` on :func:`.core.reveal_game`, by the solver's fast reducer
(:class:`.ranked.RankedChildren`, several times faster than the general one for a whole 36-cell
game; tests/test_core.py checks every node). A player's move weights are the core's level
reducer at one node.

Every function takes the game's protocol where it takes ``moves`` (a
:class:`~debatelab.protocols.Protocol`, a registered name, or cells per turn with the players
alternating): the player to move at each level, and so whose capability plays there, comes from
the protocol's turns. Leaves are scored and claims made by the rule's own functions
(:meth:`debatelab.protocols.Rule.leaf_columns`, :meth:`~debatelab.protocols.Rule.claims`). Tie
rules: a player's move weights share tied options (``shared``); A's claim, B's class under
``sym`` and the principal line take the first tied index (``first``).
"""

from __future__ import annotations

import numpy as np

from ..geometry import all_masks
from ..protocols import rule as as_rule
from .core import reduce_level
from .ranked import RankedChildren, resolve
from .solver import GameSpec, game_protocol, normalise_capability
from .tables import GameTables, game_tables

#: The tie rule of the players' move weights, and of the claims and the principal line.
TIE_RULE, LINE_TIE_RULE = "shared", "first"


def node_values(
    probs: np.ndarray, n_cells: int, moves: GameSpec, k=1, rule: str = "asym"
) -> list[np.ndarray]:
    """A's value at every node of one image's game, per claim column.

    ``probs`` is one image's ``(C(n_cells, sum(moves)), n_classes)``. Returns one array per
    level, root first and leaves last, each ``(n_columns, n_nodes)``; columns as in
    :func:`debatelab.games.solver.leaf_columns` (a claim; under ``sym`` a claim pair).
    """
    scoring = as_rule(rule)
    proto = game_protocol(n_cells, moves)
    tables = game_tables(n_cells, proto.moves)
    leaf = scoring.leaf_columns(np.asarray(probs, dtype=np.float64)[None])[0]
    values = [leaf]  # levels, leaves first while building
    capability = normalise_capability(k)
    for t in reversed(range(tables.n_turns)):
        children = values[0][:, tables.children[t]]  # (n_columns, n_nodes_t, n_options)
        a_moves = proto.maximize[t]
        ranked = RankedChildren(children[None], None, maximize=a_moves)
        reducer = resolve(capability[0 if a_moves else 1], tables.n_options[t])
        values.insert(0, ranked.reduce(reducer, np.float64)[0])
    return values


def root_claims(root: np.ndarray, rule: str, n_classes: int) -> tuple[int, int | None]:
    """A's exact claim (and B's class under ``sym``) from root values ``(n_columns,)``, by the
    solver's rule (first class on exact ties)."""
    scoring = as_rule(rule)
    claim = int(scoring.claims(root[None, None], None, n_classes)[0][0, 0])
    return claim, scoring.b_reply(root, claim, n_classes)


def sym_reply(root: np.ndarray, claim: int, n_classes: int) -> int:
    """B's exact class under ``sym`` against A's ``claim`` (first class on ties)."""
    return as_rule("sym").b_reply(root, claim, n_classes)


def claim_column(claim: int, b_class: int | None, rule: str, n_classes: int) -> int:
    """The column of :func:`node_values` that scores claim ``claim`` (and ``b_class``)."""
    return as_rule(rule).column(claim, b_class, n_classes)


def move_weights(
    values: list[np.ndarray],
    tables: GameTables,
    turn: int,
    node: int,
    column: int,
    policy,
    maximize: bool | None = None,
) -> np.ndarray:
    """The mover's weights over the options of ``node`` at level ``turn`` (A maximises, B
    minimises), as its rank policy puts them; options in the order of ``tables.children``.
    ``maximize``: whether the mover is A (default: players alternate, A on even turns; pass
    ``protocol.maximize[turn]`` for another protocol)."""
    kids = tables.children[turn][node]
    up = turn % 2 == 0 if maximize is None else bool(maximize)
    return reduce_level(values[turn + 1][column, kids], policy, maximize=up).weights


def principal_line(
    probs: np.ndarray,
    n_cells: int,
    moves: GameSpec,
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
    proto = game_protocol(n_cells, moves)
    moves = proto.moves
    tables = game_tables(n_cells, moves)
    values = node_values(probs, n_cells, proto, k, rule)
    column = claim_column(claim, b_class, rule, probs.shape[1])
    line, node, revealed = [], 0, set()
    for t in range(tables.n_turns):
        kids = tables.children[t][node]
        kid_values = values[t + 1][column, kids]
        pick = int(np.argmax(kid_values) if proto.maximize[t] else np.argmin(kid_values))
        node = int(kids[pick])
        cells = set(all_masks(n_cells, sum(moves[: t + 1]))[node].tolist())
        line.append(tuple(sorted(cells - revealed)))
        revealed = cells
    return line
