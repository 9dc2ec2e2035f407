"""Named registries of pluggable parts, open to other packages through entry points.

A registry holds the built-in parts of one kind (protocols, judge designs, dataset variants,
tasks, model back ends) by name. Another installed package adds its own without editing
debatelab by declaring an entry point in the registry's group, e.g. in its ``pyproject.toml``::

    [project.entry-points."debatelab.protocols"]
    debate5 = "my_package.protocols:DEBATE5"

The entry point's name is the part's name and its object is the part itself (checked against the
registry's type when it is loaded). Entry points are read once, on the first lookup or listing,
so importing debatelab imports no plug-in. A plug-in cannot replace a built-in part or another
plug-in's: two parts of one name are one clear error naming both sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib.metadata import entry_points
from typing import Generic, TypeVar

from .errors import DebatelabError

T = TypeVar("T")

#: The entry-point group of every registry, by the kind of part it holds.
GROUPS: dict[str, str] = {}


class PluginError(DebatelabError):
    """A plug-in's entry point cannot be loaded or holds the wrong kind of object."""


class Registry(Generic[T]):
    """Parts of one kind by name: the built-ins, then the plug-ins of ``group``.

    ``check(name, obj)`` returns the part to keep (it may validate or convert ``obj``) or raises
    ``ValueError``/``TypeError``; it runs for built-ins and plug-ins alike.
    """

    def __init__(self, kind: str, group: str, check: Callable[[str, object], T] | None = None):
        self.kind = kind
        self.group = group
        self._check = check
        self._items: dict[str, T] = {}
        self._sources: dict[str, str] = {}
        self._plugins_loaded = False
        GROUPS[kind] = group

    def register(self, name: str, item: T, source: str = "debatelab") -> T:
        """Add ``item`` under ``name``; a second part of the same name is refused."""
        if not isinstance(name, str) or not name or not name.replace("_", "").isalnum():
            raise ValueError(f"{self.kind} name {name!r}: use letters, digits and underscores")
        if name in self._items:
            raise PluginError(f"two {self.kind}s are named {name!r}: one from "
                              f"{self._sources[name]}, one from {source}; rename one")  # fmt: skip
        if self._check is not None:
            try:
                item = self._check(name, item)
            except (TypeError, ValueError) as exc:
                raise PluginError(f"{self.kind} {name!r} from {source}: {exc}") from None
        self._items[name] = item
        self._sources[name] = source
        return item

    def _load_plugins(self) -> None:
        if self._plugins_loaded:
            return
        self._plugins_loaded = True
        problems = []  # every entry point is tried: one broken plug-in hides no other
        for ep in sorted(entry_points(group=self.group), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            source = f"the plug-in {dist.name if dist else ep.value!r} (entry point {ep.value})"
            try:
                item = ep.load()
            except Exception as exc:  # a broken plug-in is named, not a traceback of its import
                problems.append(f"{source} of group {self.group!r} cannot be loaded: "
                                f"{type(exc).__name__}: {exc}")  # fmt: skip
                continue
            try:
                self.register(ep.name, item, source)
            except PluginError as exc:
                problems.append(str(exc))
        if problems:
            raise PluginError("; ".join(problems))

    def get(self, name: str) -> T:
        """The part named ``name``; an unknown name is one error listing the known ones."""
        if name not in self._items:
            self._load_plugins()
        if name not in self._items:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {', '.join(self)}")
        return self._items[name]

    def source(self, name: str) -> str:
        """Where the part came from: ``debatelab`` or the plug-in that registered it."""
        self.get(name)
        return self._sources[name]

    def names(self) -> tuple[str, ...]:
        self._load_plugins()
        return tuple(self._items)

    def items(self) -> list[tuple[str, T]]:
        self._load_plugins()
        return list(self._items.items())

    def __contains__(self, name: object) -> bool:
        if name not in self._items:
            self._load_plugins()
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r}, {list(self._items)})"
