"""Hand-drawn digits in MNIST's format.

MNIST digits were fitted into a 20x20 box (aspect ratio kept, antialiased) and placed in a 28x28
field with their centre of mass at the centre. A digit drawn on a canvas is brought into the same
format before the judges see it, since they were trained on nothing else.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

SIDE = 28
BOX = 20
#: Values at or below this count as background when finding the digit's bounding box.
INK = 1.0 / 255.0


def center_digit(image: np.ndarray) -> np.ndarray:
    """A ``(28, 28)`` image with values in [0, 1], its ink fitted into a 20x20 box and moved so
    its centre of mass sits at the centre of the field (MNIST's preprocessing)."""
    image = np.asarray(image, dtype=np.float32)
    if image.shape != (SIDE, SIDE):
        raise ValueError(f"expected a {SIDE}x{SIDE} image, got shape {image.shape}")
    rows, cols = np.nonzero(image > INK)
    if len(rows) == 0:
        raise ValueError("the image is empty: draw a digit first")
    crop = image[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    h, w = crop.shape
    scale = BOX / max(h, w)
    size = (max(1, round(h * scale)), max(1, round(w * scale)))
    fitted = F.interpolate(torch.from_numpy(np.ascontiguousarray(crop))[None, None], size=size,
                           mode="bilinear", antialias=True, align_corners=False)[0, 0].numpy()  # fmt: skip
    fitted = np.clip(fitted, 0.0, 1.0)
    mass = fitted.sum()
    ys, xs = np.indices(fitted.shape)
    com_y, com_x = (ys * fitted).sum() / mass, (xs * fitted).sum() / mass
    centre = (SIDE - 1) / 2
    top = int(np.clip(round(centre - com_y), 0, SIDE - size[0]))
    left = int(np.clip(round(centre - com_x), 0, SIDE - size[1]))
    out = np.zeros((SIDE, SIDE), dtype=np.float32)
    out[top : top + size[0], left : left + size[1]] = fitted
    return out
