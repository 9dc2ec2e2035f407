"""Training and loading of the learned debaters for the sparse-pixel MNIST debate (the public
demo's agents, seed 002): :func:`train_debaters` (warm-up on the judge's Grad-CAM saliency, then
self-play REINFORCE with a leave-one-out baseline; each phase checkpoints every epoch and
resumes), :func:`load_debaters` (a finished checkpoint, family ``debaters`` of
:data:`debatelab.judges.checkpoints.FAMILIES`) and :func:`get_debaters` (cached or trained).
``debatelab agents train`` (:mod:`debatelab.experiments.agents`) runs them and evaluates the
debaters; the demo (:mod:`debatelab.web.models`) loads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import ClassVar, Literal

import numpy as np
import torch

from ..data import load_raw
from ..errors import CacheError
from ..games.agents import MCTSAgent, MCTSConfig, greedy_agent, random_agent
from ..games.learned import (
    DebaterNets,
    LearnedAgent,
    reinforce_loss,
    saliency_targets,
    self_play,
    slot_log_probs,
    warmup_loss,
)
from ..games.pixels import N_CLASSES, PixelGames, PixelRules, image_honest_wins, liar_games, play
from ..geometry import pixel_values
from ..judges.checkpoints import TrainedJudge, cached_judge, read_checkpoint
from ..judges.pixel import (
    JUDGE_KINDS,
    PixelJudge,
    PixelTrainConfig,
    get_pixel_judge,
    gradcam,
    pixel_judge_config,
)
from ..judges.train import fit_classifier
from ..options import IMAGES, image_indices
from ..resume import settings_key


@dataclass
class DebaterTrainConfig:
    """Settings that decide a trained pair of debaters (the key of its cached checkpoint)."""

    family: ClassVar[str] = "debaters"

    pixels: int = field(default=6, metadata={"min": 1, "max": 784})
    """Pixels revealed per debate (the judge is the pixel judge trained on as many)."""
    first: Literal["honest", "liar"] = "liar"
    """Who reveals the first pixel, in training and evaluation."""
    hidden: int = field(default=512, metadata={"min": 1})
    """Width of both hidden layers (the demo: 512)."""
    warmup_epochs: int = field(default=1, metadata={"min": 0})
    """Epochs imitating the judge's Grad-CAM saliency before self-play (0: none)."""
    epochs: int = field(default=8, metadata={"min": 1})
    """Epochs of self-play REINFORCE over the training images."""
    batch_size: int = field(default=16, metadata={"min": 1})
    """Images per optimiser step."""
    plays: int = field(default=8, metadata={"min": 1})
    """Self-play games per image and step; with two or more, each play's baseline is the mean
    reward of the image's other plays, else of the rest of the batch (a pilot on 12,000 images,
    five epochs: 8 plays of 16 images per step won 85 % against a random liar and let a random
    honest player win 21 %; one play of 128 images, 63 % and 34 %)."""
    warmup_lr: float = 1e-3
    """Adam learning rate of the warm-up."""
    lr: float = 1e-3
    """Adam learning rate of REINFORCE (a pilot on 12,000 images: 1e-3 learnt faster than
    1e-4 over five epochs)."""
    reward: Literal["sigmoid", "win"] = "sigmoid"
    """The honest reward: sigmoid of the judge's honest margin (smooth) or the 0/1 win; the
    liar's is one minus it."""
    train_limit: int | None = field(default=None, metadata={"min": 1})
    """Use only the first N training images (quick runs); None uses all 60,000."""
    curve_images: str = field(default="0:500", metadata=IMAGES)
    """Test images of the per-epoch win rates (learned against learned and against random)."""
    curve_greedy_images: int = field(default=30, metadata={"min": 0})
    """The first N of ``curve_images`` also played against the greedy agent every epoch."""
    seed: int = 0
    """Seeds the networks' initialisation, the batches, liar claims and moves."""
    judge: Literal["nonzero", "sparse"] = "nonzero"
    """The frozen judge: the paper's (trained on K random nonzero pixels) or the demo's sparse
    classifier (about 10 % of all pixels visible)."""
    judge_seed: int | None = None
    """Seed of the pixel judge (default: the same as --seed)."""
    judge_epochs: int = field(default=10, metadata={"min": 1})
    """Training epochs of the pixel judge."""

    def __post_init__(self):
        PixelRules(self.pixels, self.first)  # validates pixels and first
        if self.judge not in JUDGE_KINDS:
            raise ValueError(f"judge must be one of {JUDGE_KINDS}, got {self.judge!r}")
        if self.judge not in ("nonzero", "sparse"):
            raise ValueError(
                "the learned debaters are trained against the 10-epoch CNN judges only (their "
                "warm-up imitates the judge's Grad-CAM maps, which the MLP has not; the paper "
                f"recipe's judge is not wired in); use --judge nonzero or sparse, not {self.judge!r}"
            )
        if self.batch_size * self.plays < 2:
            raise ValueError("a step needs two or more plays (each play's baseline is the others')")

    def key(self) -> str:
        return settings_key(f"mnist-debaters{self.pixels}-s{self.seed}", self)

    def judge_config(self) -> PixelTrainConfig:
        seed = self.seed if self.judge_seed is None else self.judge_seed
        return pixel_judge_config(self.judge, self.pixels, seed, self.judge_epochs)

    def rules(self, precommit: bool = True) -> PixelRules:
        return PixelRules(self.pixels, self.first, precommit)


def agent_named(name: str, nets: DebaterNets | None = None):
    """The agent called ``name``: learned (needs ``nets``), greedy, random or mctsR."""
    if name == "learned":
        return LearnedAgent(nets) if nets is not None else None
    if name == "greedy":
        return greedy_agent()
    if name == "random":
        return random_agent()
    if name.startswith("mcts") and name[4:].isdigit() and int(name[4:]) >= 1:
        return MCTSAgent(MCTSConfig(rollouts=int(name[4:])))
    raise ValueError(f"unknown agent {name!r}: use learned, greedy, random or mctsR (R >= 1)")


def play_pair(honest: str, liar: str, nets: DebaterNets, judge: PixelJudge, images, labels,
              rules: PixelRules, gen: torch.Generator):  # fmt: skip
    """Agent ``honest`` against agent ``liar`` on ``images`` (all nine liars under precommit):
    per image whether the honest player beat them all, and the games' record."""
    games, image_of = liar_games(images, labels, rules)
    record = play(games, agent_named(honest, nets), agent_named(liar, nets), judge, gen)
    return image_honest_wins(record.honest_win, image_of, len(images)), record


def _liars(labels: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    return (labels + torch.randint(1, N_CLASSES, labels.shape, generator=gen)) % N_CLASSES


def _advance(games: PixelGames, turns: int, gen: torch.Generator) -> PixelGames:
    """``games`` after ``turns`` uniformly random reveals."""
    for _ in range(turns):
        keys = torch.rand(games.valid.shape, generator=gen).masked_fill(~games.available(), -1)
        games = games.play(keys.argmax(1))
    return games


def train_debaters(cfg: DebaterTrainConfig, judge: PixelJudge, images: np.ndarray,
                   labels: np.ndarray, test_images: np.ndarray, test_labels: np.ndarray,
                   partial: Path | None = None, progress: bool = True) -> TrainedJudge:  # fmt: skip
    """Warm-up, then REINFORCE; each phase checkpoints every epoch beside ``partial`` and
    resumes. The history holds per epoch the phase, loss, training win rate (REINFORCE) or
    top-pixel agreement (warm-up), and the win rates on the curve images."""
    values = pixel_values(images)
    y = torch.as_tensor(np.asarray(labels)).long()
    if cfg.train_limit is not None:
        values, y = values[: cfg.train_limit], y[: cfg.train_limit]
    rules = cfg.rules()
    movers = [rules.mover(t) for t in range(cfg.pixels)]
    full = values > 0
    model = judge.model

    def warm_step(nets, idx, gen):
        liar = _liars(y[idx], gen)
        games = PixelGames.new(values[idx], y[idx], liar, rules)
        loss, hits = 0.0, 0
        for player, claim in (("honest", y[idx]), ("liar", liar)):
            turns = [t for t, m in enumerate(movers) if m == player]
            t = turns[int(torch.randint(len(turns), (1,), generator=gen))]
            at = _advance(games, t, gen)
            targets = saliency_targets(
                at, gradcam(model, values[idx], full[idx], claim), rules.pixels
            )
            loss = loss + warmup_loss(nets, at, targets)
            with torch.no_grad():
                best = slot_log_probs(nets, at).argmax(1)
            hits += int((targets.gather(1, best[:, None]) > 0).sum())
        return loss, hits / 2

    def rl_step(nets, idx, gen):
        games = PixelGames.new(values[idx], y[idx], _liars(y[idx], gen), rules)
        if cfg.plays > 1:  # each image's plays side by side: groups of the baseline
            games = games.subset(torch.arange(len(idx)).repeat_interleave(cfg.plays))
        played = self_play(games, nets, judge, gen, reward=cfg.reward)
        wins = played.honest_reward > 0.5  # either reward is above 1/2 exactly on a win
        group = cfg.plays if cfg.plays > 1 else 0
        return reinforce_loss(played, group), wins.sum().item() / cfg.plays

    curve = image_indices(cfg.curve_images, len(test_images))
    curve_x, curve_y = test_images[curve], np.asarray(test_labels[curve]).astype(np.int64)

    def evaluate(nets, epoch):
        gen = torch.Generator().manual_seed(cfg.seed * 1_000_003 + epoch)
        out = {}
        n_greedy = min(cfg.curve_greedy_images, len(curve_x))
        pairs = [("learned", "learned", len(curve_x)), ("learned", "random", len(curve_x)),
                 ("random", "learned", len(curve_x))]  # fmt: skip
        if n_greedy:
            pairs += [("learned", "greedy", n_greedy), ("greedy", "learned", n_greedy)]
        for honest, liar, n in pairs:
            wins, _ = play_pair(honest, liar, nets, judge, curve_x[:n], curve_y[:n], rules, gen)
            out[f"{honest}_vs_{liar}"] = float(wins.mean())
        return out

    def schedule(epochs, lr):
        return SimpleNamespace(seed=cfg.seed, epochs=epochs, batch_size=cfg.batch_size, lr=lr,
                               gamma=1.0)  # fmt: skip

    warm_path = None if partial is None else partial.with_name(f"warmup-{partial.name}")
    nets, history = DebaterNets(cfg.hidden), []
    if cfg.warmup_epochs:
        nets, history = fit_classifier(lambda: DebaterNets(cfg.hidden), None, y,
                                       schedule(cfg.warmup_epochs, cfg.warmup_lr), warm_path,
                                       progress, "debaters warm-up", step=warm_step,
                                       evaluate=evaluate)  # fmt: skip
        for h in history:
            h["phase"] = "warmup"
    warmed = {k: v.clone() for k, v in nets.state_dict().items()}

    def from_warmup():
        fresh = DebaterNets(cfg.hidden)
        if cfg.warmup_epochs:
            fresh.load_state_dict(warmed)
        return fresh

    nets, rl_history = fit_classifier(from_warmup, None, y, schedule(cfg.epochs, cfg.lr), partial,
                                      progress, "debaters REINFORCE", step=rl_step,
                                      evaluate=evaluate)  # fmt: skip
    for h in rl_history:
        h["phase"] = "reinforce"
        h["epoch"] += cfg.warmup_epochs
    if warm_path is not None:
        warm_path.unlink(missing_ok=True)
    for p in nets.parameters():
        p.requires_grad_(False)
    return TrainedJudge(nets.eval(), cfg, history + rl_history)


def load_debaters(path: str | Path) -> TrainedJudge:
    """A trained pair of debaters from its checkpoint (the one checkpoint format, family
    ``debaters``)."""
    payload = read_checkpoint(Path(path))
    if payload.get("family") != "debaters":
        raise CacheError(f"{path} holds a {payload.get('family')} model, not learned debaters")
    nets = DebaterNets(**payload["model_config"])
    nets.load_state_dict(payload["state_dict"])
    for p in nets.parameters():
        p.requires_grad_(False)
    config = DebaterTrainConfig(**payload["config"])
    return TrainedJudge(nets.eval(), config, payload["history"], Path(path), cached=True)


def get_debaters(cfg: DebaterTrainConfig, data_dir=None, cache=None, progress: bool = True,
                 retrain: bool = False) -> tuple[TrainedJudge, PixelJudge]:  # fmt: skip
    """The cached debaters of ``cfg`` (else trained and cached) and the frozen judge they were
    trained against."""
    trained_judge = get_pixel_judge(cfg.judge_config(), data_dir, cache, progress)
    judge = PixelJudge(trained_judge.model)

    def train(partial):
        x, y = load_raw("mnist", "train", data_dir)
        tx, ty = load_raw("mnist", "test", data_dir)
        return train_debaters(cfg, judge, x, y, tx, ty, partial, progress)

    return cached_judge(cfg, cache, retrain, train, load=load_debaters), judge
