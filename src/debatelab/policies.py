"""Rank policies: a player's optimisation pressure.

Given the values of its children sorted best-first *for that player*, a rank policy puts weights on
ranks. Tied values share the mass of their rank block equally, so results never depend on sort
order. See ../shared/DESIGN.md, "The one idea that ties it together".

| policy      | weight on rank i (1 = best) of n               |
|-------------|------------------------------------------------|
| Exact       | 1 on rank 1                                    |
| TopK(k)     | 1/k on ranks 1..k (k clamped to n)             |
| BestOfN(b)  | ((n-i+1)/n)^b - ((n-i)/n)^b  (b draws, with replacement) |
| Uniform     | 1/n                                            |
"""

from __future__ import annotations

from dataclasses import dataclass
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


def as_policy(spec: RankPolicy | int | str) -> RankPolicy:
    """An int k means TopK(k) (1 = exact); strings: 'exact', 'uniform', 'topK', 'boN'."""
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
        if s.startswith("top") and s[3:].isdigit():
            return TopK(int(s[3:]))
        if s.startswith("bo") and s[2:].isdigit():
            return BestOfN(int(s[2:]))
    raise ValueError(
        f"not a rank policy: {spec!r}; use an int k (top-k), 'exact', 'uniform', 'topK' or 'boN'"
    )


def tie_shared(sorted_values: np.ndarray, rank_weights: np.ndarray) -> np.ndarray:
    """Spread each tie block's mass equally over its members.

    ``sorted_values`` is ``(..., n)`` sorted best-first; ``rank_weights`` is ``(n,)`` or
    broadcastable. Returns weights aligned with ``sorted_values``.
    """
    v = np.asarray(sorted_values)
    w = np.broadcast_to(np.asarray(rank_weights, dtype=np.float64), v.shape)
    n = v.shape[-1]
    if n <= 1:
        return w.copy()
    new_block = np.concatenate(
        [np.ones(v.shape[:-1] + (1,), dtype=bool), v[..., 1:] != v[..., :-1]], axis=-1
    )
    block_id = np.cumsum(new_block, axis=-1) - 1  # (..., n), 0-based block index per row
    flat_ids = block_id.reshape(-1, n) + n * np.arange(int(np.prod(v.shape[:-1])))[:, None]
    mass = np.bincount(flat_ids.ravel(), weights=w.reshape(-1), minlength=flat_ids.size)
    size = np.bincount(flat_ids.ravel(), minlength=flat_ids.size)
    shared = mass[flat_ids] / size[flat_ids]
    return shared.reshape(v.shape)


def child_weights(values: np.ndarray, policy: RankPolicy, maximize: bool = True) -> np.ndarray:
    """Weights a player with ``policy`` puts on children of ``values`` ``(..., n)``, in their
    original order; the player maximises (or minimises) value. Ties share mass."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[-1]
    order = np.argsort(-values if maximize else values, axis=-1, kind="stable")
    sorted_values = np.take_along_axis(values, order, axis=-1)
    w_sorted = tie_shared(sorted_values, policy.rank_weights(n))
    out = np.empty_like(w_sorted)
    np.put_along_axis(out, order, w_sorted, axis=-1)
    return out


def policy_value(values: np.ndarray, policy: RankPolicy, maximize: bool = True) -> np.ndarray:
    """Expected value ``(...)`` of children ``values`` ``(..., n)`` under the player's weights."""
    values = np.asarray(values, dtype=np.float64)
    return (child_weights(values, policy, maximize) * values).sum(axis=-1)
