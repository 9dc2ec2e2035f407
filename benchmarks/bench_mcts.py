"""Speed of the pixel debate's search: the judge's sparse forward against its dense forward,
and MCTS rollouts per second end to end.

    python benchmarks/bench_mcts.py [--games 63] [--rollouts 100] [--pixels 6]
                                    [--threads 1 2] [--min-speedup 3]

1. Judge evaluations per second on positions of ``--pixels`` random nonzero pixels of MNIST test
   images, batches of 512: the dense forward (the two 28x28 planes through the network) against
   the sparse forward (:class:`debatelab.judges.pixel_fast.SparsePixelForward` for the CNN,
   ``SparsePixelMLPForward`` for the MLP recipe), at each thread count, with the largest logit
   difference.
2. One MCTS move for ``--games`` games (liars of consecutive images, first turn): the compiled
   search with the sparse judge and the dense judge, and the torch reference search with the
   sparse judge: rollouts per second and judge evaluations per second; then the compiled search
   with one tree at a time (one judge call per rollout) on a few games.

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
from debatelab.judges.pixel import (
    PixelJudge,
    PixelMLPConfig,
    PixelTrainConfig,
    make_pixel_model,
    pixel_values,
    random_nonzero_masks,
)


def images(n: int) -> tuple[np.ndarray, np.ndarray]:
    try:
        from debatelab.data import load_raw

        x, y = load_raw("mnist", "test", download=False)
        return x[:n], y[:n].astype(np.int64)
    except Exception:  # no dataset here: random strokes of ~150 nonzero pixels
        rng = np.random.default_rng(0)
        x = ((rng.random((n, 28, 28)) < 0.2) * rng.integers(1, 256, (n, 28, 28))).astype(np.uint8)
        return x, rng.integers(0, 10, n)


def rate(func, items: int, seconds: float = 2.0) -> float:
    """Items per second of ``func`` (after one warm-up call), over about ``seconds``."""
    func()
    start, calls = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        func()
        calls += 1
    return items * calls / (time.perf_counter() - start)


def judge_speed(model, pixels: int, threads: list[int], name: str = "CNN judge") -> float:
    x, _ = images(512)
    values = pixel_values(x)
    mask = random_nonzero_masks(values, pixels, torch.Generator().manual_seed(0))
    dense, sparse = PixelJudge(model, sparse_limit=0), PixelJudge(model)
    gap = float((dense.logits(values, mask) - sparse.logits(values, mask)).abs().max())
    best = 0.0
    for t in threads:
        torch.set_num_threads(t)
        d = rate(lambda: dense.logits(values, mask), len(values))
        s = rate(lambda: sparse.logits(values, mask), len(values))
        best = max(best, s / d)
        print(f"{name}, {t} thread(s), batches of 512, K={pixels}: dense {d:8.0f} evals/s, "
              f"sparse {s:8.0f} evals/s, {s / d:.1f}x (max logit difference {gap:.1e})")  # fmt: skip
    return best


def search_speed(games, judge, rollouts: int, batch_games: int,
                 engine: str = "compiled") -> tuple[float, float, float]:  # fmt: skip
    """Rollouts/s, judge evaluations/s and wall seconds of one move's search for ``games``."""
    agent = MCTSAgent(MCTSConfig(rollouts=rollouts, batch_games=batch_games, engine=engine))
    judge.evaluations = judge.calls = 0
    start = time.perf_counter()
    agent.search(games, judge, torch.Generator().manual_seed(0))
    wall = time.perf_counter() - start
    return len(games) * rollouts / wall, judge.evaluations / wall, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=63, help="games searched (7 images x 9)")
    parser.add_argument("--rollouts", type=int, default=100, help="simulations per tree")
    parser.add_argument("--pixels", type=int, default=6)
    parser.add_argument("--threads", type=int, nargs="+", default=[1], help="torch CPU threads")
    parser.add_argument(
        "--single-games", type=int, default=8, help="games timed one call per rollout (slow)"
    )
    parser.add_argument(
        "--min-speedup", type=float, default=0.0,
        help="exit 1 when batching or the sparse judge gains less",
    )  # fmt: skip
    args = parser.parse_args()
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model = make_pixel_model(PixelTrainConfig(pixels=args.pixels))
    sparse_gain = judge_speed(model, args.pixels, args.threads)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        mlp = make_pixel_model(PixelMLPConfig(pixels=args.pixels)).eval()
    judge_speed(mlp, args.pixels, args.threads, "MLP judge")
    torch.set_num_threads(args.threads[0])
    x, y = images((args.games + 8) // 9)
    games, _ = liar_games(x, y, PixelRules(args.pixels))
    games = games.subset(slice(0, args.games))
    print(f"MCTS, K={args.pixels}, first move, {args.rollouts} rollouts, {args.threads[0]} "
          f"thread(s), candidates/game ~{int(games.valid.sum(1).float().mean())}")  # fmt: skip
    search_speed(games.subset(slice(0, 2)), PixelJudge(model), 2, 2)  # compiles the kernels
    rows = {}
    for name, judge, engine in (
        ("sparse", PixelJudge(model), "compiled"),
        ("dense", PixelJudge(model, sparse_limit=0), "compiled"),
        ("reference", PixelJudge(model), "reference"),
    ):
        rows[name] = search_speed(games, judge, args.rollouts, args.games, engine)
        r, e, wall = rows[name]
        judged = "dense" if name == "dense" else "sparse"
        print(f"  {args.games} trees in lockstep, {engine} search, {judged} judge: {r:8.0f} "
              f"rollouts/s, {e:8.0f} judge evals/s ({wall:.1f} s)")  # fmt: skip
    few = games.subset(slice(0, args.single_games))
    r1, e1, wall = search_speed(few, PixelJudge(model), args.rollouts, 1)
    print(f"  one tree at a time ({args.single_games} trees), sparse judge: {r1:8.0f} rollouts/s "
          f"({wall:.1f} s)")  # fmt: skip
    batching = rows["sparse"][0] / r1
    print(f"batching: {batching:.1f}x; sparse judge in the search: "
          f"{rows['sparse'][0] / rows['dense'][0]:.1f}x; compiled search over the reference: "
          f"{rows['sparse'][0] / rows['reference'][0]:.1f}x")  # fmt: skip
    if min(batching, sparse_gain) < args.min_speedup:
        raise SystemExit(f"speed-up below the required {args.min_speedup}x")


if __name__ == "__main__":
    main()
