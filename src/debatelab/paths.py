"""Where debatelab reads datasets and keeps its cache.

The data root is only read when the files are there; it may be read-only. Downloads (when a
dataset is missing and the network is there) go into the data root, which must then be
writable. Everything derived (trained judges, decoded datasets, all-mask stores) lives in the
cache directory, and so do the published trained judges of the 2026 study, downloaded there on
first use (``debatelab.judges.published``; ``$DEBATELAB_PUBLISHED_URL`` names another server
that holds its repository's files).
"""

from __future__ import annotations

import os
from pathlib import Path

DATA_ENV = "DEBATELAB_DATA"
CACHE_ENV = "DEBATELAB_CACHE"
OFFLINE_ENV = "DEBATELAB_OFFLINE"
PUBLISHED_URL_ENV = "DEBATELAB_PUBLISHED_URL"


def data_root(data_dir: str | os.PathLike | None = None) -> Path:
    """The dataset root: the argument, else ``$DEBATELAB_DATA``, else ``~/.cache/debatelab/data``."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    if os.environ.get(DATA_ENV):
        return Path(os.environ[DATA_ENV]).expanduser()
    return Path.home() / ".cache" / "debatelab" / "data"


def cache_dir(cache: str | os.PathLike | None = None) -> Path:
    """The cache root: the argument, else ``$DEBATELAB_CACHE``, else ``~/.cache/debatelab``."""
    if cache is not None:
        return Path(cache).expanduser()
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path.home() / ".cache" / "debatelab"


def offline() -> bool:
    """True when ``$DEBATELAB_OFFLINE`` is set to a true value: never try to download."""
    return os.environ.get(OFFLINE_ENV, "").lower() in {"1", "true", "yes"}
