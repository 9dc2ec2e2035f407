"""Plot the pixel debate's honest win rate against MCTS rollouts per move from run folders.

    python docs/pixel_curve.py RUN_DIR [RUN_DIR ...] [--out docs/img/pixel-rollouts.png]

Each RUN_DIR is a `debatelab pixels` run folder; runs with the same K, agent, rollouts and first
mover over disjoint image ranges are pooled (weighted by images). Runs with a non-MCTS agent
(greedy, random) are drawn as horizontal reference lines. Error bars are binomial standard
errors over images.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument(
        "--out", type=Path, default=Path(__file__).parent / "img" / "pixel-rollouts.png"
    )
    args = parser.parse_args()
    groups: dict[tuple, dict] = {}
    for run in args.runs:
        m = json.loads((run / "metrics.json").read_text())
        key = (m["pixels"], m["agent"], m["rollouts"], m["first"])
        if key in groups:  # pool disjoint image ranges of the same setting
            g, n = groups[key], groups[key]["n_images"] + m["n_images"]
            for name in ("honest_win_rate_precommit", "honest_win_rate_no_precommit"):
                if name in g and name in m:
                    g[name] = (g[name] * g["n_images"] + m[name] * m["n_images"]) / n
                else:
                    g.pop(name, None)
            g["n_images"] = n
            continue
        groups[key] = m
    rows = list(groups.values())
    for m in rows:
        print(
            f"K={m['pixels']} agent={m['agent']:6s} rollouts={m['rollouts'] or '-':>6} "
            f"images={m['n_images']:4d} first={m['first']:6s} "
            f"precommit={100 * m['honest_win_rate_precommit']:.1f} "
            f"no_precommit={100 * m.get('honest_win_rate_no_precommit', float('nan')):.1f}"
        )
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    for k, colour in ((6, "tab:blue"), (4, "tab:orange")):
        mcts = sorted(
            (m for m in rows if m["pixels"] == k and m["agent"] == "mcts"),
            key=lambda m: m["rollouts"],
        )
        if mcts:
            x = [m["rollouts"] for m in mcts]
            y = [100 * m["honest_win_rate_precommit"] for m in mcts]
            se = [
                100 * (p * (1 - p) / m["n_images"]) ** 0.5
                for p, m in zip((v / 100 for v in y), mcts, strict=True)
            ]
            ax.errorbar(
                x,
                y,
                yerr=se,
                marker="o",
                color=colour,
                capsize=3,
                label=f"K={k}, MCTS (images per point: "
                f"{', '.join(str(m['n_images']) for m in mcts)})",
            )
            for m, yy in zip(mcts, y, strict=True):
                ax.annotate(
                    f"{yy:.1f}",
                    (m["rollouts"], yy),
                    textcoords="offset points",
                    xytext=(5, -12),
                    fontsize=8,
                    color=colour,
                )
        for m in rows:
            if m["pixels"] == k and m["agent"] != "mcts":
                ax.axhline(100 * m["honest_win_rate_precommit"], color=colour, ls=":", lw=1)
                ax.text(
                    0.99,
                    100 * m["honest_win_rate_precommit"] - 2.2,
                    f"K={k} {m['agent']}, {m['n_images']} images: "
                    f"{100 * m['honest_win_rate_precommit']:.1f}",
                    fontsize=8,
                    color=colour,
                    ha="right",
                    transform=ax.get_yaxis_transform(),
                )
        published = {6: 88.9, 4: 85.2}[k]
        ax.axhline(published, color=colour, ls="--", lw=1)
        ax.text(
            0.01,
            published + 0.6,
            f"published K={k}: {published}",
            fontsize=8,
            color=colour,
            transform=ax.get_yaxis_transform(),
        )
    ax.set_xscale("log")
    ax.set_xlabel("MCTS rollouts per move")
    ax.set_ylabel("honest wins, precommit (% of images)")
    ax.set_title("2018 pixel debate: liar moves first, both agents equal")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=130)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
