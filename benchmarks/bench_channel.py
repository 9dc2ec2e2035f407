"""The argument channel's search and training steps, on this machine in one run.

With bits, every cell path of the search is scored under all 16 codewords (and, under last_b,
every (d_A, d_B)): the trunk runs once per path, the head 16 times as often as in the nested
control. For each dataset and arm this prints the search's leaves per second (a leaf = one
(cell path, codeword); the control's leaves are its cell paths), seconds per training step (the
search + one Adam step, scaled to the preset's batch), and from those the estimated wall time of each
arm and of the whole sweep under each preset (training steps, per-epoch evaluation and the
diagnostics pass; baselines not included).

    python benchmarks/bench_channel.py [--threads 1] [--steps 2] [--presets cpu,paper]
        [--scorer factorised|batched|both]

With ``--scorer both`` each arm is timed with the factorised scorer and then the batched
forward, one right after the other, and the row adds the batched leaves per second and the
ratio (times and estimates are the factorised scorer's).
"""

from __future__ import annotations

import argparse
import resource
import time
from math import prod

import torch
import torch.nn.functional as F

from debatelab.data import load_variant
from debatelab.experiments.bits import ARMS, BRANCHING, PRESETS, _channels
from debatelab.games.sampled_play import SCORERS, default_scorer, play
from debatelab.geometry import Grid
from debatelab.judges.onpolicy import OnPolicyJudge, make_model
from debatelab.store import parse_images


def arm_judge(protocol, bits, channels):
    family = "consultancy" if protocol == "consultancy" else "debate"
    queries = 1 if protocol == "consultancy" else 2
    torch.manual_seed(0)
    model = make_model("bit", channels, 1 if family == "consultancy" else 2, queries, 18,
                       4 if bits else 0)  # fmt: skip
    rule = "asym" if protocol == "consultancy" else "last_b"
    return OnPolicyJudge("bit", model, family, rule, Grid(18, 6), channels), rule


def time_arm(data, protocol, bits, branching, steps, n_images, scorer):
    judge, rule = arm_judge(protocol, bits, data.in_channels)
    x, y = data.x_train[:n_images], data.y_train[:n_images]
    gen = torch.Generator().manual_seed(0)
    opt = torch.optim.Adam(judge.model.parameters(), lr=1e-3)
    judge.model.eval()
    play(judge, x[:8], protocol, rule, False, gen, branching=branching, scorer=scorer)  # warm-up
    began = time.perf_counter()
    for _ in range(steps):
        judge.model.eval()
        play(judge, x, protocol, rule, False, gen, branching=branching, scorer=scorer)
    search = (time.perf_counter() - began) / steps
    began = time.perf_counter()
    for _ in range(steps):
        judge.model.eval()
        p = play(judge, x, protocol, rule, False, gen, branching=branching, scorer=scorer)
        judge.model.train()
        loss = F.cross_entropy(judge.logits(x, p.codes, p.queries, p.codeword), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    step = (time.perf_counter() - began) / steps
    leaves = n_images * prod(branching) * (16 if bits else 1)
    return leaves / search, search / n_images, step / n_images


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--presets", default="cpu,paper")
    parser.add_argument("--datasets", default="fashionmnist-whitened,cifar10")
    parser.add_argument(
        "--images",
        type=int,
        default=32,
        help="images per timed step (times are scaled to the preset's batch)",
    )
    parser.add_argument(
        "--scorer",
        choices=(*SCORERS, "both"),
        default=default_scorer("cpu"),
        help="how the sampled trees' leaves are scored (default: as on CPU); both: factorised "
        "and batched side by side, with their ratio",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"threads {args.threads}, {args.steps} timed steps of {args.images} images per arm, "
        f"{args.scorer} scorer"
    )
    both = args.scorer == "both"
    extra = " batched leaves/s | ratio |" if both else ""
    print(
        "| dataset | preset | arm | cell paths | leaves/s | search s/img | s/step (batch) | "
        f"est. arm time |{extra}"
    )
    print("|---|---|---|---|---|---|---|---|" + "---|---|" * both)
    for variant in args.datasets.split(","):
        data = load_variant(variant)
        channels = _channels(variant)
        for preset in args.presets.split(","):
            schedule = PRESETS[preset]
            n_train = schedule["train_limit"] or len(data.y_train)
            n_eval = len(
                range(len(data.y_test))[parse_images(schedule["eval_images"], len(data.y_test))]
            )
            total = 0.0
            for protocol, bits, budget_name in ARMS:
                branching = BRANCHING[preset][channels][budget_name]
                scorer = "factorised" if both else args.scorer
                rate, per_image, step = time_arm(data, protocol, bits, branching, args.steps,
                                                 args.images, scorer)  # fmt: skip
                cells = ""
                if both:
                    batched = time_arm(data, protocol, bits, branching, args.steps, args.images,
                                       "batched")[0]  # fmt: skip
                    cells = f" {batched:,.0f} | {rate / batched:.1f}x |"
                steps = -(-n_train // schedule["batch_size"])
                step *= schedule["batch_size"]  # seconds per step of the preset's batch
                evals = schedule["epochs"] * n_eval + (n_eval if bits else 0)
                arm = schedule["epochs"] * steps * step + evals * per_image
                total += arm
                name = f"{protocol} {'bits' if bits else 'nobits'}"
                print(f"| {variant} | {preset} | {name} | {'x'.join(map(str, branching))} | "
                      f"{rate:,.0f} | {per_image:.4f} | {step:.2f} | {arm / 60:.1f} min |{cells}",
                      flush=True)  # fmt: skip
            print(f"| {variant} | {preset} | **all arms** | | | | | {total / 3600:.2f} h |"
                  + " | |" * both)  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory {peak:,.0f} MB")


if __name__ == "__main__":
    main()
