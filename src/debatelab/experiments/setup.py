"""The judge setup of REFERENCE B: train (or load) the gold classifier and the sparse judge of a
dataset variant and measure them."""

from __future__ import annotations

from dataclasses import dataclass, field
from math import comb

import numpy as np
import torch

from ..data import ImageData, load_variant
from ..data.preprocess import VARIANTS
from ..geometry import Grid
from ..judges import (
    TrainConfig,
    TrainedJudge,
    accuracy,
    get_judge,
    predict_proba,
    random_mask_accuracy,
)
from ..judges.columns import reference_columns, standard_error
from ..options import CLUSTER, IMAGES, WORKERS
from ..store import (
    AllMaskStore,
    dump_all_mask_probs,
    holds_judge,
    image_slice,
    judge_fingerprint,
    open_store,
    parse_images,
    store_path,
)

#: Most masks per image the all-mask store takes (the published game: C(36, 4) = 58,905).
MAX_MASKS = 200_000


@dataclass
class JudgeSetupConfig:
    """Settings shared by every frozen-judge experiment on one dataset variant."""

    variant: str = field(default="mnist", metadata={"flag": "--dataset", "choices": VARIANTS})
    """Dataset variant: mnist, mnist-whitened, fashionmnist(-whitened), cifar10(-whitened)."""
    seed: int = 0
    """Seed of both judges' training."""
    epochs: int = field(default=10, metadata={"min": 1})
    """Training epochs of both judges (published: 10)."""
    batch_size: int = field(default=TrainConfig.batch_size, metadata={"min": 1, "before": 256})
    """Images per training step of both judges (128 reproduces the published judges; 256 is
    the frozen-judge notebook's written setting and trains weaker ones)."""
    grid: int = field(default=6, metadata={"choices": (1, 2, 3, 6, 9, 18)})
    """Cells per side of the 18x18 image (published: 6, cells of 3x3 pixels)."""
    reveal: int = field(default=4, metadata={"min": 1})
    """Cells the sparse judge sees (published: 4)."""
    mc_draws: int = field(default=10, metadata={"min": 1})
    """Random masks per test image for the Monte Carlo sparse accuracy."""
    train_limit: int | None = field(default=None, metadata={"min": 1})
    """Train on the first N training images only, for quick checks (default: all)."""

    def __post_init__(self):
        self.grid, self.reveal = int(self.grid), int(self.reveal)
        n_cells = self.grid * self.grid
        if not 1 <= self.reveal <= n_cells:
            raise ValueError(f"reveal must lie in 1..{n_cells} (cells of a {self.grid}x{self.grid} "
                             f"grid), got {self.reveal}")  # fmt: skip
        if comb(n_cells, self.reveal) > MAX_MASKS:
            raise ValueError(
                f"{self.reveal} of {n_cells} cells make {comb(n_cells, self.reveal):,} masks per "
                f"image; the all-mask store holds at most {MAX_MASKS:,}: reveal fewer cells"
            )

    def judge_config(self, kind: str) -> TrainConfig:
        return TrainConfig(
            variant=self.variant, kind=kind, seed=self.seed, epochs=self.epochs,
            batch_size=self.batch_size, grid=self.grid, reveal=self.reveal, train_limit=self.train_limit,
        )  # fmt: skip


@dataclass
class ImagesConfig(JudgeSetupConfig):
    """Judge settings and the test images an experiment plays on."""

    images: str = field(default="all", metadata=IMAGES)
    """Test images: 'all', 'N' (the first N), 'start:stop' or 'start:stop:step' (e.g.
    0:10000:5, every fifth image)."""


@dataclass
class WorkersConfig:
    """Where image chunks are solved: local processes or a Ray cluster (results do not depend
    on it)."""

    workers: int = field(default=WORKERS, compare=False, metadata={"min": 1})
    """Processes solving image chunks in parallel (results do not depend on it)."""
    cluster: str = field(default="local", compare=False, metadata=CLUSTER)
    """local (this machine, --workers processes), ray (a local Ray instance), ray:auto (join
    the running Ray cluster) or ray:HOST:PORT; results do not depend on it."""

    def where(self):
        """The :class:`debatelab.cluster.Cluster` of these settings."""
        from ..cluster import Cluster

        return Cluster.parse(self.cluster, self.workers)


@dataclass
class JudgeSetup:
    config: JudgeSetupConfig
    data: ImageData
    gold: TrainedJudge
    sparse: TrainedJudge

    @property
    def grid(self) -> Grid:
        return Grid(self.data.image_size, self.config.grid)


def prepare_judges(
    config: JudgeSetupConfig,
    data_dir=None,
    cache=None,
    progress: bool = True,
    retrain: bool = False,
    data: ImageData | None = None,
) -> JudgeSetup:
    """Load the variant's data and get both judges (from the cache when they are there)."""
    data = data or load_variant(config.variant, data_dir)
    gold = get_judge(config.judge_config("gold"), data, cache, progress, retrain)
    sparse = get_judge(config.judge_config("sparse"), data, cache, progress, retrain)
    return JudgeSetup(config, data, gold, sparse)


def monte_carlo_accuracy(
    judge: TrainedJudge, data: ImageData, config: JudgeSetupConfig, eval_seed: int = 12345
) -> float:
    """Accuracy of a judge on the test set: full images for gold, random masks (Monte Carlo,
    ``config.mc_draws`` per image) for sparse."""
    if judge.config.kind == "gold":
        return accuracy(judge.model, data.x_test, data.y_test)
    gen = torch.Generator().manual_seed(eval_seed)
    grid = Grid(data.image_size, config.grid)
    return random_mask_accuracy(
        judge.model, data.x_test, data.y_test, grid, config.reveal, gen, draws=config.mc_draws
    )


def dump_store(
    setup: JudgeSetup, images: str = "all", cache=None, progress: bool = True, where=1
) -> AllMaskStore:
    """The sparse judge's all-mask probabilities on a slice of the test set (resumable; chunks
    computed where ``where`` says)."""
    sl = parse_images(images, len(setup.data.x_test))
    cfg = setup.config
    path = store_path(cfg.variant, setup.sparse.config.key(), cfg.grid, cfg.reveal, sl.start,
                      sl.stop, cache, sl.step)  # fmt: skip
    attrs = {"variant": cfg.variant, "judge": setup.sparse.config.key(), "split": "test",
             "image_start": sl.start, "image_stop": sl.stop}  # fmt: skip
    if sl.step > 1:  # contiguous stores keep the attributes they always had
        attrs["image_step"] = sl.step
    n_total = len(setup.data.x_test)
    whole = store_path(cfg.variant, setup.sparse.config.key(), cfg.grid, cfg.reveal, 0, n_total,
                       cache)  # fmt: skip
    source = None
    if whole != path and whole.exists():  # a part of the whole test set: copy, not compute
        full = open_store(whole)
        if holds_judge(full, judge_fingerprint(setup.sparse.model), cfg.grid, cfg.reveal):
            source = (full, np.arange(n_total)[sl])
    return dump_all_mask_probs(
        setup.sparse.model, setup.data.x_test[sl], path, cfg.grid, cfg.reveal,
        attrs=attrs, progress=progress, where=where, source=source,
    )  # fmt: skip


def exact_metrics(setup: JudgeSetup, store: AllMaskStore) -> dict[str, float]:
    """Gold accuracy and the exact sparse / perfect / ensemble columns on the store's images."""
    sl = image_slice(store.attrs)
    x, y = setup.data.x_test[sl], setup.data.y_test[sl].numpy()
    gold_pred = predict_proba(setup.gold.model, x).argmax(1).numpy()
    metrics = {"gold_accuracy": float((gold_pred == y).mean()),
               "gold_accuracy_se": standard_error(gold_pred == y)}  # fmt: skip
    metrics.update(reference_columns(store.iter_chunks(), y, gold_pred))
    metrics["n_images"] = len(y)
    return metrics


def judges_and_store(config: ImagesConfig, folder) -> tuple[JudgeSetup, AllMaskStore]:
    """Both judges (cached or trained) and the sparse judge's all-mask store on
    ``config.images``, for an experiment writing into run folder ``folder``; a bad image range
    fails before any training."""
    folder.seeds["train"] = config.seed
    data = load_variant(config.variant, folder.data_dir)
    parse_images(config.images, len(data.x_test))
    setup = prepare_judges(config, folder.data_dir, folder.cache_dir, folder.progress, data=data)
    where = config.where() if isinstance(config, WorkersConfig) else None
    if where is None or where.kind == "local":
        where = 1  # torch already spreads one process's dump over every local core
    store = dump_store(setup, config.images, folder.cache_dir, progress=folder.progress,
                       where=where)  # fmt: skip
    folder.extra["store"] = str(store.path)
    return setup, store
