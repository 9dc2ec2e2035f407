"""Leaf scoring and training steps of the on-policy trained judges, on this machine in one run.

Leaf scoring is what dominates on-policy training (docs/trained-judges.md#training-loop: 128
images x 1,296 leaves = 166k no-grad judge evaluations per step). For each design (D1, D3 with one
and two class queries) and input encoding (consultancy, debate, control) this prints judge
evaluations per second of ``OnPolicyJudge.claim_scores`` on sampled trees of real MNIST test
images (the batched forward, chunks of 16,000 plays, channels-last) and of the same forward in
the plain memory layout; then the same sampled trees through the factorised trunk (the CPU default)
alternated with the batched forward (best of ``--repeats`` runs of each), beside the rate of
the part after the first linear layer alone (both share it, so it bounds both); then the
exact search (``--search exact``): leaves per second of the factorised trunk on each family's
whole universe (58,905 masks, 353,430 pair splits, 1,413,720 labelled masks of a control)
beside the batched forward, and seconds per image of the whole exact play; then seconds per
training step (search + one Adam step) at each preset's budget with each scorer, and the peak
resident memory.

    python benchmarks/bench_onpolicy.py [--images 8] [--threads 2] [--steps 3] [--repeats 3]
        [--exact-images 2]
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from debatelab.data import load_variant
from debatelab.experiments.judges_train import PRESETS, train_onpolicy
from debatelab.games.sampled import group_codes, sample_tree, slot_groups
from debatelab.games.sampled_play import SCORERS, family_universe, play, tree_scores
from debatelab.geometry import Grid
from debatelab.judges.allmask import _build_tables
from debatelab.judges.onpolicy import OnPolicyConfig, OnPolicyJudge, encode, make_model

CASES = [  # (design, family, rule, protocol)
    ("D1", "consultancy", "asym", "consultancy"),
    ("D1", "debate", "asym", "debate2"),
    ("D1", "control", "asym", "debate4"),
    ("D3", "debate", "asym", "debate2"),
    ("D3", "debate", "sym", "debate4"),
    ("D3", "control", "last_b", "debate2"),
]


def _judge(design, family, rule):
    queries = 0 if design == "D1" else (1 if rule == "asym" or family == "consultancy" else 2)
    groups = {"consultancy": 1, "debate": 2, "control": 4}[family]
    torch.manual_seed(0)
    return OnPolicyJudge(design, make_model(design, 1, groups, queries).eval(), family, rule,
                         Grid(18, 6))  # fmt: skip


def leaves_per_second(design, family, rule, protocol, images, budget=1296, channels_last=True):
    judge = _judge(design, family, rule)
    if not channels_last:  # the plain layout, as before: the ratio measures the change
        judge.model.to(memory_format=torch.contiguous_format)
        judge.inputs = lambda v, m: encode(v, m, judge.groups, judge.grid)
    gen = torch.Generator().manual_seed(0)
    tree = sample_tree(protocol, len(images), gen, budget=budget)
    codes = group_codes(tree.paths, slot_groups(tree, family == "control", gen)).flatten(0, 1)
    values = images.repeat_interleave(tree.n_leaves, 0)
    with torch.no_grad():
        judge.claim_scores(values[:2000], codes[:2000])  # warm-up
        start = time.perf_counter()
        judge.claim_scores(values, codes)
    return len(values) / (time.perf_counter() - start)


def factorised_sampled_rate(design, family, rule, protocol, images, budget=1296):
    """Leaves per second of the sampled trees through the factorised trunk (the CPU default):
    the index tables are built before the clock starts, as a run builds them once."""
    judge = _judge(design, family, rule)
    gen = torch.Generator().manual_seed(0)
    for n in (1, len(images)):  # one image builds the tables
        tree = sample_tree(protocol, n, gen, budget=budget)
        groups = slot_groups(tree, family == "control", gen)
        if n == 1:
            tree_scores(judge, images[:1], tree, groups, scorer="factorised")
    start = time.perf_counter()
    tree_scores(judge, images, tree, groups, scorer="factorised")
    return len(images) * tree.n_leaves / (time.perf_counter() - start)


def head_rate(design, family, rule, repeats=5):
    """Leaves per second of the part after the first linear layer alone (both scorers share
    it), on random pre-activations in the chunks the judge scores."""
    judge = _judge(design, family, rule)
    chunk = judge._chunk()
    hidden = torch.randn(chunk, judge.first_linear.out_features)
    best = float("inf")
    with torch.no_grad():
        for _ in range(repeats):
            start = time.perf_counter()
            judge.scores_from_hidden(hidden)
            best = min(best, time.perf_counter() - start)
    return chunk / best


def exact_search_rates(design, family, rule, protocol, images):
    """The exact search's leaf scoring (the factorised trunk on the family's whole universe):
    seconds to build the index tables (once per process), leaves per second, and seconds per
    image of the whole exact play (scoring, every ordered reveal's index, the solve)."""
    judge = _judge(design, family, rule)
    universe = family_universe(family, 36)
    _build_tables.cache_clear()  # the sampled trees' timing built them already
    start = time.perf_counter()
    judge.universe_scores(images[:1], universe)  # builds the tables
    build = time.perf_counter() - start
    start = time.perf_counter()
    judge.universe_scores(images, universe)
    rate = len(images) * len(universe) / (time.perf_counter() - start)
    gen = torch.Generator().manual_seed(0)
    with torch.no_grad():
        start = time.perf_counter()
        play(judge, images, protocol, rule, family == "control", gen, search="exact")
    return build, rate, (time.perf_counter() - start) / len(images)


def step_seconds(data, preset: str, steps: int, scorer: str) -> float:
    chosen = PRESETS[preset]
    cfg = OnPolicyConfig(design="D1", protocol="debate2", rule="asym", epochs=1,
                         budget=chosen["budget"], train_limit=128 * steps,
                         eval_images="0:10000:10000")  # fmt: skip
    start = time.perf_counter()
    judge = train_onpolicy(cfg, data, progress=False, scorer=scorer)
    return (judge.history[0]["train_seconds"]) / steps, time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3, help="training steps timed (0 skips)")
    parser.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="alternated runs of each scorer on sampled trees (best of each)",
    )
    parser.add_argument(
        "--exact-images",
        type=int,
        default=2,
        help="images of the exact search's timing (its D3 sym case: ~35 s each; 0 skips it)",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = load_variant("mnist", download=False)
    images = data.x_test[: args.images]
    print(f"threads {args.threads}; {args.images} MNIST test images x 1,296 leaves per case")
    print(
        f"{'design':6} {'encoding':12} {'rule':7} {'protocol':12} {'leaves/s':>10} "
        f"{'contiguous':>10} {'ratio':>6}"
    )
    naive = {}
    for case in CASES:
        rate = naive[case] = leaves_per_second(*case, images)
        plain = leaves_per_second(*case, images, channels_last=False)
        print(
            f"{case[0]:6} {case[1]:12} {case[2]:7} {case[3]:12} {rate:10.0f} {plain:10.0f} "
            f"{rate / plain:6.2f}"
        )
    print(f"\nsampled trees through the factorised trunk (the CPU default) against the batched "
          f"forward, {args.images} images, best of {args.repeats} alternated runs of each")  # fmt: skip
    print(f"{'design':6} {'encoding':12} {'rule':7} {'protocol':12} {'forward/s':>10} "
          f"{'leaves/s':>10} {'x forward':>9} {'head/s':>10}")  # fmt: skip
    for case in CASES:
        forward = rate = 0.0
        for _ in range(args.repeats):  # alternated: the ratio survives a load that drifts
            forward = max(forward, leaves_per_second(*case, images))
            rate = max(rate, factorised_sampled_rate(*case, images))
        print(f"{case[0]:6} {case[1]:12} {case[2]:7} {case[3]:12} {forward:10.0f} {rate:10.0f} "
              f"{rate / forward:9.1f} {head_rate(*case[:3]):10.0f}")  # fmt: skip
    print(f"\nexact search (--search exact), {args.exact_images} images: the factorised trunk on "
          "the whole universe against the batched forward above")  # fmt: skip
    print(f"{'design':6} {'encoding':12} {'rule':7} {'protocol':12} {'tables s':>8} "
          f"{'leaves/s':>10} {'x forward':>9} {'s/image':>8}")  # fmt: skip
    for case in CASES if args.exact_images > 0 else []:
        build, rate, per_image = exact_search_rates(*case, images[: args.exact_images])
        print(f"{case[0]:6} {case[1]:12} {case[2]:7} {case[3]:12} {build:8.1f} {rate:10.0f} "
              f"{rate / naive[case]:9.1f} {per_image:8.2f}")  # fmt: skip
    for preset in PRESETS if args.steps > 0 else []:  # --steps 0 skips the step timing
        for scorer in SCORERS:
            per_step, _ = step_seconds(data, preset, args.steps, scorer)
            budget = PRESETS[preset]["budget"]
            print(f"preset {preset}: D1 2-turn asym, batch 128, {budget} leaves per image, "
                  f"{scorer} scorer: {per_step:.2f} s per step ({1 / per_step:.3f} steps/s)")  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
