"""Paired hierarchical bootstrap of sweep metrics.

Each replicate resamples questions with replacement; each drawn question slot then resamples
its proposals, each proposal its critiques and each critique its rebuttals (and each rebuttal
its later critiques, in deeper pools), every level with replacement and at its own size. Below the questions a resample is held as multiplicities
(counts) and solved directly (``solve.sweep_arrays``), never materialised: a unit drawn k times
enters with weight k and one resample of its children. Question slots are independent. The
innermost level of large pools takes its resample patterns from a fresh per-replicate bank
(see ``_cumulative_counts``), which keeps 28 x 50 x 50 x 20 pools at tens of milliseconds a
replicate.

Pairing: one replicate's draws are shared by every setting evaluated on it: all grid points of
all specs, all protocols of an arm (the same proposals; critique draws are shared wherever the
shapes agree) and all arms (the same questions). Differences between two settings are therefore
paired. Intervals are basic (reverse percentile) intervals by default; percentile is offered.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

from ..games.core import pool_level_name
from ..progress import progress
from .pools import PoolSet
from .solve import presort, sweep_arrays
from .sweeps import SweepSpec

LEVELS = ("questions", "proposals", "critiques", "rebuttals")
METRICS = ("accuracy", "win_rate")


@dataclass(frozen=True)
class BootstrapConfig:
    """Settings of the paired hierarchical bootstrap."""

    replicates: int = 1000
    """Number of bootstrap replicates."""
    levels: tuple[str, ...] = LEVELS
    """Levels resampled (others kept as observed): questions, proposals, critiques, rebuttals
    ('critiques' and 'rebuttals' include the later rounds' critiques2, rebuttals2, ...)."""
    confidence: float = 0.95
    """Coverage of the intervals."""
    method: Literal["basic", "percentile", "bca"] = "basic"
    """'basic' (reverse percentile: 2 * estimate - quantiles) or 'percentile'. Basic is the
    default: a resampled pool holds fewer distinct items, which biases best-of-n replicates
    (low accuracy, high win rate); the basic interval corrects for that bias, the percentile
    interval inherits it (see tests/test_text_coverage.py)."""

    def __post_init__(self):
        if int(self.replicates) != self.replicates or self.replicates < 2:
            raise ValueError(f"replicates must be an integer >= 2, got {self.replicates!r}")
        bad = [lv for lv in self.levels if lv not in LEVELS]
        if bad:
            raise ValueError(f"unknown bootstrap level(s) {bad}; use some of {list(LEVELS)}")
        if not 0 < self.confidence < 1:
            raise ValueError(f"confidence must lie in (0, 1), got {self.confidence}")
        if self.method not in ("basic", "percentile", "bca"):
            raise ValueError(f"method must be 'basic', 'percentile' or 'bca', got {self.method!r}")


def interval(estimate, replicates, confidence: float = 0.95, method: str = "basic",
             per_question=None):  # fmt: skip
    """(low, high) of a bootstrap interval; ``replicates`` has the replicate axis first.

    'bca' (bias-corrected and accelerated) also needs ``per_question``, the metric of each
    question ``(Q, ...)`` whose mean is the estimate: its jackknife gives the acceleration.
    """
    reps = np.asarray(replicates, dtype=np.float64)
    est = np.asarray(estimate, dtype=np.float64)
    alpha = (1 - confidence) / 2
    if method == "bca":
        return _bca(est, reps, alpha, per_question)
    lo, hi = np.quantile(reps, [alpha, 1 - alpha], axis=0)
    if method == "basic":
        return 2 * est - hi, 2 * est - lo
    return lo, hi


_NORMAL = NormalDist()
_cdf = np.vectorize(_NORMAL.cdf, otypes=[float])
_ppf = np.vectorize(_NORMAL.inv_cdf, otypes=[float])


def _bca(est, reps, alpha, per_question):
    if per_question is None:
        raise ValueError("BCa intervals need the per-question metrics")
    b = reps.shape[0]
    below = ((reps < est).sum(axis=0) + 0.5 * (reps == est).sum(axis=0)) / b
    z0 = _ppf(np.clip(below, 1 / (b + 1), b / (b + 1)))
    x = np.asarray(per_question, dtype=np.float64)
    q = x.shape[0]
    loo = (x.sum(axis=0) - x) / max(q - 1, 1)  # leave-one-question-out means
    d = loo.mean(axis=0) - loo
    denom = 6 * np.power((d**2).sum(axis=0), 1.5)
    a = np.divide((d**3).sum(axis=0), denom, out=np.zeros_like(denom), where=denom > 0)
    out = []
    for z in (_NORMAL.inv_cdf(alpha), _NORMAL.inv_cdf(1 - alpha)):
        level = _cdf(z0 + (z0 + z) / (1 - a * (z0 + z)))
        out.append(_quantiles(reps, level))
    return out[0], out[1]


def _quantiles(reps: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Per-element linear-interpolated quantiles of ``reps`` (B, ...) at ``level`` (...)."""
    s = np.sort(reps, axis=0)
    pos = np.clip(level, 0, 1) * (s.shape[0] - 1)
    lo = np.floor(pos).astype(int)
    hi = np.minimum(lo + 1, s.shape[0] - 1)
    frac = pos - lo
    take = lambda i: np.take_along_axis(s, np.asarray(i)[None], axis=0)[0]  # noqa: E731
    return take(lo) * (1 - frac) + take(hi) * frac


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Point estimates and replicates of question-averaged metrics of several specs."""

    specs: tuple[SweepSpec, ...]
    """The specs, in the order given."""
    question_ids: tuple[str, ...]
    """The questions averaged over."""
    config: BootstrapConfig
    """How the replicates were drawn."""
    estimate: dict[tuple[int, str], np.ndarray] = field(repr=False)
    """(spec index, metric) -> (len n, len m, len r) estimate."""
    replicates: dict[tuple[int, str], np.ndarray] = field(repr=False)
    """(spec index, metric) -> (replicates, len n, len m, len r)."""
    per_question: dict[tuple[int, str], np.ndarray] = field(repr=False, default_factory=dict)
    """(spec index, metric) -> (questions, len n, len m, len r) estimate per question."""

    def _interval(self, est, reps, per_question, method=None):
        return interval(est, reps, self.config.confidence, method or self.config.method,
                        per_question)  # fmt: skip

    def value(self, spec: int, metric: str = "accuracy", index=(0, 0, 0), method=None):
        """(estimate, low, high) at one grid point ``(n index, m index, r index)``; intervals
        are clipped to [0, 1], where both metrics live. ``method`` overrides the config's."""
        key, at = (spec, metric), (slice(None), *index)
        est = self.estimate[key][index]
        pq = self.per_question[key][at] if key in self.per_question else None
        lo, hi = self._interval(est, self.replicates[key][at], pq, method)
        return float(est), float(np.clip(lo, 0, 1)), float(np.clip(hi, 0, 1))

    def intervals(self, spec: int, metric: str = "accuracy", method=None):
        """(estimate, low, high) arrays over the spec's whole grid, clipped to [0, 1]."""
        key = (spec, metric)
        est = self.estimate[key]
        lo, hi = self._interval(est, self.replicates[key], self.per_question.get(key), method)
        return est, np.clip(lo, 0, 1), np.clip(hi, 0, 1)

    def contrast(self, a: tuple[int, tuple[int, int, int]], b: tuple[int, tuple[int, int, int]],
                 metric: str = "accuracy", method=None):  # fmt: skip
        """(estimate, low, high) of setting ``a`` minus setting ``b``, each ``(spec, index)``,
        paired over the shared replicates."""
        (sa, ia), (sb, ib) = a, b
        ka, kb, at_a, at_b = (sa, metric), (sb, metric), (slice(None), *ia), (slice(None), *ib)
        est = self.estimate[ka][ia] - self.estimate[kb][ib]
        rep = self.replicates[ka][at_a] - self.replicates[kb][at_b]
        pq = None
        if ka in self.per_question and kb in self.per_question:
            pq = self.per_question[ka][at_a] - self.per_question[kb][at_b]
        lo, hi = self._interval(est, rep, pq, method)
        return float(est), float(np.clip(lo, -1, 1)), float(np.clip(hi, -1, 1))


def _counts(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Multiplicities of a with-replacement resample of size K of each pool ``(..., K)``."""
    k = shape[-1]
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    draws = rng.integers(0, k, size=(rows, k)) + (k * np.arange(rows))[:, None]
    return np.bincount(draws.ravel(), minlength=rows * k).reshape(shape).astype(np.int32)


PATTERN_BANK = 4096


def _cumulative_counts(rng: np.random.Generator, shape: tuple[int, ...]):
    """Running sums of ``_counts(rng, shape)`` along the pool.

    Large levels (more pools than ``PATTERN_BANK``) draw a fresh bank of that many resample
    patterns and give each pool a uniformly chosen one, returned as ``(bank, pick)``: each
    pool's pattern is exactly multinomial, and two pools share one with probability
    1 / PATTERN_BANK.
    """
    rows = int(np.prod(shape[:-1], dtype=np.int64))
    if rows <= PATTERN_BANK:
        return np.cumsum(_counts(rng, shape), axis=-1)
    bank = np.cumsum(_counts(rng, (PATTERN_BANK, shape[-1])), axis=-1).astype(np.intp)
    return bank, rng.integers(0, PATTERN_BANK, size=shape[:-1])


class _Draws:
    """One replicate's multiplicities, per question slot, shared by every spec that asks for the
    same (arm, level, pool shape)."""

    def __init__(self, rng: np.random.Generator, levels: set[str], n_slots: int):
        self.rng, self.levels, self.n_slots = rng, levels, n_slots
        self.cache: dict = {}

    def __call__(self, arm: str, positions: np.ndarray, shape: tuple[int, ...]):
        """Counts for the slots at ``positions`` of pools of ``shape`` (N[, M[, R ...]])."""
        counts = {}
        for d in range(1, len(shape) + 1):
            level = pool_level_name(d - 1)
            if level.rstrip("0123456789") not in self.levels:
                continue
            # the innermost level of a deeper pool is presorted: it takes running sums
            name = f"{level}_cumulative" if d == len(shape) > 1 else level
            key = (arm, name, shape[:d])
            if key not in self.cache:
                draw = _cumulative_counts if name != level else _counts
                self.cache[key] = draw(self.rng, (self.n_slots, *shape[:d]))
            drawn = self.cache[key]
            if isinstance(drawn, tuple):
                counts[name] = (drawn[0], drawn[1][positions])
            else:
                counts[name] = drawn[positions]
        return counts or None


class _Prepared:
    """One spec's questions grouped by shape, with leaves sorted once."""

    def __init__(self, pools: PoolSet, spec: SweepSpec, ids: Sequence[str]):
        self.spec = spec
        self.groups = []
        self.where = np.empty((len(ids), 2), dtype=np.int64)  # question -> (group, row)
        for gi, (pos, scores, correct) in enumerate(pools.stacked(spec.arm, spec.protocol, ids)):
            self.groups.append((presort(scores), correct))
            self.where[pos, 0] = gi
            self.where[pos, 1] = np.arange(len(pos))

    def solve(self, slots: np.ndarray, draws: _Draws | None) -> tuple[np.ndarray, np.ndarray]:
        """Accuracy and win rate ``(len slots, Pn, Pm, Pr)`` of question slots (question
        indices); ``draws`` None solves the pools as observed."""
        spec = self.spec
        acc = np.zeros((len(slots), len(spec.n), len(spec.m), len(spec.r)))
        win = np.zeros_like(acc)
        for gi, (scores, correct) in enumerate(self.groups):
            mine = np.flatnonzero(self.where[slots, 0] == gi)
            if mine.size == 0:
                continue
            rows = self.where[slots[mine], 1]
            counts = None if draws is None else draws(spec.arm, mine, scores.shape[1:])
            a, w, _ = sweep_arrays(scores[rows], correct[rows], spec.n, spec.m, spec.r,
                                   counts=counts, presorted=True)  # fmt: skip
            acc[mine], win[mine] = a, w
        return acc, win


def bootstrap(pools: PoolSet, specs: Sequence[SweepSpec], config: BootstrapConfig | None = None,
              seed: int | np.random.Generator = 0, question_ids: Sequence[str] | None = None,
              show_progress: bool = False) -> BootstrapResult:  # fmt: skip
    """Paired hierarchical bootstrap of the question-averaged metrics of ``specs``.

    All specs are evaluated on the same questions (default: those that every spec's arm and
    protocol cover) and on shared resamples, so any two settings can be contrasted.
    """
    config = config or BootstrapConfig()
    specs = tuple(specs)
    if not specs:
        raise ValueError("bootstrap needs at least one SweepSpec")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if question_ids is None:
        question_ids = pools.common_questions((s.arm, s.protocol) for s in specs)
    ids = tuple(question_ids)
    if not ids:
        raise ValueError("no question has every arm and protocol of the specs")
    prepared = [_Prepared(pools, s, ids) for s in specs]
    q = len(ids)
    all_slots = np.arange(q)
    estimate, reps, per_question = {}, {}, {}
    for i, prep in enumerate(prepared):
        acc, win = prep.solve(all_slots, None)
        per_question[(i, "accuracy")], per_question[(i, "win_rate")] = acc, win
        estimate[(i, "accuracy")], estimate[(i, "win_rate")] = acc.mean(0), win.mean(0)
        for metric in METRICS:
            reps[(i, metric)] = np.empty((config.replicates, *acc.shape[1:]))
    levels = set(config.levels)
    for b in progress(range(config.replicates), enabled=show_progress, desc="bootstrap"):
        slots = rng.integers(0, q, size=q) if "questions" in levels else all_slots
        draws = _Draws(rng, levels, q)
        for i, prep in enumerate(prepared):
            acc, win = prep.solve(slots, draws)
            reps[(i, "accuracy")][b] = acc.mean(axis=0)
            reps[(i, "win_rate")][b] = win.mean(axis=0)
    return BootstrapResult(specs, ids, config, estimate, reps, per_question)
