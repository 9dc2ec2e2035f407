"""How much a stronger critic protects the judge from a proposer that picks the best of its
proposals (synthetic pools with a known truth): the proposer's accuracy at best-of-16 against
the critic's best-of-m, m = 1, 2, 4, 8. The tutorial's experiment, as a command."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from debatelab.experiments import Experiment
from debatelab.text import SyntheticConfig, nested_best_of_n, synthetic_pools


@dataclass
class CriticPressure:
    """Settings of the experiment."""

    questions: int = 40
    """Questions in the synthetic pools."""
    hack: float = 1.0
    """How much more appealing wrong proposals can be (0: no Goodharting)."""
    seed: int = 0
    """Seed of the pools."""


def run(config: CriticPressure, folder) -> dict:
    folder.seeds["pools"] = config.seed
    pools = synthetic_pools(SyntheticConfig(n_questions=config.questions, n_proposals=16,
                                            n_critiques=8, n_rebuttals=2, hack=config.hack,
                                            control=False), seed=config.seed)  # fmt: skip
    metrics = {}
    for m in (1, 2, 4, 8):  # the critic's best of m
        accuracy = [nested_best_of_n(q.scores["critique"], q.correct, "bo16", f"bo{m}").accuracy
                    for q in pools]  # fmt: skip
        metrics[f"accuracy_bo16_critic_bo{m}"] = float(np.mean(accuracy))
        metrics[f"accuracy_bo16_critic_bo{m}_se"] = float(np.std(accuracy) / np.sqrt(len(accuracy)))
    return metrics


CRITIC_PRESSURE = Experiment("critic-pressure", CriticPressure, run, __doc__)
