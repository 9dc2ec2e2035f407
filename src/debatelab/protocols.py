"""Protocols and scoring rules as data: one declaration each, read by every game.

A **protocol** says who moves when and how much each move reveals: a sequence of turns, each a
player (``A``, the claimant, who maximises; ``B``, its opponent, who minimises) and a number of
units revealed (cells of the grid, pixels, or one message of a text debate). A commits its claim
(a class) before the first turn; what B claims and when is the **rule**'s business. The exact
frozen solver, the sampled on-policy trees, the cell demo, the pixel game and the LLM pools all
read these declarations; adding a protocol is one :func:`register_protocol` call (or, from
another package, one entry point in the group ``debatelab.protocols``, see :mod:`.registry`).

A **rule** says how the judge's output at a leaf becomes A's payoff, by when B names its class:

- ``asym``: B names none; payoff ``p[a]``, the judge's probability of A's claim;
- ``sym``: B commits a class ``b`` right after A's claim (it may be the same); payoff
  ``p[a] - p[b]``;
- ``last_b``: B names its class after the reveal; payoff ``p[a] - max_d p[d]``.

Ties among equally good moves are broken by the tie rule a solver names (:data:`TIE_RULES`):
``shared`` splits the mass of tied options (the game core's reducer,
:func:`debatelab.policies.tie_shared`), ``first`` takes the first index (the published anchor
of the trained-judge study, where a judge needs one realised play per image; also A's claim and
B's class under ``sym`` in the exact solver), ``random`` lets a tiny seeded noise decide (the
pixel game's MCTS agents, :mod:`debatelab.games.agents`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from math import prod
from typing import Literal

from .registry import Registry

PLAYERS = ("A", "B")
MEDIA = ("cells", "pixels", "text")
#: How tied options are broken: shared mass (the core's reducer), the first index, or a tiny
#: seeded noise (the pixel game's MCTS).
TIE_RULES = ("shared", "first", "random")
#: The published search budget of the trained-judge study: judge evaluations per image.
PUBLISHED_BUDGET = 1296


@dataclass(frozen=True)
class Turn:
    """One turn: who moves and how many units (cells, pixels, messages) the move reveals."""

    player: Literal["A", "B"]
    reveals: int = 1


@dataclass(frozen=True)
class Protocol:
    """Who moves when: a sequence of turns after A's claim."""

    name: str
    """Registry name (letters, digits, underscores)."""
    turns: tuple[Turn, ...]
    """The turns in order, each a player and the units its move reveals."""
    summary: str
    """One line for ``debatelab protocols`` and the demo."""
    medium: Literal["cells", "pixels", "text"] = "cells"
    """What a move reveals: cells of the grid (reveal games), pixels (the sparse-pixel game) or
    one message (the LLM debates: proposal, critique, rebuttal)."""
    branching: tuple[int, ...] | None = None
    """Candidates per node at each turn of the sampled on-policy tree at the published budget
    (:data:`PUBLISHED_BUDGET` leaves); None spreads the budget evenly (it must then be a
    ``len(turns)``-th power)."""
    aliases: tuple[str, ...] = field(default=(), compare=False)
    """Other names accepted on input (as the text proxy's ``proposal-only``)."""

    def __post_init__(self):
        turns = tuple(self.turns)
        object.__setattr__(self, "turns", turns)
        if not turns:
            raise ValueError("a protocol needs at least one turn")
        for t in turns:
            if not isinstance(t, Turn) or t.player not in PLAYERS:
                raise ValueError(f"a turn is Turn(player, reveals) with player A or B, got {t!r}")
            if type(t.reveals) is not int or t.reveals < 1:
                raise ValueError(f"a turn reveals a positive whole number of units, got {t!r}")
        if turns[0].player != "A":
            raise ValueError("A, the claimant, moves first")
        if self.medium not in MEDIA:
            raise ValueError(f"medium must be one of {', '.join(MEDIA)}, got {self.medium!r}")
        if self.branching is not None:
            branching = tuple(self.branching)
            object.__setattr__(self, "branching", branching)
            if len(branching) != len(turns) or any(type(b) is not int or b < 1 for b in branching):
                raise ValueError(f"branching needs one positive count per turn ({len(turns)}), "
                                 f"got {branching}")  # fmt: skip

    @property
    def moves(self) -> tuple[int, ...]:
        """Units revealed per turn, e.g. ``(1, 1, 1, 1)``."""
        return tuple(t.reveals for t in self.turns)

    @property
    def players(self) -> tuple[str, ...]:
        """The player to move at each turn, e.g. ``("A", "B", "A", "B")``."""
        return tuple(t.player for t in self.turns)

    @property
    def maximize(self) -> tuple[bool, ...]:
        """Whether the player to move at each turn maximises A's payoff (A) or minimises it."""
        return tuple(p == "A" for p in self.players)

    @property
    def total(self) -> int:
        """Units revealed by the end of play (the judge's mask size)."""
        return sum(self.moves)

    @property
    def one_sided(self) -> bool:
        """Only A moves: consultancy (there is no opponent to argue with)."""
        return all(p == "A" for p in self.players)

    def reveals_of(self, player: str) -> int:
        """Units one player reveals over the whole game."""
        return sum(t.reveals for t in self.turns if t.player == player)

    def branching_for(self, budget: int = PUBLISHED_BUDGET) -> tuple[int, ...]:
        """Candidates per node at each turn of a sampled tree of ``budget`` leaves."""
        if budget == PUBLISHED_BUDGET and self.branching is not None:
            return self.branching
        n = len(self.turns)
        root = round(budget ** (1 / n)) if budget >= 1 else 0
        if budget < 1 or root**n != budget:
            hint = (f"; at {PUBLISHED_BUDGET} it uses {self.branching}" if self.branching
                    else "")  # fmt: skip
            raise ValueError(f"{self.name} spreads its budget evenly over {n} turn(s): the budget "
                             f"must be a {n}-th power (1,296 = 36^2 = 6^4), got {budget}{hint}; "
                             "or give the branching per turn")  # fmt: skip
        return (root,) * n


def _check_protocol(name: str, obj: object) -> Protocol:
    if not isinstance(obj, Protocol):
        raise TypeError(f"expected a debatelab.protocols.Protocol, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"the protocol's name is {obj.name!r}, registered as {name!r}")
    if obj.branching is not None and prod(obj.branching) != PUBLISHED_BUDGET:
        raise ValueError(f"branching {obj.branching} has {prod(obj.branching)} leaves; "
                         f"the published budget is {PUBLISHED_BUDGET}")  # fmt: skip
    return obj


PROTOCOLS: Registry[Protocol] = Registry("protocol", "debatelab.protocols", _check_protocol)


def register_protocol(protocol: Protocol, source: str = "debatelab") -> Protocol:
    """Add a protocol to :data:`PROTOCOLS` (and so to every game that reads protocols)."""
    return PROTOCOLS.register(protocol.name, protocol, source)


def protocol(name: str | Protocol, medium: str | None = None) -> Protocol:
    """The protocol named ``name`` (or an alias of it), optionally of one medium only."""
    if isinstance(name, Protocol):
        found = name
    else:
        key = str(name).strip()
        found = None
        if key in PROTOCOLS:
            found = PROTOCOLS.get(key)
        else:
            lowered = key.lower()
            for _, p in PROTOCOLS.items():
                if lowered == p.name or lowered in p.aliases:
                    found = p
                    break
        if found is None:
            names = protocol_names(medium)
            raise ValueError(f"unknown protocol {name!r}; choose one of {', '.join(names)}")
    if medium is not None and found.medium != medium:
        raise ValueError(f"{found.name} is a {found.medium} protocol; here choose one of "
                         f"{', '.join(protocol_names(medium))}")  # fmt: skip
    return found


def protocol_names(medium: str | None = None) -> tuple[str, ...]:
    """Registered protocol names, optionally of one medium only, in registration order."""
    return tuple(n for n, p in PROTOCOLS.items() if medium is None or p.medium == medium)


def builtin_protocols(medium: str | None = None) -> tuple[Protocol, ...]:
    """The protocols debatelab declares (no plug-in is loaded), optionally of one medium: for
    module constants built at import, such as the text pools' protocol names."""
    return tuple(p for n, p in PROTOCOLS._items.items()
                 if PROTOCOLS._sources[n] == "debatelab" and medium in (None, p.medium))  # fmt: skip


def level_sizes(n: int, m: int, r: int, depth: int) -> tuple[int, ...]:
    """A pool's shape at ``depth``: (N,), (N, M), (N, M, R), (N, M, R, M), ... (every critique
    level has M children, every rebuttal level R)."""
    return (n, *((m if d % 2 else r) for d in range(1, depth)))


def alternating(*moves: int) -> tuple[Turn, ...]:
    """Turns A, B, A, ... revealing ``moves`` units each."""
    return tuple(Turn("A" if t % 2 == 0 else "B", m) for t, m in enumerate(moves))


def as_protocol(game, medium: str | None = "cells") -> Protocol:
    """A protocol from what a game function is given: a :class:`Protocol`, a registered name
    (or alias), or a sequence of units per turn with the players alternating A, B, A, ...
    (the ``moves`` of the older functions, e.g. ``(2, 2)``; an unregistered protocol named
    after them)."""
    if isinstance(game, Protocol):
        if medium is not None and game.medium != medium:
            raise ValueError(f"{game.name} is a {game.medium} protocol; here choose one of "
                             f"{', '.join(protocol_names(medium))}")  # fmt: skip
        return game
    if isinstance(game, str):
        return protocol(game, medium)
    moves = tuple(int(m) for m in game)
    name = "moves_" + "_".join(map(str, moves))
    return Protocol(name, alternating(*moves), f"players alternate, revealing {moves}",
                    medium=medium or "cells")  # fmt: skip


def turns_text(p: Protocol) -> str:
    """The turns in short, e.g. ``A1 B2 A1``."""
    return " ".join(f"{t.player}{t.reveals}" for t in p.turns)


def describe(p: Protocol) -> dict:
    """One protocol as a row of ``debatelab protocols`` (and of the demo's protocol list)."""
    try:
        source = PROTOCOLS.source(p.name)
        source = "built-in" if source == "debatelab" else source
    except ValueError:
        source = "unregistered"
    branching = None  # declared, or for a cells protocol the budget spread evenly
    if p.branching is not None or p.medium == "cells":
        try:
            branching = list(p.branching_for())
        except ValueError:
            pass
    return {
        "name": p.name, "medium": p.medium, "turns": turns_text(p),
        "players": list(p.players), "moves": list(p.moves),
        "per_player": {"A": p.reveals_of("A"), "B": p.reveals_of("B")},
        "total": p.total, "branching": branching, "summary": p.summary, "source": source,
        "aliases": list(p.aliases),
    }  # fmt: skip


def describe_rule(r: Rule) -> dict:
    """One rule as a row of ``debatelab protocols``."""
    source = RULES.source(r.name)
    return {"name": r.name, "b_claims": r.b_claims, "summary": r.summary,
            "source": "built-in" if source == "debatelab" else source}  # fmt: skip


@dataclass(frozen=True)
class Rule:
    """How a leaf's judge output becomes A's payoff: by when B names its class."""

    name: str
    b_claims: Literal["never", "before_play", "after_play"]
    """``never`` (payoff ``p[a]``), ``before_play`` (B commits ``b`` after A's claim; payoff
    ``p[a] - p[b]``) or ``after_play`` (B names its best class at the leaf; payoff
    ``p[a] - max_d p[d]``)."""
    summary: str

    @property
    def pair_columns(self) -> bool:
        """Leaf payoffs are indexed by (A's claim, B's class): K x K columns, not K."""
        return self.b_claims == "before_play"

    def n_columns(self, n_classes: int) -> int:
        """Payoff columns per leaf: one per claim, or one per (claim, B's class) pair."""
        return n_classes * n_classes if self.pair_columns else n_classes

    def leaf_columns(self, probs):
        """Leaf payoffs ``(n_images, n_columns, n_masks)`` from judge probabilities
        ``(n_images, n_masks, n_classes)``: column ``a`` is A's payoff when it claims ``a``;
        with :attr:`pair_columns`, column ``a * K + b`` when B claims ``b``.

        The one leaf-payoff function of every reveal-game solver (exact, lines, demo)."""
        import numpy as np

        k = probs.shape[2]
        p = np.moveaxis(probs, 2, 1)  # (n, K, M)
        if self.b_claims == "never":  # p[a]
            leaf = np.ascontiguousarray(p)
            leaf += 0  # turns -0.0 into +0.0, so non-negative bits sort as integers
            return leaf
        if self.b_claims == "after_play":  # p[a] - max_d p[d]
            return p - p.max(axis=1, keepdims=True)
        return (p[:, :, None, :] - p[:, None, :, :]).reshape(len(p), k * k, -1)  # p[a] - p[b]

    def claims(self, values, auxes, n_classes: int):
        """A's exact claim from root values ``(..., n_columns)``, with its value and aux: the
        first-index argmax over classes (tie rule ``first``); when B claims before play, B's
        class against each claim is the first-index argmin, A's claim the argmax of those.

        Returns ``(claim, value, aux)``, each ``values.shape[:-1]`` (aux None without auxes)."""
        import numpy as np

        if self.pair_columns:
            v = values.reshape(values.shape[:-1] + (n_classes, n_classes))
            b_star = v.argmin(axis=-1)  # (..., K): B's class against each claim
            v_a = np.take_along_axis(v, b_star[..., None], axis=-1)[..., 0]
            claim = v_a.argmax(axis=-1)
            col = claim * n_classes + np.take_along_axis(b_star, claim[..., None], axis=-1)[..., 0]
        else:
            claim = values.argmax(axis=-1)
            col = claim
        value = np.take_along_axis(values, col[..., None], axis=-1)[..., 0]
        aux = None if auxes is None else np.take_along_axis(auxes, col[..., None], axis=-1)[..., 0]
        return claim, value, aux

    def b_reply(self, root, claim: int, n_classes: int) -> int | None:
        """B's exact class against A's ``claim`` from root values ``(n_columns,)`` when B
        claims before play (first class on ties, tie rule ``first``); None otherwise."""
        if not self.pair_columns:
            return None
        return int(root.reshape(n_classes, n_classes)[claim].argmin())

    def column(self, claim: int, b_class: int | None, n_classes: int) -> int:
        """The payoff column that scores A's ``claim`` (and B's ``b_class``)."""
        if self.pair_columns:
            if b_class is None:
                raise ValueError(f"the {self.name} rule needs B's class (b_class)")
            return claim * n_classes + b_class
        return claim

    def leaf_payoff(self, p, claim: int, b_class: int | None = None) -> float:
        """A's payoff on one leaf whose judge probabilities are ``p`` ``(n_classes,)``."""
        if self.b_claims == "never":
            return float(p[claim])
        if self.b_claims == "before_play":
            if b_class is None:
                raise ValueError(f"the {self.name} rule needs B's class (b_class)")
            return float(p[claim] - p[b_class])
        return float(p[claim] - max(p))


def _check_rule(name: str, obj: object) -> Rule:
    if not isinstance(obj, Rule):
        raise TypeError(f"expected a debatelab.protocols.Rule, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"the rule's name is {obj.name!r}, registered as {name!r}")
    if obj.b_claims not in ("never", "before_play", "after_play"):
        raise ValueError(f"b_claims must be never, before_play or after_play, got {obj.b_claims!r}")
    return obj


RULES: Registry[Rule] = Registry("rule", "debatelab.rules", _check_rule)


def rule(name: str | Rule) -> Rule:
    """The rule named ``name``; an unknown name is one error listing the rules."""
    return name if isinstance(name, Rule) else RULES.get(name)


def rule_names() -> tuple[str, ...]:
    return RULES.names()


for _rule in (
    Rule("asym", "never", "A's payoff is the judge's probability of its claim, p[a]"),
    Rule("sym", "before_play", "B commits a class b after A's claim; payoff p[a] - p[b]"),
    Rule("last_b", "after_play", "B names its class after the reveal; payoff p[a] - max_d p[d]"),
):
    RULES.register(_rule.name, _rule)

for _protocol in (
    # the cell-grid protocols of the seeds (the frozen-judge and trained-judge studies)
    Protocol("consultancy", (Turn("A", 4),), "A alone reveals 4 cells", branching=(1296,)),
    Protocol("debate2", alternating(2, 2), "A reveals 2 cells, then B 2", branching=(36, 36)),
    Protocol("debate4", alternating(1, 1, 1, 1), "A, B, A, B reveal 1 cell each",
             branching=(6, 6, 6, 6)),
    # two protocols no seed ran: an odd-length debate in which the claimant has the first and
    # the last word, and a consultancy that the opponent may answer once
    Protocol("debate3", alternating(1, 2, 1), "A reveals 1 cell, B 2, A the last 1",
             branching=(12, 12, 9)),
    Protocol("consult_rebut", alternating(3, 1),
             "A reveals 3 cells as a consultant, then B rebuts with 1", branching=(36, 36)),
    # the LLM debates of the best-of-N proxy: a move is one message
    Protocol("proposal", (Turn("A"),), "the judge reads the proposal alone", medium="text",
             aliases=("proposal-only", "proposal_only")),
    Protocol("critique", alternating(1, 1), "proposal, then one critique", medium="text",
             aliases=("+critique", "proposal+critique")),
    Protocol("rebuttal", alternating(1, 1, 1), "proposal, critique, then a rebuttal",
             medium="text", aliases=("+critique+rebuttal", "proposal+critique+rebuttal",
                                     "critique+rebuttal")),
):  # fmt: skip
    register_protocol(_protocol)


class Names(Sequence):
    """The names of a registry, read live (a part registered later, or a plug-in, is in):
    a tuple-like view for ``name in RULES``, ``", ".join(RULES)`` and iteration."""

    def __init__(self, names):
        self._names = names

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __eq__(self, other) -> bool:
        return tuple(self) == tuple(other) if isinstance(other, Sequence) else NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return repr(self._names())


#: Registered rule names, live: ``asym``, ``sym``, ``last_b`` and any plug-in's.
RULE_NAMES = Names(rule_names)
#: Registered protocol names of the cell grid, live.
CELL_PROTOCOLS = Names(lambda: protocol_names("cells"))
