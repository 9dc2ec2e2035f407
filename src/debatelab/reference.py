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


#: Best capability (debate read on the diagonal k_A = k_B), REFERENCE B, percent, in the order of
#: BEST_COLUMNS.
BEST_COLUMNS = ("cons sel", "2t sel", "4t sel", "cons judge", "2t judge", "4t judge")
BEST_CAPABILITY = {
    "mnist": (93.58, 95.32, 95.43, 90.44, 88.81, 89.86),
    "mnist-whitened": (94.73, 95.44, 95.65, 79.46, 72.82, 75.76),
    "fashionmnist": (79.58, 80.02, 80.06, 76.71, 76.42, 77.40),
    "fashionmnist-whitened": (72.50, 74.95, 75.37, 63.17, 62.14, 64.33),
    "cifar10": (49.11, 49.49, 49.40, 44.35, 42.44, 42.88),
    "cifar10-whitened": (44.39, 44.67, 44.92, 35.93, 32.42, 33.34),
}
