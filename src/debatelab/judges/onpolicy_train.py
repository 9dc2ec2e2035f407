"""On-policy training of a trained judge (TRAINED-JUDGES.md §1, §5).

Each step: sample every image's candidate tree, score its leaves with the current judge (no
grad; D1 in train mode, dropout on, as published; D3 / D2 in eval mode), solve it exactly, and
take one Adam step on the realised plays (cross-entropy against the true class; D2:
binary cross-entropy against "A's claim is the true class"). After each epoch: selection
accuracy, judge accuracy and belief on the evaluation images with fresh candidates, and a
checkpoint; an interrupted run resumes from its last finished epoch with the same numbers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import ClassVar

import torch
import torch.nn.functional as F

from ..data import ImageData, check_variant, data_revision
from ..geometry import Grid
from ..resume import settings_key
from ..store import parse_images
from .onpolicy import DESIGNS, GROUPS, RULE_FILE_NAMES, OnPolicyJudge, make_model, n_queries
from .onpolicy_play import check_judge, evaluate_trained_judge, family_of, play
from .train import TrainedJudge, cached_judge, fit_classifier, load_judge

#: Schedules: ``paper`` is §5 as published; ``cpu`` the reduced schedule of this project's 2-core
#: machine (see README: a whole D1 sweep in about two hours).
PRESETS = {
    "paper": {"epochs": 10, "budget": 1296, "train_limit": None, "eval_images": "all"},
    "cpu": {"epochs": 3, "budget": 256, "train_limit": 12000, "eval_images": "0:10000:10"},
}


def published_seed(design: str, protocol: str, rule: str, control: bool) -> int:
    """The seed of §5: D1 consultancy 0, then ``1 + 10 r + k``; D3 / D2 consultancy 0, then
    ``1 + 4 r + k``; r indexes (asym, sym, last_b) and k (2-turn debate, 4-turn debate,
    2-turn control, 4-turn control)."""
    if protocol == "consultancy":
        return 0
    r = ("asym", "sym", "last_b").index(rule)
    k = (0 if protocol == "debate2" else 1) + (2 if control else 0)
    return 1 + 10 * r + k if design == "D1" else 1 + 4 * r + k


@dataclass
class OnPolicyConfig:
    """Settings of one on-policy trained judge."""

    family: ClassVar[str] = "onpolicy"

    design: str = "D1"
    """Judge design: D1 (never sees a class), D3 (reads the claims), D2 (P(claim correct))."""
    variant: str = "mnist"
    """Dataset variant."""
    protocol: str = "debate2"
    """consultancy, debate2 or debate4."""
    rule: str = "asym"
    """asym, sym or last_b (consultancy: asym)."""
    control: bool = False
    """The shuffled control: the same cells in four channel groups in a fresh order per play."""
    seed: int | None = None
    """Seed of the weights, batch order, candidate draws and dropout (default: the published
    seed of this judge, §5)."""
    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    gamma: float = 0.85
    """ExponentialLR decay, applied once per epoch."""
    budget: int = 1296
    """Judge evaluations (tree leaves) per image per step: 1,296 = 1,296 masks = 36 x 36 =
    6^4; any number that is a square and a fourth power (16, 81, 256, 625, 1296)."""
    train_limit: int | None = None
    """Train on the first N training images (None: all)."""
    eval_images: str = "all"
    """Test images evaluated after every epoch: 'all', 'N', 'a:b' or 'a:b:step'."""
    eval_batch: int = 32
    autocast: bool = True
    """Score the search's leaves in float16 autocast on CUDA, as published (never on CPU)."""

    def __post_init__(self):
        if self.design not in DESIGNS:
            raise ValueError(f"unknown judge design {self.design!r}; choose among {DESIGNS}")
        family_of(self.protocol, self.control)  # checks protocol and control
        if self.rule not in ("asym", "sym", "last_b"):
            raise ValueError(f"unknown rule {self.rule!r}; choose asym, sym or last_b")
        if self.protocol == "consultancy" and self.rule != "asym":
            raise ValueError("consultancy has no scoring rule (B never moves); leave --rule at "
                             "asym")  # fmt: skip
        if self.seed is None:
            self.seed = published_seed(self.design, self.protocol, self.rule, self.control)
        if self.epochs < 1 or self.batch_size < 1 or self.eval_batch < 1:
            raise ValueError("epochs, batch_size and eval_batch must be >= 1")

    @property
    def name(self) -> str:
        """The published file-name stem of this judge, e.g. ``debate_2turn_asym``."""
        if self.protocol == "consultancy":
            return "consultancy"
        kind = "control" if self.control else "debate"
        return f"{kind}_{self.protocol[-1]}turn_{RULE_FILE_NAMES[self.rule]}"

    def key(self) -> str:
        revision = data_revision(check_variant(self.variant)[0])
        settings = {**self.__dict__, "data_revision": revision}
        return settings_key(f"{self.variant}-{self.design}-{self.name}-s{self.seed}", settings)


def wrap(model, config: OnPolicyConfig, grid: Grid, channels: int) -> OnPolicyJudge:
    return OnPolicyJudge(config.design, model, family_of(config.protocol, config.control),
                         config.rule, grid, channels)  # fmt: skip


def train_onpolicy(config: OnPolicyConfig, data: ImageData, resume_path=None,
                   progress: bool = True, device: str = "cpu") -> TrainedJudge:  # fmt: skip
    """Train one judge on-policy; per epoch its history holds the training loss, the
    evaluation's ``selection`` / ``judge`` / ``belief`` (fractions) and the wall time."""
    grid = Grid(data.image_size, 6)
    device = torch.device(device)
    x, y = data.x_train, data.y_train
    if config.train_limit is not None:
        x, y = x[: config.train_limit], y[: config.train_limit]
    x, y = x.to(device), y.to(device)
    test = parse_images(config.eval_images, len(data.x_test))
    test_x, test_y = data.x_test[test].to(device), data.y_test[test]
    family = family_of(config.protocol, config.control)
    queries = n_queries(config.design, config.rule, config.protocol)
    autocast = config.autocast and device.type == "cuda"

    def make():
        return make_model(config.design, data.in_channels, GROUPS[family], queries,
                          data.image_size).to(device)  # fmt: skip

    def step(model, idx, gen):
        judge = wrap(model, config, grid, data.in_channels)
        model.train(config.design == "D1")  # §1: D1 searches with dropout on
        xb, yb = x[idx.to(device)], y[idx.to(device)]
        realised = play(judge, xb, config.protocol, config.rule, config.control, gen,
                        config.budget, autocast)  # fmt: skip
        model.train()
        logits = judge.logits(xb, realised.codes, realised.queries)
        if config.design == "D2":
            right = (realised.claim == yb).float()
            loss = F.binary_cross_entropy_with_logits(logits[:, 0], right)
            return loss, int(right.sum().item())
        return F.cross_entropy(logits, yb), int((logits.argmax(1) == yb).sum().item())

    def evaluate(model, epoch):
        judge = wrap(model, config, grid, data.in_channels)
        m = evaluate_trained_judge(judge, test_x, test_y, protocol=config.protocol,
                                   rule=config.rule, control=config.control,
                                   budget=config.budget, seed=1_000_003 * config.seed + epoch,
                                   batch=config.eval_batch)  # fmt: skip
        out = {"selection": m["selection_accuracy"], "n_eval_images": m["n_images"]}
        if "judge_accuracy" in m:
            out["judge"] = m["judge_accuracy"]
        if "belief" in m:
            out["belief"] = m["belief"]
        return out

    check_judge(wrap(make(), config, grid, data.in_channels), config.protocol, config.rule,
                config.control)  # fmt: skip
    desc = f"{config.design} {config.name}"
    model, history = fit_classifier(make, None, y, config, resume_path, progress, desc,
                                    step=step, evaluate=evaluate)  # fmt: skip
    return TrainedJudge(model.cpu(), config, history)


def get_onpolicy_judge(config: OnPolicyConfig, data: ImageData,
                       cache: str | os.PathLike | None = None, progress: bool = True,
                       retrain: bool = False, device: str = "cpu") -> TrainedJudge:  # fmt: skip
    """The cached judge of ``config``, else trained (resumable per epoch) and cached."""
    return cached_judge(config, cache, retrain, lambda partial: train_onpolicy(
        config, data, partial, progress, device))  # fmt: skip


def load_onpolicy_judge(path: str | os.PathLike) -> OnPolicyJudge:
    """A judge this project trained on-policy (a checkpoint of the cache) as an
    :class:`OnPolicyJudge`; published checkpoints load with
    :func:`.onpolicy.load_published_judge`."""
    trained = load_judge(path, "onpolicy")
    config = trained.config
    channels = trained.model.in_channels // GROUPS[family_of(config.protocol, config.control)]
    return wrap(trained.model, config, Grid(trained.model.image_size, 6), channels)
