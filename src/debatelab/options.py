"""Kinds of setting that several commands share, each parsed and checked one way.

A config field names its kind in its metadata (``field(default="all", metadata=IMAGES)``);
:func:`check_config` runs every field's check (its kind, and ``min`` / ``max`` for numbers) and
then the config's own ``check()`` for what depends on several fields, before any data is loaded
or any model trained: :class:`debatelab.report.runs.RunFolder` calls it first thing, so a run
started from the command line or from Python is checked the same way. Each error names the
option as the command line spells it and says what to write instead.

Kinds: ``images`` (test images: ``all``, ``N``, ``start:stop``, ``start:stop:step``),
``device`` (``auto``, ``cpu``, ``cuda``, ``cuda:N``), ``cluster`` (``local``, ``ray``,
``ray:auto``, ``ray:HOST:PORT``: a cluster that does not answer fails within seconds) and
``ints`` (``a,b,c``).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable
from dataclasses import is_dataclass
from pathlib import Path
from typing import Any

from .cluster import Cluster
from .configs import ConfigField, config_fields, option_label

#: Seconds a ``ray:HOST:PORT`` address has to accept a connection before the run is refused.
CLUSTER_TIMEOUT_S = 5.0

#: Default of ``--workers`` in every command that takes it: the cores of a small machine.
WORKERS = 2

#: Images in every test set debatelab reads (MNIST, FashionMNIST, CIFAR-10).
TEST_IMAGES = 10_000

IMAGES = {"kind": "images"}
DEVICE = {"kind": "device"}
CLUSTER = {"kind": "cluster"}
INTS = {"kind": "ints"}


def parse_images(spec: str, n_total: int) -> slice:
    """Test images as a checked slice: ``"all"``, ``"N"`` (the first N), ``"start:stop"`` or
    ``"start:stop:step"`` (every step-th image, e.g. ``0:10000:5`` for 2,000 evenly spaced)."""
    spec = str(spec).strip()
    try:
        if spec == "all":
            start, stop, step = 0, n_total, 1
        elif ":" in spec:
            parts = spec.split(":")
            if len(parts) > 3:
                raise ValueError
            a, b, c = (parts + ["", ""])[:3]
            start = int(a) if a else 0
            stop = int(b) if b else n_total
            step = int(c) if c else 1
        else:
            start, stop, step = 0, int(spec), 1
    except ValueError:
        raise ValueError(
            f"image range {spec!r} is not 'all', 'N', 'start:stop' or 'start:stop:step' "
            "(e.g. 0:1000 or 0:10000:5)"
        ) from None
    if not 0 <= start < stop <= n_total or step < 1:
        raise ValueError(
            f"image range {spec!r} must lie within 0:{n_total}, be non-empty and have a step >= 1"
        )
    return slice(start, stop, step)


def image_indices(spec: str, n_total: int) -> range:
    """The test-image indices of an images spec (:func:`parse_images`)."""
    return range(n_total)[parse_images(spec, n_total)]


def parse_device(text: str, cluster: str = "local") -> str:
    """``auto`` (CUDA when this machine has it), ``cpu``, ``cuda`` or ``cuda:N``, checked against
    this machine. On a Ray cluster ``cuda`` is not checked here: each task asks for a GPU."""
    text = str(text).strip()
    index = text[5:] if text.startswith("cuda:") else None
    if text not in ("auto", "cpu", "cuda") and not (index and index.isdigit()):
        raise ValueError(f"{text!r} is not a device: use auto, cpu, cuda or cuda:N")
    if text == "cpu" or (text.startswith("cuda") and str(cluster).startswith("ray")):
        return text
    import torch

    if text == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if not torch.cuda.is_available():
        raise ValueError(f"{text}: no CUDA device here; use cpu or auto")
    if index is not None and int(index) >= torch.cuda.device_count():
        raise ValueError(f"{text}: this machine has {torch.cuda.device_count()} CUDA devices")
    return text


def check_cluster(text: str) -> None:
    """``local``, ``ray``, ``ray:auto`` or ``ray:HOST:PORT``: Ray installed, and an address that
    accepts a connection within :data:`CLUSTER_TIMEOUT_S` (Ray itself retries for minutes)."""
    cluster = Cluster.parse(text)
    if cluster.kind == "local":
        return
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ValueError('Ray is not installed: pip install "debatelab[ray]", or use '
                         "--cluster local") from None  # fmt: skip
    address = cluster.address
    if address is None:  # a local Ray instance, started by the run
        return
    if address == "auto":  # where `ray start` leaves the address of the cluster it started
        found = os.environ.get("RAY_ADDRESS") or _read(
            Path(os.environ.get("RAY_TMPDIR", tempfile.gettempdir()))
            / "ray"
            / "ray_current_cluster"
        )
        if not found:
            raise ValueError("ray:auto found no running Ray cluster on this machine (no "
                             "RAY_ADDRESS, no `ray start`); start one with `ray start --head`, "
                             "give ray:HOST:PORT, or use --cluster local")  # fmt: skip
        address = found.strip()
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"{text!r}: the address must be HOST:PORT (e.g. ray:10.0.0.5:6379)")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=CLUSTER_TIMEOUT_S):
            pass
    except OSError as exc:
        raise ValueError(f"the Ray cluster at {host}:{port} does not answer ({exc}); start it "
                         "with `ray start --head`, check the address, or use --cluster "
                         "local") from None  # fmt: skip


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def parse_int_list(text: str) -> tuple[int, ...]:
    """``"16,16"`` to ``(16, 16)``: positive integers, comma-separated."""
    try:
        values = tuple(int(v) for v in str(text).replace(" ", "").split(",") if v)
    except ValueError:
        values = ()
    if not values or min(values) < 1:
        raise ValueError(f"{text!r} is not a comma-separated list of positive integers "
                         "(e.g. 16,16)")  # fmt: skip
    return values


def _check_images(value: Any, config: Any) -> None:
    parse_images(value, TEST_IMAGES)


def _check_device(value: Any, config: Any) -> None:
    parse_device(value, getattr(config, "cluster", "local"))


#: kind -> check(value, config), raising ValueError with what was wrong and what to write.
KINDS: dict[str, Callable[[Any, Any], None]] = {
    "images": _check_images,
    "device": _check_device,
    "cluster": lambda value, config: check_cluster(value),
    "ints": lambda value, config: parse_int_list(value),
}


def _value(config: Any, f: ConfigField) -> Any:
    value = config
    for name in f.path:
        value = getattr(value, name)
    return value


def _check_field(f: ConfigField, value: Any, config: Any) -> None:
    if value is None:
        return
    lo, hi = f.metadata.get("min"), f.metadata.get("max")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            bounds = (f">= {lo}" if hi is None else f"<= {hi}" if lo is None
                      else f"in {lo}..{hi}")  # fmt: skip
            raise ValueError(f"must be {bounds}, got {value}")
    choices = f.metadata.get("choices")
    if choices and value not in choices and str(value) not in map(str, choices):
        raise ValueError(f"{value!r} is not one of {', '.join(map(str, choices))}")
    kind = f.metadata.get("kind")
    if kind:
        if isinstance(value, tuple):
            value = ",".join(map(str, value))
        KINDS[kind](value, config)


def check_config(config: Any) -> None:
    """Check every setting of ``config`` (a config dataclass) and then its ``check()``: one
    ``ValueError`` naming the option (``--images``, ``--device``) and what to write instead."""
    if not is_dataclass(config):
        return
    for f in config_fields(type(config)):
        try:
            _check_field(f, _value(config, f), config)
        except ValueError as exc:
            raise ValueError(f"{option_label(f).split(' (')[-1].rstrip(')')}: {exc}") from None
    check = getattr(config, "check", None)
    if callable(check):
        check()
