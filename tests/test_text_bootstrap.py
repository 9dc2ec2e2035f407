"""Paired hierarchical bootstrap: pairing, levels, resample patterns, reproducibility."""

import numpy as np
import pytest

from debatelab.text.bootstrap import (
    PATTERN_BANK,
    BootstrapConfig,
    _counts,
    _cumulative_counts,
    bootstrap,
    interval,
)
from debatelab.text.sweeps import SweepSpec, sweep
from debatelab.text.synthetic import SyntheticConfig, synthetic_pools

CFG = SyntheticConfig(n_questions=6, n_proposals=8, n_critiques=5, n_rebuttals=3)


def test_estimates_equal_the_sweep_and_replicates_are_reproducible():
    pools = synthetic_pools(CFG, seed=0)
    spec = SweepSpec("rebuttal", (1, 4), (1, 3), (1, 2))
    a = bootstrap(pools, [spec], BootstrapConfig(replicates=20), seed=5)
    b = bootstrap(pools, [spec], BootstrapConfig(replicates=20), seed=5)
    assert np.array_equal(a.replicates[(0, "accuracy")], b.replicates[(0, "accuracy")])
    assert np.allclose(a.estimate[(0, "accuracy")], sweep(pools, spec).mean())
    assert np.allclose(a.estimate[(0, "win_rate")], sweep(pools, spec).mean("win_rate"))
    assert a.replicates[(0, "accuracy")].std(axis=0).min() > 0


def test_contrast_of_a_setting_with_itself_is_exactly_zero_and_pairing_narrows():
    pools = synthetic_pools(CFG, seed=1)
    specs = [SweepSpec("critique", (1, 5), (1, 4)), SweepSpec("critique", (1, 5), (1, 4))]
    res = bootstrap(pools, specs, BootstrapConfig(replicates=200), seed=2)
    assert res.contrast((0, (1, 1, 0)), (1, (1, 1, 0))) == (0.0, 0.0, 0.0)
    # paired critic contrast is much tighter than the marginal intervals would suggest
    est, lo, hi = res.contrast((0, (1, 1, 0)), (0, (1, 0, 0)))
    _, lo_a, hi_a = res.value(0, "accuracy", (1, 1, 0))
    _, lo_b, hi_b = res.value(0, "accuracy", (1, 0, 0))
    assert hi - lo < (hi_a - lo_a) + (hi_b - lo_b)


def test_levels_switch_sources_of_variation_off():
    pools = synthetic_pools(SyntheticConfig(n_questions=1, n_proposals=6, n_critiques=4,
                                            n_rebuttals=2, control=False), seed=3)  # fmt: skip
    spec = SweepSpec("rebuttal", (3,), (2,), (2,))
    only_q = bootstrap(pools, [spec], BootstrapConfig(replicates=30, levels=("questions",)))
    assert np.ptp(only_q.replicates[(0, "accuracy")]) == 0  # one question: nothing varies
    deep = bootstrap(pools, [spec], BootstrapConfig(replicates=30, levels=("rebuttals",)))
    assert np.ptp(deep.replicates[(0, "win_rate")]) > 0
    assert np.ptp(deep.replicates[(0, "accuracy")]) >= 0


def test_resample_patterns_are_multinomial():
    rng = np.random.default_rng(0)
    c = _counts(rng, (2000, 7))
    assert (c.sum(axis=1) == 7).all()
    assert c.mean() == pytest.approx(1.0, abs=0.03)
    assert c.var() == pytest.approx(1 - 1 / 7, rel=0.05)  # multinomial(7, 1/7) variance
    bank, pick = _cumulative_counts(rng, (PATTERN_BANK + 10, 5))  # from a fresh bank
    assert bank.shape == (PATTERN_BANK, 5) and pick.shape == (PATTERN_BANK + 10,)
    big = bank[pick]
    assert (big[:, -1] == 5).all() and (np.diff(big, axis=1) >= 0).all()
    counts = np.diff(big, axis=1, prepend=0)
    assert counts.var() == pytest.approx(1 - 1 / 5, rel=0.05)


def test_interval_methods():
    reps = np.arange(1001.0)
    assert interval(600.0, reps, 0.9, "percentile") == pytest.approx((50.0, 950.0))
    assert interval(600.0, reps, 0.9, "basic") == pytest.approx((250.0, 1150.0))
    with pytest.raises(ValueError, match="unknown bootstrap level"):
        BootstrapConfig(levels=("judges",))
    with pytest.raises(ValueError, match="replicates"):
        BootstrapConfig(replicates=1)


def test_bca_reduces_to_the_percentile_interval_without_bias_or_skew():
    rng = np.random.default_rng(0)
    reps = rng.normal(0.5, 0.1, size=(20001, 1))
    per_question = np.tile([0.4, 0.6], 10)[:, None]  # symmetric: no acceleration
    lo, hi = interval(np.array([0.5]), reps, 0.95, "bca", per_question)
    plo, phi = interval(np.array([0.5]), reps, 0.95, "percentile")
    assert lo == pytest.approx(plo, abs=0.004) and hi == pytest.approx(phi, abs=0.004)
    # replicates mostly above the estimate: the estimate is taken to be biased upwards too, so
    # the interval moves down, as the basic interval does
    shifted = interval(np.array([0.45]), reps, 0.95, "bca", per_question)
    assert shifted[0] < plo - 0.05 and shifted[1] < phi - 0.05
    with pytest.raises(ValueError, match="per-question"):
        interval(np.array([0.5]), reps, 0.95, "bca")
