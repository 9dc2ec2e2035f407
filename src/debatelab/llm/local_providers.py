"""Local servers that speak the paid providers' protocols, for trying and testing the back ends
offline: Anthropic's Messages and Message Batches APIs and OpenAI's Files + Batch APIs.

They are stand-ins, not the providers: the replies come from a model of ours (by default the
embedded SmolLM2 in this process), and a batch "processes" for ``batch_seconds`` before it ends.
What they reproduce is the protocol as the providers document it: request and reply bodies,
batch states (Anthropic ``in_progress -> canceling -> ended``; OpenAI ``validating ->
in_progress -> finalizing -> completed``, ``cancelling -> cancelled``), per-request results
that succeed or fail separately (results in any order, matched by ``custom_id``), unknown
request fields refused with 400 (Anthropic takes no ``seed`` and, since its API version
2026-10-21, no ``temperature``), and rate limits as 429 with a
``retry-after`` header. Faults are injected through :class:`Faults`; every request a batch
received is counted, so a test can tell a resumed batch from one paid for twice.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

#: reply(messages, max_tokens, temperature, seed) -> (text, input tokens, output tokens)
Responder = Callable[[list[dict], int, float, int], tuple[str, int, int]]

#: What the Messages API takes since its version 2026-10-21: no sampling parameters
#: (temperature, top_p, top_k are refused as extra inputs) and no seed.
ANTHROPIC_PARAMS = {"model", "max_tokens", "messages", "system", "stop_sequences", "metadata",
                    "stream", "thinking", "tools", "tool_choice", "service_tier"}  # fmt: skip
OPENAI_PARAMS = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature",
                 "seed", "n", "logprobs", "top_logprobs", "top_p", "stop"}  # fmt: skip


@dataclass
class Faults:
    """Failures the server injects (all deterministic, so tests can count on them)."""

    rate_limit_first: int = 0
    """The first this many requests to the synchronous endpoints get 429 with retry-after."""
    retry_after: float = 0.05
    errored_once: Callable[[str], bool] = field(default=lambda cid: False)
    """Batch requests (by custom_id) whose first attempt fails with a server error; a
    resubmission succeeds (Anthropic ``errored``/``api_error``; OpenAI a 500 in the error file)."""
    invalid: Callable[[dict], bool] = field(default=lambda body: False)
    """Requests refused as invalid every time (Anthropic ``invalid_request_error``; OpenAI 400)."""


def smollm2_responder() -> Responder:
    """Replies from the embedded SmolLM2 (llama.cpp in this process)."""
    from .backends import LlamaCppModel, smollm2_path

    model = LlamaCppModel(smollm2_path(), n_ctx=4096)

    def reply(messages, max_tokens, temperature, seed):
        out = model.chat(messages, temperature=temperature, max_tokens=max_tokens, seed=seed)
        return out.text, out.prompt_tokens, out.completion_tokens

    reply.verdict = model.top_logprobs  # type: ignore[attr-defined]
    return reply


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _seed_of(body) -> int:
    """A seed for providers without one: the request itself (the same request, the same reply)."""
    blob = json.dumps(body, sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(blob).digest()[:4], "little")


class ProviderState:
    """What both servers share: the responder, the faults, the counts and the batches."""

    def __init__(self, responder: Responder, faults: Faults | None = None,
                 batch_seconds: float = 1.0):  # fmt: skip
        self.responder, self.faults, self.batch_seconds = (
            responder,
            faults or Faults(),
            batch_seconds,
        )
        self.lock = threading.Lock()
        self.received: Counter = Counter()  # custom_id -> times received in a batch
        self.seen: Counter = Counter()  # synchronous request -> times received
        self.sync_calls = 0
        self.rate_limited = 0
        self.batches_created = 0
        self.batches: dict[str, dict] = {}
        self.files: dict[str, bytes] = {}
        self._errored: set[str] = set()

    def rate_limit(self) -> bool:
        with self.lock:
            self.sync_calls += 1
            if self.sync_calls <= self.faults.rate_limit_first:
                self.rate_limited += 1
                return True
        return False

    def first_failure(self, custom_id: str) -> bool:
        with self.lock:
            if custom_id in self._errored or not self.faults.errored_once(custom_id):
                return False
            self._errored.add(custom_id)
            return True


# -- Anthropic ---------------------------------------------------------------------------------
def _anthropic_error(status: int, kind: str, message: str, headers: dict | None = None):
    return JSONResponse({"type": "error", "error": {"type": kind, "message": message}},
                        status_code=status, headers=headers)  # fmt: skip


def _anthropic_check(body: dict) -> str | None:
    extra = set(body) - ANTHROPIC_PARAMS
    if extra:
        return f"{sorted(extra)[0]}: Extra inputs are not permitted"
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            return f"{key}: Field required"
    return None


def _anthropic_message(state: ProviderState, body: dict, seed: int | None = None) -> dict:
    """A Message for ``body``; ``seed`` (for a batch request, from its custom_id) stands in for
    the sampling randomness the API has and takes no seed for."""
    messages = [{"role": m["role"], "content": _text_of(m["content"])} for m in body["messages"]]
    if body.get("system"):
        messages.insert(0, {"role": "system", "content": _text_of(body["system"])})
    text, inp, out = state.responder(messages, int(body["max_tokens"]),
                                     1.0, _seed_of(body) if seed is None else seed)  # fmt: skip
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    return {"id": f"msg_{digest}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "max_tokens" if out >= int(body["max_tokens"]) else "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": inp, "output_tokens": out}}  # fmt: skip


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


def anthropic_app(state: ProviderState, base: str = ""):
    """The Messages API (``POST /v1/messages``) and the Message Batches API (create, retrieve,
    results, cancel) as Anthropic documents them."""
    app = FastAPI()

    @app.post("/v1/messages")
    async def messages(request: Request):
        body = await request.json()
        if state.rate_limit():
            return _anthropic_error(429, "rate_limit_error", "Number of requests has exceeded "
                                    "your rate limit", {"retry-after": str(state.faults.retry_after)})  # fmt: skip
        problem = _anthropic_check(body)
        if problem or state.faults.invalid(body):
            return _anthropic_error(400, "invalid_request_error", problem or "invalid request")
        with state.lock:  # the same request again is a new sample
            key = json.dumps(body, sort_keys=True)
            state.seen[key] += 1
            nth = state.seen[key]
        return _anthropic_message(state, body, _seed_of([key, nth]))

    def view(batch: dict) -> dict:
        _advance(batch)
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        if batch["status"] == "ended":
            for result in batch["results"].values():
                counts[result["type"]] += 1
        else:
            counts["processing"] = len(batch["requests"])
        return {"id": batch["id"], "type": "message_batch", "processing_status": batch["status"],
                "request_counts": counts, "created_at": _iso(batch["created"]),
                "ended_at": _iso(batch.get("ended")), "expires_at": _iso(batch["created"] + 86400),
                "cancel_initiated_at": _iso(batch.get("cancel_at")), "archived_at": None,
                "results_url": (f"{base}/v1/messages/batches/{batch['id']}/results"
                                if batch["status"] == "ended" else None)}  # fmt: skip

    def _advance(batch: dict) -> None:
        with state.lock:
            if batch["status"] == "ended":
                return
            canceling = batch["status"] == "canceling"
            if not canceling and time.time() < batch["created"] + state.batch_seconds:
                return
            results = {}
        for cid, params in batch["requests"].items():
            if canceling:
                results[cid] = {"type": "canceled"}
            elif state.faults.invalid(params) or _anthropic_check(params):
                results[cid] = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "invalid_request_error",
                    "message": _anthropic_check(params) or "invalid request"}}}  # fmt: skip
            elif state.first_failure(cid):
                results[cid] = {"type": "errored", "error": {"type": "error", "error": {
                    "type": "api_error", "message": "Internal server error"}}}  # fmt: skip
            else:
                results[cid] = {
                    "type": "succeeded",
                    "message": _anthropic_message(state, params, _seed_of(cid)),
                }
        with state.lock:
            batch["results"], batch["status"], batch["ended"] = results, "ended", time.time()

    @app.post("/v1/messages/batches")
    async def create(request: Request):
        body = await request.json()
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return _anthropic_error(400, "invalid_request_error", "requests: Field required")
        ids = [r.get("custom_id") for r in requests]
        if len(set(ids)) != len(ids):
            return _anthropic_error(400, "invalid_request_error", "custom_id values must be "
                                    "unique within a batch")  # fmt: skip
        with state.lock:
            state.batches_created += 1
            bid = f"msgbatch_{state.batches_created:06d}"
            for cid in ids:
                state.received[cid] += 1
            state.batches[bid] = {"id": bid, "status": "in_progress", "created": time.time(),
                                  "requests": {r["custom_id"]: r["params"] for r in requests}}  # fmt: skip
        return view(state.batches[bid])

    @app.get("/v1/messages/batches/{bid}")
    async def retrieve(bid: str):
        if bid not in state.batches:
            return _anthropic_error(404, "not_found_error", f"no batch {bid}")
        return view(state.batches[bid])

    @app.post("/v1/messages/batches/{bid}/cancel")
    async def cancel(bid: str):
        if bid not in state.batches:
            return _anthropic_error(404, "not_found_error", f"no batch {bid}")
        batch = state.batches[bid]
        with state.lock:
            if batch["status"] == "in_progress":
                batch["status"], batch["cancel_at"] = "canceling", time.time()
        return view(batch)

    @app.get("/v1/messages/batches/{bid}/results")
    async def results(bid: str):
        batch = state.batches.get(bid)
        if batch is None:
            return _anthropic_error(404, "not_found_error", f"no batch {bid}")
        _advance(batch)
        if batch["status"] != "ended":
            return _anthropic_error(400, "invalid_request_error", "batch has not ended")
        lines = [
            json.dumps({"custom_id": cid, "result": r})
            for cid, r in reversed(batch["results"].items())
        ]  # any order, as documented
        return Response("\n".join(lines) + "\n", media_type="application/binary")

    return app


# -- OpenAI -----------------------------------------------------------------------------------
def _openai_error(status: int, message: str, kind: str = "invalid_request_error"):
    return JSONResponse({"error": {"message": message, "type": kind, "param": None,
                                   "code": None}}, status_code=status)  # fmt: skip


def _openai_completion(state: ProviderState, body: dict) -> dict:
    messages = [{"role": m["role"], "content": _text_of(m["content"])} for m in body["messages"]]
    max_tokens = int(body.get("max_completion_tokens") or body.get("max_tokens") or 256)
    seed = body.get("seed", _seed_of(body))
    if body.get("logprobs"):
        # the judge's single-token verdict: the responder's reply, and its first token's top
        # log-probabilities from the same in-process model where the responder can give them
        verdict = getattr(state.responder, "verdict", None)
        if verdict is None:
            raise ValueError("this server's responder gives no log-probabilities")
        top, inp = verdict(messages, int(body.get("top_logprobs") or 1))
        first = max(top, key=top.get)
        content, out = first, 1
        logprobs = {"content": [{"token": first, "logprob": top[first], "bytes": None,
                                 "top_logprobs": [{"token": t, "logprob": v, "bytes": None}
                                                  for t, v in top.items()]}]}  # fmt: skip
    else:
        content, inp, out = state.responder(messages, max_tokens,
                                            float(body.get("temperature", 1.0)), int(seed))  # fmt: skip
        logprobs = None
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    return {"id": f"chatcmpl-{digest}", "object": "chat.completion", "created": int(time.time()),
            "model": body["model"], "choices": [{"index": 0, "logprobs": logprobs,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "length" if out >= max_tokens else "stop"}],
            "usage": {"prompt_tokens": inp, "completion_tokens": out,
                      "total_tokens": inp + out}}  # fmt: skip


def openai_app(state: ProviderState):
    """Chat completions, the Files API (upload, content) and the Batch API (create, retrieve,
    cancel) as OpenAI documents them."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request):
        body = await request.json()
        if state.rate_limit():
            return JSONResponse({"error": {"message": "Rate limit reached", "type": "requests",
                                           "param": None, "code": "rate_limit_exceeded"}},
                                status_code=429,
                                headers={"retry-after": str(state.faults.retry_after)})  # fmt: skip
        extra = set(body) - OPENAI_PARAMS
        if extra or state.faults.invalid(body):
            return _openai_error(400, f"Unrecognized request argument supplied: {sorted(extra)}"
                                 if extra else "invalid request")  # fmt: skip
        return _openai_completion(state, body)

    @app.post("/v1/files")
    async def upload(request: Request):
        form = await request.form()
        if form.get("purpose") != "batch":
            return _openai_error(400, "purpose must be 'batch'")
        data = await form["file"].read()
        with state.lock:
            fid = f"file-{len(state.files) + 1:06d}"
            state.files[fid] = data
        return {"id": fid, "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": getattr(form["file"], "filename", "batch.jsonl"),
                "purpose": "batch", "status": "processed"}  # fmt: skip

    @app.get("/v1/files/{fid}/content")
    async def content(fid: str):
        if fid not in state.files:
            return _openai_error(404, f"No such File object: {fid}")
        return Response(state.files[fid], media_type="application/octet-stream")

    def view(batch: dict) -> dict:
        _advance(batch)
        return {k: v for k, v in batch.items() if k != "lines"}

    def _advance(batch: dict) -> None:
        with state.lock:
            if batch["status"] in ("completed", "cancelled", "failed"):
                return
            now = time.time()
            if batch["status"] == "validating":
                batch["status"], batch["in_progress_at"] = "in_progress", int(now)
                return
            cancelling = batch["status"] == "cancelling"
            if not cancelling and now < batch["created_at"] + state.batch_seconds:
                return
        out, err = [], []
        for line in batch["lines"]:
            cid, body = line["custom_id"], line["body"]
            rid = f"batch_req_{hashlib.sha256(cid.encode()).hexdigest()[:16]}"
            if cancelling:
                continue  # cancelled requests appear in neither file
            if state.faults.invalid(body) or set(body) - OPENAI_PARAMS:
                err.append({"id": rid, "custom_id": cid, "response": {"status_code": 400,
                            "request_id": rid, "body": {"error": {"message": "invalid request",
                            "type": "invalid_request_error"}}}, "error": None})  # fmt: skip
            elif state.first_failure(cid):
                err.append({"id": rid, "custom_id": cid, "response": {"status_code": 500,
                            "request_id": rid, "body": {"error": {"message": "server error",
                            "type": "server_error"}}}, "error": None})  # fmt: skip
            else:
                out.append({"id": rid, "custom_id": cid, "response": {"status_code": 200,
                            "request_id": rid, "body": _openai_completion(state, body)},
                            "error": None})  # fmt: skip
        with state.lock:
            for name, rows in (("output_file_id", out), ("error_file_id", err)):
                if rows:
                    fid = f"file-{len(state.files) + 1:06d}"
                    state.files[fid] = "".join(
                        json.dumps(r) + "\n" for r in reversed(rows)
                    ).encode()
                    batch[name] = fid
            done = int(time.time())
            batch["request_counts"] = {"total": len(batch["lines"]), "completed": len(out),
                                       "failed": len(err)}  # fmt: skip
            if cancelling:
                batch["status"], batch["cancelled_at"] = "cancelled", done
            else:
                batch["finalizing_at"] = done
                batch["status"], batch["completed_at"] = "completed", done

    @app.post("/v1/batches")
    async def create(request: Request):
        body = await request.json()
        fid = body.get("input_file_id")
        if fid not in state.files:
            return _openai_error(400, f"No such File object: {fid}")
        if body.get("endpoint") != "/v1/chat/completions" or body.get("completion_window") != "24h":
            return _openai_error(400, "endpoint must be /v1/chat/completions and "
                                 "completion_window 24h")  # fmt: skip
        try:
            lines = [json.loads(x) for x in state.files[fid].decode().splitlines() if x.strip()]
        except ValueError:
            return _openai_error(400, "the input file is not JSON Lines")
        ids = [x.get("custom_id") for x in lines]
        if len(set(ids)) != len(ids) or any(x.get("url") != "/v1/chat/completions" for x in lines):
            return _openai_error(400, "custom_id must be unique and url /v1/chat/completions")
        with state.lock:
            state.batches_created += 1
            bid = f"batch_{state.batches_created:06d}"
            for cid in ids:
                state.received[cid] += 1
            now = int(time.time())
            state.batches[bid] = {
                "id": bid, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
                "input_file_id": fid, "completion_window": "24h", "status": "validating",
                "output_file_id": None, "error_file_id": None, "created_at": time.time(),
                "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None,
                "completed_at": None, "failed_at": None, "expired_at": None,
                "cancelling_at": None, "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"), "lines": lines}  # fmt: skip
        return view(state.batches[bid])

    @app.get("/v1/batches/{bid}")
    async def retrieve(bid: str):
        if bid not in state.batches:
            return _openai_error(404, f"No batch {bid}")
        return view(state.batches[bid])

    @app.post("/v1/batches/{bid}/cancel")
    async def cancel(bid: str):
        if bid not in state.batches:
            return _openai_error(404, f"No batch {bid}")
        batch = state.batches[bid]
        with state.lock:
            if batch["status"] in ("validating", "in_progress"):
                batch["status"], batch["cancelling_at"] = "cancelling", int(time.time())
        return view(batch)

    return app


class LocalServer:
    """One of the apps above served by uvicorn in a thread: ``with LocalServer(app) as url``."""

    def __init__(self, make_app: Callable[[str], object], host: str = "127.0.0.1"):
        import socket

        with socket.socket() as s:
            s.bind((host, 0))
            self.port = s.getsockname()[1]
        self.url = f"http://{host}:{self.port}"
        self.app = make_app(self.url)
        self._server = None
        self._thread = None

    def __enter__(self) -> str:
        import uvicorn

        config = uvicorn.Config(self.app, host="127.0.0.1", port=self.port, log_level="warning")
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.time() + 20
        while not self._server.started:
            if time.time() > deadline:
                raise RuntimeError("the local provider server did not start")
            time.sleep(0.02)
        return self.url

    def __exit__(self, *exc) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
