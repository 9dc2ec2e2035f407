"""Worm and mesh plots of the best-of-N debate proxy: proposer win rate (x) against proposer
accuracy (y) as optimisation pressure grows. Drawn on a bare ``Figure`` (no pyplot state)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from ..atomic import write_atomic


@dataclass
class WormLine:
    """One worm: a proposer policy under growing pressure n."""

    label: str
    """Legend entry, e.g. 'critique, critic Bo10'."""
    win_rate: np.ndarray
    """(len n,) question-averaged proposer win rate."""
    accuracy: np.ndarray
    """(len n,) question-averaged proposer accuracy."""
    n_labels: list[str]
    """Label of each point's proposer policy ('Bo1' ... 'Bo20')."""
    accuracy_interval: tuple[np.ndarray, np.ndarray] | None = None
    """Optional (low, high) of the accuracy, drawn as error bars."""
    bold: bool = False
    """Draw thicker (an optimised inner player)."""
    color: str | None = None
    """Matplotlib colour (default: the cycle)."""


@dataclass
class MeshPanel:
    """An n x m mesh: worms of constant critic policy joined across at constant n."""

    title: str
    """Panel title."""
    win_rate: np.ndarray
    """(len n, len m) question-averaged win rate."""
    accuracy: np.ndarray
    """(len n, len m) question-averaged accuracy."""
    n_labels: list[str]
    """Proposer policy labels."""
    m_labels: list[str]
    """Critic policy labels."""
    highlight: list[tuple[str, list[tuple[int, int]]]] = field(default_factory=list)
    """Optional paths through the mesh as (label, [(n index, m index), ...])."""


def _save(fig: Figure, path: str | Path) -> Path:
    return write_atomic(path, lambda p: fig.savefig(p, format="png", dpi=130,
                                                    bbox_inches="tight"))  # fmt: skip


def _draw_worm(ax, worm: WormLine, color):
    x, y = np.asarray(worm.win_rate), np.asarray(worm.accuracy)
    lw = 2.8 if worm.bold else 1.5
    ax.plot(x, y, "-", color=color, lw=lw, label=worm.label, alpha=0.9)
    ax.plot(x[0], y[0], "o", mfc="white", mec=color, ms=6)
    ax.plot(x[1:], y[1:], ".", color=color, ms=4)
    if len(x) > 1:
        ax.annotate("", xy=(x[-1], y[-1]), xytext=(x[-2], y[-2]),
                    arrowprops={"arrowstyle": "-|>", "color": color, "lw": lw})  # fmt: skip
    ax.annotate(worm.n_labels[-1], (x[-1], y[-1]), textcoords="offset points", xytext=(4, 2),
                fontsize=7, color=color)  # fmt: skip
    if worm.accuracy_interval is not None:
        lo, hi = (np.asarray(a) for a in worm.accuracy_interval)
        ax.fill_between(x, lo, hi, color=color, alpha=0.08, lw=0)
        ax.errorbar(x[-1], y[-1], yerr=[[y[-1] - lo[-1]], [hi[-1] - y[-1]]], color=color,
                    capsize=3, lw=1)  # fmt: skip


def worm_figure(panels: dict[str, list[WormLine]], path: str | Path, title: str = "") -> Path:
    """One panel per protocol (or group), each with its worms; hollow dots mark n = 1."""
    fig = Figure(figsize=(4.2 * len(panels), 4.0))
    axes = fig.subplots(1, len(panels), squeeze=False, sharey=True)[0]
    cycle = [f"C{i}" for i in range(10)]
    for ax, (name, worms) in zip(axes, panels.items(), strict=True):
        for i, worm in enumerate(worms):
            _draw_worm(ax, worm, worm.color or cycle[i % len(cycle)])
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("proposer win rate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    axes[0].set_ylabel("proposer accuracy")
    if title:
        fig.suptitle(title, fontsize=11)
    return _save(fig, path)


def mesh_figure(panels: list[MeshPanel], path: str | Path, title: str = "") -> Path:
    """Meshes: solid lines of constant critic policy (n grows along them, light to dark), thin
    grey lines of constant n across critic policies."""
    fig = Figure(figsize=(4.6 * len(panels), 4.2))
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, panel in zip(axes, panels, strict=True):
        x, y = np.asarray(panel.win_rate), np.asarray(panel.accuracy)
        n_m = x.shape[1]
        for i in range(x.shape[0]):
            ax.plot(x[i], y[i], "-", color="0.6", lw=0.6)
        colors = [(0.1, 0.3 + 0.6 * (1 - j / max(n_m - 1, 1)), 0.35) for j in range(n_m)]
        for j in range(n_m):
            ax.plot(x[:, j], y[:, j], "-", color=colors[j], lw=1.2,
                    label=f"critic {panel.m_labels[j]}" if j in (0, n_m - 1) else None)  # fmt: skip
        ax.plot(x[0, 0], y[0, 0], "o", mfc="white", mec="k", ms=6)
        for k, (label, path_idx) in enumerate(panel.highlight):
            px = [x[i, j] for i, j in path_idx]
            py = [y[i, j] for i, j in path_idx]
            ax.plot(px, py, "-", color=("C0", "C3", "C4")[k % 3], lw=2.5, label=label)
        ax.set_title(panel.title, fontsize=10)
        ax.set_xlabel("proposer win rate")
        ax.set_ylabel("proposer accuracy")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="best")
    if title:
        fig.suptitle(title, fontsize=11)
    return _save(fig, path)
