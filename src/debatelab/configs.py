"""Experiment configs: one dataclass per experiment, one docstring per field.

The dataclass is the single place where a setting's name, type, default and help are written:
the CLI builds its options from it (:func:`config_fields`), run folders store it and compare it
on resume, and :func:`config_from_flat` rebuilds it (nested dataclasses included) from the flat
values a command line gives.

Field metadata (``dataclasses.field(metadata=...)``) refines the command line only:
``flag`` (the option's declaration, e.g. ``"--dataset"`` or ``"--x/--no-x"``), ``argument``
(a positional argument), ``min`` / ``max`` (a range for numbers), ``cli=False`` (not an
option); ``before`` is the value a run folder made before the setting existed ran with, when
that is not today's default (the judges' batch size was 256 before it became a setting).
``compare=False`` on a field marks a setting that does not change results (workers,
threads): a run folder resumes across a change of it.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from dataclasses import MISSING, Field, dataclass, fields, is_dataclass
from functools import cache
from typing import Any, Literal, get_args, get_origin


@cache
def field_docs(cls: type) -> dict[str, str]:
    """The docstring written under each field of dataclass ``cls`` (and of its bases)."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass is object or not is_dataclass(klass):
            continue
        try:
            source = textwrap.dedent(inspect.getsource(klass))
        except (OSError, TypeError):
            continue
        body = ast.parse(source).body[0].body
        for stmt, nxt in zip(body, body[1:], strict=False):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(nxt, ast.Expr)
                and isinstance(nxt.value, ast.Constant)
                and isinstance(nxt.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(nxt.value.value).split())
    return docs


@dataclass(frozen=True)
class ConfigField:
    """One setting of a config as the command line sees it (nested configs flattened)."""

    name: str
    """Flat name: the field name, unique across nested configs."""
    path: tuple[str, ...]
    """Attribute path from the top config (``("bootstrap", "replicates")``)."""
    type: Any
    """The resolved annotation with ``None`` removed."""
    optional: bool
    """``None`` is allowed."""
    default: Any
    """The default value."""
    help: str
    """The field's docstring."""
    metadata: dict
    """The field's metadata (see the module docstring)."""


def _strip_optional(tp) -> tuple[Any, bool]:
    if get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in get_args(tp) if a is not type(None)]
        optional = len(args) < len(get_args(tp))
        return (args[0] if len(args) == 1 else typing.Union[tuple(args)]), optional  # noqa: UP007
    return tp, False


def _default(f: Field):
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


def config_fields(cls: type, path: tuple[str, ...] = ()) -> list[ConfigField]:
    """The settings of dataclass ``cls``, nested dataclass fields flattened into their fields."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    out: list[ConfigField] = []
    for f in fields(cls):
        if not f.init:
            continue
        tp, optional = _strip_optional(hints[f.name])
        if is_dataclass(tp) and not f.metadata.get("leaf"):
            out.extend(config_fields(tp, path + (f.name,)))
            continue
        out.append(ConfigField(f.name, path + (f.name,), tp, optional, _default(f),
                               docs.get(f.name, ""), dict(f.metadata)))  # fmt: skip
    names = [c.name for c in out]
    clash = {n for n in names if names.count(n) > 1}
    if clash:
        raise TypeError(f"{cls.__name__} has settings of the same name at two depths: {clash}")
    return out


def option_label(f: ConfigField) -> str:
    """How the command line spells a setting: ``variant (--dataset)``, ``pools (POOLS)``."""
    if f.metadata.get("argument"):
        return f"{f.name} ({f.name.upper()})"
    flag = f.metadata.get("flag", "--" + f.name.replace("_", "-")).split("/")[0]
    return f"{f.name} ({flag})"


def compared_settings(config: Any) -> dict[str, Any]:
    """The settings that decide a run's results, as ``asdict`` gives them but without the
    fields marked ``compare=False`` (at any depth)."""
    out: dict[str, Any] = {}
    for f in fields(config):
        value = getattr(config, f.name)
        if f.compare:
            out[f.name] = compared_settings(value) if is_dataclass(value) else value
    return out


def config_from_flat(cls: type, values: dict[str, Any]):
    """Build ``cls`` from flat setting values (missing ones keep their defaults)."""
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if not f.init:
            continue
        tp, _ = _strip_optional(hints[f.name])
        if is_dataclass(tp) and not f.metadata.get("leaf"):
            kwargs[f.name] = config_from_flat(tp, values)
        elif f.name in values:
            kwargs[f.name] = values[f.name]
    return cls(**kwargs)


def literal_choices(tp) -> tuple | None:
    """The allowed values of a ``Literal[...]`` annotation, else None."""
    return get_args(tp) if get_origin(tp) is Literal else None
