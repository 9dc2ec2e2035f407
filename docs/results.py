"""The results tables of README and the docs, rendered from recorded runs kept in the
repository, so that a page cannot drift from the runs it reports.

    python docs/results.py            # rewrite every table in place
    python docs/results.py --check    # exit 1 naming each table that differs from its rendering
    python docs/results.py --record RUN_FOLDER NAME   # keep a run's record as docs/records/NAME

A table sits in a page between ``<!-- results: NAME -->`` and ``<!-- /results -->``; NAME is a
key of :data:`TABLES`. Its numbers come from ``docs/records/<run>/metrics.json`` (a run's
``config.json``, ``manifest.json`` and ``metrics.json``, copied by ``--record``: the manifest
holds the command line, commit and wall time) or from the rows a run or a measuring script wrote
as CSV under ``docs/`` (``docs/measurements/*.csv``, ``docs/pixel_rollouts.csv``); each table
links the records or rows it comes from. A table of a results page that is typed instead (a
fact sheet, a benchmark's timings, a superseded run, a run not yet recorded) says so just
before it (:data:`HAND_WRITTEN`), so that every other table is known to be rendered.
tests/test_docs.py checks both.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
REPO = DOCS.parent
sys.path.insert(0, str(REPO / "src"))  # this checkout's package, installed or not
RUNS = DOCS / "records"
RECORD_FILES = ("config.json", "manifest.json", "metrics.json")
#: What a record also keeps when the run wrote it: the per-judge results of eval-published, a
#: trained judge's or debater's per-epoch history, the published curves beside it, and an
#: argument-channel arm's diagnostics.
RECORD_EXTRAS = ("judges.json", "history.json", "published_curves.json", "diagnostics.json")
MARK = re.compile(r"(<!-- results: (\S+) -->\n)(.*?)(<!-- /results -->)", re.S)
PAGES = [REPO / "README.md", *sorted(DOCS.glob("*.md")), *sorted(DOCS.glob("measurements/*.md"))]
#: The pages of measured numbers: every table in them is rendered, or says why not.
RESULT_PAGES = [REPO / "README.md", *sorted(DOCS.glob("results-*.md")),
                *sorted(DOCS.glob("measurements/*.md"))]  # fmt: skip
#: Why a table in a results page is typed rather than rendered: ``<!-- hand-written: KIND: what
#: would render it, or why nothing will -->`` on the last non-blank line before it.
HAND_WRITTEN = re.compile(
    r"<!-- hand-written: (facts|guide|benchmark|historical|pending): \S[^>]*-->"
)


def metrics(run: str) -> dict:
    return json.loads((RUNS / run / "metrics.json").read_text())


def _csv_rows(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(line for line in fh if not line.startswith("#")))


def _link(target: Path, page: Path, text: str) -> str:
    return f"[{text}]({os.path.relpath(target, page.parent).replace(os.sep, '/')})"


def _pct(value: float) -> str:
    return f"{100 * float(value):.2f}"


def headline(page: Path) -> str:
    """The main results, one row per measure: ours, the published number, the record."""
    from debatelab.experiments.pixels import PUBLISHED as PIXELS_PUBLISHED
    from debatelab.reference import published_setup

    rows = []
    run = metrics("run-mnist")
    pub = published_setup("mnist")
    record = _link(RUNS / "run-mnist" / "metrics.json", page, "run-mnist")
    images = f"{run['n_images']:,}" if "n_images" in run else "5,000"
    for column, key, what in (
        ("sparse", "sparse_accuracy", "sparse judge, random 4-cell masks"),
        ("ensemble", "ensemble_accuracy", "sparse judge, all masks averaged"),
        ("cons", "consultancy_selection_accuracy", "consultancy, exact play"),
        ("D2t", "debate2_selection_accuracy", "2-turn debate, exact play"),
        ("D4t", "debate4_selection_accuracy", "4-turn debate, exact play"),
    ):
        rows.append(f"| MNIST reveal game ({images} test images) | {what} (`{column}`) | "
                    f"{_pct(run[key])} ± {_pct(run[key + '_se'])} | {pub[column]:.2f} | "
                    f"{record} |")  # fmt: skip
    pixels = DOCS / "pixel_rollouts.csv"
    for row in _csv_rows(pixels):
        if (row["pixels"], row["first"], row["agent"], row["rollouts"],
                row["judge"]) == ("6", "liar", "mcts", "100", "nonzero"):  # fmt: skip
            rows.append(f"| 2018 pixel debate, K = 6, MCTS 100 rollouts (liar first, small CNN judge, "
                        f"{row['n_images']} images) | honest win rate | "
                        f"{_pct(row['honest_win_rate_precommit'])} | "
                        f"{PIXELS_PUBLISHED[6]['debate']:.1f} | "
                        f"{_link(pixels, page, 'pixel_rollouts.csv')} |")  # fmt: skip
    for name, label in (
        ("pools-products-smollm2", "LLM pools: one-digit products, SmolLM2"),
        ("pools-humaneval-qwen", "LLM pools: HumanEval, Qwen2.5-Coder-0.5B"),
    ):
        table = DOCS / "measurements" / f"{name}-table.csv"
        by_n = {r["n"]: r for r in _csv_rows(table) if (r["arm"], r["protocol"]) == ("main",
                                                                                       "proposal")}  # fmt: skip
        top = max(by_n, key=lambda n: int(n[2:]))
        rows.append(f"| {label} | proposer accuracy, Bo1 -> {top} (proposal only) | "
                    f"{_pct(by_n['Bo1']['accuracy'])} -> {_pct(by_n[top]['accuracy'])} | "
                    f"- | {_link(table, page, name + '-table.csv')} |")  # fmt: skip
    head = "| experiment | measure | ours | published | record |\n|---|---|---|---|---|\n"
    return head + "\n".join(rows) + "\n"


def _pct1(value: float) -> str:
    return f"{100 * float(value):.1f}"


def _interval(row: dict, key: str) -> str:
    return f"{_pct1(row[key])} [{_pct1(row[key + '_low'])}, {_pct1(row[key + '_high'])}]"


def pools_grid(page: Path, name: str) -> str:
    """A pools study's accuracy and win rate at Bo1 and the largest n, for every arm,
    protocol, critic m and rebuttal r (from the ``table.csv`` its ``bon`` run wrote)."""
    rows = _csv_rows(DOCS / "measurements" / f"{name}-table.csv")
    top = max((r["n"] for r in rows), key=lambda n: int(n[2:]))
    series: dict[tuple, dict] = {}
    for r in rows:
        series.setdefault((r["arm"], r["protocol"], r["m"], r["r"]), {})[r["n"]] = r
    lines = [f"| arm, protocol | critic | rebuttal | accuracy Bo1 | accuracy {top} | win rate Bo1 "
             f"| win rate {top} |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for (arm, protocol, m, r), by_n in series.items():
        first, last = by_n["Bo1"], by_n[top]
        lines.append(f"| {arm}, {protocol} | {m or '-'} | {r or '-'} | "
                     f"{_interval(first, 'accuracy')} | {_interval(last, 'accuracy')} | "
                     f"{_pct1(first['win_rate'])} | {_pct1(last['win_rate'])} |")  # fmt: skip
    source = _link(DOCS / "measurements" / f"{name}-table.csv", page, f"{name}-table.csv")
    return "\n".join(lines) + f"\n\n(Rows: {source}.)\n"


def pools_contrasts(page: Path, name: str) -> str:
    """A pools study's paired accuracy contrasts with their intervals (``contrasts.csv``)."""
    path = DOCS / "measurements" / f"{name}-contrasts.csv"
    lines = ["| contrast | accuracy (points) | excludes 0 |", "|---|---|---|"]
    for r in _csv_rows(path):
        if r["metric"] == "accuracy":
            excludes = float(r["low"]) > 0 or float(r["high"]) < 0
            lines.append(f"| {r['contrast']} | {_pct1(r['estimate'])} [{_pct1(r['low'])}, "
                         f"{_pct1(r['high'])}] | {'yes' if excludes else 'no'} |")  # fmt: skip
    return "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}.)\n"


def d1_protocols(page: Path) -> str:
    """Judge / selection accuracy of D1 judges per protocol and rule (cpu preset), from the
    rows ``docs/measurements/d1-protocols-cpu.csv`` keeps with their commands."""
    rows = _csv_rows(DOCS / "measurements" / "d1-protocols-cpu.csv")
    protocols = ["consultancy", "consult_rebut", "debate2", "debate3", "debate4"]
    heads = {"consult_rebut": "consult_rebut (A3 B1)", "debate3": "debate3 (A1 B2 A1)"}
    cells = {(r["rule"], r["protocol"]): f"{float(r['judge_pct']):.1f} / "
             f"{float(r['selection_pct']):.1f}" for r in rows}  # fmt: skip
    lines = ["| rule | " + " | ".join(heads.get(p, p) for p in protocols) + " |",
             "|---" * (len(protocols) + 1) + "|"]  # fmt: skip
    for rule in dict.fromkeys(r["rule"] for r in rows):
        lines.append(f"| {rule} | " + " | ".join(cells.get((rule, p), "") for p in protocols)
                     + " |")  # fmt: skip
    return "\n".join(lines) + "\n"


def judges_sweep(page: Path, run: str) -> str:
    """A 13-judge sweep (``debatelab judges sweep``, recorded as ``docs/records/RUN``): judge /
    selection accuracy of each rule's debate and control judges with the published numbers
    beside them, consultancy's below, and the judges' training time."""
    from debatelab.judges.onpolicy import RULE_FILE_NAMES
    from debatelab.reference import TRAINED_JUDGES

    m, config = metrics(run), json.loads((RUNS / run / "config.json").read_text())
    published = TRAINED_JUDGES.get((config["design"], config["variant"]), {})

    def cell(name: str, key: tuple) -> str:
        ours = " / ".join(_pct1(m[f"{name}/{k}"]) for k in ("judge", "selection"))
        pub = published.get(key, {})
        theirs = " / ".join(f"{pub[k]:.2f}" if k in pub else "-" for k in ("judge", "selection"))
        return f"{ours} ({theirs})" if pub else ours

    columns = [(kind, turns) for kind in ("debate", "control") for turns in (2, 4)]
    lines = ["| rule | " + " | ".join(f"{kind} {turns}t" for kind, turns in columns) + " |",
             "|---" * (len(columns) + 1) + "|"]  # fmt: skip
    for rule, stem in RULE_FILE_NAMES.items():  # stem: as in the published judges' file names
        cells = [cell(f"{kind}_{turns}turn_{stem}", (f"debate{turns}", rule, kind == "control"))
                 for kind, turns in columns]  # fmt: skip
        lines.append(f"| {rule} | " + " | ".join(cells) + " |")
    walls = [v for k, v in m.items() if k.endswith("/wall_seconds")]
    record = _link(RUNS / run / "metrics.json", page, run)
    return (
        "\n".join(lines) + f"\n\nConsultancy: {cell('consultancy', ('consultancy', 'asym', False))}"
        f". Training: {len(walls)} judges, {min(walls) / 60:.1f} to {max(walls) / 60:.1f} min each, "
        f"{sum(walls) / 3600:.2f} judge-hours (record: {record}).\n"
    )


def _study_rows(page: Path, columns_of) -> tuple[list, list[str]]:
    """Per dataset variant recorded as ``docs/records/study-<variant>`` (``--record
    STUDY_FOLDER/<variant> study-<variant>``): (name, published row, our row) for
    :func:`debatelab.report.tables.paired_table`, and the record links."""
    from debatelab.data.variants import BUILTIN_VARIANTS, get_variant

    rows, links = [], []
    for variant in BUILTIN_VARIANTS:
        if not (RUNS / f"study-{variant}" / "metrics.json").is_file():
            continue
        m = metrics(f"study-{variant}")
        prefix = f"{variant}/"  # the study's own folder keys its variants' metrics
        m = {k.removeprefix(prefix): v for k, v in m.items()}
        if m.get("n_images") != 10_000 or m.get("curves_n_images") != 10_000:
            raise SystemExit(f"docs/records/study-{variant}: {m.get('n_images')} images and "
                             f"{m.get('curves_n_images')} for the curves; these tables are of "
                             "the full 10,000-image test sets")  # fmt: skip
        published, ours = columns_of(get_variant(variant), m)
        rows.append((variant, published, ours))
        links.append(_link(RUNS / f"study-{variant}" / "metrics.json", page, variant))
    return rows, links


def study_setup(page: Path) -> str:
    """REFERENCE B's setup table on the full test sets, from the recorded study variants
    (cells more than 1.5 points from the published ones in bold)."""
    from debatelab.reference import SETUP_COLUMNS
    from debatelab.report.tables import SETUP_KEYS, paired_table

    rows, links = _study_rows(page, lambda declared, m: (
        declared.published_setup, [100 * m[SETUP_KEYS[c]] for c in SETUP_COLUMNS]))  # fmt: skip
    return _study_table(paired_table(list(SETUP_COLUMNS), rows), rows, links)


def study_contrast(page: Path) -> str:
    """The post's main contrast from the recorded study variants: how far consultancy's exact
    play falls below the ensemble (zero capability), and where each debate's ends against it."""
    from debatelab.reference import SETUP_COLUMNS
    from debatelab.report.tables import SETUP_KEYS

    def contrast(values: dict[str, float]) -> list[float]:
        ensemble = values["ensemble"]
        return [ensemble - values["cons"], values["D2t"] - ensemble, values["D4t"] - ensemble]

    rows, links = _study_rows(page, lambda declared, m: (
        contrast(dict(zip(SETUP_COLUMNS, declared.published_setup, strict=True))),
        contrast({c: 100 * m[SETUP_KEYS[c]] for c in SETUP_COLUMNS})))  # fmt: skip
    lines = ["| variant | cons drop | (published) | D2t - ensemble | (published) | D4t - ensemble "
             "| (published) |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for variant, published, ours in rows:
        lines.append(f"| {variant} | " + " | ".join(f"{o:+.2f} | {p:+.2f}" for o, p in
                                                    zip(ours, published, strict=True)) + " |")  # fmt: skip
    return _study_table("\n".join(lines), rows, links)


def _study_table(table: str, rows: list, links: list[str]) -> str:
    from debatelab.data.variants import BUILTIN_VARIANTS

    pending = [v for v in BUILTIN_VARIANTS if v not in {r[0] for r in rows}]
    if not rows:
        return f"(No variant recorded yet: {', '.join(pending)}.)\n"
    later = f" Not yet re-run: {', '.join(pending)}." if pending else ""
    return f"{table}\n\n(Records: {', '.join(links)}.{later})\n"


def study_best(page: Path) -> str:
    """REFERENCE B's best-capability table from the recorded study variants' full-set curves."""
    from debatelab.experiments.sweep_report import best_values
    from debatelab.reference import BEST_COLUMNS
    from debatelab.report.tables import paired_table

    rows, links = _study_rows(page, lambda declared, m: (declared.published_best,
                                                         best_values(m)))  # fmt: skip
    table = paired_table(list(BEST_COLUMNS), rows, label="this study, full test set")
    return _study_table(table, rows, links)


def _spread(rows: list[dict], key: str) -> str:
    """``key`` over ``rows``: mean ± sample standard deviation (range), or the one value."""
    from statistics import mean, stdev

    values = [float(r[key]) for r in rows]
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{mean(values):.2f} ± {stdev(values):.2f} ({min(values):.2f} to {max(values):.2f})"


def judge_seeds(page: Path) -> str:
    """Gold and sparse test accuracy per variant and batch size over the seeds in
    ``judge-batch-size.csv``: mean, sample standard deviation and range."""
    path = DOCS / "measurements" / "judge-batch-size.csv"
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in _csv_rows(path):
        groups.setdefault((r["variant"], r["batch_size"]), []).append(r)
    lines = ["| variant | batch size | seeds | gold | sparse (Monte Carlo) |",
             "|---|---|---|---|---|"]  # fmt: skip
    for (variant, batch), rows in groups.items():
        seeds = ", ".join(r["seed"] for r in rows)
        lines.append(f"| {variant} | {batch} | {seeds} | {_spread(rows, 'gold_pct')} | "
                     f"{_spread(rows, 'sparse_pct')} |")  # fmt: skip
    return (
        "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}; mean ± sample "
        "standard deviation over seeds, and the range.)\n"
    )


def judge_batch_size(page: Path) -> str:
    """Seed 0's judges at batch 256 and 128 beside the published ones, per variant measured at
    both (``judge-batch-size.csv``); in bold the batch size nearer the published value."""
    from debatelab.reference import published_setup

    path = DOCS / "measurements" / "judge-batch-size.csv"
    seed0 = {(r["variant"], r["batch_size"]): r for r in _csv_rows(path) if r["seed"] == "0"}
    lines = ["| variant | batch size | gold | sparse (Monte Carlo, 10 masks per image) |",
             "|---|---|---|---|"]  # fmt: skip
    for variant in dict.fromkeys(v for v, _ in seed0):
        if not {(variant, "256"), (variant, "128")} <= set(seed0):
            continue
        published = published_setup(variant)
        pair = [seed0[(variant, "256")], seed0[(variant, "128")]]
        cells = {}
        for column, key in (("gold", "gold_pct"), ("sparse", "sparse_pct")):
            values = [float(r[key]) for r in pair]
            nearer = min(range(2), key=lambda i: abs(values[i] - published[column]))
            cells[column] = [f"**{v:.2f}**" if i == nearer else f"{v:.2f}"
                             for i, v in enumerate(values)]  # fmt: skip
        for i, batch in enumerate(("256", "128")):
            lines.append(f"| {variant} | {batch} | {cells['gold'][i]} | {cells['sparse'][i]} |")
        lines.append(f"| {variant} | published | {published['gold']:.2f} | "
                     f"{published['sparse']:.2f} |")  # fmt: skip
    return "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}, seed 0.)\n"


def judge_candidates(page: Path) -> str:
    """Issue 42's other candidate differences (``judge-candidates.csv``) against the same
    judges without them (``judge-batch-size.csv``), and the seed spread they are read against."""
    from statistics import stdev

    path = DOCS / "measurements" / "judge-candidates.csv"
    seeds_path = DOCS / "measurements" / "judge-batch-size.csv"
    seeds = _csv_rows(seeds_path)
    lines = ["| variant | candidate | gold | sparse | effect |", "|---|---|---|---|---|"]
    candidates = _csv_rows(path)
    for variant in dict.fromkeys(r["variant"] for r in candidates):
        rows = [r for r in candidates if r["variant"] == variant]
        if len({(r["batch_size"], r["seed"]) for r in rows}) != 1:
            raise SystemExit(f"{path}: {variant}'s candidates differ in batch size or seed")
        batch = rows[0]["batch_size"]
        same = [r for r in seeds if (r["variant"], r["batch_size"]) == (variant, batch)]
        base = next(r for r in same if r["seed"] == rows[0]["seed"])
        spread = {k: stdev(float(r[k]) for r in same) for k in ("gold_pct", "sparse_pct")}
        lines.append(f"| {variant} | none (float32, images resized in float) | {base['gold_pct']} "
                     f"| {base['sparse_pct']} | |")  # fmt: skip
        for r in rows:
            if r["gold_changed_pct"]:
                effect = (f"{r['gold_changed_pct']} % of gold and {r['sparse_changed_pct']} % of "
                          "sparse predictions change class")  # fmt: skip
            else:
                delta = {k: float(r[k]) - float(base[k]) for k in spread}
                apart = {k: 2**0.5 * sd for k, sd in spread.items()}  # two seeds' difference
                within = all(abs(delta[k]) <= 2 * apart[k] for k in spread)
                effect = (f"{delta['gold_pct']:+.2f} / {delta['sparse_pct']:+.2f}: "
                          f"{'within' if within else 'beyond'} seed noise (two seeds differ by "
                          f"{apart['gold_pct']:.2f} / {apart['sparse_pct']:.2f}, one standard "
                          f"deviation, {len(same)} seeds)")  # fmt: skip
            lines.append(f"| | {r['candidate']} | {r['gold_pct']} | {r['sparse_pct']} | {effect} |")
    return (
        "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}; the judges without the "
        f"candidate and the seeds: {_link(seeds_path, page, seeds_path.name)}.)\n"
    )


def exact_play_seeds(page: Path) -> str:
    """The setup table's exact columns per judge seed (``exact-play-seeds.csv``, rows of
    ``docs/exact_play_seeds.py``), a row per seed and their spread per variant, batch size and
    images."""
    from debatelab.reference import SETUP_COLUMNS, published_setup

    path = DOCS / "measurements" / "exact-play-seeds.csv"
    rows = _csv_rows(path)
    columns = [c for c in SETUP_COLUMNS if c in rows[0]]  # those the script keeps
    groups: dict[tuple[str, str, str], list[dict]] = {}
    for r in rows:
        groups.setdefault((r["variant"], r["batch_size"], r["images"]), []).append(r)
    lines = ["| variant | judges | images | " + " | ".join(columns) + " |",
             "|---|---|---|" + "---|" * len(columns)]  # fmt: skip
    for (variant, batch, images), rows in groups.items():
        published = published_setup(variant)
        lines.append(f"| {variant} | published | full test set | "
                     + " | ".join(f"{published[c]:.2f}" for c in columns) + " |")  # fmt: skip
        for r in rows:
            lines.append(f"| | seed {r['seed']}, batch {batch} | {images} | "
                         + " | ".join(r[c] for c in columns) + " |")  # fmt: skip
        if len(rows) > 1:
            lines.append(f"| | {len(rows)} seeds: mean ± sd (range) | {images} | "
                         + " | ".join(_spread(rows, c) for c in columns) + " |")  # fmt: skip
    return "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}.)\n"


def seed_intervals(page: Path) -> str:
    """Each exact-play and best-capability cell against the spread of our judge seeds
    (``seed-intervals.csv``, rows of ``docs/seed_interval.py``): the published value inside or
    outside the interval that holds about 95 % of new seeds' full-set values."""
    path = DOCS / "measurements" / "seed-intervals.csv"
    lines = ["| variant | cell | seeds on the shared images: mean ± sd | sd of the seed | sd of "
             "the images | seed 0, full set | a new seed, full set: centre (95 % interval) | "
             "published | inside |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    shown, groups = None, {}
    rows = _csv_rows(path)
    keys = [(r["variant"], r["cell"]) for r in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit(f"{path}: a (variant, cell) twice; keep one row of each")
    for r in rows:
        variant, shown = ("" if r["variant"] == shown else r["variant"]), r["variant"]
        lines.append(f"| {variant} | {r['cell']} | {r['seeds_mean']} ± {r['seeds_sd']} | "
                     f"{r['sd_seed']} | {r['sd_image']} | {r['seed0_full']} | {r['centre']} "
                     f"({r['low']} to {r['high']}) | {r['published']} | {r['inside']} |")  # fmt: skip
        groups.setdefault((r["seeds"], r["images"]), []).append(r["variant"])
    shared = "; ".join(f"{', '.join(dict.fromkeys(v))}: seeds 0 to {int(n) - 1}, images {i}"
                       for (n, i), v in groups.items())  # fmt: skip
    return "\n".join(lines) + f"\n\n({shared}. Rows: {_link(path, page, path.name)}; percent.)\n"


def pixel_paper_judge(page: Path) -> str:
    """The 2018 pixel judge trained with the paper's recipe (``debatelab train --kind pixel-paper
    --pixels K``, recorded as ``docs/records/train-pixel-paper-K``) against the paper, and the
    pixel debate at 100 rollouts in front of each judge recipe (``pixel_rollouts.csv``)."""
    from debatelab.experiments.pixels import PUBLISHED as PIXELS_PUBLISHED
    from debatelab.judges.pixel import pixel_judge_config

    lines = ["| K | judge accuracy, paper's recipe | published | difference | epochs (batches of "
             "128) | training wall time (all sittings) | record |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for k in (6, 4):
        name, published = f"train-pixel-paper-{k}", PIXELS_PUBLISHED[k]["judge"]
        epochs = pixel_judge_config("paper", k, 0, None).epochs
        if not (RUNS / name / "metrics.json").exists():
            lines.append(f"| {k} | pending | {published:.1f} | | {epochs} | | |")
            continue
        ours = 100 * metrics(name)["judge_accuracy"]
        wall = _wall_total(name)
        lines.append(f"| {k} | {ours:.2f} | {published:.1f} | {ours - published:+.2f} | {epochs} | "
                     f"{wall / 60:.0f} min | {_link(RUNS / name / 'metrics.json', page, name)} |")  # fmt: skip
    pixels = DOCS / "pixel_rollouts.csv"
    lines += ["", "| judge (`--judge`) | K | images | honest wins, precommit | no precommit |",
              "|---|---|---|---|---|"]  # fmt: skip
    for row in sorted(_csv_rows(pixels), key=lambda r: -int(r["pixels"])):
        if (row["first"], row["agent"], row["rollouts"]) == ("liar", "mcts", "100"):
            lines.append(f"| {row['judge']} | {row['pixels']} | {row['n_images']} | "
                         f"{_pct1(row['honest_win_rate_precommit'])} | "
                         f"{_pct1(row['honest_win_rate_no_precommit'])} |")  # fmt: skip
    return (
        "\n".join(lines) + f"\n\n(MCTS, 100 rollouts per move, liar first; rows: "
        f"{_link(pixels, page, pixels.name)}.)\n"
    )


def _wall(seconds: float) -> str:
    if seconds < 600:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f}".removesuffix(".0") + " min"


def rate(row: dict, key: str, bold: bool = False) -> str:
    """A pixel-debate row's win rate ``key`` in percent with its binomial standard error."""
    p, n = float(row[key]), int(row["n_images"])
    value = f"**{100 * p:.1f}**" if bold else f"{100 * p:.1f}"
    return f"{value} ({100 * (p * (1 - p) / n) ** 0.5:.1f})"


def pixel_rollouts(page: Path, pixels: str) -> str:
    """The pixel debate in front of the default judge at K = ``pixels``, every agent and turn
    order: honest wins with their binomial standard errors, the run's wall time and judge
    evaluations (``pixel_rollouts.csv``, the rows ``docs/pixel_curve.py --append`` keeps)."""
    from debatelab.experiments.pixels import PUBLISHED as PIXELS_PUBLISHED

    path = DOCS / "pixel_rollouts.csv"
    rows = [r for r in _csv_rows(path) if r["pixels"] == pixels and r["judge"] == "nonzero"]
    rows.sort(key=lambda r: (r["first"] != "liar", r["agent"] != "mcts", r["agent"],
                             int(r["rollouts"] or 0)))  # fmt: skip
    published = PIXELS_PUBLISHED[int(pixels)]["debate"]
    counted = any(r["judge_evaluations"] for r in rows)
    nearest = min(
        (r for r in rows if r["first"] == "liar"),
        key=lambda r: abs(100 * float(r["honest_win_rate_precommit"]) - published),
    )

    head = ["first", "agents (MCTS: rollouts per move)", "honest wins, precommit", "no precommit",
            "wall"] + ["judge evaluations"] * counted  # fmt: skip
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    for r in rows:
        agent = f"MCTS, {int(r['rollouts']):,}" if r["agent"] == "mcts" else r["agent"]
        if r["n_images"] != "500":
            agent += f", images 0:{r['n_images']}"
        wall = _wall(float(r["wall_s"])) if r["wall_s"] else "-"
        wall += f" ({r['remark']})" if r["remark"] else ""
        cells = [r["first"], agent, rate(r, "honest_win_rate_precommit", r is nearest),
                 rate(r, "honest_win_rate_no_precommit"), wall]  # fmt: skip
        if counted:
            cells.append(f"{int(r['judge_evaluations']) / 1e6:.2f} M" if r["judge_evaluations"]
                         else "")  # fmt: skip
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("| published (10,000 rollouts) | | " + f"{published}" + " |" * (len(head) - 2))
    return (
        "\n".join(lines) + f"\n\n(Rows: {_link(path, page, path.name)}; in bold the liar-first "
        "rate nearest the published one.)\n"
    )


def pixel_orders(page: Path, rollouts: str) -> str:
    """Both turn orders of the pixel debate at ``rollouts`` per move, per K: the honest-first
    row beside the liar-first one (``pixel_rollouts.csv``)."""
    path = DOCS / "pixel_rollouts.csv"
    chosen = [r for r in _csv_rows(path)
              if r["agent"] == "mcts" and r["rollouts"] == rollouts and r["judge"] == "nonzero"]  # fmt: skip
    rows = {(r["pixels"], r["first"]): r for r in chosen}
    if len(rows) != len(chosen):
        raise SystemExit(f"{path}: two rows of one K and turn order at {rollouts} rollouts")
    lines = ["| K | honest first: images | honest wins, precommit | no precommit | liar first: "
             "images | precommit | no precommit | wall, honest first |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip

    for k in sorted({k for k, first in rows if first == "honest"}, key=int, reverse=True):
        honest, liar = rows[(k, "honest")], rows.get((k, "liar"))
        cells = [k, f"0:{honest['n_images']}", rate(honest, "honest_win_rate_precommit"),
                 rate(honest, "honest_win_rate_no_precommit")]  # fmt: skip
        cells += ([f"0:{liar['n_images']}", rate(liar, "honest_win_rate_precommit"),
                   rate(liar, "honest_win_rate_no_precommit")] if liar else ["", "", ""])  # fmt: skip
        cells.append(_wall(float(honest["wall_s"])) if honest["wall_s"] else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return (
        "\n".join(lines) + f"\n\n(MCTS, {int(rollouts):,} rollouts per move, the default judge; "
        f"standard errors in brackets; rows: {_link(path, page, path.name)}.)\n"
    )


def judges_exact(page: Path, images: str) -> str:
    """Published trained judges under the sampled search and against exactly optimal debaters
    on the same ``images`` test images: the pairs of records ``judges-eval-NAME-sampled-N`` and
    ``judges-eval-NAME-exact-N`` (``debatelab judges eval FILE --images ... --search S``)."""
    protocols = {"consultancy": "consultancy", "debate2": "2-turn", "debate4": "4-turn"}
    pairs = []
    for sampled in sorted(RUNS.glob(f"judges-eval-*-sampled-{images}")):
        exact = RUNS / sampled.name.replace("-sampled-", "-exact-")
        m = {"sampled": metrics(sampled.name), "exact": metrics(exact.name)}
        configs = [json.loads((r / "config.json").read_text()) for r in (sampled, exact)]
        if (
            {m["sampled"]["n_images"], m["exact"]["n_images"]} != {int(images)}
            or [c["search"] for c in configs] != ["sampled", "exact"]
            or len({(c["images"], Path(c["judge_file"]).name) for c in configs}) != 1
        ):
            raise SystemExit(f"{sampled.name}, {exact.name}: not one judge on the same "
                             f"{images} images under the sampled and the exact search")  # fmt: skip
        pairs.append((sampled, exact, m))
    pairs.sort(key=lambda p: (p[2]["exact"]["design"], p[2]["exact"]["control"],
                              list(protocols).index(p[2]["exact"]["protocol"])))  # fmt: skip
    lines = ["| published judge | judge acc. sampled | exact | selection sampled | exact | "
             "published judge / selection | wall: sampled / exact | records |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for sampled, exact, m in pairs:
        e = m["exact"]
        name = f"{e['design']} {protocols[e['protocol']]}"
        name += "" if e["protocol"] == "consultancy" else f" {e['rule']}"
        name += " control" if e["control"] else ""
        published = " / ".join("-" if e.get(f"published_{k}") is None else
                               f"{e[f'published_{k}']:.2f}" for k in ("judge", "selection"))  # fmt: skip
        cells = [f"{100 * m[s][k]:.1f}" for k in ("judge_accuracy", "selection_accuracy")
                 for s in ("sampled", "exact")]  # fmt: skip
        links = f"{_link(sampled / 'metrics.json', page, 'sampled')}, " + _link(
            exact / "metrics.json", page, "exact"
        )
        walls = " / ".join(_wall(json.loads((r / "manifest.json").read_text())["wall_time_s"])
                           for r in (sampled, exact))  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {published} | {walls} | {links} |")
    return "\n".join(lines) + "\n"


def pixel_judge_recipes(page: Path, pixels: str) -> str:
    """The pixel judge's recipe comparison at K = ``pixels`` (``pixel-judge-recipes.csv``, rows
    of ``docs/pixel_judge_recipes.py``): accuracy after every tenth epoch of each run, its wall
    time; in bold the best final accuracy."""
    path = DOCS / "measurements" / "pixel-judge-recipes.csv"
    runs: dict[tuple[str, str, str], dict[int, dict]] = {}
    for r in _csv_rows(path):
        if r["pixels"] == pixels:
            runs.setdefault((r["net"], r["epochs"], r["gamma"]), {})[int(r["epoch"])] = r
    if not runs:
        return f"(No rows at K = {pixels} yet in {_link(path, page, path.name)}.)\n"
    shown = sorted(
        {e for points in runs.values() for e in points if e % 10 == 0 or e == max(points)}
    )
    best = max(float(p[max(p)]["accuracy_pct"]) for p in runs.values())

    def label(net: str) -> str:
        if net.startswith("mlp"):
            return f"MLP 1568-{net[3:]}-{net[3:]}-10"
        c1, c2, hidden = net[3:].split("-")
        return f"CNN {c1}/{c2}, head {hidden}"

    lines = ["| net | epochs, decay | " + " | ".join(f"epoch {e}" for e in shown) + " | wall |",
             "|---|---|" + "---|" * (len(shown) + 1)]  # fmt: skip
    for (net, epochs, gamma), points in runs.items():
        final = points[max(points)]
        cells = []
        for e in shown:
            value = points[e]["accuracy_pct"] if e in points else ""
            bold = e == max(points) and float(final["accuracy_pct"]) == best
            cells.append(f"**{value}**" if bold else value)
        lines.append(f"| {label(net)} | {epochs}, {gamma} | " + " | ".join(cells)
                     + f" | {_wall(float(final['seconds']))} |")  # fmt: skip
    return "\n".join(lines) + f"\n\n(K = {pixels}; rows: {_link(path, page, path.name)}.)\n"


def published_judges(page: Path, run: str) -> str:
    """Every published trained judge as ``debatelab judges eval-published`` evaluated it
    (recorded with its ``judges.json``): a collapsible table per published folder, ours beside
    the published numbers, and how many lie within tolerance."""
    from debatelab.experiments.judges import published_tables

    config = json.loads((RUNS / run / "config.json").read_text())
    results = json.loads((RUNS / run / "judges.json").read_text())
    tables, lines, _ = published_tables(results)
    images = "full test sets" if config["images"] == "all" else f"test images {config['images']}"
    record = _link(RUNS / run / "metrics.json", page, run)
    parts = [f"All {len(results)} judges ({images}, {config['search']} search, budget "
             f"{config['budget']:,}, seed {config['seed']}; percent; record: {record}):"]  # fmt: skip
    for sub, table in tables.items():
        n = sum(name.split("/")[0] == sub for name in results)
        parts.append(f'<details markdown="1"><summary>{sub} ({n} judges)</summary>\n\n{table}'
                     "\n\n</details>")  # fmt: skip
    return "\n\n".join([*parts, "\n".join(lines)]) + "\n"


def channel_cpu(page: Path) -> str:
    """The argument channel under the cpu preset (``debatelab bits sweep --dataset D``, recorded
    as ``docs/records/bits-sweep-D``): each protocol's bits arm beside its nested control, the
    difference with its binomial standard error, the published difference and entropy, the
    randomised-bit ablation; then the baselines on the same images."""
    from debatelab.experiments.bits import ARMS, ChannelSweepConfig, _channels, delta_standard_error
    from debatelab.reference import CHANNEL_DELTAS, CHANNEL_ENTROPY

    variants = ("fashionmnist-whitened", "cifar10")
    protocols = ("consultancy", "debate2", "debate4")
    heads = {"consultancy": "consultancy", "debate2": "2-turn", "debate4": "4-turn"}
    cells: dict[str, list[str]] = {k: [] for k in (
        "bits arm, judge accuracy", "nested control", "**bits - control** (standard error)",
        "published bits - control", "codeword entropy, bits (published)",
        "randomised bits: judge / belief change")}  # fmt: skip
    baselines, links = [], []
    for variant in variants:
        name = f"bits-sweep-{variant}"
        _record(name, f"debatelab bits sweep --dataset {variant}")
        m = metrics(name)
        n = m["n_images"]
        sweep = ChannelSweepConfig(variant=variant, preset="cpu")
        arms = {(p, b, budget): sweep.arm(p, b, budget, _channels(variant)).name
                for p, b, budget in ARMS}  # fmt: skip
        for protocol in protocols:
            bits, control = arms[(protocol, True, protocol)], arms[(protocol, False, protocol)]
            a, c = m[f"{bits}/judge"], m[f"{control}/judge"]
            se = 100 * delta_standard_error(a, c, n)
            entropy = f"{m[f'{bits}/codeword_entropy']:.2f}"
            published_h = CHANNEL_ENTROPY.get(variant, {}).get(protocol)
            cells["bits arm, judge accuracy"].append(_pct(a))
            cells["nested control"].append(_pct(c))
            cells["**bits - control** (standard error)"].append(
                f"**{100 * (a - c):+.2f}** ({se:.2f})"
            )
            cells["published bits - control"].append(f"{CHANNEL_DELTAS[variant][protocol]:+.2f}")
            cells["codeword entropy, bits (published)"].append(
                entropy + (f" ({published_h:.2f})" if published_h else "")
            )
            cells["randomised bits: judge / belief change"].append(
                f"{100 * m[f'{bits}/ablation_judge_accuracy_change']:+.2f} / "
                f"{100 * m[f'{bits}/ablation_belief_change']:+.2f}"
            )
        ensembles = sorted((int(k.rsplit("_", 1)[1]), v) for k, v in m.items()
                           if k.startswith("baseline/ensemble_") and k[-1].isdigit())  # fmt: skip
        large = arms[("consultancy", False, "consultancy_large")]
        baselines.append(
            f"{variant} ({n:,} images): gold {_pct(m['baseline/gold'])}, random mask (1) "
            f"{_pct(m['baseline/random_mask_1'])}, its ensemble "
            + ", ".join(f"{_pct(v)} ({k:,} masks)" for k, v in ensembles)
            + f", {_pct(m['baseline/ensemble_all'])} (all 58,905); plain consultancy at the "
            f"larger search ({large.rsplit('_', 1)[1]} masks) {_pct(m[f'{large}/judge'])}"
        )
        links.append(_link(RUNS / name / "metrics.json", page, variant))
    lines = ["| | " + " | | | ".join(variants) + " | | |", "|---" * 7 + "|",
             "| | " + " | ".join(heads[p] for _ in variants for p in protocols) + " |"]  # fmt: skip
    lines += [f"| {row} | " + " | ".join(values) + " |" for row, values in cells.items()]
    return (
        "\n".join(lines)
        + "\n\nBaselines on the same images (same net, no claim input): "
        + "; ".join(baselines)
        + f". (Records: {', '.join(links)}.)\n"
    )


def _record(name: str, command: str, file: str = "metrics.json") -> Path:
    """``docs/records/NAME/FILE``, or a clear exit naming the command that would make it."""
    path = RUNS / name / file
    if not path.is_file():
        raise SystemExit(f"docs/records/{name}/{file}: missing; run `{command}` and record it "
                         f"(`python docs/results.py --record RUN_FOLDER {name}`)")  # fmt: skip
    return path


def _wall_total(name: str) -> float:
    """A recorded run's wall time over all its sittings, in seconds."""
    manifest = json.loads((RUNS / name / "manifest.json").read_text())
    return float(manifest.get("wall_time_total_s", manifest["wall_time_s"]))


def channel_paper(page: Path, arm: str) -> str:
    """One argument-channel arm pair under the paper preset (``debatelab bits train --dataset D
    --protocol P --preset paper [--control]``, recorded as ``docs/records/bits-paper-D-P`` and
    ``...-control`` with their histories and the bits arm's diagnostics): final selection, judge
    accuracy and belief of both arms, the difference with its standard error beside the
    published one, the per-epoch differences and the diagnostics of the final judge."""
    from debatelab.experiments.bits import delta_standard_error
    from debatelab.reference import CHANNEL_DELTAS

    variant, _, protocol = arm.rpartition("-")
    names = {"bits arm": f"bits-paper-{arm}", "nested control": f"bits-paper-{arm}-control"}
    command = f"debatelab bits train --dataset {variant} --protocol {protocol} --preset paper"
    for label, name in names.items():
        _record(name, command + " --control" * (label == "nested control"), "history.json")
    m = {label: metrics(name) for label, name in names.items()}
    histories = {label: json.loads((RUNS / name / "history.json").read_text())
                 for label, name in names.items()}  # fmt: skip
    diagnostics = json.loads(_record(names["bits arm"], command, "diagnostics.json").read_text())
    n = diagnostics["n_images"]
    lines = [f"| {variant} {protocol}, paper preset | selection | judge | belief | wall time "
             "(all sittings) |", "|---|---|---|---|---|"]  # fmt: skip
    for label, name in names.items():
        lines.append(f"| {label} | {_pct(m[label]['selection'])} | {_pct(m[label]['judge'])} | "
                     f"{_pct(m[label]['belief'])} | {_wall(_wall_total(name))} |")  # fmt: skip
    a, c = m["bits arm"]["judge"], m["nested control"]["judge"]
    se = 100 * delta_standard_error(a, c, n)
    lines.append(f"| **bits - control** (standard error) | | **{100 * (a - c):+.2f}** ({se:.2f}) "
                 "| | |")  # fmt: skip
    lines.append(f"| published bits - control | | {CHANNEL_DELTAS[variant][protocol]:+.2f} | | |")
    per_epoch = [100 * (b["judge"] - k["judge"])
                 for b, k in zip(histories["bits arm"], histories["nested control"], strict=True)]  # fmt: skip
    counts = diagnostics["codeword_counts"]
    top = max(range(len(counts)), key=counts.__getitem__)
    ratios = [(b["mi_claim"] / b["entropy"], b["mi_label_given_claim"] / b["entropy"])
              for b in diagnostics["bits"] if b["entropy"] > 0]  # fmt: skip
    per_bit = (
        f"per bit, I(b; claim) / H(b) is {min(r[0] for r in ratios):.2f}-"
        f"{max(r[0] for r in ratios):.2f} and I(b; y | claim) / H(b) "
        f"{min(r[1] for r in ratios):.2f}-{max(r[1] for r in ratios):.2f}"
        if ratios
        else "no bit varies"
    )
    records = ", ".join(_link(RUNS / name / "metrics.json", page, name) for name in names.values())
    return (
        "\n".join(lines)
        + "\n\nBits minus control in judge accuracy after each epoch: "
        + ", ".join(f"{d:+.2f}" for d in per_epoch)
        + f" points. Diagnostics of the final bits judge on a fresh pass of the {n:,} test "
        f"images: judge accuracy {_pct(diagnostics['judge_accuracy'])}; codeword entropy "
        f"{diagnostics['codeword_entropy']:.2f} bits of {len(diagnostics['bits'])} "
        f"({counts[top]:,} of the {n:,} plays use codeword {top}); randomising the bits changes "
        f"judge accuracy by {100 * diagnostics['ablation_judge_accuracy_change']:+.2f} points "
        f"and belief by {100 * diagnostics['ablation_belief_change']:+.2f}; {per_bit}. "
        f"(Records: {records}.)\n"
    )


CHANNEL_BASELINE_VARIANTS = ("fashionmnist-whitened", "cifar10")


def _channel_baselines() -> dict[str, dict]:
    return {v: metrics(_record(f"bits-baselines-{v}-paper",
                               f"debatelab bits baselines --dataset {v} --preset paper").parent.name)
            for v in CHANNEL_BASELINE_VARIANTS}  # fmt: skip


def channel_baselines(page: Path) -> str:
    """The argument channel's baselines under the paper preset (``debatelab bits baselines
    --dataset D --preset paper``, recorded as ``docs/records/bits-baselines-D-paper``): gold,
    the random-mask judge on one fresh mask beside the published table and log, and its
    ensembles."""
    from debatelab.reference import CHANNEL_RANDOM_MASK

    parts = []
    for variant, m in _channel_baselines().items():
        name = f"bits-baselines-{variant}-paper"
        published = CHANNEL_RANDOM_MASK[variant]
        ensembles = sorted((int(k.rsplit("_", 1)[1]), v) for k, v in m.items()
                           if k.startswith("ensemble_") and k[-1].isdigit())  # fmt: skip
        parts.append(
            f"- {variant}: gold {_pct(m['gold'])}, random mask (1) **{_pct(m['random_mask_1'])}** "
            f"(published {published['table']:.2f}, epoch-15 log {published['log']:.2f}), its "
            "ensemble "
            + ", ".join(f"{_pct(v)} ({k:,} masks)" for k, v in ensembles)
            + f", {_pct(m['ensemble_all'])} (all 58,905); {_wall(_wall_total(name))} "
            f"({_link(RUNS / name / 'metrics.json', page, 'record')})"
        )
    return "\n".join(parts) + "\n"


def recipe_baselines(page: Path) -> str:
    """The argument channel's baselines under the paper preset beside the published notebooks'
    executed logs (the recipe comparison's check of our pipeline and loop)."""
    from debatelab.reference import CHANNEL_GOLD_LOG, CHANNEL_RANDOM_MASK

    labels = {"fashionmnist-whitened": "FashionMNIST-whitened", "cifar10": "CIFAR-10"}
    lines = ["| 15 epochs, D3-style net | published log | ours |", "|---|---|---|"]
    links = []
    for variant, m in _channel_baselines().items():
        published = CHANNEL_RANDOM_MASK[variant]
        gold = labels[variant] + " gold" + (" (our copy is JPEG)" if variant == "cifar10" else "")
        lines.append(f"| {gold} | {CHANNEL_GOLD_LOG[variant]:.2f} | {_pct(m['gold'])} |")
        lines.append(f"| {labels[variant]} random-mask judge (one mask) | {published['table']:.2f} "
                     f"({published['log']:.2f} in the log) | {_pct(m['random_mask_1'])} |")  # fmt: skip
        name = f"bits-baselines-{variant}-paper"
        links.append(_link(RUNS / name / "metrics.json", page, name))
    return "\n".join(lines) + f"\n\n(Records: {', '.join(links)}.)\n"


#: The agents of the learned debaters' cross-play table, in its order.
CROSSPLAY_AGENTS = ("learned", "greedy", "random", "mcts10", "mcts100", "mcts1000")


def agents_crossplay(page: Path, runs: str) -> str:
    """The learned pixel debaters against each other and the search agents (``debatelab agents
    train``, each run recorded as ``docs/records/RUN``; ``runs`` comma-separated): honest wins
    per image with their binomial standard errors, rows the honest agent, columns the liar;
    a pair no run played but ``pixel_rollouts.csv`` holds (X against X) is taken from there."""
    cells, n_images, links = {}, set(), []
    for name in runs.split(","):
        m = metrics(_record(name, "debatelab agents train --pixels 6").parent.name)
        n_images.add(m["n_images"])
        for key, value in m.items():
            if key.endswith("_win_rate"):
                honest, liar = key.removesuffix("_win_rate").split("_vs_")
                cells[(honest, liar)] = rate({"p": value, "n_images": m["n_images"]}, "p")
        links.append(_link(RUNS / name / "metrics.json", page, name))
    if len(n_images) != 1:
        raise SystemExit(f"agents-crossplay: the runs {runs} played different image counts")
    (n,) = n_images
    pixels = DOCS / "pixel_rollouts.csv"
    starred = []
    for row in _csv_rows(pixels):
        agent = row["agent"] + row["rollouts"]
        if ((row["pixels"], row["first"], row["judge"]) == ("6", "liar", "nonzero")
                and agent in CROSSPLAY_AGENTS and (agent, agent) not in cells
                and int(row["n_images"]) == n):  # fmt: skip
            cells[(agent, agent)] = rate(row, "honest_win_rate_precommit").replace(" (", "* (")
            starred.append(agent)

    def label(agent: str) -> str:
        return f"MCTS {int(agent[4:]):,}" if agent.startswith("mcts") else agent

    header = "| honest \\ liar | " + " | ".join(map(label, CROSSPLAY_AGENTS)) + " |"
    lines = [header, "|---" * (len(CROSSPLAY_AGENTS) + 1) + "|"]
    for honest in CROSSPLAY_AGENTS:
        lines.append(f"| {label(honest)} | "
                     + " | ".join(cells.get((honest, liar), "") for liar in CROSSPLAY_AGENTS)
                     + " |")  # fmt: skip
    note = (f"\n\n\\* From {_link(pixels, page, pixels.name)} (`debatelab pixels` on the same "
            "images, another seed stream)." if starred else "")  # fmt: skip
    return "\n".join(lines) + note + f"\n\n(Records: {', '.join(links)}.)\n"


def judge_epochs(page: Path, run: str) -> str:
    """A trained judge's per-epoch judge and selection accuracy (``debatelab judges train``,
    recorded as ``docs/records/RUN`` with its history and the published curves) beside the
    published per-epoch curve, with each epoch's wall time."""
    history = json.loads(_record(run, "debatelab judges train", "history.json").read_text())
    published = {}
    if (RUNS / run / "published_curves.json").is_file():
        (published,) = json.loads((RUNS / run / "published_curves.json").read_text()).values()
    lines = [
        "| epoch | judge accuracy | selection accuracy | epoch wall time |",
        "|---|---|---|---|",
    ]

    def cell(entry: dict, metric: str) -> str:
        ours = _pct(entry[metric])
        curve = published.get(metric, [])
        return ours + (
            f" ({curve[entry['epoch'] - 1]:.2f})" if entry["epoch"] <= len(curve) else ""
        )

    for entry in history:
        lines.append(f"| {entry['epoch']} | {cell(entry, 'judge')} | {cell(entry, 'selection')} | "
                     f"{_wall(entry['wall_seconds'])} |")  # fmt: skip
    total = _wall(sum(e["wall_seconds"] for e in history))
    return (
        "\n".join(lines) + f"\n\n(Published per-epoch values in brackets; {total} over the "
        f"epochs; record: {_link(RUNS / run / 'metrics.json', page, run)}.)\n"
    )


#: Table name -> its renderer (given the page it sits in, for relative links); a name
#: ``kind:arg`` calls ``kind``'s renderer with ``arg``.
TABLES = {"headline": headline, "pools-grid": pools_grid, "pools-contrasts": pools_contrasts,
          "d1-protocols": d1_protocols, "study-setup": study_setup, "study-best": study_best,
          "study-contrast": study_contrast,
          "judge-seeds": judge_seeds, "judge-batch-size": judge_batch_size,
          "judge-candidates": judge_candidates, "pixel-paper-judge": pixel_paper_judge,
          "channel-cpu": channel_cpu, "exact-play-seeds": exact_play_seeds,
          "pixel-rollouts": pixel_rollouts, "pixel-orders": pixel_orders,
          "judges-sweep": judges_sweep, "judges-exact": judges_exact,
          "published-judges": published_judges,
          "pixel-judge-recipes": pixel_judge_recipes,
          "seed-intervals": seed_intervals, "channel-paper": channel_paper,
          "channel-baselines": channel_baselines, "recipe-baselines": recipe_baselines,
          "agents-crossplay": agents_crossplay, "judge-epochs": judge_epochs}  # fmt: skip


def render(name: str, page: Path) -> str:
    kind, _, arg = name.partition(":")
    if kind not in TABLES:
        raise SystemExit(f"{page}: unknown results table {name!r}; known: {sorted(TABLES)}")
    return TABLES[kind](page, arg) if arg else TABLES[kind](page)


def update(page: Path, check: bool) -> list[str]:
    """Render every table of ``page``; rewrite it unless ``check``. Returns the tables that
    differed."""
    text = page.read_text(encoding="utf-8")
    differed = []

    def replace(match: re.Match) -> str:
        name = match.group(2)
        fresh = render(name, page)
        if fresh != match.group(3):
            differed.append(f"{page.relative_to(REPO)}: {name}")
        return match.group(1) + fresh + match.group(4)

    new = MARK.sub(replace, text)
    if new != text and not check:
        page.write_text(new, encoding="utf-8")
    return differed


def unmarked_tables(page: Path) -> list[str]:
    """Tables of ``page`` outside every results block whose previous non-blank line is not a
    hand-written mark, as ``page:line``."""
    text = MARK.sub(lambda m: "\n" * m.group(0).count("\n"), page.read_text(encoding="utf-8"))
    found, above, last_text = [], "", ""  # the line above, the last non-blank one
    for i, line in enumerate(text.splitlines()):
        if line.startswith("|") and not above.startswith("|"):
            if not HAND_WRITTEN.fullmatch(last_text):
                found.append(f"{page.relative_to(REPO)}:{i + 1}")
        above, last_text = line, line.strip() or last_text
    return found


def record(folder: Path, name: str) -> Path:
    """Copy a run folder's record (config, manifest, metrics) to docs/records/NAME."""
    missing = [f for f in RECORD_FILES if not (folder / f).is_file()]
    if missing:
        raise SystemExit(f"{folder}: no {', '.join(missing)}; record a finished run")
    out = RUNS / name
    out.mkdir(parents=True, exist_ok=True)
    for f in RECORD_FILES + tuple(f for f in RECORD_EXTRAS if (folder / f).is_file()):
        shutil.copyfile(folder / f, out / f)
    manifest = json.loads((folder / "manifest.json").read_text())
    if "wall_time_total_s" not in manifest and (folder / "log.jsonl").is_file():
        # a manifest from before the field: every sitting's time, from the run's log
        from debatelab.runlog import read_log, sittings_wall_time

        events = read_log(folder / "log.jsonl")
        manifest["wall_time_total_s"] = sittings_wall_time(events)
        manifest["sittings"] = sum(e.get("event") == "sitting_started" for e in events)
        (out / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--record", nargs=2, metavar=("RUN_FOLDER", "NAME"))
    args = parser.parse_args()
    if args.record:
        print(record(Path(args.record[0]), args.record[1]))
        return
    differed = [d for page in PAGES for d in update(page, args.check)]
    for d in differed:
        print(("differs: " if args.check else "rewrote: ") + d)
    unmarked = [t for page in RESULT_PAGES for t in unmarked_tables(page)]
    for t in unmarked:
        print(f"neither rendered nor marked hand-written: {t}")
    if args.check and (differed or unmarked):
        sys.exit(1)


if __name__ == "__main__":
    main()
