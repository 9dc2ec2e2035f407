"""LLM debates for real: model back ends, tasks with ground truth, the sandbox that verifies
model-written code, the call cache, and the generator of pools that ``debatelab bon`` reads.

``backends`` (llama.cpp in-process, OpenAI-compatible HTTP), ``tasks`` (HumanEval, ARC-AGI-1,
the user's code tasks), ``sandbox`` (bubblewrap), ``cache`` (every call on disk), ``generate``
(proposals, critiques, rebuttals, verdicts). Nothing here imports torch.
"""

from .backends import BackendError, Reply, ReplyError, load_model, verdict_score
from .generate import PoolGenerator, PoolPlan, load_templates
from .sandbox import SandboxLimits, SandboxResult, run_python
from .tasks import Question, load_task

__all__ = [
    "BackendError",
    "PoolGenerator",
    "PoolPlan",
    "Question",
    "Reply",
    "ReplyError",
    "SandboxLimits",
    "SandboxResult",
    "load_model",
    "load_task",
    "load_templates",
    "run_python",
    "verdict_score",
]
