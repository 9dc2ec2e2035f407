"""Where the published trained judges of the 2026 study (REFERENCE B) come from.

They are files of the study's public repository (:data:`REPOSITORY` at commit :data:`COMMIT`):
52 checkpoints under ``weights/<folder>/`` and their per-epoch metric arrays under
``results/<folder>/``, one folder per design and dataset (:data:`FOLDERS`).
:mod:`.published_manifest` lists the files debatelab reads with their sizes and sha256.

:func:`fetch` makes sure the files a command needs are in the cache,
``$DEBATELAB_CACHE/published-judges/<commit>/`` laid out like the repository: a missing (or
damaged) file is downloaded, checked against the manifest and only then moved into place, in one
rename; a later use reads the cache and downloads nothing. The downloads come from
raw.githubusercontent.com at the commit, or from ``$DEBATELAB_PUBLISHED_URL`` (or ``base_url``):
any server that holds the repository's layout (a mirror, a test's local server).
``$DEBATELAB_OFFLINE=1`` forbids them. :func:`local_copy` reads an offline copy instead
(``--published DIR``): a clone of the repository, or its judge folders side by side with their
arrays under ``curves/<folder>/``.
"""

from __future__ import annotations

import os
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..download import DownloadError, download_checked, intact, sha256_of
from ..errors import DebatelabError
from ..paths import OFFLINE_ENV, PUBLISHED_URL_ENV, cache_dir, offline
from ..progress import progress as progress_bar
from .published_manifest import COMMIT, REPOSITORY, TABLE

DEFAULT_URL = f"https://raw.githubusercontent.com/{REPOSITORY}/{COMMIT}/"
"""Where the files are downloaded from, by default: the repository's raw files at the commit."""
"""Seconds a download may wait for the server before it fails."""
#: (design, dataset variant) -> the repository's folder of its 13 judges.
FOLDERS = {
    ("D1", "mnist"): "trained_judges_D1_mnist",
    ("D3", "mnist"): "trained_judges_D3_mnist",
    ("D3", "fashionmnist-whitened"): "trained_judges_D3_fashionmnist_whitened",
    ("D2", "mnist"): "verifier_head_D2_mnist",
}
HOW_TO_COPY = (
    f"a local copy of https://github.com/{REPOSITORY} at commit {COMMIT[:8]} (a clone, or its "
    "weights/ and results/ folders)"
)


class PublishedError(DebatelabError):
    """The published judges cannot be had: downloads are off, the download failed, or what came
    does not match the manifest."""


@dataclass(frozen=True)
class Entry:
    """One file of the manifest: its path in the repository, size in bytes and sha256."""

    path: str
    size: int
    sha256: str

    @property
    def folder(self) -> str:
        """The judge folder it belongs to (e.g. ``trained_judges_D1_mnist``)."""
        return self.path.split("/")[1]

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[1]

    @property
    def is_judge(self) -> bool:
        return self.path.startswith("weights/")


def _parse(table: str) -> dict[str, Entry]:
    entries = {}
    for line in table.splitlines():
        sha, size, path = line.split()
        entries[path] = Entry(path, int(size), sha)
    return entries


#: repository path -> :class:`Entry`, for every file debatelab reads.
MANIFEST = _parse(TABLE)


def judge_entries(folders: Iterable[str] | None = None) -> list[Entry]:
    """The checkpoints of ``folders`` (default: all four), in the manifest's order."""
    wanted = set(FOLDERS.values() if folders is None else folders)
    unknown = sorted(wanted - set(FOLDERS.values()))
    if unknown:
        raise ValueError(f"--folders: no published judges in {', '.join(unknown)}; choose among "
                         f"{', '.join(sorted(FOLDERS.values()))}")  # fmt: skip
    return [e for e in MANIFEST.values() if e.is_judge and e.folder in wanted]


def curve_entries(folder: str) -> list[Entry]:
    """The per-epoch metric arrays of one judge folder."""
    return [e for e in MANIFEST.values() if not e.is_judge and e.folder == folder]


@dataclass(frozen=True)
class PublishedCopy:
    """A folder holding published judges, laid out like the repository (``weights/<folder>/``,
    ``results/<folder>/``) or as judge folders side by side with the arrays under
    ``curves/<folder>/``."""

    root: Path
    layout: str
    """``repository`` or ``folders``."""

    @property
    def weights(self) -> Path:
        """The folder whose subfolders hold the checkpoints."""
        return self.root / "weights" if self.layout == "repository" else self.root

    def path(self, repository_path: str) -> Path:
        """Where a file of the repository (``weights/...`` or ``results/...``) lies in this copy."""
        if self.layout == "repository":
            return self.root / repository_path
        top, rest = repository_path.split("/", 1)
        return self.root / rest if top == "weights" else self.root / "curves" / rest

    def judge_folders(self) -> list[Path]:
        """The subfolders that hold checkpoints (``*.pt``), sorted by name."""
        return sorted(p for p in self.weights.iterdir() if p.is_dir() and any(p.glob("*.pt")))


def local_copy(root: str | os.PathLike) -> PublishedCopy:
    """An offline copy of the published judges (``--published DIR``), as it is: not checked
    against the manifest, so it may hold a subset or other judges named like the published."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise ValueError(f"--published {root}: no such folder; give {HOW_TO_COPY}, or leave "
                         "--published out to download the published judges into the cache")  # fmt: skip
    return PublishedCopy(root, "repository" if (root / "weights").is_dir() else "folders")


def cache_root(cache: str | os.PathLike | None = None) -> Path:
    """The cache's copy of the published files (laid out like the repository)."""
    return cache_dir(cache) / "published-judges" / COMMIT


def base_url(url: str | None = None) -> str:
    """Where downloads come from: ``url``, else ``$DEBATELAB_PUBLISHED_URL``, else
    :data:`DEFAULT_URL`; always with a trailing slash."""
    url = url or os.environ.get(PUBLISHED_URL_ENV) or DEFAULT_URL
    return url if url.endswith("/") else url + "/"


def _intact(path: Path, entry: Entry) -> bool:
    return intact(path, entry.size, entry.sha256)


def fetch(entries: Iterable[Entry], cache: str | os.PathLike | None = None,
          url: str | None = None, progress: bool = False) -> PublishedCopy:  # fmt: skip
    """The cache's copy of the published files, with every file of ``entries`` in it: those not
    there yet (or not matching the manifest) are downloaded and checked first.

    Raises :class:`PublishedError` when downloads are off (``$DEBATELAB_OFFLINE``), when one
    fails, or when a downloaded file's size or sha256 differs from the manifest's (that file is
    not kept)."""
    root = cache_root(cache)
    entries = list(dict.fromkeys(entries))
    missing = [e for e in entries if not _intact(root / e.path, e)]
    if missing and offline():
        raise PublishedError(
            f"{len(missing)} of the {len(entries)} published files this needs are not in the "
            f"cache ({root}) and ${OFFLINE_ENV} forbids downloading them: give --published DIR, "
            f"{HOW_TO_COPY}, or unset ${OFFLINE_ENV} to download them "
            f"({sum(e.size for e in missing) / 1e6:.1f} MB)"
        )
    if missing:
        source = base_url(url)
        bar = progress_bar(total=sum(e.size for e in missing), enabled=progress, unit="B",
                           unit_scale=True, desc="published judges")  # fmt: skip
        with bar:
            for entry in missing:
                _download(entry, root / entry.path, source, bar)
    return PublishedCopy(root, "repository")


def _download(entry: Entry, dest: Path, source: str, bar) -> None:
    """Download one file into ``dest`` atomically; refuse it (keeping nothing) unless its size
    and sha256 are the manifest's."""
    url = source + urllib.parse.quote(entry.path)
    try:
        download_checked(url, dest, entry.size, entry.sha256, bar)
    except DownloadError as exc:
        if "was not kept" in str(exc):
            raise PublishedError(
                f"{entry.path}: {exc}. Run the command again to retry; if it fails again, that "
                f"server does not hold commit {COMMIT[:8]} of {REPOSITORY} (check "
                f"${PUBLISHED_URL_ENV}): give --published DIR, {HOW_TO_COPY}"
            ) from None
        raise PublishedError(
            f"{exc}; check the network (or ${PUBLISHED_URL_ENV}) and run again, or give "
            f"--published DIR, {HOW_TO_COPY}"
        ) from exc


def manifest_of(copy: PublishedCopy) -> str:
    """The manifest's lines (``sha256 size path``, sorted by path) of the judges and per-epoch
    arrays in a local copy, named by their repository paths: how :mod:`.published_manifest` is
    made."""
    lines = []
    for sub in copy.judge_folders():
        for f in sub.glob("*.pt"):
            lines.append((f"weights/{sub.name}/{f.name}", f))
        curves = copy.path(f"results/{sub.name}")
        for f in curves.glob("*_epoch_*.npy") if curves.is_dir() else ():
            lines.append((f"results/{sub.name}/{f.name}", f))
    return "".join(f"{sha256_of(f)} {f.stat().st_size} {p}\n" for p, f in sorted(lines))
