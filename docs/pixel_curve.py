"""Plot the pixel debate's honest win rate against MCTS rollouts per move.

    python docs/pixel_curve.py [RUN_DIR ...] [--pixels 6] [--judge nonzero]
                               [--table docs/pixel_rollouts.csv]
                               [--append] [--out FILE]

The points are the rows of the table for K = ``--pixels`` and ``--judge`` (the measured rows
behind docs/results-pixel-debate.md's tables; run folders do not survive from one machine to the
next) plus any `debatelab pixels` run folders given (seed 0, the judge's default training):
runs with the same agent, rollouts, first mover and judge over disjoint image ranges are pooled
(weighted by images), and a pooled run replaces the table's row of the same setting.
``--append`` writes those rows into the table. One panel per first mover; in each, MCTS with
precommit (solid) and without (dashed), with binomial standard errors over images; greedy and
random agents as horizontal lines. Prints the table. The figure goes to ``--out``, by default
docs/img/pixel-rollouts[-kK][-JUDGE].png (K and the judge named unless 6 and the default).
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from debatelab.atomic import atomic_path  # noqa: E402
from debatelab.experiments.pixels import PUBLISHED  # noqa: E402

RATES = {"precommit": "honest_win_rate_precommit", "no precommit": "honest_win_rate_no_precommit"}


def key(m: dict) -> tuple:
    return m["pixels"], m["first"], m["agent"], m["rollouts"], m["judge"]


def pooled(runs: list[Path], pixels: int) -> list[dict]:
    groups: dict[tuple, dict] = {}
    for run in runs:
        m = json.loads((run / "metrics.json").read_text())
        config = json.loads((run / "config.json").read_text())
        other = {k: config[k] for k in ("seed", "judge_seed", "judge_epochs")
                 if config.get(k) not in (None, 0)}  # fmt: skip
        if other:
            raise SystemExit(f"{run}: the table holds seed-0 runs with the judge's default "
                             f"training; this run has {other}")  # fmt: skip
        m["judge"] = config.get("judge", DEFAULT_JUDGE)
        if m["pixels"] != pixels:
            continue
        manifest = json.loads((run / "manifest.json").read_text())
        m["wall_s"] = manifest.get("wall_time_total_s", manifest["wall_time_s"])
        # the count covers one sitting only: a resumed run's total is unknown
        evaluations = m.get("judge_evaluations_this_session")
        m["judge_evaluations"] = evaluations if manifest.get("sittings", 1) == 1 else None
        k = key(m)
        if k in groups:  # pool disjoint image ranges of the same setting
            g, n = groups[k], groups[k]["n_images"] + m["n_images"]
            for name in RATES.values():
                if name in g and name in m:
                    g[name] = (g[name] * g["n_images"] + m[name] * m["n_images"]) / n
                else:
                    g.pop(name, None)
            g["n_images"] = n
            g["wall_s"] += m["wall_s"]
            both = (g["judge_evaluations"], m["judge_evaluations"])
            g["judge_evaluations"] = None if None in both else sum(both)
            continue
        groups[k] = {**m, "remark": ""}
    return list(groups.values())


COLUMNS = ["pixels", "first", "agent", "rollouts", "judge", "n_images", *RATES.values(), "wall_s",
           "judge_evaluations", "remark"]  # fmt: skip
DEFAULT_JUDGE = "nonzero"
"""`debatelab pixels --judge`'s default, the judge of the rollout curve."""
COMMENT_MARK = "#"


def read_table(path: Path) -> tuple[list[str], list[dict]]:
    """The table's comment lines and its rows, typed as in a run's metrics.json."""
    lines = path.read_text().splitlines()
    comments = [line for line in lines if line.startswith(COMMENT_MARK)]
    rows = []
    for r in csv.DictReader(line for line in lines if not line.startswith(COMMENT_MARK)):
        m = {"pixels": int(r["pixels"]), "first": r["first"], "agent": r["agent"],
             "rollouts": int(r["rollouts"]) if r["rollouts"] else None,
             "judge": r.get("judge") or DEFAULT_JUDGE, "n_images": int(r["n_images"])}  # fmt: skip
        m.update({name: float(r[name]) for name in RATES.values() if r.get(name)})
        m["wall_s"] = float(r["wall_s"]) if r.get("wall_s") else None
        m["judge_evaluations"] = int(r["judge_evaluations"]) if r.get("judge_evaluations") else None
        m["remark"] = r.get("remark", "")
        rows.append(m)
    return comments, rows


def write_table(path: Path, comments: list[str], rows: list[dict]) -> None:
    """Atomically, rows sorted by K, judge (the default first), first mover, agent and
    rollouts."""
    order = sorted(rows, key=lambda m: (-m["pixels"], m["judge"] != DEFAULT_JUDGE, m["judge"],
                                        m["first"] != "liar", m["agent"] != "mcts", m["agent"],
                                        m["rollouts"] or 0))  # fmt: skip
    with atomic_path(path) as tmp, tmp.open("w", newline="") as f:
        f.writelines(line + "\n" for line in comments)
        writer = csv.DictWriter(f, COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        for m in order:
            rates = {name: f"{m[name]:.4f}" for name in RATES.values() if name in m}
            cost = {"wall_s": "" if m["wall_s"] is None else f"{m['wall_s']:.0f}",
                    "judge_evaluations": "" if m["judge_evaluations"] is None
                    else m["judge_evaluations"]}  # fmt: skip
            writer.writerow({**m, **rates, **cost, "rollouts": m["rollouts"] or ""})


def se(p: float, n: int) -> float:
    return 100 * (p * (1 - p) / n) ** 0.5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", type=Path)
    parser.add_argument("--pixels", type=int, default=6)
    parser.add_argument("--judge", default=DEFAULT_JUDGE, help="the rows of this judge (--judge of"
                        " `debatelab pixels`)")  # fmt: skip
    parser.add_argument("--table", type=Path, default=Path(__file__).parent / "pixel_rollouts.csv")
    parser.add_argument("--append", action="store_true", help="write the runs' rows into --table")
    parser.add_argument("--out", type=Path, help="the figure (default: see above)")
    args = parser.parse_args()
    if args.out is None:
        name = "pixel-rollouts" + ("" if args.pixels == 6 else f"-k{args.pixels}")
        name += "" if args.judge == DEFAULT_JUDGE else f"-{args.judge}"
        args.out = Path(__file__).parent / "img" / f"{name}.png"
    comments, table = read_table(args.table) if args.table.exists() else ([], [])
    runs = {key(m): m for m in pooled(args.runs, args.pixels)}
    table = [m for m in table if key(m) not in runs] + list(runs.values())
    if args.append and runs:
        write_table(args.table, comments, table)
        print(f"wrote {len(runs)} row(s) into {args.table}")
    rows = [m for m in table if m["pixels"] == args.pixels and m["judge"] == args.judge]
    firsts = [f for f in ("liar", "honest") if any(m["first"] == f for m in rows)]
    print("| first | agent | images | precommit (SE) | no precommit (SE) |")
    print("|---|---|---|---|---|")
    for m in sorted(rows, key=lambda m: (m["first"] != "liar", m["agent"], m["rollouts"] or 0)):
        agent = f"MCTS {m['rollouts']:,}" if m["agent"] == "mcts" else m["agent"]
        cells = [
            f"{100 * m[name]:.1f} ({se(m[name], m['n_images']):.1f})" if name in m else "-"
            for name in RATES.values()
        ]
        print(f"| {m['first']} | {agent} | {m['n_images']} | {' | '.join(cells)} |")
    fig, axes = plt.subplots(1, len(firsts), figsize=(6.0 * len(firsts), 4.4), sharex=True,
                             sharey=True, squeeze=False)  # fmt: skip
    for ax, first in zip(axes[0], firsts, strict=True):
        mine = [m for m in rows if m["first"] == first]
        mcts = sorted((m for m in mine if m["agent"] == "mcts"), key=lambda m: m["rollouts"])
        top = {m["rollouts"]: max(m.get(name, 0) for name in RATES.values()) for m in mcts}
        for (label, name), style in zip(RATES.items(), ("-", "--"), strict=True):
            pts = [m for m in mcts if name in m]
            if not pts:
                continue
            y = [100 * m[name] for m in pts]
            ax.errorbar([m["rollouts"] for m in pts], y, fmt="o" + style, capsize=3,
                        yerr=[se(m[name], m["n_images"]) for m in pts],
                        label=f"MCTS, {label}")  # fmt: skip
            for m, v in zip(pts, y, strict=True):
                dy = 6 if m[name] == top[m["rollouts"]] else -12  # the higher point's label above
                ax.annotate(f"{v:.1f}", (m["rollouts"], v), textcoords="offset points",
                            xytext=(5, dy), fontsize=8)  # fmt: skip
        for m in (m for m in mine if m["agent"] != "mcts"):
            colour = "tab:green" if m["agent"] == "greedy" else "tab:grey"
            v = 100 * m[RATES["precommit"]]
            ax.axhline(v, color=colour, ls=":", lw=1.2, label=f"{m['agent']}, precommit: {v:.1f}")
        if first == "liar":
            published = PUBLISHED[args.pixels]["debate"]
            ax.axhline(published, color="tab:red", ls="--", lw=1,
                       label=f"published (10,000 rollouts, precommit): {published}")  # fmt: skip
        n = sorted({m["n_images"] for m in mine})
        ax.set_title(f"{first} reveals first ({'/'.join(map(str, n))} images)", fontsize=10)
        ax.set_xscale("log")
        ax.set_xlabel("MCTS rollouts per move (both players)")
        ax.legend(fontsize=8, loc="best")
    axes[0][0].set_ylabel("honest wins (% of images)")
    judge = "" if args.judge == DEFAULT_JUDGE else f", judge {args.judge}"
    fig.suptitle(f"2018 pixel debate, K = {args.pixels}{judge}", fontsize=11)
    fig.tight_layout()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.out, dpi=130)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
