"""Folders debatelab writes its outputs into (run folders, the static site), and the one rule
that keeps a user's files safe: debatelab writes only into a folder that is new, empty, or
holds an output of its own kind, and never deletes anything. An output that is replaced
(``--force``) is moved aside, whole, to a sibling folder.

Refused outright, whatever they hold: the home folder, the file-system root, the current folder
and any folder above it, and any folder with a ``.git`` (a repository is never an output)."""

from __future__ import annotations

import datetime as dt
import errno
import os
from collections.abc import Callable
from pathlib import Path

from .errors import DebatelabError


class OutputFolderError(DebatelabError):
    """An output folder that debatelab may not write into, or cannot."""


def _first_existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def check_output_folder(path: str | os.PathLike, holds_ours: Callable[[Path], bool],
                        what: str = "run folder", option: str = "--out") -> Path:  # fmt: skip
    """Check, before anything is written, that ``path`` may receive an output: return it
    resolved, or raise :class:`OutputFolderError` with what was wrong and what to do.

    ``holds_ours(path)`` says whether an existing, non-empty folder holds an output of this
    kind (a run folder: its ``config.json``)."""
    given = Path(path).expanduser()
    target = given.resolve()
    cwd, home = Path.cwd().resolve(), Path.home().resolve()
    if target == home or target == Path(target.anchor) or target in (cwd, *cwd.parents):
        where = ("your home folder" if target == home else "the current folder"
                 if target == cwd else "a folder above the current one")  # fmt: skip
        raise OutputFolderError(
            f"{option} {given}: that is {where}; debatelab writes each {what} into a folder of "
            f"its own: name a new one, e.g. {option} {given / 'runs' / 'my-run'}"
        )
    if target.is_file():
        raise OutputFolderError(f"{option} {given} is a file; name a folder for the {what}")
    if (target / ".git").exists():
        raise OutputFolderError(
            f"{option} {given} is a git repository; debatelab never writes a {what} into one: "
            "name a new folder"
        )
    if target.is_dir():
        try:
            empty = not any(target.iterdir())
        except OSError as exc:
            raise OutputFolderError(f"{option} {given} cannot be read ({exc.strerror})") from None
        if not empty and not holds_ours(target):
            raise OutputFolderError(
                f"{option} {given} holds files that are not a debatelab {what}; debatelab writes "
                "only into a new or empty folder or one of its own outputs: name another folder"
            )
    base = _first_existing(target)
    if not base.is_dir():
        raise OutputFolderError(f"{option} {given}: {base} is a file, so no folder can be made "
                                "under it; name another place")  # fmt: skip
    if not os.access(base, os.W_OK | os.X_OK):
        raise OutputFolderError(f"{option} {given}: {base} is not writable (read-only or not "
                                "yours); name a folder you can write to")  # fmt: skip
    return target


def make_output_folder(path: Path, option: str = "--out") -> None:
    """``mkdir -p``, with one clear error instead of an OSError traceback."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        reason = ("the file system is read-only" if exc.errno == errno.EROFS
                  else exc.strerror or str(exc))  # fmt: skip
        raise OutputFolderError(f"{option} {path}: cannot create it ({reason}); name a folder "
                                "you can write to") from None  # fmt: skip


def move_aside(path: Path) -> Path:
    """Move the output in ``path`` to a new sibling ``<name>.replaced-<time>`` (nothing is
    deleted) and return where it went."""
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        aside = path.with_name(f"{path.name}.replaced-{stamp}" + (f"-{n}" if n else ""))
        if not aside.exists():
            try:
                path.rename(aside)
            except OSError as exc:
                raise OutputFolderError(f"cannot move the previous output {path} aside to "
                                        f"{aside} ({exc.strerror})") from None  # fmt: skip
            return aside
    raise OutputFolderError(f"too many replaced copies beside {path}; remove some")
