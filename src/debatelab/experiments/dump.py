"""``debatelab dump``: the sparse judge's probabilities on every mask of test images, in the
chunked, resumable all-mask store (an interrupted dump continues with the missing chunks; a
finished one is reused as it is)."""

from __future__ import annotations

from dataclasses import dataclass

from ..data import load_variant
from ..report.runs import RunFolder
from ..store import parse_images
from .setup import JudgeSetupConfig, dump_store, prepare_judges


@dataclass
class DumpConfig(JudgeSetupConfig):
    """Settings of one all-mask dump."""

    images: str = "all"
    """Test images: 'all', 'N' (the first N), 'start:stop' or 'start:stop:step'."""


def run(config: DumpConfig, folder: RunFolder) -> dict:
    """The experiment shape: judges and the store; returns ``{"complete": ...}``."""
    folder.seeds["train"] = config.seed
    data = load_variant(config.variant, folder.data_dir)
    parse_images(config.images, len(data.x_test))  # a bad range fails before any training
    setup = prepare_judges(config, folder.data_dir, folder.cache_dir, folder.progress, data=data)
    store = dump_store(setup, config.images, folder.cache_dir, progress=folder.progress)
    folder.extra["store"] = str(store.path)
    folder.echo(f"store: {store.path}")
    return {"complete": store.complete}
