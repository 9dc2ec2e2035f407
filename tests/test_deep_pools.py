"""Debates of any depth (proposal, critique, rebuttal, critique, ...): the nested best-of-n
solve of the game core against brute-force enumeration of every draw on small pools."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from debatelab.games.core import pool_game, pool_level_name, solve_pool
from debatelab.policies import BestOfN


def brute_force(scores: np.ndarray, correct: np.ndarray, draws: list[int]):
    """Win rate and accuracy by definition: at each node, every ordered tuple of ``draws``
    children drawn with replacement is equally likely; the player takes the best of its draw
    (maximising at even depths, minimising at odd), the proposer's pick carries correctness."""

    def value(node: np.ndarray, depth: int) -> float:
        if node.ndim == 0:
            return float(node)
        values = [value(child, depth + 1) for child in node]
        pick = max if depth % 2 == 0 else min
        tuples = list(itertools.product(range(len(values)), repeat=draws[depth]))
        return sum(pick(values[i] for i in t) for t in tuples) / len(tuples)

    values = [value(scores[i], 1) for i in range(len(scores))]
    tuples = list(itertools.product(range(len(values)), repeat=draws[0]))
    win = acc = 0.0
    for t in tuples:
        best = max(t, key=lambda i: values[i])  # scores are distinct: no ties
        win += values[best]
        acc += correct[best]
    return win / len(tuples), acc / len(tuples)


@pytest.mark.parametrize("shape, draws", [((3, 2, 2, 2), [2, 2, 1, 2]),
                                          ((2, 2, 2, 2, 2), [2, 1, 2, 2, 1]),
                                          ((3, 2, 1, 2, 2, 2), [1, 2, 1, 2, 2, 2])])  # fmt: skip
def test_deep_pools_solve_as_enumeration_says(shape, draws):
    rng = np.random.default_rng(len(shape))
    scores = rng.permutation(np.prod(shape)).reshape(shape) / np.prod(shape)  # distinct values
    correct = rng.integers(0, 2, size=shape[0]).astype(float)
    solution = solve_pool(scores, correct, [BestOfN(d) for d in draws])
    win, acc = brute_force(scores, correct, draws)
    assert float(solution.root_value[0]) == pytest.approx(win, abs=1e-12)
    assert float(solution.root_carried[0]) == pytest.approx(acc, abs=1e-12)


def test_deep_pool_levels_are_named_and_counted():
    assert [pool_level_name(d) for d in range(6)] == [
        "proposals", "critiques", "rebuttals", "critiques2", "rebuttals2", "critiques3"]  # fmt: skip
    game = pool_game((2, 2, 2, 2), counts={"critiques2": np.ones((2, 2, 2, 2))})
    assert len(game.levels) == 4 and [lv.maximize for lv in game.levels] == [
        True,
        False,
        True,
        False,
    ]
    with pytest.raises(ValueError, match="unknown pool level"):
        pool_game((2, 2), counts={"rebuttals": np.ones((2, 2))})
