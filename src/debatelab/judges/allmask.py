"""Exact judge outputs on every input of a universe of masks, fast: every mask of ``reveal``
cells (the frozen study's all-mask store), and the labelled masks of the trained judges' exact
search, where each revealed cell also carries a channel group (A's or B's cells of a debate,
the shuffled groups of a control: :class:`debatelab.geometry.LabelledMasks`).

The naive path pushes every masked copy of each image through the CNN. The fast path uses
locality: up to its first linear layer the network is local, and that layer is linear, so an
input's hidden pre-activation is a sum over the final feature positions, each of which depends
only on the labels of the cells of its receptive field.

Four stages, all exact up to float rounding:

1. every pool-1 position depends on the <= 2x2 cells under its 4x4 input window: evaluate conv1,
   ReLU and max-pool once per labelling of those cells that occurs in the universe;
2. conv2 is linear in pool-1 features: tabulate each (position, labelling)'s contribution to
   each of the nine conv2 taps;
3. every final position f depends on the cells of its receptive field R_f (<= 4x4 cells): for
   each labelling of R_f that occurs, sum the contributions (an embedding bag), apply ReLU and
   max-pool, and project through f's slice of the first linear layer;
4. an input's hidden vector is the bias plus one table row per final position (another
   embedding bag); the rest of the network (``tail``) finishes it.

The index tables depend only on the geometry and the universe and are built once per
(image size, grid, universe).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import comb

import numpy as np
import torch
import torch.nn.functional as F

from ..geometry import Grid, LabelledMasks, all_masks
from ..progress import progress as progress_bar
from .cnn import JudgeCNN

METHODS = ("fast", "naive")


@dataclass(frozen=True)
class _Tables:
    """Geometry-only index tables of the fast path for one universe of labelled masks."""

    pool_size: int  # P1, side of the pool-1 map
    final_size: int  # F, side of the final feature map
    groups: int  # channel groups of the input
    patch_mask: torch.Tensor  # (n_sub1, G, 16) float: each stage-1 row's shown pixels per group
    q_of_sub1: torch.Tensor  # (n_sub1,) long: pool-1 position of each stage-1 row
    tap_index: torch.Tensor  # (n_sub2 * 4, 9) long into (n_sub1 * 9 + 1) rows; last = zero row
    tap_row: torch.Tensor  # (n_sub2, 36) int32: tap_index // 9, each tap's stage-1 row
    tap_offset: torch.Tensor  # (n_sub2, 36) int8: tap_index % 9, the conv2 tap
    sub2_start: tuple[int, ...]  # start row of each final position's subsets, plus the end
    mask_index: torch.Tensor  # (n_inputs, F*F) long into the n_sub2 rows of stage 3


def _local_codes(labels: np.ndarray, cells: list[int], base: int) -> np.ndarray:
    """Each input's labels on ``cells`` as one base-``base`` number (cell j is digit j)."""
    weights = base ** np.arange(len(cells), dtype=np.int64)
    return labels[:, cells].astype(np.int64) @ weights


@lru_cache(maxsize=8)
def _build_tables(image_size: int, grid: int, universe: LabelledMasks) -> _Tables:
    geo = Grid(image_size, grid)
    if universe.n_cells != geo.n_cells:
        raise ValueError(f"the universe has {universe.n_cells} cells, the grid {geo.n_cells}")
    labels = universe.labels()
    groups = universe.groups
    base = groups + 1
    p1 = image_size // 2
    f_size = p1 // 2
    pix_cell = geo.cell_of_pixel()

    # Stage 1: pool-1 position (a, b) sees padded input rows 2a..2a+3 = image rows 2a-1..2a+2;
    # its rows are the labellings of its cells that occur among the inputs.
    q_cells: list[list[int]] = []
    q_codes: list[np.ndarray] = []
    q_base: list[int] = []
    patch_masks, q_of_sub = [], []
    for a in range(p1):
        for b in range(p1):
            pixels = [
                (r, c) for r in range(2 * a - 1, 2 * a + 3) for c in range(2 * b - 1, 2 * b + 3)
            ]
            cell_at = [int(pix_cell[r, c]) if 0 <= r < image_size and 0 <= c < image_size
                       else -1 for r, c in pixels]  # fmt: skip
            cells = sorted(set(cell_at) - {-1})
            codes = np.unique(_local_codes(labels, cells, base))
            digits = codes[:, None] // base ** np.arange(len(cells)) % base  # (n, k)
            local = {c: j for j, c in enumerate(cells)}
            pixel_label = np.zeros((len(codes), 16), dtype=np.int64)
            for p, cell in enumerate(cell_at):
                if cell >= 0:
                    pixel_label[:, p] = digits[:, local[cell]]
            shown = pixel_label[:, None, :] == np.arange(1, base)[None, :, None]  # (n, G, 16)
            q_cells.append(cells)
            q_codes.append(codes)
            q_base.append(len(q_of_sub))
            patch_masks.append(shown.astype(np.float32))
            q_of_sub.extend([a * p1 + b] * len(codes))
    n_sub1 = len(q_of_sub)
    zero_row = n_sub1 * 9

    # Stage 3: final position (I, J) pools conv2 positions 2I..2I+1, which read pool-1 rows
    # 2I-1..2I+2; its receptive field R_f is the union of those pool-1 positions' cells.
    tap_parts: list[np.ndarray] = []
    sub2_start = [0]
    mask_index = np.empty((len(labels), f_size * f_size), dtype=np.int64)
    for big_i in range(f_size):
        for big_j in range(f_size):
            window = [(a, b) for a in range(2 * big_i - 1, 2 * big_i + 3)
                      for b in range(2 * big_j - 1, 2 * big_j + 3) if 0 <= a < p1 and 0 <= b < p1]  # fmt: skip
            cells = sorted({c for a, b in window for c in q_cells[a * p1 + b]})
            local = {c: j for j, c in enumerate(cells)}
            of_input = _local_codes(labels, cells, base)
            codes = np.unique(of_input)
            f = big_i * f_size + big_j
            mask_index[:, f] = sub2_start[-1] + np.searchsorted(codes, of_input)
            digits = codes[:, None] // base ** np.arange(len(cells)) % base  # (n, |R_f|)
            rows = np.full((len(codes), 4, 9), zero_row, dtype=np.int64)
            for k, (pi, pj) in enumerate((pi, pj) for pi in (2 * big_i, 2 * big_i + 1)
                                         for pj in (2 * big_j, 2 * big_j + 1)):  # fmt: skip
                for tap, (dy, dx) in enumerate((dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)):
                    a, b = pi + dy, pj + dx
                    if not (0 <= a < p1 and 0 <= b < p1):
                        continue
                    q = a * p1 + b
                    qc = q_cells[q]
                    sub = digits[:, [local[c] for c in qc]] @ base ** np.arange(len(qc))
                    rows[:, k, tap] = (q_base[q] + np.searchsorted(q_codes[q], sub)) * 9 + tap
            tap_parts.append(rows.reshape(-1, 9))
            sub2_start.append(sub2_start[-1] + len(codes))

    tap_index = np.concatenate(tap_parts)
    return _Tables(
        pool_size=p1,
        final_size=f_size,
        groups=groups,
        patch_mask=torch.from_numpy(np.concatenate(patch_masks)),
        q_of_sub1=torch.tensor(q_of_sub, dtype=torch.long),
        tap_index=torch.from_numpy(tap_index),
        tap_row=torch.from_numpy((tap_index // 9).astype(np.int32).reshape(-1, 36)),
        tap_offset=torch.from_numpy((tap_index % 9).astype(np.int8).reshape(-1, 36)),
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


@dataclass(frozen=True)
class _Trunk:
    """The local trunk and first linear layer as the matrices the stages multiply by, built
    once per call."""

    conv1: torch.Tensor  # (in * 16, 4 * c1): conv1 on a 4x4 window onto its 2x2 outputs
    bias1: torch.Tensor  # (c1,)
    conv2: torch.Tensor  # (c1, 9 * c2): a pool-1 feature's contribution to each conv2 tap
    bias2: torch.Tensor  # (c2,)
    first: torch.Tensor  # (F*F, c2, H): the first linear layer's slice per final position
    bias: torch.Tensor  # (H,)

    @classmethod
    def of(cls, model: torch.nn.Module, linear: torch.nn.Linear, final_size: int) -> _Trunk:
        c1, c2 = model.conv1.out_channels, model.conv2.out_channels
        w1 = model.conv1.weight  # (c1, in, 3, 3)
        window = w1.new_zeros(w1.shape[1], 4, 4, 4, c1)  # (in, y, x, output position, out)
        for pos, (py, px) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            window[:, py : py + 3, px : px + 3, pos] = w1.permute(1, 2, 3, 0)
        first = linear.weight.view(-1, c2, final_size**2).permute(2, 1, 0).contiguous()
        return cls(conv1=window.view(-1, 4 * c1), bias1=model.conv1.bias,
                   conv2=model.conv2.weight.permute(1, 2, 3, 0).reshape(c1, 9 * c2),
                   bias2=model.conv2.bias, first=first, bias=linear.bias)  # fmt: skip


def _stage1(trunk: _Trunk, x: torch.Tensor, t: _Tables,
            pairs: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:  # fmt: skip
    """Stage 1: the pool-1 features of every stage-1 row of every image ``(B, n_sub1, c1)``, or
    of the (image, row) ``pairs`` only ``(n, c1)``. Group g of the input shows the window's
    pixels of the cells labelled g + 1 (channel g * C + c)."""
    dev = x.device
    b, channels = x.shape[:2]
    c1, p1 = len(trunk.bias1), t.pool_size
    q_of_sub1, patch_mask = t.q_of_sub1.to(dev), t.patch_mask.to(dev)
    windows = F.unfold(F.pad(x, (1, 1, 1, 1)), kernel_size=4, stride=2)  # (B, C*16, p1*p1)
    windows = windows.view(b, channels, 16, p1 * p1).permute(0, 3, 1, 2)  # (B, p1*p1, C, 16)
    if pairs is None:
        sub = windows[:, q_of_sub1, None] * patch_mask[None, :, :, None]  # (B, n, G, C, 16)
    else:
        image, rows = pairs
        at = image * (p1 * p1) + q_of_sub1.index_select(0, rows)
        sub = (windows.reshape(-1, channels, 16).index_select(0, at)[:, None]
               * patch_mask.index_select(0, rows)[:, :, None])  # fmt: skip
    # conv1 on a 4x4 window is one matrix product onto its 2x2 outputs, several times faster
    # than conv2d on thousands of tiny images
    f1 = (sub.reshape(-1, trunk.conv1.shape[0]) @ trunk.conv1).view(-1, 4, c1).amax(dim=1)
    return f1.add_(trunk.bias1).relu_().view(sub.shape[:-3] + (c1,))


def _contributions(trunk: _Trunk, f1: torch.Tensor) -> torch.Tensor:
    """Stage 2: each stage-1 row's contribution to each conv2 tap, ``(n * 9 + 1, c2)`` from
    pool-1 features ``(n, c1)``, the last row zero (a tap outside the map)."""
    contrib = f1.new_empty(len(f1) * 9 + 1, len(trunk.bias2))
    contrib[-1] = 0
    torch.mm(f1, trunk.conv2, out=contrib[:-1].view(len(f1), -1))  # no copy for the zero row
    return contrib


def _stage3_table(trunk: _Trunk, contrib: torch.Tensor, taps: torch.Tensor,
                  bounds: list[int], block: int = 8192) -> torch.Tensor:  # fmt: skip
    """Stage 3 of one table of contributions: the projected rows ``(n, H)`` of the stage-3
    subsets whose conv2 taps are ``taps`` ``(4 n, 9)`` (rows into ``contrib``), those of final
    position f in rows ``bounds[f]:bounds[f + 1]``; the first linear layer's bias goes into the
    rows of final position 0 (every input takes exactly one of those)."""
    n_final, c2, hidden = trunk.first.shape
    table = contrib.new_empty(bounds[-1], hidden)
    f = 0
    while f < n_final:  # blocks of whole final positions of about ``block`` rows
        g = f + 1
        while g < n_final and bounds[g + 1] - bounds[f] <= block:
            g += 1
        lo, hi = bounds[f], bounds[g]
        # conv2 at the four positions under each row, max-pool, ReLU (ReLU and the shared bias
        # commute with the max), then the projection through each final position's slice
        pre = F.embedding_bag(taps[4 * lo : 4 * hi], contrib, mode="sum").view(-1, 4, c2)
        feat = pre.amax(dim=1).add_(trunk.bias2).relu_()
        for k in range(f, g):
            torch.mm(feat[bounds[k] - lo : bounds[k + 1] - lo], trunk.first[k],
                     out=table[bounds[k] : bounds[k + 1]])  # fmt: skip
        f = g
    table[: bounds[1]] += trunk.bias
    return table


def _compact(values: torch.Tensor, size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``torch.unique(values, return_inverse=True)`` for values in ``0..size-1``: by marking
    when the values are many (several times faster than sorting the hundreds of thousands of
    taps here), by sorting when they are few against ``size``."""
    if values.numel() * 16 < size:
        return torch.unique(values, return_inverse=True)
    flat = values.reshape(-1).long()  # index_fill_ and index_select: 3x faster than []
    mark = torch.zeros(size, dtype=torch.bool, device=values.device).index_fill_(0, flat, True)
    inverse = torch.cumsum(mark, 0).sub_(1).index_select(0, flat)
    if size <= len(flat):
        unique = mark.nonzero().squeeze(1)
    else:  # the values back from their positions: cheaper than nonzero() on a long range
        unique = flat.new_empty(int(inverse.max()) + 1).index_copy_(0, inverse, flat)
    return unique, inverse.view(values.shape)


@torch.no_grad()
def _fast_batch(model: torch.nn.Module, linear: torch.nn.Linear, x: torch.Tensor, t: _Tables,
                tail, mask_chunk: int, index: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    trunk = _Trunk.of(model, linear, t.final_size)
    if index is not None:
        return _subset_batch(trunk, x, t, tail, mask_chunk, index)
    # The whole universe: stage 1 for the batch at once, the rest per image.
    f1 = _stage1(trunk, x, t)
    taps, bounds = t.tap_index.to(x.device), list(t.sub2_start)
    rows = t.mask_index.to(x.device)
    out = None
    for i in range(len(x)):
        table = _stage3_table(trunk, _contributions(trunk, f1[i]), taps, bounds)
        # Stage 4: every input's pre-activation as a sum of one row per final position.
        for lo in range(0, len(rows), mask_chunk):
            part = tail(F.embedding_bag(rows[lo : lo + mask_chunk], table, mode="sum"))
            if out is None:
                out = torch.empty((len(x), len(rows)) + part.shape[1:], device=x.device,
                                  dtype=part.dtype)  # fmt: skip
            out[i, lo : lo + mask_chunk] = part
    return out


def _subset_hidden(trunk: _Trunk, x: torch.Tensor, t: _Tables, index: torch.Tensor,
                   tables: tuple[torch.Tensor, ...]) -> torch.Tensor:  # fmt: skip
    """The first linear layer's pre-activation ``(b * L, H)`` on the inputs ``index (b, L)`` of
    images ``x``, through only the stage-3 and stage-1 rows those inputs read, the images'
    rows in one table."""
    mask_index, tap_row, tap_offset = tables
    b, dev = len(x), x.device
    n_sub1 = len(t.q_of_sub1)
    image = torch.arange(b, device=dev)
    # Stage-3 rows keyed (row, image), so that each final position's rows stay together.
    keys = mask_index.index_select(0, index.view(-1)).view(b, -1) * b + image[:, None]
    need, rows = _compact(keys, t.sub2_start[-1] * b)
    need_row = need.div(b, rounding_mode="floor")
    # The stage-1 rows those read, keyed (image, row); row n_sub1 of an image is the zero tap.
    keys = (need - need_row * b)[:, None] * (n_sub1 + 1) + tap_row.index_select(0, need_row)
    sub1, where = _compact(keys, b * (n_sub1 + 1))
    sub_image = sub1.div(n_sub1 + 1, rounding_mode="floor")
    sub_row = sub1 - sub_image * (n_sub1 + 1)
    real = sub_row < n_sub1
    slot = (torch.cumsum(real, 0) - 1).masked_fill_(~real, int(real.sum()))  # zero taps last
    contrib = _contributions(trunk, _stage1(trunk, x, t, (sub_image[real], sub_row[real])))
    taps = slot.index_select(0, where.view(-1)).view(-1, 36).mul_(9)
    taps = taps.add_(tap_offset.index_select(0, need_row)).view(-1, 9)
    bounds = torch.searchsorted(need, torch.tensor(t.sub2_start, device=dev) * b).tolist()
    table = _stage3_table(trunk, contrib, taps, bounds)
    return F.embedding_bag(rows.view(-1, mask_index.shape[1]), table, mode="sum")


def _subset_batch(trunk: _Trunk, x: torch.Tensor, t: _Tables, tail, mask_chunk: int,
                  index: torch.Tensor, image_chunk: int = 2) -> torch.Tensor:  # fmt: skip
    # A few images at a time: per image the operations are too small to be fast, and many
    # images' tables no longer fit in the cache (measured best at 2)
    dev = x.device
    tables = (t.mask_index.to(dev), t.tap_row.to(dev), t.tap_offset.to(dev))
    hidden = [_subset_hidden(trunk, x[lo : lo + image_chunk], t, index[lo : lo + image_chunk],
                             tables) for lo in range(0, len(x), image_chunk)]  # fmt: skip
    h = torch.cat(hidden)
    out = torch.cat([tail(h[lo : lo + mask_chunk]) for lo in range(0, len(h), mask_chunk)])
    return out.view(index.shape + out.shape[1:])


def factorised_outputs(model: torch.nn.Module, linear: torch.nn.Linear, images: torch.Tensor,
                       universe: LabelledMasks, tail, grid: int = 6,
                       mask_chunk: int = 16384, index: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
    """``tail(h)`` for every input of ``universe`` on every image, ``(N, len(universe), ...)``,
    or with ``index`` ``(N, L)`` (universe indices per image) for those inputs only, ``(N, L,
    ...)``: then stage 3 computes only the rows they read, which makes a sampled tree's leaves
    several times cheaper than the batched forward.

    ``model`` has the local trunk ``conv1 - ReLU - MaxPool2 - conv2 - ReLU - MaxPool2`` read
    by ``linear`` (its first linear layer; ``in_channels = groups x C``); ``h`` ``(n, H)`` is
    that layer's pre-activation on a chunk of inputs, where group g of the input shows the image
    on the cells labelled g + 1. Equal (up to float rounding) to running the masked images
    through the trunk, in whatever train/eval mode ``tail`` finds the model.
    """
    image_size = images.shape[-1]
    if images.ndim != 4 or model.conv1.in_channels != universe.groups * images.shape[1]:
        raise ValueError(f"images {tuple(images.shape)} in {universe.groups} group(s) do not "
                         f"fit a trunk of {model.conv1.in_channels} input channels")  # fmt: skip
    if index is not None and (index.ndim != 2 or len(index) != len(images)):
        raise ValueError(f"index must be (N, L) universe indices for {len(images)} images, got "
                         f"{tuple(index.shape)}")  # fmt: skip
    tables = _build_tables(image_size, grid, universe)
    return _fast_batch(model, linear, images, tables, tail, mask_chunk, index)


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


def _probabilities(model: JudgeCNN):
    def tail(h: torch.Tensor) -> torch.Tensor:
        return torch.softmax(model.fc2(model.dropout(torch.relu(h))), dim=1)

    return tail


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
    universe = LabelledMasks.masks(geo.n_cells, reveal)
    try:
        starts = range(0, len(images), batch_images)
        for lo in progress_bar(starts, enabled=progress, desc="all-mask probabilities",
                               unit_scale=batch_images, unit="img"):  # fmt: skip
            x = images[lo : lo + batch_images].to(dev, torch.float32)
            if method == "fast":
                probs = factorised_outputs(model, model.fc1, x, universe, _probabilities(model),
                                           grid, mask_chunk)  # fmt: skip
            else:
                probs = _naive_batch(model, x, geo, reveal, mask_chunk)
            out[lo : lo + len(x)] = probs.cpu().numpy()
    finally:
        model.train(was_training)
    return out
