"""Exact best-of-n weights and the nested solve against Monte Carlo and brute force."""

import itertools

import numpy as np
import pytest

import debatelab
from debatelab.policies import BestOfN, Exact, TopK
from debatelab.text.solve import best_of_n_weights, nested_best_of_n, presort, sweep_arrays


def _mc_best_of_n(scores, n, draws, rng, maximize=True):
    """Frequencies of the item best-of-n picks: n uniform draws with replacement, keep the best;
    a tied best value is shared uniformly by all pool items holding it."""
    scores = np.asarray(scores)
    idx = rng.integers(0, scores.size, size=(draws, n))
    vals = scores[idx]
    best = vals.max(axis=1) if maximize else vals.min(axis=1)
    freq = np.zeros(scores.size)
    for v, count in zip(*np.unique(best, return_counts=True), strict=True):
        members = np.flatnonzero(scores == v)
        freq[members] += count / members.size
    return freq / draws


@pytest.mark.parametrize("maximize", [True, False])
def test_best_of_n_weights_match_monte_carlo_within_3_se(maximize):
    rng = np.random.default_rng(7)
    scores = np.array([0.1, 0.7, 0.3, 0.7, 0.95, 0.5, 0.2, 0.5, 0.5, 0.8])  # with tie blocks
    draws = 200_000
    for n in (1, 3, 10):
        w = best_of_n_weights(scores, n, maximize)
        freq = _mc_best_of_n(scores, n, draws, rng, maximize)
        se = np.sqrt(np.maximum(w * (1 - w), 1e-12) / draws)
        z = np.abs(freq - w) / se
        assert z.max() < 3, (n, z.round(2))
        assert w.sum() == pytest.approx(1.0)
    assert np.allclose(w[[1, 3]], w[1]) and np.allclose(w[[5, 7, 8]], w[5])  # ties share


def test_best_of_n_weights_matches_published_formula_without_ties():
    scores = np.random.default_rng(0).random(12)
    n = 4
    rank = np.argsort(np.argsort(scores)) + 1  # ascending rank, 1 = worst
    expected = (rank / 12) ** n - ((rank - 1) / 12) ** n  # REFERENCE C
    assert np.allclose(best_of_n_weights(scores, n), expected)
    low = np.argsort(np.argsort(-scores)) + 1  # critic: reversed ranking
    assert np.allclose(best_of_n_weights(scores, n, maximize=False),
                       (low / 12) ** n - ((low - 1) / 12) ** n)  # fmt: skip


def _bon_value_brute(values, b, maximize):
    """Expected best of b draws with replacement, by enumerating all draw sequences."""
    pick = max if maximize else min
    return np.mean([pick(seq) for seq in itertools.product(values, repeat=b)])


def _brute_nested(scores, correct, n, m, r):
    scores = np.asarray(scores)
    if scores.ndim == 3:
        crit = np.array([[_bon_value_brute(row, r, True) for row in p] for p in scores])
    else:
        crit = scores
    if crit.ndim == 2:
        vals = np.array([_bon_value_brute(row, m, False) for row in crit])
    else:
        vals = crit
    acc = win = 0.0
    seqs = list(itertools.product(range(len(vals)), repeat=n))
    for seq in seqs:
        best = max(seq, key=lambda i: vals[i])
        acc += correct[best]
        win += vals[best]
    return acc / len(seqs), win / len(seqs)


@pytest.mark.parametrize("shape,n,m,r", [((5,), 3, None, None), ((4, 3), 3, 2, None),
                                         ((3, 3, 2), 2, 3, 2), ((4, 2, 3), 3, 1, 3)])  # fmt: skip
def test_nested_equals_brute_force_enumeration(shape, n, m, r):
    rng = np.random.default_rng(sum(shape) + n)
    for _ in range(3):
        scores = rng.random(shape)  # continuous: no ties
        correct = rng.integers(0, 2, shape[0]).astype(float)
        res = nested_best_of_n(scores, correct, BestOfN(n), m and BestOfN(m), r and BestOfN(r))
        acc, win = _brute_nested(scores, correct, n, m or 1, r or 1)
        assert res.accuracy == pytest.approx(acc, abs=1e-12)
        assert res.win_rate == pytest.approx(win, abs=1e-12)
        assert res.weights.sum() == pytest.approx(1.0)


def test_quantiliser_and_exact_plug_in_like_best_of_n():
    rng = np.random.default_rng(3)
    scores = rng.random((6, 5))
    correct = rng.integers(0, 2, 6).astype(float)
    res = nested_best_of_n(scores, correct, TopK(2), m=Exact())
    vals = scores.min(axis=1)  # exact critic
    top2 = np.argsort(-vals)[:2]
    assert res.accuracy == pytest.approx(correct[top2].mean())
    assert res.win_rate == pytest.approx(vals[top2].mean())
    res = nested_best_of_n(scores, correct, "exact", m="top3")
    vals = np.sort(scores, axis=1)[:, :3].mean(axis=1)
    assert res.accuracy == correct[np.argmax(vals)]


def test_n1_is_pool_mean_and_large_n_is_the_maximum():
    rng = np.random.default_rng(5)
    scores = rng.random((8, 6, 4))
    correct = rng.integers(0, 2, 8).astype(float)
    one = nested_best_of_n(scores, correct, BestOfN(1), BestOfN(1), BestOfN(1))
    assert one.accuracy == pytest.approx(correct.mean())
    assert one.win_rate == pytest.approx(scores.mean())
    big = nested_best_of_n(scores, correct, *[BestOfN(100_000)] * 3)
    vals = scores.max(axis=2).min(axis=1)  # rebuttal max, critic min
    assert big.win_rate == pytest.approx(vals.max(), abs=1e-9)
    assert big.accuracy == pytest.approx(correct[np.argmax(vals)], abs=1e-9)
    exact = nested_best_of_n(scores, correct, "exact", "exact", "exact")
    assert exact.win_rate == pytest.approx(vals.max())


def test_ties_share_mass_so_order_does_not_matter():
    scores = np.array([0.5, 0.9, 0.5, 0.9])
    correct = np.array([1.0, 0.0, 0.0, 1.0])
    res = nested_best_of_n(scores, correct, BestOfN(5))
    assert res.weights[1] == pytest.approx(res.weights[3])
    assert res.accuracy == pytest.approx(0.5)  # the tied best pair is half correct
    perm = [3, 2, 1, 0]
    assert nested_best_of_n(scores[perm], correct[perm], BestOfN(5)).accuracy == pytest.approx(0.5)


def test_counts_equal_a_materialised_resample():
    rng = np.random.default_rng(11)
    g, n_, m_, r_ = 3, 6, 5, 4
    scores = np.round(rng.random((g, n_, m_, r_)), 1)  # rounding makes ties at every level
    correct = rng.integers(0, 2, (g, n_)).astype(float)
    cp = rng.multinomial(n_, [1 / n_] * n_, size=g)
    cc = rng.multinomial(m_, [1 / m_] * m_, size=(g, n_))
    cr = rng.multinomial(r_, [1 / r_] * r_, size=(g, n_, m_))
    grid = dict(
        n=[BestOfN(1), BestOfN(3), TopK(2)],
        m=[BestOfN(1), BestOfN(4), "exact"],
        r=[BestOfN(2), BestOfN(5)],
    )
    sorted_scores = presort(scores)
    acc, win, _ = sweep_arrays(sorted_scores, correct, **grid, presorted=True,
                               counts={"proposals": cp, "critiques": cc, "rebuttals": cr})  # fmt: skip
    acc2, win2, _ = sweep_arrays(sorted_scores, correct, **grid, presorted=True,
                                 counts={"proposals": cp, "critiques": cc,
                                         "rebuttals_cumulative": np.cumsum(cr, axis=-1)})  # fmt: skip
    assert np.allclose(acc, acc2) and np.allclose(win, win2)
    for q in range(g):  # build the resample explicitly and solve it plainly
        leaf = np.repeat(sorted_scores[q], cr[q].ravel(), axis=None).reshape(n_, m_, r_)
        crit_rows = [np.repeat(np.arange(m_), cc[q, p]) for p in range(n_)]
        prop = np.repeat(np.arange(n_), cp[q])
        pooled = np.stack([leaf[p][crit_rows[p]] for p in prop])
        ref_acc, ref_win, _ = sweep_arrays(pooled[None], correct[q, prop][None], **grid)
        assert np.allclose(acc[q], ref_acc[0]) and np.allclose(win[q], ref_win[0])


def test_counts_on_a_presorted_critique_pool_equal_a_materialised_resample():
    rng = np.random.default_rng(12)
    g, n_, m_ = 3, 5, 6
    scores = np.round(rng.random((g, n_, m_)), 1)
    correct = rng.integers(0, 2, (g, n_)).astype(float)
    cp = rng.multinomial(n_, [1 / n_] * n_, size=g)
    cc = rng.multinomial(m_, [1 / m_] * m_, size=(g, n_))
    grid = dict(n=[BestOfN(1), BestOfN(4)], m=[None, BestOfN(3), "top2"])
    sorted_scores = presort(scores)  # critiques ascending: the critic's best first
    acc, win, _ = sweep_arrays(sorted_scores, correct, **grid, presorted=True,
                               counts={"proposals": cp,
                                       "critiques_cumulative": np.cumsum(cc, axis=-1)})  # fmt: skip
    for q in range(g):
        prop = np.repeat(np.arange(n_), cp[q])
        pooled = np.stack([np.repeat(sorted_scores[q, p], cc[q, p]) for p in prop])
        ref_acc, ref_win, _ = sweep_arrays(pooled[None], correct[q, prop][None], **grid)
        assert np.allclose(acc[q], ref_acc[0]) and np.allclose(win[q], ref_win[0])


def test_sweep_matches_single_solves_and_is_exported():
    rng = np.random.default_rng(2)
    scores = rng.random((2, 7, 5))
    correct = rng.integers(0, 2, (2, 7)).astype(float)
    acc, win, w = sweep_arrays(scores, correct, [BestOfN(1), BestOfN(4)], [BestOfN(1), BestOfN(3)],
                               want_weights=True)  # fmt: skip
    for q in range(2):
        res = debatelab.nested_best_of_n(scores[q], correct[q], BestOfN(4), BestOfN(3))
        assert acc[q, 1, 1, 0] == pytest.approx(res.accuracy)
        assert win[q, 1, 1, 0] == pytest.approx(res.win_rate)
        assert np.allclose(w[q, 1, 1, 0], res.weights)
    assert debatelab.best_of_n_weights is best_of_n_weights


def test_bad_input_is_refused_clearly():
    with pytest.raises(ValueError, match="no critique axis"):
        nested_best_of_n(np.random.rand(4), np.ones(4), BestOfN(2), m=BestOfN(3))
    with pytest.raises(ValueError, match="no rebuttal axis"):
        nested_best_of_n(np.random.rand(4, 2), np.ones(4), BestOfN(2), r=BestOfN(3))
    with pytest.raises(ValueError, match="correct must have shape"):
        nested_best_of_n(np.random.rand(4, 2), np.ones(3), BestOfN(2))
    with pytest.raises(ValueError, match="non-empty"):
        nested_best_of_n(np.zeros((0, 2)), np.ones(0), BestOfN(2))
    with pytest.raises(ValueError, match="NaN"):
        nested_best_of_n(np.array([0.2, np.nan]), np.ones(2), BestOfN(2))
    with pytest.raises(ValueError, match="draws"):
        best_of_n_weights([0.1, 0.2], 0)
    with pytest.raises(ValueError, match="ambiguous"):  # draws must be BestOfN, explicitly
        nested_best_of_n(np.random.rand(4), np.ones(4), 3)
    with pytest.raises(ValueError, match="ambiguous"):
        sweep_arrays(np.random.rand(1, 4), np.ones((1, 4)), [BestOfN(2), 2])


def test_unsorted_innermost_counts_are_sorted_along():
    """Counts of the innermost level in the pool's own order (presorted=False) equal the same
    resample given on presorted leaves."""
    rng = np.random.default_rng(4)
    scores = np.round(rng.random((2, 4, 3, 5)), 1)
    correct = rng.integers(0, 2, (2, 4)).astype(float)
    cr = rng.multinomial(5, [0.2] * 5, size=(2, 4, 3))
    grid = dict(n=[BestOfN(3), "top2"], m=[BestOfN(2)], r=[BestOfN(4), "exact"])
    acc, win, _ = sweep_arrays(scores, correct, **grid, counts={"rebuttals": cr})
    order = np.argsort(-scores, axis=-1, kind="stable")
    acc2, win2, _ = sweep_arrays(np.take_along_axis(scores, order, -1), correct, **grid,
                                 counts={"rebuttals": np.take_along_axis(cr, order, -1)},
                                 presorted=True)  # fmt: skip
    np.testing.assert_allclose(acc, acc2, atol=1e-12)
    np.testing.assert_allclose(win, win2, atol=1e-12)
    with pytest.raises(ValueError, match="presorted"):
        sweep_arrays(scores, correct, **grid, counts={"rebuttals_cumulative": cr.cumsum(-1)})
