"""The 2018 sparse-pixel MNIST debate (REFERENCE A) with tree-search agents.

Trains (or loads) the pixel judge, measures its accuracy on random nonzero pixels, plays every
chosen test image against all nine precommitted liars and once without precommit, and writes a
per-game move log and a figure of example debates. Games are played in chunks of images; each
finished chunk is stored in the run folder, so an interrupted run continues where it stopped.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch

from ..atomic import write_atomic, write_json
from ..cluster import Cluster, run_pieces
from ..data import load_raw
from ..games.agents import MCTSAgent, MCTSConfig, PolicyAgent, greedy_agent, random_agent
from ..games.learned import LearnedAgent
from ..games.pixels import PixelRules, image_honest_wins, liar_games, play
from ..judges.columns import standard_error
from ..judges.pixel import (
    PixelJudge,
    PixelTrainConfig,
    get_pixel_judge,
    pixel_judge_config,
    random_pixel_accuracy,
)
from ..options import CLUSTER, DEVICE, IMAGES, image_indices, parse_device
from ..policies import as_policy
from ..progress import progress as progress_bar
from ..report.runs import RunFolder
from ..resume import KeyedPieces

PUBLISHED = {4: {"judge": 48.2, "debate": 85.2}, 6: {"judge": 59.4, "debate": 88.9}}
"""Irving et al. (2018): judge accuracy on random pixels and honest wins with precommit, %."""
AGENTS = ("mcts", "greedy", "random", "learned")


@dataclass
class PixelExperimentConfig:
    """Settings of one sparse-pixel debate run."""

    pixels: int = field(default=6, metadata={"min": 1, "max": 784})
    """Pixels revealed per debate and seen by the judge in training (the paper: 4 or 6)."""
    rollouts: int = field(default=1000, metadata={"min": 1})
    """MCTS simulations per move (the paper: 10,000)."""
    images: str = field(default="0:500", metadata=IMAGES)
    """Test images: 'all', 'N' (the first N), 'start:stop' or 'start:stop:step'."""
    first: Literal["honest", "liar"] = "liar"
    """Who reveals the first pixel (default liar: the honest player has the last word, the
    order under which the published win rates are reached here)."""
    agent: str = "mcts"
    """Both players' agent: mcts, greedy (one-step lookahead), random, learned (the debaters of
    `debatelab agents train`, trained first if not cached), or a rank policy over one-step
    values such as top5 (quantiliser) or bo4 (best of 4)."""
    c_puct: float = 1.0
    """PUCT exploration weight."""
    batch_games: int = field(default=64, metadata={"min": 1})
    """Games searched in lockstep (their leaves are judged in one batch)."""
    engine: Literal["compiled", "reference"] = "compiled"
    """The tree search's implementation: compiled loops (numba) or the torch reference it is
    tested against (several times slower; other random draws, statistically the same games)."""
    no_precommit: bool = field(default=True,
                               metadata={"flag": "--no-precommit/--skip-no-precommit"})  # fmt: skip
    """Also play the variant in which the liar names its label after the reveal."""
    judge: Literal["nonzero", "sparse", "mlp", "paper"] = "nonzero"
    """The frozen judge: the paper's task (K random nonzero pixels) learned by a small CNN in
    10 epochs (nonzero), by an MLP in 30 (mlp), or with the paper's own network and schedule
    (paper: 30,000 batches, 64 epochs, at K = 6 and other K, 50,000 at K = 4, 107 epochs;
    dense forward only), or the demo's sparse classifier (about 10 % of all pixels visible)."""
    judge_seed: int | None = None
    """Seed of the judge's training (default: the same as --seed)."""
    judge_epochs: int | None = field(default=None, metadata={"min": 1})
    """Training epochs of the judge (default: the judge's own, 10; 30 for mlp; 64 at K = 6
    and 107 at K = 4 for paper)."""
    seed: int = 0
    """Seed of the agents' random choices (tie-breaks, playouts; one stream per chunk), and of
    the judge's training unless --judge-seed is given."""
    accuracy_draws: int = field(default=5, metadata={"min": 1})
    """Random nonzero-pixel masks per test image for the judge accuracy."""
    examples: int = field(default=6, metadata={"min": 0})
    """Example debates drawn in the figure."""
    device: str = field(default="cpu", compare=False, metadata=DEVICE)
    """Where the judge runs: cpu, cuda, cuda:N or auto (CUDA when there is one)."""
    threads: int | None = field(default=None, compare=False, metadata={"min": 1})
    """Torch CPU threads (default: torch's choice)."""
    cluster: str = field(default="local", compare=False, metadata=CLUSTER)
    """Where chunks of games are played: local (this process), ray (a local Ray instance),
    ray:auto (join the running Ray cluster) or ray:HOST:PORT; results do not depend on it."""

    def __post_init__(self):
        if self.agent not in AGENTS:
            try:
                as_policy(self.agent)
            except ValueError:
                raise ValueError(
                    f"agent must be one of {AGENTS} or a rank policy like top5 or bo4, got "
                    f"{self.agent!r}"
                ) from None
        PixelRules(self.pixels, self.first)  # validates pixels and first

    def judge_config(self) -> PixelTrainConfig:
        seed = self.seed if self.judge_seed is None else self.judge_seed
        return pixel_judge_config(self.judge, self.pixels, seed, self.judge_epochs)

    def debaters_config(self):
        from .agents import DebaterTrainConfig

        return DebaterTrainConfig(pixels=self.pixels, first=self.first, seed=self.seed,
                                  judge=self.judge, judge_seed=self.judge_seed,
                                  judge_epochs=self.judge_config().epochs)  # fmt: skip

    def make_agent(self, debaters=None):
        if self.agent == "learned":
            if debaters is None:
                raise ValueError("the learned agent needs its trained debaters")
            return LearnedAgent(debaters)
        if self.agent == "greedy":
            return greedy_agent()
        if self.agent == "random":
            return random_agent()
        if self.agent != "mcts":
            return PolicyAgent(as_policy(self.agent))
        return MCTSAgent(MCTSConfig(self.rollouts, self.c_puct, batch_games=self.batch_games,
                                    engine=self.engine))  # fmt: skip


def _chunk_generator(seed: int, protocol: str, chunk: int) -> torch.Generator:
    key = zlib.crc32(f"{seed}/{protocol}/{chunk}".encode())
    return torch.Generator().manual_seed(key)


def play_protocol(
    cfg: PixelExperimentConfig,
    judge: PixelJudge,
    images: np.ndarray,
    labels: np.ndarray,
    indices: range,
    precommit: bool,
    folder: Path,
    progress: bool = True,
    debaters=None,
) -> list[dict]:
    """Play every image under one protocol in chunks stored in ``folder``; returns one log row
    per game (image index, claims, moves, logits, verdict). ``indices``: the test-set index of
    each image. ``debaters``: the learned agent's
    networks (``agent="learned"`` only)."""
    rules = PixelRules(cfg.pixels, cfg.first, precommit)
    protocol = "precommit" if precommit else "no_precommit"
    per_image = 9 if precommit else 1
    chunk_images = max(1, cfg.batch_games // per_image)
    by_chunk: dict[int, list[dict]] = {}
    pieces, paths = [], []
    for c, start in enumerate(range(0, len(images), chunk_images)):
        path = folder / f"{protocol}-{indices[start]:05d}.json"
        if path.exists():
            by_chunk[c] = json.loads(path.read_text())
            continue
        stop = min(start + chunk_images, len(images))
        pieces.append((cfg, judge, debaters, images[start:stop], labels[start:stop], rules,
                       indices[start:stop], protocol, c))  # fmt: skip
        paths.append((c, path))
    bar = progress_bar(total=len(pieces), enabled=progress, desc=protocol, unit="chunk")
    where = Cluster.parse(cfg.cluster)
    for i, (chunk_rows, evaluations) in run_pieces(_play_chunk, pieces, where,
                                                   num_gpus=str(judge.device).startswith("cuda")):  # fmt: skip
        c, path = paths[i]
        write_json(path, chunk_rows)
        by_chunk[c] = chunk_rows
        if where.kind != "local":  # games played here count themselves
            judge.evaluations += evaluations
        bar.update()
    bar.close()
    return [row for c in sorted(by_chunk) for row in by_chunk[c]]


def _play_chunk(piece) -> tuple[list[dict], int]:
    """One chunk of games, where it runs: their log rows and the judge evaluations spent."""
    cfg, judge, debaters, images, labels, rules, indices, protocol, c = piece
    before = judge.evaluations
    games, image_of = liar_games(images, labels, rules)
    agent = cfg.make_agent(debaters)
    record = play(games, agent, agent, judge, _chunk_generator(cfg.seed, protocol, c))
    rows = record.log_rows()
    for row, i in zip(rows, image_of, strict=True):
        row["image"] = int(indices[i])
        row["protocol"] = protocol
    return rows, judge.evaluations - before


def image_wins(rows: list[dict]) -> np.ndarray:
    """Per image (in image order): 1 where the honest player beat every liar it faced."""
    images = sorted({r["image"] for r in rows})
    index = {img: k for k, img in enumerate(images)}
    wins = torch.tensor([float(r["honest_win"]) for r in rows])
    image_of = np.array([index[r["image"]] for r in rows])
    return np.asarray(image_honest_wins(wins, image_of, len(images)), dtype=np.float64)


def image_win_rate(rows: list[dict]) -> float:
    """Fraction of images whose honest player beat every liar it faced."""
    return float(image_wins(rows).mean())


def run(cfg: PixelExperimentConfig, folder: RunFolder) -> dict:
    """The experiment shape: the whole experiment into ``folder``; returns the metrics."""
    if cfg.threads is not None:
        torch.set_num_threads(cfg.threads)
    folder.seeds.update({"judge": cfg.judge_config().seed, "play": cfg.seed})
    metrics = run_pixels(cfg, folder.path, folder.data_dir, folder.cache_dir, folder.progress)
    shown = {k: v for k, v in metrics.items() if "rate" in k or "accuracy" in k}
    folder.echo(json.dumps(shown, indent=2))
    return metrics


def run_pixels(
    cfg: PixelExperimentConfig,
    out: Path,
    data_dir=None,
    cache=None,
    progress: bool = True,
) -> dict:
    """The whole experiment into the run folder ``out``; returns the metrics."""
    trained = get_pixel_judge(cfg.judge_config(), data_dir, cache, progress)
    judge = PixelJudge(trained.model, device=parse_device(cfg.device, cfg.cluster))
    x_test, y_test = load_raw("mnist", "test", data_dir)
    indices = image_indices(cfg.images, len(x_test))
    images, labels = x_test[indices], y_test[indices].astype(np.int64)
    gen = torch.Generator().manual_seed(cfg.seed)
    acc_all = random_pixel_accuracy(judge, x_test, y_test, cfg.pixels, gen, cfg.accuracy_draws)
    acc_images = random_pixel_accuracy(judge, images, labels, cfg.pixels, gen, cfg.accuracy_draws)
    judge.evaluations = judge.calls = 0
    chunks = KeyedPieces(out / "chunks", play_settings(cfg)).folder
    debaters = None
    if cfg.agent == "learned":
        from .agents import get_debaters

        debaters = get_debaters(cfg.debaters_config(), data_dir, cache, progress)[0].model
    rows = play_protocol(cfg, judge, images, labels, indices, True, chunks, progress, debaters)
    metrics = {
        "judge_accuracy": acc_all,
        "judge_accuracy_images": acc_images,
        "honest_win_rate_precommit": image_win_rate(rows),
        "honest_win_rate_precommit_se": standard_error(image_wins(rows)),
        "honest_game_win_rate_precommit": float(np.mean([r["honest_win"] for r in rows])),
    }
    if cfg.no_precommit:
        rows_np = play_protocol(cfg, judge, images, labels, indices, False, chunks, progress,
                                debaters)  # fmt: skip
        metrics["honest_win_rate_no_precommit"] = image_win_rate(rows_np)
        metrics["honest_win_rate_no_precommit_se"] = standard_error(image_wins(rows_np))
        rows += rows_np
    metrics.update({
        "n_images": len(images), "image_range": [indices.start, indices.stop],
        **({"image_step": indices.step} if indices.step > 1 else {}), "pixels": cfg.pixels,
        "rollouts": cfg.rollouts if cfg.agent == "mcts" else None, "agent": cfg.agent,
        "first": cfg.first, "judge_checkpoint": str(trained.path),
        "judge_evaluations_this_session": judge.evaluations,
        "published": PUBLISHED.get(cfg.pixels),
    })  # fmt: skip
    # keys sorted as in the stored chunks, so a resumed run writes the same file
    lines = "".join(json.dumps(row, sort_keys=True) + "\n" for row in rows)
    write_atomic(out / "moves.jsonl", lambda p: p.write_text(lines))
    examples = [r for r in rows if r["protocol"] == "precommit"]
    draw_examples(examples, images, indices, out / "examples.png", cfg.examples)
    (out / "report.md").write_text(report_text(cfg, metrics))
    return metrics


def _pick_examples(rows: list[dict], count: int) -> list[dict]:
    """One game per image, alternating honest and liar wins where both exist: per image the
    liar that won, else the one the judge found closest."""
    best: dict[int, dict] = {}
    for r in rows:
        margin = r["logits"][r["honest_label"]] - r["logits"][r["liar_label"]]
        old = best.get(r["image"])
        if old is None or margin < old["_margin"]:
            best[r["image"]] = {**r, "_margin": margin}
    games = list(best.values())
    wins = [g for g in games if g["honest_win"]]
    losses = [g for g in games if not g["honest_win"]]
    picked = []
    while len(picked) < count and (wins or losses):
        for pool in (wins, losses):
            if pool and len(picked) < count:
                picked.append(pool.pop(0))
    return picked


def draw_examples(rows, images, indices: range, path: Path, count: int = 6) -> Path | None:
    """A figure of example debates: the digit in grey, the honest player's pixels in blue and
    the liar's in red, numbered by turn (``images[k]`` is test image ``indices[k]``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picked = _pick_examples(rows, count)
    if not picked:
        return None
    from ..report.interactive import PLAYS_FILE, play_record, write_plays

    plays = [play_record(images[indices.index(r["image"])],
                         [(who, [row * 28 + col]) for row, col, who in r["moves"]],
                         r["honest_label"], r["liar_label"],
                         f"test image {r['image']}: honest {r['honest_label']} against liar "
                         f"{r['liar_label']}, {'honest' if r['honest_win'] else 'liar'} wins",
                         r["image"]) for r in picked]  # fmt: skip
    write_plays(Path(path).parent / PLAYS_FILE, 28,
                "Sparse-pixel debates (blue: honest, red: liar)", plays)  # fmt: skip
    fig, axes = plt.subplots(1, len(picked), figsize=(2.6 * len(picked), 3.0), squeeze=False)
    for ax, r in zip(axes[0], picked, strict=True):
        ax.imshow(images[indices.index(r["image"])], cmap="gray_r", vmin=0, vmax=400)
        for t, (row, col, who) in enumerate(r["moves"]):
            colour = "tab:blue" if who == "honest" else "tab:red"
            ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), 1, 1, color=colour))
            ax.annotate(str(t + 1), (col, row), xytext=(col + 0.9, row - 0.9), fontsize=7,
                        color=colour, fontweight="bold")  # fmt: skip
        verdict = "honest wins" if r["honest_win"] else "liar wins"
        ax.set_title(
            f"#{r['image']}: {r['honest_label']} vs {r['liar_label']}\n{verdict}", fontsize=9
        )
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle("Sparse-pixel debates (blue: honest, red: liar; numbers: turn)", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def report_text(cfg: PixelExperimentConfig, m: dict) -> str:
    pub = PUBLISHED.get(cfg.pixels, {})
    budget = f"{cfg.rollouts} rollouts per move" if cfg.agent == "mcts" else f"{cfg.agent} agents"
    lines = [
        f"# Sparse-pixel MNIST debate, {cfg.pixels} pixels",
        "",
        f"Test images {cfg.images} ({m['n_images']}); {budget}; "
        f"{cfg.first} reveals first; judge seed {cfg.judge_config().seed}, {cfg.judge_config().epochs} epochs.",
        "",
        "| measure | this run, % | published, % |",
        "|---|---|---|",
        f"| judge on random nonzero pixels (10k test) | {100 * m['judge_accuracy']:.1f} | "
        f"{pub.get('judge', '-')} |",
        f"| honest wins, precommit (vs all 9 liars) | {100 * m['honest_win_rate_precommit']:.1f} "
        f"| {pub.get('debate', '-')} |",
    ]
    if "honest_win_rate_no_precommit" in m:
        lines.append(
            f"| honest wins, no precommit | {100 * m['honest_win_rate_no_precommit']:.1f} | - |"
        )
    return "\n".join(lines) + "\n"


def play_settings(cfg: PixelExperimentConfig) -> dict:
    """The settings that decide the games: stored chunks are reused only under their hash."""
    skip = ("examples", "accuracy_draws", "threads", "cluster")
    settings = {k: v for k, v in asdict(cfg).items() if k not in skip}
    if cfg.judge == "nonzero":  # the default judge keeps the chunk keys runs had before
        del settings["judge"]
    if cfg.agent == "learned":  # the games depend on how the debaters were trained
        settings["debaters"] = cfg.debaters_config().key()
    return settings


def plot_rollout_curve(
    points: list[dict],
    path: Path,
    published: float | None = None,
    ylabel: str = "honest wins vs all 9 liars, %",
) -> Path:
    """Honest win rate (precommit) against MCTS rollouts per move, one line per image slice.

    ``points``: dicts with ``rollouts``, ``rate`` (fraction), ``n_images`` and ``slice`` (label).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8.0, 3.8))
    for label in sorted({p["slice"] for p in points}):
        pts = sorted((p for p in points if p["slice"] == label), key=lambda p: p["rollouts"])
        ax.plot([p["rollouts"] for p in pts], [100 * p["rate"] for p in pts], "o-",
                label=f"{label} ({pts[0]['n_images']} images)")  # fmt: skip
    if published is not None:
        ax.axhline(
            published, color="grey", ls="--", label=f"published, 10,000 rollouts ({published})"
        )
    ax.set_xscale("log")
    ax.set_xlabel("MCTS rollouts per move")
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.02, 0.5))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
