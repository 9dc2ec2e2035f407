"""One image's cell-grid reveal game, played move by move (the demo's cell protocols).

:class:`CellDebate` holds the values of every node for one image (:func:`.lines.node_values`), so
a player of any capability can move from any position reached by any mix of human and AI moves:
an AI samples its cells from its rank policy's weights over the options, ties sharing mass.
Positions are lists of turns, each turn the cells one player revealed. Every registered cells
protocol (:mod:`debatelab.protocols`) is playable: who moves at each turn and how many cells,
from the protocol's turns.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..geometry import all_masks, rank_masks
from ..policies import as_policy
from ..protocols import Protocol, protocol, protocol_names
from ..protocols import rule as as_rule
from .lines import claim_column, move_weights, node_values, root_claims
from .tables import game_tables


class _CellProtocolMoves(Mapping):
    """The registered cells protocols by name -> cells revealed per turn, read live from
    :data:`debatelab.protocols.PROTOCOLS` (players: each protocol's turns)."""

    def __getitem__(self, name: str) -> tuple[int, ...]:
        if name not in protocol_names("cells"):
            raise KeyError(name)
        return protocol(name, "cells").moves

    def __iter__(self) -> Iterator[str]:
        return iter(protocol_names("cells"))

    def __len__(self) -> int:
        return len(protocol_names("cells"))

    def __repr__(self) -> str:
        return repr(dict(self))


#: The cell-grid protocols by name: cells revealed per turn (the registry's, live).
PROTOCOLS: Mapping[str, tuple[int, ...]] = _CellProtocolMoves()


@dataclass(frozen=True)
class CellGameRules:
    """Rules and players of one cell-grid game."""

    protocol: str = "debate4"
    """A registered cells protocol: ``consultancy`` (A reveals 4 cells), ``debate2`` (2 + 2),
    ``debate4`` (1 + 1 + 1 + 1), ``debate3`` (A1 B2 A1), ``consult_rebut`` (A3 B1), ..."""
    rule: str = "asym"
    """How a leaf is scored: ``asym``, ``sym`` or ``last_b`` (see :mod:`.solver`)."""
    k_a: int | str = 1
    """A's capability: a top-k quantiliser's k (1 = exact), ``uniform``, ``bo8``, ..."""
    k_b: int | str = 1
    """B's capability, as ``k_a``."""
    n_cells: int = 36
    """Cells of the grid (6 x 6)."""

    def __post_init__(self):
        protocol(self.protocol, "cells")  # unknown: one error listing the registered ones
        as_rule(self.rule)
        as_policy(self.k_a), as_policy(self.k_b)  # a bad capability fails here, clearly

    @property
    def policies(self) -> tuple:
        """A's and B's capabilities parsed once (this is the edge: an int k is top-k)."""
        return as_policy(self.k_a), as_policy(self.k_b)

    @property
    def game(self) -> Protocol:
        """The registered protocol."""
        return protocol(self.protocol, "cells")

    @property
    def moves(self) -> tuple[int, ...]:
        return self.game.moves

    @property
    def players(self) -> tuple[str, ...]:
        """The player to move at each turn."""
        return self.game.players


class CellDebate:
    """One image's game against a frozen judge whose probabilities on every mask are ``probs``
    ``(C(n_cells, 4), n_classes)``. A's claim defaults to its exact best class; pass ``claim``
    to fix it (a human A). Under ``sym`` B's class is its exact best reply to the claim."""

    def __init__(self, probs: np.ndarray, rules: CellGameRules, claim: int | None = None):
        self.probs = np.asarray(probs, dtype=np.float64)
        self.rules = rules
        self.n_classes = self.probs.shape[1]
        self.tables = game_tables(rules.n_cells, rules.moves)
        self.values = node_values(self.probs, rules.n_cells, rules.game,
                                  rules.policies, rules.rule)  # fmt: skip
        root = self.values[0][:, 0]
        if claim is None:
            self.claim, self.b_class = root_claims(root, rules.rule, self.n_classes)
        else:
            if not 0 <= claim < self.n_classes:
                raise ValueError(f"claim must be a class in 0..{self.n_classes - 1}, got {claim}")
            self.claim = int(claim)
            self.b_class = as_rule(rules.rule).b_reply(root, claim, self.n_classes)
        self.column = claim_column(self.claim, self.b_class, rules.rule, self.n_classes)

    @property
    def value(self) -> float:
        """A's expected payoff at the root under both players' capabilities."""
        return float(self.values[0][self.column, 0])

    def position(self, turns: Sequence[Sequence[int]]) -> tuple[int, int, frozenset]:
        """``(turn, node, revealed)`` after ``turns``; illegal turns raise ValueError."""
        moves = self.rules.moves
        if len(turns) > len(moves):
            raise ValueError(f"{self.rules.protocol} has {len(moves)} turns; got {len(turns)}")
        revealed: set[int] = set()
        for t, cells in enumerate(turns):
            cells = [int(c) for c in cells]
            player = self.rules.players[t]
            if len(cells) != moves[t] or len(set(cells)) != len(cells):
                raise ValueError(
                    f"turn {t + 1} ({player}) must reveal {moves[t]} distinct cell(s), got {cells}"
                )
            bad = [c for c in cells if not 0 <= c < self.rules.n_cells or c in revealed]
            if bad:
                raise ValueError(
                    f"turn {t + 1} ({player}): cell(s) {bad} are off the grid "
                    f"(0..{self.rules.n_cells - 1}) or already revealed"
                )
            revealed.update(cells)
        t = len(turns)
        if not revealed:
            return t, 0, frozenset()
        node = int(rank_masks(np.array([sorted(revealed)]), self.rules.n_cells)[0])
        return t, node, frozenset(revealed)

    def options(self, turns: Sequence[Sequence[int]]) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """The mover's options (cells of each) and its policy's weights on them."""
        t, node, revealed = self.position(turns)
        if t >= len(self.rules.moves):
            raise ValueError("the game is over; no one moves")
        kids = self.tables.children[t][node]
        masks = all_masks(self.rules.n_cells, sum(self.rules.moves[: t + 1]))[kids]
        cells = [tuple(sorted(set(m.tolist()) - revealed)) for m in masks]
        a_moves = self.rules.players[t] == "A"
        policy = self.rules.policies[0 if a_moves else 1]
        weights = move_weights(self.values, self.tables, t, node, self.column, policy, a_moves)
        return cells, weights

    def ai_move(self, turns: Sequence[Sequence[int]], rng: np.random.Generator) -> tuple:
        """The mover's cells, drawn from its rank policy's weights."""
        cells, weights = self.options(turns)
        return cells[int(rng.choice(len(cells), p=weights / weights.sum()))]

    def verdict(self, turns: Sequence[Sequence[int]]) -> dict:
        """The judge's probabilities on the final mask and who won (A, under the rule)."""
        t, node, _ = self.position(turns)
        if t < len(self.rules.moves):
            raise ValueError(f"the game is not over: {len(self.rules.moves) - t} turn(s) left")
        p = self.probs[node]
        a = self.claim
        b_claims = as_rule(self.rules.rule).b_claims
        if b_claims == "never":
            against, a_wins = None, int(p.argmax()) == a
        else:
            if b_claims == "before_play":
                against = self.b_class
            else:  # last_b: B names the judge's best other class after the reveal
                others = p.copy()
                others[a] = -np.inf
                against = int(others.argmax())
            a_wins = bool(p[a] > p[against])
        return {
            "probs": p.tolist(), "judge_class": int(p.argmax()), "a_claim": a,
            "b_class": against, "a_wins": bool(a_wins),
            "payoff": float(self.values[-1][self.column, node]),
        }  # fmt: skip
