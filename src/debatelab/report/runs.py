"""Run folders: every run writes its resolved config, a manifest of its provenance and its
metrics, atomically, into one folder."""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
import sys
import time
from dataclasses import asdict, is_dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from ..atomic import write_json

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


class RunFolder:
    """One run's folder: ``config.json`` at start, ``metrics.json`` and ``manifest.json`` at end."""

    def __init__(self, path: Path, command: str, config: Any, seeds: dict | None = None,
                 device: str = "cpu"):  # fmt: skip
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.command = command
        self.seeds = seeds or {}
        self.device = device
        self.started = time.time()
        self.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
        self.git = git_state()  # the code as it was when the run started
        cfg = asdict(config) if is_dataclass(config) else dict(config)
        write_json(self.path / "config.json", cfg)

    def file(self, name: str) -> Path:
        return self.path / name

    def write_metrics(self, metrics: dict[str, Any]) -> Path:
        return write_json(self.path / "metrics.json", metrics)

    def finish(self, metrics: dict[str, Any] | None = None, **extra: Any) -> Path:
        """Write metrics (if given) and the manifest; return the folder."""
        if metrics is not None:
            self.write_metrics(metrics)
        manifest = {
            "command": self.command,
            "argv": sys.argv,
            "started_at": self.started_at,
            "wall_time_s": round(time.time() - self.started, 3),
            "seeds": self.seeds,
            "device": device_description(self.device),
            "platform": platform.platform(),
            "versions": library_versions(),
            "version": library_versions()["debatelab"],
            **self.git,
            **extra,
        }
        write_json(self.path / "manifest.json", manifest)
        return self.path
