"""``debatelab pools generate``: pools of proposals, critiques and rebuttals from real models,
verified against ground truth in a sandbox and scored by a judge model (REFERENCE C).

Writes ``pools.jsonl`` (the schema ``debatelab bon`` reads: `debatelab bon RUN_FOLDER` draws the
worms and meshes), ``transcripts.jsonl`` (every text, answer and verdict), ``failures.jsonl`` and
``report.md``. Every model call is cached in the cache folder, keyed by back end, model, prompt,
sampling settings and sample index: rerun the same command to resume without repeating a call;
a larger --n reuses the first N. Without --debater / --judge the embedded SmolLM2-135M-Instruct
runs in-process (llama.cpp, one thread); `openai:MODEL@URL` names an OpenAI-compatible server.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from ..atomic import write_atomic, write_json
from ..llm.backends import (
    DEFAULT_TIMEOUT,
    ModelOptions,
    ReplyError,
    load_model,
    parse_model_spec,
)
from ..llm.cache import CallCache
from ..llm.generate import ROLES, PoolGenerator, PoolPlan, load_templates
from ..llm.providers import BATCH_DISCOUNT
from ..llm.sandbox import SandboxLimits, check_available
from ..llm.tasks import parse_task
from ..options import WORKERS
from ..paths import cache_dir
from ..progress import progress
from ..report.runs import RunFolder
from ..runlog import duration, log_event
from ..text.pools import MAIN_ARM, protocol_depth, protocol_name

#: Rough characters per token, for --dry-run's projection only.
CHARS_PER_TOKEN = 4

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PoolsConfig:
    """Settings of one pool generation."""

    task: str = "humaneval"
    """humaneval, arc (ARC-AGI-1 evaluation, dataset order), arc:smallest (smallest prompts
    first), a JSON Lines file of code tasks (file:PATH or PATH.jsonl), or a plug-in's task."""
    questions: str = "0:10"
    """Questions of the task, 'start:stop' (0-based, stop excluded); with --pilot, the
    candidates that the pilot selects from."""
    pilot: int = field(default=0, metadata={"min": 0})
    """Select questions first, as the study did: draw this many proposals per candidate (apart
    from the pools' own), and pool only the questions whose pilot accuracy lies in --keep (the
    study: 8). 0 pools every question. The selection is written to selection.json."""
    keep: str = "0.05:0.6"
    """With --pilot: the pilot accuracies kept, LOW:HIGH meaning LOW < accuracy <= HIGH (the
    study's range: questions neither hopeless nor already easy)."""
    keep_at_most: int | None = field(default=None, metadata={"min": 1})
    """With --pilot: pool at most this many of the kept questions, in order."""
    protocol: str = "rebuttal"
    """Deepest protocol: every leaf of it and of the shallower ones is judged. proposal,
    critique, rebuttal, or a deeper debate's critique2 (a second critique of each rebuttal, M
    of them), rebuttal2 (R rebuttals of each), critique3, ... (the call count grows by M or R
    with each turn: see --dry-run)."""
    n: int = field(default=8, metadata={"min": 1})
    """Proposals per question."""
    m: int = field(default=4, metadata={"min": 1})
    """Critiques per proposal."""
    r: int = field(default=2, metadata={"min": 1})
    """Rebuttals per critique."""
    control: bool = False
    """Also the token-matched control arm: N proposals with the whole debate's token budget."""
    swap: bool = False
    """Judge each leaf with the verdict options in both orders and average (position bias)."""
    debater: str | None = None
    """Debater back end BACKEND:MODEL (default: llamacpp:smollm2, in-process)."""
    judge: str | None = None
    """Judge back end BACKEND:MODEL (default: llamacpp:smollm2, in-process)."""
    temperature: float = 0.8
    """Sampling temperature of the debaters."""
    proposal_tokens: int = 384
    """Most tokens of a proposal."""
    critique_tokens: int = 192
    """Most tokens of a critique."""
    rebuttal_tokens: int = 192
    """Most tokens of a rebuttal."""
    judge_samples: int = field(default=0, metadata={"min": 0})
    """0: the judge's single-token verdict from its log-probabilities. K: the chain-of-thought
    judge (the study's ablation), K sampled verdicts per leaf, the score the fraction saying yes;
    the only judge that back ends without log-probabilities (Anthropic's) can be."""
    judge_tokens: int = field(default=256, metadata={"min": 1})
    """Most tokens of one chain-of-thought verdict."""
    yes_tokens: tuple[str, ...] = ("Yes", "yes")
    """Verdict tokens that count as yes (one token each)."""
    no_tokens: tuple[str, ...] = ("No", "no")
    """Verdict tokens that count as no."""
    templates: str | None = None
    """A folder of prompt templates (proposal, critique, rebuttal, judge, control .txt) that
    replace the packaged ones."""
    seed: int = 0
    """Sampling seed (each call's seed derives from it, the question and the sample path)."""
    context: int = 8192
    """Context window of an in-process model, in tokens."""
    sandbox_seconds: float = 10.0
    """Wall-clock limit of one sandboxed verification."""
    workers: int = field(default=WORKERS, compare=False, metadata={"min": 1})
    """Copies of an in-process model, one thread each, serving calls side by side (one per
    core); replies do not depend on it."""
    concurrency: int = field(default=8, compare=False, metadata={"min": 1})
    """Calls in flight to an HTTP back end (an in-process model takes one at a time)."""
    retries: int = field(default=4, compare=False, metadata={"min": 0})
    """Retries of a failed HTTP call (connection errors, 429, 5xx, timeouts), with exponential
    backoff."""
    http_timeout: float = field(default=DEFAULT_TIMEOUT, compare=False)
    """Seconds to wait for one HTTP reply before retrying; a server silent through every retry
    stops the run (a hung server costs at most about timeout x (retries + 1) per call)."""
    batch_poll: float = field(default=30.0, compare=False)
    """Seconds between a batch back end's questions whether its batches have ended."""
    debater_prices: str = field(default="0,0", compare=False)
    """USD per million input, output tokens of the debater at the provider's synchronous prices
    (a batch back end's discount is applied to them)."""
    judge_prices: str = field(default="0,0", compare=False)
    """USD per million input, output tokens of the judge."""
    dry_run: bool = field(default=False, compare=False)
    """Print the calls, tokens and projected cost, then stop before any call."""

    def __post_init__(self):
        object.__setattr__(self, "protocol", protocol_name(self.protocol))
        parse_task(self.task)  # registered tasks and back ends, plug-ins included
        parse_model_spec(self.debater)
        judge_backend, _ = parse_model_spec(self.judge)
        if not judge_backend.logprobs and self.judge_samples == 0:
            raise ValueError(f"--judge {self.judge}: this back end gives no log-probabilities, so "
                             "it can only be the chain-of-thought judge: add --judge-samples K "
                             "(e.g. 5)")  # fmt: skip
        if not (isinstance(self.batch_poll, int | float) and 0 < self.batch_poll < 1e6):
            raise ValueError(f"--batch-poll {self.batch_poll!r}: give seconds, more than 0")
        self.span()
        self.plan()
        self.keep_range()
        if self.pilot == 0 and self.keep_at_most is not None:
            raise ValueError("--keep-at-most selects among the questions a pilot kept: give "
                             "--pilot K too (the study: --pilot 8)")  # fmt: skip
        for name in ("debater_prices", "judge_prices"):
            _prices(getattr(self, name), name)
        if not (isinstance(self.http_timeout, int | float) and 0 < self.http_timeout < 1e6):
            raise ValueError(f"--http-timeout {self.http_timeout!r}: give seconds, more than 0")
        if not (isinstance(self.sandbox_seconds, int | float) and 0 < self.sandbox_seconds < 1e6):
            raise ValueError(f"--sandbox-seconds {self.sandbox_seconds!r}: give seconds, more "
                             "than 0")  # fmt: skip

    def span(self) -> tuple[int, int]:
        try:
            start, stop = (int(x) for x in self.questions.split(":"))
        except ValueError:
            raise ValueError(f"--questions {self.questions!r}: use start:stop, e.g. 0:10") from None
        if not 0 <= start < stop:
            raise ValueError(f"--questions {self.questions!r}: needs 0 <= start < stop")
        return start, stop

    def keep_range(self) -> tuple[float, float]:
        try:
            low, high = (float(x) for x in self.keep.split(":"))
        except ValueError:
            raise ValueError(f"--keep {self.keep!r}: use LOW:HIGH, e.g. 0.05:0.6") from None
        if not 0.0 <= low < high <= 1.0:
            raise ValueError(f"--keep {self.keep!r}: needs 0 <= LOW < HIGH <= 1")
        return low, high

    def plan(self) -> PoolPlan:
        return PoolPlan(n=self.n, m=self.m, r=self.r, depth=protocol_depth(self.protocol),
                        control=self.control, swap=self.swap, temperature=self.temperature,
                        proposal_tokens=self.proposal_tokens,
                        critique_tokens=self.critique_tokens,
                        rebuttal_tokens=self.rebuttal_tokens, yes=tuple(self.yes_tokens),
                        no=tuple(self.no_tokens), seed=self.seed,
                        judge_samples=self.judge_samples, judge_tokens=self.judge_tokens)  # fmt: skip


def _prices(text: str, name: str) -> tuple[float, float]:
    try:
        inp, out = (float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"--{name.replace('_', '-')} {text!r}: give USD per million input "
                         "and output tokens, e.g. 3,15") from None  # fmt: skip
    return inp, out


def projection(config: PoolsConfig, questions) -> dict:
    """Calls, tokens (upper bounds: every reply at its token limit) and cost of the run."""
    plan = config.plan()
    per_q = plan.calls()
    pooled = len(questions) if config.keep_at_most is None else \
        min(len(questions), config.keep_at_most)  # fmt: skip
    calls = {"pilot": config.pilot * len(questions),
             **{role: count * pooled for role, count in per_q.items()}}  # fmt: skip
    q_tokens = sum(len(q.prompt) for q in questions) / CHARS_PER_TOKEN / max(len(questions), 1)
    p = plan.proposal_tokens
    debate = sum(plan.turn_tokens(k) for k in range(plan.depth))  # the deepest transcript
    prompt_of = {"pilot": q_tokens, "proposer": q_tokens, "control": q_tokens,
                 "judge": q_tokens + max(debate, plan.control_tokens())}  # fmt: skip
    reply_of = {"pilot": p, "proposer": p, "control": plan.control_tokens(),
                "judge": plan.judge_tokens if plan.judge_samples else 1}  # fmt: skip
    tokens = {role: (round(calls[role] * prompt_of[role]), calls[role] * reply_of[role])
              for role in calls if role in prompt_of}  # fmt: skip
    # a critique or rebuttal reads the debate before it: each level's own prompt length
    for role, first in (("critic", 1), ("rebuttal", 2)):
        levels = range(first, plan.depth, 2)
        nodes = plan.level_nodes()
        before = lambda k: q_tokens + sum(plan.turn_tokens(j) for j in range(k))  # noqa: E731
        tokens[role] = (round(pooled * sum(nodes[k] * before(k) for k in levels)),
                        pooled * sum(nodes[k] * plan.turn_tokens(k) for k in levels))  # fmt: skip
    return {"calls": calls, "tokens": tokens, "cost_usd": cost(config, tokens),
            "cost_usd_sync": cost(config, tokens, 1.0),
            "cost_usd_batch": cost(config, tokens, BATCH_DISCOUNT)}  # fmt: skip


def cost(config: PoolsConfig, tokens: dict[str, tuple[int, int]],
         discount: float | None = None) -> float:  # fmt: skip
    """USD for ``tokens`` per role at the given prices, with each back end's discount (or the
    ``discount`` given, for every role)."""
    total = 0.0
    for role, (inp, out) in tokens.items():
        judge = role == "judge"
        prices = _prices(config.judge_prices if judge else config.debater_prices, "")
        backend, _ = parse_model_spec(config.judge if judge else config.debater)
        factor = backend.discount if discount is None else discount
        total += (inp * prices[0] + out * prices[1]) / 1e6 * factor
    return round(total, 4)


def run(config: PoolsConfig, folder: RunFolder) -> dict:
    """The experiment shape: pools, transcripts and a report into ``folder``."""
    start_time = time.perf_counter()
    templates = load_templates(config.templates)
    spec, arg = parse_task(config.task)
    task = spec.load(arg, SandboxLimits(wall_seconds=config.sandbox_seconds))
    start, stop = config.span()
    all_questions = task.questions()
    if start >= len(all_questions):
        raise ValueError(f"--questions {config.questions}: task {task.name} has "
                         f"{len(all_questions)} questions")  # fmt: skip
    questions = all_questions[start:stop]
    folder.seeds["sampling"] = config.seed
    plan = config.plan()
    projected = projection(config, questions)
    lines = [f"{len(questions)} {'candidate ' if config.pilot else ''}questions of {task.name}: "
             + ", ".join(f"{v:,} {k} calls" for k, v in projected["calls"].items() if v),
             f"at most {sum(t[0] for t in projected['tokens'].values()):,} input and "
             f"{sum(t[1] for t in projected['tokens'].values()):,} output tokens; projected "
             f"cost ${projected['cost_usd']:,.2f} with these back ends (before the cache; "
             f"${projected['cost_usd_sync']:,.2f} at synchronous prices, "
             f"${projected['cost_usd_batch']:,.2f} through batch APIs)"]  # fmt: skip
    for line in lines:
        folder.echo(line)
    if config.dry_run:
        return {"dry_run": True, **_flat("projected", projected)}
    if spec.sandboxed:  # the task declares that its verification runs model-written code
        check_available()

    options = ModelOptions(concurrency=config.concurrency, context=config.context,
                           retries=config.retries, timeout=config.http_timeout,
                           copies=config.workers, poll_seconds=config.batch_poll,
                           state_dir=str(cache_dir(folder.cache_dir) / "llm"))  # fmt: skip

    def model(spec):
        return load_model(spec, options)

    debater = model(config.debater)
    judge = debater if (config.judge or None) == (config.debater or None) else model(config.judge)
    folder.extra["models"] = {"debater": debater.name, "judge": judge.name}
    cache = CallCache(cache_dir(folder.cache_dir) / "llm" / "calls.sqlite")
    totals = {**plan.calls(), "verifier": plan.n * (1 + plan.control)}
    if config.pilot:  # the pilot's bar counts questions; the others count the pooled ones
        totals = {role: v * (config.keep_at_most or len(questions)) for role, v in totals.items()}
        totals["pilot"] = config.pilot * len(questions)
    else:
        totals = {role: v * len(questions) for role, v in totals.items()}
    shown = [role for role in ROLES if totals.get(role)]
    bars = {role: progress(total=totals[role], desc=role, position=k, stage=False,
                           leave=False, enabled=folder.progress)
            for k, role in enumerate(shown)}  # fmt: skip
    gen = PoolGenerator(task, debater, judge, plan, cache, templates, bars)
    pieces = folder.path / "questions"
    done, failures, failed_usage = [], [], {}
    indexed = list(enumerate(questions, start))
    try:
        if config.pilot:
            indexed = select(config, gen, indexed, folder)
        todo = []
        for index, question in indexed:
            piece = pieces / f"{index:05d}.json"
            if piece.exists():
                done.append((index, json.loads(piece.read_text())))
            else:
                todo.append((index, question))
        # a batch back end gathers concurrent calls into one batch: every question at once
        # makes each level of the whole run one batch; other back ends go question by question
        batched = getattr(debater, "batched", False) or getattr(judge, "batched", False)
        lock = threading.Lock()

        def one(item):
            index, question = item
            try:
                pools, text = gen.question(question)
            except ReplyError as exc:
                with lock:
                    failures.append({"question_id": question.id, "error": str(exc)})
                    _add_usage(failed_usage, gen.take_usage(question))
                return
            # a question's tokens travel with it, so a resumed run's totals count the
            # questions finished in earlier sessions (their calls are not made again)
            record = {"pools": pools, "transcript": text, "usage": gen.take_usage(question)}
            write_json(pieces / f"{index:05d}.json", record)
            with lock:
                done.append((index, record))
                _log_question(question, record, len(done), len(indexed), fresh, began)

        fresh, began = len(done), time.perf_counter()  # finished before this sitting; since
        if batched and todo:
            with ThreadPoolExecutor(max_workers=len(todo)) as pool:
                list(pool.map(one, todo))
        else:
            for item in todo:
                one(item)
        done = [d for _, d in sorted(done, key=lambda x: x[0])]
    finally:
        # models first: a batch model fails its waiting calls, so the generator's workers end
        for m in {id(debater): debater, id(judge): judge}.values():
            getattr(m, "close", lambda: None)()
        gen.close()
        for bar in bars.values():
            bar.close()
        folder.extra["calls"] = {role: dict(c) for role, c in cache.counts.items()}
        cache.close()
    _write_jsonl(folder.path / "pools.jsonl", [p for d in done for p in d["pools"]])
    _write_jsonl(folder.path / "transcripts.jsonl", [d["transcript"] for d in done])
    _write_jsonl(folder.path / "failures.jsonl", failures)
    usage = dict(failed_usage)
    if (folder.path / "selection.json").exists():
        _add_usage(usage, json.loads((folder.path / "selection.json").read_text())["usage"])
    for d in done:
        _add_usage(usage, d.get("usage", {}))
    metrics = summary(config, done, failures, folder.extra["calls"], usage)
    metrics["wall_time_s"] = round(time.perf_counter() - start_time, 1)
    (folder.path / "report.md").write_text(report(config, task.name, metrics))
    return metrics


def _log_question(question, record: dict, finished: int, total: int, before: int,
                  began: float) -> None:  # fmt: skip
    """A finished question into the run log: its proposals' accuracy, its tokens per role and
    the ETA of the questions left (at this sitting's rate)."""
    main = next((p for p in record["pools"] if p["arm"] == MAIN_ARM), record["pools"][0])
    accuracy = sum(p["correct"] for p in main["proposals"]) / len(main["proposals"])
    elapsed = time.perf_counter() - began
    eta = elapsed / (finished - before) * (total - finished) if finished > before else None
    tokens = {role: sum(u) for role, u in record["usage"].items()}
    message = (f"{question.id} done ({finished} of {total}): proposals {100 * accuracy:.0f} % "
               f"correct, {sum(tokens.values()):,} tokens")  # fmt: skip
    if eta:
        message += f", ETA {duration(eta)}"
    log_event(_log, "question_done", message, question_id=question.id, finished=finished,
              total=total, proposal_accuracy=accuracy, usage=record["usage"], eta_s=eta)  # fmt: skip


def select(config: PoolsConfig, gen: PoolGenerator, indexed: list, folder: RunFolder) -> list:
    """The study's question selection: ``config.pilot`` proposals per candidate, kept where the
    pilot accuracy lies in ``config.keep``, until ``config.keep_at_most`` are kept. Recorded in
    ``selection.json`` after every candidate (``"complete": false`` until it ends), so a cut
    pilot resumes after its last recorded candidate. With a batch back end the candidates are
    piloted in waves (each one batch) of four times the questions still wanted."""
    low, high = config.keep_range()
    path = folder.path / "selection.json"
    settings = {"attempts": config.pilot, "keep": [low, high], "rule": "low < accuracy <= high",
                "keep_at_most": config.keep_at_most}  # fmt: skip
    rows, usage = [], {}
    if path.exists():  # a resumed run: candidates piloted in earlier sittings
        old = json.loads(path.read_text())
        if all(old.get(k) == v for k, v in settings.items()):
            rows, usage = old["questions"], old["usage"]
    by_index = dict(indexed)
    kept = [(row["index"], by_index[row["index"]]) for row in rows if row["kept"]]
    done = {row["index"] for row in rows}
    todo = [(i, q) for i, q in indexed if i not in done]
    wanted = lambda: None if config.keep_at_most is None else config.keep_at_most - len(kept)  # noqa: E731

    def record(complete: bool) -> None:
        write_json(path, {**settings, "complete": complete, "candidates_tried": len(rows),
                          "kept": len(kept), "usage": usage, "questions": rows})  # fmt: skip

    batched = getattr(gen.debater, "batched", False)
    bar = progress(total=len(indexed), initial=len(rows), desc="pilot questions", leave=False,
                   enabled=folder.progress)  # fmt: skip
    with bar:
        while todo and (wanted() is None or wanted() > 0):
            wave = todo[: max(1, 4 * (wanted() or len(todo)))] if batched else todo[:1]
            todo = todo[len(wave) :]
            with ThreadPoolExecutor(max_workers=len(wave)) as pool:
                results = list(pool.map(lambda iq: gen.pilot(iq[1], config.pilot), wave))
            for (index, question), correct in zip(wave, results, strict=True):
                _add_usage(usage, gen.take_usage(question))
                accuracy = sum(correct) / len(correct)
                keep = low < accuracy <= high and (wanted() is None or wanted() > 0)
                rows.append({"index": index, "question_id": question.id, "correct": correct,
                             "accuracy": accuracy, "in_range": low < accuracy <= high,
                             "kept": keep})  # fmt: skip
                if keep:
                    kept.append((index, question))
                bar.update(1)
            record(complete=False)
    record(complete=True)
    folder.echo(f"pilot: {len(kept)} of {len(rows)} candidate questions kept "
                f"({low:g} < accuracy <= {high:g} over {config.pilot} attempts)")  # fmt: skip
    if not kept:
        raise ValueError(f"the pilot kept no question of --questions {config.questions} (pilot "
                         f"accuracies in selection.json): widen --keep or give more candidates")  # fmt: skip
    return kept


def _add_usage(total: dict[str, list[int]], part: dict[str, list[int]]) -> None:
    for role, (inp, out) in part.items():
        t = total.setdefault(role, [0, 0])
        t[0] += inp
        t[1] += out


def _write_jsonl(path, rows: list[dict]) -> None:
    text = "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows)
    write_atomic(path, lambda p: p.write_text(text))


def _flat(prefix: str, obj, out: dict | None = None) -> dict:
    out = {} if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            _flat(f"{prefix}_{k}", v, out)
    elif isinstance(obj, tuple | list):
        for k, v in zip(("input", "output"), obj, strict=False):
            _flat(f"{prefix}_{k}", v, out)
    else:
        out[prefix] = obj
    return out


def summary(
    config: PoolsConfig,
    done: list[dict],
    failures: list[dict],
    calls: dict,
    usage: dict[str, list[int]],
) -> dict:
    """Per-run figures: questions, proposer accuracy per arm, calls, tokens and cost.

    Calls made and served from the cache are this session's; tokens and cost are the run's,
    summed from each finished question's record (``usage``) and this session's failures.
    """
    out: dict = {"n_questions": len(done), "n_failed_questions": len(failures)}
    for arm in ("main", "control"):
        correct = [p["correct"] for d in done for pool in d["pools"] if pool["arm"] == arm
                   for p in pool["proposals"]]  # fmt: skip
        if correct:
            out[f"{arm}_proposal_accuracy"] = round(sum(correct) / len(correct), 4)
    tokens = {}
    for role in [*calls, *(r for r in usage if r not in calls)]:
        c = calls.get(role, {})
        out[f"{role}_calls_made"] = c.get("calls_made", 0)
        out[f"{role}_calls_cached"] = c.get("calls_cached", 0)
        out[f"{role}_failures"] = c.get("failures", 0)
        out[f"{role}_call_seconds"] = round(c.get("seconds", 0.0), 1)
        tokens[role] = tuple(usage.get(role, (0, 0)))
        out[f"{role}_prompt_tokens"], out[f"{role}_completion_tokens"] = tokens[role]
    out["cost_usd"] = cost(config, tokens)
    return out


def report(config: PoolsConfig, task_name: str, m: dict) -> str:
    rows = [f"# Pools: {task_name}, questions {config.questions}, N={config.n} M={config.m} "
            f"R={config.r} ({config.protocol})", "",
            f"{m['n_questions']} questions pooled, {m['n_failed_questions']} failed "
            "(failures.jsonl says why); proposer accuracy (mean correctness of a proposal): "
            f"{m.get('main_proposal_accuracy', float('nan')):.3f}"
            + (f", control arm {m['control_proposal_accuracy']:.3f}"
               if "control_proposal_accuracy" in m else ""), "",
            "Calls made, served from the cache and failed, and seconds in calls (summed over "
            "calls side by side, waits for a free model included) are this session's; tokens "
            "and cost are the whole run's (every question pooled so far).", "",
            "| role | calls made | from cache | failures | input tokens | output tokens | "
            "seconds in calls |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for role in ROLES:
        if f"{role}_calls_made" in m:
            rows.append(f"| {role} | {m[f'{role}_calls_made']:,} | {m[f'{role}_calls_cached']:,} "
                        f"| {m[f'{role}_failures']} | {m[f'{role}_prompt_tokens']:,} | "
                        f"{m[f'{role}_completion_tokens']:,} | "
                        f"{m.get(f'{role}_call_seconds', 0):,.0f} |")  # fmt: skip
    rows += ["", f"Cost at the given prices: ${m['cost_usd']:.2f}. Worms and meshes: "
             "`debatelab bon <this folder>`."]  # fmt: skip
    return "\n".join(rows) + "\n"
