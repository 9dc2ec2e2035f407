"""Worms and meshes: proposer accuracy and win rate over grids of optimisation pressure.

A *worm* traces one protocol as the proposer's pressure grows (n = 1..20) at fixed critic and
rebuttal policies; a *mesh* is the n x m grid (at fixed r). Both are computed per question and
averaged over questions (each question counts equally).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..policies import RankPolicy
from .pools import MAIN_ARM, PoolSet, protocol_depth, protocol_name
from .solve import PolicySpec, draws_policy, policy_label, sweep_arrays

DrawsSpec = int | PolicySpec


@dataclass(frozen=True)
class SweepSpec:
    """One protocol of one proposer arm over a grid of player policies.

    ``n``, ``m`` and ``r`` are given as numbers of best-of-n draws (ints) or as rank policies
    (``TopK(3)``, ``Exact()``, 'top3', ...); this is a config edge: ints become ``BestOfN(d)``
    here (:func:`~debatelab.text.solve.draws_policy`), so the fields hold rank policies."""

    protocol: str
    """'proposal', 'critique', 'rebuttal', or a later round's 'critique2', 'rebuttal2', ..."""
    n: tuple[DrawsSpec, ...] = tuple(range(1, 21))
    """Proposer policies: ints are numbers of best-of-n draws (``BestOfN``)."""
    m: tuple[DrawsSpec, ...] = (None,)
    """Critic policies (ints: draws), played at every critique level; ignored (one unoptimised
    entry) for the proposal-only protocol."""
    r: tuple[DrawsSpec, ...] = (None,)
    """Rebuttal policies (ints: draws), played at every rebuttal level; ignored unless the
    protocol has rebuttals."""
    arm: str = MAIN_ARM
    """Proposer pool: 'main' or a control arm."""

    def __post_init__(self):
        proto = protocol_name(self.protocol)
        depth = protocol_depth(proto)
        object.__setattr__(self, "protocol", proto)
        for name, needed in (("n", 1), ("m", 2), ("r", 3)):
            vals = tuple(getattr(self, name)) if depth >= needed else (None,)
            if not vals:
                raise ValueError(f"SweepSpec.{name} must not be empty")
            object.__setattr__(self, name, tuple(draws_policy(v) for v in vals))

    @property
    def depth(self) -> int:
        """Turns of the protocol: 1 proposal only, 2 with a critique, 3 with a rebuttal, ..."""
        return protocol_depth(self.protocol)

    @property
    def key(self) -> str:
        return f"{self.arm}/{self.protocol}" if self.arm != MAIN_ARM else self.protocol

    def labels(self, axis: str) -> list[str]:
        return [policy_label(x) for x in getattr(self, axis)]

    def policies(self, axis: str) -> tuple[RankPolicy, ...]:
        """The rank policies of one axis ('n', 'm' or 'r')."""
        return getattr(self, axis)


@dataclass(frozen=True, eq=False)
class Sweep:
    """Results of one ``SweepSpec`` on a set of questions."""

    spec: SweepSpec
    """What was swept."""
    question_ids: tuple[str, ...]
    """The questions, in the order of the first axis of the per-question arrays."""
    accuracy: np.ndarray
    """(Q, len n, len m, len r) proposer accuracy per question."""
    win_rate: np.ndarray
    """(Q, len n, len m, len r) proposer win rate (expected judge score) per question."""

    def mean(self, metric: str = "accuracy") -> np.ndarray:
        """(len n, len m, len r) the metric averaged over questions."""
        return getattr(self, metric).mean(axis=0)

    def worm(self, m_index: int = 0, r_index: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """Averaged (win rate, accuracy) along n at one critic and rebuttal policy."""
        return self.mean("win_rate")[:, m_index, r_index], self.mean()[:, m_index, r_index]


def sweep_values(pools: PoolSet, spec: SweepSpec, question_ids=None, counts=None):
    """Per-question (accuracy, win_rate) arrays ``(Q, Pn, Pm, Pr)`` of a spec.

    ``counts`` (for the bootstrap) maps a group's index to that group's multiplicities.
    """
    ids = list(pools.question_ids(spec.arm) if question_ids is None else question_ids)
    shape = (len(ids), len(spec.n), len(spec.m), len(spec.r))
    acc, win = np.empty(shape), np.empty(shape)
    for gi, (pos, scores, correct) in enumerate(pools.stacked(spec.arm, spec.protocol, ids)):
        a, w, _ = sweep_arrays(scores, correct, spec.n, spec.m, spec.r,
                               counts=None if counts is None else counts[gi])  # fmt: skip
        acc[pos], win[pos] = a, w
    return acc, win


def sweep(pools: PoolSet, spec: SweepSpec, question_ids: Sequence[str] | None = None) -> Sweep:
    """Solve every question of ``spec.arm`` (or the given ones) over the spec's grid."""
    ids = tuple(pools.question_ids(spec.arm) if question_ids is None else question_ids)
    acc, win = sweep_values(pools, spec, ids)
    return Sweep(spec, ids, acc, win)


def worm(pools: PoolSet, protocol: str, n=tuple(range(1, 21)), m: DrawsSpec = None,
         r: DrawsSpec = None, arm: str = MAIN_ARM, question_ids=None) -> Sweep:  # fmt: skip
    """Proposer pressure n at one critic policy ``m`` and rebuttal policy ``r`` (ints are
    numbers of best-of-n draws, as in :class:`SweepSpec`)."""
    return sweep(pools, SweepSpec(protocol, tuple(n), (m,), (r,), arm), question_ids)


def mesh(pools: PoolSet, protocol: str, n=tuple(range(1, 21)), m=tuple(range(1, 21)),
         r: DrawsSpec = None, arm: str = MAIN_ARM, question_ids=None) -> Sweep:  # fmt: skip
    """The n x m grid at one rebuttal policy ``r`` (ints are numbers of best-of-n draws)."""
    return sweep(pools, SweepSpec(protocol, tuple(n), tuple(m), (r,), arm), question_ids)
