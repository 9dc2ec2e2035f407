"""The demo's HTTP API and page (FastAPI, served by uvicorn).

Every game request is stateless: the page sends the image, the settings and the moves so far;
the server checks them, lets an AI move when asked, and returns the position and, at the end,
the judge's verdict. Randomness comes from the seed in the request, so a replayed request gives
the same move.

Errors are JSON ``{"error": "..."}``: 422 for malformed input (wrong canvas size, non-numeric
pixels, unknown protocol names), 400 for illegal moves or an empty canvas, 404 for a model not in the cache (with
the command that makes it), 413 for oversized bodies.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections import OrderedDict
from concurrent.futures import Future
from contextlib import contextmanager
from importlib import resources
from typing import Annotated, Literal

import numpy as np
import torch
from fastapi import FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field, StrictFloat, StrictInt, field_validator
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..data.digits import center_digit
from ..games.agents import MCTSAgent, MCTSConfig, greedy_agent, random_agent
from ..games.cellplay import PROTOCOLS, CellDebate, CellGameRules
from ..games.pixels import PixelGames, PixelRules
from ..games.solver import RULES
from ..games.tables import game_tables
from ..judges.allmask import all_mask_probs
from ..judges.evaluate import predict_proba
from ..judges.pixel import N_PIXELS, PixelJudge
from ..policies import as_policy
from .models import CLASSES, PIXEL_RANGE, DemoModels, missing_command

#: Largest request body accepted, in bytes (a 28x28 canvas as JSON is about 10 KB).
MAX_BODY = 64 * 1024
#: Oversized bodies up to this size are read (and dropped) before the 413, so that clients
#: see the answer instead of a reset connection.
DRAIN_LIMIT = 16 * 2**20
#: Heavy computations run at once; more only compete for the same cores.
HEAVY_SLOTS = 4
#: Seconds a request waits for a slot before a 503.
BUSY_WAIT = 120
#: Most MCTS simulations per move a request may ask for (the paper's budget).
MAX_ROLLOUTS = 10_000
STATIC = resources.files("debatelab.web") / "static"

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
    agent: Literal["mcts", "greedy", "random"] = "mcts"
    rollouts: Annotated[StrictInt, Field(ge=1, le=MAX_ROLLOUTS)] = 200
    seed: Seed = 0
    play: bool = False
    """Let the AI make the next move."""


class CellRequest(ImageRequest):
    label: Annotated[StrictInt, Field(ge=0, le=9)]
    """The true class (a human's word for a drawing)."""
    protocol: Literal["consultancy", "debate2", "debate4"] = "debate4"
    rule: Literal["asym", "sym", "last_b"] = "asym"
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


@contextmanager
def _illegal():
    """Precondition failures of the game library (an illegal move, an empty canvas) as 400."""
    try:
        yield
    except ValueError as exc:
        raise HTTPException(400, str(exc)) from exc


def _image_key(image: np.ndarray) -> bytes:
    return hashlib.sha1(np.ascontiguousarray(image, dtype=np.float32).tobytes()).digest()


def _softmax(logits: torch.Tensor) -> list[float]:
    return torch.softmax(logits.double(), dim=-1).tolist()


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
    probs_cache = _LRU(64)  # all-mask probabilities per image (1 MB each)
    games_cache = _LRU(8)  # solved cell games per image and settings (up to 53 MB under sym)
    slots = threading.BoundedSemaphore(HEAVY_SLOTS)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        return JSONResponse({"error": _validation_message(exc)}, status_code=422)

    @app.exception_handler(StarletteHTTPException)  # also the router's own 404 and 405
    async def _http(request: Request, exc: StarletteHTTPException):
        return JSONResponse({"error": str(exc.detail)}, status_code=exc.status_code)

    def need(name: str, model):
        if model is None:
            raise HTTPException(
                404, f"the {name} judge is not in the cache; make it with "
                f"`{missing_command(models, name)}` and restart `debatelab serve`",
            )  # fmt: skip
        return model

    def pixel_judge(k: int):
        return need(f"pixel{k}", models.pixel.get(k))

    def sparse_probs(image: np.ndarray) -> np.ndarray:
        sparse = need("sparse", models.sparse)

        def make():
            x = models.prepare(image[None])
            with _slot(slots):
                return all_mask_probs(sparse, x, models.grid, models.reveal)[0]

        return probs_cache.get(_image_key(image), make)

    @app.get("/", include_in_schema=False)
    async def index():
        return FileResponse(str(STATIC / "index.html"))

    @app.get("/api/info")
    async def info():
        """Which models are loaded, which are missing (with the command that makes each)."""
        return {
            "models": {"gold": models.gold is not None, "sparse": models.sparse is not None,
                       "pixel": sorted(models.pixel)},
            "missing": models.missing, "classes": CLASSES,
            "test_images": int(len(models.test_images)), "protocols": PROTOCOLS,
            "rules": list(RULES), "pixel_range": list(PIXEL_RANGE), "max_rollouts": MAX_ROLLOUTS,
            "grid": models.grid, "reveal": models.reveal, "image_size": models.image_size,
        }  # fmt: skip

    @app.get("/api/sample")
    async def sample(index: Annotated[int, Query(ge=0)]):
        """MNIST test image ``index``: values in [0, 1] and its label."""
        if index >= len(models.test_images):
            raise HTTPException(
                422, f"index must be below {len(models.test_images)} (the test set's size)"
            )
        image = models.test_images[index].astype(np.float32) / 255.0
        return {"index": index, "label": int(models.test_labels[index]),
                "image": image.ravel().round(4).tolist()}  # fmt: skip

    @app.post("/api/classify")
    def classify(req: ClassifyRequest):
        """Gold classifier on the full image; sparse judge averaged over all 4-cell views."""
        image = np.asarray(req.image, dtype=np.float32).reshape(28, 28)
        if req.center:
            with _illegal():
                image = center_digit(image)
        out = {"image": image.ravel().round(4).tolist(), "gold": None, "sparse": None}
        if models.gold is not None:
            x = models.prepare(image[None])
            out["gold"] = predict_proba(models.gold, x)[0].double().tolist()
        if models.sparse is not None:
            probs = sparse_probs(image)
            out["sparse"] = probs.astype(np.float64).mean(axis=0).tolist()
        out["missing"] = {k: v for k, v in models.missing.items() if k in ("gold", "sparse")}
        return out

    @app.post("/api/pixels")
    def pixels(req: PixelRequest):
        """The 2018 pixel game: check the moves, let the AI move if asked, judge at the end."""
        if req.honest == req.liar:
            raise HTTPException(422, "liar: the liar's claim must differ from the honest one")
        judge = PixelJudge(pixel_judge(req.pixels))
        rules = PixelRules(pixels=req.pixels, first=req.first)
        values = np.asarray(req.image, dtype=np.float32)[None]
        with _illegal():
            games = PixelGames.new(values, [req.honest], [req.liar], rules)
            cand = games.candidates[0].tolist()
            slot_of = {p: s for s, p in enumerate(cand) if p < N_PIXELS}
            for t, p in enumerate(req.moves):
                if p not in slot_of:
                    raise ValueError(
                        f"move {t + 1}: pixel {p} is not a nonzero pixel of the image; reveal "
                        "one where there is ink"
                    )
                games = games.play(torch.tensor([slot_of[p]]))
        ai_move = None
        if req.play and not games.done:
            agent = {"mcts": lambda: MCTSAgent(MCTSConfig(rollouts=req.rollouts)),
                     "greedy": greedy_agent, "random": random_agent}[req.agent]()  # fmt: skip
            gen = torch.Generator().manual_seed(req.seed * 1000 + games.turn)
            with _slot(slots):
                slot = agent.moves(games, judge, gen)
            games = games.play(slot)
            ai_move = int(cand[int(slot[0])])
        moves = [int(p) for p in games.revealed_pixels()[0]]
        out = {"moves": moves, "movers": [rules.mover(t) for t in range(len(moves))],
               "next": None if games.done else games.mover(), "done": games.done,
               "ai_move": ai_move, "verdict": None}  # fmt: skip
        if games.done:
            margin, logits = games.judge_margin(judge)
            out["verdict"] = {
                "logits": logits[0].tolist(), "probs": _softmax(logits[0]),
                "honest_wins": bool(margin[0] > 0), "margin": float(margin[0]),
                "judge_class": int(logits[0].argmax()),
            }  # fmt: skip
        return out

    @app.post("/api/cells")
    def cells(req: CellRequest):
        """The cell-grid game: consultancy or debate under a rule, players of any capability."""
        image = np.asarray(req.image, dtype=np.float32).reshape(28, 28)
        rules = CellGameRules(req.protocol, req.rule, req.k_a, req.k_b, models.grid**2)
        probs = sparse_probs(image)

        def solve():
            with _slot(slots):
                return CellDebate(probs, rules, req.claim)

        game = games_cache.get((_image_key(image), rules, req.claim), solve)
        turns = [list(t) for t in req.turns]
        with _illegal():
            game.position(turns)  # illegal turns fail before any AI move
        ai_move = None
        moves = rules.moves
        if req.play and len(turns) < len(moves):
            rng = np.random.default_rng([req.seed, len(turns)])
            ai_move = [int(c) for c in game.ai_move(turns, rng)]
            turns.append(ai_move)
        done = len(turns) == len(moves)
        return {
            "claim": game.claim, "b_class": game.b_class, "value": game.value,
            "turns": turns, "moves": list(moves),
            "next": None if done else ("A" if len(turns) % 2 == 0 else "B"),
            "done": done, "ai_move": ai_move,
            "verdict": game.verdict(turns) if done else None,
            "view": models.small_view(image).ravel().round(4).tolist(),
            "grid": models.grid,
        }  # fmt: skip

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


def warm_up(models: DemoModels) -> None:
    """Build the geometry tables (all-mask evaluation, game trees) once, before requests come:
    concurrent first requests would otherwise each build them."""
    for moves in PROTOCOLS.values():
        game_tables(models.grid**2, moves)
    if models.sparse is not None:
        blank = torch.zeros(1, 1, models.image_size, models.image_size)
        all_mask_probs(models.sparse, blank, models.grid, models.reveal)


def serve_app(models: DemoModels):
    """The ASGI app with the body-size limit in front, its tables built."""
    warm_up(models)
    return BodyLimit(create_app(models))
