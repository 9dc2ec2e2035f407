"""Issue 42: the other candidate differences between the published frozen-judge run and ours
(docs/measurements/judge-recipe-comparison.md, section 3), each measured on one variant.

    python docs/judge_candidates.py uint8-resize VARIANT [--seed S] [--append CSV]
    python docs/judge_candidates.py float16-eval VARIANT [--seed S] [--append CSV]

``uint8-resize`` rounds the resized images to whole grey levels (k / 255), as the notebooks'
PIL resize does, and trains both judges with the default recipe (the candidate is tagged in
their cache keys). ``float16-eval`` evaluates the default judges (trained, or taken from the
cache) under float16 autocast, as the notebooks' ``eval_amp`` does, against float32 on the same
images and masks. Accuracy as `debatelab train` measures it (gold: full test set; sparse: 10
random 4-cell masks per test image); ``*_changed_pct``: test predictions whose class differs
from float32's.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
from pathlib import Path

import torch
from measured import report_row

from debatelab.data import load_variant
from debatelab.experiments.train import TrainJudgesConfig
from debatelab.geometry import Grid
from debatelab.judges import get_judge
from debatelab.judges.evaluate import predict_proba
from debatelab.paths import cache_dir, data_root

HEADER = ("variant,candidate,batch_size,seed,gold_pct,sparse_pct,gold_changed_pct,"
          "sparse_changed_pct,commit")  # fmt: skip


def rounded_resize(resize):
    def wrapped(images, size):
        return resize(images, size).mul_(255).round_().div_(255)

    return wrapped


def predictions(model, inputs, half: bool) -> torch.Tensor:
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.float16, enabled=half):
        return predict_proba(model, inputs).argmax(1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("candidate", choices=["uint8-resize", "float16-eval"])
    parser.add_argument("variant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--append", type=Path, help="add the row to this CSV")
    args = parser.parse_args()
    config = TrainJudgesConfig(variant=args.variant, kind="both", epochs=10, seed=args.seed)
    extra = {}
    if args.candidate == "uint8-resize":
        module = importlib.import_module("debatelab.data.preprocess")
        module.resize = rounded_resize(module.resize)
        extra = {"candidate": "uint8-resize"}
    data = load_variant(args.variant, data_root())
    grid = Grid(data.image_size, config.grid)
    gen = torch.Generator().manual_seed(12345)  # the masks `debatelab train` measures on
    sparse_inputs = [grid.apply(data.x_test, grid.random_masks(len(data.x_test), config.reveal,
                                                               gen))
                     for _ in range(config.mc_draws)]  # fmt: skip
    cells = {}
    for kind in ("gold", "sparse"):
        trained = dataclasses.replace(config.judge_config(kind), extra=extra)
        model = get_judge(trained, data, cache_dir(), False).model.eval()
        batches = [data.x_test] if kind == "gold" else sparse_inputs
        labels = torch.cat([data.y_test] * len(batches))
        full = torch.cat([predictions(model, x, False) for x in batches])
        if args.candidate == "float16-eval":
            half = torch.cat([predictions(model, x, True) for x in batches])
            cells[f"{kind}_changed_pct"] = f"{100 * (half != full).float().mean():.3f}"
            full = half
        cells[f"{kind}_pct"] = f"{100 * (full == labels).float().mean():.2f}"
    report_row([args.variant, args.candidate, str(config.judge_config("gold").batch_size),
                str(args.seed), cells["gold_pct"], cells["sparse_pct"],
                cells.get("gold_changed_pct", ""), cells.get("sparse_changed_pct", "")],
               args.append, HEADER)  # fmt: skip


if __name__ == "__main__":
    main()
