"""Two readings of the quantilised consultant's ranking (README, "Best-capability cells")

The sweep's consultant ranks the masks separately for each class c by the judge's p(c | mask),
commits the class whose top-k average is highest and shows a mask from that class's top k
(reading A). The post's wording ("ranks all masks by the judge's confidence on them ... its
top-k evidence") also admits one claim-agnostic ranking by the judge's confidence
max_c p(c | mask), with the class committed by its average over that one top k (reading B).
Both agree at k = 1 up to ties and at k = all. This prints selection and judge accuracy of both
on the 48-point consultancy grid from a finished all-mask store of test images 0:10000:10
(`debatelab dump --dataset VARIANT --images 0:10000:10` makes it):

    python docs/consultancy_ranking.py mnist-whitened
"""

from __future__ import annotations

import argparse

import numpy as np

from debatelab.data.preprocess import load_variant
from debatelab.experiments.sweep import capability_ks
from debatelab.paths import cache_dir
from debatelab.store import open_store


def curves(probs: np.ndarray, label: int, ks: np.ndarray) -> np.ndarray:
    """``(4, len(ks))``: selection and judge accuracy of readings A and B on one image."""
    correct = (probs.argmax(1) == label).astype(np.float64)
    rows = np.arange(len(ks))
    order = np.argsort(-probs, axis=0, kind="stable")  # reading A: one ranking per class
    top_means = np.cumsum(np.take_along_axis(probs, order, 0), 0, np.float64)[ks - 1] / ks[:, None]
    claim_a = top_means.argmax(1)
    judge_a = (np.cumsum(correct[order], 0)[ks - 1] / ks[:, None])[rows, claim_a]
    conf = np.argsort(-probs.max(1), kind="stable")  # reading B: one ranking by confidence
    claim_b = (np.cumsum(probs[conf], 0, np.float64)[ks - 1] / ks[:, None]).argmax(1)
    judge_b = np.cumsum(correct[conf])[ks - 1] / ks
    return np.stack([claim_a == label, judge_a, claim_b == label, judge_b])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args()
    found = sorted((cache_dir() / "allmask" / args.variant).glob("*-test0_10000_10.zarr"))
    if not found:
        raise SystemExit(f"no store of images 0:10000:10 for {args.variant}: run "
                         f"`debatelab dump --dataset {args.variant} --images 0:10000:10` first")  # fmt: skip
    store = open_store(found[0])
    labels = load_variant(args.variant, args.data_dir).y_test[0:10000:10]
    ks = capability_ks(58905, 48)
    sums = np.zeros((4, len(ks)))
    for lo, chunk in store.iter_chunks():
        for j, probs in enumerate(chunk):
            sums += curves(probs, int(labels[lo + j]), ks)
    acc = 100 * sums / len(labels)
    print("k | A selection, A judge | B selection, B judge")
    for i, k in enumerate(ks):
        print(f"{k:6d} | {acc[0, i]:6.2f} {acc[1, i]:6.2f} | {acc[2, i]:6.2f} {acc[3, i]:6.2f}")
    for name, row in (("A", acc[1]), ("B", acc[3])):
        print(f"best judge accuracy, reading {name}: {row.max():.2f} at k = {ks[row.argmax()]}")


if __name__ == "__main__":
    main()
