"""Generate, verify and judge pools of proposals, critiques and rebuttals (REFERENCE C).

For each question: N proposals from the debater, each verified against the ground truth; M
critiques per proposal; R rebuttals per critique; in deeper debates M further critiques per
rebuttal, R rebuttals per critique, and so on (the study's proposal, critique, rebuttal,
critique, ... alternation); and the judge's verdict on every leaf of every protocol up to the
deepest asked for (proposal alone, + critique, + critique + rebuttal, ...), scored
P(yes) / (P(yes) + P(no)). The token-matched control arm (``control``) adds N proposals from the
control template with the whole debate's token budget, judged alone.

Calls go through the :class:`~debatelab.llm.cache.CallCache`; each level of a question is
submitted at once to a thread pool as wide as the back ends take, so an HTTP server sees
``concurrency`` calls in flight and an in-process model one. A call that goes wrong
(:class:`ReplyError`) is recorded and leaves its question out of the pools (pools are
rectangular); a back end that cannot be reached (:class:`BackendError`) stops the run, losing
nothing: finished calls are in the cache and finished questions in their own files.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from importlib import resources
from math import prod
from pathlib import Path

from ..protocols import level_sizes
from .backends import Reply, ReplyError, verdict_score
from .cache import CallCache, call_key
from .tasks import Question

ROLES = ("pilot", "proposer", "critic", "rebuttal", "judge", "control", "verifier")
TEMPLATES = (
    "proposal",
    "critique",
    "rebuttal",
    "critique_later",
    "rebuttal_later",
    "judge",
    "judge_cot",
    "control",
)


@dataclass(frozen=True)
class PoolPlan:
    """The shape and sampling of one question's pools."""

    n: int = 8
    m: int = 4
    r: int = 2
    depth: int = 3
    """Turns of the deepest protocol: 1 proposal only, 2 with critiques, 3 with rebuttals, 4 a
    second critique of each rebuttal (M of them), 5 a second rebuttal (R), and so on."""
    control: bool = False
    swap: bool = False
    """Judge every leaf twice, the verdict options in both orders, and average the scores."""
    temperature: float = 0.8
    proposal_tokens: int = 384
    critique_tokens: int = 192
    rebuttal_tokens: int = 192
    yes: tuple[str, ...] = ("Yes", "yes")
    no: tuple[str, ...] = ("No", "no")
    seed: int = 0
    judge_samples: int = 0
    """0: the judge's single-token verdict, P(yes) / (P(yes) + P(no)). K: the chain-of-thought
    judge, K sampled verdicts per leaf, scored by the fraction of the verdicts given that say
    yes (0.5 when none of the K gives one)."""
    judge_tokens: int = 256
    """Most tokens of one chain-of-thought verdict."""

    def __post_init__(self):
        for name in ("n", "m", "r", "proposal_tokens", "critique_tokens", "rebuttal_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.judge_samples < 0:
            raise ValueError(f"judge_samples must be at least 0, got {self.judge_samples}")
        if int(self.depth) != self.depth or self.depth < 1:
            raise ValueError(f"depth must be a whole number of turns >= 1, got {self.depth}")
        if not self.yes or not self.no or set(self.yes) & set(self.no):
            raise ValueError("the judge needs distinct, non-empty yes and no candidate tokens")

    def level_nodes(self) -> list[int]:
        """Messages per question at each level: N proposals, N M critiques, N M R rebuttals,
        N M R M second critiques, ..."""
        return [prod(level_sizes(self.n, self.m, self.r, d)) for d in range(1, self.depth + 1)]

    def turn_tokens(self, level: int) -> int:
        """Most tokens of a message at ``level`` (0 the proposals)."""
        if level == 0:
            return self.proposal_tokens
        return self.critique_tokens if level % 2 else self.rebuttal_tokens

    def control_tokens(self) -> int:
        """The control's budget: the whole debate's, proposal, critique and rebuttal (and the
        later rounds' turns in a deeper debate)."""
        return sum(self.turn_tokens(k) for k in range(max(self.depth, 3)))

    def calls(self) -> dict[str, int]:
        """Model calls per question and role."""
        nodes = self.level_nodes()
        n = self.n
        out = {"proposer": n, "critic": sum(nodes[1::2]), "rebuttal": sum(nodes[2::2]),
               "judge": (sum(nodes) + (n if self.control else 0)) * (2 if self.swap else 1)
                        * max(1, self.judge_samples),
               "control": n if self.control else 0}  # fmt: skip
        return out


def load_templates(folder: str | Path | None = None) -> dict[str, str]:
    """The prompt templates: the packaged ones, each replaced by ``folder/<name>.txt`` where the
    user has written one."""
    packaged = resources.files("debatelab.llm") / "templates"
    out = {name: (packaged / f"{name}.txt").read_text(encoding="utf-8") for name in TEMPLATES}
    if folder is not None:
        folder = Path(folder)
        if not folder.is_dir():
            raise FileNotFoundError(f"no template folder at {folder}")
        for name in TEMPLATES:
            if (folder / f"{name}.txt").is_file():
                out[name] = (folder / f"{name}.txt").read_text(encoding="utf-8")
    fields = {"proposal": {"question"}, "control": {"question"},
              "critique": {"question", "proposal"},
              "rebuttal": {"question", "proposal", "critique"},
              "critique_later": {"question", "transcript"},
              "rebuttal_later": {"question", "transcript"},
              "judge": {"question", "transcript", "options"},
              "judge_cot": {"question", "transcript"}}  # fmt: skip
    for name, text in out.items():
        try:
            text.format(**dict.fromkeys(fields[name], ""))
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"template {name}.txt: {exc!r}; it may use only "
                             f"{', '.join('{' + f + '}' for f in sorted(fields[name]))} "
                             "(write literal braces as {{ and }})") from None  # fmt: skip
    return out


def sample_seed(seed: int, question: str, role: str, path: tuple[int, ...]) -> int:
    """The sampling seed of one call: fixed by the run seed, question, role and sample path."""
    blob = f"{seed}|{question}|{role}|{path}".encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "little")


def _user(text: str) -> list[dict]:
    return [{"role": "user", "content": text}]


def turn_heading(level: int) -> str:
    """The heading of a message at ``level`` (0 the proposal) in the transcript the judge and
    the later turns read."""
    if level == 0:
        return "Proposed solution"
    round_ = (level + 1) // 2
    name = "Critique" if level % 2 else "Proposer's rebuttal"
    return name if round_ == 1 else f"{name} (round {round_})"


def transcript(*messages: str | None) -> str:
    """The debate so far as the judge reads it: the proposal, then each critique and rebuttal
    under its heading (None entries are left out, as ``transcript(proposal, None, None)``)."""
    turns = [m for m in messages if m is not None]
    return "\n\n".join(f"{turn_heading(k)}:\n{text}" for k, text in enumerate(turns))


class PoolGenerator:
    """Generates one question's pools at a time with the given back ends and cache."""

    def __init__(self, task, debater, judge, plan: PoolPlan, cache: CallCache,
                 templates: dict[str, str], bars: dict | None = None):  # fmt: skip
        self.task, self.debater, self.judge, self.plan = task, debater, judge, plan
        self.cache, self.templates, self.bars = cache, templates, bars or {}
        workers = max(debater.concurrency, judge.concurrency)
        self._pool = ThreadPoolExecutor(max_workers=workers)
        # each model sees at most its own concurrency, however wide the pool (a batch judge
        # widens the pool; a synchronous debater beside it keeps its --concurrency)
        self._limits = {id(m): threading.BoundedSemaphore(m.concurrency) for m in (debater, judge)}
        self._verifiers = ThreadPoolExecutor(max_workers=2)
        self._usage: dict[str, dict[str, list[int]]] = {}
        self._usage_lock = threading.Lock()

    def _tally(self, question: Question, role: str, reply: Reply) -> Reply:
        with self._usage_lock:
            count = self._usage.setdefault(question.id, {}).setdefault(role, [0, 0])
            count[0] += reply.prompt_tokens
            count[1] += reply.completion_tokens
        return reply

    def _limited(self, model, call):
        with self._limits[id(model)]:
            return call()

    def take_usage(self, question: Question) -> dict[str, list[int]]:
        """Input and output tokens per role of ``question``'s calls so far (made or served from
        the cache), forgotten here once taken."""
        with self._usage_lock:
            return self._usage.pop(question.id, {})

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._verifiers.shutdown(wait=True, cancel_futures=True)

    # -- calls ---------------------------------------------------------------------------------
    def _chat(self, role: str, question: Question, path: tuple[int, ...], prompt: str,
              max_tokens: int, model=None) -> Reply:  # fmt: skip
        """One sampled reply of ``model`` (default the debater), cached by its sample path."""
        model = model or self.debater
        messages = _user(prompt)
        settings = {"temperature": self.plan.temperature, "max_tokens": max_tokens,
                    "seed": self.plan.seed}  # fmt: skip
        key = call_key(model.name, "chat", messages, settings, hash_path(path))
        seed = sample_seed(self.plan.seed, question.id, role, path)

        def make() -> Reply:
            return self._limited(model, lambda: model.chat(
                messages, temperature=self.plan.temperature, max_tokens=max_tokens, seed=seed))  # fmt: skip

        reply = self.cache.call(role, key, make)
        return self._tally(question, role, reply)

    def _verdict(self, question: Question, text: str, order: int) -> float:
        yes, no = self.plan.yes, self.plan.no
        options = f"{yes[0]} or {no[0]}" if order == 0 else f"{no[0]} or {yes[0]}"
        messages = _user(self.templates["judge"].format(question=question.prompt,
                                                        transcript=text, options=options))  # fmt: skip
        key = call_key(self.judge.name, "verdict", messages, {"candidates": yes + no}, 0)
        reply = self.cache.call("judge", key, lambda: self._limited(
            self.judge, lambda: self.judge.verdict(messages, yes + no)))  # fmt: skip
        self._tally(question, "judge", reply)
        return verdict_score(reply.logprobs, yes, no)

    def _cot_verdicts(self, question: Question, text: str) -> list[bool | None]:
        """The chain-of-thought judge's K sampled verdicts on one leaf (None: none given)."""
        prompt = self.templates["judge_cot"].format(question=question.prompt, transcript=text)
        leaf = int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "little")

        def sample(k: int) -> bool | None:
            reply = self._chat("judge", question, (leaf, k), prompt, self.plan.judge_tokens,
                               model=self.judge)  # fmt: skip
            return cot_verdict(reply.text, self.plan.yes, self.plan.no)

        k = self.plan.judge_samples
        if k == 1 or self.judge.concurrency == 1:
            return [sample(i) for i in range(k)]
        with ThreadPoolExecutor(max_workers=k) as pool:  # the K samples at once (one batch)
            return list(pool.map(sample, range(k)))

    def _score(self, question: Question, text: str) -> float:
        if self.plan.judge_samples:
            # the frequency of yes among the verdicts given; samples that give none (cut off
            # by --judge-tokens, or rambling) abstain, and a leaf where all abstain scores 0.5
            given = [v for v in self._cot_verdicts(question, text) if v is not None]
            return sum(given) / len(given) if given else 0.5
        orders = (0, 1) if self.plan.swap else (0,)
        return sum(self._verdict(question, text, o) for o in orders) / len(orders)

    def _map(self, role: str, func: Callable, items: list, pool=None) -> list:
        """``func`` over ``items`` in the pool, results in order; advances ``role``'s bar."""
        bar = self.bars.get(role)

        def one(item):
            try:
                return func(item)
            except ReplyError:
                self.cache.failed(role)
                raise
            finally:
                if bar is not None:
                    bar.update(1)

        futures = [(pool or self._pool).submit(one, item) for item in items]
        wait(futures)  # every call of the level ends (and is tallied) before an error is raised
        return [f.result() for f in futures]

    # -- question selection ----------------------------------------------------------------
    def pilot(self, question: Question, attempts: int) -> list[float]:
        """The correctness of ``attempts`` proposals to ``question`` drawn for selection only:
        their sample paths (``(-1, i)``) and seeds differ from the pool's, so the pools that
        follow are independent of the draws that selected their question."""
        prompt = self.templates["proposal"].format(question=question.prompt)
        replies = self._map("pilot", lambda i: self._chat(
            "pilot", question, (-1, i), prompt, self.plan.proposal_tokens), list(range(attempts)))  # fmt: skip
        checked = self._map("verifier", lambda rep: self._check(question, rep.text), replies,
                            self._verifiers)  # fmt: skip
        return [c["correct"] for c in checked]

    # -- one question --------------------------------------------------------------------------
    def question(self, question: Question) -> tuple[list[dict], dict]:
        """The pool records (one per arm, in the schema ``debatelab bon`` reads) and the full
        transcript record of ``question``; raises :class:`ReplyError` when a call failed."""
        p, t = self.plan, self.templates
        n_idx = range(p.n)
        props = self._map(
            "proposer",
            lambda i: self._chat(
                "proposer",
                question,
                (i,),
                t["proposal"].format(question=question.prompt),
                p.proposal_tokens,
            ),
            list(n_idx),
        )
        checked = self._map("verifier", lambda rep: self._check(question, rep.text), props,
                            self._verifiers)  # fmt: skip
        # the later levels: each message's children, paths (i,), (i, j), (i, j, k), ...
        messages: dict[tuple[int, ...], Reply] = {(i,): props[i] for i in n_idx}
        level = [(i,) for i in n_idx]
        for k in range(1, p.depth):
            role = "critic" if k % 2 else "rebuttal"
            paths = [path + (j,) for path in level for j in range(p.m if k % 2 else p.r)]
            replies = self._map(role, lambda path, k=k, role=role: self._chat(
                role, question, path, self._turn_prompt(question, path, messages),
                p.turn_tokens(k)), paths)  # fmt: skip
            messages.update(zip(paths, replies, strict=True))
            level = paths
        leaves = sorted(messages, key=lambda path: (len(path), path))

        def leaf_text(leaf):
            return transcript(*(messages[leaf[: d + 1]].text for d in range(len(leaf))))

        scores = dict(zip(leaves, self._map("judge", lambda lf: self._score(
            question, leaf_text(lf)), leaves), strict=True))  # fmt: skip
        main = self._records(question, "main", messages, checked, scores)
        records = [main]
        if p.control:
            ctrl = self._map("control", lambda i: self._chat(
                "control", question, (i,), t["control"].format(question=question.prompt),
                p.control_tokens()), list(n_idx))  # fmt: skip
            ctrl_checked = self._map("verifier", lambda rep: self._check(question, rep.text),
                                     ctrl, self._verifiers)  # fmt: skip
            ctrl_scores = dict(zip([(i,) for i in n_idx], self._map("judge", lambda rep: self._score(
                question, transcript(rep.text)), ctrl), strict=True))  # fmt: skip
            records.append(self._records(question, "control", {(i,): ctrl[i] for i in n_idx},
                                         ctrl_checked, ctrl_scores))  # fmt: skip
        pools = [r[0] for r in records]
        text = {"question_id": question.id, "question": question.prompt,
                "arms": {r[0]["arm"]: r[1] for r in records}}  # fmt: skip
        return pools, text

    def _turn_prompt(self, question: Question, path: tuple[int, ...], messages) -> str:
        """The prompt of the message at ``path`` (a critique at odd depths, a rebuttal at even):
        the first critique and rebuttal read the proposal (and critique) in their own fields,
        later turns the whole transcript so far."""
        t, level = self.templates, len(path) - 1
        before = [messages[path[: d + 1]].text for d in range(level)]
        if level == 1:
            return t["critique"].format(question=question.prompt, proposal=before[0])
        if level == 2:
            return t["rebuttal"].format(question=question.prompt, proposal=before[0],
                                        critique=before[1])  # fmt: skip
        name = "critique_later" if level % 2 else "rebuttal_later"
        return t[name].format(question=question.prompt, transcript=transcript(*before))

    def _check(self, question: Question, text: str) -> dict:
        answer = self.task.answer(question, text)
        if answer is None:
            return {"answer": None, "correct": 0.0, "verdict": "no answer found"}
        check = getattr(self.task, "check", None)  # code tasks say why
        if check is not None:
            verdict = check(question, answer)
            return {"answer": answer, "correct": float(verdict.passed), "verdict": verdict.reason}
        correct = float(self.task.verify(question, answer))
        return {"answer": answer, "correct": correct,
                "verdict": "passed" if correct == 1.0 else "wrong"}  # fmt: skip

    def _records(self, question, arm, messages, checked, scores):
        """The pool record (scores and tokens, nested proposals -> critiques -> rebuttals ->
        critiques ...) and the transcript record (the same with the texts) of one arm."""
        children: dict[tuple[int, ...], list[tuple[int, ...]]] = {}
        for path in sorted(messages, key=lambda path: (len(path), path)):
            children.setdefault(path[:-1], []).append(path)

        def nodes(parent, level):
            pool, text = [], []
            for path in children.get(parent, []):
                reply = messages[path]
                entry = {"id": str(path[-1]), "score": scores[path],
                         "tokens": reply.completion_tokens}  # fmt: skip
                shown = {"id": str(path[-1]), "text": reply.text}
                if level == 0:
                    entry["correct"] = checked[path[0]]["correct"]
                    shown.update(checked[path[0]])
                shown["score"] = scores[path]
                below, below_text = nodes(path, level + 1)
                key = "critiques" if level % 2 == 0 else "rebuttals"
                if below:
                    entry[key] = below
                if below or level < 2:  # transcripts list a proposal's and a critique's replies
                    shown[key] = below_text
                pool.append(entry)
                text.append(shown)
            return pool, text

        pool, text = nodes((), 0)
        return {"question_id": question.id, "arm": arm, "proposals": pool}, text


_VERDICT = re.compile(r"verdict\W{0,5}(\w+)", re.IGNORECASE)


def cot_verdict(text: str, yes: tuple[str, ...], no: tuple[str, ...]) -> bool | None:
    """The verdict a chain-of-thought judge gave: the word after its last "Verdict:", else its
    last yes or no word; None when it gave none."""
    yes_words, no_words = {w.lower() for w in yes}, {w.lower() for w in no}
    found = _VERDICT.findall(text)
    if found and found[-1].lower() in yes_words | no_words:
        return found[-1].lower() in yes_words
    words = [w.lower() for w in re.findall(r"\w+", text)]
    for word in reversed(words):
        if word in yes_words | no_words:
            return word in yes_words
    return None


def hash_path(path: tuple[int, ...]) -> int:
    """A sample path as one index for the cache key (a stable mixed-radix-free encoding)."""
    return int.from_bytes(hashlib.sha256(repr(tuple(path)).encode()).digest()[:6], "little")
