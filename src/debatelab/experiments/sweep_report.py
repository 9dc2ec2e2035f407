"""The frozen-judge sweep of REFERENCE B (``debatelab sweep``): consultancy and debate against
the frozen sparse judge at every capability.

Solves consultancy (k in 1..58,905), 2-turn and 4-turn debate ((k_A, k_B) grids and diagonals)
exactly on every chosen test image, from the cached all-mask probabilities (computed first if
missing), and writes arrays, capability curves, heat maps, an example-plays figure, the
best-capability table and a markdown report to the run folder. An interrupted sweep resumes
when run again with the same --out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..games.lines import principal_line
from ..options import IMAGES
from ..reference import BEST_CAPABILITY, BEST_COLUMNS
from ..report.interactive import PLAYS_FILE, play_record, write_plays
from ..report.plots import capability_curves, example_plays, heat_map
from ..report.runs import RunFolder
from ..report.tables import paired_table, setup_table
from ..resume import KeyedPieces
from ..store import image_slice
from .setup import ImagesConfig, WorkersConfig, judges_and_store
from .sweep import SweepPlan, exact_columns, run_sweep


@dataclass
class SweepConfig(ImagesConfig, WorkersConfig):
    """Settings of the frozen-judge sweep."""

    images: str = field(default="0:1000", metadata=IMAGES)

    def __post_init__(self):
        super().__post_init__()
        SweepPlan.build(self.grid * self.grid, self.reveal)  # 1, 2 and 4 turns need reveal % 4 == 0


def run(config: SweepConfig, folder: RunFolder) -> dict:
    """The experiment shape: the whole sweep into ``folder``; returns the metrics."""
    setup, store = judges_and_store(config, folder)
    metrics = sweep_store(setup, store, config, folder)
    shown = {k: round(100 * v, 2) for k, v in metrics.items()
             if k.endswith("_accuracy") and not k.startswith("zero")}  # fmt: skip
    folder.echo(json.dumps(shown, indent=2))
    return metrics


#: The best-capability row. Consultancy's cells are the confidence-ranked consultant's (the
#: post's reading, docs/results-frozen-judges.md, "Consultancy's best judge accuracy"); ``best_consultancy_*`` keeps the
#: per-claim ranking's.
BEST_KEYS = ("consultancy_confidence_selection", "debate2_selection", "debate4_selection",
             "consultancy_confidence_judge", "debate2_judge", "debate4_judge")  # fmt: skip
#: Consultancy's curves: each claim ranking masks by its own probability, and one ranking by the
#: judge's confidence.
CONSULTANCIES = ("consultancy", "consultancy_confidence")
#: Each protocol's curve that its best capability is read from (the prefix of its arrays in
#: :func:`protocol_arrays`): consultancy's own curve, the debates' diagonal.
BEST_CURVES = {**{name: name for name in CONSULTANCIES}, "debate2": "debate2_diag",
               "debate4": "debate4_diag"}  # fmt: skip


def protocol_arrays(res: dict[str, np.ndarray], plan: SweepPlan) -> dict[str, np.ndarray]:
    """Curves, grids and diagonals as named arrays (fractions), ready for ``np.savez``."""
    out: dict[str, np.ndarray] = {}
    for proto in plan.protocols:
        caps = proto.capabilities()
        index = {c: i for i, c in enumerate(caps)}
        name = proto.name
        if not proto.is_debate:
            out[f"{name}_k"] = proto.ks_a
            for m in ("selection", "judge", "win"):
                out[f"{name}_{m}"] = res[f"{name}/{m}"][[index[(int(k), 1)] for k in proto.ks_a]]
            continue
        out[f"{name}_diag_k"] = proto.diagonal
        diag = [index[(int(k), int(k))] for k in proto.diagonal]
        for m in ("selection", "judge", "win"):
            out[f"{name}_diag_{m}"] = res[f"{name}/{m}"][diag]
        if len(proto.ks_a) == 0:  # a curves-only plan: no heat-map grid
            continue
        out[f"{name}_grid_ka"], out[f"{name}_grid_kb"] = proto.ks_a, proto.ks_b
        grid = np.array([[index[(int(a), int(b))] for b in proto.ks_b] for a in proto.ks_a])
        for m in ("selection", "judge", "win"):
            out[f"{name}_grid_{m}"] = res[f"{name}/{m}"][grid]
    return out


def summary_metrics(res: dict[str, np.ndarray], arrays: dict[str, np.ndarray]) -> dict:
    """Exact-play columns, best capability (debate on the diagonal) and zero-capability ends."""
    metrics: dict = {"n_images": int(res["n_images"])}
    metrics.update(exact_columns(res))
    for proto, prefix in BEST_CURVES.items():
        for m in ("selection", "judge"):
            curve = arrays[f"{prefix}_{m}"]
            metrics[f"best_{proto}_{m}_accuracy"] = float(curve.max())
            metrics[f"best_{proto}_{m}_k"] = int(arrays[f"{prefix}_k"][int(curve.argmax())])
            metrics[f"zero_capability_{proto}_{m}_accuracy"] = float(curve[-1])
        metrics[f"exact_{proto}_win_rate"] = float(arrays[f"{prefix}_win"][0])
    return metrics


def best_values(metrics: dict) -> list[float]:
    """The best-capability row (percent) in the order of :data:`BEST_COLUMNS`."""
    return [100 * metrics[f"best_{k}_accuracy"] for k in BEST_KEYS]


def best_capability_table(variant: str, metrics: dict) -> str:
    """Markdown: this run's best-capability row under the published one."""
    rows = [(variant, BEST_CAPABILITY.get(variant), best_values(metrics))]
    return paired_table(list(BEST_COLUMNS), rows, label="this run")


def make_figures(run: RunFolder, arrays: dict[str, np.ndarray], plan: SweepPlan,
                 references: dict[str, float]) -> list[Path]:  # fmt: skip
    """Capability curves (3 metrics) and heat maps (2 debates x 3 metrics)."""
    figures = []
    for m in ("selection", "judge", "win"):
        curves = protocol_curves(arrays, plan, m)
        refs = references if m == "selection" else {}
        figures.append(capability_curves(curves, m, run.file(f"curve_{m}.png"), refs))
        for name in ("debate2", "debate4"):
            figures.append(heat_map(
                arrays[f"{name}_grid_{m}"], arrays[f"{name}_grid_ka"], arrays[f"{name}_grid_kb"],
                run.file(f"heatmap_{name}_{m}.png"), f"{name}: {m} (%)",
            ))  # fmt: skip
    return figures


def protocol_curves(arrays: dict[str, np.ndarray], plan: SweepPlan, metric: str) -> dict:
    """Consultancy's curves (both rankings; older sweeps have one) and the debates' diagonals
    of one metric, as
    :func:`debatelab.report.plots.capability_curves` draws them."""
    n_first = {p.name: _first_options(p, plan) for p in plan.protocols}
    curves = {name: (arrays[f"{name}_k"], arrays[f"{name}_{metric}"], n_first[name])
              for name in CONSULTANCIES if f"{name}_k" in arrays}  # fmt: skip
    for name in ("debate2", "debate4"):
        curves[name] = (arrays[f"{name}_diag_k"], arrays[f"{name}_diag_{metric}"], n_first[name])
    return curves


def _first_options(proto, plan: SweepPlan) -> int:
    from math import comb

    return comb(plan.n_cells, proto.moves[0])


def example_records(probs, labels: np.ndarray, claims: np.ndarray, n_cells: int,
                    moves=(1, 1, 1, 1), per_row: int = 6) -> list[dict]:  # fmt: skip
    """Exact-play lines of up to ``per_row`` correct and ``per_row`` wrong claims.

    ``probs`` is indexable by image (an array or the store's zarr array); only the chosen
    images are read.
    """
    from ..geometry import rank_masks

    right = np.flatnonzero(claims == labels)[:per_row]
    wrong = np.flatnonzero(claims != labels)[:per_row]
    records = []
    for i in np.concatenate([right, wrong]):
        image_probs = np.asarray(probs[int(i)], dtype=np.float64)
        line = principal_line(image_probs, n_cells, moves, int(claims[i]))
        mask = np.sort(np.concatenate([np.array(c) for c in line]))
        p = image_probs[rank_masks(mask[None], n_cells)[0]]
        top = [(int(c), float(p[c])) for c in np.argsort(-p)[:3]]
        records.append({"index": int(i), "line": line, "label": int(labels[i]),
                        "claim": int(claims[i]), "top": top})  # fmt: skip
    return records


def consultancy_note(metrics: dict) -> str:
    """What the best-capability row's consultancy cells are, and the per-claim ranking's."""
    sel = 100 * metrics["best_consultancy_selection_accuracy"]
    judge = 100 * metrics["best_consultancy_judge_accuracy"]
    return ("Consultancy's cells: the consultant ranks the masks once by the judge's confidence "
            "(the post's reading). Ranking them separately for each claim by its probability, it "
            f"reaches {sel:.2f} % selection and {judge:.2f} % judge accuracy at best.")  # fmt: skip


def write_report(run: RunFolder, variant: str, metrics: dict, images: str, seed: int,
                 timings: dict[str, float], has_examples: bool) -> Path:  # fmt: skip
    """The run's markdown report with tables and figures."""
    setup_cols = ["cons", "D2t", "D4t", "J2t", "J4t"]
    figs = "\n".join(f"![{m}](curve_{m}.png)" for m in ("selection", "judge", "win"))
    heat = "\n".join(f"![{n} {m}](heatmap_{n}_{m}.png)" for n in ("debate2", "debate4")
                     for m in ("selection", "judge", "win"))  # fmt: skip
    text = f"""# debatelab sweep: {variant}

{metrics["n_images"]} test images (range {images}); judges seed {seed}; asym rule; frozen sparse
judge. Capabilities are top-k quantilisers counting options at a player's own move, clamped per
node; A's claim is the exact argmax over classes of the game value.

## Exact play (k = 1)

{setup_table(variant, metrics, setup_cols)}

## Best capability (debate on the diagonal k_A = k_B)

{best_capability_table(variant, metrics)}

{consultancy_note(metrics)}

Zero capability (uniform play, the ensemble): consultancy selection
{100 * metrics["zero_capability_consultancy_selection_accuracy"]:.2f} %, 2-turn
{100 * metrics["zero_capability_debate2_selection_accuracy"]:.2f} %, 4-turn
{100 * metrics["zero_capability_debate4_selection_accuracy"]:.2f} %.

## Capability curves

Quantile probability k / n on the x-axis, zero capability on the left, exact play on the right.

{figs}

## Heat maps (strongest A on top, strongest B on the right)

{heat}
"""
    if has_examples:
        text += "\n## Example plays (4-turn exact minimax)\n\n![examples](example_plays.png)\n"
    text += "\n## Timings\n\n" + "\n".join(f"- {k}: {v:.1f} s" for k, v in timings.items())
    path = run.file("report.md")
    path.write_text(text + "\n")
    return path


def save_examples(run: RunFolder, images: np.ndarray, records: list[dict], grid: int) -> Path:
    """The example plays as a figure and as data the viewer replays move by move."""
    title = "4-turn exact play: A red (turns 1, 3), B blue (turns 2, 4)"
    plays = [play_record(images[r["index"]], [("AB"[t % 2], list(cells))
                                              for t, cells in enumerate(r["line"])],
                         r["label"], r["claim"], f"test image {r['index']}: true {r['label']}, "
                         f"A claims {r['claim']}; judge's top: " + ", ".join(
                             f"{c} {100 * p:.1f} %" for c, p in r["top"]), r["index"])
             for r in records]  # fmt: skip
    write_plays(run.file(PLAYS_FILE), grid, title, plays)
    return example_plays(images, records, grid, run.file("example_plays.png"), title)


def sweep_store(setup, store, config: SweepConfig, folder: RunFolder) -> dict:
    """:func:`frozen_judge_sweep` on the images of ``store`` (labels and example images taken
    from ``setup``'s test set)."""
    sl = image_slice(store.attrs)
    return frozen_judge_sweep(
        folder, store, setup.data.y_test[sl].numpy(), config.variant, config.images, config.seed,
        test_images=setup.data.x_test[sl][:256].numpy(), where=config.where(),
        progress=folder.progress,
    )  # fmt: skip


def keyed_sweep(run: RunFolder, name: str, store, labels: np.ndarray, plan: SweepPlan,
                where=1, progress: bool = True, n_images: int | None = None) -> dict:  # fmt: skip
    """:func:`.sweep.run_sweep` with its finished chunks kept in ``run``'s folder ``name``.

    Chunks are keyed by everything that decides them, the store (judge, images) and the plan,
    so a rerun under other settings never mixes old chunks into new results."""
    settings = {"store": {k: v for k, v in store.attrs.items() if k != "note"},
                "plan": [plan.n_cells, plan.reveal, plan.grid_points, plan.diagonal_points,
                         plan.consultancy_points],
                "n_images": n_images}  # fmt: skip
    chunks = KeyedPieces(run.file(name), settings).folder
    return run_sweep(store, labels, plan, chunk_dir=chunks, where=where,
                     progress=progress, n_images=n_images)  # fmt: skip


def curves_only(store, run: RunFolder, labels: np.ndarray, where=1,
                progress: bool = True) -> dict:  # fmt: skip
    """Exact play, consultancy's curve and both debates' diagonals on every image of ``store``
    (no heat-map grid: about two thirds of the whole sweep's cost, most of it the diagonals),
    resumable in ``run``'s ``curve_chunks``; returns :func:`summary_metrics` (exact play, best capability, zero
    capability) with standard errors of the exact-play columns."""
    plan = SweepPlan.build(store.attrs.get("grid", 6) ** 2, store.attrs.get("reveal", 4),
                           grid_points=0)  # fmt: skip
    res = keyed_sweep(run, "curve_chunks", store, labels, plan, where, progress)
    return summary_metrics(res, protocol_arrays(res, plan))


def frozen_judge_sweep(
    run: RunFolder,
    store,
    labels: np.ndarray,
    variant: str,
    images: str = "all",
    seed: int = 0,
    test_images: np.ndarray | None = None,
    references: dict[str, float] | None = None,
    plan: SweepPlan | None = None,
    where=1,
    progress: bool = True,
    n_images: int | None = None,
) -> dict:
    """Run the whole sweep on a store (or its first ``n_images``) and fill ``run``: ``sweep_arrays.npz``,
    ``exact_play.npz``, figures, ``report.md``; returns the metrics (not yet written)."""
    import time

    timings = {}
    start = time.perf_counter()
    plan = plan or SweepPlan.build(store.attrs.get("grid", 6) ** 2, store.attrs.get("reveal", 4))
    res = keyed_sweep(run, "chunks", store, labels, plan, where, progress, n_images)
    timings["solve"] = time.perf_counter() - start
    arrays = protocol_arrays(res, plan)
    np.savez(run.file("sweep_arrays.npz"), **arrays)
    exact = {k.replace("/", "_"): v for k, v in res.items() if "/exact_" in k}
    np.savez(run.file("exact_play.npz"), labels=np.asarray(labels), **exact)
    metrics = summary_metrics(res, arrays)
    start = time.perf_counter()
    refs = {"ensemble": metrics["zero_capability_consultancy_selection_accuracy"]}
    refs.update(references or {})
    make_figures(run, arrays, plan, refs)
    has_examples = test_images is not None
    if has_examples:
        n_ex = min(len(labels), len(test_images))
        records = example_records(store.probs, np.asarray(labels)[:n_ex],
                                  res["debate4/exact_claim"][:n_ex], plan.n_cells)  # fmt: skip
        save_examples(run, test_images, records, int(round(plan.n_cells**0.5)))
    timings["figures"] = time.perf_counter() - start
    metrics["timings_s"] = timings
    write_report(run, variant, metrics, images, seed, timings, has_examples)
    return metrics
