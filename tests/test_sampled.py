"""Sampled candidate trees and their exact search (docs/trained-judges.md#search) against brute
force: an exhaustive recursive walk of the same sampled tree, ties to the first index, for every
rule and both judge kinds (class probabilities, D1; claim-conditioned scores, D3 / D2)."""

from __future__ import annotations

import itertools
from math import prod

import numpy as np
import pytest
import torch

from debatelab.games.core import sampled_tree, solve
from debatelab.games.sampled import (
    branching_for,
    group_codes,
    rule_leaves,
    sample_tree,
    slot_groups,
    solve_tree,
)
from debatelab.policies import Exact

K = 4  # classes in the tiny instances


def _walk(leaf_value, branching, depth=0, prefix=0):
    """Value and first-index principal leaf of the subtree under ``prefix`` (depth-first rank)."""
    if depth == len(branching):
        return leaf_value(prefix), prefix
    best = None
    for child in range(branching[depth]):
        v, leaf = _walk(leaf_value, branching, depth + 1, prefix * branching[depth] + child)
        better = best is None or (v > best[0] if depth % 2 == 0 else v < best[0])
        if better:  # strict: the first of equals stays
            best = (v, leaf)
    return best


def _brute(scores, branching, rule, conditioned):
    """Claim, B's class, realised leaf and value of one image by exhaustive walks, written from
    the rule table of §3 without the vectorised code."""
    n = prod(branching)
    if len(branching) == 1:  # consultancy: first (mask, class) in mask-major order
        flat = [(scores[m][c], m, c) for m in range(n) for c in range(K)]
        top = max(v for v, _, _ in flat)
        _, m, c = next(f for f in flat if f[0] == top)
        return c, None, m, top

    def leaf_fn(a, b=None):
        def f(i):
            s = scores[i]
            if not conditioned:
                if rule == "asym":
                    return s[a]
                if rule == "sym":
                    return s[a] - s[b]
                return s[a] - max(s)
            if rule == "asym":
                return s[a]
            if rule == "sym":
                return s[a][b]
            return min(s[a])

        return f

    if rule == "sym":
        w = [[_walk(leaf_fn(a, b), branching) for b in range(K)] for a in range(K)]
        v_a = [min(w[a][b][0] for b in range(K)) for a in range(K)]
        claim = v_a.index(max(v_a))
        col = [w[claim][b][0] for b in range(K)]
        b_claim = col.index(min(col))
        value, leaf = w[claim][b_claim]
        return claim, b_claim, leaf, value
    roots = [_walk(leaf_fn(a), branching) for a in range(K)]
    vals = [r[0] for r in roots]
    claim = vals.index(max(vals))
    return claim, None, roots[claim][1], roots[claim][0]


@pytest.mark.parametrize("branching", [(5,), (3, 4), (2, 3, 2, 3)])
@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
@pytest.mark.parametrize("conditioned", [False, True])
def test_search_equals_an_exhaustive_walk_ties_included(branching, rule, conditioned):
    rng = np.random.default_rng(hash((branching, rule, conditioned)) % 2**32)
    n = prod(branching)
    for trial in range(12):
        levels = 3 if trial % 2 else 1000  # coarse scores: many ties, the first index must win
        if conditioned:
            shape = (n, K) if rule == "asym" or len(branching) == 1 else (n, K, K)
            raw = rng.integers(0, levels, size=shape) / levels
        else:
            raw = rng.integers(0, levels, size=(n, K)) / levels
        scores = torch.tensor(raw, dtype=torch.float64)
        leaves = rule_leaves(scores[None], rule, conditioned, len(branching) == 1)
        got = solve_tree(leaves, branching, rule, K)
        claim, b_claim, leaf, value = _brute(raw.tolist(), branching, rule, conditioned)
        assert int(got.claim[0]) == claim
        assert int(got.leaf[0]) == leaf
        assert float(got.value[0]) == pytest.approx(value, abs=1e-12)
        if rule == "sym" and len(branching) > 1:
            assert int(got.b_claim[0]) == b_claim


def test_d1_sym_realises_the_first_sampled_play_when_the_claim_beats_every_rival():
    """§3: V(d_A) <= 0 with d_B = d_A; if the claim beats every rival, d_B* = claim and every
    subtree value is 0, so the realised play is the first A- and first B-candidate."""
    p = torch.full((1, 9, K), 0.05, dtype=torch.float64)
    p[..., 2] = 0.85  # class 2 tops every leaf
    got = solve_tree(rule_leaves(p, "sym", False, False), (3, 3), "sym", K)
    assert int(got.claim[0]) == 2 and int(got.b_claim[0]) == 2
    assert int(got.leaf[0]) == 0 and float(got.value[0]) == 0.0


def test_node_values_equal_the_game_core_reducer():
    """The torch minimax and the game core's backward induction (exact play) agree on the
    root values of every claim column of a sampled tree."""
    rng = np.random.default_rng(0)
    branching = (3, 2, 3, 2)
    leaves = rng.random((2, prod(branching), K))
    game = sampled_tree(branching)
    for img in range(2):
        core = solve(game, leaves[img].T, [Exact()] * 4).root_value[:, 0]
        got = solve_tree(torch.tensor(leaves[img : img + 1]), branching, "asym", K)
        assert float(got.value[0]) == pytest.approx(core.max(), abs=1e-12)
        assert int(got.claim[0]) == int(np.argmax(core))


@pytest.mark.parametrize("protocol", ["consultancy", "debate2", "debate4"])
def test_sampled_trees_follow_the_published_scheme(protocol):
    gen = torch.Generator().manual_seed(0)
    tree = sample_tree(protocol, 40, gen)
    branching = branching_for(protocol)
    assert tree.branching == branching and tree.paths.shape == (40, 1296, 4)
    paths = tree.paths
    # cells distinct within every play
    assert (paths.sort(dim=-1).values.diff(dim=-1) > 0).all()
    # siblings share their parents' cells; children are drawn per node, not shared
    shaped = paths.reshape((40,) + branching + (4,))
    if protocol == "debate2":
        assert (shaped[:, :, :, :2] == shaped[:, :, :1, :2]).all()
        assert not (shaped[:, 0, :, 2:] == shaped[:, 1, :, 2:]).all()
    if protocol == "debate4":
        assert (shaped[..., 0] == shaped[:, :, :1, :1, :1, 0]).all()
        assert (shaped[..., 2] == shaped[:, :, :, :, :1, 2]).all()
    # every draw of every level picks each cell equally often (4.5-sigma band per cell)
    slot = 0
    for t, m in enumerate(tree.moves):
        draws = shaped[(slice(None),) * (t + 2) + (0,) * (len(branching) - t - 1)]
        cells = draws[..., slot : slot + m].reshape(-1)
        slot += m
        counts = torch.bincount(cells, minlength=36).double()
        expected = cells.numel() / 36
        assert (counts - expected).abs().max() < 4.5 * expected**0.5, t
    # siblings are independent draws, so duplicates occur at the published rate
    if protocol == "debate2":
        a_pairs = shaped[:, :, 0, :2].sort(-1).values  # (40, 36, 2)
        same = (a_pairs[:, :, None] == a_pairs[:, None]).all(-1).sum().item() - 40 * 36
        assert same > 0  # 36 draws among 630 pairs collide about once per image


def test_budgets_must_split_evenly():
    assert branching_for("debate2", 1296) == (36, 36)
    assert branching_for("debate4", 256) == (4, 4, 4, 4)
    with pytest.raises(ValueError, match="4-th power"):
        branching_for("debate4", 1000)
    assert branching_for("debate3") == (12, 12, 9)  # the published-budget branching
    assert branching_for("consult_rebut") == (36, 36)
    assert branching_for("debate3", 64) == (4, 4, 4)
    with pytest.raises(ValueError, match="3-th power"):
        branching_for("debate3", 81)
    with pytest.raises(ValueError, match="unknown protocol"):
        branching_for("debate5")
    with pytest.raises(ValueError, match="text protocol"):
        branching_for("critique")


def test_group_codes_and_control_permutations():
    gen = torch.Generator().manual_seed(1)
    tree = sample_tree("debate4", 8, gen, budget=16)
    debate = group_codes(tree.paths, slot_groups(tree, False))
    # A revealed slots 0 and 2 (code 1), B slots 1 and 3 (code 2)
    cells = tree.paths
    assert (debate.gather(-1, cells[..., [0, 2]]) == 1).all()
    assert (debate.gather(-1, cells[..., [1, 3]]) == 2).all()
    assert ((debate > 0).sum(-1) == 4).all()
    groups = slot_groups(tree, True, gen)
    control = group_codes(tree.paths, groups)
    # each play's four cells land in four different groups, in a fresh order per path
    assert (control.gather(-1, cells).sort(-1).values == torch.arange(1, 5)).all()
    orders = {tuple(g.tolist()) for g in groups.reshape(-1, 4)}
    assert len(orders) > 12  # 128 paths over 24 permutations
    with pytest.raises(ValueError, match="consultancy"):
        slot_groups(sample_tree("consultancy", 2, gen, budget=4), True, gen)


def test_all_permutations_appear_uniformly():
    gen = torch.Generator().manual_seed(2)
    groups = slot_groups(sample_tree("debate2", 50, gen, budget=1296), True, gen)
    perms = list(itertools.permutations(range(4)))
    index = {p: i for i, p in enumerate(perms)}
    counts = np.bincount([index[tuple(g)] for g in groups.reshape(-1, 4).tolist()], minlength=24)
    expected = counts.sum() / 24
    assert np.abs(counts - expected).max() < 5 * expected**0.5


def _walk_topk(leaf_value, branching, k, depth=0, prefix=0):
    """Value of the subtree under top-k quantilisers (mean of the best k children)."""
    if depth == len(branching):
        return leaf_value(prefix)
    kids = [_walk_topk(leaf_value, branching, k, depth + 1, prefix * branching[depth] + c)
            for c in range(branching[depth])]  # fmt: skip
    kids.sort(reverse=depth % 2 == 0)
    best = kids[: min(k, len(kids))]
    return sum(best) / len(best)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("rule", ["asym", "sym"])
def test_quantilised_play_values_equal_a_top_k_walk(k, rule):
    """Capability k: node values are means of the best k children at every turn (distinct
    values, so no ties), the claim is the best root column, and the realised leaf is drawn
    only among the leaves a top-k player can reach."""
    from debatelab.games.sampled import solve_tree_policy
    from debatelab.policies import TopK

    rng = np.random.default_rng(k)
    branching = (3, 4)
    raw = rng.random((1, 12, K))
    leaves = rule_leaves(torch.tensor(raw), rule, False, False)
    gen = torch.Generator().manual_seed(0)
    got = solve_tree_policy(leaves, branching, rule, [TopK(k)] * 2, gen, K)
    cols = leaves.shape[-1]
    roots = [_walk_topk(lambda i, c=c: float(leaves[0, i, c]), branching, k) for c in range(cols)]
    if rule == "sym":
        grid = np.array(roots).reshape(K, K)
        claim = int(np.argmax(grid.min(axis=1)))
        assert int(got.b_claim[0]) == int(np.argmin(grid[claim]))
        column = claim * K + int(got.b_claim[0])
    else:
        claim = column = int(np.argmax(roots))
    assert int(got.claim[0]) == claim
    # reachable leaves: A's top-k children, then each one's top-k grandchildren
    vals = leaves[0, :, column].reshape(3, 4).numpy()
    a_values = np.array([np.sort(row)[: min(k, 4)].mean() for row in vals])
    a_top = np.argsort(-a_values)[:k]
    reachable = {int(a) * 4 + int(b) for a in a_top for b in np.argsort(vals[a])[:k]}
    seen = set()
    for seed in range(40):
        draw = solve_tree_policy(leaves, branching, rule, [TopK(k)] * 2,
                                 torch.Generator().manual_seed(seed), K)  # fmt: skip
        seen.add(int(draw.leaf[0]))
    assert seen <= reachable and (len(seen) > 1) == (k > 1)


def test_exact_policy_play_matches_the_first_index_search_without_ties():
    from debatelab.games.sampled import solve_tree_policy
    from debatelab.policies import TopK

    rng = np.random.default_rng(5)
    leaves = torch.tensor(rng.random((6, 16, K)))
    first = solve_tree((leaves), (2, 2, 2, 2), "asym", K)
    drawn = solve_tree_policy(leaves, (2, 2, 2, 2), "asym", [TopK(1)] * 4,
                              torch.Generator().manual_seed(0), K)  # fmt: skip
    assert torch.equal(first.claim, drawn.claim) and torch.equal(first.leaf, drawn.leaf)
    assert torch.allclose(first.value, drawn.value)
