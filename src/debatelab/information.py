"""Plug-in entropies and mutual informations of discrete samples, in bits.

The argument-channel diagnostics (docs/trained-judges.md#channel) read what the debaters' bits
say: the entropy of the 4-bit codeword over the test plays, and per bit I(b; claim), I(b; y)
and I(b; y | claim). All estimators here are plug-in (empirical frequencies), as published.
"""

from __future__ import annotations

import numpy as np


def _ints(x, name: str) -> np.ndarray:
    a = np.asarray(x)
    if a.ndim != 1 or (a.size and not np.issubdtype(a.dtype, np.integer)):
        raise ValueError(f"{name} must be a 1-d array of integer labels, got {a.dtype} {a.shape}")
    if a.size and a.min() < 0:
        raise ValueError(f"{name} holds negative labels; use 0, 1, 2, ...")
    return a.astype(np.int64)


def entropy_of_counts(counts) -> float:
    """Entropy in bits of the distribution proportional to ``counts`` (zeros skipped)."""
    c = np.asarray(counts, dtype=float).ravel()
    if (c < 0).any() or c.sum() <= 0:
        raise ValueError("counts must be non-negative with a positive total")
    p = c[c > 0] / c.sum()
    return float(-(p * np.log2(p)).sum()) + 0.0  # never -0.0


def entropy(x) -> float:
    """Plug-in entropy in bits of the labels ``x``."""
    x = _ints(x, "x")
    if not x.size:
        raise ValueError("entropy of an empty sample")
    return entropy_of_counts(np.bincount(x))


def binary_entropy(p: float) -> float:
    """h(p) in bits: the entropy of one bit that is 1 with probability ``p``."""
    if not 0 <= p <= 1:
        raise ValueError(f"a probability lies in [0, 1], got {p}")
    return entropy_of_counts([p, 1 - p]) if 0 < p < 1 else 0.0


def joint_table(x, y) -> np.ndarray:
    """Counts of every (x, y) pair: ``table[i, j] = #{x = i, y = j}``."""
    x, y = _ints(x, "x"), _ints(y, "y")
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length ({len(x)} vs {len(y)})")
    table = np.zeros((x.max(initial=0) + 1, y.max(initial=0) + 1), dtype=np.int64)
    np.add.at(table, (x, y), 1)
    return table


def mutual_information_of_table(table) -> float:
    """I(X; Y) in bits of a joint count (or probability) table ``table[x, y]``."""
    t = np.asarray(table, dtype=float)
    if t.ndim != 2 or (t < 0).any() or t.sum() <= 0:
        raise ValueError("a joint table is a 2-d array of non-negative counts, not all zero")
    p = t / t.sum()
    px, py = p.sum(1, keepdims=True), p.sum(0, keepdims=True)
    nz = p > 0
    return float((p[nz] * np.log2(p[nz] / (px @ py)[nz])).sum())


def mutual_information(x, y) -> float:
    """Plug-in I(X; Y) in bits of paired labels."""
    return mutual_information_of_table(joint_table(x, y))


def conditional_mutual_information(x, y, z, min_count: int = 2) -> float:
    """Plug-in I(X; Y | Z) = sum_v P(Z = v) I(X; Y | Z = v) in bits; values v of Z with fewer
    than ``min_count`` samples are skipped (their share of P(Z) too), as published."""
    x, y, z = _ints(x, "x"), _ints(y, "y"), _ints(z, "z")
    if not len(x) == len(y) == len(z):
        raise ValueError("x, y and z must have the same length")
    total = 0.0
    for v in np.unique(z):
        sel = z == v
        if sel.sum() < min_count:
            continue
        total += sel.mean() * mutual_information(x[sel], y[sel])
    return total
