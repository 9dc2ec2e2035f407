"""Learned debaters for the sparse-pixel MNIST debate (the public demo's agents, seed 002).

Two policy networks (1588 -> 512 -> 512 -> 784; :mod:`debatelab.games.learned`) are trained
against the frozen pixel judge of ``debatelab pixels``: first a warm-up that imitates the pixels
the judge's Grad-CAM saliency ranks highest for the mover's claimed class, then self-play
REINFORCE (the honest network maximises the judge's preference for the true class over the
liar's claim, the liar network the opposite), with a leave-one-out baseline. Training draws a
liar claim per image and step; both phases checkpoint every epoch and resume. After training,
the debaters play the same test images as the search agents, under precommit against all nine
liars: learned against learned, and learned against each other agent on either side.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch

from ..atomic import write_json
from ..data import load_raw
from ..games.learned import (
    DebaterNets,
)
from ..judges.pixel import (
    PixelJudge,
)
from ..options import IMAGES, image_indices
from ..report.runs import RunFolder
from ..resume import KeyedPieces
from ..training.debaters import (  # noqa: F401  (the debaters' training, and its old names)
    DebaterTrainConfig,
    _advance,
    _liars,
    agent_named,
    get_debaters,
    load_debaters,
    play_pair,
    train_debaters,
)

OPPONENTS = ("learned", "greedy", "random", "mcts10", "mcts100", "mcts1000")


@dataclass
class AgentsConfig:
    """Settings of `debatelab agents train`: train (or load) the debaters, then evaluate them."""

    train: DebaterTrainConfig = field(default_factory=DebaterTrainConfig)
    """How the debaters are trained."""
    images: str = field(default="0:500", metadata=IMAGES)
    """Test images of the final table: 'all', 'N' (the first N), 'start:stop' or
    'start:stop:step'."""
    opponents: str = "learned,greedy,random,mcts10,mcts100"
    """Agents the learned debaters face on either side (comma-separated; mctsR is MCTS with R
    rollouts per move). 'learned' plays learned against learned; every other agent X plays
    learned honest against X liar and X honest against learned liar (and X against X, see
    --mirror)."""
    mirror: bool = field(default=True, metadata={"flag": "--mirror/--no-mirror"})
    """Also play each opponent against itself (X honest against X liar) on the same images."""
    threads: int | None = field(default=None, compare=False, metadata={"min": 1})
    """Torch CPU threads (default: torch's choice)."""

    def __post_init__(self):
        for name in self.opponent_list():
            agent_named(name)  # raises on an unknown name

    def opponent_list(self) -> list[str]:
        return [s.strip() for s in self.opponents.split(",") if s.strip()]


def _pair_generator(seed: int, honest: str, liar: str) -> torch.Generator:
    return torch.Generator().manual_seed(zlib.crc32(f"{seed}/{honest}/{liar}".encode()))


def evaluate_pairs(cfg: AgentsConfig, nets: DebaterNets, judge: PixelJudge, images, labels,
                   folder: KeyedPieces, progress: bool = True) -> list[dict]:  # fmt: skip
    """Every (honest agent, liar agent) pair of the table on ``images`` under precommit, each
    pair stored in ``folder`` when finished (a rerun reads it back)."""
    pairs = []
    for name in cfg.opponent_list():
        if name == "learned":
            pairs.append(("learned", "learned"))
        else:
            pairs += [("learned", name), (name, "learned")] + [(name, name)] * cfg.mirror
    rules = cfg.train.rules()
    rows = []
    for honest, liar in pairs:
        path = folder.path(f"{honest}-vs-{liar}.json")
        if path.exists():
            rows.append(json.loads(path.read_text()))
            continue
        gen = _pair_generator(cfg.train.seed, honest, liar)
        wins, record = play_pair(honest, liar, nets, judge, images, labels, rules, gen)
        row = {"honest": honest, "liar": liar, "n_images": len(images),
               "image_win_rate": float(wins.mean()),
               "image_win_rate_se": float(np.sqrt(wins.mean() * (1 - wins.mean()) / len(wins))),
               "game_win_rate": float(record.honest_win.mean())}  # fmt: skip
        write_json(path, row)
        rows.append(row)
        if progress:
            print(f"{honest} (honest) vs {liar} (liar): {100 * row['image_win_rate']:.1f} %")
    return rows


def plot_training_curve(history: list[dict], path: Path, title: str | None = None) -> Path:
    """Win rates on the curve images after each epoch (warm-up epochs shaded)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    epochs = [h["epoch"] for h in history]
    for key, style in (("learned_vs_learned", "o-"), ("learned_vs_random", "s--"),
                       ("random_vs_learned", "s:"), ("learned_vs_greedy", "^--"),
                       ("greedy_vs_learned", "^:")):  # fmt: skip
        if key in history[0]:
            honest, liar = key.split("_vs_")
            ax.plot(epochs, [100 * h[key] for h in history], style,
                    label=f"{honest} honest vs {liar} liar")  # fmt: skip
    warm = [h["epoch"] for h in history if h.get("phase") == "warmup"]
    if warm:
        ax.axvspan(0.5, max(warm) + 0.5, color="0.9", label="warm-up")
    ax.set_xlabel("epoch")
    ax.set_ylabel("honest wins vs all 9 liars, %")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def report_text(cfg: AgentsConfig, rows: list[dict], history: list[dict]) -> str:
    t = cfg.train
    lines = [
        f"# Learned debaters, {t.pixels} pixels",
        "",
        f"Precommit, {t.first} reveals first; test images {cfg.images} ({rows[0]['n_images']}); "
        f"honest wins = the honest player beats all nine liars of an image. Trained "
        f"{t.warmup_epochs} warm-up + {t.epochs} REINFORCE epochs.",
        "",
        "| honest agent | liar agent | honest wins, % (SE) | games won, % |",
        "|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['honest']} | {r['liar']} | {100 * r['image_win_rate']:.1f} "
                     f"({100 * r['image_win_rate_se']:.1f}) | {100 * r['game_win_rate']:.1f} |")  # fmt: skip
    lines += ["", "![training curve](training_curve.png)", ""]
    return "\n".join(lines)


def run(cfg: AgentsConfig, folder: RunFolder) -> dict:
    """Train (or load from the cache) the debaters, then play the table; returns the metrics."""
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    folder.seeds.update({"debaters": cfg.train.seed, "judge": cfg.train.judge_config().seed})
    trained, judge = get_debaters(cfg.train, folder.data_dir, folder.cache_dir, folder.progress)
    x, y = load_raw("mnist", "test", folder.data_dir)
    indices = image_indices(cfg.images, len(x))
    pieces = KeyedPieces(folder.path / "pairs", {"train": cfg.train.key(), "images": cfg.images,
                                                  "opponents": cfg.opponents})  # fmt: skip
    rows = evaluate_pairs(cfg, trained.model, judge, x[indices],
                          y[indices].astype(np.int64), pieces, folder.progress)  # fmt: skip
    t = cfg.train
    plot_training_curve(trained.history, folder.path / "training_curve.png",
                        f"K = {t.pixels}, test images {t.curve_images} (against greedy: the "
                        f"first {t.curve_greedy_images})")  # fmt: skip
    write_json(folder.path / "history.json", trained.history)
    (folder.path / "report.md").write_text(report_text(cfg, rows, trained.history))
    metrics = {f"{r['honest']}_vs_{r['liar']}_win_rate": r["image_win_rate"] for r in rows}
    metrics.update({"n_images": len(indices), "debaters_checkpoint": str(trained.path),
                    "train": asdict(cfg.train)})  # fmt: skip
    folder.echo(json.dumps({k: v for k, v in metrics.items() if k.endswith("rate")}, indent=2))
    return metrics
