"""The run log: every run folder's ``log.jsonl``, one event a line, and a concise line per stage
on standard output when that is not a terminal (``debatelab run ... > log`` reads as a log).

Built on the standard library's :mod:`logging`: library code logs events to its module's logger
under ``debatelab`` with :func:`log_event` (a stage's start and end, a finished epoch with its
loss and accuracy, a finished chunk, a question's model calls, a warning) and knows nothing of
run folders; a :class:`RunLog`, opened by the run folder, attaches its handlers to the
``debatelab`` logger (and to Python's warnings) for the run's duration. Each opening of a run
folder is a *sitting*: a run killed and resumed logs both, the second marked as a resume.

Event lines are JSON objects with ``time`` (UTC, ISO 8601), ``sitting``, ``event``, ``message``
and the event's own fields. Events: ``sitting_started`` (command, argv, resumed),
``stage_started`` / ``stage_progress`` / ``stage_finished`` (stage, done, total, seconds, eta_s),
``epoch`` (the training history entry), ``piece_done`` (a chunk of a long run), ``question_done``
(a question's model calls), ``warning``, ``error``, ``sitting_finished`` (wall_time_s); all but
``sitting_started``, ``piece_done`` and ``error`` are also stage lines.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
import time
from pathlib import Path
from typing import IO, Any

LOG_NAME = "log.jsonl"
#: Events printed as stage lines when standard output is not a terminal (the others go to the
#: log file only: a sitting's start says nothing the command line did not, and an error is
#: already the command's one error message, so bad input stays one line).
LINE_EVENTS = {"stage_started", "stage_progress", "stage_finished", "epoch", "question_done",
               "warning", "sitting_finished"}  # fmt: skip
ROOT = "debatelab"
#: The events that open and close a sitting (each logged to its own run folder's log only).
SITTING_EVENTS = {"sitting_started", "sitting_finished", "error"}
_OPEN: list[RunLog] = []


def log_event(logger: logging.Logger | str, event: str, message: str, level: int = logging.INFO,
              **fields: Any) -> None:  # fmt: skip
    """Log one event (``message`` is the human line, ``fields`` its data) to ``logger``, a
    logger under ``debatelab`` or its name; nothing is written unless a run log listens."""
    if isinstance(logger, str):
        logger = logging.getLogger(logger)
    logger.log(level, message, extra={"event": event, "fields": fields})


def _iso(created: float) -> str:
    return dt.datetime.fromtimestamp(created, dt.UTC).isoformat(timespec="milliseconds")


class _JsonLines(logging.Formatter):
    def __init__(self, sitting: int):
        super().__init__()
        self.sitting = sitting

    def format(self, record: logging.LogRecord) -> str:
        event = getattr(record, "event", None)
        if event is None:  # a plain log record or a Python warning
            event = "warning" if record.levelno >= logging.WARNING else "log"
        line = {"time": _iso(record.created), "sitting": self.sitting, "event": event,
                "message": record.getMessage(), **getattr(record, "fields", {})}  # fmt: skip
        if record.name != ROOT and not record.name.startswith(f"{ROOT}."):
            line["logger"] = record.name
        return json.dumps(line, default=str)


class _StageLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        stamp = dt.datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        text = record.getMessage().strip()
        return f"[{stamp}] {text.splitlines()[0] if text else ''}"  # a warning's source aside


class _LineFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        event = getattr(record, "event", None)
        if getattr(record, "fields", {}).get("nested"):  # a stage inside a stage: file only
            return False
        return event in LINE_EVENTS or (event is None and record.levelno >= logging.WARNING)


class _OwnSittings(logging.Filter):
    """A run inside a run (the study's variants) logs its own sittings: the outer log keeps
    the inner run's stages and epochs, not its start and end, which are the outer's alone."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = folder

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "event", None) not in SITTING_EVENTS:
            return True
        return getattr(record, "fields", {}).get("folder") == self.folder


def _end_torn_line(path: Path) -> None:
    """A kill can leave the log's last line half written: end it, so the next sitting's first
    event is a line of its own."""
    try:
        with open(path, "rb+") as fh:
            fh.seek(0, 2)
            if fh.tell() and (fh.seek(-1, 2), fh.read(1))[1] != b"\n":
                fh.write(b"\n")
    except FileNotFoundError:
        pass


def sittings(path: Path) -> list[dict]:
    """The ``sitting_started`` events of a log file, in order (none if it does not exist)."""
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(line)
        except ValueError:  # a line torn by a kill: the events before and after it stand
            continue
        if isinstance(event, dict) and event.get("event") == "sitting_started":
            out.append(event)
    return out


def read_log(path: Path) -> list[dict]:
    """Every event of a log file (a torn last line, from a kill, is skipped)."""
    if not Path(path).is_file():
        return []
    events = []
    for line in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return events


def sittings_wall_time(events: list[dict]) -> float:
    """The seconds of every sitting in ``events`` (a resumed run's add up): a finished or
    failed sitting's own wall time, a killed or still open one's until its last event."""
    total, open_since, last = 0.0, None, None
    for e in events:
        if e.get("event") == "sitting_started":
            if open_since is not None:  # a killed sitting: until its last event
                total += max(0.0, _seconds(last) - _seconds(open_since))
            open_since = e.get("time")
        elif e.get("event") in ("sitting_finished", "error"):
            total += float(e.get("wall_time_s", 0.0))
            open_since = None
        last = e.get("time") or last
    if open_since is not None:
        total += max(0.0, _seconds(last) - _seconds(open_since))
    return round(total, 3)


def _seconds(stamp: str | None) -> float:
    return dt.datetime.fromisoformat(stamp).timestamp() if stamp else 0.0


class RunLog:
    """The log of one sitting of a run folder: appends to ``folder/log.jsonl`` and, when
    ``lines`` (default: standard output is not a terminal), prints stage lines to ``stream``."""

    def __init__(self, folder: Path, command: str, lines: bool | None = None,
                 stream: IO[str] | None = None):  # fmt: skip
        self.path = Path(folder) / LOG_NAME
        self.folder = str(folder)
        previous = sittings(self.path)
        self.sitting = len(previous) + 1
        self.started = time.time()
        stream = stream or sys.stdout
        if lines is None:  # a run inside a run (the study's variants) prints through the outer
            lines = not _isatty(stream) and not _OPEN
        _OPEN.append(self)
        self.handlers: list[logging.Handler] = []
        own = _OwnSittings(self.folder)
        _end_torn_line(self.path)
        file_handler = logging.FileHandler(self.path, mode="a", encoding="utf-8")
        file_handler.setFormatter(_JsonLines(self.sitting))
        file_handler.addFilter(own)
        self.handlers.append(file_handler)
        if lines:
            line_handler = logging.StreamHandler(stream)
            line_handler.setFormatter(_StageLine())
            line_handler.addFilter(_LineFilter())
            line_handler.addFilter(own)
            self.handlers.append(line_handler)
        self.loggers = [logging.getLogger(ROOT), logging.getLogger("py.warnings")]
        self._levels = [lg.level for lg in self.loggers]
        for lg in self.loggers:
            lg.setLevel(logging.INFO)
            for h in self.handlers:
                lg.addHandler(h)
        # hooked afresh at every opening: whoever swapped ``warnings.showwarning`` since (a test
        # runner, a notebook) would otherwise keep this sitting's warnings out of its log
        logging.captureWarnings(False)
        logging.captureWarnings(True)
        resumed = bool(previous)
        log_event(ROOT, "sitting_started",
                  f"{command}: sitting {self.sitting}" + (" (resuming the run in this folder)"
                                                          if resumed else ""),
                  command=command, argv=sys.argv, resumed=resumed, folder=self.folder)  # fmt: skip

    def event(self, event: str, message: str, **fields: Any) -> None:
        log_event(ROOT, event, message, **fields)

    def close(self, status: str = "finished", message: str | None = None) -> None:
        """The sitting's last event (``sitting_finished``, or ``error`` with ``message``), then
        the handlers are detached."""
        if not self.handlers:
            return
        wall = round(time.time() - self.started, 3)
        if status == "finished":
            log_event(ROOT, "sitting_finished", f"finished in {duration(wall)}",
                      wall_time_s=wall, folder=self.folder)  # fmt: skip
        else:
            log_event(ROOT, "error", f"stopped: {message}", logging.ERROR, wall_time_s=wall,
                      status=status, folder=self.folder)  # fmt: skip
        for lg, level in zip(self.loggers, self._levels, strict=True):
            for h in self.handlers:
                lg.removeHandler(h)
            lg.setLevel(level)
        for h in self.handlers:
            h.close()
        self.handlers = []
        if self in _OPEN:
            _OPEN.remove(self)
        if not _OPEN:
            logging.captureWarnings(False)


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def duration(seconds: float) -> str:
    """Seconds as a person reads them: 42.0 s, 3 min 05 s, 2 h 10 min."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
