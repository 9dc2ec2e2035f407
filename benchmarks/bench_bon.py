"""Benchmark of the best-of-N debate proxy at the size of the 2026 note.

28 questions with 50 x 50 x 20 pools (synthetic): the full mesh n, m in 1..20 at r = 10
(budget 30 s) and 1,000 paired bootstrap replicates of one contrast, critic Bo10 - Bo1 at
proposer Bo10 and rebuttal Bo10 (budget 60 s). ``--io`` also times writing and reading the
pools as CSV and Parquet. Prints one JSON object.

    python benchmarks/bench_bon.py [--replicates 1000] [--io]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from debatelab.text.bootstrap import BootstrapConfig, bootstrap
from debatelab.text.readers import read_pools, write_pools
from debatelab.text.sweeps import SweepSpec, mesh
from debatelab.text.synthetic import SyntheticConfig, synthetic_pools


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="timings of the mesh")
    parser.add_argument("--io", action="store_true", help="also time CSV and Parquet I/O")
    args = parser.parse_args()

    out: dict = {"load_average": os.getloadavg(), "cpus": os.cpu_count()}
    t = time.perf_counter()
    pools = synthetic_pools(SyntheticConfig(), seed=0)
    out["generate_s"] = round(time.perf_counter() - t, 3)
    q = pools.arm("main")[0]
    out["pool"] = {"questions": len(pools.arm("main")), "shape": q.shape("rebuttal")}

    times = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        grid = mesh(pools, "rebuttal", n=range(1, 21), m=range(1, 21), r=10)
        times.append(time.perf_counter() - t)
    out["mesh_20x20_r10_s"] = {"min": round(min(times), 3), "max": round(max(times), 3),
                               "budget": 30, "points": grid.accuracy[0].size}  # fmt: skip

    spec = SweepSpec("rebuttal", n=(10,), m=(1, 10), r=(10,))
    t = time.perf_counter()
    res = bootstrap(pools, [spec], BootstrapConfig(replicates=args.replicates), seed=1)
    elapsed = time.perf_counter() - t
    est, lo, hi = res.contrast((0, (0, 1, 0)), (0, (0, 0, 0)))
    out["bootstrap_contrast_s"] = {"replicates": args.replicates, "seconds": round(elapsed, 2),
                                   "per_replicate_ms": round(1000 * elapsed / args.replicates, 1),
                                   "budget": 60,
                                   "critic_Bo10_minus_Bo1": [round(x, 4) for x in (est, lo, hi)]}  # fmt: skip

    if args.io:
        with tempfile.TemporaryDirectory() as tmp:
            for suffix in (".parquet", ".csv"):
                path = Path(tmp) / f"pools{suffix}"
                t = time.perf_counter()
                write_pools(pools, path)
                written = time.perf_counter() - t
                t = time.perf_counter()
                read_pools(path)
                out[f"io{suffix}"] = {"write_s": round(written, 2),
                                      "read_s": round(time.perf_counter() - t, 2),
                                      "mb": round(path.stat().st_size / 1e6, 1)}  # fmt: skip
    out["load_average_after"] = os.getloadavg()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
