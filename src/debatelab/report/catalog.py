"""The catalog of run folders: which runs lie under some folders, and for each its command,
settings, status, wall time and headline metrics, read from the files every run writes
(``config.json``, ``manifest.json``, ``metrics.json``, ``log.jsonl``). It reads and never
writes: ``debatelab view`` shows what it finds.

A run's status: ``finished`` (its last sitting wrote the manifest and closed), ``failed`` (its
last sitting ended on an error), ``running`` (its last sitting is open and its log was written
within :data:`RUNNING_SECONDS`) or ``stopped`` (open, and silent since: a killed run, which
resumes when rerun with the same settings).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..runlog import LOG_NAME, read_log, sittings_wall_time

#: A sitting whose log has been silent this long is taken as stopped, not running (a running
#: command logs its stages at least every 30 s: :data:`debatelab.progress.PROGRESS_SECONDS`).
RUNNING_SECONDS = 300.0
#: How deep under a named folder runs are looked for (runs/<run>/<variant> is depth 2).
MAX_DEPTH = 4
#: Headline metrics per command, in order; a command not listed shows its first scalars.
HEADLINES = {
    "run": ("gold_accuracy", "sparse_accuracy", "ensemble_accuracy",
            "consultancy_selection_accuracy", "debate2_selection_accuracy",
            "debate4_selection_accuracy"),
    "sweep": ("best_debate2_selection_accuracy", "best_debate4_selection_accuracy",
              "best_consultancy_confidence_selection_accuracy", "n_images"),
    "pixels": ("honest_win_rate_precommit", "honest_win_rate_no_precommit", "judge_accuracy"),
    "pools-generate": ("n_questions", "main_proposal_accuracy", "control_proposal_accuracy",
                       "cost_usd"),
}  # fmt: skip
#: Metrics keys that hold a standard error: ``<key>_se`` beside ``<key>``.
SE_SUFFIX = "_se"


@dataclass
class RunSummary:
    """What the index shows of one run folder."""

    id: str
    """A name for the run, unique in the catalog and safe in a URL and a file name."""
    path: Path
    """The run folder."""
    label: str
    """The folder's path relative to the folder it was found under."""
    command: str
    """The command that made it (``run``, ``sweep``, ``judges-train``, ``bon``, ...)."""
    settings: dict[str, Any]
    """Its ``config.json`` without the command, nested sections flattened to dotted keys."""
    status: str
    """finished, failed, running or stopped (module docstring)."""
    started_at: str | None
    """When its first sitting started (UTC, ISO 8601)."""
    wall_time_s: float | None
    """The seconds its sittings took, added up (a killed one until its last event); the
    manifest's wall time for a run without a log."""
    sittings: int
    """How many times it was opened (a resumed run has more than one)."""
    metrics: dict[str, Any] = field(default_factory=dict)
    """Its ``metrics.json`` (empty until it finishes), scalars only."""
    headline: dict[str, Any] = field(default_factory=dict)
    """The few metrics the index shows."""
    manifest: dict[str, Any] = field(default_factory=dict)
    """Its ``manifest.json`` (empty until it finishes)."""
    parent: str | None = None
    """The id of the run it belongs to (a study's variants), if any."""

    def as_json(self) -> dict:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "path"}
        out["path"] = str(self.path)
        return out


def flatten(record: dict, prefix: str = "") -> dict[str, Any]:
    """Nested settings as dotted keys (``train.epochs``); lists stay values."""
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def _read_json(path: Path) -> dict:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # absent, or being written: the next look reads it
        return {}
    return value if isinstance(value, dict) else {}


def run_id(label: str, path: Path) -> str:
    """A URL- and file-safe id: the label's slug and a short hash of the run's resolved path
    (two viewed folders may each hold a run of one label)."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label).strip("-.")[:60] or "run"
    return f"{slug}-{hashlib.sha1(str(Path(path).resolve()).encode()).hexdigest()[:8]}"


#: The log events that open or close a sitting.
SITTING_MARKS = ("sitting_started", "sitting_finished", "error")


def _status(events: list[dict], finished: bool, log_age: float | None) -> str:
    last = [e for e in events if e.get("event") in SITTING_MARKS]
    if not last:  # a run from before the log existed, or one that never opened it
        return "finished" if finished else "stopped"
    if last[-1]["event"] == "sitting_finished":
        return "finished"
    if last[-1]["event"] == "error":  # an interrupted sitting (Ctrl+C) resumes: stopped
        return "stopped" if last[-1].get("status") == "interrupted" else "failed"
    return "running" if log_age is not None and log_age < RUNNING_SECONDS else "stopped"


def _wall_time(events: list[dict], manifest: dict) -> float | None:
    """The seconds of every sitting (a resumed run's add up), the open one's so far; the
    manifest's wall time for a run without a log."""
    return sittings_wall_time(events) if events else manifest.get("wall_time_s")


def headline(command: str, metrics: dict) -> dict[str, Any]:
    """The metrics the index shows for a run of ``command``."""
    keys = [k for k in HEADLINES.get(command, ()) if k in metrics]
    if not keys:
        keys = [k for k, v in metrics.items() if isinstance(v, int | float)
                and not k.endswith(SE_SUFFIX)][:4]  # fmt: skip
    return {k: metrics[k] for k in keys}


#: The files a run's summary is made from.
SUMMARY_FILES = ("config.json", "manifest.json", "metrics.json", LOG_NAME)
#: Per run folder: its files' (mtime, size, inode) when last summarised, that summary and its
#: log's last sitting event; asked again, the catalog reads only the runs whose files changed
#: (a running run's log), not every log of every run.
_SUMMARIES: dict[Path, tuple[tuple, RunSummary, dict | None]] = {}


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _summarize(path: Path, label: str) -> tuple[RunSummary, dict | None]:
    config = _read_json(path / "config.json")
    manifest = _read_json(path / "manifest.json")
    metrics = {k: v for k, v in _read_json(path / "metrics.json").items()
               if isinstance(v, int | float | str | bool) or v is None}  # fmt: skip
    events = read_log(path / LOG_NAME)
    command = str(config.get("command", manifest.get("command", "?"))).replace(" ", "-")
    starts = [e for e in events if e.get("event") == "sitting_started"]
    sittings = [e for e in events if e.get("event") in SITTING_MARKS]
    summary = RunSummary(
        id=run_id(label, path), path=path, label=label, command=command,
        settings=flatten({k: v for k, v in config.items() if k != "command"}), status="",
        started_at=starts[0]["time"] if starts else manifest.get("started_at"),
        wall_time_s=_wall_time(events, manifest), sittings=len(starts),
        metrics=metrics, headline=headline(command, metrics), manifest=manifest,
    )  # fmt: skip
    return summary, (sittings[-1] if sittings else None)


def summarize(path: Path, label: str, now: float | None = None) -> RunSummary:
    """The summary of the run folder ``path`` (it holds a ``config.json``); its files are read
    again only when they changed since the last summary of the same folder."""
    now = time.time() if now is None else now
    path = Path(path)
    stamps = tuple(_stamp(path / name) for name in SUMMARY_FILES)
    known = _SUMMARIES.get(path)
    if known is None or known[0] != stamps or known[1].label != label:
        known = (stamps, *_summarize(path, label))
        _SUMMARIES[path] = known
    _, summary, last = known
    log = stamps[SUMMARY_FILES.index(LOG_NAME)]
    log_age = None if log is None else now - log[0] / 1e9
    # a copy: callers may change what they are given without changing the next request's
    return replace(summary, settings=dict(summary.settings), metrics=dict(summary.metrics),
                   headline=dict(summary.headline), manifest=dict(summary.manifest),
                   status=_status([last] if last else [], bool(summary.manifest), log_age))  # fmt: skip


def find_runs(folders: list[Path], now: float | None = None) -> list[RunSummary]:
    """Every run folder at or under ``folders`` (down to :data:`MAX_DEPTH`), newest first;
    a run inside another (a study's variants) names it as its parent."""
    found: dict[Path, tuple[str, Path]] = {}
    for root in folders:
        root = Path(root)
        if not root.is_dir():
            raise FileNotFoundError(f"{root}: no such folder; name folders that hold run "
                                    "folders (by default ./runs)")  # fmt: skip
        base = root.parent if (root / "config.json").is_file() else root
        _walk(root, base, 0, found)
    runs = [summarize(p, label, now) for p, (label, _) in found.items()]
    roots = [Path(root).resolve() for root in folders]
    for gone in [p for p in _SUMMARIES if p not in found
                 and any(p.is_relative_to(r) for r in roots)]:  # fmt: skip
        del _SUMMARIES[gone]  # a run folder deleted, or moved out of view
    ids = {r.path: r.id for r in runs}
    for r in runs:
        parent = next((ids[p] for p in r.path.parents if p in ids), None)
        r.parent = parent
    # newest first, each run's inner runs (a study's variants) right after it
    runs.sort(key=lambda r: (r.started_at or "", r.label), reverse=True)
    children: dict[str | None, list[RunSummary]] = {}
    for r in runs:
        children.setdefault(r.parent, []).append(r)
    ordered: list[RunSummary] = []

    def place(parent: str | None) -> None:
        for r in children.get(parent, []):
            ordered.append(r)
            place(r.id)

    place(None)
    return ordered


def _walk(folder: Path, base: Path, depth: int, found: dict) -> None:
    if (folder / "config.json").is_file():
        found[folder.resolve()] = (folder.relative_to(base).as_posix() or folder.name, base)
    if depth >= MAX_DEPTH:
        return
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir()
                          and not p.name.startswith(".") and not p.is_symlink())  # fmt: skip
    except OSError:
        return
    for child in children:
        _walk(child, base, depth + 1, found)
