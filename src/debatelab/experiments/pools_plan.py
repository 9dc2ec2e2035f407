"""``debatelab pools plan``: how many questions and how large pools a stated interval width on a
stated contrast needs, and what they cost, estimated from a pilot run (debatelab.text.plan).

Writes ``plan.csv`` (every candidate size with its questions, calls, tokens and cost) and
``report.md``; prints the cheapest candidates. Token counts per call come from the pilot's own
usage (every question's record), its judge (single-token or K chain-of-thought samples, swapped
orders), prices from --debater-prices / --judge-prices (synchronous prices; the batch column takes
the providers' 50 % discount), and the time on this machine scales the pilot's wall time by
tokens (rough: a different model or back end runs at another speed).
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass, field
from pathlib import Path

from ..atomic import write_atomic
from ..llm.generate import PoolPlan
from ..llm.providers import BATCH_DISCOUNT
from ..report.runs import RunFolder
from ..text.plan import components, parse_contrast
from ..text.pools import protocol_depth
from ..text.readers import read_pools
from .pools import _add_usage, _prices


@dataclass(frozen=True)
class PlanConfig:
    """Settings of one plan."""

    pilot: str = field(default="", metadata={"argument": True})
    """A finished `debatelab pools generate` run folder (or a pool file: then no token counts,
    so calls only)."""
    contrast: str = "critique@n10 - proposal@n10"
    """SETTING - SETTING, each [ARM/]PROTOCOL[@nN,mM,rR] (best-of draws; 1 when left out),
    e.g. 'critique@n10 - proposal@n10': a critic's effect on a Bo10 proposer."""
    width: float = 0.05
    """The interval width wanted on the contrast's accuracy (high minus low)."""
    confidence: float = 0.95
    """Coverage of that interval."""
    sizes: str | None = None
    """Plan only the number of questions for these pool sizes N,M,R (default: a grid)."""
    replicates: int = field(default=400, metadata={"min": 20})
    """Bootstrap replicates per variance component."""
    seed: int = 0
    """Seed of the bootstrap."""
    debater_prices: str = "3,15"
    """USD per million input, output tokens of the debater at synchronous prices."""
    judge_prices: str = "0.2,0.2"
    """USD per million input, output tokens of the judge."""
    show: int = field(default=8, metadata={"min": 1})
    """Candidates printed (all go to plan.csv)."""

    def __post_init__(self):
        if not self.pilot:
            raise ValueError("give the PILOT run folder (a `debatelab pools generate` run)")
        if not Path(self.pilot).exists():
            raise ValueError(f"no pilot run at {self.pilot}")
        parse_contrast(self.contrast)
        if not 0 < self.width < 2:
            raise ValueError(f"--width {self.width}: give an interval width in (0, 2)")
        if not 0 < self.confidence < 1:
            raise ValueError(f"--confidence {self.confidence}: give a coverage in (0, 1)")
        self.fixed_sizes()
        for name in ("debater_prices", "judge_prices"):
            _prices(getattr(self, name), name)

    def fixed_sizes(self) -> tuple[int, int, int] | None:
        if self.sizes is None:
            return None
        try:
            n, m, r = (int(x) for x in self.sizes.split(","))
        except ValueError:
            raise ValueError(f"--sizes {self.sizes!r}: write N,M,R, e.g. 16,4,2") from None
        if min(n, m, r) < 1:
            raise ValueError(f"--sizes {self.sizes!r}: sizes are at least 1")
        return n, m, r


def _pilot_run(pilot: Path) -> tuple[dict, dict[str, tuple[float, float]], float | None]:
    """The pilot run's settings, its mean input and output tokens per call of each role (from
    every question's record, whichever sitting made it) and its wall time when it ran in one
    sitting (else None: a resumed run's wall time covers only its last sitting)."""
    if not pilot.is_dir() or not (pilot / "config.json").is_file():
        return {}, {}, None
    config = json.loads((pilot / "config.json").read_text())
    records = [json.loads(p.read_text()) for p in sorted((pilot / "questions").glob("*.json"))]
    if not records:
        return config, {}, None
    plan = PoolPlan(n=config["n"], m=config["m"], r=config["r"],
                    depth=protocol_depth(config["protocol"]), control=config["control"],
                    swap=config.get("swap", False),
                    judge_samples=config.get("judge_samples", 0))  # fmt: skip
    calls = plan.calls()
    usage: dict[str, list[int]] = {}
    for record in records:
        _add_usage(usage, record.get("usage", {}))
    per_call = {role: (u[0] / (calls[role] * len(records)), u[1] / (calls[role] * len(records)))
                for role, u in usage.items() if calls.get(role)}  # fmt: skip
    wall = None
    metrics_path = pilot / "metrics.json"
    if metrics_path.is_file():
        m = json.loads(metrics_path.read_text())
        if not any(v for k, v in m.items() if k.endswith("_calls_cached")):
            wall = m.get("wall_time_s")
    return config, per_call, wall


def candidates(config: PlanConfig, a, b) -> list[tuple[int, int, int]]:
    fixed = config.fixed_sizes()
    if fixed:
        return [fixed]
    n_min = max(a.n, b.n, 2)
    depth = max(protocol_depth(a.protocol), protocol_depth(b.protocol))
    ns = sorted({n_min, 2 * n_min, 4 * n_min, 8 * n_min})
    ms = sorted({max(a.m, b.m), 2, 4, 8, 16}) if depth >= 2 else [1]
    rs = sorted({max(a.r, b.r), 1, 2, 4, 8}) if depth >= 3 else [1]
    return [(n, m, r) for n in ns for m in ms if m >= max(a.m, b.m)
            for r in rs if r >= max(a.r, b.r)]  # fmt: skip


def run(config: PlanConfig, folder: RunFolder) -> dict:
    a, b = parse_contrast(config.contrast)
    pilot = Path(config.pilot)
    pools = read_pools(pilot)
    comp = components(pools, a, b, replicates=config.replicates, seed=config.seed)
    if comp.total == 0 and comp.between == 0:
        raise ValueError(f"the pilot's contrast {a} - {b} is the same in every bootstrap "
                         "replicate (no spread to scale from): the pilot needs questions whose "
                         "proposals are sometimes right and sometimes wrong, e.g. a pilot run "
                         "with --pilot 8 selection")  # fmt: skip
    folder.seeds["bootstrap"] = config.seed
    pilot_config, per_call, wall = _pilot_run(pilot)
    pilot_tokens = None
    if per_call and wall:
        pilot_metrics = json.loads((pilot / "metrics.json").read_text())
        pilot_tokens = sum(pilot_metrics.get(f"{r}_completion_tokens", 0)
                           + pilot_metrics.get(f"{r}_prompt_tokens", 0) / 4 for r in per_call)  # fmt: skip
    judge_samples = pilot_config.get("judge_samples", 0)
    swap = pilot_config.get("swap", False)
    depth = max(protocol_depth(a.protocol), protocol_depth(b.protocol))
    control = "control" in (a.arm, b.arm)
    prices = {"debater": _prices(config.debater_prices, "debater_prices"),
              "judge": _prices(config.judge_prices, "judge_prices")}  # fmt: skip
    rows = []
    for n, m, r in candidates(config, a, b):
        q = comp.questions_for(config.width, n, m, r, config.confidence)
        calls = PoolPlan(n=n, m=m, r=r, depth=depth, control=control, swap=swap,
                         judge_samples=judge_samples).calls()  # fmt: skip
        row = {"N": n, "M": m, "R": r, "questions": q,
               "width": round(comp.width(q, n, m, r, config.confidence), 4),
               "calls": sum(calls.values()) * q}  # fmt: skip
        if per_call:
            cost, tokens, weighted = 0.0, [0.0, 0.0], 0.0
            for role, count in calls.items():
                inp, out = per_call.get(role, per_call.get("proposer", (0.0, 0.0)))
                price = prices["judge" if role == "judge" else "debater"]
                tokens[0] += count * q * inp
                tokens[1] += count * q * out
                weighted += count * q * (out + inp / 4)
                cost += count * q * (inp * price[0] + out * price[1]) / 1e6
            row.update({"input_tokens": round(tokens[0]), "output_tokens": round(tokens[1]),
                        "cost_usd_sync": round(cost, 2),
                        "cost_usd_batch": round(cost * BATCH_DISCOUNT, 2)})  # fmt: skip
            if pilot_tokens:
                row["hours_here"] = round(wall * weighted / pilot_tokens / 3600, 2)
        rows.append(row)
    key = "cost_usd_sync" if per_call else "calls"
    rows.sort(key=lambda row: (row[key], row["questions"]))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    write_atomic(folder.path / "plan.csv", lambda p: p.write_text(buf.getvalue()))
    lines = [f"# Plan: {a} - {b}, interval width {config.width} at {config.confidence:.0%}", "",
             f"Pilot: {pilot} ({comp.questions} questions, pools {comp.sizes[0]} x "
             f"{comp.sizes[1]} x {comp.sizes[2]}); the contrast there: {comp.estimate:+.3f}.",
             f"Bootstrap variance ({config.replicates} replicates each): between questions "
             f"{comp.between:.2e}, proposals {comp.within[0]:.2e}, critiques "
             f"{comp.within[1]:.2e}, rebuttals {comp.within[2]:.2e} (all levels together "
             f"{comp.total:.2e}). A pilot of {comp.questions} questions estimates the variance "
             f"to about +-{100 * (2 / max(comp.questions - 1, 1)) ** 0.5:.0f} % (so the "
             f"questions needed by as much), widths to half that.", "",
             "| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]  # fmt: skip
    lines += ["| " + " | ".join(f"{v:,}" if isinstance(v, int) else str(v) for v in row.values())
              + " |" for row in rows[: config.show]]  # fmt: skip
    lines += ["", "Costs at the given synchronous prices and with the batch APIs' 50 % "
              "discount; hours_here scales the pilot's wall time by tokens (rough). Every "
              "candidate: plan.csv."]  # fmt: skip
    text = "\n".join(lines) + "\n"
    (folder.path / "report.md").write_text(text)
    for line in lines[:4] + lines[5 : 7 + config.show]:
        folder.echo(line)
    best = rows[0]
    return {"contrast_estimate": round(comp.estimate, 4), "pilot_questions": comp.questions,
            "variance_between": comp.between, "variance_proposals": comp.within[0],
            "variance_critiques": comp.within[1], "variance_rebuttals": comp.within[2],
            **{f"best_{k}": v for k, v in best.items()}}  # fmt: skip
