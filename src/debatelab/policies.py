"""Rank policies: a player's optimisation pressure.

Given the values of its children sorted best-first *for that player*, a rank policy puts weights on
ranks. Tied values share the mass of their rank block equally, so results never depend on sort
order. See docs/design.md#one-idea.

| policy      | weight on rank i (1 = best) of n               |
|-------------|------------------------------------------------|
| Exact       | 1 on rank 1                                    |
| TopK(k)     | 1/k on ranks 1..k (k clamped to n)             |
| BestOfN(b)  | ((n-i+1)/n)^b - ((n-i)/n)^b  (b draws, with replacement) |
| Uniform     | 1/n                                            |

Children sampled with replacement carry multiplicities (counts): a child with count c occupies c
consecutive ranks of the sorted multiset and gets the mass of those ranks (:func:`rank_mass`).
The one tie rule (:func:`tie_shared`): tied values share their rank block's mass equally, per
copy. :func:`play_weights` applies both in the children's original order; the game core
(:mod:`debatelab.games.core`) reduces whole levels with it.

Capabilities are policy objects inside the library. Text from the edges (CLI options, web
requests, configs) is parsed once, with one meaning, by :func:`as_policy`: an int (or a digit
string) k is ``TopK(k)``. Numbers of best-of-n draws are converted explicitly, ``BestOfN(d)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class RankPolicy(Protocol):
    """Maps a number of children to weights on ranks 1..n (best first), summing to 1."""

    def rank_weights(self, n: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Exact:
    """Argmax (or argmin) play: all mass on the best child."""

    def rank_weights(self, n: int) -> np.ndarray:
        _check_n(n)
        w = np.zeros(n)
        w[0] = 1.0
        return w


@dataclass(frozen=True)
class TopK:
    """Quantiliser: uniform over the best k children (k clamped to n); k = 1 is exact play."""

    k: int

    def __post_init__(self):
        if int(self.k) != self.k or self.k < 1:
            raise ValueError(f"TopK needs an integer k >= 1, got {self.k!r}")

    def rank_weights(self, n: int) -> np.ndarray:
        _check_n(n)
        k = min(int(self.k), n)
        w = np.zeros(n)
        w[:k] = 1.0 / k
        return w


@dataclass(frozen=True)
class BestOfN:
    """Best of ``draws`` uniform samples with replacement; 1 draw is uniform play."""

    draws: int

    def __post_init__(self):
        if int(self.draws) != self.draws or self.draws < 1:
            raise ValueError(f"BestOfN needs an integer number of draws >= 1, got {self.draws!r}")

    def rank_weights(self, n: int) -> np.ndarray:
        _check_n(n)
        i = np.arange(1, n + 1, dtype=np.float64)
        return ((n - i + 1) / n) ** self.draws - ((n - i) / n) ** self.draws


@dataclass(frozen=True)
class Uniform:
    """The zero-capability agent: every child equally likely."""

    def rank_weights(self, n: int) -> np.ndarray:
        _check_n(n)
        return np.full(n, 1.0 / n)


def _check_n(n: int) -> None:
    if n < 1:
        raise ValueError(f"a rank policy needs at least one child, got {n}")


def require_policy(policy) -> RankPolicy:
    """``policy`` itself if it is a rank policy object; the game core takes nothing else, so a
    number or string is refused here instead of being read with a guessed meaning."""
    if isinstance(policy, RankPolicy) and not isinstance(policy, type):
        return policy
    raise ValueError(
        f"the game core takes rank policy objects (TopK(3), BestOfN(8), Exact(), Uniform()), got "
        f"{policy!r}; parse a capability written as text or a number with "
        "debatelab.policies.as_policy first"
    )


def as_policy(spec: RankPolicy | int | str) -> RankPolicy:
    """The one parser of capabilities: a policy passes through; an int k (or ``"k"``,
    ``"topK"``, ``"kK"``) is ``TopK(k)`` (1 = exact play); ``"boN"`` is ``BestOfN(N)`` (N
    draws); ``"exact"`` and ``"uniform"`` as named. Numbers of best-of-n draws are never bare
    ints: give ``BestOfN(d)`` (or ``"bo<d>"``)."""
    if isinstance(spec, RankPolicy):
        return spec
    if isinstance(spec, bool):
        raise ValueError(f"not a rank policy: {spec!r}")
    if isinstance(spec, int | np.integer):
        return TopK(int(spec))
    if isinstance(spec, str):
        s = spec.strip().lower()
        if s == "exact":
            return Exact()
        if s == "uniform":
            return Uniform()
        if s.isdigit():
            return TopK(int(s))
        for prefix in ("top", "k"):
            if s.startswith(prefix) and s[len(prefix) :].isdigit():
                return TopK(int(s[len(prefix) :]))
        if s.startswith("bo") and s[2:].isdigit():
            return BestOfN(int(s[2:]))
    raise ValueError(
        f"not a rank policy: {spec!r}; use an int k or 'k' / 'topK' / 'kK' (top-k), 'boN' "
        "(best of N draws), 'exact' or 'uniform'"
    )


@lru_cache(maxsize=4096)
def cumulative_weights(policy: RankPolicy, size: int) -> np.ndarray:
    """``(size + 1,)`` cumulative rank weights of ``policy`` among ``size`` ranks: entry i is
    the mass of ranks 1..i (read-only, cached)."""
    cum = np.concatenate([[0.0], np.cumsum(policy.rank_weights(size))])
    cum.flags.writeable = False
    return cum


def rank_mass(policy: RankPolicy, n: int, sorted_counts: np.ndarray | None = None) -> np.ndarray:
    """The mass of each of ``n`` sorted children's ranks (before tie sharing).

    With multiplicities ``sorted_counts`` ``(..., n)`` (in sorted order) child j occupies ranks
    ``E_(j-1) + 1 .. E_j`` of its row's multiset (``E`` the running sum of counts) and gets
    their mass, ``F(E_j) - F(E_(j-1))`` with ``F`` the cumulative weights of the row's size
    (:func:`cumulative_weights`); rows may differ in size. Without counts it is the same
    formula with one copy each (``policy.rank_weights(n)`` up to rounding), so all-one counts
    give bit for bit the plain result.
    """
    if sorted_counts is None:
        return np.diff(cumulative_weights(policy, n))
    c = np.asarray(sorted_counts)
    if c.shape[-1] != n:
        raise ValueError(f"counts have {c.shape[-1]} children per node, the values {n}")
    if c.size and c.min() < 0:
        raise ValueError("counts (multiplicities) must be >= 0")
    ends = np.cumsum(c, axis=-1, dtype=np.int64)
    starts = ends - c
    totals = ends[..., -1]
    if c.size == 0:
        return np.zeros(c.shape)
    lo, hi = int(totals.min()), int(totals.max())
    if lo < 1:
        raise ValueError("every node needs at least one child copy (counts sum to 0)")
    if lo == hi:  # the usual case: resamples of one size
        cum = cumulative_weights(policy, lo)
        return cum[ends] - cum[starts]
    out = np.empty(c.shape)
    for size in np.unique(totals):
        rows = totals == size
        cum = cumulative_weights(policy, int(size))
        out[rows] = cum[ends[rows]] - cum[starts[rows]]
    return out


def tie_shared(sorted_values: np.ndarray, rank_weights: np.ndarray,
               counts: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """The one tie rule: each tie block's mass is shared equally by its copies.

    ``sorted_values`` is ``(..., n)`` sorted best-first for the player; ``rank_weights`` is the
    mass of each sorted child's ranks (:func:`rank_mass`), ``(n,)`` or broadcastable (a leading
    policy axis is fine); ``counts`` (broadcastable, sorted order) are multiplicities, None for
    one copy each. A block of equal values holding mass W and C copies gives each copy W / C,
    so a child gets ``count * W / C``; children alone in their block keep their mass exactly.
    Returns weights of the broadcast shape, aligned with ``sorted_values`` (without ties: a
    read-only broadcast of ``rank_weights``).
    """
    v = np.asarray(sorted_values)
    w = np.asarray(rank_weights, dtype=np.float64)
    c = None if counts is None else np.asarray(counts)
    shape = np.broadcast_shapes(v.shape, w.shape, () if c is None else c.shape)
    n = shape[-1]
    if n <= 1:
        return np.broadcast_to(w, shape)
    same = v[..., 1:] == v[..., :-1]
    if not same.any():
        return np.broadcast_to(w, shape)
    new_block = np.ones(v.shape, dtype=bool)
    new_block[..., 1:] = ~same
    block = np.cumsum(new_block, axis=-1) - 1  # 0-based block of each child in its row
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    ids = (np.broadcast_to(block, shape).reshape(rows, n)
           + n * np.arange(rows)[:, None]).ravel()  # fmt: skip
    w_flat = np.broadcast_to(w, shape).reshape(-1)
    mass = np.bincount(ids, weights=w_flat, minlength=rows * n)
    members = np.bincount(ids, minlength=rows * n)[ids]
    if c is None:
        shared = mass[ids] / members
    else:
        c_flat = np.broadcast_to(c, shape).reshape(-1).astype(np.float64)
        copies = np.bincount(ids, weights=c_flat, minlength=rows * n)
        per_copy = np.divide(mass, copies, out=np.zeros_like(mass), where=copies > 0)
        shared = per_copy[ids] * c_flat
    return np.where(members == 1, w_flat, shared).reshape(shape)


@dataclass(frozen=True, eq=False)
class RankedPlay:
    """Children sorted best-first for the player, with each policy's mass on them."""

    order: np.ndarray
    """``(..., n)`` the sorting permutation (``values[order]`` is best-first)."""
    values: np.ndarray
    """``(..., n)`` the children's values, best-first."""
    counts: np.ndarray | None
    """``(..., n)`` multiplicities in sorted order, or None."""
    mass: np.ndarray
    """``(P, ..., n)`` (broadcastable) each policy's mass on the sorted children's ranks, before
    tie sharing: a
    node's value is ``sum(mass * values)`` (ties do not change it), summed in sorted order, so
    it does not depend on the children's order."""
    weights: np.ndarray
    """``(P, ..., n)`` the mass after tie sharing (:func:`tie_shared`), sorted order."""

    def unsorted(self, x: np.ndarray) -> np.ndarray:
        """``x (..., n)`` in sorted order, put back in the children's original order."""
        shape = np.broadcast_shapes(x.shape, self.order.shape)
        out = np.empty(shape, dtype=x.dtype)
        np.put_along_axis(out, np.broadcast_to(self.order, shape), np.broadcast_to(x, shape),
                          axis=-1)  # fmt: skip
        return out


def rank_play(values: np.ndarray, policies, maximize: bool = True,
              counts: np.ndarray | None = None) -> RankedPlay:  # fmt: skip
    """Sort children ``values (..., n)`` once best-first for the player and apply each of
    ``policies``: rank mass (:func:`rank_mass`, with multiplicities ``counts`` broadcastable to
    ``values``, original order) and the one tie rule (:func:`tie_shared`)."""
    values = np.asarray(values, dtype=np.float64)
    pols = [as_policy(p) for p in policies]
    if counts is not None:
        counts = np.asarray(counts)
        values = np.broadcast_to(values, np.broadcast_shapes(values.shape, counts.shape))
        counts = np.broadcast_to(counts, values.shape)
    n = values.shape[-1]
    if n < 1:
        raise ValueError("a rank policy needs at least one child, got 0")
    order = np.argsort(-values if maximize else values, axis=-1, kind="stable")
    s = np.take_along_axis(values, order, axis=-1)
    c = None if counts is None else np.take_along_axis(counts, order, axis=-1)
    if c is None:  # (P, 1, ..., 1, n): broadcast, not materialised
        mass = np.stack([rank_mass(p, n) for p in pols]).reshape(
            (len(pols),) + (1,) * (s.ndim - 1) + (n,))  # fmt: skip
    else:
        mass = np.stack([rank_mass(p, n, c) for p in pols])
    return RankedPlay(order, s, c, mass, tie_shared(s, mass, c))


def play_weights(values: np.ndarray, policies, maximize: bool = True,
                 counts: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Weights ``(P, ..., n)`` that each of ``policies`` puts on children ``values (..., n)``
    (one sort for all), in the children's original order; the player maximises (or minimises).

    ``counts`` (broadcastable to ``values``, original order) are multiplicities: a child's
    weight is the mass of all its copies. Ties share mass (:func:`tie_shared`).
    """
    play = rank_play(values, policies, maximize, counts)
    return play.unsorted(play.weights)


def child_weights(values: np.ndarray, policy: RankPolicy, maximize: bool = True,
                  counts: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Weights a player with ``policy`` puts on children of ``values`` ``(..., n)``, in their
    original order; the player maximises (or minimises) value. Ties share mass; ``counts`` are
    multiplicities (see :func:`play_weights`)."""
    return play_weights(values, [policy], maximize, counts)[0]


def policy_value(values: np.ndarray, policy: RankPolicy, maximize: bool = True,
                 counts: np.ndarray | None = None) -> np.ndarray:  # fmt: skip
    """Expected value ``(...)`` of children ``values`` ``(..., n)`` under the player's weights."""
    values = np.asarray(values, dtype=np.float64)
    return (child_weights(values, policy, maximize, counts) * values).sum(axis=-1)
