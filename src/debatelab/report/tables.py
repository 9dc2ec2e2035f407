"""Markdown tables of measured numbers next to the published ones."""

from __future__ import annotations

from ..reference import SETUP_TABLE, published_setup


def setup_table(variant: str, metrics: dict[str, float], columns: list[str]) -> str:
    """A two-row markdown table: this run (percent) and the published row of REFERENCE B."""
    keys = {
        "gold": "gold_accuracy", "perfect": "perfect_accuracy", "sparse": "sparse_accuracy",
        "ensemble": "ensemble_accuracy", "cons": "consultancy_selection_accuracy",
        "D2t": "debate2_selection_accuracy", "D4t": "debate4_selection_accuracy",
        "J2t": "debate2_judge_accuracy", "J4t": "debate4_judge_accuracy",
    }  # fmt: skip
    head = "| | " + " | ".join(columns) + " |"
    sep = "|---" * (len(columns) + 1) + "|"
    ours = (
        "| this run | "
        + " | ".join(
            f"{100 * metrics[keys[c]]:.2f}" if keys[c] in metrics else "-" for c in columns
        )
        + " |"
    )
    lines = [head, sep, ours]
    if variant in SETUP_TABLE:
        pub = published_setup(variant)
        lines.append("| published | " + " | ".join(f"{pub[c]:.2f}" for c in columns) + " |")
    return "\n".join(lines)
