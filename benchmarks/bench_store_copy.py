"""A part of the test set from the whole set's finished store (copied) versus dumped afresh, on
the same machine in one run.

Dumps a store of a random judge (the MNIST judge's shape: 1 channel, widths 32/64, 6x6 grid,
4 cells, 58,905 masks) on ``--whole`` random images, then stores every ``--step``-th of them
twice: computed by the judge, and copied from the whole store (what ``dump_store`` does for
a slice of a finished whole-test-set store). Prints both times, the ratio and whether the two
stores are equal.

    python benchmarks/bench_store_copy.py [--whole 640] [--step 10] [--threads 1]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from debatelab import JudgeCNN
from debatelab.store import dump_all_mask_probs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--whole", type=int, default=640, help="images in the whole store")
    parser.add_argument("--step", type=int, default=10, help="keep every STEP-th image")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    model = JudgeCNN(1, (32, 64), image_size=18).eval()
    images = torch.randn(args.whole, 1, 18, 18, generator=torch.Generator().manual_seed(1))
    rows = np.arange(args.whole)[:: args.step]
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        whole = dump_all_mask_probs(model, images, Path(tmp) / "whole.zarr", 6, 4, progress=False)
        t_whole = time.perf_counter() - start
        start = time.perf_counter()
        computed = dump_all_mask_probs(model, images[rows], Path(tmp) / "computed.zarr", 6, 4,
                                       progress=False)  # fmt: skip
        t_computed = time.perf_counter() - start
        start = time.perf_counter()
        copied = dump_all_mask_probs(model, images[rows], Path(tmp) / "copied.zarr", 6, 4,
                                     progress=False, source=(whole, rows))  # fmt: skip
        t_copied = time.perf_counter() - start
        equal = np.array_equal(computed.probs[:], copied.probs[:])
    print(f"whole store: {args.whole} images in {t_whole:.1f} s ({args.threads} thread(s))")
    print(f"images 0:{args.whole}:{args.step} ({len(rows)}): computed {t_computed:.2f} s, copied "
          f"{t_copied:.2f} s, ratio {t_computed / t_copied:.1f}x; stores equal: {equal}")  # fmt: skip


if __name__ == "__main__":
    main()
