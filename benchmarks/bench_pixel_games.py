"""Whole pixel debates with MCTS on both sides: wall time, rollouts per second, judge evaluations.

    python benchmarks/bench_pixel_games.py [--pixels 6] [--rollouts 1000] [--images 0:7]
                                           [--batch-games 64] [--threads 1]
                                           [--engine compiled|reference]

Plays every image of ``--images`` (MNIST test set) against all nine liars under precommit,
liar first, with the cached trained pixel judge of ``--pixels`` (``debatelab train --kind pixel
--pixels K`` trains it), seed 0, as ``debatelab pixels`` does, and prints the wall time, the
rollouts per second (games x pixels x rollouts / wall), the judge evaluations spent and the
honest win rate. Run it from two checkouts (``PYTHONPATH=OTHER/src``) to compare search code.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from debatelab.data import load_raw
from debatelab.games.agents import MCTSAgent, MCTSConfig
from debatelab.games.pixels import PixelRules, image_honest_wins, liar_games, play
from debatelab.judges.pixel import PixelJudge, PixelTrainConfig, get_pixel_judge


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pixels", type=int, default=6)
    parser.add_argument("--rollouts", type=int, default=1000)
    parser.add_argument("--images", default="0:7", help="start:stop of MNIST test images")
    parser.add_argument("--batch-games", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--engine", default="compiled", choices=("compiled", "reference"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lo, hi = (int(v) for v in args.images.split(":"))
    trained = get_pixel_judge(PixelTrainConfig(pixels=args.pixels), progress=False)
    judge = PixelJudge(trained.model)
    x, y = load_raw("mnist", "test")
    games, image_of = liar_games(x[lo:hi], y[lo:hi].astype(np.int64), PixelRules(args.pixels))
    agent = MCTSAgent(MCTSConfig(rollouts=args.rollouts, batch_games=args.batch_games,
                                 engine=args.engine))  # fmt: skip
    start = time.perf_counter()
    record = play(games, agent, agent, judge, torch.Generator().manual_seed(0))
    wall = time.perf_counter() - start
    rollouts = len(games) * args.pixels * args.rollouts
    wins = image_honest_wins(record.honest_win, image_of, hi - lo)
    print(f"{args.engine}: K={args.pixels}, {args.rollouts} rollouts/move, images {lo}:{hi} ({len(games)} games), "
          f"{args.threads} thread(s): {wall:.1f} s, {rollouts / wall:.0f} rollouts/s, "
          f"{wall / (hi - lo):.1f} s/image, {judge.evaluations:,} judge evaluations of "
          f"{rollouts:,} rollouts; honest wins {wins.mean():.3f} of images")  # fmt: skip


if __name__ == "__main__":
    main()
