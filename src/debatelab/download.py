"""Downloads checked against a known size and sha256, written atomically (one function for the
published judges and the model files)."""

from __future__ import annotations

import hashlib
import http.client
import urllib.error
import urllib.request
from pathlib import Path

from .atomic import atomic_path
from .errors import DebatelabError

TIMEOUT = 60


class DownloadError(DebatelabError):
    """A download that failed or did not match its size and sha256 (nothing was kept)."""


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def intact(path: Path, size: int, sha256: str) -> bool:
    """Whether ``path`` is a file of exactly this size and sha256."""
    return path.is_file() and path.stat().st_size == size and sha256_of(path) == sha256


def download_checked(url: str, dest: Path, size: int, sha256: str, bar=None) -> None:
    """Download ``url`` into ``dest`` atomically; refuse it (keeping nothing) unless its size
    and sha256 are the ones given. Raises :class:`DownloadError` saying what went wrong."""
    digest, got = hashlib.sha256(), 0
    with atomic_path(dest) as tmp, tmp.open("wb") as out:
        try:
            with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                for block in iter(lambda: response.read(1 << 16), b""):
                    got += len(block)
                    if got > size:  # no use reading on: it cannot match
                        break
                    out.write(block)
                    digest.update(block)
                    if bar is not None:
                        bar.update(len(block))
        except (urllib.error.URLError, http.client.HTTPException, TimeoutError, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise DownloadError(f"could not download {url} ({reason})") from exc
        if got != size or digest.hexdigest() != sha256:
            if got != size:
                more = "more than " if got > size else ""
                have, want = f"{more}{min(got, size):,} bytes", f"{size:,} bytes"
            else:
                have, want = f"sha256 {digest.hexdigest()}", f"sha256 {sha256}"
            raise DownloadError(f"the download from {url} has {have}, expected {want}, so it "
                                "was not kept")  # fmt: skip
