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
