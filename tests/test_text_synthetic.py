"""The synthetic generator and its population truth."""

import numpy as np
import pytest

from debatelab.text.sweeps import SweepSpec, sweep
from debatelab.text.synthetic import SyntheticConfig, population_metrics, synthetic_pools


def test_seeded_and_shaped():
    cfg = SyntheticConfig(n_questions=2, n_proposals=5, n_critiques=4, n_rebuttals=3)
    a, b = synthetic_pools(cfg, 4), synthetic_pools(cfg, np.random.default_rng(4))
    q = a.arm("main")[0]
    assert q.scores["rebuttal"].shape == (5, 4, 3) and q.tokens["critique"].shape == (5, 4)
    assert np.array_equal(q.scores["critique"], b.arm("main")[0].scores["critique"])
    assert a.arms == ("main", "control")
    with pytest.raises(ValueError, match="correct_rate"):
        SyntheticConfig(correct_rate=(0.7, 0.2))


def test_population_truth_matches_large_pools():
    cfg = SyntheticConfig(n_questions=1500, n_proposals=300, protocols=("proposal",),
                          control=False)  # fmt: skip
    est = sweep(synthetic_pools(cfg, 1), SweepSpec("proposal", (1, 5)))
    for i, n in enumerate((1, 5)):
        acc, win = population_metrics(cfg, "proposal", n)
        assert est.mean()[i, 0, 0] == pytest.approx(acc, abs=0.012)
        assert est.mean("win_rate")[i, 0, 0] == pytest.approx(win, abs=0.006)
    cfg = SyntheticConfig(n_questions=300, n_proposals=200, n_critiques=150,
                          protocols=("critique",), control=False)  # fmt: skip
    est = sweep(synthetic_pools(cfg, 2), SweepSpec("critique", (1, 4), (1, 4)))
    for i, n in enumerate((1, 4)):
        for j, m in enumerate((1, 4)):
            acc, win = population_metrics(cfg, "critique", n, m)
            assert est.mean()[i, j, 0] == pytest.approx(acc, abs=0.025)
            assert est.mean("win_rate")[i, j, 0] == pytest.approx(win, abs=0.01)


def test_goodharting_knob():
    hacky = SyntheticConfig(hack=1.5)
    honest = SyntheticConfig(hack=0.0, judge_signal=(2.0, 2.0, 2.0))
    assert (
        population_metrics(hacky, "proposal", 10)[0] < population_metrics(hacky, "proposal", 1)[0]
    )
    assert (
        population_metrics(honest, "proposal", 10)[0] > population_metrics(honest, "proposal", 1)[0]
    )
