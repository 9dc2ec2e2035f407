"""Command-line pieces: error handling, path options, and experiment commands generated from
their config dataclasses (each option's name, type, default and help come from the dataclass
field and its docstring, so they are written once)."""

from __future__ import annotations

import functools
import typing
from pathlib import Path

import click

from .configs import ConfigField, config_fields, config_from_flat, literal_choices
from .errors import DebatelabError

#: Errors that mean bad input: shown as one message, not a traceback.
USER_ERRORS = (DebatelabError, ValueError, FileNotFoundError)


def friendly_errors(func):
    """Turn bad-input errors into one clear message instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except USER_ERRORS as exc:
            raise click.ClickException(str(exc)) from exc

    return wrapper


def server_options(port: int, what: str):
    """``--host`` (default 127.0.0.1) and ``--port``, for the commands that serve a page."""

    def decorate(func):
        func = click.option("--port", type=click.IntRange(1, 65535), default=port,
                            show_default=True, help="TCP port.")(func)  # fmt: skip
        return click.option("--host", default="127.0.0.1", show_default=True,
                            help=f"Interface to listen on (the default keeps {what} on this "
                                 "machine).")(func)  # fmt: skip

    return decorate


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


def parse_ints(text: str, name: str) -> tuple[int, ...]:
    """'1:20' (inclusive range), '1:20:2' (with a step) or '1,2,5,10'."""
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi, step = (*parts, 1) if len(parts) == 2 else parts
            values = tuple(range(lo, hi + 1, step))
        else:
            values = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: use 'a:b', 'a:b:step' or 'a,b,c'",
                                 param_hint=name) from None  # fmt: skip
    if not values or min(values) < 1:
        raise click.BadParameter(f"{text!r}: needs positive integers", param_hint=name)
    return values


def format_ints(values) -> str:
    """The shortest of 'a:b', 'a:b:step' and 'a,b,c' for a tuple of ints."""
    values = tuple(values)
    if len(values) > 2:
        step = values[1] - values[0]
        if step > 0 and values == tuple(range(values[0], values[-1] + 1, step)):
            return f"{values[0]}:{values[-1]}" + (f":{step}" if step > 1 else "")
    return ",".join(str(v) for v in values)


class _IntTuple(click.ParamType):
    name = "ints"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        return parse_ints(str(value), param.opts[0] if param else "value")


class _StrTuple(click.ParamType):
    name = "names"

    def convert(self, value, param, ctx):
        if isinstance(value, tuple):
            return value
        return tuple(x.strip() for x in str(value).split(",") if x.strip())


def _click_type(f: ConfigField):
    tp = f.type
    choices = f.metadata.get("choices") or literal_choices(tp)
    if choices:
        return click.Choice([str(c) for c in choices])
    if tp is int and ("min" in f.metadata or "max" in f.metadata):
        return click.IntRange(f.metadata.get("min"), f.metadata.get("max"))
    if typing.get_origin(tp) is tuple:
        return _IntTuple() if typing.get_args(tp)[0] is int else _StrTuple()
    if tp is Path:
        return click.Path(path_type=Path)
    if f.metadata.get("file"):
        return click.Path(dir_okay=False)
    return {int: int, float: float, str: str}.get(tp, str)


def _shown_default(f: ConfigField):
    if isinstance(f.default, tuple):
        return format_ints(f.default) if all(isinstance(v, int) for v in f.default) \
            else ",".join(map(str, f.default))  # fmt: skip
    return f.default


def config_param(f: ConfigField) -> click.Parameter:
    """The click option (or argument) of one config field."""
    if f.metadata.get("argument"):
        return click.Argument([f.name], required=False, type=_click_type(f))
    dashed = "--" + f.name.replace("_", "-")
    if f.type is bool:
        decl = f.metadata.get("flag") or (f"{dashed}/--no-{dashed[2:]}" if f.default else dashed)
        return click.Option([decl, f.name], is_flag="/" not in decl or None, default=f.default,
                            show_default=bool(f.default), help=f.help)  # fmt: skip
    decl = f.metadata.get("flag", dashed)
    default = None if f.default is None else _shown_default(f)
    return click.Option([decl, f.name], type=_click_type(f), default=default,
                        show_default=default is not None, help=f.help)  # fmt: skip


def experiment_command(name: str, config_cls: type, run, help_text: str) -> click.Command:
    """A command that builds ``config_cls`` from its options, opens a run folder (refusing a
    folder that holds other settings unless ``--force``) and calls ``run(config, folder)``."""
    from .report.runs import RunFolder, default_run_dir

    settings = [f for f in config_fields(config_cls) if f.metadata.get("cli", True)]
    params = [config_param(f) for f in settings]
    params += [
        click.Option(["--out"], type=click.Path(file_okay=False, path_type=Path),
                     help=f"Run folder (default: runs/<timestamp>-{name}); rerun into it with "
                          "the same settings to resume."),
        click.Option(["--force"], is_flag=True,
                     help="Start afresh in --out even if it holds a run with other settings."),
        click.Option(["--quiet"], is_flag=True, help="No progress bars."),
    ]  # fmt: skip

    @path_options
    def callback(data_dir, cache_dir, out, force, quiet, **values):
        folder = None
        try:
            config = config_from_flat(config_cls, values)
            folder = RunFolder(out or default_run_dir(name), name, config,
                               device=getattr(config, "device", "cpu"), force=force,
                               data_dir=data_dir, cache_dir=cache_dir, progress=not quiet,
                               echo=click.echo)  # fmt: skip
            folder.finish(run(config, folder))
        except USER_ERRORS as exc:
            if folder is not None:
                folder.fail(str(exc))
            raise click.ClickException(str(exc)) from exc
        except BaseException as exc:  # a crash or Ctrl-C: the log says the sitting ended so
            if folder is not None:
                folder.fail(f"{type(exc).__name__}: {exc}", "interrupted"
                            if isinstance(exc, KeyboardInterrupt) else "error")  # fmt: skip
            raise
        click.echo(str(folder.path))

    params = callback.__click_params__[::-1] + params  # the two path options
    return click.Command(name, params=params, callback=callback, help=help_text,
                         context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
