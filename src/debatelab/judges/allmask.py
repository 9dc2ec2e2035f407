"""Exact judge probabilities on every mask of ``reveal`` cells, fast.

The naive path pushes ``C(n_cells, reveal)`` masked copies of each image through the CNN. The
fast path uses locality: up to its first linear layer the network is local, and that layer is
linear, so a mask's hidden pre-activation is a sum over the final feature positions, each of
which depends only on which cells of its receptive field are revealed.

Four stages, all exact up to float rounding:

1. every pool-1 position depends on the <= 2x2 cells under its 4x4 input window: evaluate conv1,
   ReLU and max-pool once per subset of those cells;
2. conv2 is linear in pool-1 features: tabulate each (position, subset)'s contribution to each of
   the nine conv2 taps;
3. every final position f depends on the cells of its receptive field R_f (<= 4x4 cells): for each
   subset of R_f with at most ``reveal`` cells, sum the contributions (an embedding bag), apply
   ReLU and max-pool, and project through f's slice of the first linear layer;
4. a mask's hidden vector is the bias plus one table row per final position (another embedding
   bag); ReLU, the last layer and softmax finish it.

The index tables depend only on the geometry and are built once per (model shape, grid, reveal).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np
import torch
import torch.nn.functional as F

from ..geometry import Grid, all_masks
from ..progress import progress as progress_bar
from .cnn import JudgeCNN

METHODS = ("fast", "naive")


@dataclass(frozen=True)
class _Tables:
    """Geometry-only index tables of the fast path."""

    pool_size: int  # P1, side of the pool-1 map
    final_size: int  # F, side of the final feature map
    q_patch_mask: torch.Tensor  # (n_sub1, 16) float: revealed pixels of each pool-1 subset's window
    q_of_sub1: torch.Tensor  # (n_sub1,) long: pool-1 position of each subset row
    tap_index: torch.Tensor  # (n_sub2 * 4, 9) long into (n_sub1 * 9 + 1) rows; last = zero row
    sub2_start: tuple[int, ...]  # start row of each final position's subsets, plus the end
    mask_index: torch.Tensor  # (n_masks, F*F) long into the n_sub2 rows of stage 3


def _cells_of_span(lo: int, hi: int, size: int, cell: int) -> list[int]:
    """Cell indices (along one axis) of pixels lo..hi, clipped to the image."""
    lo, hi = max(lo, 0), min(hi, size - 1)
    return sorted({p // cell for p in range(lo, hi + 1)})


@lru_cache(maxsize=8)
def _build_tables(image_size: int, grid: int, reveal: int) -> _Tables:
    geo = Grid(image_size, grid)
    n_cells = geo.n_cells
    p1 = image_size // 2
    f_size = p1 // 2

    # Stage 1: pool-1 position (a, b) sees padded input rows 2a..2a+3 = image rows 2a-1..2a+2.
    pix_cell = geo.cell_of_pixel()
    q_cells: list[list[int]] = []
    q_base: list[int] = []
    patch_masks, q_of_sub = [], []
    for a in range(p1):
        for b in range(p1):
            rows = [r for r in range(2 * a - 1, 2 * a + 3)]
            cols = [c for c in range(2 * b - 1, 2 * b + 3)]
            cells = sorted(
                {int(pix_cell[r, c]) for r in rows for c in cols
                 if 0 <= r < image_size and 0 <= c < image_size}
            )  # fmt: skip
            q_cells.append(cells)
            q_base.append(len(q_of_sub))
            for code in range(1 << len(cells)):
                shown = {cells[j] for j in range(len(cells)) if code >> j & 1}
                m = [
                    1.0 if (0 <= r < image_size and 0 <= c < image_size
                            and int(pix_cell[r, c]) in shown) else 0.0
                    for r in rows for c in cols
                ]  # fmt: skip
                patch_masks.append(m)
                q_of_sub.append(a * p1 + b)
    n_sub1 = len(q_of_sub)
    zero_row = n_sub1 * 9

    # Stage 3: final position (I, J) pools conv2 positions 2I..2I+1, which read pool-1 rows
    # 2I-1..2I+2; its receptive field R_f is the union of those pool-1 positions' cells.
    tap_rows: list[list[int]] = []
    sub2_start = [0]
    f_cells: list[list[int]] = []
    f_codes: list[np.ndarray] = []
    for big_i in range(f_size):
        for big_j in range(f_size):
            window = [
                (a, b)
                for a in range(2 * big_i - 1, 2 * big_i + 3)
                for b in range(2 * big_j - 1, 2 * big_j + 3)
                if 0 <= a < p1 and 0 <= b < p1
            ]
            cells = sorted({c for a, b in window for c in q_cells[a * p1 + b]})
            local = {c: j for j, c in enumerate(cells)}
            outside = n_cells - len(cells)
            codes = []
            for k in range(max(0, reveal - outside), min(reveal, len(cells)) + 1):
                for subset in itertools.combinations(range(len(cells)), k):
                    codes.append(sum(1 << j for j in subset))
            codes_arr = np.array(sorted(codes), dtype=np.int64)
            for code in codes_arr:
                code = int(code)
                for pi in (2 * big_i, 2 * big_i + 1):
                    for pj in (2 * big_j, 2 * big_j + 1):
                        row = []
                        for dy in (-1, 0, 1):
                            for dx in (-1, 0, 1):
                                a, b = pi + dy, pj + dx
                                if not (0 <= a < p1 and 0 <= b < p1):
                                    row.append(zero_row)
                                    continue
                                qc = q_cells[a * p1 + b]
                                sub = sum(1 << j for j, c in enumerate(qc) if code >> local[c] & 1)
                                tap = (dy + 1) * 3 + (dx + 1)
                                row.append((q_base[a * p1 + b] + sub) * 9 + tap)
                        tap_rows.append(row)
            sub2_start.append(sub2_start[-1] + len(codes_arr))
            f_cells.append(cells)
            f_codes.append(codes_arr)

    # Stage 4: each mask's subset of R_f, as a row of stage 3.
    masks = all_masks(n_cells, reveal).astype(np.int64)
    mask_index = np.empty((len(masks), f_size * f_size), dtype=np.int64)
    for f, (cells, codes) in enumerate(zip(f_cells, f_codes, strict=True)):
        bit = np.zeros(n_cells, dtype=np.int64)
        bit[cells] = 1 << np.arange(len(cells), dtype=np.int64)
        code = bit[masks].sum(axis=1) if reveal else np.zeros(len(masks), dtype=np.int64)
        mask_index[:, f] = sub2_start[f] + np.searchsorted(codes, code)

    return _Tables(
        pool_size=p1,
        final_size=f_size,
        q_patch_mask=torch.tensor(patch_masks, dtype=torch.float32),
        q_of_sub1=torch.tensor(q_of_sub, dtype=torch.long),
        tap_index=torch.tensor(tap_rows, dtype=torch.long),
        sub2_start=tuple(sub2_start),
        mask_index=torch.from_numpy(mask_index),
    )


def _check(model: torch.nn.Module, images: torch.Tensor, grid: int, reveal: int):
    if not isinstance(model, JudgeCNN):
        raise TypeError(f"all_mask_probs needs a JudgeCNN, got {type(model).__name__}")
    if images.ndim != 4 or images.shape[1:] != (
        model.in_channels,
        model.image_size,
        model.image_size,
    ):
        raise ValueError(
            f"images have shape {tuple(images.shape)}; this judge expects (N, "
            f"{model.in_channels}, {model.image_size}, {model.image_size})"
        )
    geo = Grid(model.image_size, grid)
    if not 0 <= reveal <= geo.n_cells:
        raise ValueError(f"cannot reveal {reveal} of {geo.n_cells} cells")
    return geo


@torch.inference_mode()
def _fast_batch(model: JudgeCNN, x: torch.Tensor, t: _Tables, mask_chunk: int) -> torch.Tensor:
    dev = x.device
    b = x.shape[0]
    c1, c2 = model.widths
    p1, fs = t.pool_size, t.final_size
    # Stage 1: pool-1 features of every subset row, (B, n_sub1, c1).
    windows = F.unfold(F.pad(x, (1, 1, 1, 1)), kernel_size=4, stride=2)  # (B, C*16, p1*p1)
    windows = windows.view(b, model.in_channels, 16, p1 * p1)
    sub = windows[:, :, :, t.q_of_sub1.to(dev)] * t.q_patch_mask.to(dev).T  # (B, C, 16, n_sub1)
    n_sub1 = sub.shape[-1]
    sub = sub.permute(0, 3, 1, 2).reshape(b * n_sub1, model.in_channels, 4, 4)
    f1 = F.conv2d(sub, model.conv1.weight, model.conv1.bias)  # valid: the window holds the pad
    f1 = F.max_pool2d(torch.relu(f1), 2).view(b, n_sub1, c1)
    # Stage 2: contribution of each subset row to each conv2 tap, (B, n_sub1 * 9 + 1, c2).
    w2 = model.conv2.weight.permute(1, 2, 3, 0).reshape(c1, 9 * c2)
    contrib = (f1 @ w2).view(b, n_sub1 * 9, c2)
    contrib = torch.cat([contrib, contrib.new_zeros(b, 1, c2)], dim=1)
    # Stages 3 and 4 run image by image: their index tables are shared and stay in cache.
    taps = t.tap_index.to(dev)
    mask_index = t.mask_index.to(dev)
    n_sub2 = taps.shape[0] // 4
    w1 = model.fc1.weight.view(-1, c2, fs * fs)  # (H, c2, F*F)
    n_masks = mask_index.shape[0]
    out = torch.empty(b, n_masks, model.n_classes, device=dev, dtype=x.dtype)
    for i in range(b):
        # Stage 3: conv2 at the four positions under each final position, max-pool, ReLU
        # (ReLU and the shared bias commute with the max), then project through fc1's slice.
        pre = F.embedding_bag(taps, contrib[i], mode="sum").view(n_sub2, 4, c2)
        feat = torch.relu_(pre.amax(dim=1) + model.conv2.bias)
        table = torch.empty(n_sub2, w1.shape[0], device=dev, dtype=x.dtype)
        for f in range(fs * fs):
            lo, hi = t.sub2_start[f], t.sub2_start[f + 1]
            torch.mm(feat[lo:hi], w1[:, :, f].T, out=table[lo:hi])
        table[: t.sub2_start[1]] += model.fc1.bias  # every mask takes one row of position 0
        # Stage 4: every mask's hidden vector as a sum of one row per final position.
        for lo in range(0, n_masks, mask_chunk):
            h = torch.relu_(F.embedding_bag(mask_index[lo : lo + mask_chunk], table, mode="sum"))
            out[i, lo : lo + mask_chunk] = torch.softmax(model.fc2(h), dim=1)
    return out


@torch.inference_mode()
def _naive_batch(model: JudgeCNN, x: torch.Tensor, geo: Grid, reveal: int, mask_chunk: int):
    masks = all_masks(geo.n_cells, reveal)
    pix = geo.pixel_masks(torch.from_numpy(_bool_masks(masks, geo.n_cells))).to(x.device)
    out = []
    for img in x:
        probs = [
            torch.softmax(model(img.unsqueeze(0) * pix[lo : lo + mask_chunk]), dim=1)
            for lo in range(0, len(pix), mask_chunk)
        ]
        out.append(torch.cat(probs))
    return torch.stack(out)


def _bool_masks(cells: np.ndarray, n_cells: int) -> np.ndarray:
    out = np.zeros((len(cells), n_cells), dtype=bool)
    if cells.shape[1]:
        np.put_along_axis(out, cells.astype(np.int64), True, axis=1)
    return out


def all_mask_probs(
    model: JudgeCNN,
    images: torch.Tensor,
    grid: int = 6,
    reveal: int = 4,
    method: str = "fast",
    batch_images: int = 8,
    mask_chunk: int = 16384,
    progress: bool = False,
) -> np.ndarray:
    """Class probabilities of ``model`` on every mask of ``reveal`` cells of every image.

    Returns float32 ``(n_images, C(grid**2, reveal), n_classes)`` with masks in
    ``itertools.combinations`` order, equal (up to float rounding) to
    ``softmax(model(masked images))`` in eval mode. ``method="naive"`` runs the masked images
    through the model and is the reference the fast path is tested against.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {METHODS}")
    geo = _check(model, images, grid, reveal)
    was_training = model.training
    model.eval()
    dev = next(model.parameters()).device
    n_masks = comb(geo.n_cells, reveal)
    out = np.empty((len(images), n_masks, model.n_classes), dtype=np.float32)
    tables = _build_tables(model.image_size, grid, reveal) if method == "fast" else None
    try:
        starts = range(0, len(images), batch_images)
        for lo in progress_bar(starts, enabled=progress, desc="all-mask probabilities",
                               unit_scale=batch_images, unit="img"):  # fmt: skip
            x = images[lo : lo + batch_images].to(dev, torch.float32)
            if method == "fast":
                probs = _fast_batch(model, x, tables, mask_chunk)
            else:
                probs = _naive_batch(model, x, geo, reveal, mask_chunk)
            out[lo : lo + len(x)] = probs.cpu().numpy()
    finally:
        model.train(was_training)
    return out
