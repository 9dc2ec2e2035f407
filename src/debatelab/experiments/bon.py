"""``debatelab bon``: the best-of-N debate proxy on a pool file (or on synthetic pools).

POOLS is a JSON Lines, CSV or Parquet file of proposals, critiques and rebuttals with judge
scores (schema: debatelab.text.readers). Proposer accuracy and win rate are computed for every
protocol present (proposal only, + critique, + critique + rebuttal) and every arm (e.g. a
token-matched control proposer pool named 'control'), with worms, meshes and paired bootstrap
intervals.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..report.runs import RunFolder
from ..text.readers import read_pools
from ..text.synthetic import SyntheticConfig, synthetic_pools
from .bon_report import (
    BonConfig,
    analyse,
    grid_rows,
    key_metrics,
    markdown_report,
    question_rows,
    to_csv,
    write_figures,
)


@dataclass(frozen=True)
class BonExperimentConfig:
    """Settings of one best-of-N analysis."""

    pools: str | None = field(default=None, metadata={"argument": True})
    """The pool file (JSON Lines, CSV or Parquet), or a `debatelab pools generate` run folder."""
    demo: bool = False
    """Run on synthetic pools instead of a file."""
    analysis: BonConfig = field(default_factory=BonConfig)
    """The grid of best-of-n draws and the bootstrap."""
    demo_questions: int = 28
    """Synthetic questions (--demo)."""
    demo_sizes: str = "50x50x20"
    """Synthetic pool sizes N x M x R (--demo)."""

    def __post_init__(self):
        if self.demo == (self.pools is not None):
            raise ValueError("give a POOLS file or --demo (not both)")
        self.synthetic()  # checks the sizes

    def synthetic(self) -> SyntheticConfig:
        """The synthetic pools of --demo."""
        try:
            n, m, r = (int(x) for x in self.demo_sizes.lower().split("x"))
        except ValueError:
            raise ValueError(
                f"--demo-sizes {self.demo_sizes!r}: use N x M x R, e.g. 50x50x20"
            ) from None
        return SyntheticConfig(n_questions=self.demo_questions, n_proposals=n, n_critiques=m,
                               n_rebuttals=r)  # fmt: skip


def run(config: BonExperimentConfig, folder: RunFolder) -> dict:
    """The experiment shape: tables, figures and a report into ``folder``; returns the key
    metrics (estimates and intervals at the reference n, contrasts)."""
    seed = config.analysis.seed
    folder.seeds["bootstrap"] = seed
    if config.demo:
        data = synthetic_pools(config.synthetic(), seed)
        source = f"synthetic (seed {seed})"
        folder.seeds["synthetic"] = seed
    else:
        data = read_pools(config.pools)
        source = str(config.pools)
    res = analyse(data, config.analysis, show_progress=folder.progress)
    (folder.path / "table.csv").write_text(to_csv(grid_rows(res)))
    (folder.path / "per_question.csv").write_text(to_csv(question_rows(res)))
    (folder.path / "contrasts.csv").write_text(to_csv(res.contrasts))
    write_figures(res, folder.path)
    report = markdown_report(res, data, source)
    (folder.path / "report.md").write_text(report)
    if folder.progress:
        folder.echo(report)
    return key_metrics(res, data)
