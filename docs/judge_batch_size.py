"""Issue 42's first candidate: the frozen judges' batch size (the published notebooks other than
the frozen-judge one use 128, as debatelab now does; the frozen-judge notebook as published, 256).

    python docs/judge_batch_size.py VARIANT BATCH [--seed S] [--append docs/measurements/judge-batch-size.csv]

Trains the gold classifier and the sparse judge of VARIANT with the default recipe (seed S,
default 0; 10 epochs) but BATCH images per step, into the cache ($DEBATELAB_CACHE), and prints their test
accuracy as `debatelab train` measures it (gold on the full test set; sparse on 10 random
4-cell masks per test image, Monte Carlo).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from measured import report_row

from debatelab.data import load_variant
from debatelab.experiments.setup import monte_carlo_accuracy
from debatelab.experiments.train import TrainJudgesConfig
from debatelab.judges import get_judge
from debatelab.paths import cache_dir, data_root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant")
    parser.add_argument("batch", type=int)
    parser.add_argument("--seed", type=int, default=0, help="judge seed (default 0)")
    parser.add_argument("--append", type=Path, help="add the row to this CSV")
    args = parser.parse_args()
    config = TrainJudgesConfig(variant=args.variant, kind="both", epochs=10, seed=args.seed,
                               batch_size=args.batch)  # fmt: skip
    data = load_variant(args.variant, data_root())
    accuracy = {}
    for kind in ("gold", "sparse"):
        judge = get_judge(config.judge_config(kind), data, cache_dir(), False)
        accuracy[kind] = 100 * monte_carlo_accuracy(judge, data, config)
    report_row([args.variant, str(args.batch), str(args.seed), f"{accuracy['gold']:.2f}",
                f"{accuracy['sparse']:.2f}"], args.append)  # fmt: skip


if __name__ == "__main__":
    main()
