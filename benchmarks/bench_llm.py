"""Model calls per second: SmolLM2-135M-Instruct in-process (llama.cpp, one thread) against the
same model behind a real llama.cpp OpenAI-compatible server, at several concurrency levels, in
one run on this machine.

Each case makes ``--calls`` chat calls (a HumanEval prompt with a distinct first line, so no
call shares a prefix with another, ``--max-tokens`` sampled tokens, a distinct seed each; with
``--shared-prefix`` the very same prompt every time) and as many verdict calls (the judge's single next-token distribution on a
proposal transcript), with no cache, and prints calls per second and the ratio to in-process.
The server gets ``--server-threads`` threads; llama-cpp-python's server runs one request at a
time, so concurrency only overlaps HTTP and JSON with compute (a batching server such as vLLM
is what turns concurrency into throughput).

    python benchmarks/bench_llm.py [--calls 16] [--max-tokens 64] [--levels 1,2,4]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from debatelab.llm.backends import load_model, smollm2_path
from debatelab.llm.generate import load_templates, transcript
from debatelab.llm.tasks import humaneval_task


def workload(n_calls: int):
    q = humaneval_task().questions()[0]
    chat = [{"role": "user", "content": load_templates()["proposal"].format(question=q.prompt)}]
    judge_text = load_templates()["judge"].format(
        question=q.prompt, transcript=transcript(q.truth["header"] + q.truth["canonical"]),
        options="Yes or No")  # fmt: skip
    verdict = [{"role": "user", "content": judge_text}]
    return chat, verdict


def distinct(messages: list[dict], i: int, shared: bool) -> list[dict]:
    """Call ``i``'s messages: the same for every call (a server may reuse the whole prompt's
    KV cache), or with a distinct first line (no shared prefix: full prompt evaluation)."""
    if shared:
        return messages
    return [{"role": "user", "content": f"Request {i}.\n" + messages[0]["content"]}]


def run_case(model, chat, verdict, n_calls: int, max_tokens: int, concurrency: int,
             shared: bool) -> dict:  # fmt: skip
    def one_chat(seed):
        return model.chat(distinct(chat, seed, shared), temperature=0.8, max_tokens=max_tokens,
                          seed=seed)  # fmt: skip

    def one_verdict(i):
        return model.verdict(distinct(verdict, i, shared), ("Yes", "yes", "No", "no"))

    out = {}
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        start = time.perf_counter()
        replies = list(pool.map(one_chat, range(n_calls)))
        out["chat_s"] = time.perf_counter() - start
        out["chat_tokens"] = sum(r.completion_tokens for r in replies)
        start = time.perf_counter()
        list(pool.map(one_verdict, range(n_calls)))
        out["verdict_s"] = time.perf_counter() - start
    out["chat_per_s"] = n_calls / out["chat_s"]
    out["verdict_per_s"] = n_calls / out["verdict_s"]
    out["tokens_per_s"] = out["chat_tokens"] / out["chat_s"]
    return out


def start_server(threads: int):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model",
                             str(smollm2_path()), "--host", "127.0.0.1", "--port", str(port),
                             "--n_threads", str(threads), "--n_threads_batch", str(threads),
                             "--n_ctx", "8192"],
                            stdout=log, stderr=log)  # fmt: skip
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(200):
        try:
            httpx.get(url + "/models", timeout=1)
            return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise SystemExit("the llama.cpp server did not start")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--levels", default="1,2,4")
    parser.add_argument("--server-threads", type=int, default=1)
    parser.add_argument(
        "--shared-prefix",
        action="store_true",
        help="the same prompt for every call (the server's prefix cache helps)",
    )
    args = parser.parse_args()
    chat, verdict = workload(args.calls)
    rows = []
    local = load_model(None)
    rows.append(
        (
            "in-process",
            1,
            run_case(local, chat, verdict, args.calls, args.max_tokens, 1, args.shared_prefix),
        )
    )
    del local
    proc, url = start_server(args.server_threads)
    try:
        for level in (int(x) for x in args.levels.split(",")):
            model = load_model(f"openai:smollm2@{url}", concurrency=level)
            rows.append((f"http ({args.server_threads} thread)", level,
                         run_case(model, chat, verdict, args.calls, args.max_tokens, level,
                                  args.shared_prefix)))  # fmt: skip
    finally:
        proc.terminate()
        proc.wait()
    base = rows[0][2]
    prompts = "one shared prompt" if args.shared_prefix else "a distinct prompt per call"
    print(
        f"{args.calls} chat calls (max {args.max_tokens} tokens) and {args.calls} verdicts "
        f"each, {prompts}"
    )
    print(f"{'back end':<20} {'conc':>4} {'chat/s':>8} {'tok/s':>8} {'verdict/s':>10} "
          f"{'chat x':>7} {'verdict x':>9}")  # fmt: skip
    for name, level, r in rows:
        print(f"{name:<20} {level:>4} {r['chat_per_s']:>8.2f} {r['tokens_per_s']:>8.1f} "
              f"{r['verdict_per_s']:>10.2f} {r['chat_per_s'] / base['chat_per_s']:>7.2f} "
              f"{r['verdict_per_s'] / base['verdict_per_s']:>9.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
