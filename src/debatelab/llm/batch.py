"""Batch back ends behind the ChatModel interface: calls gathered into provider batches.

A :class:`BatchModel` answers ``chat`` and ``verdict`` like any model, but each call waits in a
queue; when no new call has come for ``gather_seconds`` (or ``max_requests`` are waiting) the
queue goes to the provider as one batch, a poller asks for its state every ``poll_seconds``, and
when it has ended each call gets its own result. The pool generator runs every question's
calls of a level at once, so one level of a whole run becomes one batch.

Batches cost money and take time, so they are journaled (SQLite in the cache folder): every
request's ``custom_id`` (a hash of the provider, the request and its seed) with the batch that
carries it. A run killed while a batch is in flight, run again, finds its requests in the
journal and waits for that batch (or reads its results, which providers keep for weeks) instead
of submitting them again. Requests that failed on the provider's side (server errors, expiry,
cancellation) go into a later batch, at most ``retries`` times; requests the provider refused as
invalid fail at once, as :class:`~debatelab.llm.backends.ReplyError`, and their question is
recorded in failures.jsonl.

A provider (:class:`BatchProvider`) knows only its wire protocol: the body of a request, how to
submit a batch, whether it has ended, and its results.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ..errors import DebatelabError
from .backends import BackendError, Reply, ReplyError


class BatchGone(DebatelabError):
    """The provider no longer knows a batch (its results expired, or another account's):
    its requests are submitted again."""


@dataclass(frozen=True)
class Outcome:
    """One request's result in a finished batch: ``ok`` with the provider's reply object,
    ``retry`` (the provider failed it: server error, expired, cancelled) or ``fail`` (refused)."""

    kind: str
    value: object = None
    message: str = ""


class BatchProvider(Protocol):
    name: str
    """Provider, model and address: part of every request's custom_id."""
    discount: float
    """The batch price as a fraction of the synchronous price (both providers: 0.5)."""

    def chat_body(self, messages: list[dict], temperature: float, max_tokens: int,
                  seed: int) -> dict: ...  # fmt: skip

    def verdict_body(self, messages: list[dict]) -> dict: ...

    def submit(self, requests: list[tuple[str, dict]]) -> str: ...

    def ended(self, batch_id: str) -> bool: ...

    def results(self, batch_id: str, custom_ids: set[str]) -> dict[str, Outcome]: ...

    def chat_reply(self, value: object) -> Reply: ...

    def verdict_reply(self, value: object, candidates: tuple[str, ...]) -> Reply: ...


class BatchJournal:
    """Which batch carries each request, on disk (one SQLite file, safe across threads)."""

    def __init__(self, path: str | Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS requests (custom_id TEXT PRIMARY KEY, "
                         "batch_id TEXT NOT NULL)")  # fmt: skip
        self._db.execute("CREATE TABLE IF NOT EXISTS batches (batch_id TEXT PRIMARY KEY, "
                         "provider TEXT NOT NULL, submitted REAL NOT NULL, size INTEGER)")  # fmt: skip
        self._lock = threading.Lock()

    def batch_of(self, custom_id: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT batch_id FROM requests WHERE custom_id=?",
                                   (custom_id,)).fetchone()  # fmt: skip
        return None if row is None else row[0]

    def record(self, provider: str, batch_id: str, ids: list[str]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            self._db.execute("INSERT OR REPLACE INTO batches VALUES (?, ?, ?, ?)",
                             (batch_id, provider, time.time(), len(ids)))  # fmt: skip
            self._db.executemany("INSERT OR REPLACE INTO requests VALUES (?, ?)",
                                 [(i, batch_id) for i in ids])  # fmt: skip
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()


@dataclass
class _Call:
    custom_id: str
    body: dict
    candidates: tuple[str, ...] | None  # None: a chat call
    future: Future
    attempts: int = 1


class BatchModel:
    """A ChatModel whose calls travel in provider batches (see the module's docstring)."""

    batched = True

    def __init__(self, provider: BatchProvider, journal: str | Path, *, poll_seconds: float = 30.0,
                 gather_seconds: float = 2.0, max_requests: int = 10_000, retries: int = 2,
                 concurrency: int = 1024):  # fmt: skip
        if poll_seconds <= 0 or gather_seconds < 0:
            raise ValueError("poll and gather times must be positive")
        self.provider, self.name = provider, provider.name
        self.concurrency = concurrency
        self.poll_seconds, self.gather_seconds = poll_seconds, gather_seconds
        self.max_requests, self.retries = max_requests, retries
        self.journal = BatchJournal(journal)
        self._lock = threading.Condition()
        self._pending: list[_Call] = []
        self._last_add = 0.0
        self._waiting: dict[str, list[_Call]] = {}  # custom_id -> calls waiting for it
        self._in_flight: dict[str, set[str]] = {}  # batch_id -> custom_ids
        self._fatal: BaseException | None = None
        self._closed = False
        self._poll_wake = threading.Event()
        self.batches_submitted = 0
        self.requests_submitted = 0
        self.batches_resumed = 0
        for target in (self._gather_loop, self._poll_loop):
            threading.Thread(target=self._guarded, args=(target,), daemon=True).start()

    def _guarded(self, loop) -> None:
        """Runs a background loop; anything it raises fails every waiting call with the reason
        (a caller never waits on a thread that has died)."""
        try:
            loop()
        except BackendError as exc:
            self._fail_all(exc)
        except Exception as exc:  # noqa: BLE001 - reported to every caller, not swallowed
            self._fail_all(BackendError(f"{self.name}: {type(exc).__name__}: {exc}"))

    # -- the ChatModel interface ---------------------------------------------------------------
    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int,
             seed: int) -> Reply:  # fmt: skip
        body = self.provider.chat_body(messages, temperature, max_tokens, seed)
        return self._call(body, seed, None)

    def verdict(self, messages: list[dict], candidates: tuple[str, ...]) -> Reply:
        return self._call(self.provider.verdict_body(messages), 0, tuple(candidates))

    def close(self) -> None:
        """Stop the background threads and fail every call still waiting or queued (a closed
        model takes no new call). Batches in flight stay journaled: the next run picks them
        up."""
        self._fail_all(BackendError(f"{self.name}: the model was closed"))
        with self._lock:
            self._closed = True
            self._lock.notify_all()
        self._poll_wake.set()
        self.journal.close()

    # -- calls ---------------------------------------------------------------------------------
    def _custom_id(self, body: dict, seed: int) -> str:
        blob = json.dumps({"provider": self.name, "body": body, "seed": seed}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()  # 64 characters of [0-9a-f]

    def _call(self, body: dict, seed: int, candidates) -> Reply:
        call = _Call(self._custom_id(body, seed), body, candidates, Future())
        with self._lock:
            if self._fatal is not None:
                raise BackendError(str(self._fatal))
        known = self.journal.batch_of(call.custom_id)
        with self._lock:
            if self._fatal is not None:
                raise BackendError(str(self._fatal))
            waiting = self._waiting.setdefault(call.custom_id, [])
            waiting.append(call)
            if len(waiting) == 1:  # the first caller of this request decides where it goes
                if known is not None:  # submitted by an earlier sitting: wait for that batch
                    # (attempts count within a run: a rerun gives failed requests new tries)
                    if known not in self._in_flight:
                        self.batches_resumed += 1
                    self._in_flight.setdefault(known, set()).add(call.custom_id)
                    self._poll_wake.set()
                else:
                    self._pending.append(call)
                    self._last_add = time.monotonic()
                self._lock.notify_all()
        value = call.future.result()
        if isinstance(value, BaseException):
            raise value
        return value

    def _resolve(self, custom_id: str, outcome: Outcome) -> None:
        """Give every caller of ``custom_id`` its reply (or error); called with the lock held."""
        calls = self._waiting.pop(custom_id, [])
        if not calls:
            return
        first = calls[0]
        try:
            if outcome.kind != "ok":
                raise ReplyError(f"{self.name}: {outcome.message}")
            if first.candidates is None:
                value = self.provider.chat_reply(outcome.value)
            else:
                value = self.provider.verdict_reply(outcome.value, first.candidates)
        except ReplyError as exc:
            value = exc
        for call in calls:
            call.future.set_result(value)

    def _fail_all(self, exc: BaseException) -> None:
        with self._lock:
            self._fatal = exc
            for calls in self._waiting.values():
                for call in calls:
                    call.future.set_result(BackendError(str(exc)))
            self._waiting.clear()
            self._pending.clear()

    # -- background threads --------------------------------------------------------------------
    def _gather_loop(self) -> None:
        while True:
            with self._lock:
                while not self._closed:
                    quiet = time.monotonic() - self._last_add
                    if self._pending and (quiet >= self.gather_seconds
                                          or len(self._pending) >= self.max_requests):  # fmt: skip
                        break
                    self._lock.wait(timeout=max(0.01, self.gather_seconds - quiet)
                                    if self._pending else None)  # fmt: skip
                if self._closed:
                    return
                calls = self._pending[: self.max_requests]
                del self._pending[: len(calls)]
            batch_id = self.provider.submit([(c.custom_id, c.body) for c in calls])
            self.journal.record(self.name, batch_id, [c.custom_id for c in calls])
            with self._lock:
                self.batches_submitted += 1
                self.requests_submitted += len(calls)
                self._in_flight.setdefault(batch_id, set()).update(c.custom_id for c in calls)
                self._lock.notify_all()
            self._poll_wake.set()

    def _poll_loop(self) -> None:
        """Every ``poll_seconds`` (and when a batch joins), ask each batch in flight whether it
        has ended. A poll that fails after the client's retries (a 5xx, a 429) is tried again
        at the next round with a longer wait; only an unreachable or unauthorised provider
        (BackendError) stops the run."""
        wait = self.poll_seconds
        while True:
            self._poll_wake.wait(timeout=wait)
            self._poll_wake.clear()
            with self._lock:
                if self._closed:
                    return
                batches = {b: set(ids) for b, ids in self._in_flight.items()}
            try:
                for batch_id, ids in batches.items():
                    try:
                        if self.provider.ended(batch_id):
                            self._collect(batch_id, ids, self.provider.results(batch_id, ids))
                    except BatchGone:  # every request comes back as missing: resubmitted
                        self._collect(batch_id, ids, {})
                wait = self.poll_seconds
            except ReplyError:
                wait = min(wait * 2, 3600.0)

    def _collect(self, batch_id: str, ids: set[str], outcomes: dict[str, Outcome]) -> None:
        with self._lock:
            # only the requests collected leave: a resumed caller may have joined meanwhile
            left = self._in_flight.get(batch_id, set()) - ids
            if left:
                self._in_flight[batch_id] = left
                self._poll_wake.set()
            else:
                self._in_flight.pop(batch_id, None)
            for cid in ids:
                outcome = outcomes.get(cid, Outcome("retry", message="missing from the results"))
                calls = self._waiting.get(cid)
                if outcome.kind == "retry" and calls and calls[0].attempts <= self.retries:
                    call = calls[0]
                    call.attempts += 1
                    self._pending.append(call)
                    self._last_add = time.monotonic()
                    continue
                if outcome.kind == "retry":
                    outcome = Outcome("fail", message=f"{outcome.message} (after "
                                      f"{self.retries + 1} batches)")  # fmt: skip
                self._resolve(cid, outcome)
            self._lock.notify_all()
