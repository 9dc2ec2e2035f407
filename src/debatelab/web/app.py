"""The demo's HTTP API and page (FastAPI, served by uvicorn).

This module does only HTTP: routes, request bodies, status codes, error JSON, body limits and
concurrency (a few heavy computations at a time, one computation per image however many requests
ask for it). The game logic is in :mod:`.positions`, plain functions that a static-site build can
call as well.

Every game request is stateless: the page sends the image, the settings and the moves so far;
the server checks them, lets an AI move when asked, and returns the position and, at the end,
the judge's verdict. Randomness comes from the seed in the request, so a replayed request gives
the same move.

Errors are JSON ``{"error": "..."}``: 422 for malformed input (wrong canvas size, non-numeric
pixels, unknown protocol names), 400 for illegal moves or an empty canvas, 404 for a model not in the cache (with
the command that makes it), 413 for oversized bodies.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import contextmanager
from importlib import resources
from typing import Annotated, Literal, TypeVar

from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, StrictFloat, StrictInt, create_model, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..judges.pixel import N_PIXELS
from ..policies import as_policy
from ..protocols import rule_names
from . import positions
from .models import PIXEL_RANGE, DemoModels
from .positions import MAX_ROLLOUTS, CellPosition, MissingModelError, PixelPosition, warm_up

#: Largest request body accepted, in bytes (a 28x28 canvas as JSON is about 10 KB).
MAX_BODY = 64 * 1024
#: Oversized bodies up to this size are read (and dropped) before the 413, so that clients
#: see the answer instead of a reset connection.
DRAIN_LIMIT = 16 * 2**20
#: Heavy computations run at once; more only compete for the same cores.
HEAVY_SLOTS = 4
#: Seconds a request waits for a slot before a 503.
BUSY_WAIT = 120
STATIC = resources.files("debatelab.web") / "static"
T = TypeVar("T")

Pixel = StrictFloat  # ints pass, strings do not
Capability = Annotated[StrictInt, Field(ge=1, le=10**6)] | Annotated[str, Field(max_length=12)]
Seed = Annotated[StrictInt, Field(ge=0, lt=2**32)]


class ImageRequest(BaseModel):
    image: list[Pixel]
    """The 28x28 canvas, row-major, values in [0, 1] (ink = 1)."""

    @field_validator("image")
    @classmethod
    def _image(cls, v):
        if len(v) != N_PIXELS:
            raise ValueError(
                f"must hold {N_PIXELS} numbers (a 28x28 canvas, row by row), got {len(v)}"
            )
        if not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in v):
            raise ValueError("pixel values must be finite numbers in [0, 1]")
        return v


class ClassifyRequest(ImageRequest):
    center: bool = True
    """Fit the ink into MNIST's 20x20 box and centre it (for drawings)."""


class PixelRequest(ImageRequest):
    honest: Annotated[StrictInt, Field(ge=0, le=9)]
    liar: Annotated[StrictInt, Field(ge=0, le=9)]
    pixels: Annotated[StrictInt, Field(ge=PIXEL_RANGE[0], le=PIXEL_RANGE[1])] = 6
    first: Literal["honest", "liar"] = "liar"
    moves: list[StrictInt] = Field(default_factory=list, max_length=PIXEL_RANGE[1])
    """Pixels revealed so far (row * 28 + col), in order."""
    agent: Literal["mcts", "greedy", "random", "learned"] = "mcts"
    rollouts: Annotated[StrictInt, Field(ge=1, le=MAX_ROLLOUTS)] = 200
    seed: Seed = 0
    play: bool = False
    """Let the AI make the next move."""


class _CellRequest(ImageRequest):
    label: Annotated[StrictInt, Field(ge=0, le=9)]
    """The true class (a human's word for a drawing)."""
    protocol: str = "debate4"
    """A registered cells protocol (the request model's Literal, from the registry)."""
    rule: str = "asym"
    k_a: Capability = 1
    k_b: Capability = 1
    claim: Annotated[StrictInt, Field(ge=0, le=9)] | None = None
    """A's claim when a human plays A; ``None``: A's exact best claim."""
    turns: list[list[StrictInt]] = Field(default_factory=list, max_length=4)
    seed: Seed = 0
    play: bool = False

    @field_validator("k_a", "k_b")
    @classmethod
    def _capability(cls, v):
        if isinstance(v, str):
            as_policy(v).rank_weights(2)  # ValueError with the accepted forms
        return v


def cell_request(reveal: int = 4) -> type[BaseModel]:
    """The body of ``/api/cells``: ``protocol`` a ``Literal`` of the registered cells protocols
    the judge can score (``reveal`` cells), ``rule`` one of the registered rules, ``turns`` at
    most the longest protocol's turns. Built when the app is made, so a protocol registered
    before (a plug-in's, a test's) is in the schema."""
    rows = positions.cell_protocols(reveal)
    names = tuple(p["name"] for p in rows)
    default = "debate4" if "debate4" in names else names[0]
    most = max(len(p["moves"]) for p in rows)
    return create_model(
        "CellRequest", __base__=_CellRequest,
        protocol=(Literal[names], default),  # type: ignore[valid-type]
        rule=(Literal[tuple(rule_names())], "asym"),  # type: ignore[valid-type]
        turns=(list[list[StrictInt]], Field(default_factory=list, max_length=most)),
    )  # fmt: skip


class _LRU:
    """A small thread-safe cache of per-image computations; concurrent requests for the same
    key wait for one computation instead of each doing it."""

    def __init__(self, size: int):
        self.size, self.data, self.lock = size, OrderedDict(), threading.Lock()
        self.pending: dict = {}
        self.computed = 0
        """Calls of ``make`` so far."""

    def get(self, key, make):
        with self.lock:
            if key in self.data:
                self.data.move_to_end(key)
                return self.data[key]
            future = self.pending.get(key)
            owner = future is None
            if owner:
                future = self.pending[key] = Future()
        if not owner:
            return future.result()
        try:
            value = make()
        except BaseException as exc:
            with self.lock:
                del self.pending[key]
            future.set_exception(exc)
            raise
        with self.lock:
            self.data[key] = value
            while len(self.data) > self.size:
                self.data.popitem(last=False)
            del self.pending[key]
            self.computed += 1
        future.set_result(value)
        return value


@contextmanager
def _slot(slots: threading.BoundedSemaphore):
    """Run heavy work (all-mask passes, game solves, tree search) a few at a time."""
    if not slots.acquire(timeout=BUSY_WAIT):
        raise HTTPException(503, "the server is busy with other games; try again in a moment")
    try:
        yield
    finally:
        slots.release()


class ServerCompute(positions.Compute):
    """The server's way of running heavy steps: per-image results in small single-flight caches,
    at most ``HEAVY_SLOTS`` steps at a time (a 503 after ``BUSY_WAIT`` seconds of waiting)."""

    def __init__(self):
        self.caches = {
            "probs": _LRU(64),  # all-mask probabilities per image (1 MB each)
            "cell_game": _LRU(8),  # solved cell games per image and settings (up to 53 MB, sym)
        }
        self.slots = threading.BoundedSemaphore(HEAVY_SLOTS)

    def cached(self, kind: str, key: tuple, make: Callable[[], T]) -> T:
        return self.caches[kind].get(key, make)

    def heavy(self):
        return _slot(self.slots)


@contextmanager
def _position_errors(invalid: int = 400):
    """Errors of the game logic as HTTP: a missing judge as 404 (with the command that makes
    it), a ValueError (an illegal move, an empty canvas) as ``invalid``."""
    try:
        yield
    except MissingModelError as exc:
        raise HTTPException(404, str(exc)) from exc
    except ValueError as exc:
        raise HTTPException(invalid, str(exc)) from exc


class BodyLimit:
    """ASGI middleware: 413 for request bodies over ``max_bytes`` (declared or streamed)."""

    def __init__(self, app, max_bytes: int = MAX_BODY):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and not declared.isdigit():
            return await self._reject(send, 400, "Content-Length must be a number of bytes")
        if declared is not None and int(declared) > DRAIN_LIMIT:
            return await self._reject(send)  # far too large: answer at once and drop the rest
        body, size, more = [], 0, True
        while more:  # read it all (up to DRAIN_LIMIT), so the client is done sending and reads
            message = await receive()  # the answer
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size <= self.max_bytes:
                body.append(chunk)
            elif size > DRAIN_LIMIT:
                break
            more = message.get("more_body", False)
        if size > self.max_bytes:
            return await self._reject(send)
        body = b"".join(body)
        sent = False

        async def replay():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _reject(self, send, status: int = 413, message: str | None = None):
        message = message or f"request body too large: at most {self.max_bytes} bytes"
        await JSONResponse({"error": message}, status_code=status)({"type": "http"}, None, send)


def _validation_message(exc: RequestValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err.get("loc", ()) if x != "body") or "body"
        msg = err.get("msg", "invalid")
        if err.get("type") == "json_invalid":
            loc, msg = "body", "is not valid JSON"
        if f"{loc}: {msg}" not in parts:
            parts.append(f"{loc}: {msg}")
        if len(parts) == 3:
            break
    return "; ".join(parts)


def create_app(models: DemoModels) -> FastAPI:
    """The demo application over ``models``."""
    app = FastAPI(title="debatelab demo", docs_url="/api/docs", openapi_url="/api/openapi.json")
    compute = ServerCompute()
    cell_body = cell_request(models.reveal)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)  # also the router's own 404 and 405
    async def _http(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    @app.get("/", include_in_schema=False)
    async def index():
        return FileResponse(str(STATIC / "index.html"))

    @app.get("/api/info")
    async def info():
        """Which models are loaded, which are missing (with the command that makes each)."""
        return positions.info(models)

    @app.get("/api/sample")
    async def sample(index: Annotated[int, Query(ge=0)]):
        """MNIST test image ``index``: values in [0, 1] and its label."""
        with _position_errors(422):
            return positions.sample(models, index)

    @app.post("/api/classify")
    def classify(req: ClassifyRequest):
        """Gold classifier on the full image; sparse judge averaged over all 4-cell views."""
        with _position_errors():
            return positions.classify(models, req.image, req.center, compute)

    @app.post("/api/pixels")
    def pixels(req: PixelRequest):
        """The 2018 pixel game: check the moves, let the AI move if asked, judge at the end."""
        with _position_errors(422):  # what the body's schema cannot say (liar != honest)
            pos = PixelPosition(**req.model_dump())
        with _position_errors():
            return positions.pixel_position(models, pos, compute)

    def cells(req):
        """The cell-grid game: any registered cells protocol under a rule, players of any
        capability."""
        with _position_errors(422):
            pos = CellPosition(**req.model_dump())
        with _position_errors():
            return positions.cell_position(models, pos, compute)

    cells.__annotations__ = {"req": cell_body}  # the registry's protocols, as of now
    app.post("/api/cells")(cells)

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


def serve_app(models: DemoModels):
    """The ASGI app with the body-size limit in front, its tables built."""
    warm_up(models)
    return BodyLimit(create_app(models))
