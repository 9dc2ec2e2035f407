"""The verdict on model-written functions, which the model's code cannot forge.

Two sandboxes per verification, each with its own budgets (:mod:`debatelab.llm.sandbox`):

- the **candidate** sandbox loads the model's code and does one thing: answer calls. Each call
  arrives as plain data (one JSON line); the answer goes back as plain data or as the name of
  the exception raised. Whatever it writes is only ever *parsed* by the host
  (:func:`debatelab.llm.harness.relay`: builtin types only, exact types kept, size and depth
  bounded, in time linear in its size: the host never hashes the candidate's values);
  nothing it prints, exits with or leaves behind is read as a verdict;
- the **checker** sandbox runs the task's own tests (HumanEval's ``check``, a task file's
  asserts), with each function under test replaced by a proxy that asks the host, and with
  ``==``, ``!=`` and ``in`` comparing types (``True != 1``; int and float by value) and an
  asserted call required to return a bool. It never runs a line of the model's code and never
  holds one of its objects: only plain values that the host checked and wrote again. Its
  verdict carries a secret drawn per run that only the host and the checker know.

The host passes a proposal only when the checker's verdict line, with the secret, says the tests
passed; a candidate that crashes, exits (with any status), hangs, floods, answers out of turn or
answers something that is not plain data fails.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass

from .harness import PlainDataError, relay
from .sandbox import DEFAULT_LIMITS, Sandbox, SandboxLimits, pump


@dataclass(frozen=True)
class Verdict:
    """Whether the tests passed, why not, and how many calls the tests made."""

    passed: bool
    reason: str
    calls: int = 0


def _message(line: bytes) -> dict | None:
    try:
        obj = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


def _safe(text, limit: int) -> str:
    """Text from the candidate, as printable ASCII of bounded length (it reaches the report)."""
    return str(text)[:limit].encode("ascii", "backslashreplace").decode("ascii")


def verify_functions(code: str, tests: str, under_test: list[str], *, check: str | None = None,
                     header: str = "", limits: SandboxLimits = DEFAULT_LIMITS) -> Verdict:  # fmt: skip
    """Run ``tests`` against the functions ``under_test`` that ``code`` defines.

    ``check``: the name under test that the tests' ``check(candidate)`` receives (HumanEval);
    ``header``: trusted code run before the tests in the checker (the problem's own helpers).
    """
    if not under_test:
        return Verdict(False, "the tests call no function of the proposal")
    nonce = secrets.token_hex(16)
    candidate = Sandbox("candidate", {"code": code}, limits, channel=True)
    checker = Sandbox("checker", {"tests": tests, "header": header, "under_test": under_test,
                                  "check": check, "nonce": nonce}, limits, channel=True)  # fmt: skip
    state: dict = {"verdict": None, "pending": None, "calls": 0}

    def end(passed: bool, reason: str) -> bool:
        if state["verdict"] is None:
            state["verdict"] = Verdict(passed, reason, state["calls"])
        return True

    def step() -> bool:
        if state["verdict"] is not None:
            return True
        for box, who in ((candidate, "candidate"), (checker, "checker")):
            if box.status == "output":
                return end(False, f"{who}: past the output budget")
            if box.channel.too_long:
                return end(False, f"{who}: a message past {box.limits.message_kb} KiB")
        while checker.channel.lines:
            msg = _message(checker.channel.lines.pop(0))
            if msg is None:
                return end(False, "checker: a malformed message")
            if "verdict" in msg:
                if msg["verdict"] != nonce:
                    return end(False, "checker: a verdict without the run's secret")
                if msg.get("passed") is True:
                    return end(True, "passed")
                return end(False, f"tests failed: {_safe(msg.get('error'), 300)}")
            if state["pending"] is not None or not isinstance(msg.get("call"), int):
                return end(False, "checker: out of step")
            try:
                request = {"call": msg["call"], "name": str(msg["name"]),
                           "args": relay(msg["args"]), "kwargs": relay(msg["kwargs"])}  # fmt: skip
            except (PlainDataError, KeyError) as exc:
                return end(False, f"checker: arguments that are not plain data ({exc})")
            state["pending"] = msg["call"]
            state["calls"] += 1
            candidate.send(request)
        while candidate.channel.lines:
            msg = _message(candidate.channel.lines.pop(0))
            if msg is None:
                return end(False, "candidate: a malformed answer")
            if state["pending"] is None or msg.get("seq") != state["pending"]:
                return end(False, "candidate: an answer nobody asked for")
            if "return" in msg:
                try:
                    reply = {"seq": state["pending"], "return": relay(msg["return"])}
                except PlainDataError as exc:
                    return end(False, f"candidate: an answer that is not plain data ({exc})")
            elif isinstance(msg.get("raise"), str):
                reply = {"seq": state["pending"], "raise": _safe(msg["raise"], 100),
                         "detail": _safe(msg.get("detail", ""), 200)}  # fmt: skip
            else:
                return end(False, "candidate: a malformed answer")
            state["pending"] = None
            checker.send(reply)
        if state["pending"] is not None and candidate.channel.eof:
            return end(False, "candidate: stopped before answering")
        if checker.channel.eof:
            return end(False, "checker: stopped without a verdict")
        return False

    try:
        if candidate.proc is None or checker.proc is None:
            return Verdict(False, (candidate.error or checker.error or "")[:300])
        deadline = min(candidate.started, checker.started) + limits.wall_seconds
        if pump([candidate, checker], deadline, step) == "timeout":
            end(False, "timeout")
        step()
        return state["verdict"] or Verdict(False, "the sandboxes stopped without a verdict")
    finally:
        candidate.close()
        checker.close()
