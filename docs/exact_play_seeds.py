"""The setup table's exact-play cells across judge seeds: how far a cell moves when only the
seed of the judges' training changes (issue 42: is a cell's distance from the published value
more than another seed would give?).

    python docs/exact_play_seeds.py VARIANT SEED [--batch-size B] [--images 0:10000:10]
        [--runs DIR] [--append docs/measurements/exact-play-seeds.csv]

Runs ``debatelab run --dataset VARIANT --seed SEED --batch-size B --images IMAGES`` into
DIR/VARIANT-bB-sSEED (resumable; judges and store in the cache, $DEBATELAB_CACHE) and prints
the row: the sparse judge's exact accuracy, the ensemble and the five exact-play columns on
those images, in percent.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from measured import report_row

from debatelab.report.tables import SETUP_KEYS

#: The setup table's columns this script keeps (the gold classifier does not depend on masks)
COLUMNS = ("sparse", "ensemble", "cons", "D2t", "D4t", "J2t", "J4t")
HEADER = "variant,batch_size,seed,images," + ",".join(COLUMNS) + ",commit"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant")
    parser.add_argument("seed", type=int)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--images", default="0:10000:10")
    parser.add_argument("--runs", type=Path, default=Path("runs/exact-play-seeds"))
    parser.add_argument("--append", type=Path, help="add the row to this CSV")
    args = parser.parse_args()
    out = args.runs / f"{args.variant}-b{args.batch_size}-s{args.seed}"
    command = [sys.executable, "-m", "debatelab", "run", "--dataset", args.variant,
               "--seed", str(args.seed), "--batch-size", str(args.batch_size),
               "--images", args.images, "--quiet", "--out", str(out)]  # fmt: skip
    subprocess.run(command, check=True)
    metrics = json.loads((out / "metrics.json").read_text())
    cells = [f"{100 * metrics[SETUP_KEYS[column]]:.2f}" for column in COLUMNS]
    report_row([args.variant, str(args.batch_size), str(args.seed), args.images, *cells],
               args.append, HEADER)  # fmt: skip


if __name__ == "__main__":
    main()
