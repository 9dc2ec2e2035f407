"""Does the paired hierarchical bootstrap's 95 % interval cover the truth?

Simulation with known ground truth: synthetic critique-protocol pools are drawn again and again
from the generator, and each draw's interval is checked against the population value
(``population_metrics``: best-of-n play against infinite pools, averaged over the question
population). Run the full study with ``pytest -m slow tests/test_text_coverage.py -s``.
"""

import numpy as np
import pytest

from debatelab.text.bootstrap import BootstrapConfig, BootstrapResult, bootstrap
from debatelab.text.sweeps import SweepSpec
from debatelab.text.synthetic import SyntheticConfig, population_metrics, synthetic_pools

N_GRID, M_GRID = (1, 4, 10), (1, 4)
METHODS = ("basic", "percentile", "bca")
CONTRASTS = {"Bo10/Bo4 - Bo1/Bo1": ((2, 1, 0), (0, 0, 0)),
             "critic Bo4 - Bo1 at Bo10": ((2, 1, 0), (2, 0, 0))}  # fmt: skip


def coverage(cfg: SyntheticConfig, repetitions: int, replicates: int, seed: int = 123):
    """Fraction of repetitions whose interval covers the truth, per (method, target)."""
    truth = {(n, m): population_metrics(cfg, "critique", n, m) for n in N_GRID for m in M_GRID}
    spec = SweepSpec("critique", N_GRID, M_GRID)
    rng = np.random.default_rng(seed)
    hits: dict[tuple[str, str], list[bool]] = {}
    for _ in range(repetitions):
        pools = synthetic_pools(cfg, rng)
        res = bootstrap(pools, [spec], BootstrapConfig(replicates=replicates), seed=rng)
        for method in METHODS:
            r = BootstrapResult(res.specs, res.question_ids,
                                BootstrapConfig(replicates=replicates, method=method),
                                res.estimate, res.replicates, res.per_question)  # fmt: skip
            for (i, n), (j, m) in [(a, b) for a in enumerate(N_GRID) for b in enumerate(M_GRID)]:
                for k, metric in enumerate(("accuracy", "win_rate")):
                    _, lo, hi = r.value(0, metric, (i, j, 0))
                    hits.setdefault((method, f"{metric} Bo{n}/Bo{m}"), []).append(
                        lo <= truth[(n, m)][k] <= hi)  # fmt: skip
            for name, (a, b) in CONTRASTS.items():
                _, lo, hi = r.contrast((0, a), (0, b))
                ta = truth[(N_GRID[a[0]], M_GRID[a[1]])][0]
                tb = truth[(N_GRID[b[0]], M_GRID[b[1]])][0]
                hits.setdefault((method, f"accuracy {name}"), []).append(lo <= ta - tb <= hi)
    return {key: float(np.mean(v)) for key, v in hits.items()}


def _show(cov):
    for (method, target), value in sorted(cov.items()):
        print(f"{method:10s} {target:32s} {value:.3f}")


def test_coverage_smoke():
    cfg = SyntheticConfig(n_questions=12, n_proposals=20, n_critiques=10,
                          protocols=("critique",), control=False)  # fmt: skip
    cov = coverage(cfg, repetitions=40, replicates=100)
    basic = [v for (method, _), v in cov.items() if method == "basic"]
    assert min(basic) >= 0.8, cov


@pytest.mark.slow
def test_coverage_between_90_and_98_percent():
    """Pools of the 2026 note's size (28 questions, 50 proposals, 50 critiques each); about
    6 minutes on the 2-core machine. With smaller pools (20 x 30 x 20) the critic contrast,
    a small effect with a finite-pool bias near its standard error, covers only about 89 %."""
    cfg = SyntheticConfig(n_questions=28, n_proposals=50, n_critiques=50,
                          protocols=("critique",), control=False)  # fmt: skip
    cov = coverage(cfg, repetitions=200, replicates=200, seed=7)
    _show(cov)
    basic = {t: v for (method, t), v in cov.items() if method == "basic"}
    assert all(0.90 <= v <= 0.98 for v in basic.values()), basic
