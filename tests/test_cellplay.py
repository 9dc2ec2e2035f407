"""The interactive cell game against the subset solver, on small random games."""

from __future__ import annotations

import numpy as np
import pytest

from debatelab.games.cellplay import CellDebate, CellGameRules
from debatelab.games.solver import solve_reveal_game

N_CELLS = 7  # C(7, 4) = 35 masks: every protocol fits


def _probs(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(35, 10)) * 2
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def _play(game: CellDebate, rng) -> list[list[int]]:
    turns: list[list[int]] = []
    while len(turns) < len(game.rules.moves):
        turns.append(list(game.ai_move(turns, rng)))
    return turns


MOVES = {"consultancy": (4,), "debate2": (2, 2), "debate4": (1, 1, 1, 1)}


@pytest.mark.parametrize("protocol", list(MOVES))
@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
def test_exact_play_reaches_the_solver_value_and_claim(protocol, rule):
    for seed in range(4):
        probs = _probs(seed)
        game = CellDebate(probs, CellGameRules(protocol, rule, 1, 1, n_cells=N_CELLS))
        want = solve_reveal_game(probs[None], N_CELLS, MOVES[protocol], 1, rule)
        assert game.claim == int(want["claim"][0])
        assert game.value == pytest.approx(float(want["value"][0]), abs=1e-6)
        turns = _play(game, np.random.default_rng(seed))
        assert game.verdict(turns)["payoff"] == pytest.approx(game.value, abs=1e-12)


@pytest.mark.parametrize("rule", ["asym", "last_b"])
def test_quantilised_play_averages_to_the_solver_value(rule):
    """Sampled games of top-k players: their mean payoff is the game value (within 4 SE)."""
    probs = _probs(7)
    rules = CellGameRules("debate4", rule, 2, 3, n_cells=N_CELLS)
    game = CellDebate(probs, rules)
    want = solve_reveal_game(probs[None], N_CELLS, (1, 1, 1, 1), (2, 3), rule)
    assert game.value == pytest.approx(float(want["value"][0]), abs=1e-6)
    rng = np.random.default_rng(0)
    payoffs = np.array([game.verdict(_play(game, rng))["payoff"] for _ in range(3000)])
    se = payoffs.std() / np.sqrt(len(payoffs))
    assert abs(payoffs.mean() - game.value) < 4 * se + 1e-9


def test_a_fixed_claim_is_kept_and_sym_b_replies_with_its_best_class():
    probs = _probs(3)
    game = CellDebate(probs, CellGameRules("debate2", "sym", 1, 1, n_cells=N_CELLS), claim=5)
    assert game.claim == 5
    root = game.values[0][:, 0].reshape(10, 10)
    assert game.b_class == int(root[5].argmin())
    assert game.value == pytest.approx(root[5].min())


def test_weights_follow_the_rank_policy():
    probs = _probs(1)
    game = CellDebate(probs, CellGameRules("debate4", "asym", 3, "uniform", n_cells=N_CELLS))
    cells, w = game.options([])
    assert len(cells) == N_CELLS and sorted(w)[-3:] == pytest.approx([1 / 3] * 3)
    cells_b, w_b = game.options([[cells[int(np.argmax(w))][0]]])
    assert len(cells_b) == N_CELLS - 1 and w_b == pytest.approx(np.full(N_CELLS - 1, 1 / 6))


def test_illegal_positions_are_refused_clearly():
    game = CellDebate(_probs(0), CellGameRules("debate2", "asym", n_cells=N_CELLS))
    with pytest.raises(ValueError, match="must reveal 2 distinct"):
        game.position([[1]])
    with pytest.raises(ValueError, match="already revealed"):
        game.position([[1, 2], [2, 3]])
    with pytest.raises(ValueError, match="off the grid"):
        game.position([[1, 9]])
    with pytest.raises(ValueError, match="not over"):
        game.verdict([[1, 2]])
    with pytest.raises(ValueError, match="unknown protocol"):
        CellGameRules("debate9")  # debate3 is registered now (A1 B2 A1)
    with pytest.raises(ValueError, match="rank policy"):
        CellGameRules(k_a="best")
