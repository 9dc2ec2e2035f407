"""Is a published cell within the spread of our recipe's judge seeds? (issue 42)

    python docs/seed_interval.py VARIANT [--seeds 5] [--images 0:10000:10] [--runs DIR]
        [--full RECORD] [--append docs/measurements/seed-intervals.csv]

Runs the frozen-judge sweep of judge seeds 0..SEEDS-1 on the same test images (``debatelab
sweep --dataset VARIANT --seed S --images IMAGES --out DIR/VARIANT-b128-sS``; resumable, judges
and stores from the cache, $DEBATELAB_CACHE) and, for each exact-play and best-capability cell,
estimates how far one seed's full-test-set value spreads:

- the seeds' values on the shared images mix the seed's effect with which images happen to be
  hard for which judge; a two-way analysis of variance over (unit, seed) separates the two (the
  unit: an image for exact play, a sweep chunk of 64 images for the best-capability cells, whose
  capability curves the sweep keeps as chunk sums), giving the seed's own standard deviation;
- the seeds' mean is carried to the full test set by seed 0's difference between its full-set
  value (the study's record, RECORD/metrics.json) and its value on the shared images;
- a new seed's full-set value then falls, with about 95 % probability, within the centre plus or
  minus t(0.975, J - 1) times the square root of sd_seed^2 (1 + 1/J) + sd_image^2 (1 - (1 - 2f)/J),
  J seeds, sd_image one seed's image noise on the shared images, f the shared images' fraction
  of the full set: the new seed's own image noise, the seeds' mean's and the carry's, which
  share images with each other (t for the whole is conservative: the image part is estimated
  from thousands of degrees of freedom).

Prints a CSV row per cell; the published value inside that interval is what seed-to-seed
variation alone can give.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from measured import report_row
from scipy import stats

from debatelab.experiments.sweep import SweepPlan
from debatelab.experiments.sweep_report import BEST_CURVES, BEST_KEYS, protocol_arrays
from debatelab.reference import BEST_CAPABILITY, BEST_COLUMNS, published_setup

#: Exact-play cells: the setup table's column and the sweep's per-image array.
EXACT = {"cons": "consultancy/exact_claim_correct", "D2t": "debate2/exact_claim_correct",
         "D4t": "debate4/exact_claim_correct", "J2t": "debate2/exact_judge_accuracy",
         "J4t": "debate4/exact_judge_accuracy"}  # fmt: skip
#: Cells read at zero capability (the consultant picking among all masks): the judge on a random
#: mask (sparse) and the argmax of its mean over all masks (ensemble).
ZERO = {"sparse": "consultancy_confidence_judge", "ensemble": "consultancy_confidence_selection"}
HEADER = ("variant,cell,images,seeds,seeds_mean,seeds_sd,sd_seed,sd_image,seed0_full,centre,"
          "low,high,published,inside")  # fmt: skip


def variance_components(values: np.ndarray, sizes: np.ndarray) -> tuple[float, float]:
    """Seed and image standard deviations of one seed's accuracy on the shared images.

    ``values[u, j]``: the mean of seed j's outcome over unit u (an image, or a chunk of
    ``sizes[u]`` images); a seed's accuracy is their size-weighted mean. The interaction of unit
    and seed (what one judge gets right that another does not, on the same image) has, per image,
    the variance estimated from the residuals of the two-way fit; it adds
    ``var_interaction / n_images`` to a seed's accuracy, and the rest of the seeds' variance is
    the seed's own (method of moments, clipped at zero).
    """
    n_units, n_seeds = values.shape
    if n_seeds < 2 or n_units < 2:
        raise ValueError(f"need at least 2 seeds and 2 units, got {n_seeds} and {n_units}")
    w = sizes / sizes.sum()
    seed_means = w @ values
    unit_means = values.mean(axis=1, keepdims=True)
    residual = values - unit_means - seed_means + seed_means.mean()
    var_interaction = float((sizes[:, None] * residual**2).sum() / ((n_units - 1) * (n_seeds - 1)))
    var_image = var_interaction / sizes.sum()
    var_seed = max(0.0, float(seed_means.var(ddof=1)) - var_image)
    return var_seed**0.5, var_image**0.5


def prediction_sd(sd_seed: float, sd_image: float, n_seeds: int, shared_fraction: float) -> float:
    """Standard deviation of a new seed's full-set value about the carried centre (the module's
    docstring): seed parts independent; image parts of the shared images, which the full set
    contains, correlated."""
    image = 1 - (1 - 2 * shared_fraction) / n_seeds
    return float(np.sqrt(sd_seed**2 * (1 + 1 / n_seeds) + sd_image**2 * image))


def seed_interval(values: np.ndarray, sizes: np.ndarray, seed0_full: float,
                  n_full: int) -> dict[str, float]:  # fmt: skip
    """The seeds' mean and sd on the shared units, the two components, the centre carried to the
    full set of ``n_full`` images and the interval holding about 95 % of new seeds' full-set
    values (fractions or percent, as given; see the module's docstring)."""
    n_seeds = values.shape[1]
    if not sizes.sum() <= n_full:
        raise ValueError(f"{sizes.sum():.0f} shared images cannot be a part of {n_full}")
    per_seed = (sizes / sizes.sum()) @ values
    sd_seed, sd_image = variance_components(values, sizes)
    centre = per_seed.mean() + seed0_full - per_seed[0]
    half = stats.t.ppf(0.975, n_seeds - 1) * prediction_sd(
        sd_seed, sd_image, n_seeds, sizes.sum() / n_full
    )
    return {
        "seeds_mean": per_seed.mean(),
        "seeds_sd": per_seed.std(ddof=1),
        "sd_seed": sd_seed,
        "sd_image": sd_image,
        "centre": centre,
        "low": centre - half,
        "high": centre + half,
    }


def load_sweep(folder: Path) -> tuple[list[dict[str, np.ndarray]], SweepPlan]:
    """A finished sweep's chunks in image order and the plan that solved them."""
    config = json.loads((folder / "config.json").read_text())
    keyed = sorted(p for p in (folder / "chunks").iterdir() if p.is_dir())
    if len(keyed) != 1:  # a folder reused with other settings keeps their chunks beside
        raise SystemExit(f"{folder}: {len(keyed)} chunk folders; use a fresh --runs folder")
    chunks = [dict(np.load(p)) for p in sorted(keyed[0].glob("chunk_*.npz"))]
    return chunks, SweepPlan.build(config["grid"] ** 2, config["reveal"])


def cell_units(chunks: list[dict[str, np.ndarray]], plan: SweepPlan) -> dict[str, tuple]:
    """Per cell: (unit values, unit sizes) of one seed: images for exact play, chunks for the
    best-capability cells (each at this seed's best capability over all its images)."""
    out = {cell: (np.concatenate([c[key] for c in chunks]).astype(np.float64),
                  np.ones(sum(int(c["n_images"]) for c in chunks)))
           for cell, key in EXACT.items()}  # fmt: skip
    arrays = [protocol_arrays(c, plan) for c in chunks]
    sizes = np.array([int(c["n_images"]) for c in chunks], np.float64)
    for cell, name in ZERO.items():
        out[cell] = (np.array([a[name][-1] for a in arrays]) / sizes, sizes)
    for column, key in zip(BEST_COLUMNS, BEST_KEYS, strict=True):
        proto, metric = key.rsplit("_", 1)
        sums = np.stack([a[f"{BEST_CURVES[proto]}_{metric}"] for a in arrays])  # (chunks, caps)
        best = int(sums.sum(axis=0).argmax())
        out[column] = (sums[:, best] / sizes, sizes)
    return out


def published_cells(variant: str) -> dict[str, float]:
    setup = published_setup(variant)
    best = dict(zip(BEST_COLUMNS, BEST_CAPABILITY[variant], strict=True))
    return {**{c: setup[c] for c in (*ZERO, *EXACT)}, **best}


def full_cells(record: Path) -> tuple[dict[str, float], int]:
    """Seed 0's full-test-set cells from the study's record (percent), and its test images."""
    from debatelab.report.tables import SETUP_KEYS

    config = json.loads((record / "config.json").read_text())
    if (config["seed"], config["batch_size"], config["epochs"]) != (0, 128, 10):
        raise SystemExit(f"{record}: judges of seed {config['seed']}, batch {config['batch_size']}, "
                         f"{config['epochs']} epochs; the sweeps are seeds of the default recipe")  # fmt: skip
    metrics = json.loads((record / "metrics.json").read_text())
    out = {c: 100 * metrics[SETUP_KEYS[c]] for c in (*ZERO, *EXACT)}
    out.update(
        {
            c: 100 * metrics[f"best_{k}_accuracy"]
            for c, k in zip(BEST_COLUMNS, BEST_KEYS, strict=True)
        }
    )
    return out, metrics["n_images"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variant")
    parser.add_argument("--seeds", type=int, default=5, help="judge seeds 0..SEEDS-1 (at least 2)")
    parser.add_argument("--images", default="0:10000:10", help="the shared test images")
    parser.add_argument("--runs", type=Path, default=Path("runs/seed-sweeps"))
    parser.add_argument("--full", type=Path, help="the study's record of seed 0 on the full test "
                        "set (default: docs/records/study-VARIANT)")  # fmt: skip
    parser.add_argument("--append", type=Path, help="add the rows to this CSV")
    args = parser.parse_args()
    record = args.full or Path(__file__).parent / "records" / f"study-{args.variant}"
    if args.seeds < 2:
        parser.error(f"--seeds {args.seeds}: the spread needs at least 2 seeds")
    if not (record / "metrics.json").is_file():
        parser.error(f"{record}: no metrics.json; record the study of {args.variant} first")
    folders = [args.runs / f"{args.variant}-b128-s{seed}" for seed in range(args.seeds)]
    for seed, folder in enumerate(folders):
        subprocess.run([sys.executable, "-m", "debatelab", "sweep", "--dataset", args.variant,
                        "--seed", str(seed), "--batch-size", "128", "--images", args.images,
                        "--quiet", "--out", str(folder)], check=True)  # fmt: skip
    units = [cell_units(*load_sweep(f)) for f in folders]
    (full, n_full), published = full_cells(record), published_cells(args.variant)
    rows = []
    for cell in published:
        if any(not np.array_equal(u[cell][1], units[0][cell][1]) for u in units):
            raise SystemExit(f"the sweeps in {args.runs} split their images differently")
        values = 100 * np.stack([u[cell][0] for u in units], axis=1)
        got = seed_interval(values, units[0][cell][1], full[cell], n_full)
        inside = "yes" if got["low"] <= published[cell] <= got["high"] else "no"
        numbers = [got["seeds_mean"], got["seeds_sd"], got["sd_seed"], got["sd_image"], full[cell],
                   got["centre"], got["low"], got["high"], published[cell]]  # fmt: skip
        cells = [args.variant, cell, args.images, str(args.seeds), *(f"{v:.2f}" for v in numbers),
                 inside]  # fmt: skip
        rows.append(report_row(cells, args.append, None if rows else HEADER))


if __name__ == "__main__":
    main()
