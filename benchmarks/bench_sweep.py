"""Benchmark of the frozen-judge sweep: time per image and linearity in the number of images.

Runs the whole sweep of REFERENCE B (consultancy curve, 2-turn and 4-turn grids and diagonals)
on the first N test images of an all-mask store, for two sizes, and prints wall and CPU times
and the image-linearity ratio ``t(N2) / t(N1) / (N2 / N1)`` (1.0 = linear).

    python benchmarks/bench_sweep.py --store PATH --sizes 250 1000 --workers 2
    python benchmarks/bench_sweep.py --store PATH --sizes 50 50 --plan curves --against OLD/src

``--plan curves`` times the study's full-set stage instead (exact play, consultancy's curve and
the debates' diagonals, no heat-map grid). ``--against SRC`` times the same sweep with another
source tree's package (e.g. ``git worktree add /tmp/old REV`` then ``/tmp/old/src``) in a child
process, alternating with this checkout's, and prints the CPU ratio and whether every array of
the two results is equal (the solver's fast paths against an older revision).

Without --store it uses (and if needed computes) the MNIST store of the first max(sizes) test
images via the judge cache ($DEBATELAB_CACHE, $DEBATELAB_DATA).
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np

from debatelab.experiments.sweep import SweepPlan, run_sweep
from debatelab.store import open_store


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_sweep(store, labels, n: int, workers: int, out: str | None = None,
               grid_points: int | None = None, keep: str | None = None):  # fmt: skip
    """Wall and CPU seconds (this process and its workers) of the sweep on the first n images;
    with ``out``, the whole sweep run folder (arrays, figures, report) is written there; with
    ``keep``, the sweep's result arrays are saved there (.npz)."""
    extra = {} if grid_points is None else {"grid_points": grid_points}
    plan = SweepPlan.build(store.attrs.get("grid", 6) ** 2, store.attrs.get("reveal", 4), **extra)
    wall, cpu, child = time.perf_counter(), time.process_time(), _children_cpu()
    if out is None:
        res = run_sweep(store, labels[:n], plan, where=workers, progress=False, n_images=n)
        if keep:
            np.savez(keep, **res)
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
    parser.add_argument("--plan", choices=("full", "curves"), default="full",
                        help="full: the whole sweep; curves: no heat-map grid (the study's "
                        "full-set stage)")  # fmt: skip
    parser.add_argument("--against", metavar="SRC", help="another source tree to compare with")
    parser.add_argument("--keep", help=argparse.SUPPRESS)  # the child's result arrays
    args = parser.parse_args()
    grid_points = 0 if args.plan == "curves" else None
    if args.against:
        compare_sources(args)
        return
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
    for n in dict.fromkeys(args.sizes):
        out = args.out if n == max(args.sizes) else None
        wall, cpu = time_sweep(store, labels, n, args.workers, out, grid_points, args.keep)
        results[n] = (wall, cpu)
        print(f"{n:6d} images: wall {wall:8.1f} s ({wall / n:.3f} s/image), "
              f"cpu {cpu:8.1f} s ({cpu / n:.3f} s/image), load {os.getloadavg()[0]:.1f}",
              flush=True)  # fmt: skip
    if len(results) < 2:
        return
    (n1, (w1, c1)), (n2, (w2, c2)) = sorted(results.items())
    print(f"linearity t({n2})/t({n1})/({n2}/{n1}): wall {w2 / w1 / (n2 / n1):.3f}, "
          f"cpu {c2 / c1 / (n2 / n1):.3f}")  # fmt: skip
    print(f"projected whole sweep on 1,000 images: wall {w2 / n2 * 1000 / 60:.1f} min, "
          f"cpu {c2 / n2 * 1000 / 60:.1f} min")  # fmt: skip
    np.set_printoptions(precision=3)


def compare_sources(args) -> None:
    """Each size under both source trees (child processes, alternating): CPU seconds, their
    ratio, and whether the result arrays are equal."""
    import json
    import subprocess
    import sys
    import tempfile

    here = str(Path(__file__).resolve().parents[1] / "src")
    for n in sorted(set(args.sizes)):
        cpu, arrays = {}, {}
        for name, src in (("this", here), ("against", args.against)):
            with tempfile.TemporaryDirectory() as tmp:
                keep = f"{tmp}/res.npz"
                cmd = [sys.executable, __file__, "--sizes", str(n), str(n), "--workers",
                       str(args.workers), "--plan", args.plan, "--keep", keep]  # fmt: skip
                if args.store:
                    cmd += ["--store", args.store]
                env = {**os.environ, "PYTHONPATH": src}
                out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
                line = next(x for x in out.stdout.splitlines() if x.strip().startswith(f"{n} "))
                cpu[name] = float(line.split("cpu")[1].split("s")[0])
                with np.load(keep) as saved:
                    arrays[name] = {k: saved[k] for k in saved.files}
        a, b = arrays["this"], arrays["against"]
        equal = a.keys() == b.keys() and all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)
        worst = max((float(np.nanmax(np.abs(a[k] - b[k]))) for k in a if a[k].dtype.kind == "f"),
                    default=0.0)  # fmt: skip
        print(json.dumps({"images": n, "plan": args.plan, "cpu_s_this": cpu["this"],
                          "cpu_s_against": cpu["against"],
                          "ratio_against_over_this": round(cpu["against"] / cpu["this"], 2),
                          "arrays_equal": bool(equal), "max_abs_difference": worst}))  # fmt: skip


if __name__ == "__main__":
    main()
