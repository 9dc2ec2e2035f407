"""Nested best-of-n solve of finite debate pools on the rank-policy core.

From the inside out: the rebuttal player maximises the judge score over each critique's
rebuttals, the critic minimises over each proposal's critiques, the proposer maximises over its
proposals. Each player is a rank policy (``debatelab.policies``); an int means best-of-n with
replacement (``BestOfN``), so quantilisers (``TopK``) and exact play (``Exact``) plug in the same
way. Proposer accuracy is the expected correctness of the selected proposal, its win rate the
expected judge score.

Every level can take multiplicities (``counts``): a pool in which element j appears ``counts[j]``
times, as in a bootstrap resample. Element j then occupies ranks ``start_j + 1 .. start_j +
counts_j`` of the sorted multiset and gets the policy's rank weights of those ranks, so a resample
is solved without building it. With all counts one this is the plain solve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..policies import BestOfN, Exact, RankPolicy, TopK, Uniform, as_policy, child_weights

PolicySpec = RankPolicy | int | str | None


def bon_policy(spec: PolicySpec) -> RankPolicy:
    """A player's policy: an int n is best-of-n (``BestOfN(n)``), None is unoptimised play
    (best-of-1, i.e. uniform); strings as in ``as_policy`` ('exact', 'top5', 'bo10', 'uniform')."""
    if spec is None:
        return BestOfN(1)
    if isinstance(spec, int | np.integer) and not isinstance(spec, bool):
        return BestOfN(int(spec))
    return as_policy(spec)


def policy_label(policy: RankPolicy) -> str:
    if isinstance(policy, BestOfN):
        return f"Bo{policy.draws}"
    if isinstance(policy, TopK):
        return f"top{policy.k}"
    if isinstance(policy, Exact):
        return "exact"
    if isinstance(policy, Uniform):
        return "uniform"
    return repr(policy)


def best_of_n_weights(scores, n: int, maximize: bool = True) -> np.ndarray:
    """Selection probabilities of best-of-``n`` with replacement over the last axis of
    ``scores``; tied scores share their block's mass equally."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError("best_of_n_weights needs a non-empty pool of scores")
    return child_weights(scores, bon_policy(int(n)), maximize)


@lru_cache(maxsize=4096)
def _cumulative(policy: RankPolicy, size: int) -> np.ndarray:
    """(size + 1,) cumulative rank weights: entry k is the mass of ranks 1..k."""
    return np.concatenate([[0.0], np.cumsum(policy.rank_weights(size))])


def _cum_table(policies: Sequence[RankPolicy], size: int) -> np.ndarray:
    return np.stack([_cumulative(p, size) for p in policies])  # (P, size + 1)


def _rank_mass(cum: np.ndarray, sorted_counts: np.ndarray | None, size: int) -> np.ndarray:
    """Weights ``(P, ..., K)`` of sorted elements with multiplicities (None: all one)."""
    if sorted_counts is None:
        return np.diff(cum, axis=-1)  # (P, K)
    end = np.cumsum(sorted_counts, axis=-1)
    start = end - sorted_counts
    return cum[:, end] - cum[:, start]


def level_values(values, policies: Sequence[RankPolicy], maximize: bool, counts=None,
                 presorted: bool = False, cumulative=None) -> np.ndarray:  # fmt: skip
    """Expected value ``(P, ...)`` of pools ``values (..., K)`` under each policy.

    ``counts (..., K)`` are multiplicities in the same order as ``values``. With ``presorted``
    the values are already sorted best-first for the player and counts are in that order;
    ``cumulative`` may then replace ``counts`` by their running sums along the pool, either as
    an array ``(..., K)`` or as ``(bank, pick)``: a bank of running sums ``(B, K)`` and the
    bank row ``(...)`` of each pool. Ties do not change a value, so need no sharing here.
    """
    values = np.asarray(values, dtype=np.float64)
    size = values.shape[-1]
    cum = _cum_table(policies, size)
    if presorted:
        s, c = values, counts
    else:
        order = np.argsort(-values if maximize else values, axis=-1)  # ties: same value
        s = np.take_along_axis(values, order, axis=-1)
        c = None
        if counts is not None:
            c = np.take_along_axis(np.broadcast_to(counts, values.shape), order, axis=-1)
    if c is None and cumulative is None:
        return np.einsum("...k,pk->p...", s, np.diff(cum, axis=-1))
    # sum_k (F(E_k) - F(E_k - c_k)) s_k = sum_k F(E_k) (s_k - s_(k+1)), with s_(K+1) = 0,
    # where E_k is the number of copies at sorted positions 1..k and F the cumulative weights
    if isinstance(cumulative, tuple):  # (bank of running sums (B, K), pattern of each pool)
        bank, pick = cumulative
        f = np.take(cum[:, bank], pick, axis=1)  # (P, ..., K)
    else:
        ends = np.cumsum(c, axis=-1) if cumulative is None else cumulative
        f = cum[0][ends][None] if len(policies) == 1 else cum[:, ends]  # (P, ..., K)
    f = f.reshape(f.shape[:1] + (1,) * (s.ndim + 1 - f.ndim) + f.shape[1:])  # (P, ..., K)
    return _rowdot(f, s[None]) - _rowdot(f[..., :-1], s[None, ..., 1:])


def _rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Dot products along the last axis, broadcasting the rest (batched matmul is the fastest
    numpy route for many short rows)."""
    return np.matmul(a[..., None, :], b[..., :, None])[..., 0, 0]


def _tie_share(sorted_values: np.ndarray, weights: np.ndarray, counts) -> np.ndarray:
    """Spread each tie block's mass over its copies: ``weights (P, ..., K)`` of sorted values
    ``(..., K)`` with multiplicities ``counts`` (None: one each)."""
    k = sorted_values.shape[-1]
    new_block = np.ones(sorted_values.shape, dtype=bool)
    new_block[..., 1:] = sorted_values[..., 1:] != sorted_values[..., :-1]
    if new_block.all():
        return weights
    rows = int(np.prod(sorted_values.shape[:-1], dtype=np.int64))
    ids = (np.cumsum(new_block, axis=-1) - 1).reshape(rows, k) + k * np.arange(rows)[:, None]
    ids = ids.ravel()
    c = np.ones(rows * k) if counts is None else np.asarray(counts, np.float64).reshape(-1)
    size = np.bincount(ids, weights=c, minlength=rows * k)
    out = np.empty_like(weights)
    for p in range(weights.shape[0]):
        mass = np.bincount(ids, weights=weights[p].reshape(-1), minlength=rows * k)
        share = np.divide(mass, size, out=np.zeros_like(mass), where=size > 0)
        out[p] = (share[ids] * c).reshape(weights.shape[1:])
    return out


def proposer_level(values, correct, policies: Sequence[RankPolicy], counts=None,
                   want_weights: bool = False):  # fmt: skip
    """Proposer best-first over ``values (..., N)`` with ``correct (..., N)`` (broadcastable).

    Returns ``(accuracy, win_rate, weights)`` with accuracy and win rate ``(P, ...)`` and
    weights ``(P, ..., N)`` in the original proposal order (or None unless ``want_weights``).
    Tied values share their block's mass.
    """
    values = np.asarray(values, dtype=np.float64)
    size = values.shape[-1]
    correct = np.broadcast_to(np.asarray(correct, dtype=np.float64), values.shape)
    order = np.argsort(-values, axis=-1, kind="stable")
    s = np.take_along_axis(values, order, axis=-1)
    cs = np.take_along_axis(correct, order, axis=-1)
    c = None if counts is None else np.take_along_axis(
        np.broadcast_to(counts, values.shape), order, axis=-1)  # fmt: skip
    cum = _cum_table(policies, size)
    w = _rank_mass(cum, c, size)
    if c is None:
        w = w.reshape((len(policies),) + (1,) * (values.ndim - 1) + (size,))
    w = _tie_share(s, np.ascontiguousarray(np.broadcast_to(w, (len(policies),) + values.shape)), c)
    accuracy = (w * cs).sum(axis=-1)
    win_rate = (w * s).sum(axis=-1)
    weights = None
    if want_weights:
        weights = np.empty_like(w)
        np.put_along_axis(weights, np.broadcast_to(order, w.shape), w, axis=-1)
    return accuracy, win_rate, weights


@dataclass(frozen=True)
class NestedResult:
    """The proposer's outcome of one nested best-of-n solve."""

    accuracy: float
    """Expected correctness of the proposal the proposer selects."""
    win_rate: float
    """Expected judge score of the played debate (the proposer's win probability)."""
    weights: np.ndarray
    """(N,) the proposer's selection probabilities over proposals."""
    values: np.ndarray
    """(N,) each proposal's value after the inner players' play (its own score if no critique)."""


def presort(scores) -> np.ndarray:
    """Sort the innermost axis best-first for its player (rebuttals descending, critiques
    ascending); proposal-only pools are returned as they are. See ``sweep_arrays``."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 4:
        return -np.sort(-scores, axis=-1)
    if scores.ndim == 3:
        return np.sort(scores, axis=-1)
    return scores


def sweep_arrays(scores, correct, n, m=(None,), r=(None,), counts=None, want_weights=False,
                 presorted=False):  # fmt: skip
    """Solve stacked pools for every combination of proposer, critic and rebuttal policies.

    ``scores`` is ``(G, N)``, ``(G, N, M)`` or ``(G, N, M, R)`` for G questions of one shape and
    ``correct`` ``(G, N)``; ``n``, ``m``, ``r`` are sequences of policy specs (ints are
    best-of-n). ``counts`` optionally maps 'proposals', 'critiques', 'rebuttals' to
    multiplicities of the same shape as the level's pool. With ``presorted`` the innermost axis
    is already sorted best-first for its player (``presort``) and that level's counts are given
    in sorted order (a resample of an exchangeable pool needs no order), so repeated solves of
    one pool (the bootstrap) sort the leaves once; the innermost level's counts may then be
    given as running sums under '<level>_cumulative' instead.
    Returns accuracy and win rate ``(G, len n, len m, len r)`` and, with ``want_weights``, the
    proposer weights ``(G, len n, len m, len r, N)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    depth = scores.ndim - 1
    counts = counts or {}
    pn = [bon_policy(x) for x in n]
    pm = [bon_policy(x) for x in (m if depth >= 2 else (None,))]
    pr = [bon_policy(x) for x in (r if depth >= 3 else (None,))]
    s = scores if presorted else presort(scores)
    if depth == 3:
        v = level_values(s, pr, True, counts.get("rebuttals"), True,
                         counts.get("rebuttals_cumulative"))  # (Pr, G, N, M)  # fmt: skip
    else:
        v = s[None]  # (1, G, N[, M])
    if depth >= 2:
        inner = depth == 2
        v = level_values(v, pm, False, counts.get("critiques"), inner,
                         counts.get("critiques_cumulative") if inner else None)  # fmt: skip
    else:
        v = v[None]  # (1, 1, G, N)
    acc, win, w = proposer_level(v, np.asarray(correct)[None, None], pn, counts.get("proposals"),
                                 want_weights)  # (Pn, Pm, Pr, G)  # fmt: skip
    acc = acc.transpose(3, 0, 1, 2)
    win = win.transpose(3, 0, 1, 2)
    if want_weights:
        w = w.transpose(3, 0, 1, 2, 4)
    return acc, win, w


def nested_best_of_n(scores, correct, n: PolicySpec, m: PolicySpec = None,
                     r: PolicySpec = None) -> NestedResult:  # fmt: skip
    """Nested best-of-n over one question's pool.

    ``scores`` ``(N,)``: proposal only; ``(N, M)``: proposal + critique; ``(N, M, R)``: proposal
    + critique + rebuttal, each leaf the judge's score in [0, 1]. ``correct`` ``(N,)``. ``n``
    (proposer, maximising), ``m`` (critic, minimising), ``r`` (rebuttal, maximising) are ints for
    best-of-n, rank policies (``TopK``, ``Exact``, ``Uniform``) or policy strings; None leaves a
    level unoptimised (best-of-1). Giving ``m`` or ``r`` for a level the pool lacks is an error.
    """
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if scores.ndim not in (1, 2, 3) or 0 in scores.shape:
        raise ValueError(f"scores must be a non-empty (N,), (N, M) or (N, M, R) array, "
                         f"got shape {scores.shape}")  # fmt: skip
    if correct.shape != scores.shape[:1]:
        raise ValueError(f"correct must have shape ({scores.shape[0]},), got {correct.shape}")
    if np.isnan(scores).any() or np.isnan(correct).any():
        raise ValueError("scores and correct must not contain NaN")
    if m is not None and scores.ndim < 2:
        raise ValueError("m (critic policy) given but scores have no critique axis")
    if r is not None and scores.ndim < 3:
        raise ValueError("r (rebuttal policy) given but scores have no rebuttal axis")
    acc, win, w = sweep_arrays(scores[None], correct[None], [n], [m], [r], want_weights=True)
    weights = w[0, 0, 0, 0]
    pr = [bon_policy(r)]
    v = scores
    if scores.ndim == 3:
        v = level_values(v, pr, True)[0]
    if v.ndim == 2:
        v = level_values(v, [bon_policy(m)], False)[0]
    return NestedResult(float(acc[0, 0, 0, 0]), float(win[0, 0, 0, 0]), weights, v)
