"""The sparse-pixel debate game of Irving, Christiano & Amodei (2018), REFERENCE A.

Both players see a 28x28 image. The honest player claims the true label; the liar claims another
(before the reveal under precommit, after it without). They alternately reveal one **nonzero**
pixel per turn until ``pixels`` are revealed; a frozen judge sees only those pixels and the
honest player wins when its logit of the honest claim beats the liar's claim (without precommit:
beats every other label, since the liar then names the best label for it).

Games are played in batches, in lockstep: every game of a :class:`PixelGames` batch is at the
same turn. A move is a *slot*: an index into the game's candidate list (its nonzero pixels).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import torch

from ..geometry import N_PIXELS, SIDE, pixel_values
from ..interfaces import Judge

PLAYERS = ("honest", "liar")
N_CLASSES = 10


@dataclass(frozen=True)
class PixelRules:
    """Rules of one sparse-pixel debate."""

    pixels: int = 6
    """Pixels revealed in all, one per turn, the players alternating (the paper: 4 or 6)."""
    first: str = "liar"
    """Who reveals the first pixel: ``honest`` or ``liar``. Default liar, so the honest player
    has the last word; measured honest win rates near the published ones need this order."""
    precommit: bool = True
    """True: the liar commits to its label before the reveal. False: it names its label after
    the reveal, so the honest player must make the true label the judge's argmax."""

    def __post_init__(self):
        if self.first not in PLAYERS:
            raise ValueError(f"first must be one of {PLAYERS}, got {self.first!r}")
        if not 1 <= self.pixels <= N_PIXELS:
            raise ValueError(f"pixels must be in 1..{N_PIXELS}, got {self.pixels}")

    def mover(self, turn: int) -> str:
        """The player who reveals the pixel of ``turn`` (0-based)."""
        if not 0 <= turn < self.pixels:
            raise ValueError(f"turn {turn} is outside 0..{self.pixels - 1}")
        other = PLAYERS[1 - PLAYERS.index(self.first)]
        return self.first if turn % 2 == 0 else other


def honest_margin(logits: torch.Tensor, honest: torch.Tensor, liar: torch.Tensor) -> torch.Tensor:
    """The judge's logit of the honest claim minus the liar's; ``liar = -1`` (no precommit)
    means the best other label for the liar. Shapes ``(B, 10)``, ``(B,)``, ``(B,)`` to ``(B,)``."""
    own = logits.gather(1, honest[:, None])[:, 0]
    others = logits.scatter(1, honest[:, None], float("-inf"))
    best_other = others.max(1).values
    committed = others.gather(1, liar.clamp(min=0)[:, None])[:, 0]
    return own - torch.where(liar >= 0, committed, best_other)


def honest_wins(logits: torch.Tensor, honest: torch.Tensor, liar: torch.Tensor) -> torch.Tensor:
    """1.0 where the judge prefers the honest claim strictly, else 0.0 (a tie goes to the liar:
    the lie is not refuted)."""
    return (honest_margin(logits, honest, liar) > 0).to(torch.float32)


@dataclass(frozen=True)
class PixelGames:
    """A batch of pixel debates at the same turn.

    ``candidates[g]`` lists game g's nonzero pixels (row-major index), padded with ``784`` where
    ``valid`` is False; ``moves[:, t]`` is the slot revealed at turn t.
    """

    values: torch.Tensor
    """Pixel values in [0, 1], ``(G, 784)``."""
    candidates: torch.Tensor
    """Nonzero pixel indices per game, ``(G, C)`` long, padded with 784."""
    valid: torch.Tensor
    """Which candidate slots are real, ``(G, C)`` bool."""
    honest: torch.Tensor
    """The honest claim (the true label), ``(G,)`` long."""
    liar: torch.Tensor
    """The liar's precommitted claim, ``(G,)`` long; -1 everywhere without precommit."""
    rules: PixelRules
    """The rules every game of the batch follows."""
    moves: torch.Tensor
    """Slots revealed so far, in order, ``(G, turn)`` long."""

    @classmethod
    def new(
        cls,
        images: np.ndarray | torch.Tensor,
        honest: np.ndarray | torch.Tensor,
        liar: np.ndarray | torch.Tensor | None,
        rules: PixelRules,
    ) -> PixelGames:
        """Fresh games from ``uint8`` images ``(G, 28, 28)`` (or values ``(G, 784)`` in [0, 1]),
        true labels and, under precommit, the liars' labels."""
        imgs = torch.as_tensor(np.asarray(images))
        values = imgs.to(torch.float32) if imgs.ndim == 2 else pixel_values(imgs)
        if values.ndim != 2 or values.shape[1] != N_PIXELS:
            raise ValueError(f"expected images (G, 28, 28) or values (G, 784), got {imgs.shape}")
        g = len(values)
        honest_t = torch.as_tensor(np.asarray(honest)).long().reshape(-1)
        if len(honest_t) != g or ((honest_t < 0) | (honest_t >= N_CLASSES)).any():
            raise ValueError(f"need {g} honest labels in 0..9, got {honest_t.tolist()[:10]}")
        if rules.precommit:
            if liar is None:
                raise ValueError("precommit needs the liars' labels")
            liar_t = torch.as_tensor(np.asarray(liar)).long().reshape(-1)
            if len(liar_t) != g or ((liar_t < 0) | (liar_t >= N_CLASSES)).any():
                raise ValueError(f"need {g} liar labels in 0..9")
            if (liar_t == honest_t).any():
                raise ValueError("a liar's label must differ from the true label")
        else:
            if liar is not None:
                raise ValueError("without precommit the liar names its label after the reveal")
            liar_t = torch.full((g,), -1, dtype=torch.long)
        nonzero = values > 0
        counts = nonzero.sum(1)
        if g and int(counts.min()) < rules.pixels:
            raise ValueError(
                f"an image has only {int(counts.min())} nonzero pixels; a game reveals "
                f"{rules.pixels}"
            )
        width = int(counts.max()) if g else 0
        # stable sort puts each image's nonzero pixels first, in row-major order
        order = torch.sort((~nonzero).to(torch.int8), dim=1, stable=True).indices[:, :width]
        valid = torch.arange(width)[None, :] < counts[:, None]
        candidates = torch.where(valid, order, torch.full_like(order, N_PIXELS))
        moves = torch.zeros(g, 0, dtype=torch.long)
        return cls(values, candidates, valid, honest_t, liar_t, rules, moves)

    def __len__(self) -> int:
        return len(self.values)

    @property
    def turn(self) -> int:
        return self.moves.shape[1]

    @property
    def done(self) -> bool:
        return self.turn >= self.rules.pixels

    def mover(self) -> str:
        """Who reveals the next pixel."""
        if self.done:
            raise ValueError("the games are over; no one moves")
        return self.rules.mover(self.turn)

    def used(self) -> torch.Tensor:
        """Slots already revealed, ``(G, C)`` bool."""
        out = torch.zeros(self.valid.shape, dtype=torch.bool)
        return out.scatter_(1, self.moves, True)

    def available(self) -> torch.Tensor:
        """Slots the mover may reveal, ``(G, C)`` bool."""
        return self.valid & ~self.used()

    def play(self, slots: torch.Tensor | np.ndarray) -> PixelGames:
        """The games after the mover reveals ``slots (G,)``; illegal slots raise ValueError."""
        if self.done:
            raise ValueError("the games are over; no more pixels can be revealed")
        s = torch.as_tensor(np.asarray(slots)).long().reshape(-1)
        if len(s) != len(self):
            raise ValueError(f"need one slot per game ({len(self)}), got {len(s)}")
        if ((s < 0) | (s >= self.valid.shape[1])).any():
            raise ValueError("slot out of range")
        ok = self.available().gather(1, s[:, None])[:, 0]
        if not ok.all():
            bad = int((~ok).nonzero()[0, 0])
            raise ValueError(
                f"game {bad}: slot {int(s[bad])} is padding or already revealed; reveal an "
                "unrevealed nonzero pixel"
            )
        return replace(self, moves=torch.cat([self.moves, s[:, None]], dim=1))

    def pixel_mask(self, slots_used: torch.Tensor) -> torch.Tensor:
        """Pixel masks ``(G, 784)`` of the slot sets ``slots_used (G, C)`` bool."""
        mask = torch.zeros(len(self), N_PIXELS + 1, dtype=torch.bool)
        mask.scatter_(1, torch.where(slots_used, self.candidates, N_PIXELS), True)
        return mask[:, :N_PIXELS]

    def revealed_pixels(self) -> torch.Tensor:
        """Pixel indices revealed so far, in order, ``(G, turn)``."""
        return self.candidates.gather(1, self.moves)

    def subset(self, index: torch.Tensor | slice) -> PixelGames:
        """The games at ``index`` (candidate padding is kept)."""
        return replace(
            self, values=self.values[index], candidates=self.candidates[index],
            valid=self.valid[index], honest=self.honest[index], liar=self.liar[index],
            moves=self.moves[index],
        )  # fmt: skip

    def judge_margin(self, judge: Judge, slots_used: torch.Tensor | None = None):
        """The honest margin ``(G,)`` and logits ``(G, 10)`` on the revealed pixels (or on the
        slot sets ``slots_used``)."""
        used = self.used() if slots_used is None else slots_used
        logits = judge.logits(self.values, self.pixel_mask(used))
        return honest_margin(logits, self.honest, self.liar), logits


@dataclass
class DebateRecord:
    """The finished games of one batch."""

    games: PixelGames
    """The final positions (all pixels revealed)."""
    logits: torch.Tensor
    """The judge's logits on the revealed pixels, ``(G, 10)``."""
    honest_win: torch.Tensor
    """1.0 where the honest player won, ``(G,)``."""

    def log_rows(self) -> list[dict]:
        """One JSON-ready dict per game: claims, moves (row, col, player) and the verdict."""
        pixels = self.games.revealed_pixels()
        movers = [self.games.rules.mover(t) for t in range(self.games.turn)]
        rows = []
        for g in range(len(self.games)):
            liar = int(self.games.liar[g])
            if liar < 0:  # no precommit: the liar names the best other label after the reveal
                liar = _best_other(self.logits[g], self.games.honest[g])
            moves = [
                [int(p) // SIDE, int(p) % SIDE, m] for p, m in zip(pixels[g], movers, strict=True)
            ]
            rows.append({
                "honest_label": int(self.games.honest[g]), "liar_label": liar, "moves": moves,
                "logits": [round(float(v), 4) for v in self.logits[g]],
                "honest_win": bool(self.honest_win[g] > 0),
            })  # fmt: skip
        return rows


def _best_other(logits: torch.Tensor, honest: torch.Tensor) -> int:
    masked = logits.clone()
    masked[int(honest)] = float("-inf")
    return int(masked.argmax())


def play(games: PixelGames, honest_agent, liar_agent, judge: Judge, generator) -> DebateRecord:
    """Play ``games`` to the end: the agents alternate as the rules say; the judge decides."""
    while not games.done:
        agent = honest_agent if games.mover() == "honest" else liar_agent
        games = games.play(agent.moves(games, judge, generator))
    margin, logits = games.judge_margin(judge)
    return DebateRecord(games, logits, (margin > 0).to(torch.float32))


def liar_games(
    images: np.ndarray, labels: np.ndarray, rules: PixelRules
) -> tuple[PixelGames, np.ndarray]:
    """Under precommit, each image against all nine liars: games ``(9 N)`` ordered image-major,
    and the image index of each game. Without precommit, one game per image."""
    labels = np.asarray(labels).astype(np.int64)
    n = len(labels)
    if not rules.precommit:
        return PixelGames.new(images, labels, None, rules), np.arange(n)
    image_of = np.repeat(np.arange(n), N_CLASSES - 1)
    offsets = np.tile(np.arange(1, N_CLASSES), n)
    liars = (labels[image_of] + offsets) % N_CLASSES
    return PixelGames.new(np.asarray(images)[image_of], labels[image_of], liars, rules), image_of


def image_honest_wins(honest_win: torch.Tensor, image_of: np.ndarray, n_images: int) -> np.ndarray:
    """Per image: the honest player wins the image only if it beats every liar it faced."""
    wins = np.ones(n_images, dtype=bool)
    np.logical_and.at(wins, image_of, honest_win.numpy() > 0)
    return wins
