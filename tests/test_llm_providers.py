"""The study's back ends (Anthropic Messages and Message Batches, OpenAI Batch) against local
servers of ours that speak their protocols, with replies from the real embedded SmolLM2: batch
submit / poll / collect, partial failures, rate limits with retries, and a run killed while its
batch is in flight that resumes it without resubmitting a request (counted at the server).

The paid APIs cannot be reached from here; these servers reproduce the documented protocol
(debatelab.llm.local_providers), not the providers' models.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import needs_model
from debatelab.llm.backends import BackendError, ModelOptions, ReplyError, load_model

pytest.importorskip("anthropic")
pytest.importorskip("multipart")
from debatelab.llm.local_providers import (  # noqa: E402
    Faults,
    LocalServer,
    ProviderState,
    anthropic_app,
    openai_app,
    smollm2_responder,
)

pytestmark = needs_model

HI = [{"role": "user", "content": "Say hello."}]


@pytest.fixture(scope="module")
def responder():
    return smollm2_responder()


def _options(tmp_path: Path, **kw) -> ModelOptions:
    return ModelOptions(state_dir=str(tmp_path / "state"), poll_seconds=0.1, gather_seconds=0.2,
                        retries=kw.pop("retries", 2), **kw)  # fmt: skip


def _chat_many(model, prompts: list[str], max_tokens: int = 8) -> list:
    """Calls from many threads at once, as the pool generator makes them."""
    from concurrent.futures import ThreadPoolExecutor

    def one(i_prompt):
        i, prompt = i_prompt
        try:
            return model.chat([{"role": "user", "content": prompt}], temperature=0.7,
                              max_tokens=max_tokens, seed=i)  # fmt: skip
        except ReplyError as exc:
            return exc

    with ThreadPoolExecutor(len(prompts)) as pool:
        return list(pool.map(one, enumerate(prompts)))


def test_anthropic_batches_submit_poll_collect_with_partial_failures(tmp_path, responder):
    # two requests fail once on the provider's side (resubmitted once), one is refused as
    # invalid every time (a failure of its call); the rest come back in one batch
    prompts = [f"Count to {i}." for i in range(8)]
    bad = "Count to 7."
    state = ProviderState(responder, Faults(
        errored_once=lambda cid: cid in flaky,
        invalid=lambda params: params["messages"][0]["content"] == bad), batch_seconds=0.3)  # fmt: skip
    flaky: set[str] = set()
    with LocalServer(lambda base: anthropic_app(state, base)) as url:
        model = load_model(f"anthropic_batch:claude-test@{url}", _options(tmp_path))
        ids = [model._custom_id(model.provider.chat_body([{"role": "user", "content": p}], 0.7,
                                                         8, i), i) for i, p in enumerate(prompts)]  # fmt: skip
        flaky.update(ids[1:3])
        replies = _chat_many(model, prompts)
        model.close()
    assert isinstance(replies[7], ReplyError) and "invalid_request_error" in str(replies[7])
    texts = [r.text for r in replies[:7]]
    assert all(isinstance(t, str) and t for t in texts)
    assert all(r.completion_tokens > 0 and r.prompt_tokens > 0 for r in replies[:7])
    # one batch for all eight, then one for the two the provider failed
    assert state.batches_created == 2 and model.batches_submitted == 2
    assert state.received == {cid: (2 if cid in flaky else 1) for cid in ids}


def test_openai_batch_chats_and_verdicts_with_a_failed_request(tmp_path, responder):
    state = ProviderState(responder, Faults(
        invalid=lambda body: body.get("max_tokens") == 3), batch_seconds=0.3)  # fmt: skip
    with LocalServer(lambda base: openai_app(state)) as url:
        model = load_model(f"openai_batch:judge-test@{url}/v1", _options(tmp_path))
        replies = _chat_many(model, ["Say yes.", "Say no.", "Say maybe."], max_tokens=6)
        with pytest.raises(ReplyError, match="HTTP 400"):
            model.chat(HI, temperature=0.0, max_tokens=3, seed=0)
        verdict = model.verdict([{"role": "user", "content": "Is 2 + 2 = 4? Answer Yes or "
                                  "No."}], ("Yes", "No"))  # fmt: skip
        model.close()
    assert all(r.text for r in replies) and state.batches_created == 3
    # the verdict's log-probabilities are the in-process model's own, through the batch file
    direct = responder.verdict([{"role": "user", "content": "Is 2 + 2 = 4? Answer Yes or No."}],
                               20)[0]  # fmt: skip
    for token in ("Yes", "No"):
        shown = {k.strip(): v for k, v in direct.items()}
        assert verdict.logprobs[token] == pytest.approx(shown[token], abs=1e-6)


def test_anthropic_messages_retries_rate_limits(tmp_path, responder):
    state = ProviderState(responder, Faults(rate_limit_first=3, retry_after=0.05))
    with LocalServer(lambda base: anthropic_app(state, base)) as url:
        model = load_model(f"anthropic:claude-test@{url}", _options(tmp_path, retries=4))
        reply = model.chat(HI, temperature=0.7, max_tokens=8, seed=1)
        again = model.chat(HI, temperature=0.7, max_tokens=8, seed=2)
        with pytest.raises(BackendError, match="log-probabilities"):
            model.verdict(HI, ("Yes", "No"))
    assert reply.text and again.text
    assert state.rate_limited == 3 and state.sync_calls == 5  # 3 refused, retried, 2 served
    # a client that may not retry meets the rate limit as a failed call
    state2 = ProviderState(responder, Faults(rate_limit_first=1))
    with LocalServer(lambda base: anthropic_app(state2, base)) as url:
        model = load_model(f"anthropic:claude-test@{url}", _options(tmp_path, retries=0))
        with pytest.raises(ReplyError, match="RateLimitError"):
            model.chat(HI, temperature=0.7, max_tokens=8, seed=1)


def test_anthropic_requests_carry_no_seed_and_no_temperature(tmp_path, responder):
    # the local server refuses what Anthropic refuses (API 2026-10-21): the back end sends neither
    state = ProviderState(responder)
    with LocalServer(lambda base: anthropic_app(state, base)) as url:
        import httpx

        for extra in ("seed", "temperature"):
            r = httpx.post(f"{url}/v1/messages", json={"model": "m", "max_tokens": 4,
                                                       extra: 1, "messages": HI})  # fmt: skip
            assert r.status_code == 400 and extra in r.json()["error"]["message"]
        model = load_model(f"anthropic:claude-test@{url}", _options(tmp_path))
        assert model.chat(HI, temperature=0.7, max_tokens=4, seed=9).text


def _pools_command(debater: str, judge: str, out: Path) -> list[str]:
    return [sys.executable, "-m", "debatelab", "pools", "generate",
            "--task", "gym:products,min_digits=1,max_digits=1", "--questions", "0:1",
            "--n", "2", "--m", "1", "--r", "1", "--debater", debater, "--judge", judge,
            "--judge-samples", "2", "--judge-tokens", "8", "--proposal-tokens", "8",
            "--critique-tokens", "8", "--rebuttal-tokens", "8", "--batch-poll", "0.2",
            "--out", str(out)]  # fmt: skip


def _env(cache: Path) -> dict:
    return {**os.environ, "DEBATELAB_CACHE": str(cache), "PYTHONUNBUFFERED": "1"}


def _journaled(cache: Path) -> int:
    db = cache / "llm" / "batches.sqlite"
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM batches").fetchone()[0]
    except sqlite3.Error:  # being created
        return 0


@pytest.mark.skipif(sys.platform == "win32", reason="process groups")
def test_a_killed_run_resumes_its_batch_without_resubmitting(tmp_path, responder):
    pytest.importorskip("reasoning_gym")
    state = ProviderState(responder, batch_seconds=4.0)
    with LocalServer(lambda base: anthropic_app(state, base)) as url:
        spec = f"anthropic_batch:claude-test@{url}"
        out, cache = tmp_path / "run", tmp_path / "cache"
        proc = subprocess.Popen(_pools_command(spec, spec, out), env=_env(cache),
                                start_new_session=True, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)  # fmt: skip
        deadline = time.time() + 120
        while not _journaled(cache) and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        # the batch is submitted and journaled (the moment between the provider's answer and
        # the journal's write is the one window where a kill makes a resubmission: docs/llm-pools.md)
        assert state.batches_created == 1 and proc.poll() is None, proc.stderr.read()
        os.killpg(proc.pid, signal.SIGKILL)  # the first batch is still in progress
        proc.wait()
        first = dict(state.received)
        state.batch_seconds = 0.3  # the rest need not wait
        assert len(first) == 2  # the question's 2 proposals, in one batch
        done = subprocess.run(_pools_command(spec, spec, out), env=_env(cache), text=True,
                              capture_output=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        # every request was received once: the proposals' batch was picked up, not resent
        assert set(state.received.values()) == {1}
        assert all(state.received[cid] == 1 for cid in first)
        # 2 proposals + 2 critiques + 2 rebuttals + 6 leaves x 2 CoT verdicts
        assert len(state.received) == 6 + 12
        resumed = [json.loads(x) for x in (out / "pools.jsonl").read_text().splitlines()]
        # and the same pools as a run that was never killed (replies depend on the request)
        fresh = subprocess.run(_pools_command(spec, spec, tmp_path / "fresh"),
                               env=_env(tmp_path / "cache2"), text=True, capture_output=True,
                               timeout=600)  # fmt: skip
        assert fresh.returncode == 0, fresh.stderr[-2000:]
    again = [json.loads(x) for x in (tmp_path / "fresh" / "pools.jsonl").read_text().splitlines()]
    assert resumed == again
    scores = [p["score"] for pool in resumed for p in pool["proposals"]]
    assert all(s in (0.0, 0.5, 1.0) for s in scores)  # two CoT verdicts per leaf


class _SlowProvider:
    """A provider in memory whose ``ended`` waits for the test (to force an interleaving of the
    poller and a late caller); every request succeeds with its custom_id as text."""

    name, discount = "slow", 0.5

    def __init__(self):
        import threading

        self.release = threading.Event()
        self.polled = threading.Event()
        self.submitted: list[list[str]] = []

    def chat_body(self, messages, temperature, max_tokens, seed):
        return {"messages": messages}

    def verdict_body(self, messages):
        return {"messages": messages}

    def submit(self, requests):
        self.submitted.append([cid for cid, _ in requests])
        return f"b{len(self.submitted)}"

    def ended(self, batch_id):
        self.polled.set()
        return self.release.wait(timeout=30)

    def results(self, batch_id, custom_ids):
        from debatelab.llm.batch import Outcome

        return {cid: Outcome("ok", cid) for cid in custom_ids}

    def chat_reply(self, value):
        from debatelab.llm.backends import Reply

        return Reply(str(value), 1, 1)

    def verdict_reply(self, value, candidates):
        raise AssertionError("not used")


def test_a_caller_joining_a_batch_while_it_is_polled_is_answered(tmp_path):
    """A resumed run's callers of one journaled batch arrive one by one; one that arrives while
    the poller is asking about that batch must still get its reply (it once waited forever)."""
    from concurrent.futures import ThreadPoolExecutor

    from debatelab.llm.batch import BatchJournal, BatchModel

    provider = _SlowProvider()
    first = BatchModel(provider, tmp_path / "j.sqlite", poll_seconds=0.05, gather_seconds=0.0)
    ids = [first._custom_id(provider.chat_body(HI, 0.7, 8, s), s) for s in (1, 2)]
    first.close()
    BatchJournal(tmp_path / "j.sqlite").record("slow", "b0", ids)  # an earlier sitting's
    model = BatchModel(provider, tmp_path / "j.sqlite", poll_seconds=0.05, gather_seconds=0.0)
    with ThreadPoolExecutor(2) as pool:
        a = pool.submit(model.chat, HI, temperature=0.7, max_tokens=8, seed=1)
        assert provider.polled.wait(10)  # the poller is inside ended() for b0 with one caller
        b = pool.submit(model.chat, HI, temperature=0.7, max_tokens=8, seed=2)
        time.sleep(0.2)
        provider.release.set()
        assert a.result(timeout=10).text == ids[0]
        assert b.result(timeout=10).text == ids[1]
    assert provider.submitted == []  # both were answered from the journaled batch
    model.close()


def test_closing_a_batch_model_fails_its_waiting_calls(tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from debatelab.llm.batch import BatchModel

    provider = _SlowProvider()
    model = BatchModel(provider, tmp_path / "j.sqlite", poll_seconds=0.05, gather_seconds=0.0)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(model.chat, HI, temperature=0.7, max_tokens=8, seed=1)
        assert provider.polled.wait(10)
        model.close()
        with pytest.raises(BackendError, match="closed"):
            waiting.result(timeout=10)
    with pytest.raises(BackendError):
        model.chat(HI, temperature=0.7, max_tokens=8, seed=2)
    provider.release.set()


def test_openai_compatible_server_rate_limits_are_retried(tmp_path, responder):
    """The synchronous OpenAI back end (a vLLM / SGLang / llama.cpp server, or OpenAI) meets
    429 with retry-after: the client waits and retries; the judge's verdict comes from the
    server's top log-probabilities."""
    state = ProviderState(responder, Faults(rate_limit_first=2, retry_after=0.05))
    with LocalServer(lambda base: openai_app(state)) as url:
        model = load_model(f"openai:judge-test@{url}/v1", _options(tmp_path, retries=3))
        reply = model.chat(HI, temperature=0.7, max_tokens=8, seed=1)
        verdict = model.verdict([{"role": "user", "content": "Is 2 + 2 = 4? Answer Yes or No."}],
                                ("Yes", "No"))  # fmt: skip
        assert reply.text and state.rate_limited == 2 and state.sync_calls == 4
        assert set(verdict.logprobs) == {"Yes", "No"} and any(
            v is not None for v in verdict.logprobs.values())  # fmt: skip
        strict = load_model(f"openai:judge-test@{url}/v1", _options(tmp_path, retries=0))
        state.faults.rate_limit_first = state.sync_calls + 1  # the next call is refused
        with pytest.raises(ReplyError, match="RateLimitError"):
            strict.chat(HI, temperature=0.7, max_tokens=8, seed=2)


def test_a_journaled_batch_the_provider_forgot_is_submitted_again(tmp_path, responder):
    """A resumed run whose journaled batch the provider no longer knows (results expired after
    29 days, another account) resubmits those requests instead of failing."""
    from debatelab.llm.batch import BatchJournal

    state = ProviderState(responder, batch_seconds=0.2)
    with LocalServer(lambda base: anthropic_app(state, base)) as url:
        model = load_model(f"anthropic_batch:claude-test@{url}", _options(tmp_path))
        cid = model._custom_id(model.provider.chat_body(HI, 0.7, 8, 1), 1)
        BatchJournal(tmp_path / "state" / "batches.sqlite").record(model.name, "msgbatch_gone",
                                                                   [cid])  # fmt: skip
        reply = model.chat(HI, temperature=0.7, max_tokens=8, seed=1)
        model.close()
    assert reply.text and state.received == {cid: 1} and model.batches_resumed == 1
