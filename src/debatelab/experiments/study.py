"""The frozen-judge study of REFERENCE B on every dataset variant (``debatelab study``).

For each variant (MNIST, FashionMNIST and CIFAR-10, raw and per-class whitened): the gold
classifier and the sparse judge (cached), the all-mask store of the test images, the reference
columns, exact play, and the whole quantiliser sweep (curves, heat maps, diagonals,
best-capability row, example plays), each in its own sweep run folder inside the study folder.
Then a combined report: both published tables with this study's row under each published row,
the consultancy drop (zero capability to exact play) and debate's distance to the ensemble per
variant beside the published ranges, the wall time of each variant, and one figure of
capability curves with a panel per variant. Resumable per variant and, inside one, per chunk.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace

import numpy as np

from ..data.variants import BUILTIN_VARIANTS, get_variant, variant_names
from ..options import IMAGES, TEST_IMAGES, parse_images
from ..reference import BEST_COLUMNS, SETUP_COLUMNS
from ..report.plots import curve_panels
from ..report.runs import RunFolder
from ..report.tables import SETUP_KEYS, paired_table
from ..store import image_slice
from .setup import exact_metrics, judges_and_store
from .sweep import SweepPlan, exact_play_metrics
from .sweep_report import (
    SweepConfig,
    best_values,
    curves_only,
    protocol_curves,
    sweep_store,
)

#: REFERENCE B: "consultancy's selection accuracy falls by 3.1 to 22.8 points from k = all to
#: k = 1 across the six variants; debate stays within -4.0..+1.8 of the ensemble".
PUBLISHED_RANGES = {"consultancy_drop": (3.1, 22.8), "debate_minus_ensemble": (-4.0, 1.8)}


@dataclass
class StudyConfig(SweepConfig):
    """Settings of the study: the sweep's settings, applied to every variant."""

    variants: tuple[str, ...] = BUILTIN_VARIANTS
    """Dataset variants, comma-separated (default: the six of REFERENCE B; plug-ins add
    more)."""
    variant: str = field(default="mnist", metadata={"cli": False})
    images: str = field(default="all", metadata=IMAGES)
    """Test images of the setup table and exact play: 'all', 'N', 'start:stop' or
    'start:stop:step'."""
    curves_images: str = "images"
    """Test images of the best-capability row: consultancy's curves and the debates' diagonals,
    about 0.25 CPU-s per image on this project's 2-core machine (about 22 minutes per grey
    variant on the full test set with --workers 2); 'images' (the default) takes those of
    --images, or a range as --images.
    The same range as --sweep-images reads the row from the sweep at no extra cost."""
    sweep_images: str = field(default="all", metadata=IMAGES)
    """Test images of the whole quantiliser sweep (heat maps, the curve figures, example
    plays), as --images; it costs about 0.3 CPU-s per image (some 25 minutes per variant on
    the full test set with --workers 2)."""

    def __post_init__(self):
        super().__post_init__()
        self.variants = tuple(self.variants)
        known = variant_names()  # plug-ins included
        unknown = [v for v in self.variants if v not in known]
        if unknown or not self.variants:
            raise ValueError(
                f"unknown dataset variant(s) {unknown}; choose among {', '.join(known)}"
            )

    def check(self):
        if self.curves_images != "images":
            try:
                parse_images(self.curves_images, TEST_IMAGES)
            except ValueError as exc:
                raise ValueError(f"--curves-images: {exc}, or 'images'") from None


@dataclass
class VariantSettings(SweepConfig):
    """What one variant's run folder inside a study records and compares on resume: the sweep's
    settings and the study's two image ranges (workers and cluster may change on resume)."""

    sweep_images: str = "all"
    """As :attr:`StudyConfig.sweep_images`."""
    curves_images: str = "images"
    """As :attr:`StudyConfig.curves_images`."""


def variant_settings(config: StudyConfig, variant: str) -> VariantSettings:
    """The settings one variant's run folder records and compares on resume."""
    kept = asdict(variant_config(config, variant))
    return VariantSettings(**kept, sweep_images=config.sweep_images,
                           curves_images=config.curves_images)  # fmt: skip


def curves_images_of(config: StudyConfig) -> str:
    """The images of the best-capability row, with the default 'images' resolved."""
    return config.images if config.curves_images == "images" else config.curves_images


def variant_config(config: StudyConfig, variant: str) -> SweepConfig:
    """The sweep settings of one variant of the study (its images: --images)."""
    kept = {f: getattr(config, f) for f in SweepConfig.__dataclass_fields__}
    return SweepConfig(**{**kept, "variant": variant})


#: Metrics the study keeps from the curves: exact play, best and zero capability.
CURVE_KEYS = ("consultancy_", "debate2_", "debate4_", "best_", "zero_capability_", "exact_")


class Stopwatch:
    """Seconds spent per named stage (summed over calls) of one run of a variant; a resumed run
    times only what it still had to do."""

    def __init__(self):
        self.times: dict[str, float] = {}

    def __call__(self, stage: str, func, *args):
        start = time.perf_counter()
        result = func(*args)
        self.times[stage] = round(self.times.get(stage, 0.0) + time.perf_counter() - start, 1)
        return result


def run_variant(config: SweepConfig, sweep_images: str, curves_images: str,
                folder: RunFolder) -> dict:  # fmt: skip
    """One variant into ``folder``: judges, the reference columns and exact play on
    ``config.images``; the whole sweep (heat maps, figures, example plays) on ``sweep_images``;
    the best-capability curves (consultancy's curve, the debates' diagonals) on
    ``curves_images``, read from the sweep where the two ranges agree."""
    clock = Stopwatch()

    def stored(images: str):
        return clock("judges_and_store", judges_and_store, replace(config, images=images), folder)

    def labels_of(store) -> np.ndarray:
        return setup.data.y_test[image_slice(store.attrs)].numpy()

    setup, store = stored(config.images)
    metrics = clock("reference_columns", exact_metrics, setup, store)
    _, swept_store = stored(sweep_images)
    swept = clock("sweep", sweep_store, setup, swept_store, replace(config, images=sweep_images),
                  folder)  # fmt: skip
    if curves_images == sweep_images:
        curves = swept
    else:
        curves_store = store if curves_images == config.images else stored(curves_images)[1]
        curves = clock("curves", curves_only, curves_store, folder, labels_of(curves_store),
                       config.where(), folder.progress)  # fmt: skip
    metrics.update({k: v for k, v in curves.items() if k.startswith(CURVE_KEYS)})
    if curves_images != config.images:  # exact play on --images itself (0.06 CPU-s per image)
        exact = clock("exact_play", exact_play_metrics, store, labels_of(store), config.where())
        metrics.update(exact)
    metrics["sweep_n_images"] = swept["n_images"]
    metrics["curves_n_images"] = curves["n_images"]
    folder.extra["store"] = str(store.path)
    metrics["stage_times_s"] = clock.times
    metrics["wall_time_s"] = round(sum(clock.times.values()), 1)
    return metrics


def run(config: StudyConfig, folder: RunFolder) -> dict:
    """The experiment shape: every variant (a finished one is read back, not recomputed), then
    the combined report and figure; returns per-variant metrics under ``<variant>/<key>``."""
    folder.seeds["train"] = config.seed
    per_variant: dict[str, dict] = {}
    for variant in config.variants:
        cfg = variant_config(config, variant)
        settings = variant_settings(config, variant)
        with RunFolder(folder.path / variant, "study", settings, seeds={"train": cfg.seed},
                       data_dir=folder.data_dir, cache_dir=folder.cache_dir,
                       progress=folder.progress, echo=folder.echo) as sub:  # fmt: skip
            done = sub.file("metrics.json")
            if done.exists():
                before = json.loads(done.read_text())
                # older studies took the best capability from the sweep, or lack the
                # confidence-ranked consultant (its chunks are added to the finished ones)
                if {"curves_n_images", "best_consultancy_confidence_judge_accuracy"} <= set(before):
                    per_variant[variant] = before
                    folder.echo(f"{variant}: finished before, read back")
                    continue
                if "curves_n_images" in before:
                    folder.echo(f"{variant}: finished before by an older version; running what "
                                "it lacks (finished chunks are reused)")  # fmt: skip
            metrics = run_variant(cfg, config.sweep_images, curves_images_of(config), sub)
            sub.finish(metrics)
        per_variant[variant] = metrics
        folder.echo(f"{variant}: done in {metrics['wall_time_s'] / 60:.1f} min")
    write_study_report(folder, config, per_variant)
    return {f"{v}/{k}": val for v, m in per_variant.items() for k, val in m.items()
            if not isinstance(val, dict)}  # fmt: skip


def contrasts(metrics: dict) -> dict[str, float]:
    """Consultancy's drop from zero capability (the ensemble) to exact play, and each debate's
    exact-play selection accuracy minus the ensemble, in points."""
    ensemble = metrics["ensemble_accuracy"]
    return {
        "consultancy_drop": 100 * (ensemble - metrics["consultancy_selection_accuracy"]),
        "debate2_minus_ensemble": 100 * (metrics["debate2_selection_accuracy"] - ensemble),
        "debate4_minus_ensemble": 100 * (metrics["debate4_selection_accuracy"] - ensemble),
    }


def published_contrasts(variant: str) -> dict[str, float] | None:
    """The contrasts of a variant's published setup row; None for a variant without one."""
    row = get_variant(variant).published_setup
    if row is None:
        return None
    pub = dict(zip(SETUP_COLUMNS, row, strict=True))
    return {
        "consultancy_drop": pub["ensemble"] - pub["cons"],
        "debate2_minus_ensemble": pub["D2t"] - pub["ensemble"],
        "debate4_minus_ensemble": pub["D4t"] - pub["ensemble"],
    }


def write_study_report(folder: RunFolder, config: StudyConfig, per_variant: dict) -> None:
    """``report.md`` and ``curves_selection.png`` / ``curves_judge.png`` of the whole study."""
    plan = SweepPlan.build(config.grid * config.grid, config.reveal)
    order = list(variant_names())
    per_variant = {v: per_variant[v] for v in sorted(per_variant, key=order.index)}
    for metric in ("selection", "judge"):
        panels, refs = {}, {}
        for variant in per_variant:
            with np.load(folder.path / variant / "sweep_arrays.npz") as saved:
                arrays = {k: saved[k] for k in saved.files}
            panels[variant] = protocol_curves(arrays, plan, metric)
            if metric == "selection":  # the ensemble of the swept images (uniform play), not
                # the metrics' zero capability, which may be on other images (--curves-images)
                refs[variant] = {"ensemble": float(arrays["consultancy_selection"][-1])}
        # two per row: each dataset raw on the left, per-class whitened on the right
        curve_panels(panels, metric, folder.file(f"curves_{metric}.png"), refs, per_row=2)
    setup_rows, best_rows = [], []
    for variant, m in per_variant.items():
        declared = get_variant(variant)  # published rows: None for a variant without them
        setup_rows.append((variant, declared.published_setup,
                           [100 * m[SETUP_KEYS[c]] for c in SETUP_COLUMNS]))  # fmt: skip
        best_rows.append((variant, declared.published_best, best_values(m)))
    n_images = sorted({m["n_images"] for m in per_variant.values()})
    n_curves = sorted(
        {m.get("curves_n_images", m.get("sweep_n_images")) for m in per_variant.values()}
    )
    lines = [f"# debatelab study: {len(per_variant)} dataset variants\n",
             f"Judges seed {config.seed}; asym rule; the published numbers are full 10,000-image "
             "test sets (REFERENCE B). Our cells more than 1.5 points from the published ones are "
             "bold. Per-variant reports (standard errors, heat maps, example plays) are in the "
             "variants' folders.\n",
             f"## Setup table and exact play ({', '.join(f'{n:,}' for n in n_images)} test "
             f"images per variant: {config.images})\n",
             paired_table(list(SETUP_COLUMNS), setup_rows), "",
             f"## Best capability, debate read on the diagonal "
             f"({', '.join(f'{n:,}' for n in n_curves)} test images per variant)\n",
             paired_table(list(BEST_COLUMNS), best_rows), "",
             "Consultancy's cells: the consultant ranks the masks once by the judge's confidence "
             "(the post's reading); the variants' reports give the per-claim ranking's too.\n"]  # fmt: skip
    lo, hi = PUBLISHED_RANGES["consultancy_drop"]
    dlo, dhi = PUBLISHED_RANGES["debate_minus_ensemble"]
    lines += ["## Consultancy's drop and debate's distance to the ensemble (points)\n",
              f"Published ranges across the six variants: consultancy drop {lo} to {hi}; debate "
              f"minus ensemble {dlo} to +{dhi}.\n",
              "| variant | cons drop | (published) | D2t - ensemble | (published) | "
              "D4t - ensemble | (published) | wall time |",
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for variant, m in per_variant.items():
        ours, pub = contrasts(m), published_contrasts(variant)
        cells = []
        for key in ("consultancy_drop", "debate2_minus_ensemble", "debate4_minus_ensemble"):
            cells += [f"{ours[key]:+.2f}", "-" if pub is None else f"{pub[key]:+.2f}"]
        lines.append(f"| {variant} | " + " | ".join(cells) +
                     f" | {m.get('wall_time_s', float('nan')) / 60:.1f} min |")  # fmt: skip
    lines += ["", "![selection accuracy](curves_selection.png)",
              "![judge accuracy](curves_judge.png)", ""]  # fmt: skip
    folder.file("report.md").write_text("\n".join(lines))
    folder.echo("\n".join(lines[:-3]))
