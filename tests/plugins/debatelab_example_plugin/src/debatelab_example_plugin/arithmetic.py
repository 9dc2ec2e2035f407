"""A text task with exact answers: sums of two small numbers, verified on the host.

The answer is a number read from the proposal's text, so verifying it is comparing two integers:
no model-written code runs, and the task declares ``sandboxed=False`` (debatelab then needs no
sandbox for it). A task whose answers are programs declares ``sandboxed=True`` and verifies in
debatelab's sandbox (``debatelab.llm.verify.verify_functions``), as the built-in humaneval does.
"""

from __future__ import annotations

import re

import numpy as np

from debatelab.llm.tasks import Question, TaskSpec

_NUMBER = re.compile(r"-?\d+")


class Arithmetic:
    """``count`` questions "What is a + b?", the same on every machine."""

    def __init__(self, count: int = 50):
        rng = np.random.default_rng(0)
        pairs = rng.integers(1, 10, size=(count, 2)).tolist()
        self.name = "arithmetic"
        self._questions = [
            Question(f"sum/{k}", f"What is {a} + {b}? Reply with the number only.", {"sum": a + b})
            for k, (a, b) in enumerate(pairs)
        ]

    def questions(self) -> list[Question]:
        return self._questions

    def answer(self, question: Question, text: str) -> str | None:
        """The last whole number in the reply (None without one)."""
        numbers = _NUMBER.findall(text)
        return numbers[-1] if numbers else None

    def verify(self, question: Question, answer: str) -> float:
        """1.0 when the answer is the sum, else 0.0."""
        return float(int(answer) == question.truth["sum"])


def load(arg: str | None, limits) -> Arithmetic:
    """``--task arithmetic`` (50 questions) or ``--task arithmetic:N``."""
    if arg is not None and not arg.isdigit():
        raise ValueError(f"arithmetic:{arg}: give the number of questions, e.g. arithmetic:20")
    return Arithmetic(int(arg) if arg else 50)


#: The registered part (entry point ``arithmetic`` in the group ``debatelab.tasks``).
ARITHMETIC = TaskSpec("arithmetic", load, "sums of two digits, answers compared exactly",
                      sandboxed=False, arg="N")  # fmt: skip
