"""Figures of the frozen-judge sweep: capability curves, (k_A, k_B) heat maps, example plays.

Capability curves put the quantile probability k / n (n = A's options at its first move) on a
log x-axis that *decreases* to the right, as the source post draws them: zero capability (uniform
play, the ensemble) on the left, the exact maximiser / minimax on the right. Heat maps put the
strongest A (k_A = 1) on the top row and the strongest B (k_B = 1) in the rightmost column, so
the top-right corner is full minimax and the bottom-left is both agents playing at random.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from ..atomic import write_atomic  # noqa: E402
from ..information import entropy_of_counts  # noqa: E402

LABELS = {"selection": "selection accuracy", "judge": "judge accuracy", "win": "win rate"}
COLORS = {"consultancy": "tab:orange", "consultancy_confidence": "tab:red", "debate2": "tab:blue",
          "debate4": "tab:purple"}  # fmt: skip
NAMES = {"consultancy": "consultancy (per-claim ranking)",
         "consultancy_confidence": "consultancy (confidence ranking)",
         "debate2": "debate 2-turn (diagonal)", "debate4": "debate 4-turn (diagonal)"}  # fmt: skip


def save_figure(fig, path: Path) -> Path:
    """Write a figure atomically and close it."""
    write_atomic(path, lambda tmp: fig.savefig(tmp, format=Path(path).suffix[1:], dpi=130,
                                               bbox_inches="tight"))  # fmt: skip
    plt.close(fig)
    return Path(path)


def capability_curves(curves: dict[str, tuple[np.ndarray, np.ndarray, int]], metric: str,
                      path: Path, references: dict[str, float] | None = None,
                      title: str = "") -> Path:  # fmt: skip
    """One line per protocol: ``curves[name] = (ks, values, n_options)``; y in percent.

    ``references`` draws horizontal lines (e.g. ``{"gold": 0.99, "ensemble": 0.935}``).
    """
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    draw_curves(ax, curves, metric, references)
    ax.set_title(title or LABELS.get(metric, metric))
    ax.legend(fontsize=8)
    return save_figure(fig, path)


def draw_curves(ax, curves: dict[str, tuple[np.ndarray, np.ndarray, int]], metric: str,
                references: dict[str, float] | None = None) -> None:  # fmt: skip
    """Capability curves of :func:`capability_curves` on one axis."""
    for name, (ks, values, n) in curves.items():
        q = np.asarray(ks, dtype=float) / n
        ax.plot(q, 100 * np.asarray(values), marker="o", ms=2.5, lw=1.5,
                color=COLORS.get(name), label=NAMES.get(name, name))  # fmt: skip
    styles = {"gold": ("tab:green", "--"), "ensemble": ("grey", ":")}
    for name, value in (references or {}).items():
        color, ls = styles.get(name, ("black", "-."))
        ax.axhline(100 * value, color=color, ls=ls, lw=1, label=name)
    ax.set_xscale("log")
    q_min = min(float(np.min(ks)) / n for ks, _, n in curves.values())
    ax.set_xlim(1.4, q_min / 1.4)  # decreasing: zero capability (q = 1) on the left
    ax.set_xlabel("quantile probability k / n  (left: uniform play, right: exact)")
    ax.set_ylabel(f"{LABELS.get(metric, metric)} (%)")
    ax.grid(alpha=0.3, which="both")


def curve_panels(panels: dict[str, dict], metric: str, path: Path,
                 references: dict[str, dict[str, float]] | None = None,
                 per_row: int = 3) -> Path:  # fmt: skip
    """One panel of capability curves per title (e.g. per dataset variant), ``per_row`` per
    row."""
    cols = min(per_row, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax in axes.ravel()[len(panels) :]:
        ax.axis("off")
    for ax, (title, curves) in zip(axes.ravel(), panels.items(), strict=False):
        draw_curves(ax, curves, metric, (references or {}).get(title))
        ax.set_title(title, fontsize=10)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return save_figure(fig, path)


def heat_map(grid: np.ndarray, ks_a: np.ndarray, ks_b: np.ndarray, path: Path, title: str,
             label: str = "%") -> Path:  # fmt: skip
    """A ``(len(ks_a), len(ks_b))`` grid in percent; strongest A on top, strongest B right."""
    values = 100 * np.asarray(grid)[:, ::-1]  # row 0 (top) is k_A = 1; last column is k_B = 1
    fig, ax = plt.subplots(figsize=(6.4, 5.2))
    image = ax.imshow(values, origin="upper", cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(ks_b)))
    ax.set_xticklabels([str(k) for k in np.asarray(ks_b)[::-1]], rotation=90, fontsize=6)
    ax.set_yticks(range(len(ks_a)))
    ax.set_yticklabels([str(k) for k in ks_a], fontsize=6)
    ax.set_xlabel("k_B (B's top-k; strongest on the right)")
    ax.set_ylabel("k_A (A's top-k; strongest on top)")
    ax.set_title(title)
    fig.colorbar(image, ax=ax, label=label)
    return save_figure(fig, path)


def example_plays(images: np.ndarray, plays: list[dict], grid: int, path: Path,
                  title: str = "") -> Path:  # fmt: skip
    """A grid of images with A's cells red and B's blue, turn numbers on the cells.

    ``plays[i]`` has ``line`` (cells per turn, A first), ``label``, ``claim`` and ``top`` (a list
    of ``(class, probability)`` of the judge on the revealed mask). Correct claims go on the top
    row, wrong ones on the bottom row.
    """
    rows = [[p for p in plays if p["claim"] == p["label"]],
            [p for p in plays if p["claim"] != p["label"]]]  # fmt: skip
    rows = [r for r in rows if r]
    n_cols = max(len(r) for r in rows)
    fig, axes = plt.subplots(len(rows), n_cols, figsize=(1.9 * n_cols, 2.5 * len(rows)),
                             squeeze=False)  # fmt: skip
    for ax in axes.ravel():
        ax.axis("off")
    for r, row in enumerate(rows):
        for c, play in enumerate(row):
            _draw_play(axes[r, c], images[play["index"]], play, grid)
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def _draw_play(ax, image: np.ndarray, play: dict, grid: int) -> None:
    img = np.asarray(image, dtype=float)
    if img.ndim == 3:  # (C, H, W): grey or colour, rescaled to [0, 1] for display
        img = img[0] if img.shape[0] == 1 else np.transpose(img, (1, 2, 0))
    img = (img - img.min()) / max(float(img.max() - img.min()), 1e-12)
    size = img.shape[0]
    cell = size / grid
    ax.imshow(img, cmap="gray", extent=(0, size, size, 0))
    for turn, cells in enumerate(play["line"]):
        color = "red" if turn % 2 == 0 else "blue"
        for cell_index in cells:
            r, c = divmod(int(cell_index), grid)
            ax.add_patch(plt.Rectangle((c * cell, r * cell), cell, cell, fill=True,
                                       alpha=0.35, color=color))  # fmt: skip
            ax.add_patch(plt.Rectangle((c * cell, r * cell), cell, cell, fill=False,
                                       lw=1.2, color=color))  # fmt: skip
            ax.text((c + 0.5) * cell, (r + 0.5) * cell, str(turn + 1), color="white",
                    ha="center", va="center", fontsize=7, weight="bold")  # fmt: skip
    ax.set_title(f"true {play['label']} · claim {play['claim']}", fontsize=8)
    top = ", ".join(f"{k}: {p:.2f}" for k, p in play["top"])
    ax.text(0.5, -0.06, top, transform=ax.transAxes, ha="center", va="top", fontsize=7)
    ax.axis("off")


def epoch_curves(histories: dict[str, list[dict]], path: Path,
                 published: dict[str, dict[str, np.ndarray]] | None = None,
                 published_epoch_images: int | None = None) -> Path:  # fmt: skip
    """Trained judges' metrics against training: one panel per metric (judge accuracy, selection
    accuracy, belief, training loss), one line per judge, the published curves dashed in the
    same colour where given (``published[label][metric]``, percent per epoch). The x-axis is
    training images seen when the histories record it (``images_seen``) and
    ``published_epoch_images`` places the published epochs on it, else epochs."""
    metrics = [m for m in ("judge", "selection", "belief", "loss")
               if any(m in e for h in histories.values() for e in h)]  # fmt: skip
    by_images = all("images_seen" in e for h in histories.values() for e in h)
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.2 * len(metrics), 3.6), squeeze=False)
    colors = plt.get_cmap("tab20")
    for i, (label, history) in enumerate(histories.items()):
        color = colors(i % 20)
        for ax, metric in zip(axes[0], metrics, strict=True):
            xs = [e["images_seen"] if by_images else e["epoch"] for e in history if metric in e]
            scale = 1 if metric == "loss" else 100
            values = [scale * e[metric] for e in history if metric in e]
            ax.plot(xs, values, "o-", ms=3, color=color, label=label)
            pub = (published or {}).get(label, {}).get(metric)
            if pub is not None and (published_epoch_images or not by_images):
                step = published_epoch_images if by_images else 1
                ax.plot(step * np.arange(1, len(pub) + 1), pub, "--", color=color, alpha=0.7)
    for ax, metric in zip(axes[0], metrics, strict=True):
        ax.set_xlabel("training images seen" if by_images else "epoch")
        if by_images:
            ax.set_xscale("log")
            # ticks at 1, 2 and 5 per decade, written as thousands: the default minor labels
            # overlap on a short range and a range within one decade gets no major label
            ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(
                lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}"))  # fmt: skip
            ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_ylabel({"loss": "training loss", "belief": "belief (%)"}.get(
            metric, f"{LABELS.get(metric, metric)} (%)"))  # fmt: skip
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="best")
    if published:
        fig.suptitle("solid: this run; dashed: published (REFERENCE B)", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)


def codeword_bars(counts: dict[str, list[int]], path: Path, title: str = "") -> Path:
    """The argument channel's codeword distribution: one panel per arm, the share of test plays
    carrying each of the 16 codewords (binary labels, decision 1 most significant), with the
    plug-in entropy in the panel title."""
    names = list(counts)
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(4.4 * max(1, len(names)), 3.2),
                             squeeze=False)  # fmt: skip
    for ax, name in zip(axes[0], names, strict=False):
        c = np.asarray(counts[name], dtype=float)
        share = c / max(c.sum(), 1)
        h = entropy_of_counts(c) if c.sum() else 0.0
        bits = int(np.log2(len(c)))
        ax.bar(np.arange(len(c)), 100 * share, color="tab:blue")
        ax.set_xticks(np.arange(len(c)), [format(g, f"0{bits}b") for g in range(len(c))],
                      rotation=90, fontsize=7)  # fmt: skip
        ax.set_title(f"{name}: H = {h:.2f} bits", fontsize=9)
        ax.set_ylabel("test plays (%)")
        ax.grid(axis="y", alpha=0.3)
    if title:
        fig.suptitle(f"codewords, {title}", fontsize=9)
    fig.tight_layout()
    return save_figure(fig, path)
