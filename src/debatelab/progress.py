"""Progress bars that show on a terminal and stay quiet in logs and CI; each bar is also a
*stage* of the run log (:mod:`debatelab.runlog`): its start, its progress with an ETA at most
every :data:`PROGRESS_SECONDS`, and its end go to ``log.jsonl`` and, when standard output is
not a terminal, as one line each to the output."""

from __future__ import annotations

import logging
import time
import weakref

from tqdm.auto import tqdm

from .runlog import duration, log_event

#: Seconds between two ``stage_progress`` events of one bar.
PROGRESS_SECONDS = 30.0
_log = logging.getLogger("debatelab.progress")
_OPEN_STAGES: weakref.WeakSet = weakref.WeakSet()  # the stage bars open now


class _StageBar(tqdm):
    """A tqdm bar that logs itself as a stage (shown or not: ``--quiet`` hides the bar, the
    run log still gets the stage)."""

    def __init__(self, iterable=None, *, stage: bool = True, **kwargs):
        super().__init__(iterable, **kwargs)
        # a disabled tqdm keeps none of these: the stage keeps its own
        self._desc, self._unit = kwargs.get("desc") or "work", kwargs.get("unit", "it")
        self._total = kwargs.get("total")
        if self._total is None and hasattr(iterable, "__len__"):
            self._total = len(iterable)
        self._stage = stage
        # a stage inside another (one chunk's pass inside a dump) goes to the log file, but
        # prints no line: the outer stage's lines say how the run goes
        self._nested = bool(_OPEN_STAGES)
        if stage:
            _OPEN_STAGES.add(self)
        self._began = self._last = time.time()
        self._done = self._initial = int(kwargs.get("initial", 0) or 0)
        self._finished = False
        if self._stage:
            total = self._total
            log_event(_log, "stage_started",
                      f"{self._name()}: started" + (f", {self._count(total)}" if total else ""),
                      stage=self._name(), total=total, done=self._done,
                      **self._nesting())  # fmt: skip

    def _nesting(self) -> dict:
        return {"nested": True} if self._nested else {}

    def _name(self) -> str:
        return str(self._desc).rstrip(": ")

    def _count(self, n) -> str:
        unit = self._unit if self._unit != "it" else "steps"
        if unit == "B":
            return f"{n / 1e6:,.1f} MB"
        if n == 1 or unit.endswith("s"):
            return f"{n:,} {unit}"
        return f"{n:,} {unit}" + ("es" if unit.endswith(("ch", "sh", "x", "z")) else "s")

    def _tick(self, n: float) -> None:
        self._done += n
        now = time.time()
        if self._stage and now - self._last >= PROGRESS_SECONDS:
            self._last = now
            elapsed = now - self._began
            eta = None
            if self._total and self._done > 0:
                rate = (self._done - self._initial) / elapsed if elapsed > 0 else 0
                eta = (self._total - self._done) / rate if rate > 0 else None
            msg = f"{self._name()}: {self._count(self._done)}"
            msg += f" of {self._count(self._total)}" if self._total else ""
            msg += f", {duration(elapsed)}" + (f", ETA {duration(eta)}" if eta is not None else "")
            log_event(_log, "stage_progress", msg, stage=self._name(), done=self._done,
                      total=self._total, seconds=round(elapsed, 2),
                      eta_s=None if eta is None else round(eta, 1), **self._nesting())  # fmt: skip

    def update(self, n=1):
        if not getattr(self, "_iterating", False):  # tqdm's own iteration updates in steps
            self._tick(n)
        return super().update(n)

    def __iter__(self):
        self._iterating = True
        try:
            for item in super().__iter__():
                yield item
                self._tick(1)
        finally:
            self._iterating = False
            self.close()

    def close(self):
        if self._stage and not getattr(self, "_finished", True):
            self._finished = True
            elapsed = time.time() - self._began
            log_event(_log, "stage_finished",
                      f"{self._name()}: done, {self._count(self._done)} in {duration(elapsed)}",
                      stage=self._name(), done=self._done, total=self._total,
                      seconds=round(elapsed, 2), **self._nesting())  # fmt: skip
        _OPEN_STAGES.discard(self)
        return super().close()


def progress(iterable=None, *, enabled: bool = True, stage: bool = True, **kwargs):
    """A tqdm bar, shown only when ``enabled`` and the output is a terminal; unless ``stage``
    is False (a loop logged otherwise, such as one epoch's batches), it is a stage of the run
    log as well."""
    kwargs.setdefault("dynamic_ncols", True)
    return _StageBar(iterable, disable=None if enabled else True, stage=stage, **kwargs)
