"""A chunked, resumable on-disk store of all-mask judge probabilities.

One zarr group per (dataset variant, judge, grid, reveal, image range) holds ``probs``,
``(n_images, C(n_cells, reveal), n_classes)`` in float16 (the judge computes in float32; float16
keeps 11 significant bits, an absolute error below 2.5e-4 on a probability), chunked by images.
A chunk is marked done in ``done`` only after its data is written (zarr writes each chunk file
atomically), so a killed dump resumes with the missing chunks and a finished store is never
recomputed.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from math import comb
from pathlib import Path

import numpy as np
import torch
import zarr

from .cluster import run_pieces
from .errors import CacheError
from .judges.allmask import all_mask_probs
from .judges.cnn import JudgeCNN
from .options import parse_images
from .paths import cache_dir
from .progress import progress as progress_bar

STORE_FORMAT = "debatelab-allmask/1"


def parse_image_range(spec: str, n_total: int) -> tuple[int, int]:
    """``"all"``, ``"N"`` (the first N) or ``"start:stop"`` to a checked ``(start, stop)``."""
    images = parse_images(spec, n_total)
    if images.step != 1:
        raise ValueError(f"image range {spec!r}: this command takes a contiguous range start:stop")
    return images.start, images.stop


def image_slice(attrs: dict) -> slice:
    """The test images a store holds, from its attributes."""
    return slice(attrs["image_start"], attrs["image_stop"], attrs.get("image_step", 1))


def describe_images(images: slice, n_total: int) -> str:
    """Words for a slice of the test set, e.g. "2,000 evenly spaced test images (0:10000:5)"."""
    n = len(range(images.start, images.stop, images.step))
    if images.step == 1 and (images.start, images.stop) == (0, n_total):
        return f"all {n:,} test images"
    if images.step == 1:
        return f"{n:,} test images ({images.start}:{images.stop})"
    return f"{n:,} evenly spaced test images ({images.start}:{images.stop}:{images.step})"


def judge_fingerprint(model: JudgeCNN) -> str:
    """A hash of the judge's weights: a store belongs to exactly one judge."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


@dataclass
class AllMaskStore:
    """Handle on one store; ``probs`` reads as a zarr array, ``complete`` says if it is done."""

    path: Path
    group: zarr.Group

    @property
    def probs(self) -> zarr.Array:
        return self.group["probs"]

    @property
    def done(self) -> np.ndarray:
        return self.group["done"][:]

    @property
    def complete(self) -> bool:
        return bool(self.done.all())

    @property
    def attrs(self) -> dict:
        return dict(self.group.attrs)

    @property
    def chunk_images(self) -> int:
        return self.probs.chunks[0]

    def iter_chunks(self, dtype=np.float32):
        """Yield ``(start, probs_chunk)`` over image chunks, relative to the store's range."""
        n = self.probs.shape[0]
        for lo in range(0, n, self.chunk_images):
            yield lo, np.asarray(self.probs[lo : lo + self.chunk_images], dtype=dtype)


def store_path(variant: str, judge_key: str, grid: int, reveal: int, start: int, stop: int,
               cache=None, step: int = 1) -> Path:  # fmt: skip
    """The store of ``judge_key``'s probabilities on test images ``start:stop:step``: keyed by
    every setting that determines it (the judge's own key hashes its settings)."""
    name = f"{judge_key}-g{grid}r{reveal}-test{start}_{stop}{f'_{step}' if step > 1 else ''}.zarr"
    return cache_dir(cache) / "allmask" / variant / name


def open_store(path: str | os.PathLike) -> AllMaskStore:
    """Open an existing store, with a clear error when it is not one."""
    path = Path(path)
    try:
        group = zarr.open_group(str(path), mode="r+")
        if group.attrs.get("format") != STORE_FORMAT or "probs" not in group:
            raise CacheError(f"{path} is not a debatelab all-mask store ({STORE_FORMAT})")
    except CacheError:
        raise
    except Exception as exc:
        raise CacheError(
            f"all-mask store {path} is unreadable ({type(exc).__name__}: {exc}); delete it and "
            "run the dump again"
        ) from exc
    return AllMaskStore(path, group)


def _check_free_space(path: Path, needed: int) -> None:
    """One clear error before a dump that cannot fit, instead of a full disk halfway through."""
    free = shutil.disk_usage(path).free
    if needed > free:
        raise CacheError(
            f"the all-mask store {path} needs about {needed / 1e9:.1f} GB more but only "
            f"{free / 1e9:.1f} GB are free on its disk (float16, {needed // 2:,} values); free "
            "space, point DEBATELAB_CACHE (--cache-dir) at a larger disk, or use fewer --images"
        )


def dump_all_mask_probs(
    model: JudgeCNN,
    images: torch.Tensor,
    path: str | os.PathLike,
    grid: int = 6,
    reveal: int = 4,
    attrs: dict | None = None,
    chunk_images: int = 64,
    progress: bool = True,
    stop_after_chunks: int | None = None,
    where=1,
    source: tuple[AllMaskStore, np.ndarray] | None = None,
) -> AllMaskStore:
    """Compute (or resume) the store of all-mask probabilities of ``images`` at ``path``.

    ``attrs`` (variant, judge key, image range, ...) are recorded and must match when resuming.
    ``stop_after_chunks`` computes at most that many chunks and returns (used to test resuming).
    Chunks are computed where ``where`` says (local processes or a Ray cluster,
    :func:`debatelab.cluster.run_pieces`) and written here, each marked done once written.
    ``source``: a finished store of the same judge and masks holding ``images`` at the given
    rows; chunks are copied from it, not computed (the same numbers: a judge's probabilities on
    an image do not depend on the images computed beside it).
    """
    path = Path(path)
    n_masks = comb(grid * grid, reveal)
    shape = (len(images), n_masks, model.n_classes)
    meta = {
        "format": STORE_FORMAT,
        "grid": grid,
        "reveal": reveal,
        "mask_order": "itertools.combinations(range(n_cells), reveal)",
        "storage_dtype": "float16",
        "note": "float32 judge probabilities stored as float16 (abs error < 2.5e-4)",
        "judge_fingerprint": judge_fingerprint(model),
        "shape": list(shape),
        **(attrs or {}),
    }
    if path.exists():
        store = open_store(path)
        old = {k: store.attrs.get(k) for k in meta}
        if old != meta:
            diff = {k: (old[k], meta[k]) for k in meta if old[k] != meta[k]}
            raise CacheError(
                f"store {path} was made with other settings {diff}; delete it to recompute"
            )
    else:
        tmp = path.with_name(path.name + ".init")
        shutil.rmtree(tmp, ignore_errors=True)
        group = zarr.open_group(str(tmp), mode="w")
        group.create_array("probs", shape=shape, chunks=(chunk_images, n_masks, shape[2]),
                           dtype="float16")  # fmt: skip
        n_chunks = -(-len(images) // chunk_images)
        group.create_array("done", shape=(n_chunks,), chunks=(1,), dtype="bool", fill_value=False)
        group.attrs.update(meta)
        os.replace(tmp, path)  # the store appears only once fully initialised
        store = open_store(path)
    done = store.done
    todo = np.flatnonzero(~done)
    size = store.chunk_images
    _check_free_space(path, len(todo) * size * n_masks * shape[2] * 2)
    if stop_after_chunks is not None:
        todo = todo[:stop_after_chunks]
    bounds = [(c * size, min((c + 1) * size, len(images))) for c in todo]
    if source is not None:
        rows = np.asarray(source[1])
        _check_source((source[0], rows), meta, len(images))
        chunks = ((i, source[0].probs.get_orthogonal_selection((rows[lo:hi], slice(None),
                   slice(None)))) for i, (lo, hi) in enumerate(bounds))  # fmt: skip
    else:
        pieces = [(model, images[lo:hi], grid, reveal) for lo, hi in bounds]
        chunks = run_pieces(_dump_piece, pieces, where)
    verb = "copy" if source is not None else "dump"
    bar = progress_bar(total=len(todo), enabled=progress, desc=f"{verb} {path.name}", unit="chunk")
    for i, probs in chunks:
        lo, hi = bounds[i]
        store.probs[lo:hi] = probs
        store.group["done"][todo[i]] = True
        bar.update()
    bar.close()
    return store


def holds_judge(store: AllMaskStore, fingerprint: str, grid: int, reveal: int) -> bool:
    """Whether ``store`` is a finished store of the judge with ``fingerprint`` on the masks of
    ``grid`` and ``reveal``."""
    wanted = {"format": STORE_FORMAT, "judge_fingerprint": fingerprint, "grid": grid,
              "reveal": reveal}  # fmt: skip
    return store.complete and all(store.attrs.get(k) == v for k, v in wanted.items())


def _check_source(source: tuple[AllMaskStore, np.ndarray], meta: dict, n_images: int) -> None:
    """A store to copy from holds this judge's probabilities on the same masks, for every
    image asked for."""
    store, rows = source
    if not holds_judge(store, meta["judge_fingerprint"], meta["grid"], meta["reveal"]):
        raise CacheError(f"store {store.path} is not a finished store of this judge's masks")
    if len(rows) != n_images or (
        len(rows) and not 0 <= rows.min() <= rows.max() < store.probs.shape[0]
    ):
        raise CacheError(f"store {store.path} does not hold the {n_images} images asked for")


def _dump_piece(piece) -> np.ndarray:
    """One chunk of the store, where it runs: the judge's float16 probabilities on every mask."""
    model, images, grid, reveal = piece
    return all_mask_probs(model, images, grid=grid, reveal=reveal).astype(np.float16)
