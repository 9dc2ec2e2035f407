"""The on-policy judge loop's old home: it lives in :mod:`debatelab.training.onpolicy` now
(kept so that ``benchmarks/bench_onpolicy.py`` and other callers keep working until they
import it from there)."""

from ..training.onpolicy import (  # noqa: F401
    PRESETS,
    get_onpolicy_judge,
    load_onpolicy_judge,
    train_onpolicy,
    wrap,
)
