"""Compiled inner loops of the pixel-debate tree search (numba), one game at a time.

The lockstep search of :mod:`debatelab.games.agents` spends most of its time on bookkeeping:
a dozen small tensor operations per depth and simulation step, whatever the number of trees.
These kernels do the same walk per game in compiled loops: :func:`descend` takes one
simulation down every tree (PUCT selection, second-visit row creation, random playout) and
lists the leaves to judge; the caller judges them in one batch; :func:`backup` adds the
verdicts along the paths. The tree layout is the reference search's: rows of edges
``child`` / ``n`` / ``w`` from one pool, row g the root of game g.

Randomness comes in explicitly. Each game has its own 64-bit xorshift state (``rng``), seeded by
the caller, so a game's search does not depend on the other games of the batch. Ties in the
PUCT score are broken uniformly at random among the exact maxima, and playouts draw uniformly
random distinct free slots: the same distributions as the reference search, other draws. For
the equality test against the reference, ``noise`` / ``keys`` arrays can stand in for the
generator: ``descend`` then adds ``1e-6 * noise`` to the scores and fills playouts with the
free slots of largest key, exactly as the reference does with its torch draws.
"""

from __future__ import annotations

import numpy as np
from numba import njit

_MULT = np.uint64(0x2545F4914F6CDD1D)


@njit(cache=True, inline="always")
def _uniform(rng, g):
    """A uniform float in [0, 1) from game g's xorshift64* state, advanced in place."""
    x = rng[g]
    x ^= x >> np.uint64(12)
    x ^= x << np.uint64(25)
    x ^= x >> np.uint64(27)
    rng[g] = x
    return float((x * _MULT) >> np.uint64(11)) * (1.0 / 9007199254740992.0)


def seed_states(seeds: np.ndarray) -> np.ndarray:
    """Per-game xorshift states from 63-bit seeds (splitmix64 of each, never zero)."""
    z = np.asarray(seeds, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    return np.where(z == 0, np.uint64(1), z)


@njit(cache=True)
def descend(
    child, n, w, rows, counts, root_used, movers_honest, pixels, c_puct, fpu, rng,
    noise, keys, path_node, path_act, path_len, leaf, todo, win,
):  # fmt: skip
    """One simulation in every game's tree.

    ``child / n / w (R, C)`` int32 tree rows (child: -1 never taken, -2 taken once, else the
    row of its node); ``rows`` the rows in use (returned updated: the caller leaves room for one
    more per game); ``counts (G,)`` candidate slots per game (slots ``0..count-1`` are real);
    ``root_used (G, C)`` uint8 the revealed slots at the root; ``movers_honest (depth,)`` who
    moves at each level; ``pixels`` the game's total reveal. With ``noise`` of shape
    ``(depth, G, C)`` and ``keys (G, C)`` (else empty) those replace the generator.

    Writes each game's path (``path_node / path_act (depth, G)``, ``path_len (G,)``), its leaf
    slots ``leaf (G, pixels)``, and ``todo (G,)`` (1: judge this leaf) or, for a leaf reached
    through a last-turn edge taken before, ``win (G,)`` its known verdict. Returns ``rows``.
    """
    depth = len(movers_honest)
    g_count, c_count = root_used.shape
    given = noise.shape[0] > 0
    used = np.zeros(c_count, np.uint8)
    for g in range(g_count):
        count = counts[g]
        k = 0
        for s in range(count):
            used[s] = root_used[g, s]
            if used[s]:
                leaf[g, k] = s
                k += 1
        node = g
        length = 0
        expanded = False
        for d in range(depth):
            total = 0
            for s in range(count):
                total += n[node, s]
            # the reference's float32 arithmetic, in its order, so scores and ties agree
            prior = np.float32(1.0) / np.float32(count - k)
            explore = np.float32(np.float32(c_puct) * prior) * np.sqrt(np.float32(total))
            best = -np.inf
            choice = -1
            ties = 0
            for s in range(count):
                if used[s]:
                    continue
                ne = n[node, s]
                if ne > 0:
                    q = np.float32(w[node, s]) / np.float32(ne)
                    if not movers_honest[d]:
                        q = np.float32(1.0) - q
                else:
                    q = np.float32(fpu)
                score = q + explore / np.float32(1.0 + ne)
                if given:
                    score = np.float32(score + np.float32(1e-6) * noise[d, g, s])
                    if score > best:
                        best, choice = score, s
                elif score > best:
                    best, choice, ties = score, s, 1
                elif score == best:
                    ties += 1
                    if _uniform(rng, g) * ties < 1.0:
                        choice = s
            path_node[d, g] = node
            path_act[d, g] = choice
            length += 1
            used[choice] = 1
            leaf[g, k] = choice
            k += 1
            if d == depth - 1:
                break
            nxt = child[node, choice]
            if nxt == -1:  # first visit of this edge: play out from here
                child[node, choice] = -2
                expanded = True
                break
            if nxt == -2:  # second visit: the node gets its row
                nxt = rows
                child[node, choice] = nxt
                rows += 1
            node = nxt
        path_len[g] = length
        todo[g] = 1
        if not expanded:  # a last-turn edge: its leaf is known once judged
            last_node, last = path_node[length - 1, g], path_act[length - 1, g]
            if n[last_node, last] > 0:
                todo[g] = 0
                win[g] = 1 if w[last_node, last] > 0 else 0
        if todo[g] and k < pixels:  # complete the reveal with random free slots
            if given:
                while k < pixels:
                    top = -1
                    for s in range(count):
                        if not used[s] and (top < 0 or keys[g, s] > keys[g, top]):
                            top = s
                    used[top] = 1
                    leaf[g, k] = top
                    k += 1
            else:
                while k < pixels:
                    s = int(_uniform(rng, g) * count)
                    if not used[s]:
                        used[s] = 1
                        leaf[g, k] = s
                        k += 1
        for i in range(k):
            used[leaf[g, i]] = 0
    return rows


@njit(cache=True)
def backup(n, w, path_node, path_act, path_len, win):
    """Add one visit and the simulation's honest win to every edge on each game's path."""
    for g in range(len(path_len)):
        for d in range(path_len[g]):
            n[path_node[d, g], path_act[d, g]] += 1
            w[path_node[d, g], path_act[d, g]] += win[g]
