"""Markdown tables of measured numbers next to the published ones."""

from __future__ import annotations

from ..reference import SETUP_TABLE, published_setup

#: The metrics key of each column of REFERENCE B's setup table.
SETUP_KEYS = {
    "gold": "gold_accuracy", "perfect": "perfect_accuracy", "sparse": "sparse_accuracy",
    "ensemble": "ensemble_accuracy", "cons": "consultancy_selection_accuracy",
    "D2t": "debate2_selection_accuracy", "D4t": "debate4_selection_accuracy",
    "J2t": "debate2_judge_accuracy", "J4t": "debate4_judge_accuracy",
}  # fmt: skip


def setup_table(variant: str, metrics: dict[str, float], columns: list[str],
                label: str = "this run") -> str:  # fmt: skip
    """A markdown table: this run (percent), its standard errors over images where the metrics
    have them (``<key>_se``), and the published row of REFERENCE B."""
    keys = SETUP_KEYS
    head = "| | " + " | ".join(columns) + " |"
    sep = "|---" * (len(columns) + 1) + "|"
    ours = (
        f"| {label} | "
        + " | ".join(
            f"{100 * metrics[keys[c]]:.2f}" if keys[c] in metrics else "-" for c in columns
        )
        + " |"
    )
    lines = [head, sep, ours]
    if any(f"{keys[c]}_se" in metrics for c in columns):
        lines.append("| standard error | " + " | ".join(
            f"{100 * metrics[keys[c] + '_se']:.2f}" if keys[c] + "_se" in metrics else "-"
            for c in columns) + " |")  # fmt: skip
    if variant in SETUP_TABLE:
        pub = published_setup(variant)
        lines.append("| published | " + " | ".join(f"{pub[c]:.2f}" for c in columns) + " |")
    return "\n".join(lines)


def paired_table(columns: list[str], rows: list[tuple[str, tuple | None, list[float]]],
                 label: str = "this study", tolerance: float = 1.5) -> str:  # fmt: skip
    """A markdown table with, per entry ``(name, published, ours)``, the published row and this
    study's row under it (percent); our cells more than ``tolerance`` points from the published
    one are bold."""
    lines = ["| variant | | " + " | ".join(columns) + " |", "|---" * (len(columns) + 2) + "|"]
    for name, published, ours in rows:
        if published is not None:
            lines.append(f"| {name} | published | " + " | ".join(f"{v:.2f}" for v in published)
                         + " |")  # fmt: skip
        cells = []
        for i, value in enumerate(ours):
            far = published is not None and abs(value - published[i]) > tolerance
            cells.append(f"**{value:.2f}**" if far else f"{value:.2f}")
        lines.append(f"| {'' if published is not None else name} | {label} | "
                     + " | ".join(cells) + " |")  # fmt: skip
    return "\n".join(lines)
