"""``debatelab dump``: the sparse judge's probabilities on every mask of test images, in the
chunked, resumable all-mask store (an interrupted dump continues with the missing chunks; a
finished one is reused as it is)."""

from __future__ import annotations

from dataclasses import dataclass

from ..report.runs import RunFolder
from .setup import ImagesConfig, WorkersConfig, judges_and_store


@dataclass
class DumpConfig(ImagesConfig, WorkersConfig):
    """Settings of one all-mask dump."""


def run(config: DumpConfig, folder: RunFolder) -> dict:
    """The experiment shape: judges and the store; returns ``{"complete": ...}``."""
    setup, store = judges_and_store(config, folder)
    folder.echo(f"store: {store.path}")
    return {"complete": store.complete}
