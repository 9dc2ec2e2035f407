"""A dataset variant whose images this plug-in draws: seven-segment digits, 28x28, 10 classes.

Each image is a digit 0-9 lit on a seven-segment display of random size, stroke, position and
brightness, with noise; 10,000 training and 500 test images, the same on every machine (a fixed
seed per split). Preprocessing is debatelab's own (resize to 18x18, standardisation).
"""

from __future__ import annotations

import numpy as np

from debatelab.data.variants import DatasetSource, Variant

#: The segments lit for each digit: a top, b upper right, c lower right, d bottom, e lower
#: left, f upper left, g middle.
LIT = ["abcdef", "bc", "abdeg", "abcdg", "bcfg", "acdfg", "acdefg", "abc", "abcdefg", "abcdfg"]
SIZES = {"train": 10_000, "test": 500}
SEEDS = {"train": 0, "test": 1}


def draw(digit: int, rng: np.random.Generator) -> np.ndarray:
    """One 28x28 ``uint8`` image of ``digit``."""
    w, h, t = rng.integers(8, 14), rng.integers(14, 21), rng.integers(2, 4)
    top, left = rng.integers(2, 27 - h), rng.integers(2, 27 - w)
    mid, bottom, right = top + h // 2, top + h, left + w
    boxes = {"a": (top, top + t, left, right), "d": (bottom - t, bottom, left, right),
             "g": (mid - t // 2, mid - t // 2 + t, left, right),
             "f": (top, mid + 1, left, left + t), "b": (top, mid + 1, right - t, right),
             "e": (mid, bottom, left, left + t), "c": (mid, bottom, right - t, right)}  # fmt: skip
    image = np.zeros((28, 28))
    for segment in LIT[digit]:
        r0, r1, c0, c1 = boxes[segment]
        image[r0:r1, c0:c1] = rng.uniform(0.6, 1.0)
    image += rng.normal(0.0, 0.1, image.shape)
    return (np.clip(image, 0.0, 1.0) * 255).astype(np.uint8)


def load(split: str, data_dir=None, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The raw images and labels of ``split``: drawn, not read (``data_dir`` is not used)."""
    rng = np.random.default_rng(SEEDS[split])
    labels = rng.integers(0, 10, SIZES[split]).astype(np.uint8)
    return np.stack([draw(int(d), rng) for d in labels]), labels


SOURCE = DatasetSource("segments", load, classes=tuple("0123456789"), shape=(28, 28))

#: The registered part (entry point ``segments`` in the group ``debatelab.variants``). No
#: published numbers: the study shows its own rows alone.
SEGMENTS = Variant("segments", SOURCE, "seven-segment digits drawn by the example plug-in")
