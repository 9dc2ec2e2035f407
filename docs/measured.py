"""What the measuring scripts under docs/ share: the row they print and append to their CSV,
ending in the commit whose code made it."""

from __future__ import annotations

from pathlib import Path

from debatelab.report.runs import git_state


def commit() -> str:
    """The checkout's short commit, with ``+dirty`` when tracked files have changed."""
    state = git_state(Path(__file__).resolve().parent)
    if state["git_commit"] is None:
        return "unknown"
    return state["git_commit"][:7] + ("+dirty" if state["git_dirty"] else "")


def report_row(cells: list[str], append: Path | None, header: str | None = None) -> str:
    """The CSV row of ``cells`` and the commit, printed (after ``header``) and, with ``append``,
    added to that file (``header`` first when the file is new)."""
    row = ",".join([*cells, commit()])
    print(row if header is None else header + "\n" + row)
    if append:
        new = not append.exists()
        with open(append, "a", encoding="utf-8") as fh:
            fh.write((header + "\n" if new and header else "") + row + "\n")
    return row
