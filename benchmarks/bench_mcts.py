"""Throughput of the pixel-debate MCTS in judge evaluations per second: leaves of many trees
judged in one batch versus one judge call per rollout.

    python benchmarks/bench_mcts.py [--games 63] [--rollouts 100] [--pixels 6] [--threads 1]
                                    [--min-speedup 3]

Weights do not change the speed, so the judge is the pixel judge's architecture with its
initial weights; the images are MNIST test images when the dataset is found, else random sparse
digits of the same size.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from debatelab.games.agents import MCTSAgent, MCTSConfig
from debatelab.games.pixels import PixelRules, liar_games
from debatelab.judges.pixel import PixelJudge, PixelTrainConfig, make_pixel_model


def images(n: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        from debatelab.data import load_raw

        x, y = load_raw("mnist", "test", download=False)
        return x[:n], y[:n].astype(np.int64)
    except Exception:  # no dataset here: random strokes of ~150 nonzero pixels
        rng = np.random.default_rng(0)
        x = ((rng.random((n, 28, 28)) < 0.2) * rng.integers(1, 256, (n, 28, 28))).astype(np.uint8)
        return x, rng.integers(0, 10, n)


def measure(games, judge, rollouts: int, batch_games: int) -> tuple[float, float]:
    agent = MCTSAgent(MCTSConfig(rollouts=rollouts, batch_games=batch_games))
    judge.evaluations = judge.calls = 0
    start = time.perf_counter()
    agent.search(games, judge, torch.Generator().manual_seed(0))
    wall = time.perf_counter() - start
    return judge.evaluations / wall, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=63, help="games searched (7 images x 9)")
    parser.add_argument("--rollouts", type=int, default=100, help="simulations per tree")
    parser.add_argument("--pixels", type=int, default=6)
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument(
        "--single-games", type=int, default=8, help="games timed one call per rollout (slow)"
    )
    parser.add_argument(
        "--min-speedup", type=float, default=0.0, help="exit 1 when batching gains less"
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = make_pixel_model(PixelTrainConfig(pixels=args.pixels))
    judge = PixelJudge(model)
    x, y = images((args.games + 8) // 9)
    games, _ = liar_games(x, y, PixelRules(args.pixels))
    games = games.subset(slice(0, args.games))
    batched, wall_b = measure(games, judge, args.rollouts, batch_games=args.games)
    few = games.subset(slice(0, args.single_games))
    single, wall_s = measure(few, judge, args.rollouts, batch_games=1)
    print(f"pixels={args.pixels} rollouts={args.rollouts} threads={args.threads} "
          f"candidates/game~{int(games.valid.sum(1).float().mean())}")  # fmt: skip
    print(f"batched  ({args.games} trees in lockstep): {batched:8.0f} judge evals/s "
          f"({wall_b:.1f} s)")  # fmt: skip
    print(f"unbatched (one call per rollout, {args.single_games} trees): {single:8.0f} judge "
          f"evals/s ({wall_s:.1f} s)")  # fmt: skip
    print(f"speed-up: {batched / single:.1f}x")
    if batched / single < args.min_speedup:
        raise SystemExit(f"speed-up below the required {args.min_speedup}x")


if __name__ == "__main__":
    main()
