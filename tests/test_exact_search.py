"""The exact search of the trained-judge games (``--search exact``) against brute force.

- Labelled-mask universes: index and cells/groups convert both ways, in combinations order.
- The exact tree holds every candidate once (every mask / pair split / ordered reveal).
- The factorised leaf scores equal the judge's batched forward (1e-5) for every design and
  input encoding: consultancy, debate, control; one and two class queries.
- Exact play equals an exhaustive recursive walk over the legal moves of the game itself
  (cells not yet revealed, the lowest cells first on ties), with leaf values from the judge's
  plain forward: the claim, B's class, the realised cells and the value.
"""

from __future__ import annotations

import itertools
from math import comb, perm

import numpy as np
import pytest
import torch

from debatelab.games.sampled import exact_tree, group_codes, slot_groups
from debatelab.games.sampled_play import evaluate_trained_judge, family_universe, play, tree_scores
from debatelab.geometry import Grid, LabelledMasks
from debatelab.judges.onpolicy import GROUPS, OnPolicyJudge, make_model

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize(
    "universe",
    [
        LabelledMasks.masks(7, 3),
        LabelledMasks.splits(7, 2, 2),
        LabelledMasks.permuted(6, 3),
        LabelledMasks.masks(5, 0),
    ],  # fmt: skip
)
def test_labelled_masks_index_both_ways(universe):
    n = len(universe)
    index = np.arange(n)
    cells, groups = universe.unrank(index)
    assert np.array_equal(universe.rank(cells, groups), index)
    # any order of a play's cells gives the same index
    rng = np.random.default_rng(0)
    order = np.argsort(rng.random(cells.shape), axis=1)
    shuffled = np.take_along_axis(cells, order, 1), np.take_along_axis(groups, order, 1)
    assert np.array_equal(universe.rank(*shuffled), index)
    # labels agree with unrank; masks in combinations order, labellings inside each mask
    labels = universe.labels()
    expect = np.zeros((n, universe.n_cells), dtype=np.uint8)
    np.put_along_axis(expect, cells, (groups + 1).astype(np.uint8), axis=1)
    assert np.array_equal(labels, expect)
    masks = list(itertools.combinations(range(universe.n_cells), universe.reveal))
    assert [tuple(c) for c in cells[:: len(universe.labellings)]] == masks
    assert len({labels[i].tobytes() for i in range(n)}) == n  # every input once


def test_a_play_outside_the_universe_is_refused():
    u = LabelledMasks.splits(9, 2, 2)
    with pytest.raises(ValueError, match="not one of this universe's labellings"):
        u.rank(np.array([[0, 1, 2, 3]]), np.array([[0, 0, 0, 1]]))  # three cells of A
    with pytest.raises(ValueError, match="groups must lie"):
        u.rank(np.array([[0, 1, 2, 3]]), np.array([[0, 0, 2, 1]]))


@pytest.mark.parametrize("n_cells", [6, 9])
def test_the_exact_tree_holds_every_candidate_once(n_cells):
    cons = exact_tree("consultancy", 1, n_cells)
    assert {tuple(p) for p in cons.paths[0].tolist()} == set(
        itertools.combinations(range(n_cells), 4)
    )
    two = exact_tree("debate2", 1, n_cells)
    plays = [(tuple(p[:2]), tuple(p[2:])) for p in two.paths[0].tolist()]
    assert len(plays) == len(set(plays)) == comb(n_cells, 2) * comb(n_cells - 2, 2)
    assert all(a[0] < a[1] and b[0] < b[1] and not set(a) & set(b) for a, b in plays)
    # nested order: each A-pair's B-pairs are one block of the branching
    a_of_leaf = two.paths[0, :, :2].reshape(two.branching + (2,))
    assert (a_of_leaf == a_of_leaf[:, :1]).all()
    four = exact_tree("debate4", 1, n_cells)
    assert four.branching == (n_cells, n_cells - 1, n_cells - 2, n_cells - 3)
    assert [tuple(p) for p in four.paths[0].tolist()] == list(
        itertools.permutations(range(n_cells), 4)
    )
    assert four.paths.shape[1] == perm(n_cells, 4)


def _judge(design, family, rule, grid=3, seed=0):
    queries = 0 if design == "D1" else (1 if rule == "asym" or family == "consultancy" else 2)
    torch.manual_seed(seed)
    model = make_model(design, 1, GROUPS[family], queries)
    with torch.no_grad():  # larger weights spread the scores: a sharper test, fewer near-ties
        for p in model.parameters():
            p.mul_(2.0)
    return OnPolicyJudge(design, model.eval(), family, rule, Grid(18, grid))


ENCODINGS = [  # (design, family, rule, protocol)
    ("D1", "consultancy", "asym", "consultancy"),
    ("D1", "debate", "sym", "debate2"),
    ("D1", "control", "asym", "debate4"),
    ("D3", "consultancy", "asym", "consultancy"),
    ("D3", "debate", "asym", "debate4"),
    ("D3", "debate", "sym", "debate2"),
    ("D3", "control", "last_b", "debate2"),
    ("D2", "debate", "last_b", "debate4"),
    ("D2", "control", "asym", "debate4"),
]


@pytest.mark.parametrize("design,family,rule,protocol", ENCODINGS)
def test_factorised_leaf_scores_equal_the_batched_forward(design, family, rule, protocol):
    """On the 3 x 3 grid (9 cells of 6 x 6 pixels) every leaf of the exact tree; the same code
    builds the 6 x 6 grid's tables (checked on a sample in the next test)."""
    judge = _judge(design, family, rule)
    images = torch.randn(2, 1, 18, 18, generator=torch.Generator().manual_seed(1))
    tree = exact_tree(protocol, 2, judge.n_cells)
    groups = slot_groups(tree, family == "control", torch.Generator().manual_seed(2))
    fast = tree_scores(judge, images, tree, groups, "exact")
    naive = tree_scores(judge, images, tree, groups, "sampled")
    assert fast.shape == naive.shape and fast.shape[1] == tree.n_leaves
    assert (fast - naive).abs().max() <= 1e-5


@pytest.mark.parametrize("family,n", [("consultancy", 58905), ("debate", 353430)])
def test_factorised_scores_on_the_published_grid(family, n, mnist):
    """The 6 x 6 grid of the study on real images: the whole universe fast, 3,000 of its
    inputs checked against the judge's forward."""
    judge = _judge("D1", family, "asym", grid=6, seed=3)
    universe = family_universe(family, 36)
    x = mnist.x_test[:2]
    fast = judge.universe_scores(x, universe)
    assert fast.shape == (2, n, 10)
    pick = np.random.default_rng(0).choice(n, size=3000, replace=False)
    cells, groups = universe.unrank(pick)
    codes = group_codes(torch.from_numpy(cells), torch.from_numpy(groups), 36)
    for i in range(len(x)):
        naive = judge.claim_scores(x[i : i + 1].expand(len(pick), -1, -1, -1), codes)
        assert (fast[i, pick] - naive).abs().max() <= 1e-5


def _leaf_value(scores, rule, conditioned, a, b=None):
    s = scores
    if not conditioned:
        return {"asym": lambda: s[a], "sym": lambda: s[a] - s[b],
                "last_b": lambda: s[a] - s.max()}[rule]()  # fmt: skip
    return {"asym": lambda: s[a], "sym": lambda: s[a, b], "last_b": lambda: s[a].min()}[rule]()


def _brute_force(judge, image, protocol, rule):
    """Claim, B's class, realised (A's cells, B's cells) and value by a recursive walk over the
    legal moves, leaf scores from the judge's forward on each play."""
    n = judge.n_cells
    cache = {}

    def scores(a_cells, b_cells):
        key = (frozenset(a_cells), frozenset(b_cells))
        if key not in cache:
            code = torch.zeros(1, n, dtype=torch.long)
            code[0, list(a_cells)] = 1
            code[0, list(b_cells)] = 1 if protocol == "consultancy" else 2
            with torch.no_grad():
                cache[key] = judge.claim_scores(image[None], code)[0].double().numpy()
        return cache[key]

    moves = {"consultancy": [("A", 4)], "debate2": [("A", 2), ("B", 2)],
             "debate4": [("A", 1), ("B", 1), ("A", 1), ("B", 1)]}[protocol]  # fmt: skip

    def walk(columns, depth, a_cells, b_cells):
        if depth == len(moves):
            return _leaf_value(scores(a_cells, b_cells), rule, judge.conditioned, *columns), (
                a_cells, b_cells)  # fmt: skip
        player, k = moves[depth]
        used = set(a_cells) | set(b_cells)
        best = None
        for pick in itertools.combinations([c for c in range(n) if c not in used], k):
            a2, b2 = (a_cells + pick, b_cells) if player == "A" else (a_cells, b_cells + pick)
            v, leaf = walk(columns, depth + 1, a2, b2)
            if best is None or (v > best[0] if player == "A" else v < best[0]):
                best = (v, leaf)
        return best

    if protocol == "consultancy":  # the first (mask, class) of best score, mask-major
        best = None
        for mask in itertools.combinations(range(n), 4):
            s = scores(mask, ())
            for c in range(10):
                if best is None or s[c] > best[0]:
                    best = (s[c], c, mask)
        return best[1], None, (best[2], ()), best[0]
    if rule == "sym":
        grid = [[walk((a, b), 0, (), ()) for b in range(10)] for a in range(10)]
        worst = [min(v for v, _ in row) for row in grid]
        claim = worst.index(max(worst))
        col = [v for v, _ in grid[claim]]
        b_claim = col.index(min(col))
        return claim, b_claim, grid[claim][b_claim][1], grid[claim][b_claim][0]
    roots = [walk((a,), 0, (), ()) for a in range(10)]
    values = [v for v, _ in roots]
    claim = values.index(max(values))
    b_claim = None
    if rule == "last_b" and judge.conditioned:
        at = scores(*roots[claim][1])[claim]
        b_claim = int(np.argmin(at))
    return claim, b_claim, roots[claim][1], roots[claim][0]


@pytest.mark.parametrize(
    "design,protocol,rule",
    [
        ("D1", "consultancy", "asym"),
        ("D1", "debate2", "asym"),
        ("D1", "debate2", "sym"),
        ("D1", "debate4", "last_b"),
        ("D3", "debate2", "last_b"),
        ("D3", "debate4", "sym"),
        ("D2", "debate4", "asym"),
    ],  # fmt: skip
)
def test_exact_play_equals_a_walk_over_the_legal_moves(design, protocol, rule):
    family = "consultancy" if protocol == "consultancy" else "debate"
    judge = _judge(design, family, rule, seed=5)
    images = torch.randn(2, 1, 18, 18, generator=torch.Generator().manual_seed(6))
    got = play(judge, images, protocol, rule, False, torch.Generator(), search="exact")
    for i in range(len(images)):
        claim, b_claim, (a_cells, b_cells), value = _brute_force(judge, images[i], protocol, rule)
        assert int(got.claim[i]) == claim
        if b_claim is not None:
            assert int(got.b_claim[i]) == b_claim
        expect = torch.zeros(judge.n_cells, dtype=torch.long)
        expect[list(a_cells)] = 1
        expect[list(b_cells)] = 2
        assert torch.equal(got.codes[i], expect)
        assert float(got.value[i]) == pytest.approx(value, abs=1e-5)


def test_exact_evaluation_runs_through_the_public_api():
    """`evaluate_trained_judge(..., search="exact")`: its realised plays are the exact ones
    (a judge's selection under exact search equals the fraction of images whose exact claim is
    the label), and an unknown search is one clear error."""
    judge = _judge("D1", "debate", "asym")
    images = torch.randn(4, 1, 18, 18, generator=torch.Generator().manual_seed(7))
    claims = play(judge, images, "debate2", "asym", False, torch.Generator(), search="exact").claim
    labels = claims.clone()
    labels[:2] = (labels[:2] + 1) % 10
    m = evaluate_trained_judge(judge, images, labels, protocol="debate2", rule="asym",
                               search="exact", batch=3)  # fmt: skip
    assert m["selection_accuracy"] == 0.5
    with pytest.raises(ValueError, match="unknown search 'greedy'"):
        evaluate_trained_judge(judge, images, labels, protocol="debate2", rule="asym",
                               search="greedy")  # fmt: skip


def _bit_judge(family, rule):
    queries = 1 if rule == "asym" or family == "consultancy" else 2
    torch.manual_seed(5)
    model = make_model("bit", 1, GROUPS[family], queries, 18, n_bits=4)
    return OnPolicyJudge("bit", model.eval(), family, rule, Grid(18, 6))


@pytest.mark.parametrize("design,family,rule,protocol", ENCODINGS + [
    ("bit", "debate", "last_b", "debate2"), ("bit", "consultancy", "asym", "consultancy")])  # fmt: skip
def test_sampled_leaves_through_the_factorised_trunk_equal_the_batched_forward(
    design, family, rule, protocol, mnist
):
    """The published 6 x 6 grid, a sampled tree on real images: the factorised trunk on just
    the tree's leaves (the CPU evaluation's scorer) equals the batched forward (1e-5), and the
    realised plays are the same."""
    judge = _bit_judge(family, rule) if design == "bit" else _judge(design, family, rule, grid=6)
    x = mnist.x_test[:3]
    from debatelab.games.sampled import sample_tree

    tree = sample_tree(protocol, 3, torch.Generator().manual_seed(4), 36, 256)
    groups = slot_groups(tree, family == "control", torch.Generator().manual_seed(2))
    fast = tree_scores(judge, x, tree, groups, scorer="factorised")
    naive = tree_scores(judge, x, tree, groups, scorer="batched")
    assert fast.shape == naive.shape and fast.shape[1] == tree.n_leaves
    assert (fast - naive).abs().max() <= 1e-5
    plays = [play(judge, x, protocol, rule, family == "control",
                  torch.Generator().manual_seed(9), 256, scorer=s)
             for s in ("factorised", "batched")]  # fmt: skip
    assert torch.equal(plays[0].codes, plays[1].codes)
    assert torch.equal(plays[0].claim, plays[1].claim)
    with pytest.raises(ValueError, match="unknown scorer"):
        tree_scores(judge, x, tree, groups, scorer="fast")
