"""Atomic file writes: a reader never sees a half-written file, a crash leaves no debris."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success it replaces ``path`` in one rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the usual permissions
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _read_umask() -> int:
    mask = os.umask(0)  # the only way to read it; done once, at import, before any threads
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def write_atomic(path: str | os.PathLike, writer: Callable[[Path], Any]) -> Path:
    """Call ``writer(tmp_path)`` and move the result to ``path`` atomically."""
    with atomic_path(path) as tmp:
        writer(tmp)
    return Path(path)


def write_json(path: str | os.PathLike, obj: Any) -> Path:
    """Write ``obj`` as indented JSON, atomically."""
    text = json.dumps(obj, indent=2, sort_keys=True, default=_json_default) + "\n"
    return write_atomic(path, lambda p: p.write_text(text))


def _json_default(obj: Any) -> Any:
    # numpy scalars and paths show up in configs and metrics
    if hasattr(obj, "item"):
        return obj.item()
    if isinstance(obj, os.PathLike):
        return os.fspath(obj)
    if isinstance(obj, tuple | set | frozenset):
        return list(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")
