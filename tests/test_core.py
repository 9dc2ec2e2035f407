"""The game core: one level reducer with one tie rule, against brute force, and every fast path
(text sweeps and bootstrap kernels, the subset solver's prefix sums) against the core."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest

from debatelab.games.core import (
    Game,
    Level,
    alternate,
    pool_game,
    reduce_level,
    reveal_game,
    sampled_tree,
    solve,
    solve_pool,
)
from debatelab.games.lines import move_weights, node_values
from debatelab.games.ranked import (
    RankedChildren,
    cumsum_last,
    pack_with_aux,
    resolve,
    sort_with_aux,
    unpack_sorted,
)
from debatelab.games.solver import (
    leaf_columns,
    normalise_capability,
    solve_capabilities,
    solve_reveal_game,
)
from debatelab.games.tables import game_tables
from debatelab.policies import BestOfN, Exact, TopK, Uniform, play_weights, tie_shared
from debatelab.text.solve import (
    draws_policy,
    level_values,
    nested_best_of_n,
    presort,
    proposer_level,
    sweep_arrays,
    text_policy,
)

#: Every policy kind: TopK(2) and TopK(3) straddle tie blocks, TopK(50) exceeds every node's
#: options (clamped: uniform play).
ALL = [Exact(), TopK(1), TopK(2), TopK(3), TopK(4), TopK(50), BestOfN(3), Uniform()]
#: Values on a 1/16 grid (deliberate ties) stay exact in binary under policies whose rank
#: weights are dyadic (``dyadic``): then a tie between computed node values is a tie in every
#: implementation. (Otherwise a tie in exact arithmetic may be broken by the last bit of one
#: summation order, and the tie rule, a discontinuous function, follows that bit.) So the
#: policies below the root are dyadic at their nodes' sizes; the root may play anything.
GRID = 16
ATOL = 1e-12


# --------------------------------------------------------------------------------------------
# brute force: the tie rule as the average over every tie-breaking order, every play path


def dyadic(policy, n: int) -> bool:
    """Whether ``policy``'s rank weights among ``n`` are exact binary fractions."""
    w = policy.rank_weights(n) * 2.0**40
    return bool(np.all(w == np.round(w)))


def on_grid(x, grid: int = GRID):
    return np.round(np.asarray(x) * grid) / grid


def brute_node_weights(vals, counts, policy, maximize):
    """Weights on children (covering their copies) averaged over every order of the copies:
    each order is sorted stably best-first and gets the policy's rank weights. Independent of
    the block arithmetic of ``tie_shared``."""
    copies = [j for j, c in enumerate(counts) for _ in range(int(c))]
    rw = policy.rank_weights(len(copies))
    w = np.zeros(len(vals))
    perms = list(itertools.permutations(range(len(copies))))
    for perm in perms:
        ranked = sorted((copies[i] for i in perm), key=lambda j: -vals[j] if maximize else vals[j])
        for rank, j in enumerate(ranked):
            w[j] += rw[rank]
    return w / len(perms)


def brute_node_value(vals, counts, policy, maximize):
    """The node value: rank weights on the sorted copies (every tie-breaking order gives the
    same sum, since tied values are equal)."""
    copies = sorted((vals[j] for j, c in enumerate(counts) for _ in range(int(c))),
                    reverse=maximize)  # fmt: skip
    return float(np.dot(policy.rank_weights(len(copies)), copies))


def brute_solve(game: Game, leaf, carried, policies):
    """Recursive node values and weights, then every root-to-leaf path with its probability."""
    values = {}
    weights = {}

    def value(t, node):
        if t == game.n_levels:
            return leaf[node]
        if (t, node) not in values:
            lv = game.levels[t]
            kids = lv.children[node]
            vals = [value(t + 1, int(c)) for c in kids]
            counts = np.ones(len(kids)) if lv.counts is None else lv.counts[node]
            weights[(t, node)] = brute_node_weights(vals, counts, policies[t], lv.maximize)
            values[(t, node)] = brute_node_value(vals, counts, policies[t], lv.maximize)
        return values[(t, node)]

    value(0, 0)
    root_value = root_carried = 0.0
    leaf_reach = np.zeros(game.n_leaves)
    paths = [(0, 0, 1.0)]  # (level, node, probability)
    while paths:
        t, node, prob = paths.pop()
        if t == game.n_levels:
            root_value += prob * leaf[node]
            root_carried += prob * carried[node]
            leaf_reach[node] += prob
            continue
        for o, child in enumerate(game.levels[t].children[node]):
            paths.append((t + 1, int(child), prob * weights[(t, node)][o]))
    return values, weights, root_value, root_carried, leaf_reach


@pytest.mark.parametrize("policy", ALL, ids=repr)
@pytest.mark.parametrize("maximize", [True, False])
def test_tie_rule_is_the_average_over_tie_breaking_orders(policy, maximize):
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(1, 6))
        vals = np.round(rng.random(n) * 0.4, 1)  # values in {0, .1, .2, .3, .4}: many ties
        counts = rng.integers(0, 3, n)
        counts[rng.integers(n)] += 1  # at least one copy
        counts = counts if counts.sum() <= 6 else np.minimum(counts, 1)
        want = brute_node_weights(vals, counts, policy, maximize)
        got = play_weights(vals, [policy], maximize, counts)[0]
        np.testing.assert_allclose(got, want, rtol=0, atol=ATOL)
        plain = brute_node_weights(vals, np.ones(n), policy, maximize)
        np.testing.assert_allclose(play_weights(vals, [policy], maximize)[0], plain, atol=ATOL)


def test_tie_rule_shares_per_copy():
    # sorted values 5, 3, 3, 1 with counts 1, 2, 1, 1: top-2 covers the 5 and one of three 3s
    w = tie_shared(np.array([5.0, 3.0, 3.0, 1.0]), np.array([0.5, 0.5, 0, 0]),
                   counts=np.array([1, 2, 1, 1]))  # fmt: skip
    np.testing.assert_allclose(w, [0.5, 2 / 6, 1 / 6, 0.0])
    # a zero-count child holds no rank and gets nothing, even inside a tie block
    w = tie_shared(np.array([2.0, 2.0, 1.0]), np.array([1.0, 0.0, 0.0]), np.array([1, 0, 1]))
    np.testing.assert_allclose(w, [1.0, 0.0, 0.0])


@pytest.mark.parametrize("seed", range(4))
def test_core_equals_brute_force_on_a_tiny_tree(seed):
    rng = np.random.default_rng(seed)
    branching = (4, 2, 4)
    ids = rng.integers(0, 12, 32)  # repeated plays share a leaf (as sampled masks do)
    counts = [np.array([2, 0, 1, 1]), None, rng.multinomial(4, [0.25] * 4, size=8)]
    game = sampled_tree(branching, ids, n_leaves=12, counts=counts)
    leaf = np.round(rng.random(12) * 8) / 8  # ties, exact in binary
    carried = rng.integers(0, 2, 12).astype(float)
    kinds = [Exact(), TopK(2), BestOfN(3), Uniform(), TopK(9)]
    for pols in itertools.product(kinds, repeat=3):
        pols = list(pols)
        values, weights, root_value, root_carried, leaf_reach = brute_solve(game, leaf, carried,
                                                                            pols)  # fmt: skip
        sol = solve(game, leaf, pols, carried)
        assert sol.root_value[0] == pytest.approx(root_value, abs=ATOL)
        assert sol.root_carried[0] == pytest.approx(root_carried, abs=ATOL)
        for (t, node), w in weights.items():
            np.testing.assert_allclose(sol.weights[t][node], w, atol=ATOL)
            assert sol.values[t][node] == values[(t, node)]  # exact: dyadic arithmetic
        np.testing.assert_allclose(sol.reach()[-1], leaf_reach, atol=ATOL)
    assert game.levels[0].maximize and not game.levels[1].maximize
    assert game.n_nodes == (1, 4, 8, 12)


def test_reach_is_the_play_distribution():
    game = reveal_game(6, (1, 1, 1))
    rng = np.random.default_rng(1)
    leaf = np.round(rng.random((2, game.n_leaves)), 1)
    sol = solve(game, leaf, alternate(TopK(2), BestOfN(2), 3), carried=leaf)
    reach = sol.reach()
    for t, r in enumerate(reach):
        assert r.shape == (2, game.n_nodes[t])
        np.testing.assert_allclose(r.sum(axis=-1), 1.0, atol=ATOL)
    # the expected leaf under the play distribution is the game value (and the carried leaf)
    np.testing.assert_allclose((reach[-1] * leaf).sum(-1), sol.root_value[:, 0], atol=ATOL)
    np.testing.assert_allclose(sol.root_carried, sol.root_value, atol=ATOL)


# --------------------------------------------------------------------------------------------
# text pools: the text API (fast paths) against the core built from the pool


def _pool(rng, g, shape):
    scores = on_grid(rng.random((g, *shape)), 8)  # ties at every level, exact in binary
    correct = rng.integers(0, 2, (g, shape[0])).astype(float)
    counts = [rng.multinomial(k, [1 / k] * k, size=(g, *shape[:d]))
              for d, k in enumerate(shape)]  # fmt: skip
    return scores, correct, counts


def _straddles(values, k, maximize):
    """Whether some pool's k-th and (k+1)-th best values tie (TopK(k) cuts a tie block)."""
    s = np.sort(values, axis=-1)
    s = s[..., ::-1] if maximize else s
    return k < s.shape[-1] and bool((s[..., k - 1] == s[..., k]).any())


@pytest.mark.parametrize("shape", [(8,), (4, 4), (4, 2, 4)])
@pytest.mark.parametrize("with_counts", [False, True])
def test_text_api_equals_the_core(shape, with_counts):
    rng = np.random.default_rng(len(shape) + 10 * with_counts)
    g = 3
    scores, correct, counts = _pool(rng, g, shape)
    depth = len(shape)
    inner = [p for p in ALL if all(dyadic(p, k) for k in shape[1:])]
    assert {type(p) for p in inner} == {Exact, TopK, BestOfN, Uniform}
    assert TopK(2) in inner and TopK(50) in inner  # k inside tie blocks and k > n
    grid = [ALL] + [inner] * (depth - 1) + [[None]] * (3 - depth)
    names = ("proposals", "critiques", "rebuttals")
    cdict = dict(zip(names, counts, strict=False)) if with_counts else None
    acc, win, w = sweep_arrays(scores, correct, *grid, counts=cdict, want_weights=True)
    # the same counts through the presorted kernel (counts in sorted order, as the bootstrap)
    if depth > 1:
        order = np.argsort(-scores if depth == 3 else scores, axis=-1, kind="stable")
        sorted_scores = np.take_along_axis(scores, order, -1)
        np.testing.assert_array_equal(sorted_scores, presort(scores))
        pc = dict(cdict or {})
        last = names[depth - 1]
        if with_counts:
            pc.pop(last)
            pc[f"{last}_cumulative"] = np.cumsum(np.take_along_axis(counts[-1], order, -1), -1)
        acc2, win2, w2 = sweep_arrays(sorted_scores, correct, *grid, counts=pc,
                                      want_weights=True, presorted=True)  # fmt: skip
        np.testing.assert_allclose(acc2, acc, atol=ATOL)
        np.testing.assert_allclose(win2, win, atol=ATOL)
        np.testing.assert_allclose(w2, w, atol=ATOL)
    for combo in itertools.product(*[range(len(x)) for x in grid]):
        pols = [grid[d][i] for d, i in enumerate(combo)][:depth]
        sol = solve_pool(scores, correct, pols, counts if with_counts else None, depth=depth)
        at = (slice(None), *combo)
        np.testing.assert_allclose(acc[at], sol.root_carried[:, 0], rtol=0, atol=ATOL)
        np.testing.assert_allclose(win[at], sol.root_value[:, 0], rtol=0, atol=ATOL)
        np.testing.assert_allclose(w[at], sol.weights[0][:, 0], rtol=0, atol=ATOL)
        if not with_counts and combo[0] % 3 == 0:  # the single-question API
            for q in range(g):
                res = nested_best_of_n(scores[q], correct[q], *pols)
                assert res.accuracy == pytest.approx(sol.root_carried[q, 0], abs=ATOL)
                assert res.win_rate == pytest.approx(sol.root_value[q, 0], abs=ATOL)
                np.testing.assert_allclose(res.weights, sol.weights[0][q, 0], atol=ATOL)
                np.testing.assert_allclose(res.values, sol.values[1][q], atol=ATOL)
    # the grid exercised top-k cuts inside tie blocks at the innermost level and among proposals
    leaves = scores.reshape(g, -1, shape[-1])
    assert any(_straddles(leaves, k, depth != 2) for k in (2, 3, 4))
    if depth > 1:
        proposal_values = solve_pool(scores, correct, [TopK(3)] + inner[:1] * (depth - 1),
                                     depth=depth).values[1]  # fmt: skip
        assert any(_straddles(proposal_values, k, True) for k in (1, 2, 3))


def test_text_kernels_equal_the_core_reducer():
    """``level_values`` (plain, counts, presorted running sums, pattern bank) and
    ``proposer_level`` against :func:`reduce_level`, every policy kind, with ties and counts."""
    rng = np.random.default_rng(21)
    values = np.round(rng.random((4, 5, 6)), 1)  # one level: any values, any policy
    counts = rng.multinomial(6, [1 / 6] * 6, size=(4, 5))
    correct = rng.integers(0, 2, (4, 5, 6)).astype(float)
    pols = [*ALL, BestOfN(1)]
    for maximize in (True, False):
        core = reduce_level(values, pols, maximize, counts, correct)
        plain = reduce_level(values, pols, maximize)
        np.testing.assert_allclose(level_values(values, pols, maximize), plain.values,
                                   atol=ATOL)  # fmt: skip
        np.testing.assert_allclose(level_values(values, pols, maximize, counts), core.values,
                                   atol=ATOL)  # fmt: skip
        order = np.argsort(-values if maximize else values, axis=-1, kind="stable")
        s = np.take_along_axis(values, order, -1)
        c = np.take_along_axis(counts, order, -1)
        ends = np.cumsum(c, axis=-1)
        np.testing.assert_allclose(level_values(s, pols, maximize, c, presorted=True),
                                   core.values, atol=ATOL)  # fmt: skip
        np.testing.assert_allclose(level_values(s, pols, maximize, presorted=True,
                                                cumulative=ends), core.values, atol=ATOL)  # fmt: skip
        bank, pick = ends.reshape(-1, 6), np.arange(20).reshape(4, 5)
        np.testing.assert_allclose(level_values(s, pols, maximize, presorted=True,
                                                cumulative=(bank, pick)), core.values,
                                   atol=ATOL)  # fmt: skip
    acc, win, w = proposer_level(values, correct, pols, counts, want_weights=True)
    core = reduce_level(values, pols, True, counts, correct)
    np.testing.assert_allclose(acc, core.carried, atol=ATOL)
    np.testing.assert_allclose(win, core.values, atol=ATOL)
    np.testing.assert_allclose(w, core.weights, atol=ATOL)


def test_pool_game_structure_and_counts_forms():
    game = pool_game((4, 3, 2))
    assert game.n_nodes == (1, 4, 12, 24) and game.n_options == (4, 3, 2)
    assert [lv.maximize for lv in game.levels] == [True, False, True]
    rng = np.random.default_rng(2)
    cc = rng.multinomial(3, [1 / 3] * 3, size=(2, 4))
    a = pool_game((4, 3), {"critiques": cc})
    b = pool_game((4, 3), [None, cc])
    np.testing.assert_array_equal(a.levels[1].counts, b.levels[1].counts)
    assert a.levels[1].counts.shape == (2, 4, 3) and a.levels[0].counts is None
    with pytest.raises(ValueError, match="unknown pool level"):
        pool_game((4, 3), {"critics": cc})
    with pytest.raises(ValueError, match="critiques counts"):
        pool_game((4, 3), {"critiques": cc[..., :2]})
    with pytest.raises(ValueError, match="outside"):
        Game((Level(np.array([[0, 5]]), True),), 3)


# --------------------------------------------------------------------------------------------
# reveal games: the subset solver (prefix sums, straddles, unsorted exact/uniform) vs the core


def _reveal_caps(game):
    """Every (A, B) pair of ``ALL`` whose policies are dyadic at each non-root level they play
    (see ``GRID``); B's policy is irrelevant in a one-turn game."""

    def fits(policy, player):
        return all(dyadic(policy, n) for t, n in enumerate(game.n_options) if t % 2 == player
                   and t > 0)  # fmt: skip

    a_pols = [p for p in ALL if fits(p, 0)]
    b_pols = [p for p in ALL if fits(p, 1)] if game.n_levels > 1 else [Exact()]
    return [(a, b) for a in a_pols for b in b_pols]


def _reveal_probs(rng, n_images, n_cells, reveal, n_classes):
    p = rng.dirichlet(np.ones(n_classes), size=(n_images, comb(n_cells, reveal)))
    return on_grid(p)  # deliberate ties within and across masks, exact in binary


def _core_columns(probs, labels, n_cells, moves, cap, rule):
    game = reveal_game(n_cells, moves)
    leaf = leaf_columns(probs, rule)  # (n_images, n_columns, n_masks)
    correct = (probs.argmax(axis=2) == labels[:, None])[:, None, :].astype(float)
    sol = solve(game, leaf, alternate(*cap, game.n_levels), correct)
    return sol.root_value[..., 0], sol.root_carried[..., 0]  # (n_images, n_columns)


def _check_claims(out, ci, values, carried, rule, n_classes, exact: bool):
    """The solver's claim is a best claim by the core's values; its value and judge accuracy
    equal the core's there. With ``exact`` arithmetic (dyadic policies at every level) values
    are bit-equal and the claim is the core's first best class (B's first best reply under
    sym), ties between claims included. Returns how many claims were pinned down."""
    pinned = 0
    for i in range(values.shape[0]):
        claim = int(out["claim"][ci, i])
        if rule == "sym":
            v = values[i].reshape(n_classes, n_classes)
            per_claim = v.min(axis=1)
            b_ok = np.flatnonzero(v[claim] <= per_claim[claim] + ATOL)
            accs = carried[i].reshape(n_classes, n_classes)[claim, b_ok]
            assert np.abs(accs - out["judge_accuracy"][ci, i]).min() <= ATOL
            reply = int(v[claim].argmin())
            at_claim = carried[i].reshape(n_classes, n_classes)[claim, reply]
        else:
            per_claim = values[i]
            at_claim = carried[i, claim]
        best = np.flatnonzero(per_claim >= per_claim.max() - ATOL)
        assert claim in best
        assert out["value"][ci, i] == pytest.approx(per_claim[claim], abs=ATOL)
        if exact:
            assert claim == int(per_claim.argmax())
            assert out["value"][ci, i] == per_claim[claim]
        if exact or len(best) == 1:
            assert out["judge_accuracy"][ci, i] == pytest.approx(at_claim, abs=ATOL)
            pinned += 1
    return pinned


@pytest.mark.parametrize("n_cells", [6, 9])
@pytest.mark.parametrize("moves", [(2,), (1, 1), (1, 1, 1, 1)])
@pytest.mark.parametrize("rule", ["asym", "last_b", "sym"])
def test_subset_solver_equals_the_core(n_cells, moves, rule):
    rng = np.random.default_rng(n_cells * 100 + len(moves) * 10 + len(rule))
    n_images, n_classes = 4, 3
    probs = _reveal_probs(rng, n_images, n_cells, sum(moves), n_classes)
    labels = rng.integers(0, n_classes, n_images)
    game = reveal_game(n_cells, moves)
    caps = _reveal_caps(game)
    out = solve_capabilities(probs, n_cells, moves, caps, rule, labels, chunk_images=3)
    pinned = 0
    for ci, cap in enumerate(caps):
        values, carried = _core_columns(probs, labels, n_cells, moves, cap, rule)
        exact = dyadic(cap[0], game.n_options[0])
        pinned += _check_claims(out, ci, values, carried, rule, n_classes, exact)
        one = solve_reveal_game(probs, n_cells, moves, cap, rule, labels)  # one capability:
        for key in ("claim", "value", "judge_accuracy"):  # exact/uniform skip the sort
            np.testing.assert_allclose(one[key], out[key][ci], atol=ATOL)
    assert pinned >= len(caps) * n_images // 2


def test_reveal_games_cover_every_policy_kind():
    """Across the games above, A plays every policy of ``ALL`` (at the root, and below it where
    exact), B plays uniform, best-of-n and clamped top-k below the root (8 options)."""
    a_side, b_side = set(), set()
    for n_cells, moves in itertools.product([6, 9], [(2,), (1, 1), (1, 1, 1, 1)]):
        game = reveal_game(n_cells, moves)
        for a, b in _reveal_caps(game):
            a_side.add(a)
            if game.n_levels > 1:
                b_side.add(b)
    assert a_side == set(ALL)
    assert {Uniform(), BestOfN(3), TopK(50), TopK(2)} <= b_side
    game = reveal_game(9, (1, 1, 1, 1))  # 9, 8, 7, 6 options: A uniform only at the root
    assert (Uniform(), Exact()) not in _reveal_caps(game)


def test_float32_fast_path_is_close_to_the_core():
    """The packed float32 sort of the sweep: the same claims, values and judge accuracy."""
    rng = np.random.default_rng(5)
    probs = _reveal_probs(rng, 3, 9, 2, 4)
    labels = rng.integers(0, 4, 3)
    caps = _reveal_caps(reveal_game(9, (1, 1)))
    out = solve_capabilities(probs.astype(np.float32), 9, (1, 1), caps, "asym", labels)
    for ci, cap in enumerate(caps):
        values, carried = _core_columns(probs, labels, 9, (1, 1), cap, "asym")
        claim = out["claim"][ci]
        assert np.all(values[np.arange(3), claim] >= values.max(axis=1) - 1e-6)
        np.testing.assert_allclose(out["value"][ci], values.max(axis=1), atol=1e-6)
        np.testing.assert_allclose(out["judge_accuracy"][ci], carried[np.arange(3), claim],
                                   atol=1e-6)  # fmt: skip


def test_every_node_and_move_weight_equals_the_core():
    """``lines.node_values`` (RankedChildren per level) and ``move_weights`` at every node."""
    rng = np.random.default_rng(6)
    probs = _reveal_probs(rng, 1, 7, 4, 3)[0]
    for moves in [(4,), (2, 2), (1, 1, 1, 1)]:
        game = reveal_game(7, moves)
        tables = game_tables(7, moves)
        for cap in [(Exact(), Exact()), (TopK(2), TopK(4)), (BestOfN(3), Exact()), (4, 1)]:
            levels = node_values(probs, 7, moves, cap, "asym")  # an edge: (4, 1) parsed there
            pol = normalise_capability(cap)  # the core takes policy objects only
            sol = solve(game, leaf_columns(probs[None], "asym")[0], alternate(*pol, len(moves)))
            for t, (a, b) in enumerate(zip(levels, sol.values, strict=True)):
                np.testing.assert_allclose(a, b, atol=ATOL, err_msg=f"level {t}")
            for t in range(len(moves)):
                for node in range(game.n_nodes[t]):
                    w = move_weights(levels, tables, t, node, 1, pol[t % 2])
                    np.testing.assert_allclose(w, sol.weights[t][1, node], atol=ATOL)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ranked_children_fast_paths_equal_the_core_reducer(dtype):
    """All-k prefix sums with straddling tie blocks, the unsorted exact/uniform path and the
    weighted path of :class:`RankedChildren` against :func:`reduce_level`, with a carried aux."""
    rng = np.random.default_rng(7)
    n = 7
    values = np.round(rng.random((3, 5, n)), 1).astype(dtype)  # (entries, nodes, options)
    aux = rng.integers(0, 2, (3, 5, n)).astype(dtype)
    atol = ATOL if dtype == np.float64 else 1e-6
    for maximize in (True, False):
        specs = [*ALL, TopK(5), TopK(4)]  # one level: any values, any policy
        reducers = [resolve(p, n) for p in specs]
        assert any(_straddles(values.astype(np.float64), k, maximize) for k in (2, 3, 5))
        entries = np.repeat(np.arange(3), len(specs))
        ranked = RankedChildren(values, aux, maximize)
        v, a = ranked.reduce_many(entries, reducers * 3, np.float64)
        for i, (e, spec) in enumerate(zip(entries, specs * 3, strict=True)):
            core = reduce_level(values[e].astype(np.float64), spec, maximize,
                                carried=aux[e].astype(np.float64))  # fmt: skip
            np.testing.assert_allclose(v[i], core.values, atol=atol)
            np.testing.assert_allclose(a[i], core.carried, atol=atol)
        for spec in (Exact(), Uniform()):  # unsorted: a fresh instance, exact/uniform only
            fresh = RankedChildren(values, aux, maximize)
            v, a = fresh.reduce(resolve(spec, n), np.float64)
            core = reduce_level(values[0].astype(np.float64), spec, maximize,
                                carried=aux[0].astype(np.float64))  # fmt: skip
            np.testing.assert_allclose(v, core.values, atol=atol)
            np.testing.assert_allclose(a, core.carried, atol=atol)


@pytest.mark.parametrize("n", [2, 7, 33, 630, 1500])
@pytest.mark.parametrize("maximize", [True, False])
@pytest.mark.parametrize("nonneg", [True, False])
def test_packed_sort_and_rank_first_sums_equal_the_plain_path(n, maximize, nonneg):
    """The float32 packed sort (rank-first for short rows) against a stable argsort, and the
    per-rank prefix sums against ``np.cumsum``: bit for bit, ties and both dtypes included."""
    rng = np.random.default_rng(n)
    rows = 70 if n <= 1024 else 3  # rank-first needs >= 64 rows of <= 1024 values
    values = np.round(rng.random((rows, 2, n)), 2).astype(np.float32)  # many ties
    if not nonneg:
        values -= np.float32(0.5)
    aux = rng.random((rows, 2, n)).astype(np.float32)
    best, carried = sort_with_aux(values, aux, maximize, nonneg)
    # the plain path: order by value best-first, ties by the aux bits as the packed key orders them
    key = values if maximize else -values
    order = np.lexsort((aux.view(np.uint32), -key), axis=-1)
    np.testing.assert_array_equal(best, np.take_along_axis(values, order, axis=-1))
    np.testing.assert_array_equal(carried, np.take_along_axis(aux, order, axis=-1))
    packed = pack_with_aux(values, aux, maximize, nonneg)
    packed.sort(axis=-1)
    again, _ = unpack_sorted(packed, maximize, nonneg)
    assert (not again.flags.c_contiguous) == (n <= 1024)  # the rank-first layout was used
    for dtype in (np.float32, np.float64):
        np.testing.assert_array_equal(cumsum_last(again, dtype), np.cumsum(best, -1, dtype=dtype))
    # float32 results are the float64 top-k averages rounded once (tie shares included)
    reducers = [resolve(TopK(k), n) for k in sorted({1, max(1, n // 3), n - 1 or 1, n})]
    entries = np.repeat(np.arange(rows), len(reducers))
    ranked = RankedChildren(values, aux, maximize, nonneg)
    v32, a32 = ranked.reduce_many(entries, reducers * rows, np.float32)
    v64, a64 = ranked.reduce_many(entries, reducers * rows, np.float64)
    np.testing.assert_array_equal(v32, v64.astype(np.float32))
    np.testing.assert_array_equal(a32, a64.astype(np.float32))


# --------------------------------------------------------------------------------------------
# capabilities: one meaning of a bare number


def test_text_numbers_are_draws_only_where_said():
    assert draws_policy(4) == BestOfN(4) and draws_policy(None) == BestOfN(1)
    assert draws_policy("top3") == TopK(3) and text_policy("bo8") == BestOfN(8)
    assert text_policy(None) == BestOfN(1) and text_policy(Exact()) == Exact()
    for bad in (3, np.int64(3), "3"):
        with pytest.raises(ValueError, match="ambiguous"):
            text_policy(bad)
    from debatelab.experiments.bon_report import BonConfig
    from debatelab.text.sweeps import SweepSpec

    spec = SweepSpec("rebuttal", (1, 4), (2, "exact"), (TopK(2),))
    assert spec.n == (BestOfN(1), BestOfN(4)) and spec.m == (BestOfN(2), Exact())
    assert spec.labels("m") == ["Bo2", "exact"] and spec.r == (TopK(2),)
    assert BonConfig(n=(1, 5)).policies("n") == (BestOfN(1), BestOfN(5))


def test_the_core_takes_policy_objects_only():
    """Parsing happens once, at the edge: the core refuses a bare number or string instead of
    guessing whether 3 means top-3 or best-of-3."""
    with pytest.raises(ValueError, match="rank policy objects"):
        reduce_level(np.array([0.1, 0.5]), 3)
    with pytest.raises(ValueError, match="as_policy"):
        solve(reveal_game(4, (1,)), np.zeros(4), ["bo2"])
    assert normalise_capability((3, "bo2")) == (TopK(3), BestOfN(2))
