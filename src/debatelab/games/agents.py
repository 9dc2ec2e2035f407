"""Agents of the pixel debate: one interface, three kinds.

An agent is an object with ``moves(games, judge, generator) -> slots``: given a batch of
:class:`PixelGames` (all at the same turn, the agent being the mover) it returns one candidate
slot per game. Agents know which side they play from ``games.mover()``.

- :class:`PolicyAgent` rates each available pixel by the judge's verdict one step ahead and
  chooses with a rank policy: ``Exact()`` is the greedy agent, ``Uniform()`` the random agent,
  ``TopK``/``BestOfN`` a quantilised or best-of-n agent.
- :class:`MCTSAgent` runs Monte Carlo tree search with PUCT selection, a uniform prior over the
  available pixels and random playouts to the end of the game, judged by the frozen judge. The
  trees of many games are searched in lockstep so each simulation step judges all their leaves
  in one batch; the tree walk runs in compiled loops (:mod:`.mcts_kernel`), tested against the
  torch reference :func:`_search` that spells the same search out in tensor operations.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

import numpy as np
import torch

from ..geometry import N_PIXELS
from ..interfaces import Judge
from ..policies import Exact, RankPolicy, Uniform, child_weights
from . import mcts_kernel
from .pixels import PixelGames, honest_margin


@runtime_checkable
class Agent(Protocol):
    """Chooses the mover's pixel in every game of a batch."""

    def moves(self, games: PixelGames, judge: Judge, generator: torch.Generator) -> torch.Tensor:
        """Slots ``(G,)`` to reveal, each available in its game."""
        ...


def _choose(values: torch.Tensor, available: torch.Tensor, policy: RankPolicy, generator):
    """Sample one slot per row from the policy's weights over the available slots' values
    (higher is better for the mover)."""
    out = torch.empty(len(values), dtype=torch.long)
    for g in range(len(values)):
        idx = available[g].nonzero()[:, 0]
        w = child_weights(values[g, idx].double().numpy(), policy, maximize=True)
        w = torch.as_tensor(w / w.sum())
        out[g] = idx[torch.multinomial(w, 1, generator=generator)[0]]
    return out


@dataclass(frozen=True)
class PolicyAgent:
    """One-step lookahead under a rank policy: each available pixel is valued by the judge's
    honest margin after revealing it (negated for the liar)."""

    policy: RankPolicy = field(default_factory=Exact)
    """How the agent picks among pixels ranked by value: Exact = greedy, Uniform = random."""

    def moves(self, games: PixelGames, judge: Judge, generator: torch.Generator):
        available = games.available()
        if isinstance(self.policy, Uniform):  # values are irrelevant: skip the judge
            return _choose(torch.zeros(available.shape), available, self.policy, generator)
        rows, slots = available.nonzero(as_tuple=True)
        sign = 1.0 if games.mover() == "honest" else -1.0
        values = torch.full(available.shape, float("-inf"))
        # the one-step positions in pieces of whole judge batches: the same batches the judge
        # would cut from one call (so the same numbers), without every position's copy of its
        # image at once (4,500 games of 150 candidates: gigabytes)
        step = 16 * judge.max_batch
        for lo in range(0, len(rows), step):
            r, sl = rows[lo : lo + step], slots[lo : lo + step]
            used = games.used()[r]
            used[torch.arange(len(r)), sl] = True
            margin, _ = games.subset(r).judge_margin(judge, used)
            values[r, sl] = sign * margin
        return _choose(values, available, self.policy, generator)


def greedy_agent() -> PolicyAgent:
    """Reveals the pixel that most helps its claim one step ahead."""
    return PolicyAgent(Exact())


def random_agent() -> PolicyAgent:
    """Reveals a uniformly random unrevealed nonzero pixel."""
    return PolicyAgent(Uniform())


#: The implementations of the tree search (MCTSConfig.engine).
ENGINES = ("compiled", "reference")
#: Tie rules (:data:`debatelab.protocols.TIE_RULES`): the rank-policy agents (greedy, random)
#: share tied options' mass (``shared``, :func:`debatelab.policies.child_weights`); the tree
#: search's selection adds a tiny seeded noise per level (``random``).
TIE_RULE, MCTS_TIE_RULE = "shared", "random"


@dataclass(frozen=True)
class MCTSConfig:
    """Settings of the tree search."""

    rollouts: int = 1000
    """Simulations per move (the paper used 10,000)."""
    c_puct: float = 1.0
    """Weight of the PUCT exploration term c * P * sqrt(N) / (1 + n)."""
    fpu: float = 0.5
    """Value (win probability for the mover) assumed for an edge never visited."""
    batch_games: int = 64
    """Trees searched in lockstep, their leaves judged in one batch; 1 judges each rollout
    alone (the unbatched baseline of the benchmark)."""
    memory_mb: int = 2048
    """Budget for the tree arrays of one lockstep batch: fewer trees are searched together when
    their estimated arrays exceed it. An estimate, not a cap: a node gets its row of edges on
    its second visit, reckoned at one row per two rollouts (usually fewer)."""
    select: RankPolicy = field(default_factory=Exact)
    """Rank policy over the root's visit counts that picks the move (Exact: most visited)."""
    engine: str = "compiled"
    """"compiled": the tree walk in compiled loops (numba), the leaves judged in one batch per
    step; "reference": the same search in torch tensor operations, the readable (and several
    times slower) specification the compiled one is tested against. The two draw their random
    numbers differently, so one seed plays other, statistically equivalent games."""

    def __post_init__(self):
        if self.rollouts < 1 or self.batch_games < 1:
            raise ValueError("rollouts and batch_games must be >= 1")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.c_puct < 0 or not 0 <= self.fpu <= 1:
            raise ValueError("c_puct must be >= 0 and fpu in [0, 1]")


@dataclass
class SearchResult:
    """Root statistics of a search."""

    visits: torch.Tensor
    """Visits of each root slot, ``(G, C)``."""
    value: torch.Tensor
    """Mean honest win of each root slot's simulations, ``(G, C)`` (fpu-free; 0 if unvisited)."""


@dataclass(frozen=True)
class MCTSAgent:
    """PUCT tree search against the frozen judge, a fresh tree per move."""

    config: MCTSConfig = field(default_factory=MCTSConfig)
    """Search settings."""

    def moves(self, games: PixelGames, judge: Judge, generator: torch.Generator):
        res = self.search(games, judge, generator)
        honest = games.mover() == "honest"
        q = res.value if honest else 1.0 - res.value
        score = res.visits + 1e-3 * q  # visit counts, ties broken by value
        return _choose(score, games.available(), self.config.select, generator)

    def search(self, games: PixelGames, judge: Judge, generator: torch.Generator):
        """Run the search for every game, in lockstep batches of games with similar numbers of
        candidates (each batch's arrays as wide as its widest game)."""
        if games.done:
            raise ValueError("the games are over; nothing to search")
        counts = games.valid.sum(1)
        order = torch.sort(counts, stable=True).indices
        per_tree = (self.config.rollouts // 2 + 1) * int(counts.max()) * 12  # int32 x 3
        step = max(1, min(self.config.batch_games, self.config.memory_mb * 2**20 // per_tree))
        visits = torch.zeros(games.valid.shape)
        value = torch.zeros(games.valid.shape)
        for i in range(0, len(games), step):
            index = order[i : i + step]
            batch = games.subset(index)
            width = int(counts[index].max())
            batch = replace(batch, candidates=batch.candidates[:, :width],
                            valid=batch.valid[:, :width])  # fmt: skip
            search = _search_compiled if self.config.engine == "compiled" else _search
            part = search(batch, judge, generator, self.config)
            visits[index, :width], value[index, :width] = part.visits, part.value
        return SearchResult(visits, value)


def _search(games: PixelGames, judge: Judge, gen: torch.Generator, cfg: MCTSConfig):
    """PUCT search of ``cfg.rollouts`` simulations in each game's tree, all trees in lockstep.

    A tree is rows of edges: ``child[row, slot]`` (-1 never taken, -2 taken once: its node has
    no row yet, else the row of its node), edge visits ``n`` and honest wins ``w``; rows come
    from one pool shared by the batch (row g is game g's root). A simulation descends by PUCT
    until it takes an edge for the first time or reaches the last turn, completes the reveal
    with uniformly random available pixels, and backs the judge's verdict up its path. A leaf
    reached through a last-turn edge taken before is not judged again: its verdict is that
    edge's (the judge's logits on one position differ between batch sizes by rounding only).
    A node's edges are all unvisited until its second visit, so its row is made then: the same
    search as a row per node, in a fraction of the memory.
    """
    g_count, c_count = games.valid.shape
    rules, t0 = games.rules, games.turn
    depth = rules.pixels - t0
    movers_honest = [rules.mover(t0 + d) == "honest" for d in range(depth)]
    capacity = g_count * max(2, min(cfg.rollouts + 1, 64))
    child = torch.full((capacity, c_count), -1, dtype=torch.int32)
    n = torch.zeros((capacity, c_count), dtype=torch.int32)
    w = torch.zeros((capacity, c_count), dtype=torch.int32)
    rows = g_count
    roots = torch.arange(g_count)
    root_used = games.used()
    for _ in range(cfg.rollouts):
        # each step's random numbers in two draws of fixed shape (the compiled search can be
        # handed the same ones): tie-breaking noise per level, playout keys
        noise = torch.rand((depth, g_count, c_count), generator=gen)
        keys = torch.rand((g_count, c_count), generator=gen)
        node = roots.clone()
        used = root_used.clone()
        alive = torch.ones(g_count, dtype=torch.bool)
        path_node, path_act, path_alive = [], [], []
        for d in range(depth):
            ne, we = n.index_select(0, node).float(), w.index_select(0, node).float()
            free = games.valid & ~used
            q = we / ne.clamp(min=1)
            if not movers_honest[d]:
                q = 1.0 - q
            q = torch.where(ne > 0, q, cfg.fpu)
            prior = 1.0 / free.sum(1, keepdim=True)
            u = cfg.c_puct * prior * ne.sum(1, keepdim=True).sqrt() / (1.0 + ne)
            score = q + u + 1e-6 * noise[d]
            a = score.masked_fill_(~free, float("-inf")).argmax(1)
            path_node.append(node)
            path_act.append(a)
            path_alive.append(alive)
            used.scatter_(1, a[:, None], alive[:, None] | used.gather(1, a[:, None]))
            if d == depth - 1:
                break
            nxt = child[node, a].long()
            first = alive & (nxt == -1)
            second = (alive & (nxt == -2)).nonzero()[:, 0]
            child[node[first], a[first]] = -2
            if len(second):  # the node's second visit: it gets its row
                if rows + len(second) > len(child):  # at most a row per tree and rollout
                    most = g_count * (cfg.rollouts + 1)
                    child, n, w = _grow(child, n, w, rows + len(second), most)
                made = torch.arange(rows, rows + len(second))
                child[node[second], a[second]] = made.to(torch.int32)
                nxt[second] = made
                rows += len(second)
            alive = alive & ~first
            if not alive.any():
                break
            node = torch.where(alive, nxt, node)
        win = torch.zeros(g_count, dtype=torch.int32)
        todo = torch.arange(g_count)
        if len(path_alive) == depth:  # an edge of the last turn taken before: its leaf is known
            last = path_node[-1], path_act[-1]
            known = path_alive[-1] & (n[last] > 0)
            win[known] = (w[last][known] > 0).to(torch.int32)  # that leaf's first verdict
            todo = (~known).nonzero()[:, 0]
        if len(todo):
            used = _random_playout(games.valid, used, rules.pixels, keys)
            margin, _ = games.subset(todo).judge_margin(judge, used[todo])
            win[todo] = (margin > 0).to(torch.int32)
        on_path = torch.stack(path_alive)
        flat = (torch.stack(path_node) * c_count + torch.stack(path_act))[on_path]
        n.view(-1).index_add_(0, flat, torch.ones(len(flat), dtype=torch.int32))
        w.view(-1).index_add_(0, flat, win.expand(len(path_alive), -1)[on_path])
    visits, wins = n[roots].float(), w[roots].float()
    return SearchResult(visits, torch.where(visits > 0, wins / visits.clamp(min=1), 0.0))


def _search_compiled(games: PixelGames, judge: Judge, gen: torch.Generator, cfg: MCTSConfig,
                     replay: bool = False) -> SearchResult:  # fmt: skip
    """The search of :func:`_search` with its tree walk in compiled loops
    (:mod:`debatelab.games.mcts_kernel`): per simulation step one kernel call descends every
    tree, the judge scores the listed leaves in one batch, a second kernel call backs the
    verdicts up. Each game draws from its own random state, seeded from ``gen``; with
    ``replay`` it uses the reference's torch draws instead and plays exactly its search."""
    g_count, c_count = games.valid.shape
    rules, t0 = games.rules, games.turn
    depth = rules.pixels - t0
    movers = np.array([rules.mover(t0 + d) == "honest" for d in range(depth)])
    counts = games.valid.sum(1).numpy()  # a game's real slots come first
    most = g_count * (cfg.rollouts + 1)
    size = g_count * max(2, min(cfg.rollouts + 1, 64))
    child = np.full((size, c_count), -1, np.int32)
    n = np.zeros((size, c_count), np.int32)
    w = np.zeros((size, c_count), np.int32)
    rows = g_count
    root_used = games.used().numpy().astype(np.uint8)
    seeds = np.zeros(g_count) if replay else torch.randint(2**62, (g_count,), generator=gen)
    rng = mcts_kernel.seed_states(np.asarray(seeds))
    path_node = np.zeros((depth, g_count), np.int32)
    path_act = np.zeros((depth, g_count), np.int32)
    path_len = np.zeros(g_count, np.int32)
    leaf = np.zeros((g_count, rules.pixels), np.int64)
    todo = np.zeros(g_count, np.uint8)
    win = np.zeros(g_count, np.int32)
    noise, keys = np.zeros((0, 0, 0), np.float32), np.zeros((0, 0), np.float32)
    for _ in range(cfg.rollouts):
        if replay:
            noise = torch.rand((depth, g_count, c_count), generator=gen).numpy()
            keys = torch.rand((g_count, c_count), generator=gen).numpy()
        if rows + g_count > len(child):  # room for a new row per tree
            child, n, w = _grow(child, n, w, rows + g_count, most)
        rows = mcts_kernel.descend(
            child, n, w, rows, counts, root_used, movers, rules.pixels, cfg.c_puct, cfg.fpu,
            rng, noise, keys, path_node, path_act, path_len, leaf, todo, win,
        )  # fmt: skip
        judged = np.flatnonzero(todo)
        if len(judged):
            index = torch.from_numpy(judged)
            pixels = games.candidates[index].gather(1, torch.from_numpy(leaf[judged]))
            mask = torch.zeros(len(index), N_PIXELS, dtype=torch.bool).scatter_(1, pixels, True)
            logits = judge.logits(games.values[index], mask)
            margin = honest_margin(logits, games.honest[index], games.liar[index])
            win[judged] = (margin > 0).numpy()
        mcts_kernel.backup(n, w, path_node, path_act, path_len, win)
    visits = torch.from_numpy(n[:g_count].astype(np.float32))
    wins = torch.from_numpy(w[:g_count].astype(np.float32))
    return SearchResult(visits, torch.where(visits > 0, wins / visits.clamp(min=1), 0.0))


def _grow(child, n, w, needed: int, most: int):
    """The tree arrays (torch tensors or numpy arrays) with room for at least ``needed`` rows:
    doubled, but never past ``most``; new rows hold no edges."""
    extra = min(max(needed, 2 * len(child)), most) - len(child)
    if isinstance(child, np.ndarray):
        return tuple(np.concatenate([a, np.full((extra, a.shape[1]), fill, a.dtype)])
                     for a, fill in ((child, -1), (n, 0), (w, 0)))  # fmt: skip
    return tuple(torch.cat([a, torch.full((extra, a.shape[1]), fill, dtype=a.dtype)])
                 for a, fill in ((child, -1), (n, 0), (w, 0)))  # fmt: skip


def _random_playout(valid, used, pixels: int, keys: torch.Tensor) -> torch.Tensor:
    """``used`` completed to ``pixels`` slots per row with the available slots of largest
    ``keys`` (uniform random numbers: uniformly random slots)."""
    need = pixels - used.sum(1)
    k = int(need.max())
    if k <= 0:
        return used
    keys = keys.masked_fill(~(valid & ~used), -1.0)
    top = keys.topk(k, dim=1).indices
    take = torch.arange(k)[None, :] < need[:, None]
    out = torch.cat([used, torch.zeros(len(used), 1, dtype=torch.bool)], dim=1)
    out.scatter_(1, torch.where(take, top, used.shape[1]), True)  # spare column absorbs the rest
    return out[:, :-1]


def exhaustive_value(games: PixelGames, judge: Judge) -> np.ndarray:
    """The minimax honest win (0 or 1) of each game from its current turn, by full enumeration.

    The judge sees only the set of revealed pixels, so every completion set is judged once (in
    one batch per game) and the ordered game tree is searched over sets. For tiny instances.
    """
    out = np.empty(len(games))
    for g in range(len(games)):
        game = games.subset(slice(g, g + 1))
        start = frozenset(game.moves[0].tolist())
        free = game.available()[0].nonzero()[:, 0].tolist()
        k = game.rules.pixels - game.turn
        leaves = [start | set(c) for c in itertools.combinations(free, k)]
        used = torch.zeros(len(leaves), game.valid.shape[1], dtype=torch.bool)
        for i, leaf in enumerate(leaves):
            used[i, list(leaf)] = True
        margin, _ = game.subset(torch.zeros(len(leaves), dtype=torch.long)).judge_margin(
            judge, used
        )
        table = {leaf: float(m > 0) for leaf, m in zip(leaves, margin, strict=True)}
        out[g] = _minimax(start, free, game.rules, table, {})
    return out


def _minimax(revealed: frozenset, free: list, rules, table: dict, memo: dict) -> float:
    if len(revealed) == rules.pixels:
        return table[revealed]
    if revealed not in memo:
        vals = [
            _minimax(revealed | {s}, free, rules, table, memo) for s in free if s not in revealed
        ]
        honest = rules.mover(len(revealed)) == "honest"
        memo[revealed] = max(vals) if honest else min(vals)
    return memo[revealed]


__all__ = [
    "Agent", "MCTSAgent", "MCTSConfig", "PolicyAgent", "SearchResult", "exhaustive_value",
    "greedy_agent", "honest_margin", "random_agent",
]  # fmt: skip
