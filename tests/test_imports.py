"""The import graph of the package, read from the source (AST): layers stay apart and no module
imports itself round a cycle. Every import counts, also those inside functions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = "debatelab"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in (SRC / PACKAGE).rglob("*.py")}


def import_edges(known: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from a import b`` counts as ``a.b`` when that
    is a module, else ``a``)."""
    edges: dict[str, set[str]] = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    source = ".".join(base + ([node.module] if node.module else []))
                else:
                    source = node.module or ""
                for alias in node.names:
                    sub = f"{source}.{alias.name}"
                    targets.add(sub if sub in known else source)
        edges[name] = {t for t in targets if t in known and t != name}
    return edges


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return import_edges(known)


#: Rooms from the bottom up (docs/ARCHITECTURE.md): a module may import its own room and any
#: room of a lower rank, never a higher one; rooms of one rank never import each other.
RANK = {
    "core": 0,  # policies, interfaces, geometry, configs, resume, atomic, paths, errors, ...
    "data": 1, "report": 1,
    "judges": 2, "games": 2,
    "store": 3, "text": 3, "llm": 3, "training": 3,
    "experiments": 4,
    "web": 5,
    "cli": 6,
    "package": 7,  # debatelab/__init__: lazy names for the whole library
}  # fmt: skip
#: Pairs of rooms that must stay apart even though one ranks above the other.
FORBIDDEN = {
    ("text", "judges"): "the text proxy takes scores, not image judges",
    ("store", "games"): "the all-mask store holds judge outputs, not games",
    ("llm", "judges"): "LLM back ends and tasks need no image judges (nor torch)",
    ("training", "store"): "training loops take images and judges, not the all-mask store",
    ("training", "text"): "the training loops train image judges and pixel debaters",
    ("training", "llm"): "the training loops train image judges and pixel debaters",
}


def layer(module: str) -> str:
    """The room a module belongs to (see :data:`RANK`)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "package"
    if parts[1].startswith("cli") or parts[1] == "__main__":
        return "cli"
    if parts[1] in RANK:
        return parts[1]
    return "core"


def why_forbidden(importer: str, imported: str) -> str | None:
    a, b = layer(importer), layer(imported)
    if a == b:
        return None
    if (a, b) in FORBIDDEN:
        return FORBIDDEN[(a, b)]
    if RANK[b] >= RANK[a]:
        return f"{a} (rank {RANK[a]}) may not import {b} (rank {RANK[b]})"
    return None


def test_the_layers_keep_their_imports(graph):
    bad = []
    for module, targets in sorted(graph.items()):
        for target in sorted(targets):
            why = why_forbidden(module, target)
            if why:
                bad.append(f"{module} -> {target}: {why}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles(graph):
    # Tarjan's strongly connected components; any component of two or more is a cycle
    index, low, stack, on_stack, cycles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert not cycles, f"import cycles: {cycles}"


def test_the_checker_sees_edges_and_cycles():
    """The walker itself: it finds relative, absolute and in-function imports, and a cycle."""
    known = modules()
    edges = import_edges(known)
    assert "debatelab.geometry" in edges["debatelab.judges.allmask"]
    assert "debatelab.interfaces" in edges["debatelab.games.pixels"]
    assert "debatelab.experiments" in edges["debatelab.cli"]
    assert layer("debatelab.cli_common") == "cli" and layer("debatelab.games.core") == "games"
    assert layer("debatelab.store") == "store" and layer("debatelab.geometry") == "core"
    assert why_forbidden("debatelab.games.pixels", "debatelab.judges.pixel")  # same rank
    assert why_forbidden("debatelab.judges.train", "debatelab.games.tables")
    assert why_forbidden("debatelab.policies", "debatelab.text.solve")  # upwards
    assert why_forbidden("debatelab.text.solve", "debatelab.judges.cnn")
    assert why_forbidden("debatelab.report.runs", "debatelab.experiments.sweep")
    assert not why_forbidden("debatelab.text.solve", "debatelab.games.core")
    assert not why_forbidden("debatelab.experiments.table", "debatelab.store")
