"""Pools of sampled debate transcripts and their judge scores: the data of the best-of-N proxy.

One question's pool for one proposer *arm* (``"main"``, or a second proposer pool such as the
token-matched ``"control"``) holds N proposals with ground-truth correctness and, per protocol,
the judge's score of every leaf:

| protocol    | leaf                               | score shape |
|-------------|------------------------------------|-------------|
| ``proposal``| proposal alone                     | (N,)        |
| ``critique``| proposal + critique                | (N, M)      |
| ``rebuttal``| proposal + critique + rebuttal     | (N, M, R)   |
| ``critique2``| ... + a second critique           | (N, M, R, M)|
| ``rebuttal2``| ... + a second rebuttal           | (N, M, R, M, R) |

and so on to any depth (the study's proposal, critique, rebuttal, critique, ... alternation:
``critiqueK`` and ``rebuttalK`` are the K-th round's; every critique level has the critic's M
children, every rebuttal level R).

A score is the judge's P(yes) / (P(yes) + P(no)) that the proposal is correct, in [0, 1].
Correctness is per proposal, in [0, 1] (1 correct, 0 wrong; a fraction such as a test pass rate
is allowed). Pools are rectangular within a question: every proposal has the same number of
critiques and every critique the same number of rebuttals. Questions may differ in size.
Token counts, where given, are the transcript length the judge saw at that leaf.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np

from ..errors import DebatelabError
from ..games.core import pool_level_name
from ..protocols import builtin_protocols, level_sizes  # noqa: F401 (the pools' shape, here too)

#: The text protocols declared in :mod:`debatelab.protocols` (a move is one message), in
#: declaration order: proposal, critique, rebuttal (the pools' levels).
PROTOCOLS = tuple(p.name for p in builtin_protocols("text"))
#: Every name a text protocol answers to (its name and its declared aliases).
_ALIASES = {alias: p.name for p in builtin_protocols("text") for alias in (p.name, *p.aliases)}
_DEPTH = {p.name: len(p.turns) for p in builtin_protocols("text")}
MAIN_ARM = "main"


class PoolError(DebatelabError, ValueError):
    """A pool file or array breaks the schema; the message names the question and the fix."""


_DEEPER = re.compile(r"(critique|rebuttal)([1-9][0-9]*)")


def protocol_at_depth(depth: int) -> str:
    """The text protocol of ``depth`` turns: proposal, critique, rebuttal, then critique2,
    rebuttal2, critique3, ... (the name of its deepest level, singular)."""
    if int(depth) < 1:
        raise ValueError(f"a text protocol has at least one turn, got depth {depth}")
    if depth <= len(PROTOCOLS):
        return PROTOCOLS[depth - 1]
    return re.sub(r"s([0-9]*)$", r"\1", pool_level_name(depth - 1))


def protocol_name(name: str) -> str:
    """Canonical protocol name: 'proposal', 'critique', 'rebuttal', or a later round's
    'critique2', 'rebuttal2', 'critique3', ... (aliases such as 'proposal-only', '+critique',
    '+critique+rebuttal' are accepted; 'critique1' is 'critique')."""
    key = str(name).strip().lower()
    if key in _ALIASES:
        return _ALIASES[key]
    deeper = _DEEPER.fullmatch(key)
    if deeper is None:
        raise PoolError(f"unknown protocol {name!r}; use one of {', '.join(PROTOCOLS)} or a "
                        "later round's critique2, rebuttal2, critique3, ...")  # fmt: skip
    kind, round_ = deeper.group(1), int(deeper.group(2))
    return protocol_at_depth(2 * round_ + (kind == "rebuttal"))


def protocol_depth(protocol: str) -> int:
    """The protocol's number of turns: 1 for proposal only, 2 with a critique, 3 with a
    rebuttal, 4 with a second critique (critique2), and so on."""
    name = protocol_name(protocol)
    if name in _DEPTH:
        return _DEPTH[name]
    kind, round_ = _DEEPER.fullmatch(name).groups()
    return 2 * int(round_) + (kind == "rebuttal")


@dataclass(frozen=True, eq=False)
class QuestionPool:
    """One question's pools for one proposer arm."""

    question_id: str
    """Identifier of the question, unique within an arm."""
    correct: np.ndarray
    """(N,) ground-truth correctness of each proposal, in [0, 1]."""
    scores: dict[str, np.ndarray]
    """Protocol name -> judge scores of shape (N,), (N, M), (N, M, R), (N, M, R, M), ...
    (one axis per turn), in [0, 1]."""
    arm: str = MAIN_ARM
    """Which proposer pool this is: 'main', or e.g. 'control' for a token-matched control."""
    proposal_ids: tuple[str, ...] | None = None
    """Identifiers of the N proposals (default '0'..'N-1'), unique within the question."""
    tokens: dict[str, np.ndarray] = field(default_factory=dict)
    """Protocol name -> transcript tokens of each leaf, same shape as its scores (optional)."""

    def __post_init__(self):
        where = f"question {self.question_id!r} (arm {self.arm!r})"
        correct = _float_array(self.correct, "correctness", where)
        if correct.ndim != 1 or correct.size == 0:
            raise PoolError(f"{where}: correctness must be a non-empty 1-D array, "
                            f"got shape {correct.shape}")  # fmt: skip
        if np.isnan(correct).any():
            raise PoolError(f"{where}: correctness is missing (NaN) for proposal(s) "
                            f"{_first(np.flatnonzero(np.isnan(correct)))}")  # fmt: skip
        if ((correct < 0) | (correct > 1)).any():
            raise PoolError(f"{where}: correctness must lie in [0, 1]")
        n = correct.size
        ids = tuple(str(i) for i in range(n)) if self.proposal_ids is None else self.proposal_ids
        ids = tuple(str(i) for i in ids)
        if len(ids) != n:
            raise PoolError(f"{where}: {len(ids)} proposal ids for {n} proposals")
        if len(set(ids)) != n:
            raise PoolError(f"{where}: duplicate proposal ids {_dups(ids)}")
        if not self.scores:
            raise PoolError(f"{where}: no judge scores for any protocol")
        scores = {}
        for name, arr in self.scores.items():
            proto = protocol_name(name)
            scores[proto] = _check_scores(_float_array(arr, proto, where), proto, n, where)
        tokens = {}
        for name, arr in self.tokens.items():
            proto = protocol_name(name)
            arr = np.asarray(arr, dtype=np.float64)
            if proto not in scores or arr.shape != scores[proto].shape:
                raise PoolError(f"{where}: tokens for {proto!r} do not match its scores' shape")
            tokens[proto] = arr
        object.__setattr__(self, "correct", correct)
        object.__setattr__(self, "proposal_ids", ids)
        object.__setattr__(self, "scores", scores)
        object.__setattr__(self, "tokens", tokens)

    @property
    def n_proposals(self) -> int:
        return self.correct.size

    def shape(self, protocol: str) -> tuple[int, ...]:
        return self.scores[protocol_name(protocol)].shape


def _float_array(arr, proto: str, where: str) -> np.ndarray:
    try:
        return np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError):
        raise PoolError(
            f"{where}: {proto!r} scores are not a rectangular array of numbers; "
            "ragged pools are not supported"
        ) from None


def _check_scores(arr: np.ndarray, proto: str, n: int, where: str) -> np.ndarray:
    depth = protocol_depth(proto)
    if arr.dtype == object or arr.ndim != depth:
        axes = ", ".join("N" if d == 0 else "M" if d % 2 else "R" for d in range(depth))
        raise PoolError(f"{where}: {proto!r} scores must have {depth} dimension(s) ({axes}), "
                        f"got shape {arr.shape}; ragged pools are not supported")  # fmt: skip
    if arr.shape[0] != n:
        raise PoolError(f"{where}: {proto!r} scores cover {arr.shape[0]} proposals, "
                        f"correctness covers {n}")  # fmt: skip
    if 0 in arr.shape:
        raise PoolError(f"{where}: {proto!r} pool is empty (shape {arr.shape})")
    if np.isnan(arr).any():
        raise PoolError(
            f"{where}: {proto!r} has NaN scores at {_first(np.argwhere(np.isnan(arr)))}"
        )
    bad = (arr < 0) | (arr > 1)
    if bad.any():
        at = np.argwhere(bad)[0]
        raise PoolError(f"{where}: {proto!r} score {arr[tuple(at)]!r} at {tuple(at)} is outside "
                        f"[0, 1]; scores are P(yes) / (P(yes) + P(no))")  # fmt: skip
    return arr


def _first(idx) -> str:
    idx = np.asarray(idx)
    items = [str(tuple(int(x) for x in np.atleast_1d(i))) if idx.ndim > 1 else str(int(i))
             for i in idx[:3]]  # fmt: skip
    return ", ".join(items) + (" ..." if len(idx) > 3 else "")


def _dups(ids: Iterable[str]) -> str:
    seen, dups = set(), []
    for i in ids:
        if i in seen and i not in dups:
            dups.append(i)
        seen.add(i)
    return ", ".join(repr(d) for d in dups[:3]) + (" ..." if len(dups) > 3 else "")


@dataclass(frozen=True, eq=False)
class PoolSet:
    """All questions' pools, for one or more proposer arms."""

    questions: tuple[QuestionPool, ...]
    """The pools; (arm, question_id) pairs are unique."""

    def __post_init__(self):
        qs = tuple(self.questions)
        if not qs:
            raise PoolError("no questions in the pools")
        keys = [(q.arm, q.question_id) for q in qs]
        if len(set(keys)) != len(keys):
            raise PoolError(f"duplicate question ids: {_dups(f'{a}/{q}' for a, q in keys)}")
        object.__setattr__(self, "questions", qs)

    def __iter__(self) -> Iterator[QuestionPool]:
        return iter(self.questions)

    def __len__(self) -> int:
        return len(self.questions)

    @property
    def arms(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(q.arm for q in self.questions))

    def protocols(self, arm: str = MAIN_ARM) -> tuple[str, ...]:
        """Protocols that every question of ``arm`` has, in order of depth."""
        qs = self.arm(arm)
        names = sorted({p for q in qs for p in q.scores}, key=protocol_depth)
        return tuple(p for p in names if all(p in q.scores for q in qs))

    def arm(self, arm: str) -> tuple[QuestionPool, ...]:
        qs = tuple(q for q in self.questions if q.arm == arm)
        if not qs:
            raise PoolError(f"no questions for arm {arm!r}; arms present: {list(self.arms)}")
        return qs

    def question_ids(self, arm: str = MAIN_ARM) -> tuple[str, ...]:
        return tuple(q.question_id for q in self.arm(arm))

    def select(self, question_ids: Iterable[str]) -> PoolSet:
        """The pools of these questions (in every arm), in the given order."""
        wanted = list(dict.fromkeys(question_ids))
        pick = [q for qid in wanted for q in self.questions if q.question_id == qid]
        return PoolSet(tuple(pick))

    def common_questions(self, pairs: Iterable[tuple[str, str]]) -> tuple[str, ...]:
        """Question ids that have every (arm, protocol) pair, in the main arm's order."""
        pairs = [(a, protocol_name(p)) for a, p in pairs]
        have = {(q.arm, q.question_id): q for q in self.questions}
        order = list(dict.fromkeys(q.question_id for q in self.questions))
        return tuple(qid for qid in order
                     if all((a, qid) in have and p in have[(a, qid)].scores for a, p in pairs))  # fmt: skip

    def stacked(self, arm: str, protocol: str, question_ids: Iterable[str] | None = None):
        """Questions of equal pool shape stacked into arrays.

        Returns a list of ``(positions, scores, correct)`` with ``positions`` the questions'
        indices in ``question_ids`` (default: all of the arm), ``scores`` ``(G, N[, M[, R ...]])`` and
        ``correct`` ``(G, N)``.
        """
        proto = protocol_name(protocol)
        by_id = {q.question_id: q for q in self.arm(arm)}
        ids = list(by_id) if question_ids is None else list(question_ids)
        groups: dict[tuple[int, ...], list[int]] = {}
        for pos, qid in enumerate(ids):
            q = by_id.get(qid)
            if q is None or proto not in q.scores:
                raise PoolError(f"question {qid!r} of arm {arm!r} has no {proto!r} pool")
            groups.setdefault(q.scores[proto].shape, []).append(pos)
        out = []
        for positions in groups.values():
            qs = [by_id[ids[i]] for i in positions]
            out.append((np.array(positions), np.stack([q.scores[proto] for q in qs]),
                        np.stack([q.correct for q in qs])))  # fmt: skip
        return out

    def mean_tokens(self, arm: str, protocol: str) -> float | None:
        """Mean transcript tokens per leaf under uniform play, if every question has tokens."""
        proto = protocol_name(protocol)
        qs = self.arm(arm)
        if not all(proto in q.tokens for q in qs):
            return None
        return float(np.mean([q.tokens[proto].mean() for q in qs]))


def judge_auc(pools: PoolSet, arm: str, protocol: str, question_ids=None) -> float | None:
    """How well the judge's scores tell right from wrong: the AUC of every leaf's score of
    ``protocol`` (proposals right, with correctness 1, against wrong, 0; partial correctness
    left out), pooled over the questions (default: all of the arm). 0.5 is chance, 1 a judge
    that always scores a right proposal above a wrong one; ties count half. None without both."""
    proto = protocol_name(protocol)
    wanted = None if question_ids is None else set(question_ids)
    pos, neg = [], []
    for q in pools.arm(arm):
        if (wanted is not None and q.question_id not in wanted) or proto not in q.scores:
            continue
        leaves = q.scores[proto].reshape(q.n_proposals, -1)
        pos.append(leaves[q.correct == 1.0].ravel())
        neg.append(leaves[q.correct == 0.0].ravel())
    pos = np.concatenate(pos) if pos else np.empty(0)
    neg = np.concatenate(neg) if neg else np.empty(0)
    if pos.size == 0 or neg.size == 0:
        return None
    # Mann-Whitney: the mean rank of the right leaves among all, ties at their average rank
    values, inverse, counts = np.unique(np.concatenate([pos, neg]), return_inverse=True,
                                        return_counts=True)  # fmt: skip
    average_rank = np.cumsum(counts) - (counts - 1) / 2
    rank_sum = average_rank[inverse[: pos.size]].sum()
    return float((rank_sum - pos.size * (pos.size + 1) / 2) / (pos.size * neg.size))
