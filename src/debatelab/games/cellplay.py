"""One image's cell-grid reveal game, played move by move (the demo's cell protocols).

:class:`CellDebate` holds the values of every node for one image (:func:`.lines.node_values`), so
a player of any capability can move from any position reached by any mix of human and AI moves:
an AI samples its cells from its rank policy's weights over the options, ties sharing mass.
Positions are lists of turns, each turn the cells one player revealed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..geometry import all_masks, rank_masks
from ..policies import as_policy
from .lines import claim_column, move_weights, node_values, root_claims, sym_reply
from .solver import RULES
from .tables import game_tables

#: The cell-grid protocols by name: cells revealed per turn, players alternating A, B, A, ...
PROTOCOLS = {"consultancy": (4,), "debate2": (2, 2), "debate4": (1, 1, 1, 1)}


@dataclass(frozen=True)
class CellGameRules:
    """Rules and players of one cell-grid game."""

    protocol: str = "debate4"
    """``consultancy`` (A reveals 4 cells), ``debate2`` (2 + 2) or ``debate4`` (1 + 1 + 1 + 1)."""
    rule: str = "asym"
    """How a leaf is scored: ``asym``, ``sym`` or ``last_b`` (see :mod:`.solver`)."""
    k_a: int | str = 1
    """A's capability: a top-k quantiliser's k (1 = exact), ``uniform``, ``bo8``, ..."""
    k_b: int | str = 1
    """B's capability, as ``k_a``."""
    n_cells: int = 36
    """Cells of the grid (6 x 6)."""

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(
                f"unknown protocol {self.protocol!r}; choose one of {', '.join(PROTOCOLS)}"
            )
        if self.rule not in RULES:
            raise ValueError(f"unknown rule {self.rule!r}; choose one of {', '.join(RULES)}")
        as_policy(self.k_a), as_policy(self.k_b)  # a bad capability fails here, clearly

    @property
    def policies(self) -> tuple:
        """A's and B's capabilities parsed once (this is the edge: an int k is top-k)."""
        return as_policy(self.k_a), as_policy(self.k_b)

    @property
    def moves(self) -> tuple[int, ...]:
        return PROTOCOLS[self.protocol]


class CellDebate:
    """One image's game against a frozen judge whose probabilities on every mask are ``probs``
    ``(C(n_cells, 4), n_classes)``. A's claim defaults to its exact best class; pass ``claim``
    to fix it (a human A). Under ``sym`` B's class is its exact best reply to the claim."""

    def __init__(self, probs: np.ndarray, rules: CellGameRules, claim: int | None = None):
        self.probs = np.asarray(probs, dtype=np.float64)
        self.rules = rules
        self.n_classes = self.probs.shape[1]
        self.tables = game_tables(rules.n_cells, rules.moves)
        self.values = node_values(self.probs, rules.n_cells, rules.moves,
                                  rules.policies, rules.rule)  # fmt: skip
        root = self.values[0][:, 0]
        if claim is None:
            self.claim, self.b_class = root_claims(root, rules.rule, self.n_classes)
        else:
            if not 0 <= claim < self.n_classes:
                raise ValueError(f"claim must be a class in 0..{self.n_classes - 1}, got {claim}")
            self.claim = int(claim)
            self.b_class = sym_reply(root, claim, self.n_classes) if rules.rule == "sym" else None
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
            player = self.tables.player(t)
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
        policy = self.rules.policies[t % 2]
        weights = move_weights(self.values, self.tables, t, node, self.column, policy)
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
        rule = self.rules.rule
        if rule == "asym":
            against, a_wins = None, int(p.argmax()) == a
        else:
            if rule == "sym":
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
