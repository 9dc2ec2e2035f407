"""Cell geometry and mask indexing."""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
import pytest
import torch

from debatelab.geometry import Grid, all_masks, masks_to_bool, rank_masks, unrank_masks


@pytest.mark.parametrize("n,r", [(36, 4), (36, 2), (9, 3), (7, 0), (5, 5), (12, 1)])
def test_rank_unrank_round_trip_in_combinations_order(n, r):
    table = all_masks(n, r)
    assert table.shape == (comb(n, r), r)
    assert [tuple(row) for row in table] == list(itertools.combinations(range(n), r))
    assert np.array_equal(rank_masks(table, n), np.arange(comb(n, r)))
    assert np.array_equal(unrank_masks(np.arange(comb(n, r)), n, r), table)


def test_rank_rejects_unsorted_or_out_of_range():
    with pytest.raises(ValueError, match="strictly increasing"):
        rank_masks(np.array([[3, 1]]), 6)
    with pytest.raises(ValueError, match="0..5"):
        rank_masks(np.array([[1, 6]]), 6)
    with pytest.raises(ValueError, match="out of range"):
        unrank_masks(np.array([15]), 6, 2)


def test_cell_geometry_and_apply():
    g = Grid(18, 6)
    cells = g.cell_of_pixel()
    assert cells[0, 0] == 0 and cells[0, 17] == 5 and cells[17, 0] == 30 and cells[4, 7] == 8
    images = torch.arange(2 * 18 * 18, dtype=torch.float32).reshape(2, 1, 18, 18) + 1
    masks = torch.from_numpy(masks_to_bool(np.array([[0, 7], [35, 1]]), 36))
    out = g.apply(images, masks)
    revealed = out != 0
    assert revealed[0, 0, :3, :3].all() and revealed[0, 0, 3:6, 3:6].all()
    assert revealed[0].sum() == 18 and revealed[1].sum() == 18
    assert torch.equal(out[1, 0, 15:, 15:], images[1, 0, 15:, 15:])


def test_grid_rejects_bad_geometry():
    with pytest.raises(ValueError, match="not divisible"):
        Grid(18, 5)
    with pytest.raises(ValueError, match="expects 18x18"):
        Grid(18, 6).apply(torch.zeros(1, 1, 16, 16), torch.zeros(1, 36, dtype=torch.bool))


def test_random_masks_are_uniform_and_sized():
    g = Grid(18, 6)
    masks = g.random_masks(20000, 4, torch.Generator().manual_seed(0))
    assert (masks.sum(1) == 4).all()
    freq = masks.float().mean(0)  # each cell revealed with probability 4/36
    assert torch.allclose(freq, torch.full((36,), 4 / 36), atol=0.01)
    again = g.random_masks(20000, 4, torch.Generator().manual_seed(0))
    assert torch.equal(masks, again)
