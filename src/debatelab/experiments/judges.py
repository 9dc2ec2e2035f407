"""Judges trained on-policy (REFERENCE B's second half; docs/trained-judges.md).

`debatelab judges train` trains one judge against the debaters' exact play on sampled candidate
trees (design D1, D3 or D2; consultancy, 2- or 4-turn debate; rule asym, sym or last_b; or a
shuffled control), `debatelab judges sweep` the published 13-judge sweep of a design, and
`debatelab judges eval` evaluates any checkpoint, ours or a published one. Every epoch logs
selection accuracy, judge accuracy, belief, loss and wall time and writes a checkpoint; rerun
the same command to resume from the last finished epoch. Presets: `paper` (the published
schedule) and `cpu` (a reduced one for a 2-core machine, see docs/results-trained-judges.md).
"""

from __future__ import annotations

import functools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..atomic import write_json
from ..data import VARIANTS, load_variant
from ..errors import CacheError
from ..games.sampled import branching_for
from ..games.sampled_play import SEARCHES, evaluate_trained_judge
from ..judges import published as pub_files
from ..judges.designs import design as find_design
from ..judges.designs import design_names
from ..judges.onpolicy import (
    PUBLISHED_TURNS,
    OnPolicyConfig,
    load_published_judge,
    parse_published_name,
)
from ..options import CLUSTER, DEVICE, IMAGES, WORKERS, parse_device
from ..progress import progress as progress_bar
from ..protocols import PUBLISHED_BUDGET, protocol_names, rule_names
from ..reference import TRAINED_JUDGES, TRAINED_SWEEP
from ..report.runs import RunFolder
from ..store import parse_images
from ..training.onpolicy import PRESETS, get_onpolicy_judge, load_onpolicy_judge

#: The protocols of the published 13-judge sweeps (what a budget must suit for a sweep).
PROTOCOLS = ("consultancy", "debate2", "debate4")
#: Every cell protocol a judge can be trained on (:mod:`debatelab.protocols`).
CELL_PROTOCOLS = protocol_names("cells")
METRICS = ("judge", "selection", "belief")


def check_at_least(value, flag: str, low: int, unset: str | None = None) -> None:
    """Refuse a number below ``low`` with one message naming the option ``flag`` as the command
    line spells it; ``unset`` says what leaving it out means (for options that may be left
    out)."""
    if value is not None and value < low:
        left = f" (or leave it out: {unset})" if unset else ""
        raise ValueError(f"{flag} must be >= {low}{left}, got {value}")


def check_budget(budget: int | None, protocols, search: str, flag: str = "--budget") -> None:
    """Refuse a budget that the sampled trees of ``protocols`` cannot spread evenly."""
    check_at_least(budget, flag, 1, "the default")
    if budget is None or search != "sampled":
        return
    for protocol in protocols:
        try:
            branching_for(protocol, budget)
        except ValueError as exc:
            raise ValueError(f"{flag} {budget}: {exc}") from None


def preset_budget(budget: int, protocol: str) -> int:
    """A preset's budget for ``protocol``: itself where the protocol's turns spread it evenly
    (or at the published budget, its published branching), else the largest power of the
    number of turns below it (the cpu preset's 81 = 3^4 gives debate3 4^3 = 64)."""
    try:
        branching_for(protocol, budget)
        return budget
    except ValueError:
        turns = len(branching_for(protocol, PUBLISHED_BUDGET))
        root = int(round(budget ** (1 / turns)))
        while root**turns > budget:
            root -= 1
        return max(1, root) ** turns


@dataclass
class ScheduleConfig:
    """Settings shared by one judge and a sweep: dataset, design, schedule, device."""

    design: str = field(default="D1", metadata={"choices": design_names(sweep=True)})
    """Judge design: D1 (never sees a class), D3 (reads the claims), D2 (P(claim correct))."""
    variant: str = field(default="mnist", metadata={"flag": "--dataset", "choices": VARIANTS})
    """Dataset variant."""
    preset: str = field(default="cpu", metadata={"choices": tuple(PRESETS)})
    """cpu: a reduced schedule for a 2-core machine (3 epochs on 12,000 training images, 81
    leaves per image = 9 x 9 = 3^4, 1,000 test images per evaluation); paper: the published
    one (10 epochs on 60,000, 1,296 leaves, all 10,000 test images)."""
    epochs: int | None = field(default=None, metadata={"min": 1})
    """Override the preset's epochs."""
    budget: int | None = field(default=None, metadata={"min": 1})
    """Override the preset's judge evaluations per image per step: a power of the protocol's
    number of turns (16, 81, 256, 625, 1296 suit 1, 2 and 4 turns; debate3 64, 125, ...), or
    1296 with its published branching. A preset's budget is fitted to the turns (cpu: 81,
    debate3 64)."""
    train_limit: int | None = field(default=None, metadata={"min": 1})
    """Override the preset's training images (the first N)."""
    eval_images: str | None = field(default=None, metadata=IMAGES)
    """Override the preset's test images evaluated after every epoch."""
    capability: int | None = field(default=None, metadata={"min": 1})
    """Debaters as top-k quantilisers at every turn of the sampled tree (default: exact play,
    as published)."""
    search: str = field(default="sampled", metadata={"choices": SEARCHES})
    """sampled: the published candidate trees (--budget leaves per image); exact: every
    candidate (58,905 masks; 353,430 pair splits; 1,413,720 ordered reveals), scored by the
    factorised trunk, so the debaters are truly optimal against the judge (about 0.1-3 s of
    one core per image and step for D1; meant for a GPU or small runs)."""
    device: str = field(default="auto", compare=False, metadata=DEVICE)
    """Where to train: auto (a CUDA device when there is one, else the CPU), cpu, cuda or
    cuda:N."""
    cluster: str = field(default="local", compare=False, metadata=CLUSTER)
    """Where the judges train: local (one after another here), ray (a local Ray instance),
    ray:auto (join the running Ray cluster) or ray:HOST:PORT (one Ray task per judge, with a
    GPU when --device is cuda); results do not depend on it."""
    published: str | None = field(default=None, compare=False)
    """A local copy of the published judges, for their per-epoch curves in curves.png (default:
    downloaded into the cache on first use, sha256-checked)."""

    def __post_init__(self):
        from ..cluster import Cluster

        # bad numbers fail here, before any data is loaded
        check_at_least(self.epochs, "--epochs", 1, "the preset's")
        check_at_least(self.train_limit, "--train-limit", 1, "the preset's")
        check_at_least(self.capability, "--capability", 1, "exact play")
        check_budget(self.budget, self.protocols(), self.search)
        if self.published is not None:
            pub_files.local_copy(self.published)  # a missing folder fails here
        Cluster.parse(self.cluster)  # a bad --cluster fails before any training

    def protocols(self) -> tuple[str, ...]:
        """The protocols this config trains (the budget must suit each)."""
        return PROTOCOLS

    def onpolicy(self, protocol: str, rule: str, control: bool, seed: int | None = None):
        """The :class:`OnPolicyConfig` of one judge under this schedule."""
        chosen = {**PRESETS[self.preset]}
        if self.search == "sampled":  # a preset's budget, to the turns of this protocol
            chosen["budget"] = preset_budget(chosen["budget"], protocol)
        for name in ("epochs", "budget", "train_limit", "eval_images"):
            if getattr(self, name) is not None:
                chosen[name] = getattr(self, name)
        return OnPolicyConfig(design=self.design, variant=self.variant, protocol=protocol,
                              rule=rule, control=control, seed=seed,
                              capability=self.capability, search=self.search,
                              **chosen)  # fmt: skip


@dataclass
class JudgeConfig(ScheduleConfig):
    """Settings of one judge trained on-policy."""

    protocol: str = field(default="debate2", metadata={"choices": CELL_PROTOCOLS})
    """consultancy, debate2 (2 + 2 cells), debate4 (1 cell per turn), debate3 (A 1, B 2, A 1)
    or consult_rebut (A 3, B 1): the cell protocols of `debatelab protocols`."""
    rule: str = field(default="asym", metadata={"choices": rule_names()})
    """Scoring rule (consultancy: asym)."""
    control: bool = False
    """The shuffled control: the four cells in four channel groups, in a fresh order per play."""
    seed: int | None = field(default=None, metadata={"min": 0})
    """Seed (default: the published seed of this judge)."""

    def __post_init__(self):
        check_at_least(self.seed, "--seed", 0, "the published seed")
        super().__post_init__()

    def protocols(self) -> tuple[str, ...]:
        return (self.protocol,)


def published_final(design: str, variant: str, cfg: OnPolicyConfig) -> dict[str, float]:
    return TRAINED_JUDGES.get((design, variant), {}).get((cfg.protocol, cfg.rule, cfg.control), {})


def train_one(cfg: OnPolicyConfig, folder: RunFolder, device: str, data=None):
    data = data if data is not None else load_variant(cfg.variant, folder.data_dir)
    return get_onpolicy_judge(cfg, data, folder.cache_dir, folder.progress, device=device)


def train_many(cfgs: list[OnPolicyConfig], folder: RunFolder, device: str, data,
               cluster: str = "local") -> list:  # fmt: skip
    """Every judge of ``cfgs`` (cached ones read back), trained where ``cluster`` says: here,
    one after another, or one Ray task per judge (each resumable per epoch in the shared
    cache; the finished checkpoint is written here, by the driver). In the order of ``cfgs``."""
    from ..cluster import Cluster, run_pieces
    from ..judges.train import cached_judge, find_cached

    where = Cluster.parse(cluster)
    if where.kind == "local":
        return [train_one(cfg, folder, device, data) for cfg in cfgs]
    out = {i: find_cached(cfg, folder.cache_dir) for i, cfg in enumerate(cfgs)}
    todo = [i for i, judge in out.items() if judge is None]
    pieces = [(cfgs[i], folder.data_dir, folder.cache_dir, device) for i in todo]
    for k, trained in run_pieces(_train_piece, pieces, where, num_gpus=device == "cuda"):
        i = todo[k]
        out[i] = cached_judge(cfgs[i], folder.cache_dir, False, lambda _partial, t=trained: t)
        folder.echo(f"trained {cfgs[i].name}")
    return [out[i] for i in range(len(cfgs))]


def _train_piece(piece):
    """One judge, where it runs: trained on-policy (resuming from its partial checkpoint in the
    shared cache) and returned to the driver, which stores it."""
    from ..judges.train import judge_path
    from ..training.onpolicy import train_onpolicy

    cfg, data_dir, cache_dir, device = piece
    data = load_variant(cfg.variant, data_dir)
    path = judge_path(cfg, cache_dir)
    partial = path.with_name(f"{cfg.key()}.partial.pt")
    partial.parent.mkdir(parents=True, exist_ok=True)
    trained = train_onpolicy(cfg, data, partial, progress=False, device=device)
    trained.model.cpu()
    return trained


def final_metrics(history: list[dict]) -> dict[str, float]:
    last = history[-1]
    out = {k: last[k] for k in METRICS if k in last}
    out["loss"] = last["loss"]
    out["wall_seconds"] = round(sum(e["wall_seconds"] for e in history), 1)
    return out


def run(config: JudgeConfig, folder: RunFolder) -> dict:
    """Train one judge on-policy against the debaters' exact play on sampled candidate trees.

    Per epoch: selection accuracy, judge accuracy, belief, loss and wall time, and a checkpoint
    in the cache; rerun the same command to resume from the last finished epoch (a finished
    judge is read back). Writes history.json, curves.png (the published curve dashed, where
    there is one) and the final numbers beside the published ones.
    """
    device = parse_device(config.device, config.cluster)
    cfg = config.onpolicy(config.protocol, config.rule, config.control, config.seed)
    folder.seeds["train"] = cfg.seed
    published = curves_for_plot([cfg], config, folder)[cfg.name]  # before any training
    data = load_variant(cfg.variant, folder.data_dir)
    (judge,) = train_many([cfg], folder, device, data, config.cluster)
    history = judge.history
    (folder.path / "history.json").write_text(json.dumps(history, indent=1))
    from ..report.plots import epoch_curves

    label = f"{cfg.design} {cfg.name}"
    _write_published(folder, {"this run": published} if published else {})
    epoch_curves({label: history}, folder.file("curves.png"), {label: published},
                 len(data.y_train))  # fmt: skip
    metrics = final_metrics(history)
    pub = published_final(config.design, config.variant, cfg)
    folder.echo(judge_table([(cfg.name, metrics, pub)]))
    return {**metrics, "checkpoint": str(judge.path)}


def judge_table(rows) -> str:
    """Markdown: judge / selection / belief per judge, ours beside the published; ``rows`` are
    ``(name, ours, published)``, ours in fractions, published in percent."""
    lines = ["| judge | ours: judge / selection / belief | published |", "|---|---|---|"]
    for name, ours, pub in rows:

        def cells(m):
            return " / ".join(f"{m[k]:.2f}" if k in m else "-" for k in METRICS)

        pct = {k: 100 * v for k, v in ours.items() if k in METRICS}
        lines.append(f"| {name} | {cells(pct)} | {cells(pub) if pub else 'n/a'} |")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# the published per-epoch curves, from the downloaded (or an offline) copy of the published judges


def curve_entries(cfg: OnPolicyConfig) -> list[tuple[str, pub_files.Entry]]:
    """``(metric, manifest entry)`` of each published per-epoch array of the judge ``cfg``
    describes (none for a design and dataset the study did not publish)."""
    folder = pub_files.FOLDERS.get((cfg.design, cfg.variant))
    if folder is None:
        return []
    rule = {"last_b": "lastdig"}.get(cfg.rule, cfg.rule)
    if cfg.protocol == "consultancy":
        stem = "consultancy"
    elif cfg.protocol in PUBLISHED_TURNS:
        kind = "control" if cfg.control else "debate"
        stem = find_design(cfg.design).curve_stem(kind, PUBLISHED_TURNS[cfg.protocol])
    else:  # a protocol the study did not run
        return []
    out = []
    for entry in pub_files.curve_entries(folder):
        head, sep, tail = entry.name.removesuffix(".npy").partition("_epoch_")
        if head != stem or not sep:
            continue
        parts = tail.split("_")
        if cfg.protocol != "consultancy" and rule not in parts:
            continue
        metric = {"sel": "selection", "selection": "selection", "judge": "judge",
                  "belief": "belief"}[parts[0]]  # fmt: skip
        out.append((metric, entry))
    return out


def published_curves(cfg: OnPolicyConfig, published: str | os.PathLike | None = None,
                     cache: str | os.PathLike | None = None,
                     progress: bool = False) -> dict[str, np.ndarray]:  # fmt: skip
    """The published per-epoch metrics (%) of the judge ``cfg`` describes, where published: read
    from the local copy ``published`` (``--published DIR``; arrays it lacks are left out), else
    from the cache, downloaded and sha256-checked on first use
    (:class:`debatelab.judges.published.PublishedError` when that cannot be done)."""
    wanted = curve_entries(cfg)
    if not wanted:
        return {}
    copy = (pub_files.local_copy(published) if published is not None
            else pub_files.fetch([e for _, e in wanted], cache, progress=progress))  # fmt: skip
    out = {}
    for metric, entry in wanted:
        f = copy.path(entry.path)
        if f.is_file():
            values = np.load(f).astype(float)
            out[metric] = values * (100 if values.max() <= 1 else 1)
    return out


def _write_published(folder: RunFolder, published: dict[str, dict[str, np.ndarray]]) -> None:
    """The published curves beside the run's histories (percent per epoch), for the viewer."""
    if published:
        write_json(folder.path / "published_curves.json",
                   {label: {m: np.asarray(v, dtype=float).round(4).tolist() for m, v in c.items()}
                    for label, c in published.items()})  # fmt: skip


def curves_for_plot(cfgs: list[OnPolicyConfig], config: ScheduleConfig,
                    folder: RunFolder) -> dict[str, dict[str, np.ndarray]]:  # fmt: skip
    """The published curves of each judge of ``cfgs`` (by name), for the plots; when they cannot
    be had (offline, no network), the plot goes without them and the run says why."""
    try:
        return {cfg.name: published_curves(cfg, config.published, folder.cache_dir,
                                           folder.progress) for cfg in cfgs}  # fmt: skip
    except pub_files.PublishedError as exc:
        folder.echo(f"curves.png leaves out the published curves: {exc}")
        return {cfg.name: {} for cfg in cfgs}


# ---------------------------------------------------------------------------------------------
# the 13-judge sweep


@dataclass
class SweepJudgesConfig(ScheduleConfig):
    """Settings of a 13-judge sweep: consultancy, and for each rule 2- and 4-turn debate and
    their shuffled controls, each with its published seed."""


def run_sweep(config: SweepJudgesConfig, folder: RunFolder) -> dict:
    """The published 13-judge sweep of a design on a dataset: consultancy, and for each rule
    (asym, sym, last_b) 2- and 4-turn debate and their shuffled controls, each with its
    published seed.

    Each judge is cached and resumable per epoch, so an interrupted sweep continues where it
    stopped. Writes report.md (the table beside the published one), histories.json and
    curves.png (every judge's metrics against epochs, published curves dashed).
    """
    device = parse_device(config.device, config.cluster)
    cfgs = [config.onpolicy(protocol, rule, control) for protocol, rule, control in TRAINED_SWEEP]
    published = curves_for_plot(cfgs, config, folder)  # before any training
    data = load_variant(config.variant, folder.data_dir)
    rows, histories = [], {}
    metrics: dict = {}
    judges = train_many(cfgs, folder, device, data, config.cluster)
    for cfg, judge in zip(cfgs, judges, strict=True):
        ours = final_metrics(judge.history)
        rows.append((cfg.name, ours, published_final(config.design, config.variant, cfg)))
        histories[cfg.name] = judge.history
        metrics.update({f"{cfg.name}/{k}": v for k, v in ours.items()})
        folder.echo(f"{cfg.name}: " + ", ".join(f"{k} {100 * v:.2f}" for k, v in ours.items()
                                                if k in METRICS))  # fmt: skip
    (folder.path / "histories.json").write_text(json.dumps(histories, indent=1))
    _write_published(folder, {name: curves for name, curves in published.items() if curves})
    from ..report.plots import epoch_curves

    epoch_curves(histories, folder.file("curves.png"), published, len(data.y_train))
    table = judge_table(rows)
    folder.file("report.md").write_text(
        f"# debatelab judges sweep: {config.design} on {config.variant} ({config.preset})\n\n"
        "Final epoch, percent; published: REFERENCE B (judge / selection / belief).\n\n"
        f"{table}\n\n![metrics against epochs](curves.png)\n")  # fmt: skip
    folder.echo(table)
    metrics["wall_seconds"] = round(sum(m for k, m in metrics.items()
                                        if k.endswith("/wall_seconds")), 1)  # fmt: skip
    return metrics


# ---------------------------------------------------------------------------------------------
# evaluation of any checkpoint


@dataclass
class EvalJudgeConfig:
    """Settings of the evaluation of one trained judge."""

    judge_file: str = field(default="", metadata={"argument": True, "file": True})
    """A judge checkpoint: one this project trained (`debatelab judges train` prints its path),
    or a published one (named as in the study's repository, e.g.
    debate_judge_2turn_asym_mnist.pt)."""
    variant: str | None = field(default=None, metadata={"flag": "--dataset"})
    """Dataset variant (default: the checkpoint's)."""
    images: str = field(default="all", metadata=IMAGES)
    """Test images: 'all', 'N', 'a:b' or 'a:b:step'."""
    budget: int = field(default=1296, metadata={"min": 1})
    """Judge evaluations per image (the sampled tree's leaves)."""
    seed: int = field(default=0, metadata={"min": 0})
    """Seed of the candidate draws."""
    batch: int = field(default=32, metadata={"min": 1})
    """Images per search batch."""
    capability: int | None = field(default=None, metadata={"min": 1})
    """Debaters as top-k quantilisers (default: exact play)."""
    search: str = field(default="sampled", metadata={"choices": SEARCHES})
    """sampled: fresh candidate trees of --budget leaves (published); exact: every candidate,
    scored by the factorised trunk."""
    device: str = field(default="auto", compare=False, metadata=DEVICE)
    """Where to evaluate: auto (a CUDA device when there is one, else the CPU), cpu, cuda or
    cuda:N."""

    def __post_init__(self):
        if not self.judge_file:
            raise ValueError("give the checkpoint to evaluate: debatelab judges eval PATH")
        path = Path(self.judge_file)
        if not path.is_file() or not os.access(path, os.R_OK):
            why = "is a folder" if path.is_dir() else (
                "cannot be read" if path.exists() else "does not exist")  # fmt: skip
            raise ValueError(f"{self.judge_file} {why}: give the path of a judge checkpoint, one "
                             f"`debatelab judges train` wrote or a published one{_FIND_JUDGES}")  # fmt: skip
        check_at_least(self.seed, "--seed", 0)
        check_at_least(self.batch, "--batch", 1)
        check_at_least(self.capability, "--capability", 1, "exact play")
        # a file that is not a judge, or a budget its protocol cannot spread, fails here, before
        # the run folder is made or any data loaded (a checkpoint takes milliseconds to read)
        judge, _, _, protocol, _, _ = load_any_judge(self.judge_file)
        check_budget(self.budget, (protocol,) if _branching(judge) is None else (), self.search)


def _branching(judge) -> tuple[int, ...] | None:
    """The cell tree an argument-channel arm was trained on (evaluated on it, not --budget)."""
    return getattr(getattr(judge, "trained_config", None), "branching", None)


_FIND_JUDGES = (" (the published ones: `debatelab judges eval-published` downloads them into the "
                "cache, under published-judges/)")  # fmt: skip


def load_any_judge(path: str):
    """``(judge, design, variant, protocol, rule, control)`` of our checkpoint or a published
    one; a file that is neither fails with one message naming it (it is the user's file, never
    treated as a cache entry)."""
    try:
        name = parse_published_name(path)
    except ValueError:
        try:
            judge = load_onpolicy_judge(path)
        except (CacheError, FileNotFoundError) as exc:
            why = exc.__cause__ or exc
            raise ValueError(
                f"{path} cannot be read as a judge checkpoint ({type(why).__name__}: {why}): give "
                "a checkpoint that `debatelab judges train` wrote, or a published judge under its "
                f"published name (e.g. debate_judge_2turn_asym_mnist.pt){_FIND_JUDGES}"
            ) from exc
        cfg = judge.trained_config
        return judge, cfg.design, cfg.variant, cfg.protocol, cfg.rule, cfg.control
    judge = load_published_judge(path)
    return judge, name.design, name.dataset, name.protocol, name.rule, name.control


@functools.lru_cache(maxsize=1)
def test_images(variant: str, data_dir=None):
    """``(x_test, y_test)`` of a dataset variant, kept for the next judge of the same dataset
    (`judges eval-published` evaluates 13 in a row; reading a dataset takes seconds)."""
    data = load_variant(variant, data_dir)
    return data.x_test, data.y_test


def evaluate_checkpoint(config: EvalJudgeConfig, data_dir=None, progress: bool = False) -> dict:
    """The metrics of :func:`evaluate_trained_judge` for ``config``'s checkpoint, with its design,
    variant, protocol, rule and control, and the published final numbers (``published_*``)
    when it is a published judge."""
    device = parse_device(config.device)
    judge, design, variant, protocol, rule, control = load_any_judge(config.judge_file)
    variant = config.variant or variant
    branching = _branching(judge)
    judge.model.to(device)
    x_test, y_test = test_images(variant, data_dir)
    sl = parse_images(config.images, len(x_test))
    m = evaluate_trained_judge(judge, x_test[sl].to(device), y_test[sl],
                               protocol=protocol, rule=rule, control=control,
                               budget=config.budget, seed=config.seed, batch=config.batch,
                               progress=progress, capability=config.capability,
                               search=config.search, branching=branching)  # fmt: skip
    pub = TRAINED_JUDGES.get((design, variant), {}).get((protocol, rule, control), {})
    cfg = getattr(judge, "trained_config", None) or OnPolicyConfig(
        design=design, variant=variant, protocol=protocol, rule=rule, control=control)  # fmt: skip
    return {**m, "name": cfg.name, "design": design, "variant": variant, "protocol": protocol,
            "rule": rule, "control": control,
            **{f"published_{k}": v for k, v in pub.items()}}  # fmt: skip


def _ours_and_published(m: dict) -> tuple[dict, dict]:
    """Percent metrics of an evaluation and the published ones, keyed judge / selection /
    belief."""
    ours = {"judge": m.get("judge_accuracy"), "selection": m["selection_accuracy"],
            "belief": m.get("belief")}  # fmt: skip
    ours = {k: 100 * v for k, v in ours.items() if v is not None}
    return ours, {k: m[f"published_{k}"] for k in METRICS if f"published_{k}" in m}


def run_eval(config: EvalJudgeConfig, folder: RunFolder) -> dict:
    """Evaluate a trained judge: selection accuracy, judge accuracy and belief on test images,
    with fresh sampled candidate trees and the exact search (eval mode), beside the published
    final numbers when the checkpoint is a published judge.

    The judge's design, protocol, rule and control come from the checkpoint (for published
    files, from their names).
    """
    folder.seeds["search"] = config.seed
    m = evaluate_checkpoint(config, folder.data_dir, folder.progress)
    ours, pub = _ours_and_published(m)
    folder.echo(judge_table([(m["name"], {k: v / 100 for k, v in ours.items()}, pub)]))
    return m


# ---------------------------------------------------------------------------------------------
# every published judge


@dataclass
class EvalPublishedConfig:
    """Settings of the evaluation of every published trained judge (52 in the study)."""

    published: str | None = None
    """A local copy of the published judges: a clone of the study's repository, or one subfolder
    of .pt files per design and dataset (default: downloaded into the cache on first use,
    sha256-checked)."""
    folders: str = "all"
    """Which subfolders, comma separated (e.g. trained_judges_D1_mnist), or 'all'."""
    images: str = field(default="all", metadata=IMAGES)
    """Test images of each judge's dataset: 'all', 'N', 'a:b' or 'a:b:step'."""
    budget: int = field(default=1296, metadata={"min": 1})
    """Judge evaluations per image (the sampled tree's leaves)."""
    seed: int = field(default=0, metadata={"min": 0})
    """Seed of the candidate draws (the same for every judge)."""
    batch: int = field(default=32, metadata={"min": 1})
    """Images per search batch."""
    search: str = field(default="sampled", metadata={"choices": SEARCHES})
    """sampled (published) or exact (every candidate)."""
    workers: int = field(default=WORKERS, compare=False, metadata={"min": 1})
    """Judges evaluated at once, each in its own process (results do not depend on it)."""
    device: str = field(default="auto", compare=False, metadata=DEVICE)
    """Where to evaluate: auto (a CUDA device when there is one, else the CPU), cpu, cuda or
    cuda:N."""

    def __post_init__(self):
        # bad input fails here, before anything is downloaded or loaded
        check_budget(self.budget, PROTOCOLS, self.search)
        check_at_least(self.seed, "--seed", 0)
        check_at_least(self.batch, "--batch", 1)
        check_at_least(self.workers, "--workers", 1)
        if not self.wanted_folders() and self.folders != "all":
            raise ValueError(f"--folders {self.folders!r}: name judge folders, comma separated, "
                             "or 'all'")  # fmt: skip
        if self.published is not None:
            pub_files.local_copy(self.published)
        else:
            pub_files.judge_entries(self.wanted_folders())  # unknown folders fail here

    def wanted_folders(self) -> list[str] | None:
        """The folders --folders names (None: all)."""
        if self.folders == "all":
            return None
        return [w.strip() for w in self.folders.split(",") if w.strip()]

    def judge_files(self, cache: str | os.PathLike | None = None,
                    progress: bool = False) -> list[Path]:  # fmt: skip
        """The checkpoints to evaluate: of the local copy (--published), else of the cache,
        where those not there yet are downloaded and sha256-checked first."""
        wanted = self.wanted_folders()
        if self.published is None:
            entries = pub_files.judge_entries(wanted)
            copy = pub_files.fetch(entries, cache, progress=progress)
            return [copy.path(e.path) for e in entries]  # sorted by folder, then name
        copy = pub_files.local_copy(self.published)
        subs = copy.judge_folders()
        if wanted is not None:
            unknown = sorted(set(wanted) - {p.name for p in subs})
            if unknown:
                raise ValueError(f"--folders: no judges in {', '.join(unknown)} under "
                                 f"{copy.weights}; choose among "
                                 f"{', '.join(p.name for p in subs)}")  # fmt: skip
            subs = [p for p in subs if p.name in wanted]
        files = [f for sub in subs for f in sorted(sub.glob("*.pt"))]
        if not files:
            raise ValueError(f"no published judges (*.pt) under {copy.weights}")
        for f in files:
            parse_published_name(f)  # a file named otherwise fails here, before any work
        return files


def _eval_piece(piece):
    """One published judge evaluated where it runs; returns its metrics to the driver."""
    import torch

    path, settings, data_dir, device, threads = piece
    torch.set_num_threads(threads)
    started = time.perf_counter()
    m = evaluate_checkpoint(EvalJudgeConfig(judge_file=str(path), device=device, **settings),
                            data_dir)  # fmt: skip
    return {**m, "wall_seconds": round(time.perf_counter() - started, 1)}


def run_eval_published(config: EvalPublishedConfig, folder: RunFolder) -> dict:
    """Evaluate every published trained judge with this project's search, encodings and rules,
    beside the published final numbers. The judges are downloaded into the cache on first use
    (each file checked by sha256; later runs download nothing), or read from --published DIR.

    Each judge is one piece, stored in the run folder as it finishes (keyed by the settings),
    so an interrupted run resumes at the next unfinished judge: rerun the same command. Writes
    report.md (per folder: ours and published, and the differences) and judges.json.
    """
    import os

    from ..atomic import write_atomic, write_json
    from ..cluster import run_pieces
    from ..resume import KeyedPieces

    files = config.judge_files(folder.cache_dir, folder.progress)
    device = parse_device(config.device)
    settings = {k: getattr(config, k) for k in ("images", "budget", "seed", "batch", "search")}
    folder.seeds["search"] = config.seed
    pieces_dir = KeyedPieces(folder.path / "judges", settings)
    done = {}
    for f in files:
        p = pieces_dir.path(f"{f.parent.name}--{f.stem}.json")
        if p.exists():
            done[f] = json.loads(p.read_text())
    todo = [f for f in files if f not in done]
    folder.echo(f"{len(files)} judges: {len(done)} finished before, {len(todo)} to evaluate")
    threads = max(1, (os.cpu_count() or 1) // max(1, config.workers))
    pieces = [(f, settings, folder.data_dir, device, threads) for f in todo]

    def write_report() -> tuple[str, dict]:  # after every judge: an interrupted run shows them
        results = {f"{f.parent.name}/{f.name}": done[f] for f in files if f in done}
        write_json(folder.file("judges.json"), results)
        report, summary = published_report(results)
        text = (f"# debatelab judges eval-published\n\n{len(results)} of {len(files)} judges; "
                f"images {config.images} of each judge's test set, search {config.search}, "
                f"budget {config.budget}, seed {config.seed}. Percent; published: REFERENCE B."
                f"\n\n{report}\n")  # fmt: skip
        write_atomic(folder.file("report.md"), lambda path: path.write_text(text))
        return report, summary

    bar = progress_bar(total=len(files), initial=len(done), enabled=folder.progress,
                       desc="published judges", unit="judge")  # fmt: skip
    for i, m in run_pieces(_eval_piece, pieces, config.workers):
        f = todo[i]
        write_json(pieces_dir.path(f"{f.parent.name}--{f.stem}.json"), m)
        done[f] = m
        bar.update(1)
        ours, _ = _ours_and_published(m)
        folder.echo(f"{f.parent.name}/{f.name}: " + ", ".join(f"{k} {v:.2f}"
                                                              for k, v in ours.items()))  # fmt: skip
        write_report()
    bar.close()
    report, summary = write_report()
    folder.echo(report)
    return summary


def published_report(results: dict[str, dict]) -> tuple[str, dict]:
    """Markdown: :func:`published_tables` under their folders' names, then the summary's lines;
    and the summary."""
    tables, lines, summary = published_tables(results)
    parts = [f"**{sub}**\n\n{table}" for sub, table in tables.items()]
    return "\n\n".join(parts) + "\n\n" + "\n".join(lines), summary


def published_tables(results: dict[str, dict]) -> tuple[dict[str, str], list[str], dict]:
    """Markdown tables (one per published folder) of ours beside the published final numbers
    with the differences, and a summary (with a line per metric): per metric the largest
    absolute difference and how many judges lie within tolerance: the published re-evaluation
    noise (up to 1.1 points, docs/trained-judges.md#noise) plus three binomial standard errors
    of our own estimate."""
    noise = 1.1
    by_folder: dict[str, list] = {}
    diffs: dict[str, list[tuple[float, float]]] = {k: [] for k in METRICS}  # (ours - pub, tol)
    for name, m in results.items():
        cfg = OnPolicyConfig(design=m["design"], variant=m["variant"], protocol=m["protocol"],
                             rule=m["rule"], control=m["control"])  # fmt: skip
        ours, pub = _ours_and_published(m)
        delta = {k: ours[k] - pub[k] for k in METRICS if k in ours and k in pub}
        for k, d in delta.items():
            p = min(max(pub[k] / 100, 0.0), 1.0)
            diffs[k].append((d, noise + 300 * (p * (1 - p) / m["n_images"]) ** 0.5))
        by_folder.setdefault(name.split("/")[0], []).append((cfg.name, ours, pub, delta))

    def cells(m, fmt="{:.2f}"):
        return " / ".join(fmt.format(m[k]) if k in m else "-" for k in METRICS)

    tables = {}
    for sub, rows in by_folder.items():
        lines = ["| judge | ours: judge / selection / belief | published | ours - published |",
                 "|---|---|---|---|"]  # fmt: skip
        lines += [f"| {n} | {cells(o)} | {cells(p) if p else 'n/a'} | {cells(d, '{:+.2f}')} |"
                  for n, o, p, d in rows]  # fmt: skip
        tables[sub] = "\n".join(lines)
    summary = {"n_judges": len(results)}
    for k, d in diffs.items():
        if d:
            summary[f"{k}_max_abs_difference"] = round(max(abs(x) for x, _ in d), 2)
            summary[f"{k}_within_tolerance"] = sum(abs(x) <= tol for x, tol in d)
            summary[f"{k}_compared"] = len(d)
    lines = [f"- {k}: {summary[k + '_within_tolerance']} of {summary[k + '_compared']} within "
             f"{noise} points + 3 standard errors of the published number; largest difference "
             f"{summary[k + '_max_abs_difference']:.2f}" for k in METRICS
             if k + "_compared" in summary]  # fmt: skip
    return tables, lines, summary
