"""Fast versus naive all-mask judge probabilities, on the same machine in one run.

The naive path pushes every masked copy of an image through the judge in batches of 4,096 in
inference mode (float32); the fast path is ``all_mask_probs``. Prints seconds per image, the
speed ratio and the max absolute difference of the probabilities, for the MNIST judge (1
channel, widths 32/64) and a CIFAR-width judge (3 channels, 64/128).

    python benchmarks/bench_allmask.py [--fast-images 64] [--naive-images 1]
"""

from __future__ import annotations

import argparse
import glob
import os
import time

import numpy as np
import torch

from debatelab import JudgeCNN
from debatelab.data import load_variant
from debatelab.geometry import LabelledMasks
from debatelab.judges.allmask import _build_tables, all_mask_probs
from debatelab.judges.train import load_checkpoint


def judge_and_images(kind: str, n: int):
    if kind == "mnist":
        data = load_variant("mnist", download=False)
        cache = os.environ.get("DEBATELAB_CACHE", os.path.expanduser("~/.cache/debatelab"))
        found = sorted(glob.glob(f"{cache}/judges/mnist-sparse-s0-*.pt"))
        found = [f for f in found if not f.endswith(".partial.pt")]
        if found:
            return load_checkpoint(found[0]).model, data.x_test[:n], "trained MNIST sparse judge"
        torch.manual_seed(0)
        return JudgeCNN(1, (32, 64)).eval(), data.x_test[:n], "random-weight MNIST-width judge"
    torch.manual_seed(0)
    images = torch.randn(n, 3, 18, 18, generator=torch.Generator().manual_seed(0))
    return JudgeCNN(3, (64, 128)).eval(), images, "random-weight CIFAR-width judge"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast-images", type=int, default=64)
    parser.add_argument("--naive-images", type=int, default=1)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load {os.getloadavg()}")
    _build_tables(18, 6, LabelledMasks.masks(36, 4))  # built once per geometry, as in any run
    for kind in ("mnist", "cifar"):
        model, images, label = judge_and_images(kind, max(args.fast_images, args.naive_images))
        t0 = time.perf_counter()
        fast = all_mask_probs(model, images[: args.fast_images])
        t_fast = (time.perf_counter() - t0) / args.fast_images
        t0 = time.perf_counter()
        naive = all_mask_probs(model, images[: args.naive_images], method="naive", mask_chunk=4096)
        t_naive = (time.perf_counter() - t0) / args.naive_images
        diff = float(np.abs(fast[: args.naive_images] - naive).max())
        print(
            f"{label}: naive {t_naive:.2f} s/image, fast {1000 * t_fast:.1f} ms/image, "
            f"ratio {t_naive / t_fast:.0f}x, max abs diff {diff:.2e}, "
            f"10,000 images fast ~{t_fast * 10000 / 60:.1f} min"
        )


if __name__ == "__main__":
    main()
