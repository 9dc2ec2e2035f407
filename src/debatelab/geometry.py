"""Geometry shared by games and judges: cells and masks of the cell grid, pixels of the 2018 game.

A **cell** is one of ``grid x grid`` squares of an ``image_size x image_size`` image, indexed
``row * grid + col``. A **mask** is a set of revealed cells; all masks of size ``r`` are indexed
in the order of ``itertools.combinations(range(n_cells), r)`` (lexicographic), and
:func:`rank_masks` / :func:`unrank_masks` convert between index and cell tuple without building
the table.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from math import comb
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Grid:
    """Square images of ``image_size`` pixels cut into ``grid x grid`` equal cells."""

    image_size: int = 18
    grid: int = 6

    def __post_init__(self):
        if self.grid < 1 or self.image_size < 1:
            raise ValueError(f"grid ({self.grid}) and image_size ({self.image_size}) must be >= 1")
        if self.image_size % self.grid:
            raise ValueError(
                f"image_size {self.image_size} is not divisible by grid {self.grid}; "
                "choose a grid whose cells are whole pixels"
            )

    @property
    def n_cells(self) -> int:
        return self.grid * self.grid

    @property
    def cell_size(self) -> int:
        return self.image_size // self.grid

    def cell_of_pixel(self) -> np.ndarray:
        """``(image_size, image_size)`` array giving each pixel's cell index."""
        rows = np.arange(self.image_size) // self.cell_size
        return rows[:, None] * self.grid + rows[None, :]

    def pixel_masks(self, cell_masks: torch.Tensor) -> torch.Tensor:
        """Boolean cell masks ``(B, n_cells)`` to pixel masks ``(B, 1, S, S)``."""
        if cell_masks.shape[-1] != self.n_cells:
            raise ValueError(
                f"cell masks have {cell_masks.shape[-1]} cells, the grid has {self.n_cells}"
            )
        import torch  # geometry itself is numpy; torch only where tensors are made

        b = cell_masks.reshape(-1, 1, self.grid, self.grid).to(torch.float32)
        up = b.repeat_interleave(self.cell_size, dim=2).repeat_interleave(self.cell_size, dim=3)
        return up

    def apply(self, images: torch.Tensor, cell_masks: torch.Tensor) -> torch.Tensor:
        """Zero the hidden cells: ``images (B, C, S, S)`` times their cell masks ``(B, n_cells)``."""
        if images.shape[-2:] != (self.image_size, self.image_size):
            raise ValueError(
                f"images are {tuple(images.shape[-2:])}, the grid expects "
                f"{self.image_size}x{self.image_size}"
            )
        return images * self.pixel_masks(cell_masks).to(images.dtype)

    def random_masks(self, n: int, reveal: int, generator: torch.Generator) -> torch.Tensor:
        """``n`` uniformly random boolean masks of ``reveal`` cells each, ``(n, n_cells)``."""
        if not 0 <= reveal <= self.n_cells:
            raise ValueError(f"cannot reveal {reveal} of {self.n_cells} cells")
        import torch

        scores = torch.rand(n, self.n_cells, generator=generator)
        idx = scores.argsort(dim=1)[:, :reveal]
        masks = torch.zeros(n, self.n_cells, dtype=torch.bool)
        masks.scatter_(1, idx, True)
        return masks


@lru_cache(maxsize=32)
def all_masks(n_cells: int, reveal: int) -> np.ndarray:
    """All masks of ``reveal`` cells as a read-only ``(C(n, r), r)`` int array, combinations order."""
    if reveal == 0:
        table = np.zeros((1, 0), dtype=np.int32)
        table.flags.writeable = False
        return table
    table = np.fromiter(
        itertools.chain.from_iterable(itertools.combinations(range(n_cells), reveal)),
        dtype=np.int32,
        count=comb(n_cells, reveal) * reveal,
    ).reshape(-1, reveal)
    table.flags.writeable = False
    return table


def masks_to_bool(cells: np.ndarray, n_cells: int) -> np.ndarray:
    """Cell tuples ``(M, r)`` to boolean masks ``(M, n_cells)``."""
    cells = np.asarray(cells)
    out = np.zeros((len(cells), n_cells), dtype=bool)
    np.put_along_axis(out, cells.astype(np.int64), True, axis=1)
    return out


@lru_cache(maxsize=32)
def _binomials(n: int) -> np.ndarray:
    return np.array([[comb(a, b) for b in range(n + 1)] for a in range(n + 1)], dtype=np.int64)


def rank_masks(cells: np.ndarray, n_cells: int) -> np.ndarray:
    """Index of each sorted cell tuple ``(M, r)`` in combinations order (vectorised)."""
    cells = np.atleast_2d(np.asarray(cells, dtype=np.int64))
    m, r = cells.shape
    if r and (cells.min() < 0 or cells.max() >= n_cells):
        raise ValueError(f"cell indices must lie in 0..{n_cells - 1}")
    if r > 1 and np.any(np.diff(cells, axis=1) <= 0):
        raise ValueError("each mask's cells must be strictly increasing")
    binom = _binomials(n_cells)
    # lexicographic rank = C(n, r) - 1 - sum_i C(n - 1 - c_i, r - i)  (colex of the complement)
    i = np.arange(r)
    tail = binom[n_cells - 1 - cells, (r - i)[None, :]].sum(axis=1)
    return comb(n_cells, r) - 1 - tail


def unrank_masks(index: np.ndarray, n_cells: int, reveal: int) -> np.ndarray:
    """Cell tuples ``(M, reveal)`` of mask indices in combinations order (vectorised)."""
    index = np.atleast_1d(np.asarray(index, dtype=np.int64))
    total = comb(n_cells, reveal)
    if index.size and (index.min() < 0 or index.max() >= total):
        raise ValueError(f"mask index out of range 0..{total - 1}")
    binom = _binomials(n_cells)
    rest = total - 1 - index  # rank among complements, greedy from the largest term
    out = np.empty((len(index), reveal), dtype=np.int64)
    for i in range(reveal):
        k = reveal - i
        # largest v with C(v, k) <= rest; then cell = n - 1 - v
        col = binom[:, k]
        v = np.searchsorted(col, rest, side="right") - 1
        out[:, i] = n_cells - 1 - v
        rest = rest - col[v]
    return out


@dataclass(frozen=True)
class LabelledMasks:
    """Every mask of ``reveal`` cells with every allowed labelling of its cells: the universe of
    inputs a trained judge can see under one protocol family (the exact search scores all of
    them at once).

    A labelling gives each cell of the sorted mask a channel group label ``1..groups`` (0 is
    hidden). Index ``mask_rank * len(labellings) + labelling_rank``: masks in combinations
    order, labellings in the order given. Build one with :meth:`masks` (one group:
    consultancy's and the frozen study's masks), :meth:`splits` (A's cells and B's cells of a
    debate) or :meth:`permuted` (every assignment of distinct groups: the shuffled controls).
    """

    n_cells: int
    labellings: tuple[tuple[int, ...], ...]

    def __post_init__(self):
        if not self.labellings or len({len(lab) for lab in self.labellings}) != 1:
            raise ValueError("give one or more labellings, all of the mask's size")
        if len(set(self.labellings)) != len(self.labellings):
            raise ValueError("labellings must be distinct")
        if self.reveal > self.n_cells or min(min(lab, default=1) for lab in self.labellings) < 1:
            raise ValueError(f"labels are 1..groups on at most {self.n_cells} cells")

    @classmethod
    def masks(cls, n_cells: int, reveal: int) -> LabelledMasks:
        return cls(n_cells, ((1,) * reveal,))

    @classmethod
    def splits(cls, n_cells: int, a_cells: int, b_cells: int) -> LabelledMasks:
        """A's ``a_cells`` (label 1) and B's ``b_cells`` (label 2); labellings ordered by the
        positions of A's cells among the sorted mask, in combinations order."""
        r = a_cells + b_cells
        labs = tuple(tuple(1 if j in pos else 2 for j in range(r))
                     for pos in itertools.combinations(range(r), a_cells))  # fmt: skip
        return cls(n_cells, labs)

    @classmethod
    def permuted(cls, n_cells: int, reveal: int) -> LabelledMasks:
        """Distinct groups ``1..reveal`` on the sorted cells, in permutations order."""
        perms = itertools.permutations(range(1, reveal + 1))
        return cls(n_cells, tuple(tuple(p) for p in perms))

    @property
    def reveal(self) -> int:
        return len(self.labellings[0])

    @property
    def groups(self) -> int:
        return max(max(lab, default=1) for lab in self.labellings)

    def __len__(self) -> int:
        return comb(self.n_cells, self.reveal) * len(self.labellings)

    def labels(self) -> np.ndarray:
        """``(len(self), n_cells)`` uint8: each input's label per cell (0 hidden)."""
        return _labels_of(self)

    def rank(self, cells, groups) -> np.ndarray:
        """Index of each play: ``cells (..., reveal)`` distinct, in any order, and their channel
        ``groups (..., reveal)`` (0-based, as the judges' codes minus one)."""
        cells = np.asarray(cells, dtype=np.int64)
        groups = np.asarray(groups, dtype=np.int64)
        if cells.shape != groups.shape or cells.shape[-1:] != (self.reveal,):
            raise ValueError(f"cells and groups must both be (..., {self.reveal})")
        n = int(np.prod(cells.shape[:-1]))
        order = np.argsort(cells, axis=-1, kind="stable")
        sorted_cells = np.take_along_axis(cells, order, -1).reshape(n, self.reveal)
        labels = np.take_along_axis(groups, order, -1).reshape(n, self.reveal) + 1
        base = self.groups + 1
        if labels.size and (labels.min() < 1 or labels.max() >= base):
            raise ValueError(f"groups must lie in 0..{self.groups - 1}")
        lab = _lookup_of(self)[labels @ base ** np.arange(self.reveal)]
        if np.any(lab < 0):
            raise ValueError("a play's groups are not one of this universe's labellings")
        index = rank_masks(sorted_cells, self.n_cells) * len(self.labellings) + lab
        return index.reshape(cells.shape[:-1])

    def unrank(self, index) -> tuple[np.ndarray, np.ndarray]:
        """Sorted cells ``(..., reveal)`` and their 0-based groups of each index."""
        index = np.asarray(index, dtype=np.int64)
        mask, lab = np.divmod(index.reshape(-1), len(self.labellings))
        cells = unrank_masks(mask, self.n_cells, self.reveal)
        groups = np.asarray(self.labellings, dtype=np.int64)[lab] - 1
        shape = index.shape + (self.reveal,)
        return cells.reshape(shape), groups.reshape(shape)


@lru_cache(maxsize=8)
def _labels_of(universe: LabelledMasks) -> np.ndarray:
    masks = all_masks(universe.n_cells, universe.reveal).astype(np.int64)
    labs = np.asarray(universe.labellings, dtype=np.uint8)  # (n_lab, r)
    n_lab = len(labs)
    out = np.zeros((len(masks) * n_lab, universe.n_cells), dtype=np.uint8)
    rows = np.arange(len(out))[:, None]
    out[rows, np.repeat(masks, n_lab, axis=0)] = np.tile(labs, (len(masks), 1))
    out.flags.writeable = False
    return out


@lru_cache(maxsize=8)
def _lookup_of(universe: LabelledMasks) -> np.ndarray:
    """Labelling index of each labelling written as a base-(groups + 1) number (-1: none)."""
    base = universe.groups + 1
    table = np.full(base**universe.reveal, -1, dtype=np.int64)
    weights = base ** np.arange(universe.reveal)
    for i, lab in enumerate(universe.labellings):
        table[int(np.dot(lab, weights))] = i
    return table


# The 2018 sparse-pixel game plays on MNIST's 28x28 pixels; a pixel is indexed row * SIDE + col.
SIDE = 28
N_PIXELS = SIDE * SIDE


def pixel_values(images) -> torch.Tensor:
    """``uint8`` images ``(N, 28, 28)`` to float values in [0, 1], flattened to ``(N, 784)``."""
    import torch

    x = torch.as_tensor(np.asarray(images))
    if x.ndim != 3 or tuple(x.shape[1:]) != (SIDE, SIDE):
        raise ValueError(f"expected images (N, {SIDE}, {SIDE}), got {tuple(x.shape)}")
    return x.reshape(len(x), N_PIXELS).to(torch.float32) / 255.0
