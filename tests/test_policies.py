"""Rank policies: weights, ties, parsing, and best-of-n against an enumeration of its draws."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from debatelab.policies import (
    BestOfN,
    Exact,
    TopK,
    Uniform,
    as_policy,
    child_weights,
    play_weights,
    policy_value,
    rank_mass,
    tie_shared,
)

POLICIES = [Exact(), TopK(1), TopK(3), TopK(100), BestOfN(1), BestOfN(4), Uniform()]


@pytest.mark.parametrize("policy", POLICIES, ids=repr)
@pytest.mark.parametrize("n", [1, 2, 5, 17])
def test_rank_weights_are_a_distribution_decreasing_in_rank(policy, n):
    w = policy.rank_weights(n)
    assert w.shape == (n,) and np.all(w >= 0)
    assert w.sum() == pytest.approx(1.0)
    assert np.all(np.diff(w) <= 1e-15)


def test_known_limits():
    np.testing.assert_array_equal(TopK(1).rank_weights(4), Exact().rank_weights(4))
    np.testing.assert_allclose(TopK(9).rank_weights(4), Uniform().rank_weights(4))  # clamped
    np.testing.assert_allclose(BestOfN(1).rank_weights(6), Uniform().rank_weights(6))
    np.testing.assert_allclose(BestOfN(2000).rank_weights(6), Exact().rank_weights(6), atol=1e-12)
    np.testing.assert_allclose(TopK(2).rank_weights(4), [0.5, 0.5, 0, 0])


@pytest.mark.parametrize("draws", [1, 2, 3])
def test_best_of_n_matches_enumerated_draws(draws):
    """Best of ``draws`` uniform draws with replacement: enumerate every draw sequence."""
    values = np.array([0.3, 0.9, 0.1, 0.5])
    expected = np.mean([max(values[list(d)]) for d in
                        itertools.product(range(4), repeat=draws)])  # fmt: skip
    assert policy_value(values, BestOfN(draws)) == pytest.approx(expected)
    expected_min = np.mean([min(values[list(d)]) for d in
                            itertools.product(range(4), repeat=draws)])  # fmt: skip
    assert policy_value(values, BestOfN(draws), maximize=False) == pytest.approx(expected_min)


def test_ties_share_their_block_mass():
    w = tie_shared(np.array([5.0, 3.0, 3.0, 3.0, 1.0]), TopK(2).rank_weights(5))
    np.testing.assert_allclose(w, [0.5, 0.5 / 3, 0.5 / 3, 0.5 / 3, 0])
    batch = tie_shared(np.array([[2.0, 2.0], [2.0, 1.0]]), Exact().rank_weights(2))
    np.testing.assert_allclose(batch, [[0.5, 0.5], [1.0, 0.0]])


def test_child_weights_do_not_depend_on_order():
    rng = np.random.default_rng(0)
    values = np.round(rng.random(12), 1)  # ties
    for policy in POLICIES:
        for maximize in (True, False):
            w = child_weights(values, policy, maximize)
            perm = rng.permutation(12)
            np.testing.assert_allclose(child_weights(values[perm], policy, maximize), w[perm])
            assert w.sum() == pytest.approx(1.0)


def test_minimiser_prefers_small_values():
    values = np.array([0.2, 0.8, 0.5])
    assert policy_value(values, Exact(), maximize=False) == 0.2
    assert policy_value(values, TopK(2), maximize=False) == pytest.approx(0.35)
    assert policy_value(values, TopK(2)) == pytest.approx(0.65)


def test_as_policy_parses_and_explains():
    assert as_policy(3) == TopK(3)
    assert as_policy(np.int64(2)) == TopK(2)
    assert as_policy("exact") == Exact() and as_policy("uniform") == Uniform()
    assert as_policy("top5") == TopK(5) and as_policy("bo8") == BestOfN(8)
    assert as_policy(BestOfN(2)) == BestOfN(2)
    # one meaning of a bare number everywhere: top-k (draws are always spelled BestOfN / 'boN')
    assert as_policy("3") == TopK(3) == as_policy("k3") == as_policy(" Top3 ")
    for bad in ["best", True, 1.5, "top", "k", "bo", "3.5", "-2"]:
        with pytest.raises(ValueError, match="rank policy"):
            as_policy(bad)
    with pytest.raises(ValueError, match="k >= 1"):
        TopK(0)
    with pytest.raises(ValueError, match="draws"):
        BestOfN(0)
    with pytest.raises(ValueError, match="at least one child"):
        Uniform().rank_weights(0)


def test_rank_mass_of_multiplicities():
    # 4 copies: counts (2, 0, 1, 1) occupy ranks 1-2, none, 3, 4
    m = rank_mass(TopK(3), 4, np.array([2, 0, 1, 1]))
    np.testing.assert_allclose(m, [2 / 3, 0, 1 / 3, 0])
    b = rank_mass(BestOfN(2), 3, np.array([[1, 1, 1], [3, 0, 0], [1, 0, 1]]))  # sizes 3, 3, 2
    np.testing.assert_allclose(b[0], BestOfN(2).rank_weights(3))
    np.testing.assert_allclose(b[1], [1, 0, 0])
    np.testing.assert_allclose(b[2], [0.75, 0, 0.25])
    with pytest.raises(ValueError, match="at least one child copy"):
        rank_mass(TopK(1), 2, np.array([0, 0]))


def test_play_weights_with_counts_equal_the_materialised_multiset():
    rng = np.random.default_rng(1)
    for _ in range(20):
        values = np.round(rng.random(5), 1)
        counts = rng.integers(0, 3, 5)
        counts[0] += 1
        copies = np.repeat(np.arange(5), counts)
        for policy in POLICIES:
            for maximize in (True, False):
                w = child_weights(values, policy, maximize, counts)
                flat = child_weights(values[copies], policy, maximize)
                np.testing.assert_allclose(w, np.bincount(copies, flat, minlength=5), atol=1e-12)
    many = play_weights(values, POLICIES, True, counts)
    for p, policy in enumerate(POLICIES):
        np.testing.assert_allclose(many[p], child_weights(values, policy, True, counts))
