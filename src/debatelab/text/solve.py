"""Nested best-of-n solve of finite debate pools on the game core.

From the inside out: the rebuttal player maximises the judge score over each critique's
rebuttals, the critic minimises over each proposal's critiques, the proposer maximises over its
proposals; deeper pools (a second critique of each rebuttal, and so on) alternate the critic and
the rebuttal player, each with its own policy at every level it moves. Each player is a rank policy (``debatelab.policies``): best-of-n with replacement is
``BestOfN(draws)``, quantilisers ``TopK(k)``, exact play ``Exact()``; None leaves a level
unoptimised (one draw). Numbers of draws are converted to policies explicitly at the config edges
(``SweepSpec``, ``BonConfig``, :func:`draws_policy`); the solver refuses a bare int, which the rest
of the library (:func:`debatelab.policies.as_policy`) reads as top-k. Proposer accuracy is the
expected correctness of the selected proposal (the quantity the image games carry as judge
accuracy), its win rate the expected judge score.

:func:`nested_best_of_n` is the general path: the pool as a game
(:func:`debatelab.games.core.pool_game`) solved by the core's one level reducer. :func:`sweep_arrays` is the fast path for grids
of policies and bootstrap resamples: inner levels reduce values only (:func:`level_values`, which
needs no tie sharing), presorted leaves are sorted once, and the proposer level is the core reducer
(:func:`proposer_level`). Both give the same numbers (tests/test_core.py).

Every level can take multiplicities (``counts``): a pool in which element j appears ``counts[j]``
times, as in a bootstrap resample. Element j then occupies ranks ``start_j + 1 .. start_j +
counts_j`` of the sorted multiset and gets the policy's rank weights of those ranks, so a resample
is solved without building it. With all counts one this is the plain solve.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..games.core import pool_level_name, reduce_level, solve_pool
from ..policies import (
    BestOfN,
    Exact,
    RankPolicy,
    TopK,
    Uniform,
    as_policy,
    child_weights,
    cumulative_weights,
)

PolicySpec = RankPolicy | str | None
_KNOWN = (BestOfN, TopK, Exact, Uniform)


def _is_number(spec) -> bool:
    return (isinstance(spec, int | np.integer) and not isinstance(spec, bool)) or (
        isinstance(spec, str) and spec.strip().isdigit())  # fmt: skip


def text_policy(spec: PolicySpec) -> RankPolicy:
    """A player's policy in a text solve: a rank policy, a policy string ('exact', 'uniform',
    'top5', 'bo10'), or None for unoptimised play (one draw, ``BestOfN(1)``). A bare number is
    refused: give ``BestOfN(d)`` for d draws (:func:`draws_policy`) or ``TopK(k)``."""
    if isinstance(spec, _KNOWN):
        return spec
    if spec is None:
        return BestOfN(1)
    if _is_number(spec):
        raise ValueError(
            f"a bare number {spec!r} is ambiguous as a text player's policy: give BestOfN({spec}) "
            f"for {spec} best-of-n draws (draws_policy) or TopK({spec}) for a top-k quantiliser"
        )
    return as_policy(spec)


def draws_policy(spec: int | PolicySpec) -> RankPolicy:
    """The draws edge of the text API: an int d is a number of best-of-n draws, ``BestOfN(d)``;
    None is one draw (unoptimised play); policies and policy strings pass through
    (:func:`text_policy`)."""
    if isinstance(spec, int | np.integer) and not isinstance(spec, bool):
        return BestOfN(int(spec))
    return text_policy(spec)


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
    """Selection probabilities of best-of-``n`` draws with replacement over the last axis of
    ``scores``; tied scores share their block's mass equally."""
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim == 0 or scores.shape[-1] == 0:
        raise ValueError("best_of_n_weights needs a non-empty pool of scores")
    return child_weights(scores, BestOfN(int(n)), maximize)


def _cum_table(policies: Sequence[RankPolicy], size: int) -> np.ndarray:
    return np.stack([cumulative_weights(p, size) for p in policies])  # (P, size + 1)


def level_values(values, policies: Sequence[RankPolicy], maximize: bool, counts=None,
                 presorted: bool = False, cumulative=None) -> np.ndarray:  # fmt: skip
    """Expected value ``(P, ...)`` of pools ``values (..., K)`` under each policy.

    ``counts (..., K)`` are multiplicities in the same order as ``values``. With ``presorted``
    the values are already sorted best-first for the player and counts are in that order;
    ``cumulative`` may then replace ``counts`` by their running sums along the pool, either as
    an array ``(..., K)`` or as ``(bank, pick)``: a bank of running sums ``(B, K)`` and the
    bank row ``(...)`` of each pool. Each pool's counts sum to its size ``K`` (a resample).
    Ties do not change a value, so need no sharing here. The fast value-only kernel of the
    bootstrap: the same numbers as the core reducer (tests/test_core.py).
    """
    values = np.asarray(values, dtype=np.float64)
    policies = [text_policy(p) for p in policies]
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


def proposer_level(values, correct, policies: Sequence[RankPolicy], counts=None,
                   want_weights: bool = False):  # fmt: skip
    """Proposer best-first over ``values (..., N)`` with ``correct (..., N)`` (broadcastable):
    the core's level reducer (:func:`debatelab.games.core.reduce_level`).

    Returns ``(accuracy, win_rate, weights)`` with accuracy and win rate ``(P, ...)`` and
    weights ``(P, ..., N)`` in the original proposal order (or None unless ``want_weights``).
    Tied values share their block's mass.
    """
    play = reduce_level(values, [text_policy(p) for p in policies], True, counts, correct)
    return play.carried, play.values, play.weights if want_weights else None


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
    """Sort the innermost axis of stacked pools ``(G, N, ...)`` best-first for its player
    (rebuttals descending, critiques ascending: a level's player maximises at odd depths);
    proposal-only pools are returned as they are. See ``sweep_arrays``."""
    scores = np.asarray(scores, dtype=np.float64)
    depth = scores.ndim - 1
    if depth < 2:
        return scores
    return -np.sort(-scores, axis=-1) if depth % 2 else np.sort(scores, axis=-1)


def _innermost(depth: int) -> str | None:
    return pool_level_name(depth - 1) if depth >= 2 else None


def sweep_arrays(scores, correct, n, m=(None,), r=(None,), counts=None, want_weights=False,
                 presorted=False):  # fmt: skip
    """Solve stacked pools for every combination of proposer, critic and rebuttal policies.

    ``scores`` is ``(G, N)``, ``(G, N, M)``, ``(G, N, M, R)`` or deeper (``(G, N, M, R, M)``:
    a second critique, and so on) for G questions of one shape and ``correct`` ``(G, N)``;
    ``n``, ``m``, ``r`` are sequences of rank policies (or policy strings; None is one draw; see
    :func:`text_policy`: numbers of draws must already be ``BestOfN``). The critic plays its
    policy at every critique level and the rebuttal player at every rebuttal level. ``counts``
    optionally maps level names ('proposals', 'critiques', 'rebuttals', 'critiques2', ...,
    :func:`~debatelab.games.core.pool_level_name`) to multiplicities of the same shape as the
    level's pool (each pool's counts summing to its size, as in a resample). With ``presorted``
    the innermost axis is already sorted best-first for its player (``presort``) and that
    level's counts are given in sorted order (a resample of an exchangeable pool needs no
    order), so repeated solves of one pool (the bootstrap) sort the leaves once; the innermost
    level's counts may then be given as running sums under '<level>_cumulative' instead.
    Returns accuracy and win rate ``(G, len n, len m, len r)`` and, with ``want_weights``, the
    proposer weights ``(G, len n, len m, len r, N)``.
    """
    scores = np.asarray(scores, dtype=np.float64)
    depth = scores.ndim - 1
    counts = dict(counts or {})
    pn = [text_policy(x) for x in n]
    per_axis = {"m": [text_policy(x) for x in (m if depth >= 2 else (None,))],
                "r": [text_policy(x) for x in (r if depth >= 3 else (None,))]}  # fmt: skip
    inner = _innermost(depth)
    if presorted:
        s = scores
    elif inner is not None and counts.get(inner) is not None:  # sort the counts along
        order = np.argsort(-scores if depth % 2 else scores, axis=-1, kind="stable")
        s = np.take_along_axis(scores, order, axis=-1)
        counts[inner] = np.take_along_axis(np.broadcast_to(counts[inner], scores.shape), order,
                                           axis=-1)  # fmt: skip
    else:
        s = presort(scores)
    if not presorted and inner is not None and counts.get(f"{inner}_cumulative") is not None:
        raise ValueError(f"'{inner}_cumulative' counts need presorted pools (presorted=True)")
    # inner levels from the leaves up: v carries one leading axis per player reduced so far
    # (``axes``, innermost player first); a player met again (a later round) plays its own
    # policy of that axis: the diagonal, not a product
    v, axes = s, []
    for d in range(depth, 1, -1):
        axis = "m" if d % 2 == 0 else "r"
        level, top = pool_level_name(d - 1), d == depth
        args = (
            d % 2 == 1,
            counts.get(level),
            top,
            counts.get(f"{level}_cumulative") if top else None,
        )
        if axis not in axes:
            v, axes = level_values(v, per_axis[axis], *args), [axis, *axes]
        else:
            at = axes.index(axis)
            v = np.stack([level_values(np.take(v, i, axis=at), [pol], *args)[0]
                          for i, pol in enumerate(per_axis[axis])], axis=at)  # fmt: skip
    for axis in ("r", "m"):  # -> (Pm, Pr, G, N)
        if axis not in axes:
            v, axes = v[None], [axis, *axes]
    if axes[0] != "m":
        v = np.swapaxes(v, 0, 1)
    acc, win, w = proposer_level(v, np.asarray(correct)[None, None], pn, counts.get("proposals"),
                                 want_weights)  # (Pn, Pm, Pr, G)  # fmt: skip
    acc = acc.transpose(3, 0, 1, 2)
    win = win.transpose(3, 0, 1, 2)
    if want_weights:
        w = w.transpose(3, 0, 1, 2, 4)
    return acc, win, w


def player_policies(depth: int, n: PolicySpec, m: PolicySpec = None,
                    r: PolicySpec = None) -> list[RankPolicy]:  # fmt: skip
    """The policy of each level of a pool of ``depth`` turns: the proposer's, then the critic's
    and the rebuttal player's alternately (each plays its own at every level it moves)."""
    return [text_policy(n)] + [text_policy(m if d % 2 == 0 else r) for d in range(2, depth + 1)]


def nested_best_of_n(scores, correct, n: PolicySpec, m: PolicySpec = None,
                     r: PolicySpec = None) -> NestedResult:  # fmt: skip
    """Nested best-of-n over one question's pool, solved by the game core.

    ``scores`` ``(N,)``: proposal only; ``(N, M)``: proposal + critique; ``(N, M, R)``: proposal
    + critique + rebuttal; ``(N, M, R, M)`` and deeper: later rounds; each leaf the judge's score
    in [0, 1]. ``correct`` ``(N,)``. ``n`` (proposer, maximising), ``m`` (critic, minimising, at
    every critique level), ``r`` (rebuttal, maximising, at every rebuttal level) are rank
    policies (``BestOfN(draws)``, ``TopK(k)``, ``Exact()``, ``Uniform()``) or policy strings
    ('bo8', 'top3', 'exact'); None leaves a level unoptimised (one draw). A bare int is refused
    (``BestOfN(d)`` for d draws). Giving ``m`` or ``r`` for a level the pool lacks is an error.
    """
    scores = np.asarray(scores, dtype=np.float64)
    correct = np.asarray(correct, dtype=np.float64)
    if scores.ndim < 1 or 0 in scores.shape:
        raise ValueError(f"scores must be a non-empty (N,), (N, M), (N, M, R), ... array, "
                         f"got shape {scores.shape}")  # fmt: skip
    if correct.shape != scores.shape[:1]:
        raise ValueError(f"correct must have shape ({scores.shape[0]},), got {correct.shape}")
    if np.isnan(scores).any() or np.isnan(correct).any():
        raise ValueError("scores and correct must not contain NaN")
    if m is not None and scores.ndim < 2:
        raise ValueError("m (critic policy) given but scores have no critique axis")
    if r is not None and scores.ndim < 3:
        raise ValueError("r (rebuttal policy) given but scores have no rebuttal axis")
    policies = player_policies(scores.ndim, n, m, r)
    sol = solve_pool(scores, correct, policies)
    return NestedResult(float(sol.root_carried[0]), float(sol.root_value[0]),
                        sol.weights[0][0], sol.values[1])  # fmt: skip
