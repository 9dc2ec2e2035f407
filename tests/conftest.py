"""Shared fixtures: the offline dataset copy, a throwaway cache, small real data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "datasets"


@pytest.fixture(scope="session")
def data_root() -> Path:
    """$DEBATELAB_DATA, else the project's offline copy beside the repo, else the default data
    root (where the package downloads what is missing)."""
    from debatelab.paths import data_root as default_root

    if os.environ.get("DEBATELAB_DATA"):
        return Path(os.environ["DEBATELAB_DATA"])
    if (SHARED_DATA / "MNIST").exists():
        return SHARED_DATA
    return default_root()


@pytest.fixture(scope="session")
def mnist(data_root):
    from debatelab.data import load_variant

    return load_variant("mnist", data_root)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("DEBATELAB_CACHE", str(path))
    return path
