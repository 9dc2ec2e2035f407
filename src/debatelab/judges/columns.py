"""The reference columns of REFERENCE B from all-mask probabilities.

- sparse: judge accuracy on a uniformly random mask, the exact expectation over all masks;
- ensemble: argmax of the judge's probabilities averaged over all masks;
- perfect: judge accuracy on the mask where the judge is most confident in the gold classifier's
  predicted class (ties between masks go to the first in combinations order).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def column_hits(
    probs: np.ndarray, labels: np.ndarray, gold_pred: np.ndarray
) -> dict[str, np.ndarray]:
    """Per-image hits of each column for probabilities ``(n, n_masks, K)``."""
    labels = np.asarray(labels)
    gold_pred = np.asarray(gold_pred)
    rows = np.arange(len(probs))
    judge_pred = probs.argmax(axis=2)  # (n, n_masks)
    sparse = (judge_pred == labels[:, None]).mean(axis=1)
    ensemble = probs.mean(axis=1, dtype=np.float64).argmax(axis=1) == labels
    best_mask = probs[rows, :, gold_pred].argmax(axis=1)
    perfect = judge_pred[rows, best_mask] == labels
    return {"sparse": sparse, "ensemble": ensemble.astype(float), "perfect": perfect.astype(float)}


def reference_columns(
    chunks: Iterable[tuple[int, np.ndarray]], labels: np.ndarray, gold_pred: np.ndarray
) -> dict[str, float]:
    """Accuracies of the sparse, ensemble and perfect columns, streamed over image chunks, and
    the standard error of each over images (``<column>_accuracy_se``)."""
    totals: dict[str, float] = {}
    squares: dict[str, float] = {}
    n = 0
    for lo, probs in chunks:
        hits = column_hits(probs, labels[lo : lo + len(probs)], gold_pred[lo : lo + len(probs)])
        for key, value in hits.items():
            totals[key] = totals.get(key, 0.0) + float(value.sum())
            squares[key] = squares.get(key, 0.0) + float(np.square(value, dtype=np.float64).sum())
        n += len(probs)
    if n != len(labels):
        raise ValueError(f"chunks cover {n} images but {len(labels)} labels were given")
    out = {f"{key}_accuracy": value / n for key, value in totals.items()}
    for key, total in totals.items():
        out[f"{key}_accuracy_se"] = standard_error_from_sums(total, squares[key], n)
    return out


def standard_error_from_sums(total: float, squares: float, n: int) -> float:
    """Standard error of a mean over ``n`` per-image values from their sum and sum of squares
    (sample variance with n - 1; 0 for a single image)."""
    if n < 2:
        return 0.0
    variance = max(squares - total * total / n, 0.0) / (n - 1)
    return float(np.sqrt(variance / n))


def standard_error(values: np.ndarray) -> float:
    """Standard error of the mean of per-image values."""
    values = np.asarray(values, dtype=np.float64)
    return standard_error_from_sums(
        float(values.sum()), float(np.square(values).sum()), len(values)
    )
