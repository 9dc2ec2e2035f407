"""One analysis of a pool file: worms and meshes for every arm and protocol, paired bootstrap
intervals, the standard contrasts, tables and a markdown report (used by ``debatelab bon``)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np

from ..policies import BestOfN
from ..text.bootstrap import BootstrapConfig, BootstrapResult, bootstrap
from ..text.pools import MAIN_ARM, PoolSet, judge_auc
from ..text.solve import policy_label
from ..text.sweeps import Sweep, SweepSpec, sweep


@dataclass(frozen=True)
class BonConfig:
    """Grid and statistics of a best-of-N analysis."""

    n: tuple[int, ...] = tuple(range(1, 21))
    """Proposer numbers of best-of-n draws (the worms' axis); each d is played as BestOfN(d)."""
    m: tuple[int, ...] = (1, 10)
    """Critic numbers of best-of-m draws (the meshes' second axis)."""
    r: tuple[int, ...] = (1, 10)
    """Rebuttal numbers of best-of-r draws."""
    ref_n: int = 10
    """Proposer draws at which contrasts are reported (the largest n if not in the grid)."""
    bootstrap: BootstrapConfig = field(default_factory=BootstrapConfig)
    """Bootstrap settings."""
    seed: int = 0
    """Seed of the bootstrap."""

    def __post_init__(self):
        for name in ("n", "m", "r"):
            vals = tuple(int(v) for v in getattr(self, name))
            if not vals or min(vals) < 1:
                raise ValueError(f"{name} needs positive integers, got {getattr(self, name)!r}")
            object.__setattr__(self, name, vals)

    def policies(self, axis: str) -> tuple[BestOfN, ...]:
        """The draws of one axis ('n', 'm' or 'r') as rank policies: ``BestOfN(d)``."""
        return tuple(BestOfN(d) for d in getattr(self, axis))

    @property
    def ref_index(self) -> int:
        return self.n.index(self.ref_n) if self.ref_n in self.n else int(np.argmax(self.n))


@dataclass(frozen=True, eq=False)
class BonAnalysis:
    """Everything ``debatelab bon`` writes."""

    config: BonConfig
    """The settings."""
    specs: tuple[SweepSpec, ...]
    """One spec per (arm, protocol)."""
    sweeps: tuple[Sweep, ...]
    """Per-question results of each spec on the analysed questions."""
    boot: BootstrapResult
    """Question-averaged estimates, replicates and intervals."""
    dropped: tuple[str, ...]
    """Questions left out because they lack some arm or protocol."""
    contrasts: list[dict] = field(default_factory=list)
    """Named paired differences with intervals."""


def default_specs(pools: PoolSet, cfg: BonConfig) -> tuple[SweepSpec, ...]:
    arms = [MAIN_ARM] + [a for a in pools.arms if a != MAIN_ARM] if MAIN_ARM in pools.arms \
        else list(pools.arms)  # fmt: skip
    n, m, r = cfg.policies("n"), cfg.policies("m"), cfg.policies("r")
    return tuple(SweepSpec(proto, n, m, r, arm)
                 for arm in arms for proto in pools.protocols(arm))  # fmt: skip


def analyse(pools: PoolSet, cfg: BonConfig | None = None, show_progress: bool = False,
            specs: tuple[SweepSpec, ...] | None = None) -> BonAnalysis:  # fmt: skip
    cfg = cfg or BonConfig()
    specs = specs or default_specs(pools, cfg)
    if not specs:
        raise ValueError("the pools have no protocol that every question of an arm shares")
    ids = pools.common_questions((s.arm, s.protocol) for s in specs)
    all_ids = dict.fromkeys(q.question_id for q in pools)
    dropped = tuple(q for q in all_ids if q not in ids)
    if not ids:
        raise ValueError("no question has every arm and protocol; analyse the arms separately")
    sweeps = tuple(sweep(pools, s, ids) for s in specs)
    boot = bootstrap(pools, specs, cfg.bootstrap, cfg.seed, ids, show_progress)
    result = BonAnalysis(cfg, specs, sweeps, boot, dropped)
    result.contrasts.extend(standard_contrasts(result))
    return result


def _find(specs, arm, protocol):
    for i, s in enumerate(specs):
        if s.arm == arm and s.protocol == protocol:
            return i
    return None


def standard_contrasts(res: BonAnalysis) -> list[dict]:
    """Proposer, critic and rebuttal optimisation, protocol steps and the control arm, at the
    reference n (first m and r are the unoptimised baselines when they are 1)."""
    cfg, specs = res.config, res.specs
    k = cfg.ref_index
    n_lab = policy_label(cfg.policies("n")[k])
    out = []

    def add(name, a, b):
        for metric in ("accuracy", "win_rate"):
            est, lo, hi = res.boot.contrast(a, b, metric)
            out.append({"contrast": name, "metric": metric, "estimate": est, "low": lo,
                        "high": hi})  # fmt: skip

    for i, s in enumerate(specs):
        tag = s.key
        if len(cfg.n) > 1:
            add(f"{tag}: proposer {n_lab} - Bo{cfg.n[0]}", (i, (k, 0, 0)), (i, (0, 0, 0)))
        if s.protocol != "proposal" and len(s.m) > 1:
            add(f"{tag}: critic {s.labels('m')[-1]} - {s.labels('m')[0]} at {n_lab}",
                (i, (k, len(s.m) - 1, 0)), (i, (k, 0, 0)))  # fmt: skip
        if s.depth >= 3 and len(s.r) > 1:
            add(f"{tag}: rebuttal {s.labels('r')[-1]} - {s.labels('r')[0]} at {n_lab}",
                (i, (k, 0, len(s.r) - 1)), (i, (k, 0, 0)))  # fmt: skip
    arms = dict.fromkeys(s.arm for s in specs)
    for arm in arms:
        chain = sorted(
            ((s.protocol, i) for i, s in enumerate(specs) if s.arm == arm),
            key=lambda pi: specs[pi[1]].depth,
        )  # proposal, critique, rebuttal, ...
        for (pa, ia), (pb, ib) in zip(chain[1:], chain[:-1], strict=False):
            add(f"{arm}: {pa} - {pb} at {n_lab}", (ia, (k, 0, 0)), (ib, (k, 0, 0)))
    for arm in arms:
        if arm == MAIN_ARM:
            continue
        ic = _find(specs, arm, "proposal")
        if ic is None:
            continue
        main = sorted((i for i, s in enumerate(specs) if s.arm == MAIN_ARM),
                      key=lambda i: specs[i].depth)  # fmt: skip
        for i in main:
            add(f"{specs[i].protocol} - {arm} proposal at {n_lab}", (i, (k, 0, 0)), (ic, (k, 0, 0)))
    return out


def grid_rows(res: BonAnalysis) -> list[dict]:
    """Question-averaged accuracy and win rate with intervals at every grid point."""
    rows = []
    for i, s in enumerate(res.specs):
        acc, acc_lo, acc_hi = res.boot.intervals(i, "accuracy")
        win, win_lo, win_hi = res.boot.intervals(i, "win_rate")
        for a, b, c in np.ndindex(acc.shape):
            rows.append({"arm": s.arm, "protocol": s.protocol, "n": s.labels("n")[a],
                         "m": s.labels("m")[b] if s.protocol != "proposal" else "",
                         "r": s.labels("r")[c] if s.depth >= 3 else "",
                         "accuracy": acc[a, b, c], "accuracy_low": acc_lo[a, b, c],
                         "accuracy_high": acc_hi[a, b, c], "win_rate": win[a, b, c],
                         "win_rate_low": win_lo[a, b, c], "win_rate_high": win_hi[a, b, c]})  # fmt: skip
    return rows


def question_rows(res: BonAnalysis) -> list[dict]:
    """Per-question accuracy and win rate at every grid point."""
    rows = []
    for sw in res.sweeps:
        s = sw.spec
        for q, qid in enumerate(sw.question_ids):
            for a, b, c in np.ndindex(sw.accuracy.shape[1:]):
                rows.append({"question_id": qid, "arm": s.arm, "protocol": s.protocol,
                             "n": s.labels("n")[a],
                             "m": s.labels("m")[b] if s.protocol != "proposal" else "",
                             "r": s.labels("r")[c] if s.depth >= 3 else "",
                             "accuracy": sw.accuracy[q, a, b, c],
                             "win_rate": sw.win_rate[q, a, b, c]})  # fmt: skip
    return rows


def to_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    if rows:
        w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        for row in rows:
            w.writerow({k: f"{v:.6f}" if isinstance(v, float) else v for k, v in row.items()})
    return buf.getvalue()


def _ci(est, lo, hi, scale=100.0) -> str:
    return f"{scale * est:.1f} [{scale * lo:.1f}, {scale * hi:.1f}]"


def markdown_report(res: BonAnalysis, pools: PoolSet, source: str) -> str:
    cfg, boot = res.config, res.boot
    k = cfg.ref_index
    n_lab = policy_label(cfg.policies("n")[k])
    pct = round(100 * cfg.bootstrap.confidence)
    lines = [
        "# Best-of-N debate proxy", "",
        f"Pools: `{source}`; {len(boot.question_ids)} questions analysed"
        + (f" ({len(res.dropped)} dropped for lacking an arm or protocol: "
           f"{', '.join(res.dropped[:10])})" if res.dropped else "") + ".", "",
        "| arm | protocol | pool shape (first question) | mean transcript tokens | judge AUC |",
        "|---|---|---|---|---|",
    ]  # fmt: skip
    for s in res.specs:
        q = next(q for q in pools.arm(s.arm) if q.question_id in boot.question_ids)
        tok = pools.mean_tokens(s.arm, s.protocol)
        auc = judge_auc(pools, s.arm, s.protocol, boot.question_ids)
        lines.append(f"| {s.arm} | {s.protocol} | {' x '.join(map(str, q.shape(s.protocol)))} | "
                     f"{'-' if tok is None else f'{tok:.0f}'} | "
                     f"{'-' if auc is None else f'{auc:.3f}'} |")  # fmt: skip
    lines += ["", "Judge AUC: how often a right proposal's leaf outscores a wrong one's (0.5 is "
              "chance), over every leaf of the protocol."]  # fmt: skip
    lines += [
        "", f"Proposer accuracy and win rate in percent with {pct} % intervals: paired "
        f"hierarchical bootstrap ({cfg.bootstrap.method} intervals, {cfg.bootstrap.replicates} "
        f"replicates, resampling {', '.join(cfg.bootstrap.levels)}; seed {cfg.seed}). "
        "Basic intervals correct for the bias of best-of-n on resampled pools, so they need not "
        "be centred on the estimate; contrasts are paired (the same resamples for both "
        "settings).", "",
        f"## At Bo{cfg.n[0]} and {n_lab}", "",
        f"| arm | protocol | critic | rebuttal | accuracy Bo{cfg.n[0]} | accuracy {n_lab} | "
        f"win rate Bo{cfg.n[0]} | win rate {n_lab} |",
        "|---|---|---|---|---|---|---|---|",
    ]  # fmt: skip
    for i, s in enumerate(res.specs):
        for b, c in np.ndindex(len(s.m), len(s.r)):
            cells = [_ci(*boot.value(i, metric, (a, b, c)))
                     for metric in ("accuracy", "win_rate") for a in (0, k)]  # fmt: skip
            lines.append(f"| {s.arm} | {s.protocol} | "
                         f"{s.labels('m')[b] if s.protocol != 'proposal' else '-'} | "
                         f"{s.labels('r')[c] if s.depth >= 3 else '-'} | "
                         + " | ".join(cells) + " |")  # fmt: skip
    lines += ["", "## Paired contrasts (points)", "",
              "| contrast | accuracy | win rate | accuracy interval excludes 0 |", "|---|---|---|---|"]  # fmt: skip
    by_name: dict[str, dict] = {}
    for c in res.contrasts:
        by_name.setdefault(c["contrast"], {})[c["metric"]] = c
    for name, d in by_name.items():
        a, w = d["accuracy"], d["win_rate"]
        sig = "yes" if a["low"] > 0 or a["high"] < 0 else "no"
        lines.append(f"| {name} | {_ci(a['estimate'], a['low'], a['high'])} | "
                     f"{_ci(w['estimate'], w['low'], w['high'])} | {sig} |")  # fmt: skip
    has_mesh = any(s.protocol != "proposal" and len(s.m) > 1 for s in res.specs)
    lines += ["", "## Figures", "", "![worms](worms.png)", ""]
    lines += ["![meshes](meshes.png)", ""] if has_mesh else []
    lines += [
              "Tables: `table.csv` (every grid point, averaged, with intervals), "
              "`per_question.csv`, `contrasts.csv`.", ""]  # fmt: skip
    return "\n".join(lines)


def key_metrics(res: BonAnalysis, pools: PoolSet | None = None) -> dict:
    k = res.config.ref_index
    out = {"questions": len(res.boot.question_ids), "dropped_questions": list(res.dropped)}
    for i, s in enumerate(res.specs):
        if pools is not None:
            out[f"{s.key}/judge_auc"] = judge_auc(pools, s.arm, s.protocol, res.boot.question_ids)
        for metric in ("accuracy", "win_rate"):
            est, lo, hi = res.boot.value(i, metric, (k, 0, 0))
            out[f"{s.key}/{metric}@{policy_label(res.config.policies('n')[k])}"] = {
                "estimate": est, "low": lo, "high": hi}  # fmt: skip
    out["contrasts"] = res.contrasts
    return out


def write_figures(res: BonAnalysis, folder) -> list:
    """``worms.png`` (one panel per main-arm protocol, control arms overlaid) and
    ``meshes.png`` (n x m for every protocol with a critic, one panel per rebuttal policy)."""
    from ..report.bon_plots import MeshPanel, WormLine, mesh_figure, worm_figure

    boot = res.boot
    controls = [(i, s) for i, s in enumerate(res.specs) if s.arm != MAIN_ARM]
    panels: dict[str, list[WormLine]] = {}
    for i, s in enumerate(res.specs):
        if s.arm != MAIN_ARM and any(t.arm == MAIN_ARM for t in res.specs):
            continue
        worms = []
        for b, c in np.ndindex(len(s.m), len(s.r)):
            worms.append(_worm(boot, i, s, b, c))
        for j, cs in controls:
            worms.append(_worm(boot, j, cs, 0, 0, color="C3"))
        panels[s.key] = worms
    written = [worm_figure(panels, folder / "worms.png", "proposer pressure grows along a worm")]
    mesh_panels = []
    for i, s in enumerate(res.specs):
        if s.protocol == "proposal" or len(s.m) < 2:
            continue
        for c in range(len(s.r)):
            acc, win = (
                boot.estimate[(i, "accuracy")][..., c],
                boot.estimate[(i, "win_rate")][..., c],
            )
            title = s.key + (f", rebuttal {s.labels('r')[c]}" if s.depth >= 3 else "")
            tandem = [(a, list(s.m).index(n)) for a, n in enumerate(s.n) if n in s.m]
            highlight = [("proposer only", [(a, 0) for a in range(len(s.n))])]
            if len(tandem) > 2:
                highlight.append(("proposer and critic in tandem", tandem))
            mesh_panels.append(MeshPanel(title, win, acc, s.labels("n"), s.labels("m"), highlight))
    if mesh_panels:
        written.append(mesh_figure(mesh_panels, folder / "meshes.png", "n x m meshes"))
    return written


def _worm(boot, i, s, b, c, color=None):
    acc, lo, hi = boot.intervals(i, "accuracy")
    label = s.key
    if s.protocol != "proposal":
        label += f", critic {s.labels('m')[b]}"
    if s.depth >= 3:
        label += f", rebuttal {s.labels('r')[c]}"
    optimised = (s.protocol != "proposal" and s.m[b] not in (None, 1)) or (
        s.depth >= 3 and s.r[c] not in (None, 1)
    )
    from ..report.bon_plots import WormLine

    return WormLine(label, boot.estimate[(i, "win_rate")][:, b, c], acc[:, b, c],
                    s.labels("n"), (lo[:, b, c], hi[:, b, c]), optimised, color)  # fmt: skip
