"""On-policy training of a trained judge (docs/trained-judges.md#training-loop), the loop that
joins the sampled-tree search (games) and the judge designs (judges,
:mod:`debatelab.judges.designs`).

Each step: sample every image's candidate tree, score its leaves with the current judge (no
grad; D1 in train mode, dropout on, as published; D3 / D2 in eval mode), solve it exactly, and
take one Adam step on the realised plays (cross-entropy against the true class; D2:
binary cross-entropy against "A's claim is the true class"). After each epoch: selection
accuracy, judge accuracy and belief on the evaluation images with fresh candidates, and a
checkpoint; an interrupted run resumes from its last finished epoch with the same numbers.
"""

from __future__ import annotations

import os

import torch

from ..data import ImageData
from ..games.sampled_play import (
    check_judge,
    default_scorer,
    evaluate_trained_judge,
    family_of,
    play,
)
from ..geometry import Grid
from ..judges.designs import design as find_design
from ..judges.onpolicy import GROUPS, OnPolicyConfig, OnPolicyJudge
from ..judges.train import TrainedJudge, cached_judge, fit_classifier, load_judge
from ..options import parse_images

#: Schedules: ``paper`` is §5 as published; ``cpu`` the reduced schedule of this project's 2-core
#: machine (see docs/results-trained-judges.md: a whole D1 sweep in about two hours).
PRESETS = {
    "paper": {"epochs": 10, "budget": 1296, "train_limit": None, "eval_images": "all"},
    "cpu": {"epochs": 3, "budget": 81, "train_limit": 12000, "eval_images": "0:10000:10"},
}


def wrap(model, config: OnPolicyConfig, grid: Grid, channels: int) -> OnPolicyJudge:
    return OnPolicyJudge(config.design, model, family_of(config.protocol, config.control),
                         config.rule, grid, channels)  # fmt: skip


def train_onpolicy(config: OnPolicyConfig, data: ImageData, resume_path=None,
                   progress: bool = True, device: str = "cpu",
                   scorer: str | None = None) -> TrainedJudge:  # fmt: skip
    """Train one judge on-policy; per epoch its history holds the training loss, the
    evaluation's ``selection`` / ``judge`` / ``belief`` (fractions) and the wall time.

    ``scorer`` scores the sampled trees' leaves (default: the factorised trunk on CPU, the
    batched forward elsewhere; :func:`debatelab.games.sampled_play.tree_scores`). Both give
    the same scores up to float rounding; D1, which searches with dropout on, draws its dropout
    masks in another order, so its runs differ by that noise."""
    grid = Grid(data.image_size, 6)
    device = torch.device(device)
    scorer = scorer or default_scorer(device)
    x, y = data.x_train, data.y_train
    if config.train_limit is not None:
        x, y = x[: config.train_limit], y[: config.train_limit]
    x, y = x.to(device), y.to(device)
    test = parse_images(config.eval_images, len(data.x_test))
    test_x, test_y = data.x_test[test].to(device), data.y_test[test]
    family = family_of(config.protocol, config.control)
    spec = find_design(config.design)
    queries = spec.queries(config.protocol, config.rule)
    autocast = config.autocast and device.type == "cuda"

    def make():
        return spec.build(data.in_channels, GROUPS[family], queries, data.image_size,
                          4 if config.bits else 0).to(device)  # fmt: skip

    def step(model, idx, gen):
        judge = wrap(model, config, grid, data.in_channels)
        model.train(spec.search_in_train_mode)  # §1: D1 searches with dropout on
        xb, yb = x[idx.to(device)], y[idx.to(device)]
        realised = play(judge, xb, config.protocol, config.rule, config.control, gen,
                        config.budget, autocast, config.capability, config.search,
                        config.branching, scorer)  # fmt: skip
        model.train()
        logits = judge.logits(xb, realised.codes, realised.queries, realised.codeword)
        return spec.loss(logits, realised.claim, yb)

    # a bits arm and its nested control share the loop seed, so also their test draws
    loop_seed = config.seed if config.loop_seed is None else config.loop_seed

    def evaluate(model, epoch):
        judge = wrap(model, config, grid, data.in_channels)
        m = evaluate_trained_judge(judge, test_x, test_y, protocol=config.protocol,
                                   rule=config.rule, control=config.control,
                                   budget=config.budget, seed=1_000_003 * loop_seed + epoch,
                                   batch=config.eval_batch,
                                   capability=config.capability,
                                   search=config.search, branching=config.branching,
                                   scorer=scorer)  # fmt: skip
        out = {
            "selection": m["selection_accuracy"],
            "n_eval_images": m["n_images"],
            "images_seen": (epoch + 1) * len(y),
        }
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
    :class:`OnPolicyJudge`, with its training config as ``trained_config``; published
    checkpoints load with :func:`.onpolicy.load_published_judge`."""
    trained = load_judge(path, "onpolicy")  # every design's checkpoint family
    config = trained.config
    channels = trained.model.in_channels // GROUPS[family_of(config.protocol, config.control)]
    judge = wrap(trained.model, config, Grid(trained.model.image_size, 6), channels)
    judge.trained_config = config
    return judge
