"""Keyed resume: every resumable piece is stored under a hash of the settings that determine it.

Judge checkpoints and their epochs, all-mask stores, sweep chunks and pixel-game chunks all name
their files with :func:`settings_key`, so a piece made under other settings is never taken for
this one; :class:`KeyedPieces` is the folder form used for chunks inside a run folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any


def settings_dict(settings: Any) -> dict:
    """A dataclass (or a mapping) as a plain dict, nested dataclasses included."""
    if is_dataclass(settings) and not isinstance(settings, type):
        return asdict(settings)
    return dict(settings)


def settings_hash(settings: Any, length: int = 12) -> str:
    """A short sha256 of every setting (a dataclass or a JSON-able mapping), key order free."""
    blob = json.dumps(settings_dict(settings), sort_keys=True, default=list)
    return hashlib.sha256(blob.encode()).hexdigest()[:length]


def settings_key(prefix: str, settings: Any) -> str:
    """``prefix`` and :func:`settings_hash`: a key that changes whenever any setting does."""
    return f"{prefix}-{settings_hash(settings)}"


class KeyedPieces:
    """A folder of finished pieces of one computation, under the hash of its settings.

    ``pieces = KeyedPieces(run_folder / "chunks", settings)``; ``pieces.path("chunk_0_64.npz")``
    lies in ``chunks/<hash>/``, so pieces made under other settings sit in another folder and are
    never reused for these.
    """

    def __init__(self, root: Path, settings: Any):
        self.key = settings_hash(settings)
        self.folder = Path(root) / self.key

    def path(self, name: str) -> Path:
        self.folder.mkdir(parents=True, exist_ok=True)
        return self.folder / name
