"""The same pieces run locally and on Ray, on this machine in one run.

Prints (1) the overhead per piece of :func:`debatelab.cluster.run_pieces` on pieces that do
nothing (in this process, a local process pool of 2, a local Ray instance with 2 CPUs), and (2)
the wall time of a real workload, the all-mask dump and the frozen sweep of ``--images`` MNIST
test images (a judge of the published widths with random weights: the same arithmetic as a
trained one), at 1 and 2 workers locally and on Ray, with the speed-up over one local worker.
Ray's start-up (``ray.init``) is timed apart.

    python benchmarks/bench_cluster.py [--images 64] [--pieces 200]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import ray
import torch

from debatelab.cluster import Cluster, run_pieces
from debatelab.data import load_variant
from debatelab.experiments.sweep import SweepPlan, run_sweep
from debatelab.judges.cnn import JudgeCNN
from debatelab.store import dump_all_mask_probs


def nothing(piece):
    return piece


def timed(fn):
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def workload(images, labels, where, folder: Path):
    torch.manual_seed(0)
    model = JudgeCNN(1, (32, 64), 18).eval()
    dump_s, store = timed(lambda: dump_all_mask_probs(model, images, folder / "store",
                                                      chunk_images=8, progress=False,
                                                      where=where))  # fmt: skip
    plan = SweepPlan.build(36, 4, grid_points=11, diagonal_points=16, consultancy_points=16)
    sweep_s, res = timed(lambda: run_sweep(store, labels, plan, folder / "chunks", where,
                                           progress=False))  # fmt: skip
    return dump_s, sweep_s, res


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=64)
    parser.add_argument("--pieces", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    mnist = load_variant("mnist")
    images, labels = mnist.x_test[: args.images], mnist.y_test[: args.images].numpy()

    print("| where | overhead per piece (ms) |\n|---|---|")
    pieces = list(range(args.pieces))
    for name, where in (("this process", 1), ("local pool of 2", 2)):
        wall, _ = timed(lambda w=where: list(run_pieces(nothing, pieces, w)))
        print(f"| {name} | {1000 * wall / len(pieces):.3f} |")
    results = {}
    rows = []
    for cpus in (1, 2):
        start, _ = timed(lambda c=cpus: ray.init(num_cpus=c, include_dashboard=False,
                                                 log_to_driver=False))  # fmt: skip
        if cpus == 2:
            list(run_pieces(nothing, pieces[:10], Cluster("ray")))  # workers up
            wall, _ = timed(lambda: list(run_pieces(nothing, pieces, Cluster("ray"))))
            print(f"| Ray, 2 CPUs (start-up {start:.1f} s) | {1000 * wall / len(pieces):.3f} |")
        with tempfile.TemporaryDirectory() as tmp:
            dump_s, sweep_s, res = workload(images, labels, Cluster("ray"), Path(tmp))
        results[f"ray{cpus}"] = res
        rows.append((f"Ray, {cpus} CPU(s)", dump_s, sweep_s))
        ray.shutdown()
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            dump_s, sweep_s, res = workload(images, labels, Cluster(workers=workers), Path(tmp))
        results[f"local{workers}"] = res
        rows.insert(workers - 1, (f"local, {workers} worker(s)", dump_s, sweep_s))
    base = rows[0][1] + rows[0][2]
    print(f"\n{args.images} MNIST images, chunks of 8")
    print("| where | dump s | sweep s | total s | speed-up |\n|---|---|---|---|---|")
    for name, dump_s, sweep_s in rows:
        total = dump_s + sweep_s
        print(f"| {name} | {dump_s:.1f} | {sweep_s:.1f} | {total:.1f} | {base / total:.2f}x |")
    ref = results["local1"]
    same = all(np.array_equal(ref[k], r[k]) for r in results.values() for k in ref)
    print(f"results identical everywhere: {same}")


if __name__ == "__main__":
    main()
