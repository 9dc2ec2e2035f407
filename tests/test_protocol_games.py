"""Protocols as data: the exact solver, the lines of play and the demo's cell game on the new
protocols (debate3 A1 B2 A1, consult_rebut A3 B1) and on non-alternating ones declared here,
against brute-force enumeration of every ordered play path; and a protocol added as one
declaration is solvable, listed by ``debatelab protocols`` and playable through the demo's API."""

from __future__ import annotations

import numpy as np
import pytest

from debatelab import protocols as P
from debatelab.games.cellplay import PROTOCOLS as CELL_PROTOCOLS
from debatelab.games.cellplay import CellDebate, CellGameRules
from debatelab.games.core import reveal_game, solve
from debatelab.games.lines import node_values, principal_line
from debatelab.games.ranked import resolve
from debatelab.games.solver import leaf_columns, normalise_capability, solve_capabilities
from debatelab.geometry import rank_masks
from debatelab.policies import BestOfN, Exact, TopK, Uniform
from test_solver import brute_force, random_probs

#: Non-alternating protocols, declared here only (not registered): A moves twice in a row.
AAB = P.Protocol("test_aab", (P.Turn("A"), P.Turn("A"), P.Turn("B")), "A1 A1 B1")
ABA2 = P.Protocol("test_a2ba", (P.Turn("A", 2), P.Turn("B"), P.Turn("A")), "A2 B1 A1")
ABB = P.Protocol("test_abb", (P.Turn("A"), P.Turn("B"), P.Turn("B", 2)), "A1 B1 B2")
GAMES = ["debate3", "consult_rebut", AAB, ABA2, ABB]
CAPS = [(1, 1), (2, 3), (3, 1), (Exact(), Uniform()), (Uniform(), 2), (BestOfN(3), 2),
        (TopK(100), TopK(100))]  # fmt: skip


def _id(g):
    return g if isinstance(g, str) else g.name


@pytest.mark.parametrize("game", GAMES, ids=_id)
@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
def test_solver_matches_every_ordered_play_path(game, rule):
    proto = P.as_protocol(game)
    n_cells, n_classes = (7, 3) if proto.total == 4 else (6, 3)
    rng = np.random.default_rng(abs(hash((proto.name, rule))) % 2**32)
    n_images = 1 if rule == "sym" else 2  # sym walks K * K games per image
    probs = random_probs(rng, n_images, n_cells, proto.total, n_classes)
    labels = rng.integers(0, n_classes, n_images)
    out = solve_capabilities(probs, n_cells, game, CAPS, rule, labels, chunk_images=1)
    for ci, k in enumerate(CAPS):
        for i in range(n_images):
            claim, value, judge = brute_force(probs[i], labels[i], n_cells, proto.moves, k, rule,
                                              proto.players)  # fmt: skip
            assert out["claim"][ci, i] == claim, (k, i)
            assert out["value"][ci, i] == pytest.approx(value, abs=1e-9)
            assert out["judge_accuracy"][ci, i] == pytest.approx(judge, abs=1e-9)


@pytest.mark.parametrize("game", GAMES, ids=_id)
@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
def test_every_node_equals_the_core_and_the_root_the_solver(game, rule):
    """node_values (the demo's and lines' fast path) against the core's general reducer with
    the protocol's players, level by level; its root against the solver's claims."""
    proto = P.as_protocol(game)
    n_cells = 7
    rng = np.random.default_rng(3)
    probs = random_probs(rng, 1, n_cells, proto.total, 3)
    k = (2, Uniform())
    values = node_values(probs[0], n_cells, game, k, rule)
    g = reveal_game(n_cells, game)
    assert [lv.maximize for lv in g.levels] == list(proto.maximize)
    cap = normalise_capability(k)
    policies = [cap[0] if up else cap[1] for up in proto.maximize]
    core = solve(g, leaf_columns(probs, rule)[0], policies)
    for mine, theirs in zip(values, core.values, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=0, atol=1e-12)
    assert all(resolve(p, n) for p, n in zip(policies, g.n_options, strict=True))


@pytest.mark.parametrize("game", GAMES, ids=_id)
def test_principal_line_follows_the_protocol_and_reaches_the_value(game):
    proto = P.as_protocol(game)
    rng = np.random.default_rng(10)
    probs = random_probs(rng, 2, 7, proto.total, 3)
    out = solve_capabilities(probs, 7, game, [(1, 1)])
    for i in range(2):
        line = principal_line(probs[i], 7, game, int(out["claim"][0, i]))
        assert [len(c) for c in line] == list(proto.moves)
        cells = sorted(c for move in line for c in move)
        leaf = rank_masks(np.array([cells]), 7)[0]
        assert probs[i, leaf, out["claim"][0, i]] == pytest.approx(out["value"][0, i], abs=1e-12)


def test_moves_and_the_registered_protocol_give_the_same_numbers():
    rng = np.random.default_rng(4)
    probs = random_probs(rng, 3, 8, 4, 4, np.float32)
    caps = [(1, 1), (3, 2), (8, 1)]
    for name in ("debate2", "debate4", "consultancy"):
        a = solve_capabilities(probs, 8, name, caps, "last_b")
        b = solve_capabilities(probs, 8, P.protocol(name).moves, caps, "last_b")
        for key in a:
            np.testing.assert_array_equal(a[key], b[key])


def test_non_alternating_play_is_not_the_alternating_game():
    """A1 A1 B1 is not (1, 1, 1) with players alternating: A moves twice, then B."""
    rng = np.random.default_rng(5)
    probs = random_probs(rng, 4, 7, 3, 3)
    aab = solve_capabilities(probs, 7, AAB, [(1, 1)])["value"]
    aba = solve_capabilities(probs, 7, (1, 1, 1), [(1, 1)])["value"]
    assert not np.allclose(aab, aba)


@pytest.mark.parametrize("game", ["debate3", "consult_rebut", ABA2], ids=_id)
def test_cell_game_moves_by_the_protocol_and_ends_at_the_solvers_value(game):
    proto = P.as_protocol(game)
    rng = np.random.default_rng(6)
    probs = random_probs(rng, 1, 8, 4, 4)[0]
    if isinstance(game, P.Protocol):
        with pytest.raises(ValueError, match="unknown protocol"):
            CellGameRules(game.name, n_cells=8)
        return
    debate = CellDebate(probs, CellGameRules(game, "sym", 1, 1, 8))
    solved = solve_capabilities(probs[None], 8, game, [(1, 1)], "sym")
    assert debate.claim == solved["claim"][0, 0]
    assert debate.value == pytest.approx(solved["value"][0, 0], abs=1e-12)
    turns = []
    for t, (player, n) in enumerate(zip(proto.players, proto.moves, strict=True)):
        with pytest.raises(ValueError, match=rf"turn {t + 1} \({player}\) must reveal {n}"):
            debate.position(turns + [[c for c in range(8) if c not in sum(turns, [])][: n + 1]])
        turns.append(list(debate.ai_move(turns, np.random.default_rng(t))))
    assert debate.verdict(turns)["payoff"] == pytest.approx(debate.value, abs=1e-12)


def test_the_cell_protocols_are_the_registry_live():
    assert list(CELL_PROTOCOLS) == list(P.protocol_names("cells"))
    assert CELL_PROTOCOLS["debate3"] == (1, 2, 1) and CELL_PROTOCOLS["consult_rebut"] == (3, 1)
    assert "proposal" not in CELL_PROTOCOLS
