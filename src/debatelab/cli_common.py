"""Pieces shared by the command-line modules."""

from __future__ import annotations

import functools

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
