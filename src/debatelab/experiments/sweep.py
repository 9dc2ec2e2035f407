"""The frozen-judge sweep of REFERENCE B: consultancy and debate at every capability.

Against the frozen sparse judge (its probabilities on every mask, streamed chunk by chunk from
the all-mask store) the sweep solves, exactly and for every image:

- consultancy ``(4,)`` over k in 1..58,905 (log-spaced), twice: the consultant ranking the masks
  by each claim's own probability (``consultancy``) and by the judge's confidence, one ranking
  for every claim (``consultancy_confidence``, the post's "ranks all masks by the judge's
  confidence", docs/results-frozen-judges.md, "Consultancy's best judge accuracy");
- 2-turn debate ``(2, 2)`` on a grid of (k_A, k_B) in 1..630 x 1..561 and on the diagonal;
- 4-turn debate ``(1, 1, 1, 1)`` on a grid in 1..36 x 1..35 and on the diagonal;

and records selection accuracy (A's claim is the label), judge accuracy (the judge's argmax on
the revealed mask is the label, expected over the quantilised play) and win rate (A's game
value: the judge's expected probability of A's claim). Capabilities count options at a player's
own move (cell pairs in the 2-turn game), clamped at each node. Per-chunk sums are written to the
run folder as they finish, so an interrupted sweep resumes where it stopped; a chunk written by a
plan with fewer protocols gets only the missing ones solved.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from math import comb
from pathlib import Path

import numpy as np

from ..atomic import write_atomic
from ..cluster import Cluster, run_pieces
from ..games.solver import solve_capabilities
from ..judges.columns import standard_error
from ..progress import progress as progress_bar
from ..store import AllMaskStore, open_store

METRICS = ("selection", "judge", "win")


def capability_ks(max_k: int, points: int) -> np.ndarray:
    """``points`` log-spaced capabilities in 1..max_k, rounded, duplicates removed."""
    if max_k < 1 or points < 1:
        raise ValueError(f"need max_k >= 1 and points >= 1, got {max_k}, {points}")
    if points == 1:
        return np.array([1])
    return np.unique(np.rint(np.geomspace(1, max_k, points)).astype(np.int64))


@dataclass(frozen=True)
class Protocol:
    """One game of the sweep with its capability grid and diagonal."""

    name: str
    moves: tuple[int, ...]
    ks_a: np.ndarray
    ks_b: np.ndarray | None = None
    diagonal: np.ndarray | None = None
    ranking: str = "claim"
    """How the first player ranks its options (:data:`debatelab.games.solver.RANKINGS`)."""

    @property
    def is_debate(self) -> bool:
        return self.ks_b is not None

    def capabilities(self) -> list[tuple[int, int]]:
        """All (k_A, k_B) to solve: the curve (consultancy) or grid + diagonal (debate)."""
        if not self.is_debate:
            return [(int(k), 1) for k in self.ks_a]
        pairs = [(int(a), int(b)) for a in self.ks_a for b in self.ks_b]
        pairs += [(int(k), int(k)) for k in self.diagonal]
        return list(dict.fromkeys(pairs + [(1, 1)]))


@dataclass(frozen=True)
class SweepPlan:
    """The protocols of a sweep on ``n_cells`` cells with ``reveal`` cells revealed."""

    n_cells: int = 36
    reveal: int = 4
    grid_points: int = 31
    diagonal_points: int = 48
    consultancy_points: int = 48
    protocols: tuple[Protocol, ...] = field(default=(), compare=False)

    def protocol(self, name: str) -> Protocol:
        """The protocol called ``name``."""
        for proto in self.protocols:
            if proto.name == name:
                return proto
        raise ValueError(f"no protocol {name!r} in this plan: {[p.name for p in self.protocols]}")

    @classmethod
    def build(cls, n_cells=36, reveal=4, grid_points=31, diagonal_points=48,
              consultancy_points=48) -> SweepPlan:  # fmt: skip
        if reveal % 4:
            raise ValueError(f"the sweep plays 1, 2 and 4 turns, so reveal must be a multiple of 4, got {reveal}")  # fmt: skip
        if grid_points < 0:
            raise ValueError(f"grid_points must be >= 0 (0: no heat-map grid), got {grid_points}")
        half, quarter = reveal // 2, reveal // 4
        pair_a, pair_b = comb(n_cells, half), comb(n_cells - half, half)
        cell_a, cell_b = comb(n_cells, quarter), comb(n_cells - quarter, quarter)

        def grid(max_k: int) -> np.ndarray:
            return capability_ks(max_k, grid_points) if grid_points else np.zeros(0, np.int64)

        protocols = (
            Protocol("consultancy", (reveal,), capability_ks(comb(n_cells, reveal), consultancy_points)),
            Protocol("consultancy_confidence", (reveal,),
                     capability_ks(comb(n_cells, reveal), consultancy_points), ranking="confidence"),
            Protocol("debate2", (half, half), grid(pair_a), grid(pair_b),
                     capability_ks(max(pair_a, pair_b), diagonal_points)),
            Protocol("debate4", (quarter,) * 4, grid(cell_a), grid(cell_b),
                     capability_ks(max(cell_a, cell_b), diagonal_points)),
        )  # fmt: skip
        return cls(n_cells, reveal, grid_points, diagonal_points, consultancy_points, protocols)


def solve_chunk(probs: np.ndarray, labels: np.ndarray, plan: SweepPlan) -> dict[str, np.ndarray]:
    """Sums over the chunk's images of each metric at each capability, and exact-play arrays."""
    out: dict[str, np.ndarray] = {}
    for proto in plan.protocols:
        caps = proto.capabilities()
        res = solve_capabilities(
            probs, plan.n_cells, proto.moves, caps, "asym", labels, ranking=proto.ranking
        )
        out[f"{proto.name}/selection"] = res["claim_correct"].sum(axis=1, dtype=np.float64)
        out[f"{proto.name}/judge"] = res["judge_accuracy"].sum(axis=1, dtype=np.float64)
        out[f"{proto.name}/win"] = res["value"].sum(axis=1, dtype=np.float64)
        exact = caps.index((1, 1))
        for key in ("claim", "claim_correct", "value", "judge_accuracy"):
            out[f"{proto.name}/exact_{key}"] = res[key][exact]
    out["n_images"] = np.array(len(probs))
    return out


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    def writer(tmp: Path) -> None:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)

    write_atomic(path, writer)


def _chunk_task(args) -> dict[str, np.ndarray]:
    """One chunk of the sweep, where it runs (this process, a worker, a Ray node): it reads the
    store and returns its sums; the driver writes them."""
    path, lo, hi, labels, plan = args
    store = open_store(path)
    probs = np.asarray(store.probs[lo:hi], dtype=np.float32)
    return solve_chunk(probs, labels, plan)


def run_sweep(
    store: AllMaskStore,
    labels: np.ndarray,
    plan: SweepPlan | None = None,
    chunk_dir: Path | None = None,
    where: Cluster | str | int = 1,
    progress: bool = True,
    n_images: int | None = None,
) -> dict[str, np.ndarray]:
    """Solve every chunk of ``store`` (resuming from ``chunk_dir``) and combine the results.
    Chunks run where ``where`` says (a number of local processes, or a
    :class:`debatelab.cluster.Cluster`); each finished chunk is written by this process.

    ``labels`` cover the store's images (or its first ``n_images``, which limits the sweep).

    Returns mean metrics per protocol and capability (``"<protocol>/<metric>"``) and per-image
    exact-play arrays (``"<protocol>/exact_claim"``, ...).
    """
    plan = plan or SweepPlan.build(store.attrs.get("grid", 6) ** 2, store.attrs.get("reveal", 4))
    labels = np.asarray(labels)
    n = store.probs.shape[0] if n_images is None else min(int(n_images), store.probs.shape[0])
    if len(labels) != n:
        raise ValueError(f"the store holds {n} images but {len(labels)} labels were given")
    size = store.chunk_images
    tasks, files, results = [], [], {}
    for index, lo in enumerate(range(0, n, size)):
        hi = min(lo + size, n)
        chunk_file = None if chunk_dir is None else Path(chunk_dir) / f"chunk_{lo:06d}_{hi:06d}.npz"
        todo = plan
        if chunk_file is not None and chunk_file.exists():
            with np.load(chunk_file) as saved:  # the plan's protocols only, of the plan's shape
                kept = {p.name for p in plan.protocols if _saved_fits(saved, p)}
                results[index] = {k: saved[k] for k in saved.files
                                  if k == "n_images" or k.split("/")[0] in kept}  # fmt: skip
            missing = tuple(p for p in plan.protocols if p.name not in kept)
            if not missing:
                continue
            todo = replace(plan, protocols=missing)
        tasks.append((str(store.path), lo, hi, labels[lo:hi], todo))
        files.append((index, chunk_file))
    if chunk_dir is not None:
        Path(chunk_dir).mkdir(parents=True, exist_ok=True)
    bar = progress_bar(total=len(tasks), enabled=progress, desc="sweep", unit="chunk")
    for i, result in run_pieces(_chunk_task, tasks, where):
        index, chunk_file = files[i]
        result = {**results.get(index, {}), **result}
        if chunk_file is not None:
            _save_npz(chunk_file, result)
        results[index] = result
        bar.update()
    bar.close()
    return combine(results[i] for i in sorted(results))


def _saved_fits(saved, proto: Protocol) -> bool:
    """Whether a chunk file holds ``proto``'s sums at every one of its capabilities."""
    key = f"{proto.name}/selection"
    return key in saved.files and saved[key].shape == (len(proto.capabilities()),)


def combine(chunks: Iterable[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Means of the summed metrics and concatenated per-image arrays, over chunks in order."""
    chunks = list(chunks)
    n = sum(int(c["n_images"]) for c in chunks)
    out: dict[str, np.ndarray] = {"n_images": np.array(n)}
    for key in chunks[0]:
        if key == "n_images":
            continue
        if "/exact_" in key:
            out[key] = np.concatenate([c[key] for c in chunks])
        else:
            out[key] = sum(c[key] for c in chunks) / n
    return out


def exact_play_metrics(
    store: AllMaskStore, labels: np.ndarray, where: Cluster | str | int = 1, progress: bool = False
) -> dict[str, float]:
    """Exact play (k = 1 for both players, asym rule) of consultancy, 2-turn and 4-turn debate.

    Returns ``consultancy_selection_accuracy``, ``debate2_selection_accuracy``,
    ``debate4_selection_accuracy``, ``debate2_judge_accuracy`` and ``debate4_judge_accuracy``
    (fractions), the columns cons, D2t, D4t, J2t, J4t of REFERENCE B.
    """
    n_cells = store.attrs.get("grid", 6) ** 2
    reveal = store.attrs.get("reveal", 4)
    full = SweepPlan.build(n_cells, reveal)
    one = np.array([1])
    protocols = tuple(  # the games' exact values: each claim ranks by its own value
        Protocol(p.name, p.moves, one, one if p.is_debate else None, one if p.is_debate else None)
        for p in full.protocols
        if p.ranking == "claim"
    )
    plan = SweepPlan(n_cells, reveal, 1, 1, 1, protocols)
    res = run_sweep(store, labels, plan, where=where, progress=progress)
    return exact_columns(res)


def exact_columns(res: dict[str, np.ndarray]) -> dict[str, float]:
    """The five exact-play metrics (fractions) from combined sweep results, each with its
    standard error over images (``..._se``)."""
    out = {}
    for name in ("consultancy", "debate2", "debate4"):
        hits = res[f"{name}/exact_claim_correct"]
        out[f"{name}_selection_accuracy"] = float(hits.mean())
        out[f"{name}_selection_accuracy_se"] = standard_error(hits)
    for name in ("debate2", "debate4"):
        acc = res[f"{name}/exact_judge_accuracy"]
        out[f"{name}_judge_accuracy"] = float(acc.mean())
        out[f"{name}_judge_accuracy_se"] = standard_error(acc)
    return out


def timed(func, *args, **kwargs):
    """``(result, seconds)`` of one call."""
    start = time.perf_counter()
    result = func(*args, **kwargs)
    return result, time.perf_counter() - start
