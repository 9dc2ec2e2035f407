"""Published numbers the experiments are compared with (../shared/REFERENCE.md).

Section B, "Setup table and exact play against the frozen judge", full 10,000-image test sets,
in percent, from the 2026 post on quantilised debate and consultancy on image cells.
"""

from __future__ import annotations

SETUP_COLUMNS = ("gold", "perfect", "sparse", "ensemble", "cons", "D2t", "D4t", "J2t", "J4t")

SETUP_TABLE: dict[str, tuple[float, ...]] = {
    "mnist": (99.24, 99.24, 60.59, 93.53, 90.44, 95.25, 95.30, 88.81, 89.86),
    "mnist-whitened": (99.74, 99.74, 57.99, 94.73, 71.95, 93.00, 93.32, 72.82, 75.76),
    "fashionmnist": (90.51, 90.52, 66.66, 79.41, 72.59, 79.50, 79.61, 76.22, 77.40),
    "fashionmnist-whitened": (97.00, 96.83, 55.61, 72.50, 50.62, 73.30, 73.56, 62.14, 64.33),
    "cifar10": (70.88, 70.15, 39.30, 49.09, 40.86, 47.84, 47.83, 42.44, 42.88),
    "cifar10-whitened": (69.62, 67.36, 31.04, 44.35, 31.53, 40.34, 40.33, 32.16, 33.34),
}


def published_setup(variant: str) -> dict[str, float]:
    """The published setup row of a variant, column name to percent."""
    return dict(zip(SETUP_COLUMNS, SETUP_TABLE[variant], strict=True))
