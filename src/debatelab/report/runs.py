"""Run folders: every run writes its resolved config, a manifest of its provenance and its
metrics, atomically, into one folder."""

from __future__ import annotations

import datetime as dt
import json
import platform
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, is_dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..atomic import write_json
from ..configs import compared_settings, config_fields, option_label
from ..errors import DebatelabError
from ..options import check_config
from ..output_folders import check_output_folder, make_output_folder, move_aside
from ..runlog import LOG_NAME, RunLog, read_log, sittings_wall_time


class RunFolderMismatch(DebatelabError):
    """A run folder holds a run made with other settings."""


LIBRARIES = ("debatelab", "torch", "numpy", "zarr", "matplotlib", "click", "tqdm", "pillow")


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def git_state(where: Path | None = None) -> dict[str, Any]:
    """Commit and dirty flag of the git checkout holding the package source, if any."""
    where = where or Path(__file__).resolve().parent
    commit = _git(["rev-parse", "HEAD"], where)
    if commit is None:
        return {"git_commit": None, "git_dirty": None}
    status = _git(["status", "--porcelain", "--untracked-files=no"], where)
    return {"git_commit": commit, "git_dirty": bool(status)}


def library_versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in LIBRARIES:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = None
    return found


def device_description(device: str = "cpu") -> str:
    import torch

    if device.startswith("cuda") and torch.cuda.is_available():
        return f"{device} ({torch.cuda.get_device_name(torch.device(device))})"
    return f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def default_run_dir(command: str, root: Path | None = None) -> Path:
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return (root or Path("runs")) / f"{stamp}-{command}"


def _plain(value: Any) -> Any:
    """JSON's view of a value (tuples become lists), for comparing configs."""
    return json.loads(json.dumps(value, default=list))


def _flat(settings: dict, prefix: str = "") -> dict:
    """Nested settings as ``{"analysis.bootstrap.replicates": 1000, ...}``."""
    out = {}
    for key, value in settings.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def holds_run(path: Path) -> bool:
    """Whether the folder ``path`` holds a debatelab run: a ``config.json`` naming its
    command."""
    try:
        record = json.loads((Path(path) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(record, dict) and "command" in record


class RunFolder:
    """One run's folder: ``config.json`` at start, ``metrics.json`` and ``manifest.json`` at end.

    Opening it first checks every setting (:func:`debatelab.options.check_config`) and that the
    folder may be written (:func:`debatelab.output_folders.check_output_folder`: new, empty or a
    run folder; never the current or home folder, nor a git repository), so bad input stops the
    run before anything is touched. A folder that already holds a run is compared by its
    ``config.json`` with ``config``: the same settings resume (finished chunks are reused);
    other settings refuse with an error naming the fields, unless ``force``, which moves the old
    run aside (to ``<folder>.replaced-<time>``; nothing is deleted) and starts afresh. Settings
    marked ``compare=False`` in the config dataclass (workers, threads) may differ.

    The folder also carries where the run reads and writes (``data_dir``, ``cache_dir``), whether
    it shows progress bars, and ``echo``, where it reports what a person should read.
    """

    def __init__(self, path: Path, command: str, config: Any, seeds: dict | None = None,
                 device: str = "cpu", force: bool = False, data_dir: Path | None = None,
                 cache_dir: Path | None = None, progress: bool = True,
                 echo: Callable[[str], None] | None = None):  # fmt: skip
        self.path = Path(path)
        self.command = command
        self.seeds = seeds or {}
        self.device = device
        self.data_dir, self.cache_dir, self.progress = data_dir, cache_dir, progress
        self.echo = echo or (lambda text: None)
        self.extra: dict[str, Any] = {}
        """Entries the run adds to its manifest (store paths, checkpoints)."""
        if is_dataclass(config):
            check_config(config)
        cfg = asdict(config) if is_dataclass(config) else dict(config)
        record = {"command": command, **cfg}
        check_output_folder(self.path, holds_run)
        if (self.path / "config.json").exists() and self._holds_results():
            if force:
                aside = move_aside(self.path)
                self.echo(f"--force: moved the run that was in {self.path} to {aside}")
            else:
                self._check_resume(config, record)
        make_output_folder(self.path)
        self.log = RunLog(self.path, command)
        """The run log (``log.jsonl``; stage lines when the output is not a terminal)."""
        self.started = time.time()
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.git = git_state()  # the code as it was when the run started
        try:
            write_json(self.path / "config.json", record)
        except OSError as exc:
            raise RunFolderMismatch(f"--out {self.path}: cannot write into it ({exc.strerror}); "
                                    "name a folder you can write to") from None  # fmt: skip

    def _holds_results(self) -> bool:
        """Anything besides config.json: a run that stopped before writing anything else (bad
        input found after the folder was opened) leaves nothing to protect."""
        return any(p.name not in ("config.json", LOG_NAME) for p in self.path.iterdir())

    def _check_resume(self, config: Any, record: dict) -> None:
        try:
            old = json.loads((self.path / "config.json").read_text())
        except (OSError, ValueError) as exc:
            raise RunFolderMismatch(
                f"run folder {self.path} has an unreadable config.json ({exc}); use another "
                "--out, or --force to start afresh there"
            ) from None
        new = _flat(_plain(compared_settings(config) if is_dataclass(config) else record))
        new["command"] = self.command
        old = _flat(old)
        old.setdefault("command", new["command"])  # folders from before the field existed
        options, defaults = {}, {}
        if is_dataclass(config):  # name each setting as the command line spells it
            for f in config_fields(type(config)):
                options[".".join(f.path)] = option_label(f)
                defaults[".".join(f.path)] = _plain(f.metadata.get("before", f.default))
        # a setting a folder's config lacks was added since: that run had its default then
        diff = [f"{options.get(k, k)}: {old.get(k, defaults.get(k, '(unset)'))!r} there, "
                f"{new[k]!r} now" for k in sorted(new)
                if old.get(k, defaults.get(k, "(unset)")) != new[k]]  # fmt: skip
        if diff:
            raise RunFolderMismatch(
                f"run folder {self.path} holds a run with other settings ({'; '.join(diff)}); "
                "rerun with the same settings to resume, use another --out, or --force to "
                "start afresh there"
            )

    def file(self, name: str) -> Path:
        return self.path / name

    def write_metrics(self, metrics: dict[str, Any]) -> Path:
        return write_json(self.path / "metrics.json", metrics)

    def finish(self, metrics: dict[str, Any] | None = None, **extra: Any) -> Path:
        """Write metrics (if given) and the manifest; return the folder. The manifest's
        ``wall_time_s`` is this sitting's, ``wall_time_total_s`` that of every sitting so far
        (the earlier ones read from the run log)."""
        if metrics is not None:
            self.write_metrics(metrics)
        wall = round(time.time() - self.started, 3)
        # a resumed run's earlier sittings, from its log: the sittings before this one's start
        events = read_log(self.path / LOG_NAME)
        starts = [i for i, e in enumerate(events) if e.get("event") == "sitting_started"]
        earlier = sittings_wall_time(events[: starts[-1]]) if starts else 0.0
        manifest = {
            "command": self.command,
            "argv": sys.argv,
            "started_at": self.started_at,
            "wall_time_s": wall,
            "wall_time_total_s": round(earlier + wall, 3),
            "sittings": max(1, len(starts)),
            "seeds": self.seeds,
            "device": device_description(self.device),
            "platform": platform.platform(),
            "versions": library_versions(),
            "version": library_versions()["debatelab"],
            **self.git,
            **self.extra,
            **extra,
        }
        write_json(self.path / "manifest.json", manifest)
        self.log.close()
        return self.path

    def fail(self, message: str, status: str = "error") -> None:
        """Log that the run stopped on an error (what the user reads is ``message``), or was
        interrupted (``status="interrupted"``: Ctrl+C, a run to resume)."""
        self.log.close(status, message)

    def __enter__(self) -> RunFolder:
        return self

    def __exit__(self, kind, exc, traceback) -> None:
        """Used as a context, the folder's log is closed however the block ends: an exception
        is logged as the sitting's error (a run left open would keep listening to the next)."""
        if exc is not None:
            self.fail(
                f"{kind.__name__}: {exc}",
                "interrupted" if issubclass(kind, KeyboardInterrupt) else "error",
            )
        else:
            self.log.close()
