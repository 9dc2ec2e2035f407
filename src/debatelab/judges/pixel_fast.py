"""The pixel judge's forward pass on a few revealed pixels, exact and several times cheaper.

A pixel-game position reveals at most a handful of the 784 pixels, so almost all of the judge's
input is zero. :class:`SparsePixelForward` computes the same logits as the dense
:class:`~debatelab.judges.cnn.JudgeCNN` forward on :func:`~debatelab.judges.pixel.pixel_planes`
without convolving the zeros:

- **conv1** is a sum of one 3x3 stamp per revealed pixel (``W[:, 0] + value * W[:, 1]``, the
  kernel flipped) on top of the bias, scattered into the map; ReLU and pooling as usual give the
  first pooled map ``P``.
- **conv2** is linear, so its pre-activation is that of the *background* (every pooled cell at
  ``relu(b1)``, computed once per model) plus the convolution of ``D = P - relu(b1)``. ``D`` is
  zero except in the 2x2 block of pooled cells each revealed pixel touches, and a 2x2 block
  reaches a 4x4 window of conv2's output: one small matrix product per revealed pixel
  (``(4 c1) x (16 c2)``, precomputed), scattered into the map. Cells of overlapping blocks are
  counted once (each belongs to the first pixel whose block holds it).
- the rest (ReLU, pooling, the two linear layers) is the model's own.

The result equals the dense forward to float32 rounding (the sums run in another order); the
cost per position is a few hundred thousand multiply-adds instead of 1.3 million.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ..geometry import N_PIXELS, SIDE
from .cnn import JudgeCNN
from .mlp import PixelMLP


def supports_sparse_pixels(model: torch.nn.Module) -> bool:
    """Whether ``model`` has a layout a sparse path covers: a :class:`JudgeCNN` on the two
    28x28 pixel planes with its 3x3 / padding 1 convolutions and 2x2 pooling, or a
    :class:`~debatelab.judges.mlp.PixelMLP` on the two planes (float32 weights either way)."""
    if isinstance(model, PixelMLP):
        return (model.in_channels == 2 and model.image_size == SIDE
                and all(p.dtype == torch.float32 for p in model.parameters()))  # fmt: skip
    return (
        isinstance(model, JudgeCNN)
        and model.in_channels == 2
        and model.image_size == 28
        and model.conv1.kernel_size == (3, 3)
        and model.conv1.padding == (1, 1)
        and model.conv2.kernel_size == (3, 3)
        and model.conv2.padding == (1, 1)
        and model.pool.kernel_size == 2
        and all(p.dtype == torch.float32 for p in model.parameters())
    )


class _FromFrozenModel:
    """A fast path built from a copy of a model's weights, which knows whether it still
    computes that model (a changed parameter bumps its version)."""

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self.versions = [p._version for p in model.parameters()]

    def matches(self, model: torch.nn.Module) -> bool:
        """Whether ``model`` is the model this was built from, unchanged and in eval mode."""
        return (model is self.model and not model.training and supports_sparse_pixels(model)
                and [p._version for p in model.parameters()] == self.versions)  # fmt: skip


class SparsePixelForward(_FromFrozenModel):
    """Logits of a frozen pixel :class:`JudgeCNN` (eval mode: no dropout) from the revealed
    pixels' positions and values.

    Built from a copy of the model's weights; :meth:`matches` tells whether the model still has
    them (a changed parameter bumps its version). Call it with
    ``pixels (B, K)`` long indices into the 784 pixels, ``values (B, K)`` their values in [0, 1]
    and ``present (B, K)`` bool (False pads rows that reveal fewer than K pixels).
    """

    def __init__(self, model: JudgeCNN):
        if not supports_sparse_pixels(model):
            raise ValueError(
                "the sparse pixel forward needs a JudgeCNN on the two 28x28 pixel planes with 3x3 "
                "convolutions (padding 1) and 2x2 pooling; use the dense forward for this model"
            )
        super().__init__(model)
        with torch.no_grad():
            w1 = model.conv1.weight.detach().clone()
            c1, c2 = self.c1, self.c2 = w1.shape[0], model.conv2.weight.shape[0]
            self.bias1 = model.conv1.bias.detach().clone()
            self.background = torch.relu(self.bias1)
            # Maps are channels-last throughout, so pooling and scattering touch contiguous
            # channel vectors. conv1 on a block's 4x4 window of outputs, as a matrix: a pixel at
            # offset (dr, dc) in -1..4 from the window's corner adds row (dr, dc) of the mask
            # half and `value` times that of the value half.
            table = torch.zeros(2, 6, 6, 4, 4, c1)
            for dr in range(-1, 5):
                for dc in range(-1, 5):
                    for y in range(4):
                        for x in range(4):
                            ky, kx = dr - y + 1, dc - x + 1
                            if 0 <= ky < 3 and 0 <= kx < 3:
                                table[:, dr + 1, dc + 1, y, x] = w1[:, :, ky, kx].T
            self.window1 = table.reshape(72, 16 * c1)
            flat = self.background[None, :, None, None].expand(1, c1, 14, 14)
            base = model.conv2(flat.contiguous())[0]  # (c2, 14, 14), the bias included
            # a unit of channel ch at block cell (dy, dx) -> conv2's 4x4 output window
            impulses = torch.zeros(2, 2, c1, c1, 4, 4)
            for dy in range(2):
                for dx in range(2):
                    impulses[dy, dx, range(c1), range(c1), 1 + dy, 1 + dx] = 1.0
            w2 = model.conv2.weight.detach()
            out = F.conv2d(impulses.reshape(4 * c1, c1, 4, 4), w2, padding=1)
            self.block = out.permute(0, 2, 3, 1).reshape(4 * c1, 16 * c2)
            # the linear layer reads pooled features channels-last
            fc1 = model.fc1.weight.detach()
            self.fc1 = fc1.view(-1, c2, 7, 7).permute(0, 2, 3, 1).reshape(len(fc1), -1).T.clone()
            self.fc1_bias = model.fc1.bias.detach().clone()
            self.fc2 = model.fc2.weight.detach().T.clone()
            self.fc2_bias = model.fc2.bias.detach().clone()
            # conv2's pre-activation where every pooled cell is background, and a spare row
            self.base2 = torch.cat([base.permute(1, 2, 0).reshape(196, c2), torch.zeros(1, c2)])
        # index tables, built once. Block cells (2x2 on the 14x14 pooled map) per block corner;
        # conv2's 4x4 output window per block corner, off-map entries sent to a spare slot.
        r, c = torch.meshgrid(torch.arange(2), torch.arange(2), indexing="ij")
        self.cell_offsets = (r * 14 + c).reshape(4)
        index = torch.full((13, 13, 4, 4), 196, dtype=torch.long)
        for top in range(13):
            for left in range(13):
                for y in range(4):
                    for x in range(4):
                        row, col = top - 1 + y, left - 1 + x
                        if 0 <= row < 14 and 0 <= col < 14:
                            index[top, left, y, x] = row * 14 + col
        self.window_index = index.reshape(169, 16)

    @torch.inference_mode()
    def __call__(
        self, pixels: torch.Tensor, values: torch.Tensor, present: torch.Tensor
    ) -> torch.Tensor:
        b, k = pixels.shape
        c1, c2 = self.c1, self.c2
        rows, cols = pixels // SIDE, pixels % SIDE
        # each pixel's block: the 2x2 pooled cells its 3x3 neighbourhood touches (clamped
        # inside the map), i.e. a 4x4 window of conv1 outputs from (2 top, 2 left)
        top = ((rows - 1).div(2, rounding_mode="floor")).clamp(0, 12)
        left = ((cols - 1).div(2, rounding_mode="floor")).clamp(0, 12)
        # conv1 on every block's window: which pixels fall near it, where, with what value
        dr = rows[:, None, :] - 2 * top[:, :, None] + 1  # (B, K blocks, K pixels), 0..5 if near
        dc = cols[:, None, :] - 2 * left[:, :, None] + 1
        near = (dr >= 0) & (dr < 6) & (dc >= 0) & (dc < 6) & present[:, None, :]
        at = (dr.clamp(0, 5) * 6 + dc.clamp(0, 5)).masked_fill(~near, 72)
        counts = torch.zeros(b, k, 73)
        counts.scatter_add_(2, at, near.to(torch.float32))
        counts.scatter_add_(2, (at + 36).clamp(max=72), values[:, None, :].expand(b, k, k) * near)
        pre1 = (counts[..., :72] @ self.window1).view(b, k, 2, 2, 2, 2, c1) + self.bias1
        pooled = _max_pool_2x2(pre1).relu_()  # (B, K, 2, 2, c1): the block's pooled cells
        # cells of overlapping blocks count once: for the first pixel whose block holds them
        cells = ((top * 14 + left)[..., None] + self.cell_offsets).reshape(b, 4 * k)
        mine = present[..., None].expand(b, k, 4).reshape(b, 4 * k)
        same = (cells[:, :, None] == cells[:, None, :]) & mine[:, None, :]
        earlier = torch.ones(4 * k, 4 * k, dtype=torch.bool).tril(-1)
        mine = mine & ~(same & earlier).any(2)
        delta = (pooled - self.background).view(b, k, 4, c1) * mine.view(b, k, 4, 1)
        # conv2: each block's 4x4 output window, added onto the background's pre-activation
        windows = delta.view(b * k, 4 * c1) @ self.block  # (B K, 16 c2)
        at = self.window_index[top * 13 + left] + (torch.arange(b) * 197)[:, None, None]
        conv2 = self.base2.repeat(b, 1)  # (B 197, c2): a map per position, and the spare row
        conv2.index_add_(0, at.view(-1), windows.view(b * k * 16, c2))
        conv2 = conv2.view(b, 197, c2)[:, :196].view(b, 7, 2, 7, 2, c2)
        features = _max_pool_2x2(conv2).relu_().reshape(b, 49 * c2)
        hidden = torch.relu(torch.addmm(self.fc1_bias, features, self.fc1))
        return torch.addmm(self.fc2_bias, hidden, self.fc2)  # dropout: none in eval mode


class SparsePixelMLPForward(_FromFrozenModel):
    """Logits of a frozen :class:`~debatelab.judges.mlp.PixelMLP` (eval mode) from the revealed
    pixels, called like :class:`SparsePixelForward`. The first layer on the two planes is its
    bias plus, per revealed pixel, the pixel's mask column and ``value`` times its value column:
    one weighted bag of 2K rows (``embedding_bag``, which sums without materialising the rows)
    instead of a 1,568-wide product; the rest is the model's own."""

    def __init__(self, model: torch.nn.Module):
        if not supports_sparse_pixels(model):
            raise ValueError("the sparse MLP forward needs a PixelMLP on the two 28x28 planes")
        super().__init__(model)
        with torch.no_grad():
            # rows 0..783 the mask plane's weights per pixel, 784..1567 the value plane's
            self.rows = model.fc1.weight.detach().T.contiguous()  # (1568, hidden)
            self.bias1 = model.fc1.bias.detach().clone()

    @torch.inference_mode()
    def __call__(
        self, pixels: torch.Tensor, values: torch.Tensor, present: torch.Tensor
    ) -> torch.Tensor:
        on = present.to(torch.float32)
        index = torch.cat([pixels, pixels + N_PIXELS], 1)
        weight = torch.cat([on, values * on], 1)
        h = F.embedding_bag(index, self.rows, per_sample_weights=weight, mode="sum")
        h = torch.relu(h + self.bias1)
        return self.model.fc3(torch.relu(self.model.fc2(h)))  # dropout: none in eval mode


def sparse_pixel_forward(model: torch.nn.Module):
    """The sparse forward of a pixel judge's model, or None for a layout it does not cover."""
    if not supports_sparse_pixels(model):
        return None
    return (
        SparsePixelForward(model) if isinstance(model, JudgeCNN) else SparsePixelMLPForward(model)
    )


def _max_pool_2x2(x: torch.Tensor) -> torch.Tensor:
    """Max over dims -4 and -2 (each of size 2) of ``(..., H, 2, W, 2, C)``: 2x2 pooling of a
    channels-last map, as three elementwise maxima of contiguous channel vectors."""
    a = torch.maximum(x[..., 0, :, 0, :], x[..., 0, :, 1, :])
    return torch.maximum(a, torch.maximum(x[..., 1, :, 0, :], x[..., 1, :, 1, :]))


def compact_pixels(values: torch.Tensor, mask: torch.Tensor):
    """``(pixels, pixel_values, present)``, each ``(B, K)`` with K the most pixels any row
    reveals (at least 1), from dense ``values (B, 784)`` and ``mask (B, 784)``: each row's
    revealed pixels in row-major order, padded with ``present`` False."""
    counts = mask.sum(1)
    k = max(int(counts.max()) if len(mask) else 0, 1)
    row, pixel = mask.nonzero(as_tuple=True)  # row-major: each row's pixels in order
    slot = torch.arange(len(row)) - (torch.cumsum(counts, 0) - counts)[row]
    pixels = torch.zeros(len(mask), k, dtype=torch.long)
    pixels[row, slot] = pixel
    present = torch.arange(k)[None, :] < counts[:, None]
    return pixels, values.gather(1, pixels) * present, present
