"""The game core: a finite two-player zero-sum game as a stack of levels of child tables.

Every experiment is such a game (see docs/design.md#joints): the reveal games on images
(every mask, :func:`reveal_game`), the text debates (pools of proposals, critiques and rebuttals,
:func:`pool_game`) and sampled candidate trees (:func:`sampled_tree`).

A :class:`Game` is a tuple of :class:`Level` s, root first. Level ``t`` holds an index table
``children (n_nodes[t], n_options[t])`` into the nodes of level ``t + 1`` (the last level indexes
the leaves), whether its player maximises or minimises, and optional multiplicities ``counts``
(``(..., n_nodes[t], n_options[t])``, batch dims allowed) for children sampled with replacement:
a child with count c occupies c consecutive ranks of the sorted multiset.

One level reducer, :func:`reduce_level`, applies a rank policy to a batch of nodes with the one
tie rule (:func:`debatelab.policies.tie_shared`: tied values share their rank block's mass
equally, per copy) and returns node values, play weights (per child, original order) and the
expected value of any carried quantity (correctness, judge accuracy, belief). :func:`solve` runs
it over the whole stack (backward induction) and :meth:`Solution.reach` forward (the play
distribution is the product of the weights along a path).

Everything is vectorised numpy in float64: leaf values may carry batch dims in front (images x
claims, questions). The fast special paths (the subset solver's one-sort-all-k prefix sums in
:mod:`.ranked`, the text bootstrap's presorted kernel in :mod:`debatelab.text.solve`) give the
same numbers and are tested against this reducer (tests/test_core.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from math import prod

import numpy as np

from ..policies import RankedPlay, RankPolicy, rank_play, require_policy
from ..protocols import Protocol, as_protocol
from .tables import check_game, game_tables

#: The core's one tie rule (:data:`debatelab.protocols.TIE_RULES`): tied options share mass.
TIE_RULE = "shared"
#: Level names of a text pool, root first: proposer (max), critic (min), rebuttal player (max).
POOL_LEVELS = ("proposals", "critiques", "rebuttals")


def pool_level_name(depth: int) -> str:
    """The name of a pool's level ``depth`` (0 the proposals): proposals, critiques, rebuttals,
    then critiques2, rebuttals2, critiques3, ... for debates of any depth."""
    if depth < len(POOL_LEVELS):
        return POOL_LEVELS[depth]
    round_, kind = divmod(depth - 1, 2)
    return f"{POOL_LEVELS[1 + kind]}{round_ + 1}"


@dataclass(frozen=True, eq=False)
class Level:
    """One level of a game: ``children (n_nodes, n_options)`` indexes the next level's nodes
    (the leaves for the last level); the player here maximises or minimises; ``counts``
    (``(..., n_nodes, n_options)``, broadcastable over the values' batch dims) are the children's
    multiplicities, None for one copy each."""

    children: np.ndarray
    maximize: bool
    counts: np.ndarray | None = None

    def __post_init__(self):
        children = np.asarray(self.children)
        is_int = np.issubdtype(children.dtype, np.integer)
        if children.ndim != 2 or children.shape[1] < 1 or not is_int:
            raise ValueError(f"children must be an int table (n_nodes, n_options >= 1), got "
                             f"{children.dtype} {children.shape}")  # fmt: skip
        object.__setattr__(self, "children", children)
        if self.counts is not None:
            counts = np.asarray(self.counts)
            if counts.shape[-2:] != children.shape:
                raise ValueError(f"counts {counts.shape} must end with the children's shape "
                                 f"{children.shape}")  # fmt: skip
            if counts.size and counts.min() < 0:
                raise ValueError("counts (multiplicities) must be >= 0")
            object.__setattr__(self, "counts", counts)

    @property
    def n_nodes(self) -> int:
        return self.children.shape[0]

    @property
    def n_options(self) -> int:
        return self.children.shape[1]


@dataclass(frozen=True, eq=False)
class Game:
    """A finite game: ``levels`` root first over ``n_leaves`` leaves."""

    levels: tuple[Level, ...]
    n_leaves: int

    def __post_init__(self):
        levels = tuple(self.levels)
        if not levels:
            raise ValueError("a game needs at least one level")
        object.__setattr__(self, "levels", levels)
        sizes = [lv.n_nodes for lv in levels[1:]] + [int(self.n_leaves)]
        for t, (lv, size) in enumerate(zip(levels, sizes, strict=True)):
            if lv.children.min() < 0 or lv.children.max() >= size:
                raise ValueError(f"level {t} indexes children outside 0..{size - 1}")

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def n_nodes(self) -> tuple[int, ...]:
        """Nodes per level, root first, leaves last."""
        return tuple(lv.n_nodes for lv in self.levels) + (int(self.n_leaves),)

    @property
    def n_options(self) -> tuple[int, ...]:
        return tuple(lv.n_options for lv in self.levels)


class LevelPlay:
    """What :func:`reduce_level` returns (with a leading policy axis for a list of policies).

    ``values`` ``(..., n_nodes)``: node values, the weighted sum of the children's values
    (summed best-first with the rank masses, which tie sharing does not change, so a node's
    value does not depend on its children's order; with a ``rank_key``, the tie-shared weights
    times the children's values). ``carried`` ``(..., n_nodes)``: the
    expected carried quantity (None without one). ``weights`` ``(..., n_nodes, n_options)``:
    the player's weights on its children in their original order (a child's weight covers all
    its copies), put back in that order on first use.
    """

    def __init__(self, play: RankedPlay, values: np.ndarray, carried, single: bool):
        self._play, self._single = play, single
        self.values = values[0] if single else values
        self.carried = None if carried is None else (carried[0] if single else carried)

    @cached_property
    def weights(self) -> np.ndarray:
        w = self._play.unsorted(self._play.weights)
        return w[0] if self._single else w


def reduce_level(child_values, policy, maximize: bool = True, counts=None,
                 carried=None, rank_key=None) -> LevelPlay:  # fmt: skip
    """The one level reducer: a rank policy's play over children ``(..., n_options)``.

    ``policy`` is a rank policy object (parse specs with :func:`debatelab.policies.as_policy`
    at the edge), or a list
    or tuple of them: then every output gets a leading policy axis and the children are sorted
    once. ``counts`` and ``carried`` broadcast against ``child_values``. Ties share their rank
    block's mass equally (per copy), so nothing depends on the children's order.

    ``rank_key`` (broadcastable against ``child_values``): the player ranks its children by
    this score instead of by their values, e.g. one claim-agnostic score shared by every claim
    (the judge's confidence on each mask); ties of the key share mass, and the node value is
    the expected child value under that play.
    """
    many = isinstance(policy, list | tuple)
    policies = [require_policy(p) for p in (policy if many else [policy])]
    if rank_key is None:
        play = rank_play(child_values, policies, maximize, counts)
        values = (play.mass * play.values).sum(axis=-1)
    else:
        child_values = np.asarray(child_values, dtype=np.float64)
        shape = np.broadcast_shapes(np.shape(rank_key), child_values.shape)
        play = rank_play(np.broadcast_to(rank_key, shape), policies, maximize, counts)
        values = _expected(play, child_values)
    out_carried = None if carried is None else _expected(play, carried)
    return LevelPlay(play, values, out_carried, not many)


def _expected(play: RankedPlay, x) -> np.ndarray:
    """The expectation of ``x`` (per child, original order) under ``play``, summed best-first."""
    x = np.asarray(x, dtype=np.float64)
    shape = np.broadcast_shapes(play.order.shape, x.shape)
    order = np.broadcast_to(play.order, shape)
    in_order = np.take_along_axis(np.broadcast_to(x, shape), order, axis=-1)
    return (play.weights * in_order).sum(axis=-1)


@dataclass(frozen=True, eq=False)
class Solution:
    """Backward induction of one game under one policy per level."""

    game: Game
    values: tuple[np.ndarray, ...]
    """Per level, root first and the leaves last: ``(..., n_nodes[t])`` node values."""
    weights: tuple[np.ndarray, ...]
    """Per level: ``(..., n_nodes[t], n_options[t])`` the mover's weights on its children."""
    carried: tuple[np.ndarray | None, ...]
    """Per level (as ``values``): the expected carried quantity at each node, None below the
    level it was given at."""

    @property
    def root_value(self) -> np.ndarray:
        """``(..., n_root_nodes)`` the game value at the root node(s)."""
        return self.values[0]

    @property
    def root_carried(self) -> np.ndarray | None:
        """``(..., n_root_nodes)`` the expected carried quantity at the root node(s)."""
        return self.carried[0]

    def reach(self) -> tuple[np.ndarray, ...]:
        """Per level, root first and leaves last: the probability ``(..., n_nodes[t])`` that
        play reaches each node (root nodes 1 each; several roots add their distributions).
        Nodes reached along several paths (subsets) add them up."""
        out = [np.ones(np.shape(self.values[0]))]
        for lv, w in zip(self.game.levels, self.weights, strict=True):
            flow = out[-1][..., :, None] * w  # (..., n_nodes, n_options)
            n_next = self.values[len(out)].shape[-1]
            batch = flow.shape[:-2]
            rows = prod(batch)
            ids = (lv.children.reshape(1, -1) + n_next * np.arange(rows)[:, None]).ravel()
            nxt = np.bincount(ids, weights=flow.reshape(-1), minlength=rows * n_next)
            out.append(nxt.reshape(batch + (n_next,)))
        return tuple(out)


def solve(game: Game, leaf_values, policies: Sequence, carried=None,
          carry_level: int | None = None) -> Solution:  # fmt: skip
    """Backward induction over ``game`` with ``policies[t]`` the mover's policy at level ``t``.

    ``leaf_values`` is ``(..., n_leaves)`` (batch dims in front). ``carried`` is a quantity on the
    nodes of level ``carry_level`` (default: the leaves), ``(..., n_nodes[carry_level])``
    broadcastable against the values; every level above gets its expectation under play.
    """
    if len(policies) != game.n_levels:
        raise ValueError(f"give one policy per level ({game.n_levels}), got {len(policies)}")
    policies = [require_policy(p) for p in policies]
    carry_level = game.n_levels if carry_level is None else int(carry_level)
    if not 0 <= carry_level <= game.n_levels:
        raise ValueError(f"carry_level must lie in 0..{game.n_levels}, got {carry_level}")
    leaf = np.asarray(leaf_values, dtype=np.float64)
    if leaf.shape[-1:] != (game.n_leaves,):
        raise ValueError(f"leaf values must be (..., {game.n_leaves}), got {leaf.shape}")
    if carried is not None:
        carried = np.asarray(carried, dtype=np.float64)
        if carried.shape[-1:] != (game.n_nodes[carry_level],):
            raise ValueError(f"carried must be (..., {game.n_nodes[carry_level]}) on level "
                             f"{carry_level}, got {carried.shape}")  # fmt: skip
    values: list = [leaf]
    weights: list = []
    carry: list = [carried if carry_level == game.n_levels else None]
    for t in reversed(range(game.n_levels)):
        lv = game.levels[t]
        below = carry[0]
        play = reduce_level(values[0][..., lv.children], policies[t], lv.maximize, lv.counts,
                            None if below is None else below[..., lv.children])  # fmt: skip
        values.insert(0, play.values)
        weights.insert(0, play.weights)
        carry.insert(0, carried if t == carry_level else play.carried)
    return Solution(game, tuple(values), tuple(weights), tuple(carry))


def alternate(first, second, n_levels: int) -> list[RankPolicy]:
    """Policies of two players moving in turn, ``first`` at the root: ``[first, second, ...]``."""
    first, second = require_policy(first), require_policy(second)
    return [first if t % 2 == 0 else second for t in range(n_levels)]


# ---------------------------------------------------------------------------------------------
# builders


def reveal_game(n_cells: int, moves: Sequence[int] | Protocol | str) -> Game:
    """Every mask of a reveal game (:func:`.tables.game_tables`): level ``t`` holds every set of
    the cells revealed before turn ``t``; A maximises, B minimises. ``moves`` is a protocol (a
    :class:`~debatelab.protocols.Protocol` or a registered name: its turns say who moves at each
    level) or cells per turn with the players alternating A, B, A, ... Leaves are the masks of
    ``sum(moves)`` cells in combinations order (the judge dump's mask axis). Cached per
    ``(n_cells, moves, players)``; the tables are read-only."""
    if isinstance(moves, Protocol | str):
        proto = as_protocol(moves, "cells")
        return _reveal_game(int(n_cells), check_game(n_cells, proto.moves), proto.maximize)
    moves = check_game(n_cells, moves)
    return _reveal_game(int(n_cells), moves, tuple(t % 2 == 0 for t in range(len(moves))))


@lru_cache(maxsize=16)
def _reveal_game(n_cells: int, moves: tuple[int, ...], maximize: tuple[bool, ...]) -> Game:
    tables = game_tables(n_cells, moves)
    levels = tuple(Level(children, up) for children, up in zip(tables.children, maximize,
                                                                strict=True))  # fmt: skip
    return Game(levels, tables.n_nodes[-1])


def _pool_counts(counts, depth: int) -> list:
    if counts is None:
        return [None] * depth
    if isinstance(counts, Mapping):
        names = [pool_level_name(d) for d in range(depth)]
        unknown = set(counts) - set(names)
        if unknown:
            raise ValueError(f"unknown pool level(s) {sorted(unknown)}; use {names}")
        counts = [counts.get(name) for name in names]
    counts = list(counts)
    if len(counts) > depth:
        raise ValueError(f"counts for {len(counts)} levels; the pool has {depth}")
    return counts + [None] * (depth - len(counts))


def _level_counts(counts, dims: tuple[int, ...], name: str):
    """Multiplicities of one level as ``(..., n_nodes, n_options)``: given so, or shaped like
    the level's children ``(..., *dims)`` (``dims`` = the branching down to this level), or
    flat ``(..., prod(dims))``."""
    if counts is None:
        return None
    c = np.asarray(counts)
    n_nodes, n_options = prod(dims[:-1]), dims[-1]
    for tail in ((n_nodes, n_options), dims, (n_nodes * n_options,)):
        if c.ndim >= len(tail) and c.shape[c.ndim - len(tail) :] == tail:
            return c.reshape(c.shape[: c.ndim - len(tail)] + (n_nodes, n_options))
    raise ValueError(f"{name} counts must end with {dims} (or {(n_nodes, n_options)}), "
                     f"got {c.shape}")  # fmt: skip


def pool_game(shape: Sequence[int], counts=None) -> Game:
    """A text pool: ``shape`` ``(N,)``, ``(N, M)``, ``(N, M, R)`` or deeper: proposals, critiques
    per proposal, rebuttals per critique, then critiques of the rebuttals and so on (any depth,
    the study's proposal, critique, rebuttal, critique, ... alternation). The proposer (root, one
    node) maximises over proposals, the critic minimises over each proposal's critiques, the
    rebuttal player maximises over each critique's rebuttals, and so on alternating. Leaves are
    the pool's scores flattened in C order; proposals are the nodes of level 1 (carry their
    correctness there).

    ``counts`` (a sequence root first, or a mapping with keys ``proposals``, ``critiques``,
    ``rebuttals``, ``critiques2``, ... (:func:`pool_level_name`)) gives multiplicities of a resample per level, shaped like that level's pool
    ``(..., N)``, ``(..., N, M)``, ``(..., N, M, R)`` (batch dims allowed); None: one each.
    """
    shape = tuple(int(x) for x in shape)
    if len(shape) < 1 or min(shape) < 1:
        raise ValueError(f"a pool is (N,), (N, M), (N, M, R), ... with sizes >= 1, got {shape}")
    per_level = _pool_counts(counts, len(shape))
    levels = []
    for d in range(len(shape)):
        n_nodes, n_options = prod(shape[:d]), shape[d]
        children = np.arange(n_nodes * n_options).reshape(n_nodes, n_options)
        c = _level_counts(per_level[d], shape[: d + 1], pool_level_name(d))
        levels.append(Level(children, d % 2 == 0, c))
    return Game(tuple(levels), prod(shape))


def solve_pool(scores, correct, policies: Sequence, counts=None, depth: int | None = None):
    """Solve text pools ``scores (..., N[, M[, R]])`` (the last ``depth`` axes are the pool,
    default all) with ``correct (..., N)`` carried at the proposals; ``policies`` root first,
    one per level. Returns the :class:`Solution` (root value: the win rate; root carried: the
    proposer's accuracy; ``weights[0][..., 0, :]``: its selection probabilities)."""
    scores = np.asarray(scores, dtype=np.float64)
    depth = scores.ndim if depth is None else int(depth)
    shape = scores.shape[scores.ndim - depth :]
    game = pool_game(shape, counts)
    leaves = scores.reshape(scores.shape[: scores.ndim - depth] + (-1,))
    return solve(game, leaves, policies, correct, carry_level=1)


def sampled_tree(branching: Sequence[int], leaf_ids=None, n_leaves: int | None = None,
                 maximize_first: bool = True, counts=None) -> Game:  # fmt: skip
    """A full tree with ``branching[t]`` children per node of level ``t`` (players alternate,
    the first maximising unless ``maximize_first`` is False).

    ``leaf_ids`` ``(prod(branching),)`` (or shaped like the tree) names the leaf-value entry of
    each tree leaf in depth-first order, e.g. the mask index of a sampled play in the judge's
    all-mask dump, so that repeated plays share one leaf; default: every tree leaf its own
    (``arange``). ``n_leaves`` defaults to ``max(leaf_ids) + 1``. ``counts`` as in
    :func:`pool_game`, one entry per level (or None) shaped like that level's children
    ``(..., *branching[:t + 1])``, ``(..., n_nodes, branching[t])`` or flat.
    """
    branching = tuple(int(b) for b in branching)
    if not branching or min(branching) < 1:
        raise ValueError(f"branching must be positive children per level, got {branching}")
    total = prod(branching)
    ids = np.arange(total) if leaf_ids is None else np.asarray(leaf_ids).reshape(-1)
    if ids.size != total:
        raise ValueError(f"leaf_ids must name {total} tree leaves, got {ids.size}")
    n_leaves = int(ids.max()) + 1 if n_leaves is None else int(n_leaves)
    per_level = [None] * len(branching) if counts is None else list(counts)
    if len(per_level) != len(branching):
        raise ValueError(f"give counts for each of the {len(branching)} levels (or None)")
    levels = []
    for t, b in enumerate(branching):
        n_nodes = prod(branching[:t])
        last = t == len(branching) - 1
        children = (ids if last else np.arange(n_nodes * b)).reshape(n_nodes, b)
        c = _level_counts(per_level[t], branching[: t + 1], f"level {t}")
        levels.append(Level(children, (t % 2 == 0) == maximize_first, c))
    return Game(tuple(levels), n_leaves)
