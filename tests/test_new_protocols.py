"""The protocols no seed ran, debate3 (A 1, B 2, A 1) and consult_rebut (A 3, B 1), through the
sampled on-policy search and the exact search, read from :mod:`debatelab.protocols`.

- Sampled trees: the published-budget branching (12 x 12 x 9, 36 x 36), the players' cells.
- The exact tree holds every legal play once, in the nested combinations order.
- The minimax follows the protocol's players (also a non-alternating order) against an
  exhaustive walk over random leaves, ties to the first index.
- Exact play of a judge equals a recursive walk over the legal moves (3 x 3 grid), for D1, D3
  and D2 under each rule; the factorised leaf scores equal the batched forward.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from debatelab.games.sampled import (
    TIE_RULE,
    exact_tree,
    rule_leaves,
    sample_tree,
    slot_groups,
    solve_tree,
)
from debatelab.games.sampled_play import (
    check_judge,
    family_of,
    play,
    protocol_universe,
    tree_scores,
)
from debatelab.geometry import Grid
from debatelab.judges.designs import design
from debatelab.judges.onpolicy import GROUPS, OnPolicyJudge
from debatelab.protocols import TIE_RULES, protocol

pytestmark = pytest.mark.usefixtures("one_torch_thread")
NEW = ("debate3", "consult_rebut")


def test_the_published_branching_and_the_players_cells():
    assert TIE_RULE == "first" and TIE_RULE in TIE_RULES
    gen = torch.Generator().manual_seed(0)
    for name, branching, owners in (("debate3", (12, 12, 9), [0, 1, 1, 0]),
                                    ("consult_rebut", (36, 36), [0, 0, 0, 1])):  # fmt: skip
        tree = sample_tree(name, 3, gen)
        assert tree.branching == branching and tree.n_leaves == 1296
        assert tree.owners.tolist() == owners
        assert tree.maximize == protocol(name).maximize
        paths = tree.paths.reshape(3, -1, 4)
        assert all(len(set(p)) == 4 for p in paths.reshape(-1, 4).tolist())  # distinct cells
        # each node's candidates share the node's path
        first = tree.paths.reshape((3,) + branching + (4,))[..., :1]
        assert (first == first.reshape(3, branching[0], -1, 1)[:, :, :1].reshape(
            (3, branching[0]) + (1,) * (len(branching) - 1) + (1,))).all()  # fmt: skip
        groups = slot_groups(tree, False)
        assert groups[0, 0].tolist() == owners
    assert family_of("debate3", False) == "debate" and family_of("consult_rebut", True) == "control"
    assert len(protocol_universe("consult_rebut", False, 9).labellings) == 4  # B: 1 of 4
    assert protocol_universe("debate3", False, 9).groups == 2


@pytest.mark.parametrize("name", NEW)
def test_the_exact_tree_holds_every_play_once(name):
    n = 7
    tree = exact_tree(name, 1, n)
    proto = protocol(name)

    def walk(prefix, t):
        if t == len(proto.turns):
            yield prefix
            return
        left = [c for c in range(n) if c not in prefix]
        for pick in itertools.combinations(left, proto.turns[t].reveals):
            yield from walk(prefix + pick, t + 1)

    assert [tuple(p) for p in tree.paths[0].tolist()] == list(walk((), 0))
    assert tree.players == proto.players


def _walk_leaves(values, branching, maximize):
    """Value and first best leaf of each column by recursion, ties to the first index."""
    n_columns = values.shape[-1]
    out = []
    for col in range(n_columns):

        def node(t, base, col=col):
            if t == len(branching):
                return values[base, col], base
            best = None
            span = int(np.prod(branching[t + 1 :]))
            for k in range(branching[t]):
                v, leaf = node(t + 1, base + k * span, col)
                if best is None or (v > best[0] if maximize[t] else v < best[0]):
                    best = (v, leaf)
            return best

        out.append(node(0, 0))
    return out


@pytest.mark.parametrize("maximize", [(True, False, True), (True, True, False),
                                      (True, False, False)])  # fmt: skip
def test_the_minimax_follows_the_protocol_players(maximize):
    branching = (3, 2, 3)
    rng = np.random.default_rng(len(maximize) + sum(maximize) * 7)
    for _ in range(20):
        leaves = rng.integers(0, 4, size=(1, 18, 10)).astype(np.float64)  # many ties
        got = solve_tree(torch.from_numpy(leaves), branching, "asym", 10, maximize)
        walked = _walk_leaves(leaves[0], branching, maximize)
        roots = [v for v, _ in walked]
        claim = roots.index(max(roots))
        assert int(got.claim[0]) == claim
        assert int(got.leaf[0]) == walked[claim][1]
        assert float(got.value[0]) == walked[claim][0]


def _judge(design_name, family, rule, proto, seed=5):
    spec = design(design_name)
    torch.manual_seed(seed)
    model = spec.build(1, GROUPS[family], spec.queries(proto, rule))
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(2.0)
    return OnPolicyJudge(design_name, model.eval(), family, rule, Grid(18, 3))


def _leaf_value(s, rule, conditioned, a, b=None):
    if not conditioned:
        return {"asym": lambda: s[a], "sym": lambda: s[a] - s[b],
                "last_b": lambda: s[a] - s.max()}[rule]()  # fmt: skip
    return {"asym": lambda: s[a], "sym": lambda: s[a, b], "last_b": lambda: s[a].min()}[rule]()


def _brute_force(judge, image, name, rule):
    """Claim, B's class, realised cells and value by a recursive walk over the legal moves of
    the protocol's turns, leaf scores from the judge's plain forward on each play."""
    n = judge.n_cells
    turns = [(t.player, t.reveals) for t in protocol(name).turns]
    cache = {}

    def scores(a_cells, b_cells):
        key = (frozenset(a_cells), frozenset(b_cells))
        if key not in cache:
            code = torch.zeros(1, n, dtype=torch.long)
            code[0, list(a_cells)] = 1
            code[0, list(b_cells)] = 2
            with torch.no_grad():
                cache[key] = judge.claim_scores(image[None], code)[0].double().numpy()
        return cache[key]

    def walk(columns, depth, a_cells, b_cells):
        if depth == len(turns):
            value = _leaf_value(scores(a_cells, b_cells), rule, judge.conditioned, *columns)
            return value, (a_cells, b_cells)
        player, k = turns[depth]
        used = set(a_cells) | set(b_cells)
        best = None
        for pick in itertools.combinations([c for c in range(n) if c not in used], k):
            a2, b2 = (a_cells + pick, b_cells) if player == "A" else (a_cells, b_cells + pick)
            v, leaf = walk(columns, depth + 1, a2, b2)
            if best is None or (v > best[0] if player == "A" else v < best[0]):
                best = (v, leaf)
        return best

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
        b_claim = int(np.argmin(scores(*roots[claim][1])[claim]))
    return claim, b_claim, roots[claim][1], roots[claim][0]


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("design_name,rule", [("D1", "asym"), ("D1", "sym"), ("D3", "last_b"),
                                              ("D2", "sym")])  # fmt: skip
def test_exact_play_equals_a_walk_over_the_legal_moves(name, design_name, rule):
    judge = _judge(design_name, "debate", rule, name)
    check_judge(judge, name, rule, False)
    images = torch.randn(2, 1, 18, 18, generator=torch.Generator().manual_seed(6))
    got = play(judge, images, name, rule, False, torch.Generator(), search="exact")
    for i in range(len(images)):
        claim, b_claim, (a_cells, b_cells), value = _brute_force(judge, images[i], name, rule)
        assert int(got.claim[i]) == claim
        if b_claim is not None:
            assert int(got.b_claim[i]) == b_claim
        expect = torch.zeros(judge.n_cells, dtype=torch.long)
        expect[list(a_cells)] = 1
        expect[list(b_cells)] = 2
        assert torch.equal(got.codes[i], expect)
        assert float(got.value[i]) == pytest.approx(value, abs=1e-5)


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("design_name,family,rule", [("D1", "debate", "asym"),
                                                     ("D3", "control", "sym"),
                                                     ("D2", "debate", "last_b")])  # fmt: skip
def test_factorised_leaf_scores_equal_the_batched_forward(name, design_name, family, rule):
    judge = _judge(design_name, family, rule, name)
    images = torch.randn(2, 1, 18, 18, generator=torch.Generator().manual_seed(1))
    control = family == "control"
    exact = exact_tree(name, 2, judge.n_cells)
    sampled = sample_tree(name, 2, torch.Generator().manual_seed(3), judge.n_cells, 64)
    for tree, ways in ((exact, (("exact", "batched"), ("sampled", "factorised"))),
                       (sampled, (("sampled", "factorised"),))):  # fmt: skip
        groups = slot_groups(tree, control, torch.Generator().manual_seed(2))
        naive = tree_scores(judge, images, tree, groups, "sampled", scorer="batched")
        for search, scorer in ways:
            fast = tree_scores(judge, images, tree, groups, search, scorer=scorer)
            assert fast.shape == naive.shape and (fast - naive).abs().max() <= 1e-5
        leaves = rule_leaves(naive, rule, judge.conditioned, False)
        assert leaves.shape[:2] == (2, tree.n_leaves)
