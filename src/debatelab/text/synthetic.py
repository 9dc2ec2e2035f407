"""Synthetic pools with a known ground truth, for the demo, tests and simulation studies.

Each question has a correctness rate p drawn uniformly from ``correct_rate``; each proposal is
correct with probability p and carries an *appeal* (judge-fooling noise, wider for wrong
proposals when ``hack`` > 0, which makes proposer-only optimisation over-fit the judge). Judge
logits of the leaves:

- proposal only: ``bias + signal[0] * (c - 1/2) + appeal``
- + critique j: ``bias + signal[1] * (c - 1/2) + damping * appeal + noise_c * eta_j - flaw_j``,
  where a critique of a wrong proposal finds its flaw (``flaw_j = flaw_effect``) with
  probability ``flaw_rate``
- + rebuttal k: the critique's logit with ``signal[2]`` in place of ``signal[1]``, plus
  ``noise_r * xi_k``

``population_metrics`` gives the estimand: the proposer accuracy and win rate of best-of-n play
against infinite pools, averaged over the question population (proposal and critique
protocols), computed by quadrature.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..policies import BestOfN
from .pools import MAIN_ARM, PROTOCOLS, PoolSet, QuestionPool, protocol_name


@dataclass(frozen=True)
class SyntheticConfig:
    """Sizes and judge model of synthetic pools."""

    n_questions: int = 28
    """Number of questions."""
    n_proposals: int = 50
    """Proposals per question (N)."""
    n_critiques: int = 50
    """Critiques per proposal (M)."""
    n_rebuttals: int = 20
    """Rebuttals per critique (R)."""
    correct_rate: tuple[float, float] = (0.1, 0.6)
    """Range of the per-question probability that a proposal is correct (drawn uniformly)."""
    judge_bias: float = 0.0
    """Logit offset of every score: the judge's lean towards 'yes'."""
    judge_signal: tuple[float, float, float] = (0.5, 1.0, 1.5)
    """Logit effect of correctness on the score: proposal only, + critique, + rebuttal."""
    appeal_sd: float = 1.0
    """Judge noise shared by all leaves of a proposal (its appeal), sd in logits."""
    hack: float = 1.0
    """Extra appeal spread of wrong proposals (sd times 1 + hack): Goodharting when > 0."""
    critique_damping: float = 0.5
    """Fraction of the appeal that survives a critique."""
    critique_noise: float = 1.0
    """Judge noise of each critique, sd in logits."""
    flaw_rate: float = 0.3
    """Probability that a critique of a wrong proposal finds its flaw."""
    flaw_effect: float = 2.0
    """Logit drop of a critique that finds a flaw."""
    rebuttal_noise: float = 0.5
    """Judge noise of each rebuttal, sd in logits."""
    protocols: tuple[str, ...] = PROTOCOLS
    """Protocols to generate scores for."""
    control: bool = True
    """Also generate a token-matched control arm: a second proposer pool, proposal-only."""
    control_uplift: float = 0.05
    """How much more often control proposals (more thinking tokens) are correct."""
    tokens: tuple[float, float, float] = (600.0, 300.0, 200.0)
    """Mean tokens of a proposal, a critique and a rebuttal (the control arm's proposals get
    their sum, matching the longest transcript)."""

    def __post_init__(self):
        for name in ("n_questions", "n_proposals", "n_critiques", "n_rebuttals"):
            if int(getattr(self, name)) != getattr(self, name) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        lo, hi = self.correct_rate
        if not 0 <= lo <= hi <= 1:
            raise ValueError(f"correct_rate must satisfy 0 <= low <= high <= 1, got {(lo, hi)}")
        if not 0 <= self.flaw_rate <= 1:
            raise ValueError(f"flaw_rate must lie in [0, 1], got {self.flaw_rate}")
        for name in ("appeal_sd", "critique_noise", "rebuttal_noise", "hack"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")
        object.__setattr__(self, "protocols", tuple(protocol_name(p) for p in self.protocols))


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def synthetic_pools(config: SyntheticConfig | None = None,
                    seed: int | np.random.Generator = 0) -> PoolSet:  # fmt: skip
    """Draw pools for ``config`` (default settings: 28 questions of 50 x 50 x 20)."""
    cfg = config or SyntheticConfig()
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    questions = []
    for qi in range(cfg.n_questions):
        p = rng.uniform(*cfg.correct_rate)
        qid = f"q{qi:03d}"
        questions.append(_question(cfg, rng, qid, p, MAIN_ARM, cfg.protocols, cfg.tokens[0]))
        if cfg.control:
            pc = min(1.0, p + cfg.control_uplift)
            questions.append(_question(cfg, rng, qid, pc, "control", ("proposal",),
                                       sum(cfg.tokens)))  # fmt: skip
    return PoolSet(tuple(questions))


def _question(cfg, rng, qid, p, arm, protocols, proposal_tokens) -> QuestionPool:
    n, m, r = cfg.n_proposals, cfg.n_critiques, cfg.n_rebuttals
    c = (rng.random(n) < p).astype(float)
    appeal = rng.normal(size=n) * cfg.appeal_sd * (1 + cfg.hack * (1 - c))
    sig = cfg.judge_signal
    tok_p = rng.gamma(16.0, proposal_tokens / 16.0, size=n)
    scores, tokens = {}, {}
    if "proposal" in protocols:
        scores["proposal"] = _sigmoid(cfg.judge_bias + sig[0] * (c - 0.5) + appeal)
        tokens["proposal"] = tok_p
    if "critique" in protocols or "rebuttal" in protocols:
        base = cfg.judge_bias + cfg.critique_damping * appeal[:, None]
        flaw = (rng.random((n, m)) < cfg.flaw_rate) * (1 - c)[:, None] * cfg.flaw_effect
        crit = base + cfg.critique_noise * rng.normal(size=(n, m)) - flaw
        tok_c = tok_p[:, None] + rng.gamma(16.0, cfg.tokens[1] / 16.0, size=(n, m))
        if "critique" in protocols:
            scores["critique"] = _sigmoid(crit + sig[1] * (c - 0.5)[:, None])
            tokens["critique"] = tok_c
        if "rebuttal" in protocols:
            logit = (crit + sig[2] * (c - 0.5)[:, None])[..., None]
            scores["rebuttal"] = _sigmoid(logit + cfg.rebuttal_noise * rng.normal(size=(n, m, r)))
            tokens["rebuttal"] = tok_c[..., None] + rng.gamma(16.0, cfg.tokens[2] / 16.0,
                                                              size=(n, m, r))  # fmt: skip
    return QuestionPool(question_id=qid, arm=arm, correct=c, scores=scores,
                        proposal_ids=tuple(f"p{i:03d}" for i in range(n)), tokens=tokens)  # fmt: skip


def _normal_atoms(points: int, width: float = 8.0):
    z = np.linspace(-width, width, points)
    w = np.exp(-0.5 * z**2)
    return z, w / w.sum()


def _critic_values(cfg: SyntheticConfig, b: np.ndarray, c: float, m: int) -> np.ndarray:
    """Expected score of a proposal with critique base logit ``b`` against the minimum of m
    critiques from its infinite critique pool (m = 1: the mean)."""
    z, w = _normal_atoms(801)
    q = cfg.flaw_rate * (1 - c)
    offsets = np.concatenate([cfg.critique_noise * z, cfg.critique_noise * z - cfg.flaw_effect])
    mass = np.concatenate([(1 - q) * w, q * w])
    order = np.argsort(offsets, kind="stable")
    offsets, mass = offsets[order], mass[order]
    survive = np.concatenate([np.cumsum(mass[::-1])[::-1], [0.0]])  # P(X >= atom j), then 0
    survive = np.clip(survive, 0.0, 1.0)
    pick = survive[:-1] ** m - survive[1:] ** m  # P(min of m is atom j)
    return _sigmoid(b[:, None] + offsets[None, :]) @ pick


def population_metrics(config: SyntheticConfig, protocol: str, n: int | BestOfN,
                       m: int | BestOfN = 1, arm: str = MAIN_ARM) -> tuple[float, float]:  # fmt: skip
    """True (accuracy, win rate) of best-of-n proposer play (and best-of-m critic play) against
    infinite pools, averaged over the question population. Proposal and critique protocols.
    ``n`` and ``m`` are numbers of draws (or ``BestOfN`` policies): the estimand of a sweep at
    ``BestOfN(n)``, ``BestOfN(m)``."""
    cfg = config
    n = n.draws if isinstance(n, BestOfN) else int(n)
    m = m.draws if isinstance(m, BestOfN) else int(m)
    proto = protocol_name(protocol)
    if proto == "rebuttal":
        raise NotImplementedError("population_metrics covers the proposal and critique protocols")
    z, w = _normal_atoms(4001)
    values, weights = [], []
    for c in (0.0, 1.0):
        appeal = z * cfg.appeal_sd * (1 + cfg.hack * (1 - c))
        if proto == "proposal":
            v = _sigmoid(cfg.judge_bias + cfg.judge_signal[0] * (c - 0.5) + appeal)
        else:
            b = cfg.judge_bias + cfg.judge_signal[1] * (c - 0.5) + cfg.critique_damping * appeal
            v = _critic_values(cfg, b, c, m)
        values.append(v)
        weights.append(w)
    v = np.concatenate(values)
    is_correct = np.concatenate([np.zeros(z.size), np.ones(z.size)])
    order = np.argsort(v, kind="stable")
    v, is_correct = v[order], is_correct[order]
    w0, w1 = (np.concatenate([weights[0], np.zeros(z.size)])[order],
              np.concatenate([np.zeros(z.size), weights[1]])[order])  # fmt: skip
    lo, hi = cfg.correct_rate
    uplift = cfg.control_uplift if arm != MAIN_ARM else 0.0
    nodes, gl_weights = np.polynomial.legendre.leggauss(24)
    acc = win = 0.0
    for x, gw in zip(nodes, gl_weights, strict=True):
        p = min(1.0, (lo + hi) / 2 + (hi - lo) / 2 * x + uplift)
        mass = p * w1 + (1 - p) * w0
        cdf = np.cumsum(mass)
        pick = cdf**n - np.concatenate([[0.0], cdf[:-1]]) ** n
        acc += gw / 2 * (pick * is_correct).sum()
        win += gw / 2 * (pick * v).sum()
    return float(acc), float(win)
