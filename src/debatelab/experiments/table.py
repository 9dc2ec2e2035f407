"""The main job (``debatelab run``): a dataset variant's judges and the reference table of
REFERENCE B with its standard errors.

Trains (or loads) the gold classifier and the sparse judge, stores the sparse judge's
probabilities on every mask of the chosen test images (cached, resumable), solves consultancy
and 2- and 4-turn debate under exact play against that frozen judge, and reports each column
beside the published row.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..options import IMAGES
from ..reference import SETUP_COLUMNS
from ..report.runs import RunFolder
from ..report.tables import setup_table
from ..store import describe_images, image_slice
from .setup import ImagesConfig, WorkersConfig, exact_metrics, judges_and_store
from .sweep import SweepPlan, exact_play_metrics


@dataclass
class TableConfig(ImagesConfig, WorkersConfig):
    """Settings of the main job. Its default images, every second of the test set, are spread
    over the whole set (MNIST's first half is the harder one) and are enough to put every
    column within about 1.5 points (two standard errors) of its full-set value."""

    images: str = field(default="0:10000:2", metadata=IMAGES)

    def __post_init__(self):
        super().__post_init__()
        SweepPlan.build(self.grid * self.grid, self.reveal)  # 1, 2 and 4 turns need reveal % 4 == 0


def run(config: TableConfig, folder: RunFolder) -> dict:
    """The experiment shape: judges, all-mask store, exact play, table; returns the metrics."""
    setup, store = judges_and_store(config, folder)
    metrics = exact_metrics(setup, store)
    sl = image_slice(store.attrs)
    y = setup.data.y_test
    metrics.update(exact_play_metrics(store, y[sl].numpy(), config.where(), folder.progress))
    which = describe_images(sl, len(y))
    metrics["images"] = which
    table = setup_table(config.variant, metrics, list(SETUP_COLUMNS),
                        label=f"this run ({metrics['n_images']:,} images)")  # fmt: skip
    header = f"{config.variant}: {which}; judges seed {config.seed}; published: full test set"
    folder.file("report.md").write_text(f"# debatelab run: {config.variant}\n\n{header}.\n\n"
                                        f"{table}\n")  # fmt: skip
    folder.echo(f"{header}\n{table}")
    return metrics
