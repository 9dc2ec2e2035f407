"""Two readings of the quantilised consultant's ranking (docs/results-frozen-judges.md, "Best-capability cells")

The per-claim consultant (the sweep's `consultancy`) ranks the masks separately for each class
c by the judge's p(c | mask), commits the class whose top-k average is highest and shows a mask
from that class's top k (reading A). The post's wording ("ranks all masks by the judge's
confidence on them ... its top-k evidence") also admits one claim-agnostic ranking by the
judge's confidence max_c p(c | mask), with the class committed by its average over that one top
k (reading B, the sweep's `consultancy_confidence`, ties of the confidence sharing mass).
Both agree at k = 1 up to ties and at k = all. The sweep solves both (``ranking="claim"`` and
``ranking="confidence"``); this prints selection and judge accuracy of both on the 48-point
consultancy grid from a finished all-mask store of test images 0:10000:10 (`debatelab dump
--dataset VARIANT --images 0:10000:10` makes it):

    python docs/consultancy_ranking.py mnist-whitened
"""

from __future__ import annotations

import argparse

import numpy as np

from debatelab.data.preprocess import load_variant
from debatelab.experiments.sweep import capability_ks
from debatelab.games.solver import solve_capabilities
from debatelab.paths import cache_dir
from debatelab.store import open_store


def both_readings(probs: np.ndarray, labels: np.ndarray, ks: np.ndarray) -> np.ndarray:
    """``(4, len(ks))`` sums over the images of selection and judge accuracy under reading A
    and under reading B, both from the sweep's own solver."""
    caps = [(int(k), 1) for k in ks]
    rows = []
    for ranking in ("claim", "confidence"):
        res = solve_capabilities(probs, 36, (4,), caps, "asym", labels, ranking=ranking)
        rows += [res["claim_correct"].sum(1), res["judge_accuracy"].sum(1)]
    return np.stack(rows)


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
        sums += both_readings(chunk, labels[lo : lo + len(chunk)], ks)
    acc = 100 * sums / len(labels)
    print("k | A selection, A judge | B selection, B judge")
    for i, k in enumerate(ks):
        print(f"{k:6d} | {acc[0, i]:6.2f} {acc[1, i]:6.2f} | {acc[2, i]:6.2f} {acc[3, i]:6.2f}")
    for name, row in (("A", acc[1]), ("B", acc[3])):
        print(f"best judge accuracy, reading {name}: {row.max():.2f} at k = {ks[row.argmax()]}")


if __name__ == "__main__":
    main()
