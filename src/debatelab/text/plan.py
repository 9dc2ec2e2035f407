"""Plan before paying: the pool sizes and number of questions that a stated interval width on a
stated contrast needs, estimated from a pilot pool with the project's own bootstrap.

The contrast's sampling variance at the pilot's sizes is measured by a paired bootstrap of the
pilot that resamples questions alone (:mod:`debatelab.text.bootstrap`): each question's estimate
carries its own within-question noise, so this is the whole variance. It is then apportioned to
a between-question part and one part per level inside a question (proposals, critiques,
rebuttals) in proportion to the variance that resampling that level alone gives (those
bootstraps overstate their level when pools are small, so they only set the shares). For ``Q``
questions of ``N x M x R`` pools the variance is taken as::

    Var = (Q0 / Q) * (B + V_N N0 / N + V_M N0 M0 / (N M) + V_R N0 M0 R0 / (N M R))

(each within part shrinks with the number of its items in a question, everything with the
number of questions; in deeper debates a later round's critiques and rebuttals are resampled
with their kind and counted at the first round's size, which overstates their part: a
conservative plan), and the
interval's width as ``2 z Var ** 0.5``. This is an approximation: best-of-n estimators are not
means, so tests/test_text_plan.py checks the sizes it proposes by simulation, on synthetic pools
whose truth is known.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from .bootstrap import BootstrapConfig, bootstrap
from .pools import MAIN_ARM, PoolSet, protocol_depth, protocol_name
from .sweeps import SweepSpec

_SETTING = re.compile(r"^\s*(?:(?P<arm>[A-Za-z_][\w-]*)/)?(?P<protocol>[a-z_]+)"
                      r"(?:@(?P<draws>[nmr]\d+(?:,[nmr]\d+)*))?\s*$")  # fmt: skip


@dataclass(frozen=True)
class Setting:
    """One point of a sweep: arm, protocol and best-of draws of each player (1: unoptimised)."""

    protocol: str
    n: int = 1
    m: int = 1
    r: int = 1
    arm: str = MAIN_ARM

    def spec(self) -> SweepSpec:
        return SweepSpec(self.protocol, n=(self.n,), m=(self.m,), r=(self.r,), arm=self.arm)

    def __str__(self) -> str:
        depth = protocol_depth(self.protocol)
        draws = [f"n{self.n}"] + ([f"m{self.m}"] if depth >= 2 else []) + \
            ([f"r{self.r}"] if depth >= 3 else [])  # fmt: skip
        arm = "" if self.arm == MAIN_ARM else f"{self.arm}/"
        return f"{arm}{self.protocol}@{','.join(draws)}"


def parse_setting(text: str) -> Setting:
    """``[ARM/]PROTOCOL[@nN,mM,rR]``, e.g. ``critique@n10,m1`` or ``control/proposal@n10``."""
    found = _SETTING.match(text)
    if not found:
        raise ValueError(f"{text!r} is not a setting: write [ARM/]PROTOCOL[@nN,mM,rR], e.g. "
                         "critique@n10,m3")  # fmt: skip
    protocol = protocol_name(found["protocol"])
    draws = {"n": 1, "m": 1, "r": 1}
    for part in (found["draws"] or "").split(","):
        if part:
            draws[part[0]] = int(part[1:])
    if min(draws.values()) < 1:
        raise ValueError(f"{text!r}: draws are at least 1")
    return Setting(protocol, draws["n"], draws["m"], draws["r"], found["arm"] or MAIN_ARM)


def parse_contrast(text: str) -> tuple[Setting, Setting]:
    """``SETTING - SETTING`` (the first minus the second), e.g. ``critique@n10 - proposal@n10``
    (a critic's effect on a Bo10 proposer)."""
    parts = [p for p in re.split(r"\s+-\s+", text.strip()) if p]
    if len(parts) != 2:
        raise ValueError(f"--contrast {text!r}: write SETTING - SETTING (spaces around the "
                         "minus), e.g. 'critique@n10 - proposal@n10'")  # fmt: skip
    return parse_setting(parts[0]), parse_setting(parts[1])


@dataclass(frozen=True)
class Components:
    """The contrast's bootstrap variance components at the pilot's sizes."""

    estimate: float
    questions: int
    sizes: tuple[int, int, int]
    """The pilot's N, M, R (smallest over its questions)."""
    between: float
    """Between-question part of the variance at the pilot's Q."""
    within: tuple[float, float, float]
    """The parts of proposals, critiques and rebuttals at the pilot's sizes."""
    total: float
    """Variance with every level resampled at once (reported, not used: it double counts the
    within noise)."""

    def variance(self, q: int, n: int, m: int, r: int) -> float:
        n0, m0, r0 = self.sizes
        vn, vm, vr = self.within
        # nested: a question's estimate averages over its N proposals, their N x M critiques,
        # their N x M x R rebuttals
        part = self.between + vn * n0 / n + vm * n0 * m0 / (n * m) + \
            vr * n0 * m0 * r0 / (n * m * r)  # fmt: skip
        return self.questions / q * part

    def width(self, q: int, n: int, m: int, r: int, confidence: float = 0.95) -> float:
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        return 2 * z * math.sqrt(self.variance(q, n, m, r))

    def questions_for(self, width: float, n: int, m: int, r: int,
                      confidence: float = 0.95) -> int:  # fmt: skip
        """The fewest questions whose interval is at most ``width`` wide at these sizes."""
        z = NormalDist().inv_cdf(0.5 + confidence / 2)
        per_question = self.variance(self.questions, n, m, r) * self.questions
        return max(2, math.ceil(per_question * (2 * z / width) ** 2))


def components(pools: PoolSet, a: Setting, b: Setting, replicates: int = 400,
               seed: int = 0) -> Components:  # fmt: skip
    """The variance components of ``a - b`` in ``pools`` (see the module's docstring)."""
    specs = [a.spec(), b.spec()]
    ids = pools.common_questions((s.arm, s.protocol) for s in specs)
    if len(ids) < 2:
        raise ValueError("the pilot needs at least 2 questions with both settings' arm and "
                         "protocol")  # fmt: skip
    variances = {}
    estimate = 0.0
    for name, levels in (("questions", ("questions",)), ("proposals", ("proposals",)),
                         ("critiques", ("critiques",)), ("rebuttals", ("rebuttals",)),
                         ("all", ("questions", "proposals", "critiques", "rebuttals"))):  # fmt: skip
        res = bootstrap(pools, specs, BootstrapConfig(replicates=replicates, levels=levels),
                        seed=seed, question_ids=ids)  # fmt: skip
        diff = (
            res.replicates[(0, "accuracy")][:, 0, 0, 0]
            - res.replicates[(1, "accuracy")][:, 0, 0, 0]
        )
        variances[name] = float(np.var(diff, ddof=1))
        estimate = float(
            res.estimate[(0, "accuracy")][0, 0, 0] - res.estimate[(1, "accuracy")][0, 0, 0]
        )
    sizes = [min(p.n_proposals for p in pools.arm(MAIN_ARM) if p.question_id in ids)]
    for level in ("critique", "rebuttal"):
        shapes = [p.shape(level) for p in pools.arm(MAIN_ARM)
                  if p.question_id in ids and level in p.scores]  # fmt: skip
        sizes.append(min(s[-1] for s in shapes) if shapes else 1)
    within = np.array([variances["proposals"], variances["critiques"], variances["rebuttals"]])
    # resampling questions alone gives the whole variance at the pilot's sizes (the within
    # noise is part of each question's estimate); resampling a small pool's items overstates
    # that level's share (a resample holds fewer distinct items, and best-of-n feels it), so
    # the within parts only apportion the total, keeping at least 5 % for the questions
    total_q = variances["questions"]
    if within.sum() > 0.95 * total_q:
        within = within * (0.95 * total_q / within.sum())
    between = total_q - float(within.sum())
    return Components(estimate, len(ids), tuple(sizes), between, tuple(float(w) for w in within),
                      variances["all"])  # fmt: skip
