"""Pieces shared by the command-line modules."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from .errors import DebatelabError


def friendly_errors(func):
    """Turn bad-input errors into one clear message instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (DebatelabError, ValueError, FileNotFoundError) as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def path_options(func):
    """``--data-dir`` and ``--cache-dir``, which every command that touches data takes."""
    func = click.option(
        "--cache-dir", type=click.Path(file_okay=False, path_type=Path),
        help="Cache of trained judges and stores (default: $DEBATELAB_CACHE, else "
        "~/.cache/debatelab).",
    )(func)  # fmt: skip
    return click.option(
        "--data-dir", type=click.Path(file_okay=False, path_type=Path),
        help="Dataset root (default: $DEBATELAB_DATA, else ~/.cache/debatelab/data).",
    )(func)  # fmt: skip
