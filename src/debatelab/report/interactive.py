"""Interactive figures of a run folder, as Plotly figure objects (JSON): what ``debatelab view``
draws. Each is built from the files the run wrote, so a figure shows exactly the run's numbers:

- ``sweep_arrays.npz`` (``sweep``, ``study``): capability curves per metric and the debates'
  heat maps over (A's capability, B's capability);
- ``table.csv`` (``bon``): worms (win rate against accuracy as the proposer's n grows, one per
  arm, protocol, critic m and rebuttal r) with a slider over n, and the proposer/critic mesh;
- ``history.json`` / ``histories.json`` (judges and debaters trained), else the run log's epoch
  events: training curves, the published curves dashed where the run recorded them
  (``published_curves.json``);
- the pools' per-role calls and tokens (``pools generate``), from its metrics.

Plotly's Python package ships the JavaScript that draws them (:func:`plotly_js`), so the pages
work offline.
"""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..runlog import LOG_NAME, read_log

METRIC_LABELS = {"selection": "selection accuracy", "judge": "judge accuracy", "win": "win rate"}
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")  # fmt: skip


@dataclass
class Figure:
    """One figure of a run page."""

    id: str
    """Unique within the run (an HTML id)."""
    title: str
    figure: dict
    """Plotly's figure as JSON (``data`` and ``layout``)."""
    kind: str = "plot"
    """plot, heatmap, worms or curves: how the page treats it (worms get the n slider)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What the page's controls need (worms: each marker trace's n values and points)."""

    def as_json(self) -> dict:
        return {"id": self.id, "title": self.title, "figure": self.figure, "kind": self.kind,
                "extra": self.extra}  # fmt: skip


#: A run's example plays as data: written by ``sweep`` (exact 4-turn play on cells) and
#: ``pixels`` (the 2018 game), replayed move by move by ``debatelab view``.
PLAYS_FILE = "plays.json"


def play_record(image: np.ndarray, moves: list[tuple[str, list[int]]], label: int, claim: int,
                caption: str, index: int) -> dict:  # fmt: skip
    """One example play: the image (grey, scaled to [0, 1]; a colour image's channels
    averaged), each move's player and the cells it reveals (row-major indices on the
    ``grid x grid`` cells), the true label, the claim and a caption."""
    img = np.asarray(image, dtype=float)
    if img.ndim == 3:  # (C, H, W)
        img = img.mean(axis=0)
    img = (img - img.min()) / max(float(img.max() - img.min()), 1e-12)
    return {
        "index": int(index),
        "image": np.round(img, 3).tolist(),
        "label": int(label),
        "claim": int(claim),
        "caption": caption,
        "moves": [{"player": who, "cells": [int(c) for c in cells]} for who, cells in moves],
    }


def write_plays(path: Path, grid: int, title: str, plays: list[dict]) -> Path:
    """Write example plays (:func:`play_record`) for the viewer, atomically."""
    from ..atomic import write_json

    return write_json(Path(path), {"grid": int(grid), "title": title, "plays": plays})


def plays_figures(path: Path) -> list[Figure]:
    """The example plays, replayed move by move (the page's slider over moves and a menu of
    plays): the image shows only the cells revealed so far, each framed in its player's
    colour with its turn number."""
    import plotly.graph_objects as go

    record = json.loads(Path(path).read_text())
    if not record.get("plays"):
        return []
    first = record["plays"][0]
    size = len(first["image"])
    heat = go.Heatmap(z=first["image"], colorscale="Greys", showscale=False,
                      zmin=0, zmax=1, hovertemplate="row %{y}, column %{x}<extra></extra>")  # fmt: skip
    layout = {"height": 460, "width": 480, "xaxis": {"visible": False, "range": [-0.5, size - 0.5]},
              "yaxis": {"visible": False, "autorange": "reversed", "scaleanchor": "x"},
              "plot_bgcolor": "#9e9e9e"}  # unrevealed cells  # fmt: skip
    return [
        Figure(
            "plays",
            record.get("title") or "Example plays",
            _fig([heat], **layout),
            kind="plays",
            extra={"grid": record["grid"], "plays": record["plays"]},
        )
    ]


def plotly_js() -> Path:
    """The plotly.js bundle shipped inside Plotly's Python package."""
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _fig(data: list, **layout) -> dict:
    import plotly.graph_objects as go

    base = {"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "template": "plotly_white",
            "height": 420}  # fmt: skip
    # through plotly.io's encoder: numpy arrays become plain lists the page can read
    return json.loads(go.Figure(data=data, layout={**base, **layout}).to_json())


def sweep_figures(path: Path) -> list[Figure]:
    """Capability curves (one figure per metric) and heat maps (one per debate and metric)."""
    import plotly.graph_objects as go

    with np.load(path) as saved:
        arrays = {k: saved[k] for k in saved.files}
    out = []
    metrics = [m for m in METRIC_LABELS if any(k.endswith(f"_{m}") for k in arrays)]
    curves = {m.group(1): (m.group(1), "") for k in arrays if (m := re.fullmatch(r"(.+)_k", k))
              and not k.endswith("_diag_k")}  # fmt: skip
    curves |= {m.group(1): (m.group(1), "_diag") for k in arrays
               if (m := re.fullmatch(r"(.+)_diag_k", k))}  # fmt: skip
    for metric in metrics:
        data = []
        for i, (name, (prefix, part)) in enumerate(sorted(curves.items())):
            ys = arrays.get(f"{prefix}{part}_{metric}")
            if ys is None:
                continue
            label = f"{name} (diagonal)" if part else name
            data.append(go.Scatter(x=arrays[f"{prefix}{part}_k"], y=100 * np.asarray(ys),
                                   mode="lines+markers", name=label,
                                   line={"color": COLORS[i % len(COLORS)]},
                                   hovertemplate="capability %{x}<br>%{y:.2f} %<extra>"
                                                 f"{label}</extra>"))  # fmt: skip
        out.append(Figure(f"curve-{metric}", f"Capability curves: {METRIC_LABELS[metric]}",
                          _fig(data, xaxis={"type": "log", "title": "capability (options ranked)"},
                               yaxis={"title": f"{METRIC_LABELS[metric]} (%)"}),
                          kind="curves"))  # fmt: skip
    for name in sorted({m.group(1) for k in arrays if (m := re.fullmatch(r"(.+)_grid_ka", k))}):
        ka, kb = arrays[f"{name}_grid_ka"], arrays[f"{name}_grid_kb"]
        for metric in metrics:
            grid = arrays.get(f"{name}_grid_{metric}")
            if grid is None:
                continue
            heat = go.Heatmap(z=100 * np.asarray(grid, dtype=float), x=[str(int(k)) for k in kb],
                              y=[str(int(k)) for k in ka], colorscale="Viridis",
                              colorbar={"title": "%"},
                              hovertemplate="A's capability %{y}<br>B's capability %{x}<br>"
                                            "%{z:.4f} %<extra></extra>")  # fmt: skip
            out.append(Figure(f"heat-{name}-{metric}", f"{name}: {METRIC_LABELS[metric]}",
                              _fig([heat], height=520,
                                   xaxis={"title": "B's capability", "type": "category"},
                                   yaxis={"title": "A's capability", "type": "category"}),
                              kind="heatmap"))  # fmt: skip
    return out


def _bo(value: str) -> int | None:
    """'Bo8' -> 8 (the table's n, m and r labels)."""
    m = re.fullmatch(r"Bo(\d+)", value.strip())
    return int(m.group(1)) if m else None


def bon_figures(path: Path) -> list[Figure]:
    """Worms (with the page's slider over n, and a toggle per arm and protocol) and the
    proposer/critic mesh, from a ``bon`` run's ``table.csv``."""
    import plotly.graph_objects as go

    with open(path, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    series: dict[tuple, list[dict]] = {}
    for row in rows:
        key = (row["arm"], row["protocol"], row["m"], row["r"])
        series.setdefault(key, []).append(row)
    lines, markers, marker_meta = [], [], []
    for i, (key, part) in enumerate(series.items()):
        arm, protocol, m, r = key
        part.sort(key=lambda row: _bo(row["n"]) or 0)
        ns = [_bo(row["n"]) for row in part]
        acc = [100 * float(row["accuracy"]) for row in part]
        win = [100 * float(row["win_rate"]) for row in part]
        label = " ".join(x for x in (arm, protocol, f"critic {m}" if m else "",
                                     f"rebuttal {r}" if r else "") if x)  # fmt: skip
        color = COLORS[i % len(COLORS)]
        lines.append(go.Scatter(x=win, y=acc, mode="lines+markers", name=label,
                                legendgroup=label, line={"color": color}, marker={"size": 5},
                                customdata=ns, hovertemplate="Bo%{customdata}: win rate %{x:.2f} %,"
                                " accuracy %{y:.2f} %<extra>" + label + "</extra>"))  # fmt: skip
        markers.append(go.Scatter(x=[win[0]], y=[acc[0]], mode="markers", showlegend=False,
                                  legendgroup=label, marker={"size": 13, "color": color,
                                                             "line": {"width": 2, "color": "black"}},
                                  hovertemplate=f"{label}<extra>current n</extra>"))  # fmt: skip
        marker_meta.append({"arm": arm, "protocol": protocol, "label": label, "n": ns,
                            "accuracy": acc, "win_rate": win})  # fmt: skip
    data = lines + markers
    worms = Figure(
        "worms",
        "Worms: accuracy against win rate as the proposer's n grows",
        _fig(
            data,
            height=520,
            xaxis={"title": "proposer's win rate (%)"},
            yaxis={"title": "accuracy (%)"},
        ),
        kind="worms",
        extra={
            "first_marker": len(lines),
            "series": marker_meta,
            "n": sorted({n for s in marker_meta for n in s["n"] if n}),
            "arms": sorted({s["arm"] for s in marker_meta}),
            "protocols": list(dict.fromkeys(s["protocol"] for s in marker_meta)),
        },
    )
    out = [worms]
    # the mesh: at each critic m, accuracy against the proposer's n (debate protocols only)
    mesh = []
    for i, ((arm, protocol, m, r), part) in enumerate(series.items()):
        if not m:
            continue
        label = f"{arm} {protocol} critic {m}" + (f" rebuttal {r}" if r else "")
        mesh.append(go.Scatter(x=[_bo(row["n"]) for row in part],
                               y=[100 * float(row["accuracy"]) for row in part],
                               error_y={"type": "data", "symmetric": False,
                                        "array": [100 * (float(row["accuracy_high"])
                                                         - float(row["accuracy"])) for row in part],
                                        "arrayminus": [100 * (float(row["accuracy"])
                                                              - float(row["accuracy_low"]))
                                                       for row in part]},
                               mode="lines+markers", name=label,
                               line={"color": COLORS[i % len(COLORS)]}))  # fmt: skip
    if mesh:
        out.append(Figure("mesh", "Mesh: accuracy against the proposer's n at each critic m",
                          _fig(mesh, xaxis={"title": "proposer's n (best of n)", "type": "log"},
                               yaxis={"title": "accuracy (%), 95 % interval"})))  # fmt: skip
    return out


def _histories(folder: Path) -> dict[str, list[dict]]:
    if (folder / "histories.json").is_file():
        value = json.loads((folder / "histories.json").read_text())
        return {str(k): v for k, v in value.items() if isinstance(v, list)}
    if (folder / "history.json").is_file():
        value = json.loads((folder / "history.json").read_text())
        if isinstance(value, list):
            return {"this run": value}
        return {str(k): v for k, v in value.items() if isinstance(v, list)}
    # a run still training (or one whose history is in the log only): the log's epochs
    epochs = [e for e in read_log(folder / LOG_NAME) if e.get("event") == "epoch"]
    by_label: dict[str, list[dict]] = {}
    for e in epochs:
        by_label.setdefault(str(e.get("stage") or "this run"), []).append(e)
    return by_label


def training_figures(folder: Path) -> list[Figure]:
    """One figure per metric the histories record (judge, selection, belief, loss, accuracy),
    a line per trained model, the published curve dashed where the run saved it."""
    import plotly.graph_objects as go

    histories = _histories(folder)
    if not histories:
        return []
    published = {}
    if (folder / "published_curves.json").is_file():
        published = json.loads((folder / "published_curves.json").read_text())
    skip = {"epoch", "epochs", "images_seen", "seconds", "wall_seconds", "time", "sitting", "event",
            "message", "stage", "eta_s", "wall_time_s", "lr", "seed"}  # fmt: skip
    metrics = list(dict.fromkeys(k for h in histories.values() for e in h for k, v in e.items()
                                 if k not in skip and not k.endswith("seconds")
                                 and not k.startswith("n_") and isinstance(v, int | float)))  # fmt: skip
    out = []
    for metric in metrics:
        data = []
        for i, (label, history) in enumerate(histories.items()):
            points = [(e.get("epoch", j + 1), e[metric]) for j, e in enumerate(history)
                      if isinstance(e.get(metric), int | float)]  # fmt: skip
            scale = 1 if "loss" in metric else 100
            color = COLORS[i % len(COLORS)]
            data.append(go.Scatter(x=[p[0] for p in points], y=[scale * p[1] for p in points],
                                   mode="lines+markers", name=label, legendgroup=label,
                                   line={"color": color}))  # fmt: skip
            pub = published.get(label, {}).get(metric)
            if pub:
                data.append(go.Scatter(x=list(range(1, len(pub) + 1)), y=pub, mode="lines",
                                       name=f"{label} (published)", legendgroup=label,
                                       line={"color": color, "dash": "dash"}))  # fmt: skip
        unit = "" if "loss" in metric else " (%)"
        out.append(Figure(f"training-{metric}", f"Training: {metric}",
                          _fig(data, xaxis={"title": "epoch"}, yaxis={"title": metric + unit}),
                          kind="curves"))  # fmt: skip
    return out


def pools_figures(metrics: dict) -> list[Figure]:
    """Calls and tokens per role of a ``pools generate`` run."""
    import plotly.graph_objects as go

    roles = [k[: -len("_calls_made")] for k in metrics if k.endswith("_calls_made")]
    if not roles:
        return []
    data = [
        go.Bar(x=roles, y=[metrics.get(f"{r}_{what}", 0) for r in roles], name=label)
        for what, label in (("calls_made", "calls made"), ("calls_cached", "from the cache"))
    ]
    tokens = [go.Bar(x=roles, y=[metrics.get(f"{r}_{what}", 0) for r in roles], name=label)
              for what, label in (("prompt_tokens", "input tokens"),
                                  ("completion_tokens", "output tokens"))]  # fmt: skip
    return [
        Figure("calls", "Calls per role", _fig(data, barmode="stack", height=360)),
        Figure("tokens", "Tokens per role", _fig(tokens, barmode="group", height=360)),
    ]


def run_figures(folder: Path, metrics: dict | None = None,
                problems: list[str] | None = None) -> list[Figure]:  # fmt: skip
    """Every interactive figure the run folder's files allow (none for a run that wrote none
    of them yet). A file that cannot be read (one being written, a plug-in's table of other
    columns) costs its own figures only; why goes to ``problems``."""
    folder = Path(folder)
    builders = [(name, build) for name, build in (
        ("sweep_arrays.npz", sweep_figures), ("table.csv", bon_figures),
        (PLAYS_FILE, plays_figures)) if (folder / name).is_file()]  # fmt: skip
    out: list[Figure] = []
    for name, build in [*builders, ("histories", lambda _: training_figures(folder)),
                        ("metrics", lambda _: pools_figures(metrics or {}))]:  # fmt: skip
        try:
            out += build(folder / name)
        except Exception as exc:  # the page shows the rest, and says what it left out
            if problems is not None:
                problems.append(f"{name}: {type(exc).__name__}: {exc}")
    return out
