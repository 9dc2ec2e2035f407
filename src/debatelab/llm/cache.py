"""Every model call on disk, keyed by everything that decides its reply.

The key hashes the back end and model, the call kind (chat or verdict), the messages, the
sampling settings and the sample index, so a run killed at any moment repeats no finished
call, and a second run with a larger N reuses the first N samples. The store is one SQLite file
in the cache folder (each insert is one transaction: a crash loses at most the call in flight);
it is shared by every run folder that uses the same cache.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from .backends import Reply, ReplyError


def call_key(model_name: str, kind: str, messages: list[dict], settings: dict,
             sample: int) -> str:  # fmt: skip
    """The cache key of one call."""
    blob = json.dumps({"model": model_name, "kind": kind, "messages": messages,
                       "settings": settings, "sample": sample}, sort_keys=True)  # fmt: skip
    return hashlib.sha256(blob.encode()).hexdigest()


class CallCache:
    """A thread-safe key -> reply store with per-role counts of calls made and served."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, reply TEXT)")
        self.counts: dict[str, dict[str, int]] = defaultdict(
            lambda: {"calls_made": 0, "calls_cached": 0, "prompt_tokens": 0,
                     "completion_tokens": 0, "failures": 0, "seconds": 0.0})  # fmt: skip

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else Reply.from_json(json.loads(row[0]))

    def put(self, key: str, reply: Reply) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)",
                             (key, json.dumps(reply.to_json())))  # fmt: skip

    def call(self, role: str, key: str, make: Callable[[], Reply]) -> Reply:
        """The cached reply of ``key``, else ``make()`` stored under it; counted for ``role``.
        A reply that is not usable (:meth:`Reply.check`) raises :class:`ReplyError` here, cached
        or not: the caller records the failure, and a rerun records it again without a call."""
        try:
            reply = self.get(key)
        except (ValueError, KeyError, TypeError):  # a row that is not a reply: make it again
            reply = None
        cached = reply is not None
        seconds = 0.0
        if not cached:
            start = time.perf_counter()
            reply = make()
            seconds = time.perf_counter() - start
            self.put(key, reply)
        try:
            reply.check(role)
            error = None
        except ReplyError as exc:
            error = exc
        with self._lock:
            count = self.counts[role]
            count["calls_cached" if cached else "calls_made"] += 1
            count["seconds"] += seconds  # time in the call, waits for a free model included
            if error is None:
                count["prompt_tokens"] += reply.prompt_tokens
                count["completion_tokens"] += reply.completion_tokens
        if error is not None:
            raise error
        return reply

    def failed(self, role: str) -> None:
        with self._lock:
            self.counts[role]["failures"] += 1

    def close(self) -> None:
        with self._lock:
            self._db.close()
