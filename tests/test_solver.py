"""The subset solver against an exhaustive walk of the ordered game tree, and its known limits."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest

from debatelab import solve_reveal_game
from debatelab.games.solver import solve_capabilities
from debatelab.games.tables import game_tables
from debatelab.geometry import rank_masks
from debatelab.policies import BestOfN, Exact, TopK, Uniform, as_policy, child_weights

MOVES = [(4,), (2, 2), (1, 1, 1, 1)]


def leaf_payoff(p: np.ndarray, rule: str, a: int, b: int | None) -> float:
    if rule == "asym":
        return p[a]
    if rule == "sym":
        return p[a] - p[b]
    return p[a] - p.max()


def top_k_mean(vals, policy, maximize, default):
    """A top-k value summed in sorted order (exact for dyadic values and k in 1, 2, 4)."""
    if not isinstance(policy, TopK | Exact):
        return float(default)
    k = 1 if isinstance(policy, Exact) else min(policy.k, len(vals))
    best = np.sort(vals)[::-1] if maximize else np.sort(vals)
    return float(best[:k].sum() / k)


def brute_force(probs, label, n_cells, moves, k, rule, players=None):
    """Walk every ordered sequence of moves; returns (claim, value, judge accuracy).
    ``players`` ("A"/"B" per turn): who moves at each turn (default alternating A, B, ...)."""
    pol = [as_policy(x) for x in k]
    players = players or ["AB"[t % 2] for t in range(len(moves))]
    n_classes = probs.shape[1]
    index = {m: i for i, m in enumerate(itertools.combinations(range(n_cells), sum(moves)))}

    def walk(revealed: tuple, t: int, a: int, b):
        if t == len(moves):
            p = probs[index[tuple(sorted(revealed))]]
            return leaf_payoff(p, rule, a, b), float(p.argmax() == label)
        free = [c for c in range(n_cells) if c not in revealed]
        kids = [walk(revealed + m, t + 1, a, b) for m in itertools.combinations(free, moves[t])]
        vals = np.array([v for v, _ in kids])
        acc = np.array([j for _, j in kids])
        maximize = players[t] == "A"
        policy = pol[0 if maximize else 1]
        w = child_weights(vals, policy, maximize)
        return top_k_mean(vals, policy, maximize, default=w @ vals), float(w @ acc)

    per_claim = []
    for a in range(n_classes):
        if rule == "sym":
            options = [walk((), 0, a, b) for b in range(n_classes)]
            b_star = int(np.argmin([v for v, _ in options]))
            per_claim.append(options[b_star])
        else:
            per_claim.append(walk((), 0, a, None))
    claim = int(np.argmax([v for v, _ in per_claim]))
    return claim, per_claim[claim][0], per_claim[claim][1]


def random_probs(rng, n_images, n_cells, reveal, n_classes, dtype=np.float64):
    logits = rng.normal(size=(n_images, comb(n_cells, reveal), n_classes)) * 2
    p = np.exp(logits)
    return (p / p.sum(axis=2, keepdims=True)).astype(dtype)


@pytest.mark.parametrize("moves", MOVES)
@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
def test_matches_exhaustive_ordered_tree(moves, rule):
    rng = np.random.default_rng(hash((moves, rule)) % 2**32)
    n_cells, n_classes = 7, 3
    n_images = 1 if rule == "sym" else 2  # sym walks K * K games per image
    probs = random_probs(rng, n_images, n_cells, sum(moves), n_classes)
    labels = rng.integers(0, n_classes, n_images)
    caps = [(1, 1), (2, 3), (3, 1), (5, 2), (100, 100), (BestOfN(3), 2), (Exact(), Uniform())]
    out = solve_capabilities(probs, n_cells, moves, caps, rule, labels, chunk_images=1)
    for ci, k in enumerate(caps):
        for i in range(n_images):
            claim, value, judge = brute_force(probs[i], labels[i], n_cells, moves, k, rule)
            assert out["claim"][ci, i] == claim, (k, i)
            assert out["value"][ci, i] == pytest.approx(value, abs=1e-9)
            assert out["judge_accuracy"][ci, i] == pytest.approx(judge, abs=1e-9)
            assert out["claim_correct"][ci, i] == (claim == labels[i])


@pytest.mark.parametrize("moves", MOVES)
def test_ties_share_mass_like_the_ordered_tree(moves):
    """Nine cells, leaf values on a 1/16 grid (many exact ties); k in 1, 2, 4 so that every
    top-k average is exact in binary and both computations see the same ties."""
    rng = np.random.default_rng(9)
    n_cells = 9
    probs = rng.integers(0, 5, size=(2, comb(n_cells, 4), 3)) / 16.0
    labels = np.array([1, 2])
    caps = [(1, 1), (2, 4), (4, 1), (1, 2)]
    out = solve_capabilities(probs, n_cells, moves, caps, "asym", labels)
    for ci, k in enumerate(caps):
        for i in range(2):
            claim, value, judge = brute_force(probs[i], labels[i], n_cells, moves, k, "asym")
            assert out["value"][ci, i] == value
            assert out["judge_accuracy"][ci, i] == pytest.approx(judge, abs=1e-9)
    fast = solve_capabilities(probs.astype(np.float32), n_cells, moves, caps, "asym", labels)
    np.testing.assert_allclose(fast["judge_accuracy"], out["judge_accuracy"], atol=1e-6)


@pytest.mark.parametrize("moves", MOVES)
def test_float32_path_agrees_with_float64(moves):
    rng = np.random.default_rng(3)
    n_cells = 9
    probs = random_probs(rng, 5, n_cells, 4, 4)
    probs[:, ::7] = probs[:, :1]  # repeated leaves: ties across masks
    labels = rng.integers(0, 4, 5)
    caps = [(1, 1), (3, 2), (20, 50), (BestOfN(4), 3)]
    exact = solve_capabilities(probs, n_cells, moves, caps, "asym", labels)
    fast = solve_capabilities(probs.astype(np.float32), n_cells, moves, caps, "asym", labels)
    np.testing.assert_allclose(fast["value"], exact["value"], atol=1e-6)
    np.testing.assert_allclose(fast["judge_accuracy"], exact["judge_accuracy"], atol=1e-5)
    np.testing.assert_array_equal(fast["claim"], exact["claim"])


@pytest.mark.parametrize("moves", MOVES)
def test_all_options_is_the_ensemble(moves):
    """k = all options (uniform play by both): the value is the mean over all masks."""
    rng = np.random.default_rng(4)
    n_cells = 8
    probs = random_probs(rng, 6, n_cells, 4, 5)
    labels = rng.integers(0, 5, 6)
    big = comb(n_cells, 4)
    out = solve_reveal_game(probs, n_cells, moves, (big, big), "asym", labels)
    mean = probs.mean(axis=1)
    np.testing.assert_array_equal(out["claim"], mean.argmax(axis=1))
    np.testing.assert_allclose(out["value"], mean.max(axis=1), atol=1e-12)
    sparse = (probs.argmax(axis=2) == labels[:, None]).mean(axis=1)
    np.testing.assert_allclose(out["judge_accuracy"], sparse, atol=1e-12)
    uni = solve_reveal_game(probs, n_cells, moves, Uniform(), "asym", labels)
    np.testing.assert_allclose(uni["value"], out["value"], atol=1e-12)


def minimax(p, cls, n_cells, moves, revealed=()):
    """Plain max/min recursion over ordered moves, no rank policies involved."""
    t = sum(1 for _ in itertools.accumulate(moves) if _ <= len(revealed))
    if len(revealed) == sum(moves):
        return p[rank_masks(np.array([sorted(revealed)]), n_cells)[0], cls]
    free = [c for c in range(n_cells) if c not in revealed]
    vals = [
        minimax(p, cls, n_cells, moves, revealed + m)
        for m in itertools.combinations(free, moves[t])
    ]
    return max(vals) if t % 2 == 0 else min(vals)


@pytest.mark.parametrize("moves", MOVES)
def test_k_one_is_minimax(moves):
    rng = np.random.default_rng(5)
    n_cells = 7
    probs = random_probs(rng, 2, n_cells, 4, 3)
    out = solve_reveal_game(probs, n_cells, moves, 1)
    for i in range(2):
        best = [minimax(probs[i], c, n_cells, moves) for c in range(3)]
        assert out["claim"][i] == int(np.argmax(best))
        assert out["value"][i] == pytest.approx(max(best), abs=1e-12)
    cons = solve_reveal_game(probs, n_cells, (4,), 1)
    np.testing.assert_array_equal(cons["value"], probs.max(axis=(1, 2)))


def test_consultancy_top_k_is_mean_of_best_masks():
    rng = np.random.default_rng(6)
    probs = random_probs(rng, 3, 8, 4, 4)
    for k in [1, 5, 33, 70]:
        out = solve_reveal_game(probs, 8, (4,), k)
        top = -np.sort(-probs, axis=1)[:, :k].mean(axis=1)  # (n, K)
        np.testing.assert_allclose(out["value"], top.max(axis=1), atol=1e-12)
        np.testing.assert_array_equal(out["claim"], top.argmax(axis=1))


def test_index_tables():
    t = game_tables(36, (1, 1, 1, 1))
    assert t.n_nodes == (1, 36, 630, 7140, 58905)
    assert t.n_options == (36, 35, 34, 33)
    t2 = game_tables(36, (2, 2))
    assert t2.n_options == (630, 561)
    assert t2.children[1].shape == (630, 561)
    assert t2.parents[1].shape == (58905, 6)  # C(4, 2) ways to split a mask into A's and B's pair
    small = game_tables(6, (1, 2))
    sets = list(itertools.combinations(range(6), 3))
    for node in range(6):
        kids = {sets[c] for c in small.children[1][node]}
        assert kids == {s for s in sets if node in s}


def test_bad_inputs_are_explained():
    probs = np.full((1, 70, 2), 0.5)
    with pytest.raises(ValueError, match="C\\(8, 3\\) = 56"):
        solve_reveal_game(probs, 8, (2, 1), 1)
    with pytest.raises(ValueError, match="unknown rule"):
        solve_reveal_game(probs, 8, (2, 2), 1, rule="nope")
    with pytest.raises(ValueError, match="moves"):
        solve_reveal_game(probs, 8, (2, 0, 2), 1)
    with pytest.raises(ValueError, match="labels"):
        solve_reveal_game(probs, 8, (2, 2), 1, labels=np.zeros(3))
    with pytest.raises(ValueError, match="TopK"):
        solve_reveal_game(probs, 8, (2, 2), (0, 1))
    with pytest.raises(ValueError, match="k_A, k_B"):
        solve_reveal_game(probs, 8, (2, 2), (1, 2, 3))


def test_policy_objects_and_ints_agree():
    rng = np.random.default_rng(7)
    probs = random_probs(rng, 3, 8, 4, 3)
    a = solve_reveal_game(probs, 8, (2, 2), (3, 1))
    b = solve_reveal_game(probs, 8, (2, 2), (TopK(3), Exact()))
    np.testing.assert_array_equal(a["value"], b["value"])
    c = solve_reveal_game(probs, 8, (2, 2), (BestOfN(1), 1))
    d = solve_reveal_game(probs, 8, (2, 2), (Uniform(), 1))
    np.testing.assert_allclose(c["value"], d["value"], atol=1e-12)


def test_batching_of_entries_does_not_change_results():
    from debatelab.games.core import reveal_game
    from debatelab.games.solver import _level_reducers, _solve_columns, leaf_columns

    rng = np.random.default_rng(8)
    probs = random_probs(rng, 3, 8, 4, 4)
    labels = rng.integers(0, 4, 3)
    game = reveal_game(8, (1, 1, 1, 1))
    plans = [_level_reducers(game, (TopK(a), TopK(b))) for a in (1, 2, 5, 8) for b in (1, 3, 7)]
    leaf = leaf_columns(probs, "asym")
    aux = (probs.argmax(axis=2) == labels[:, None])[:, None, :].astype(float)
    big = _solve_columns(leaf, aux, game, plans)
    small = _solve_columns(leaf, aux, game, plans, batch_elements=1)
    for x, y in zip(big, small, strict=True):  # uniform play sums in another order: 1 ulp
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12)


@pytest.mark.parametrize("moves", MOVES)
def test_principal_line_reaches_the_minimax_value(moves):
    from debatelab.games.lines import principal_line

    rng = np.random.default_rng(10)
    probs = random_probs(rng, 2, 7, 4, 3)
    out = solve_reveal_game(probs, 7, moves, 1)
    for i in range(2):
        line = principal_line(probs[i], 7, moves, int(out["claim"][i]))
        assert [len(c) for c in line] == list(moves)
        cells = [c for move in line for c in move]
        assert len(set(cells)) == 4
        leaf = rank_masks(np.array([sorted(cells)]), 7)[0]
        assert probs[i, leaf, out["claim"][i]] == pytest.approx(out["value"][i], abs=1e-12)


@pytest.mark.parametrize("rule", ["asym", "last_b"])
def test_class_pruning_changes_nothing(rule):
    rng = np.random.default_rng(11)
    probs = random_probs(rng, 6, 8, 4, 6).astype(np.float32)
    labels = rng.integers(0, 6, 6)
    caps = [(a, b) for a in (1, 3, 70) for b in (1, 4, 70)] + [(BestOfN(3), 2)]
    pruned = solve_capabilities(probs, 8, (2, 2), caps, rule, labels, prune=True)
    full = solve_capabilities(probs, 8, (2, 2), caps, rule, labels, prune=False)
    for key in full:
        np.testing.assert_array_equal(pruned[key], full[key])


@pytest.mark.parametrize("moves", [(2, 2), (1, 1, 1, 1)])
@pytest.mark.parametrize("rule", ["asym", "last_b"])
def test_per_capability_class_bounds_change_nothing(moves, rule):
    """Top-k players only: the per-capability bounds (every minimising level uniform) prune
    classes the global bounds keep; every claim is unchanged, and every value and judge
    accuracy up to the last float32 bit of a uniform play's sum (its order depends on which
    entries are solved together, as in the batching test above)."""
    from debatelab.games.core import reveal_game
    from debatelab.games.solver import (
        _level_reducers,
        _solve_candidates,
        _solve_columns,
        capability_bounds,
        leaf_columns,
        normalise_capability,
    )

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(40, comb(8, 4), 6)) * 2
    labels = rng.integers(0, 6, 40)
    logits[np.arange(40), :, labels] += 3  # a judge that leans to the truth, as a trained one
    probs = np.exp(logits)
    probs = (probs / probs.sum(axis=2, keepdims=True)).astype(np.float32)
    caps = [(a, b) for a in (1, 2, 5, 70) for b in (1, 3, 70)] + [(Exact(), Uniform())]
    pruned = solve_capabilities(probs, 8, moves, caps, rule, labels, prune=True)
    full = solve_capabilities(probs, 8, moves, caps, rule, labels, prune=False)
    np.testing.assert_array_equal(pruned["claim"], full["claim"])
    for key in full:
        np.testing.assert_allclose(pruned[key], full[key], rtol=0, atol=1e-6)
    # the bounds do prune: fewer (image, class) pairs solved than under the global bounds alone
    game = reveal_game(8, moves)
    leaf = leaf_columns(probs, rule)
    plans = [_level_reducers(game, normalise_capability(k)) for k in caps]
    bounds = capability_bounds(game, caps)
    with_bounds, _ = _solve_candidates(leaf, None, game, plans, bounds)
    without, _ = _solve_candidates(leaf, None, game, plans)
    solved = np.isfinite(with_bounds[0]).sum()
    assert solved < np.isfinite(without[0]).sum()
    kept = np.isfinite(with_bounds)
    np.testing.assert_allclose(with_bounds[kept], without[kept], rtol=0, atol=1e-6)
    # what the pruning rests on: each bound is at least its column's value at that capability
    upper, _ = _solve_columns(leaf, None, game, bounds)
    value, _ = _solve_columns(leaf, None, game, plans)
    assert np.all(upper >= value - 1e-6)


def confidence_brute_force(probs, label, k, rule):
    """Reading B of the quantilised consultant, mask by mask: rank the masks by the judge's
    confidence, weight each by its share of ranks 1..k (a tie block shares its ranks' mass),
    claim the class with the best weighted payoff. Returns (claim, value, judge accuracy)."""
    n_masks, n_classes = probs.shape
    k = min(k, n_masks)
    conf = probs.max(axis=1)
    weights = np.zeros(n_masks)
    for m in range(n_masks):
        above = int((conf > conf[m]).sum())  # the tie block of mask m holds ranks above+1..
        size = int((conf == conf[m]).sum())
        weights[m] = max(0, min(k, above + size) - above) / size / k
    judge = float(weights @ (probs.argmax(axis=1) == label))
    if rule == "sym":
        values = [[sum(w * leaf_payoff(p, rule, a, b) for w, p in zip(weights, probs, strict=True))
                   for b in range(n_classes)] for a in range(n_classes)]  # fmt: skip
        per_claim = [min(row) for row in values]
    else:
        per_claim = [sum(w * leaf_payoff(p, rule, a, None) for w, p in zip(weights, probs, strict=True))
                     for a in range(n_classes)]  # fmt: skip
    claim = int(np.argmax(per_claim))
    return claim, per_claim[claim], judge


@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
@pytest.mark.parametrize("quantised", [False, True])
def test_confidence_ranking_matches_mask_by_mask(rule, quantised):
    """ranking='confidence' (one claim-agnostic ranking) against the mask-by-mask definition,
    with and without many tied confidences (probabilities on a 1/8 grid)."""
    rng = np.random.default_rng(21 + quantised)
    n_cells, reveal, n_classes = 8, 2, 4
    probs = random_probs(rng, 5, n_cells, reveal, n_classes)
    if quantised:
        probs = np.round(probs * 8) / 8
    labels = rng.integers(0, n_classes, 5)
    ks = [1, 2, 3, 5, 9, 27, 28, 100]
    caps = [(k, 1) for k in ks]
    out = solve_capabilities(probs, n_cells, (reveal,), caps, rule, labels, ranking="confidence")
    for ci, k in enumerate(ks):
        for i in range(5):
            claim, value, judge = confidence_brute_force(probs[i], labels[i], k, rule)
            assert out["claim"][ci, i] == claim, (k, i)
            assert out["value"][ci, i] == pytest.approx(value, abs=1e-9)
            assert out["judge_accuracy"][ci, i] == pytest.approx(judge, abs=1e-9)


def test_confidence_ranking_is_the_core_reducer_with_a_rank_key():
    """The fast path against the game core's one level reducer given the confidence as its
    rank key, on float32 probabilities with ties."""
    from debatelab.games.core import reduce_level
    from debatelab.games.solver import leaf_columns

    rng = np.random.default_rng(5)
    probs = (np.round(random_probs(rng, 4, 9, 4, 3) * 16) / 16).astype(np.float32)
    ks = [1, 4, 17, 126]
    labels = rng.integers(0, 3, 4)
    out = solve_capabilities(probs, 9, (4,), ks, "asym", labels, ranking="confidence")
    leaf = leaf_columns(probs, "asym").astype(np.float64)  # (n, K, M)
    key = probs.max(axis=2)
    right = probs.argmax(axis=2) == labels[:, None]
    core = reduce_level(leaf, [TopK(k) for k in ks], rank_key=key[:, None, :])
    judge = reduce_level(key, [TopK(k) for k in ks], carried=right)  # the same play for all
    np.testing.assert_allclose(out["judge_accuracy"], judge.carried, atol=1e-9)
    np.testing.assert_allclose(out["value"], core.values.max(axis=2), atol=1e-6)
    top2 = np.sort(core.values, axis=2)[..., -2:]
    clear = top2[..., 1] - top2[..., 0] > 1e-6  # claims tied up to rounding may differ
    assert clear.mean() > 0.5
    np.testing.assert_array_equal(out["claim"][clear], core.values.argmax(axis=2)[clear])


def test_confidence_and_claim_rankings_agree_at_both_ends():
    """Without ties, k = 1 is the same mask under both rankings (the most confident one) and
    k = all is the ensemble; in between they differ."""
    rng = np.random.default_rng(8)
    probs = random_probs(rng, 40, 8, 4, 5)
    labels = rng.integers(0, 5, 40)
    caps = [1, 70, 10]
    a = solve_capabilities(probs, 8, (4,), caps, "asym", labels)
    b = solve_capabilities(probs, 8, (4,), caps, "asym", labels, ranking="confidence")
    for key in ("claim", "value", "judge_accuracy"):
        np.testing.assert_allclose(a[key][:2], b[key][:2], atol=1e-12)
    assert not np.allclose(a["judge_accuracy"][2], b["judge_accuracy"][2])


def test_confidence_ranking_refuses_what_it_does_not_define():
    probs = random_probs(np.random.default_rng(0), 1, 6, 4, 3)
    with pytest.raises(ValueError, match="one-turn games"):
        solve_capabilities(probs, 6, (2, 2), [1], ranking="confidence")
    with pytest.raises(ValueError, match="top-k capabilities"):
        solve_capabilities(probs, 6, (4,), [BestOfN(3)], ranking="confidence")
    with pytest.raises(ValueError, match="unknown ranking"):
        solve_capabilities(probs, 6, (4,), [1], ranking="judge")
