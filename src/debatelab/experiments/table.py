"""The main job (``debatelab run``): a dataset variant's judges and the reference table of
REFERENCE B with its standard errors.

Trains (or loads) the gold classifier and the sparse judge, stores the sparse judge's
probabilities on every mask of the chosen test images (cached, resumable), solves consultancy
and 2- and 4-turn debate under exact play against that frozen judge, and reports each column
beside the published row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..data import load_variant
from ..reference import SETUP_COLUMNS
from ..report.runs import RunFolder
from ..report.tables import setup_table
from ..store import describe_images, image_slice, parse_images
from .setup import JudgeSetupConfig, dump_store, exact_metrics, prepare_judges
from .sweep import exact_play_metrics


@dataclass
class TableConfig(JudgeSetupConfig):
    """Settings of the main job."""

    images: str = "0:10000:5"
    """Test images: 'all', 'N' (the first N), 'start:stop' or 'start:stop:step'. The default,
    every fifth image, is spread over the whole test set (MNIST's first half is the harder one)."""


def run(config: TableConfig, folder: RunFolder) -> dict:
    """The experiment shape: judges, all-mask store, exact play, table; returns the metrics."""
    folder.seeds["train"] = config.seed
    data = load_variant(config.variant, folder.data_dir)
    parse_images(config.images, len(data.x_test))  # a bad range fails before any training
    setup = prepare_judges(config, folder.data_dir, folder.cache_dir, folder.progress, data=data)
    store = dump_store(setup, config.images, folder.cache_dir, progress=folder.progress)
    metrics = exact_metrics(setup, store)
    sl = image_slice(store.attrs)
    metrics.update(exact_play_metrics(store, data.y_test[sl].numpy(), progress=folder.progress))
    which = describe_images(sl, len(data.x_test))
    metrics["images"] = which
    table = setup_table(config.variant, metrics, list(SETUP_COLUMNS),
                        label=f"this run ({metrics['n_images']:,} images)")  # fmt: skip
    header = f"{config.variant}: {which}; judges seed {config.seed}; published: full test set"
    folder.file("report.md").write_text(f"# debatelab run: {config.variant}\n\n{header}.\n\n"
                                        f"{table}\n")  # fmt: skip
    folder.extra["store"] = str(store.path)
    folder.echo(f"{header}\n{table}")
    return metrics
