"""The study's back ends: Anthropic's Messages API, its Message Batches API, and OpenAI's Batch
API, through the official ``anthropic`` and ``openai`` clients.

- ``anthropic:MODEL[@URL]``: one Messages call per request; the client retries 429 (honouring
  ``retry-after``), 529 and 5xx with exponential backoff. Keys from ``$ANTHROPIC_API_KEY``, the
  address from ``URL``, else ``$ANTHROPIC_BASE_URL``, else Anthropic's.
- ``anthropic_batch:MODEL[@URL]``: the same requests through Message Batches (half price).
- ``openai_batch:MODEL[@URL]``: chat completions through OpenAI's Files and Batch APIs (half
  price), verdicts included (log-probabilities come back in the batch's output file).

Anthropic's API returns no log-probabilities and takes no seed and (since its version
2026-10-21) no temperature, so an Anthropic judge is the chain-of-thought judge
(``--judge-samples K``), Claude samples at its own setting, and repeated samples of one prompt
differ by their ``custom_id`` only. These back ends are tested against local servers that speak the same
protocols (:mod:`debatelab.llm.local_providers`), never against the paid APIs.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

from .backends import (
    DEFAULT_TIMEOUT,
    Backend,
    BackendError,
    ModelOptions,
    Reply,
    ReplyError,
    chat_reply,
    register_backend,
    verdict_reply,
    verdict_request,
)
from .batch import BatchGone, BatchModel, Outcome

ANTHROPIC_URL = "https://api.anthropic.com"
#: Batch prices as a fraction of synchronous ones (both providers' published discount).
BATCH_DISCOUNT = 0.5


def _anthropic_client(url: str | None, retries: int, timeout: float):
    try:
        import anthropic
    except ImportError:
        raise BackendError('the Anthropic back ends need the anthropic client: pip install '
                           '"debatelab[llm]"') from None  # fmt: skip
    url = url or os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL
    client = anthropic.Anthropic(base_url=url, api_key=os.environ.get("ANTHROPIC_API_KEY")
                                 or "no-key", max_retries=retries, timeout=timeout)  # fmt: skip
    return anthropic, client, url


def _anthropic_body(model: str, messages: list[dict], temperature: float,
                    max_tokens: int) -> dict:  # fmt: skip
    """A Messages request: system turns go to the top-level ``system``. No seed and no
    ``temperature``: the API has no seed, and since its version 2026-10-21 (the default of the
    2.x clients) it refuses every sampling parameter, so Claude samples at its own setting and
    ``temperature`` only enters the cache key."""
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    body = {"model": model, "max_tokens": max_tokens,
            "messages": [m for m in messages if m["role"] != "system"]}  # fmt: skip
    if system:
        body["system"] = system
    return body


def _anthropic_reply(message, name: str) -> Reply:
    parts = getattr(message, "content", None)
    if not isinstance(parts, list):
        raise ReplyError(f"{name}: a reply without content")
    text = "".join(getattr(p, "text", "") for p in parts if getattr(p, "type", "") == "text")
    usage = getattr(message, "usage", None)
    counts = [getattr(usage, k, 0) or 0 for k in ("input_tokens", "output_tokens")]
    counts = [c if type(c) is int and c >= 0 else 0 for c in counts]
    return Reply(text, counts[0], counts[1])


def _errors(module, name: str, call, batch_id: str | None = None):
    """``call()`` with the client's exceptions mapped to ours: unreachable or unauthorised stops
    the run (BackendError); a refused or broken reply fails its leaf (ReplyError); a batch the
    provider no longer knows (404 when asking about ``batch_id``) is BatchGone."""
    try:
        return call()
    except module.NotFoundError as exc:
        if batch_id is not None:
            raise BatchGone(f"{name}: the provider no longer knows batch {batch_id}") from None
        raise BackendError(
            f"{name}: NotFoundError: {exc}. Is the server running at that "
            "address and the model name right?"
        ) from None
    except module.APITimeoutError:
        raise BackendError(f"{name}: no reply within the timeout (after the retries); a slow "
                           "server needs a longer --http-timeout") from None  # fmt: skip
    except (module.APIConnectionError, module.AuthenticationError,
            module.PermissionDeniedError) as exc:  # fmt: skip
        raise BackendError(f"{name}: {type(exc).__name__}: {exc}. Is the server running at "
                           "that address, the key set and the model name right?") from None  # fmt: skip
    except module.APIError as exc:
        raise ReplyError(f"{name}: {type(exc).__name__}: {str(exc)[:300]}") from None


class AnthropicModel:
    """Claude through the Messages API, one call per request."""

    def __init__(self, model: str, url: str | None = None, *, concurrency: int = 8,
                 retries: int = 4, timeout: float = DEFAULT_TIMEOUT):  # fmt: skip
        self._module, self._client, url = _anthropic_client(url, retries, timeout)
        self.model, self.concurrency = model, concurrency
        self.name = f"anthropic:{model}@{url}"

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int,
             seed: int) -> Reply:  # fmt: skip
        body = _anthropic_body(self.model, messages, temperature, max_tokens)
        message = _errors(self._module, self.name, lambda: self._client.messages.create(**body))
        return _anthropic_reply(message, self.name)

    def verdict(self, messages: list[dict], candidates: tuple[str, ...]) -> Reply:
        raise BackendError(f"{self.name}: Anthropic's API gives no log-probabilities; judge with "
                           "--judge-samples K (the chain-of-thought judge)")  # fmt: skip


class AnthropicBatches:
    """The Message Batches protocol (a :class:`~debatelab.llm.batch.BatchProvider`)."""

    discount = BATCH_DISCOUNT

    def __init__(self, model: str, url: str | None, retries: int, timeout: float):
        self._module, self._client, url = _anthropic_client(url, retries, timeout)
        self.model, self.name = model, f"anthropic_batch:{model}@{url}"

    def chat_body(self, messages, temperature, max_tokens, seed) -> dict:
        return _anthropic_body(self.model, messages, temperature, max_tokens)

    def verdict_body(self, messages) -> dict:
        raise BackendError(f"{self.name}: Anthropic's API gives no log-probabilities; judge with "
                           "--judge-samples K (the chain-of-thought judge)")  # fmt: skip

    def submit(self, requests: list[tuple[str, dict]]) -> str:
        batch = _errors(self._module, self.name, lambda: self._client.messages.batches.create(
            requests=[{"custom_id": cid, "params": body} for cid, body in requests]))  # fmt: skip
        return batch.id

    def ended(self, batch_id: str) -> bool:
        batch = _errors(self._module, self.name,
                        lambda: self._client.messages.batches.retrieve(batch_id), batch_id)  # fmt: skip
        return batch.processing_status == "ended"

    def results(self, batch_id: str, custom_ids: set[str]) -> dict[str, Outcome]:
        out = {}
        rows = _errors(self._module, self.name,
                       lambda: list(self._client.messages.batches.results(batch_id)), batch_id)  # fmt: skip
        for row in rows:
            result = row.result
            if result.type == "succeeded":
                out[row.custom_id] = Outcome("ok", result.message)
            elif result.type == "errored":
                error = getattr(getattr(result, "error", None), "error", None)
                kind = getattr(error, "type", "error")
                message = f"{kind}: {getattr(error, 'message', '')}"
                # invalid requests fail the same way every time; the rest is the provider's
                out[row.custom_id] = Outcome("fail" if kind == "invalid_request_error" else
                                             "retry", message=message)  # fmt: skip
            else:  # canceled, expired
                out[row.custom_id] = Outcome("retry", message=f"request {result.type}")
        return out

    def chat_reply(self, value) -> Reply:
        return _anthropic_reply(value, self.name)

    def verdict_reply(self, value, candidates) -> Reply:
        raise ReplyError(f"{self.name}: no log-probabilities")


class OpenAIBatches:
    """OpenAI's Files + Batch protocol (a :class:`~debatelab.llm.batch.BatchProvider`)."""

    discount = BATCH_DISCOUNT

    def __init__(self, model: str, url: str | None, retries: int, timeout: float):
        try:
            import openai
        except ImportError:
            raise BackendError('the OpenAI batch back end needs the openai client: pip install '
                               '"debatelab[llm]"') from None  # fmt: skip
        url = url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        self._module = openai
        self._client = openai.OpenAI(base_url=url, api_key=os.environ.get("OPENAI_API_KEY")
                                     or "no-key", max_retries=retries, timeout=timeout)  # fmt: skip
        self.model, self.name = model, f"openai_batch:{model}@{url}"

    def chat_body(self, messages, temperature, max_tokens, seed) -> dict:
        return {"model": self.model, "messages": messages, "temperature": temperature,
                "max_tokens": max_tokens, "seed": seed}  # fmt: skip

    def verdict_body(self, messages) -> dict:
        return {"model": self.model, **verdict_request(messages)}

    def submit(self, requests: list[tuple[str, dict]]) -> str:
        lines = "".join(json.dumps({"custom_id": cid, "method": "POST",
                                    "url": "/v1/chat/completions", "body": body}) + "\n"
                        for cid, body in requests)  # fmt: skip

        def create():
            upload = self._client.files.create(file=("batch.jsonl", io.BytesIO(lines.encode())),
                                               purpose="batch")  # fmt: skip
            return self._client.batches.create(input_file_id=upload.id,
                                               endpoint="/v1/chat/completions",
                                               completion_window="24h")  # fmt: skip

        return _errors(self._module, self.name, create).id

    def ended(self, batch_id: str) -> bool:
        batch = _errors(self._module, self.name, lambda: self._client.batches.retrieve(batch_id),
                        batch_id)  # fmt: skip
        return batch.status in ("completed", "failed", "expired", "cancelled")

    def results(self, batch_id: str, custom_ids: set[str]) -> dict[str, Outcome]:
        from openai.types.chat import ChatCompletion

        batch = _errors(self._module, self.name, lambda: self._client.batches.retrieve(batch_id),
                        batch_id)  # fmt: skip
        out: dict[str, Outcome] = {}
        if batch.status == "failed":
            # refused as a whole at validation: often transient (the enqueued-token limit), so
            # every request goes into a later batch (at most --retries times)
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            message = "; ".join(getattr(e, "message", "") for e in errors) or "batch failed"
            return {cid: Outcome("retry", message=f"batch failed: {message}")
                    for cid in custom_ids}  # fmt: skip
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            text = _errors(self._module, self.name,
                           lambda f=file_id: self._client.files.content(f).text)  # fmt: skip
            for line in text.splitlines():
                if not line.strip():
                    continue
                row = json.loads(line)
                response = row.get("response") or {}
                status = response.get("status_code")
                if status == 200:
                    try:
                        out[row["custom_id"]] = Outcome("ok", ChatCompletion.model_validate(
                            response.get("body")))  # fmt: skip
                    except ValueError as exc:
                        out[row["custom_id"]] = Outcome("fail", message=f"a reply that is not a "
                                                        f"chat completion ({str(exc)[:200]})")  # fmt: skip
                    continue
                body_error = (response.get("body") or {}).get("error") or row.get("error") or {}
                message = f"HTTP {status}: {body_error.get('message', '')}"
                retry = status is None or status == 429 or status >= 500
                out[row["custom_id"]] = Outcome("retry" if retry else "fail", message=message)
        return out  # requests in neither file (expired, cancelled) are retried by the caller

    def chat_reply(self, value) -> Reply:
        return chat_reply(value, self.name)

    def verdict_reply(self, value, candidates) -> Reply:
        return verdict_reply(value, candidates, self.name)


def _split(model: str) -> tuple[str, str | None]:
    name, _, url = model.partition("@")
    return name, url or None


def _journal(options: ModelOptions) -> Path:
    from ..paths import cache_dir

    return Path(options.state_dir or cache_dir() / "llm") / "batches.sqlite"


def _anthropic(model: str, options: ModelOptions) -> AnthropicModel:
    name, url = _split(model)
    return AnthropicModel(name, url, concurrency=options.concurrency, retries=options.retries,
                          timeout=options.timeout)  # fmt: skip


def _batched(provider_class):
    def load(model: str, options: ModelOptions) -> BatchModel:
        name, url = _split(model)
        provider = provider_class(name, url, options.retries, options.timeout)
        return BatchModel(provider, _journal(options), poll_seconds=options.poll_seconds,
                          gather_seconds=options.gather_seconds, retries=options.retries)  # fmt: skip

    return load


for _backend in (
    Backend("anthropic", _anthropic, ("anthropic:MODEL", "anthropic:MODEL@URL"),
            "Anthropic's Messages API (no log-probabilities: judge with --judge-samples)",
            logprobs=False),
    Backend("anthropic_batch", _batched(AnthropicBatches),
            ("anthropic_batch:MODEL", "anthropic_batch:MODEL@URL"),
            "Anthropic's Message Batches API, half price (no log-probabilities)",
            logprobs=False, discount=BATCH_DISCOUNT),
    Backend("openai_batch", _batched(OpenAIBatches),
            ("openai_batch:MODEL", "openai_batch:MODEL@URL"),
            "OpenAI's Batch API (or a server that speaks it), half price",
            discount=BATCH_DISCOUNT),
):  # fmt: skip
    register_backend(_backend)
