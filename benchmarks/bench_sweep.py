"""Benchmark of the frozen-judge sweep: time per image and linearity in the number of images.

Runs the whole sweep of REFERENCE B (consultancy curve, 2-turn and 4-turn grids and diagonals)
on the first N test images of an all-mask store, for two sizes, and prints wall and CPU times
and the image-linearity ratio ``t(N2) / t(N1) / (N2 / N1)`` (1.0 = linear).

    python benchmarks/bench_sweep.py --store PATH --sizes 250 1000 --workers 2

Without --store it uses (and if needed computes) the MNIST store of the first max(sizes) test
images via the judge cache ($DEBATELAB_CACHE, $DEBATELAB_DATA).
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from debatelab.experiments.sweep import SweepPlan, run_sweep
from debatelab.store import open_store


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_sweep(store, labels, n: int, workers: int, out: str | None = None):
    """Wall and CPU seconds (this process and its workers) of the sweep on the first n images;
    with ``out``, the whole sweep run folder (arrays, figures, report) is written there."""
    plan = SweepPlan.build(store.attrs.get("grid", 6) ** 2, store.attrs.get("reveal", 4))
    wall, cpu, child = time.perf_counter(), time.process_time(), _children_cpu()
    if out is None:
        run_sweep(store, labels[:n], plan, where=workers, progress=False, n_images=n)
    else:
        from debatelab.data import load_variant
        from debatelab.experiments.sweep_report import frozen_judge_sweep
        from debatelab.report.runs import RunFolder

        run = RunFolder(out, "bench_sweep", {"images": f"0:{n}", "workers": workers})
        images = load_variant("mnist").x_test[:256].numpy()
        metrics = frozen_judge_sweep(run, store, labels[:n], "mnist", f"0:{n}",
                                     test_images=images, plan=plan, where=workers,
                                     progress=False, n_images=n)  # fmt: skip
        run.finish(metrics, store=str(store.path))
    cpu_s = time.process_time() - cpu + _children_cpu() - child
    return time.perf_counter() - wall, cpu_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--store", help="all-mask store (default: MNIST via the judge cache)")
    parser.add_argument("--sizes", type=int, nargs=2, default=[250, 1000])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", help="write the larger size's full run folder here")
    args = parser.parse_args()
    from debatelab.data import load_variant

    labels_all = load_variant("mnist").y_test.numpy()
    if args.store:
        store = open_store(args.store)
        start = store.attrs.get("image_start", 0)
    else:
        from debatelab.experiments.setup import JudgeSetupConfig, dump_store, prepare_judges

        setup = prepare_judges(JudgeSetupConfig(), progress=False)
        store = dump_store(setup, f"0:{max(args.sizes)}", progress=False)
        start = 0
    labels = labels_all[start : start + store.probs.shape[0]]
    print(f"store {store.path} ({store.probs.shape[0]} images), workers {args.workers}, "
          f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}")  # fmt: skip
    results = {}
    for n in args.sizes:
        out = args.out if n == max(args.sizes) else None
        wall, cpu = time_sweep(store, labels, n, args.workers, out)
        results[n] = (wall, cpu)
        print(f"{n:6d} images: wall {wall:8.1f} s ({wall / n:.3f} s/image), "
              f"cpu {cpu:8.1f} s ({cpu / n:.3f} s/image), load {os.getloadavg()[0]:.1f}",
              flush=True)  # fmt: skip
    (n1, (w1, c1)), (n2, (w2, c2)) = sorted(results.items())
    print(f"linearity t({n2})/t({n1})/({n2}/{n1}): wall {w2 / w1 / (n2 / n1):.3f}, "
          f"cpu {c2 / c1 / (n2 / n1):.3f}")  # fmt: skip
    print(f"projected whole sweep on 1,000 images: wall {w2 / n2 * 1000 / 60:.1f} min, "
          f"cpu {c2 / n2 * 1000 / 60:.1f} min")  # fmt: skip
    np.set_printoptions(precision=3)


if __name__ == "__main__":
    main()
