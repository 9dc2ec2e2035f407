"""LLM debates for real: model back ends and tasks with ground truth (both registries open to
plug-ins), the sandbox that verifies
model-written code, the call cache, and the generator of pools that ``debatelab bon`` reads.

``backends`` (llama.cpp in-process, OpenAI-compatible HTTP), ``tasks`` (HumanEval, ARC-AGI-1,
the user's code tasks), ``sandbox`` (bubblewrap), ``harness`` (what runs inside a sandbox, and
the plain-data codec), ``verify`` (verdicts the model's code cannot forge), ``cache`` (every call on disk), ``generate``
(proposals, critiques, rebuttals, verdicts). Nothing here imports torch.
"""

from . import gym, providers  # noqa: F401 - they register the gym task and the paid back ends
from .backends import (
    BACKENDS,
    Backend,
    BackendError,
    ModelOptions,
    Reply,
    ReplyError,
    load_model,
    register_backend,
    verdict_score,
)
from .generate import PoolGenerator, PoolPlan, load_templates
from .sandbox import SandboxLimits, SandboxResult, run_python
from .tasks import TASKS, Question, TaskSpec, load_task, register_task
from .verify import Verdict, verify_functions

__all__ = [
    "BACKENDS",
    "TASKS",
    "Backend",
    "BackendError",
    "ModelOptions",
    "TaskSpec",
    "PoolGenerator",
    "PoolPlan",
    "Question",
    "Reply",
    "ReplyError",
    "SandboxLimits",
    "SandboxResult",
    "Verdict",
    "load_model",
    "load_task",
    "load_templates",
    "register_backend",
    "register_task",
    "run_python",
    "verdict_score",
    "verify_functions",
]
