"""Where the independent pieces of a long run execute: here, or on a Ray cluster.

Every long command splits its work into pieces that are already keyed for resume (all-mask
store chunks, sweep chunks, pixel-game chunks, trained judges). :func:`run_pieces` runs a
top-level function over such pieces and yields each result *to the driver* as it finishes, in
any order; the driver alone writes results (atomically) into the run folder, store or cache.
So a run can move between local execution and a cluster and resume either way, and a piece
that is retried after a worker died is still written once.

- ``local`` (the default; no Ray needed): in this process, or in ``workers`` processes.
- ``ray`` starts a local Ray instance; ``ray:auto`` joins the running cluster (``ray start``);
  ``ray:HOST:PORT`` joins the cluster at that address. Each piece becomes a Ray task with its
  resource needs (CPUs; a GPU for a judge trained on a GPU node), retried when its worker
  dies. Workers must see the same data and cache folders as the driver (a shared filesystem,
  see docs/cluster.md).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from .errors import MissingExtraError
from .runlog import log_event

_log = logging.getLogger(__name__)

#: How often Ray reruns a piece whose worker process died before giving up.
RAY_RETRIES = 3


@dataclass(frozen=True)
class Cluster:
    """Where pieces run: ``kind`` ``local`` (in ``workers`` processes) or ``ray``; ``address`` of
    a Ray cluster (None: start a local instance; ``auto``: the running one)."""

    kind: str = "local"
    address: str | None = None
    workers: int = 1

    @classmethod
    def parse(cls, text: str | None, workers: int = 1) -> Cluster:
        """``local``, ``ray``, ``ray:auto`` or ``ray:HOST:PORT`` (``workers``: local processes)."""
        text = (text or "local").strip()
        if text == "local":
            return cls(workers=workers)
        if text == "ray":
            return cls("ray", workers=workers)
        if text.startswith("ray:") and len(text) > 4:
            return cls("ray", text[4:], workers)
        raise ValueError(f"{text!r}: use local, ray (a local Ray instance), ray:auto "
                         "(join the running cluster) or ray:HOST:PORT")  # fmt: skip

    def __str__(self) -> str:
        return self.kind if self.address is None else f"{self.kind}:{self.address}"

    @classmethod
    def of(cls, where: Cluster | str | int | None) -> Cluster:
        """A :class:`Cluster` from one (as is), a ``--cluster`` text, or a number of local
        worker processes."""
        if isinstance(where, Cluster):
            return where
        if isinstance(where, int):
            if where < 1:
                raise ValueError(f"workers must be >= 1, got {where}")
            return cls(workers=where)
        return cls.parse(where)


def ray_module():
    """Ray, or one clear error that says how to install it."""
    try:
        import ray
    except ImportError:
        raise MissingExtraError('--cluster ray needs Ray: pip install "debatelab[ray]" (or pip '
                                'install "ray>=2.9"), or run with --cluster local') from None  # fmt: skip
    return ray


def _connect(cluster: Cluster):
    ray = ray_module()
    if not ray.is_initialized():
        # DEBATELAB_* only: Ray gives each task OMP_NUM_THREADS = its CPUs
        env = {"env_vars": {k: v for k, v in os.environ.items() if k.startswith("DEBATELAB_")}}
        ray.init(address=cluster.address, runtime_env=env, log_to_driver=False,
                 include_dashboard=False, configure_logging=False)  # fmt: skip
    return ray


def run_pieces(fn: Callable[[Any], Any], pieces: Iterable[Any],
               where: Cluster | str | int | None = None, *, num_cpus: float = 1,
               num_gpus: float = 0) -> Iterator[tuple[int, Any]]:  # fmt: skip
    """Run ``fn(piece)`` for every piece and yield ``(index, result)`` as each finishes.

    ``where``: a :class:`Cluster`, a ``--cluster`` text or a number of local processes.
    ``fn`` must be a top-level (picklable) function and deterministic in its piece, so that a
    retried piece returns the same result. Local: in order in this process (one worker) or in
    a process pool; Ray: one task per piece with ``num_cpus`` / ``num_gpus``, retried up to
    :data:`RAY_RETRIES` times if its worker dies."""
    name = getattr(fn, "__name__", "piece").lstrip("_")
    began = time.time()
    for index, result in _run_pieces(fn, pieces, where, num_cpus, num_gpus):
        log_event(_log, "piece_done", f"{name} {index} done", piece=index, kind=name,
                  seconds=round(time.time() - began, 2))  # fmt: skip
        yield index, result


def _run_pieces(fn, pieces, where, num_cpus, num_gpus):
    cluster = Cluster.of(where)
    workers = cluster.workers
    pieces = list(pieces)
    if not pieces:
        return
    if cluster.kind == "ray":
        ray = _connect(cluster)
        task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=RAY_RETRIES)(fn)
        pending = {task.remote(p): i for i, p in enumerate(pieces)}
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                for ref in ready:
                    yield pending.pop(ref), ray.get(ref)
        finally:  # a piece that raised, or a driver that stops: the rest is not wanted
            for ref in pending:
                ray.cancel(ref, force=True)
        return
    if workers > 1 and len(pieces) > 1:
        pool = ProcessPoolExecutor(min(workers, len(pieces)))
        try:
            futures = {pool.submit(fn, p): i for i, p in enumerate(pieces)}
            for future in as_completed(futures):
                yield futures[future], future.result()
        finally:
            pool.shutdown(cancel_futures=True)
        return
    for i, p in enumerate(pieces):
        yield i, fn(p)
