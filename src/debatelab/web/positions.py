"""The demo's game logic as plain functions, apart from HTTP.

Each function takes the demo's models and a position (the canvas, the settings and the moves so
far, as the page sends them) and returns the JSON-able answer the API sends back: the classifier
outputs, the pixel game's next position, the cell game's next position and, at the end, the
judge's verdict. Nothing here knows about FastAPI; :mod:`.app` wraps these functions in routes,
request bodies, status codes, body limits and concurrency control, and a static-site build can
call them directly to precompute answers.

Every answer is a function of its inputs: randomness comes from the seed in the position, so
the same position always gives the same AI move.

Errors: :class:`ValueError` for an illegal position (an illegal move, an empty canvas, too few
nonzero pixels; the API's 400) and for malformed inputs when a position is built (the API checks
those first, as 422); :class:`MissingModelError` for a judge that is not in the cache (the API's
404, with the command that makes it).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

from ..data.digits import center_digit
from ..errors import DebatelabError
from ..games.agents import MCTSAgent, MCTSConfig, greedy_agent, random_agent
from ..games.cellplay import CellDebate, CellGameRules
from ..games.learned import LearnedAgent
from ..games.pixels import PixelGames, PixelRules
from ..games.tables import game_tables
from ..geometry import N_PIXELS, SIDE
from ..judges.allmask import all_mask_probs
from ..judges.evaluate import predict_proba
from ..judges.pixel import PixelJudge
from ..policies import as_policy
from ..protocols import describe, protocol, protocol_names, rule_names
from .models import CLASSES, PIXEL_RANGE, DemoModels, missing_command

#: Most MCTS simulations per move a position may ask for (the paper's budget).
MAX_ROLLOUTS = 10_000
#: The pixel game's AI players.
AGENTS = ("mcts", "greedy", "random", "learned")

T = TypeVar("T")


def _model_name(name: str) -> str:
    if name.startswith("debaters"):
        return f"learned debaters of the {name[8:]}-pixel game"
    return f"{name} judge"


class MissingModelError(DebatelabError, LookupError):
    """A judge (or the learned debaters) the position needs is not in the cache; the message
    names the command that makes it."""

    def __init__(self, name: str, command: str):
        super().__init__(
            f"the {_model_name(name)} is not in the cache; make it with `{command}` and restart "
            "`debatelab serve`"
        )
        self.name, self.command = name, command


class Compute:
    """How the heavy steps of a position run: the all-mask pass of an image, the solve of a
    cell game, a move search. This default runs each at once and keeps nothing. The server's
    subclass caches results per image and runs a few steps at a time; a static-site build could
    keep them in a dict. Results never depend on which is used."""

    def cached(self, kind: str, key: tuple, make: Callable[[], T]) -> T:
        """``make()``, or the value kept for ``(kind, key)``. Kinds: ``"probs"`` (key: the
        image's digest), ``"cell_game"`` (key: digest, rules, claim)."""
        return make()

    def heavy(self) -> AbstractContextManager:
        """A context around one heavy step (the server waits for a work slot here)."""
        return nullcontext()


#: Runs everything at once, caches nothing.
DIRECT = Compute()


def _canvas(image: Sequence[float] | np.ndarray) -> tuple[float, ...]:
    """``image`` as a tuple of ``SIDE * SIDE`` finite floats in [0, 1]; ValueError otherwise."""
    values = np.asarray(image, dtype=np.float64).ravel()
    if values.size != SIDE * SIDE:
        raise ValueError(
            f"image: must hold {SIDE * SIDE} numbers (a {SIDE}x{SIDE} canvas, row by row), "
            f"got {values.size}"
        )
    if not all(math.isfinite(x) and 0.0 <= x <= 1.0 for x in values.tolist()):
        raise ValueError("image: pixel values must be finite numbers in [0, 1]")
    return tuple(values.tolist())


def _class(name: str, value: int | None, optional: bool = False) -> None:
    if optional and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < len(CLASSES):
        raise ValueError(f"{name}: must be a class in 0..{len(CLASSES) - 1}, got {value!r}")


def _seed(seed: int) -> None:
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**32:
        raise ValueError(f"seed: must be an integer in [0, 2**32), got {seed!r}")


@dataclass(frozen=True)
class PixelPosition:
    """A position of the 2018 sparse-pixel game, as the page sends it. Field names and defaults
    are those of the API's request body."""

    image: tuple[float, ...]
    """The 28x28 canvas, row-major, values in [0, 1] (ink = 1)."""
    honest: int
    """The honest player's claim."""
    liar: int
    """The liar's claim (differs from ``honest``)."""
    pixels: int = 6
    """Pixels revealed in all (the judge of this K must be cached)."""
    first: str = "liar"
    """Who reveals the first pixel: ``honest`` or ``liar``."""
    moves: tuple[int, ...] = ()
    """Pixels revealed so far (row * 28 + col), in order."""
    agent: str = "mcts"
    """The AI player: ``mcts``, ``greedy``, ``random`` or ``learned`` (the cached learned
    debaters of ``pixels``)."""
    rollouts: int = 200
    """MCTS simulations per move."""
    seed: int = 0
    """Seed of the AI's move (with the turn)."""
    play: bool = False
    """Let the AI make the next move."""

    def __post_init__(self):
        object.__setattr__(self, "image", _canvas(self.image))
        object.__setattr__(self, "moves", tuple(int(p) for p in self.moves))
        _class("honest", self.honest)
        _class("liar", self.liar)
        if self.honest == self.liar:
            raise ValueError("liar: the liar's claim must differ from the honest one")
        if not PIXEL_RANGE[0] <= self.pixels <= PIXEL_RANGE[1]:
            raise ValueError(f"pixels: must be in {PIXEL_RANGE[0]}..{PIXEL_RANGE[1]}")
        if self.first not in ("honest", "liar"):
            raise ValueError(f"first: must be 'honest' or 'liar', got {self.first!r}")
        if self.agent not in AGENTS:
            raise ValueError(f"agent: must be one of {', '.join(AGENTS)}, got {self.agent!r}")
        if not 1 <= self.rollouts <= MAX_ROLLOUTS:
            raise ValueError(f"rollouts: must be in 1..{MAX_ROLLOUTS}")
        _seed(self.seed)


@dataclass(frozen=True)
class CellPosition:
    """A position of the cell-grid game, as the page sends it. Field names and defaults are
    those of the API's request body."""

    image: tuple[float, ...]
    """The 28x28 canvas, row-major, values in [0, 1] (ink = 1)."""
    label: int
    """The true class (a human's word for a drawing)."""
    protocol: str = "debate4"
    """A registered cells protocol (``consultancy``, ``debate2``, ``debate4``, ``debate3``,
    ``consult_rebut``, ...) that reveals as many cells as the sparse judge sees."""
    rule: str = "asym"
    """``asym``, ``sym`` or ``last_b``."""
    k_a: int | str = 1
    """A's capability (a rank policy: 1 = exact, 3 = top-3, ``uniform``, ``bo8``, ...)."""
    k_b: int | str = 1
    """B's capability."""
    claim: int | None = None
    """A's claim when a human plays A; ``None``: A's exact best claim."""
    turns: tuple[tuple[int, ...], ...] = ()
    """The cells each turn revealed so far, each turn's player as the protocol says."""
    seed: int = 0
    """Seed of the AI's move (with the turn)."""
    play: bool = False
    """Let the AI make the next move."""

    def __post_init__(self):
        object.__setattr__(self, "image", _canvas(self.image))
        object.__setattr__(self, "turns", tuple(tuple(int(c) for c in t) for t in self.turns))
        _class("label", self.label)
        _class("claim", self.claim, optional=True)
        if self.protocol not in protocol_names("cells"):
            raise ValueError(f"protocol: must be one of {', '.join(protocol_names('cells'))}")
        if self.rule not in rule_names():
            raise ValueError(f"rule: must be one of {', '.join(rule_names())}")
        for name in ("k_a", "k_b"):
            try:
                as_policy(getattr(self, name)).rank_weights(2)
            except ValueError as exc:
                raise ValueError(f"{name}: {exc}") from exc
        _seed(self.seed)

    def rules(self, n_cells: int) -> CellGameRules:
        """The game's rules on a grid of ``n_cells`` cells."""
        return CellGameRules(self.protocol, self.rule, self.k_a, self.k_b, n_cells)


def image_key(image: np.ndarray) -> bytes:
    """A digest of an image's float32 values (the key of per-image caches)."""
    return hashlib.sha1(np.ascontiguousarray(image, dtype=np.float32).tobytes()).digest()


def _softmax(logits: torch.Tensor) -> list[float]:
    return torch.softmax(logits.double(), dim=-1).tolist()


def _need(models: DemoModels, name: str, model: T | None) -> T:
    if model is None:
        raise MissingModelError(name, missing_command(models, name))
    return model


def mask_probs(models: DemoModels, image: np.ndarray, compute: Compute = DIRECT) -> np.ndarray:
    """The sparse judge's probabilities on every mask of ``image`` ``(28, 28)``:
    ``(C(n_cells, reveal), 10)``. MissingModelError without a sparse judge."""
    sparse = _need(models, "sparse", models.sparse)

    def make():
        x = models.prepare(image[None])
        with compute.heavy():
            return all_mask_probs(sparse, x, models.grid, models.reveal)[0]

    return compute.cached("probs", (image_key(image),), make)


def cell_protocols(reveal: int) -> list[dict[str, Any]]:
    """The registered cells protocols the demo's judge can score (``reveal`` cells in all), as
    rows of :func:`debatelab.protocols.describe` (name, turns, players, cells per turn and per
    player, summary, source)."""
    rows = [describe(protocol(n)) for n in protocol_names("cells")]
    return [r for r in rows if r["total"] == reveal]


def info(models: DemoModels) -> dict[str, Any]:
    """Which models are loaded, which are missing (with the command that makes each), and the
    settings the page offers."""
    return {
        "models": {"gold": models.gold is not None, "sparse": models.sparse is not None,
                   "pixel": sorted(models.pixel), "debaters": sorted(models.debaters)},
        "missing": models.missing, "classes": CLASSES,
        "test_images": int(len(models.test_images)),
        "protocols": {p["name"]: p["moves"] for p in cell_protocols(models.reveal)},
        "protocol_list": cell_protocols(models.reveal), "rules": list(rule_names()), "pixel_range": list(PIXEL_RANGE), "max_rollouts": MAX_ROLLOUTS,
        "grid": models.grid, "reveal": models.reveal, "image_size": models.image_size,
    }  # fmt: skip


def sample(models: DemoModels, index: int) -> dict[str, Any]:
    """Test image ``index``: values in [0, 1] and its label. ValueError if out of range."""
    if not 0 <= index < len(models.test_images):
        raise ValueError(f"index must be below {len(models.test_images)} (the test set's size)")
    image = models.test_images[index].astype(np.float32) / 255.0
    return {"index": index, "label": int(models.test_labels[index]),
            "image": image.ravel().round(4).tolist()}  # fmt: skip


def classify(
    models: DemoModels,
    image: Sequence[float] | np.ndarray,
    center: bool = True,
    compute: Compute = DIRECT,
) -> dict[str, Any]:
    """The gold classifier on the full image and the sparse judge averaged over all views of
    ``reveal`` cells (``None`` where a model is missing). ``center`` fits the ink into MNIST's
    20x20 box first (for drawings); ValueError for an empty canvas."""
    image = np.asarray(_canvas(image), dtype=np.float32).reshape(SIDE, SIDE)
    if center:
        image = center_digit(image)
    out = {"image": image.ravel().round(4).tolist(), "gold": None, "sparse": None}
    if models.gold is not None:
        x = models.prepare(image[None])
        out["gold"] = predict_proba(models.gold, x)[0].double().tolist()
    if models.sparse is not None:
        probs = mask_probs(models, image, compute)
        out["sparse"] = probs.astype(np.float64).mean(axis=0).tolist()
    out["missing"] = {k: v for k, v in models.missing.items() if k in ("gold", "sparse")}
    return out


def pixel_position(
    models: DemoModels, pos: PixelPosition, compute: Compute = DIRECT
) -> dict[str, Any]:
    """The 2018 pixel game after ``pos.moves`` (and the AI's move when ``pos.play``), with the
    judge's verdict once all pixels are revealed. ValueError for an illegal move;
    MissingModelError without the pixel judge of ``pos.pixels``."""
    judge = PixelJudge(_need(models, f"pixel{pos.pixels}", models.pixel.get(pos.pixels)))
    rules = PixelRules(pixels=pos.pixels, first=pos.first)
    values = np.asarray(pos.image, dtype=np.float32)[None]
    games = PixelGames.new(values, [pos.honest], [pos.liar], rules)
    cand = games.candidates[0].tolist()
    slot_of = {p: s for s, p in enumerate(cand) if p < N_PIXELS}
    for t, p in enumerate(pos.moves):
        if p not in slot_of:
            raise ValueError(
                f"move {t + 1}: pixel {p} is not a nonzero pixel of the image; reveal one where "
                "there is ink"
            )
        games = games.play(torch.tensor([slot_of[p]]))
    ai_move = None
    if pos.play and not games.done:
        agent = {"mcts": lambda: MCTSAgent(MCTSConfig(rollouts=pos.rollouts)),
                 "greedy": greedy_agent, "random": random_agent,
                 "learned": lambda: LearnedAgent(_need(models, f"debaters{pos.pixels}",
                                                       models.debaters.get(pos.pixels)))
                 }[pos.agent]()  # fmt: skip
        gen = torch.Generator().manual_seed(pos.seed * 1000 + games.turn)
        with compute.heavy():
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


def cell_game(
    models: DemoModels, image: np.ndarray, pos: CellPosition, compute: Compute = DIRECT
) -> CellDebate:
    """The solved cell game of ``image`` ``(28, 28)`` under ``pos``'s rules, players and claim
    (every node's value; the moves do not matter). MissingModelError without a sparse judge."""
    rules = pos.rules(models.grid**2)
    if rules.game.total != models.reveal:
        raise ValueError(f"protocol: {rules.protocol} reveals {rules.game.total} cells; the "
                         f"demo's judge sees {models.reveal}")  # fmt: skip
    probs = mask_probs(models, image, compute)

    def solve():
        with compute.heavy():
            return CellDebate(probs, rules, pos.claim)

    return compute.cached("cell_game", (image_key(image), rules, pos.claim), solve)


def cell_position(
    models: DemoModels, pos: CellPosition, compute: Compute = DIRECT
) -> dict[str, Any]:
    """The cell-grid game after ``pos.turns`` (and the AI's move when ``pos.play``), with the
    judge's verdict after the last turn. ValueError for an illegal turn; MissingModelError
    without a sparse judge."""
    image = np.asarray(pos.image, dtype=np.float32).reshape(SIDE, SIDE)
    game = cell_game(models, image, pos, compute)
    turns = [list(t) for t in pos.turns]
    game.position(turns)  # illegal turns fail before any AI move
    ai_move = None
    moves, players = game.rules.moves, game.rules.players
    if pos.play and len(turns) < len(moves):
        rng = np.random.default_rng([pos.seed, len(turns)])
        ai_move = [int(c) for c in game.ai_move(turns, rng)]
        turns.append(ai_move)
    done = len(turns) == len(moves)
    return {
        "claim": game.claim, "b_class": game.b_class, "value": game.value,
        "turns": turns, "moves": list(moves), "players": list(players),
        "next": None if done else players[len(turns)],
        "done": done, "ai_move": ai_move,
        "verdict": game.verdict(turns) if done else None,
        "view": models.small_view(image).ravel().round(4).tolist(),
        "grid": models.grid,
    }  # fmt: skip


def warm_up(models: DemoModels) -> None:
    """Build the geometry tables (all-mask evaluation, game trees) once, before requests come:
    concurrent first requests would otherwise each build them."""
    for p in cell_protocols(models.reveal):
        game_tables(models.grid**2, tuple(p["moves"]))
    if models.sparse is not None:
        blank = torch.zeros(1, 1, models.image_size, models.image_size)
        all_mask_probs(models.sparse, blank, models.grid, models.reveal)
