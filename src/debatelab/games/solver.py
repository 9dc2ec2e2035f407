"""Exact (and quantilised) solving of reveal games against a frozen judge.

A game: A commits a claim (a class), then the players reveal cells as a **protocol** says
(:mod:`debatelab.protocols`: turns of a player and the cells its move reveals; the older
``moves`` tuples, e.g. ``(2, 2)``, mean players alternating A, B, A, ...); the judge scores the
revealed mask. Leaves are scored by a registered **rule** (:class:`debatelab.protocols.Rule`,
whose ``leaf_columns`` and ``claims`` every solver here uses):

- ``asym``: the judge's probability of A's claim ``p[a]``;
- ``sym``: B commits a class ``b`` after A's claim (it may be the same one), payoff ``p[a] - p[b]``;
  B's class is the exact argmin over classes of the game value;
- ``last_b``: B names its class after the reveal, payoff ``p[a] - max_d p[d]``.

Each player plays with a **capability** (a rank policy: an int k is a top-k quantiliser, clamped
to the options at each node, 1 = exact play). A's claim is never quantilised: it is the exact
argmax over classes of the game value (first class on exact ties; under ``sym`` B's class is the
first argmin): the tie rule ``first`` (:data:`CLAIM_TIE_RULE`). Play inside the game shares
the mass of tied options: the tie rule ``shared`` (:data:`TIE_RULE`, the core's reducer).

The game is the core's subset game (:func:`.core.reveal_game`: the index tables of
:mod:`.tables` as a stack of levels). Speed: subset backward induction over those tables; one
sort per node for all capabilities that share the play below it (:mod:`.ranked`, the core's fast
path: the same numbers as :func:`.core.reduce_level`, tests/test_core.py); everything vectorised
over images and classes and chunked over images. :func:`solve_capabilities` solves many
``(k_A, k_B)`` at once, re-sorting a level only when the capabilities below it change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from math import comb

import numpy as np

from ..policies import BestOfN, Exact, RankPolicy, TopK, Uniform, as_policy
from ..protocols import RULE_NAMES, TIE_RULES, Protocol, Rule, as_protocol
from ..protocols import rule as as_rule
from .core import Game, reveal_game
from .ranked import RankedChildren, pack_with_aux, resolve, top_k_by_key
from .tables import check_game

#: A reveal game's protocol as the solvers take it: a Protocol, a registered name, or moves.
GameSpec = Sequence[int] | Protocol | str
#: The registered rules (live: a rule registered later is in).
RULES = RULE_NAMES
#: How the players' play shares tied options (the core's reducer); A's claim takes the first.
TIE_RULE, CLAIM_TIE_RULE = "shared", "first"
assert {TIE_RULE, CLAIM_TIE_RULE} <= set(TIE_RULES)
#: How a player ranks its options: by their value for the claim at stake (``claim``), or, in a
#: one-turn game (consultancy), by one claim-agnostic score shared by every claim, the judge's
#: confidence max_c p(c | mask) on the mask (``confidence``).
RANKINGS = ("claim", "confidence")

#: Rough working-memory budget of one image chunk, in bytes.
CHUNK_BYTES = 400 * 2**20
#: Sorted child values per batch of entries (about 32 bytes each in flight).
BATCH_ELEMENTS = 8 * 2**20


def leaf_columns(probs: np.ndarray, rule_name: str | Rule) -> np.ndarray:
    """Leaf payoffs ``(n_images, n_columns, n_masks)``, one column per claim (pair): the rule's
    :meth:`~debatelab.protocols.Rule.leaf_columns`.

    ``asym``/``last_b``: column ``a`` is A's payoff when it claims class ``a``. ``sym``: column
    ``a * K + b`` is A's payoff when A claims ``a`` and B claims ``b``.
    """
    return as_rule(rule_name).leaf_columns(probs)


def normalise_capability(k) -> tuple:
    """``k`` -> ``(capability_A, capability_B)`` as rank policies; one value means both players.

    The solver's public functions are an edge: a capability given as an int or a string is
    parsed here, once, by :func:`debatelab.policies.as_policy` (an int k is ``TopK(k)``)."""
    if isinstance(k, tuple | list):
        if len(k) != 2:
            raise ValueError(f"k must be (k_A, k_B), got {k!r}")
        return (as_policy(k[0]), as_policy(k[1]))
    return (as_policy(k), as_policy(k))


def _level_reducers(game: Game, capability: tuple) -> tuple:
    """The resolved policy of the player to move at each level, clamped to its options: A's
    (``capability[0]``) where the level maximises, B's where it minimises."""
    return tuple(resolve(capability[0 if lv.maximize else 1], lv.n_options) for lv in game.levels)


def _solve_columns(leaf: np.ndarray, leaf_aux, game: Game, plans: list[tuple],
                   batch_elements: int = BATCH_ELEMENTS):  # fmt: skip
    """Root values and aux ``(n_plans, n_images, n_columns)`` by subset backward induction.

    A level's children are sorted once for every distinct play below it ("entry"): plans that
    share the reducers of every level below ``t`` share level ``t``'s sort, and entries are
    batched (up to ``batch_elements`` sorted values at once) so that a whole capability grid
    costs a few large numpy calls per level.
    """
    n_img, n_cols = leaf.shape[:2]
    values = np.empty((len(plans), n_img, n_cols), dtype=leaf.dtype)
    auxes = None if leaf_aux is None else np.empty_like(values)
    nonneg = bool(leaf.size) and bool(leaf.min() >= 0)  # averages of such values stay so

    def visit(t: int, child_values, child_aux, members: list[list[int]]):
        level = game.levels[t]
        table = level.children
        per_entry = child_values[0].size // child_values.shape[-1] * table.size
        step = max(1, batch_elements // per_entry)
        for lo in range(0, len(members), step):
            hi = min(lo + step, len(members))
            src = None
            if child_aux is not None:
                src = child_aux if len(child_aux) == 1 else child_aux[lo:hi]
            reducers = {plans[m][t] for e in range(lo, hi) for m in members[e]}
            sorts = any(r.k is None or r.k not in (1, table.shape[1]) for r in reducers)
            if sorts and src is not None and child_values.dtype == np.float32:
                # pack value and aux bits once per child, then gather the packed keys: fewer
                # element operations than gathering both and packing every (node, option)
                packed = pack_with_aux(child_values[lo:hi], src, level.maximize, nonneg)
                ranked = RankedChildren(None, None, level.maximize, nonneg,
                                        packed=np.take(packed, table, axis=-1))  # fmt: skip
                del packed
            else:
                gathered = child_values[lo:hi][..., table]
                gathered_aux = None if src is None else src[..., table]
                ranked = RankedChildren(gathered, gathered_aux, level.maximize, nonneg)
                del gathered, gathered_aux
            groups: dict = defaultdict(list)
            for e in range(lo, hi):
                for m in members[e]:
                    groups[(e - lo, plans[m][t])].append(m)
            # entries of one capability side by side: each top-k is one slice of the batch
            keys = sorted(groups, key=lambda key: (key[1].k is None, key[1].k or 0, key[0]))
            v, a = ranked.reduce_many(np.array([e for e, _ in keys]), [r for _, r in keys],
                                      leaf.dtype)  # fmt: skip
            del ranked
            if t == 0:
                for i, key in enumerate(keys):
                    values[groups[key]] = v[i, :, :, 0]
                    if auxes is not None:
                        auxes[groups[key]] = a[i, :, :, 0]
            else:
                visit(t - 1, v, a, [groups[key] for key in keys])

    visit(game.n_levels - 1, leaf[None], None if leaf_aux is None else leaf_aux[None],
          [list(range(len(plans)))])  # fmt: skip
    return values, auxes


def _monotone(k) -> bool:
    """Players whose value lies between uniform and exact play (needed by the class bounds)."""
    return all(isinstance(p, TopK | Exact | Uniform | BestOfN) for p in normalise_capability(k))


def _class_bounds(leaf: np.ndarray, game: Game) -> tuple[np.ndarray, np.ndarray]:
    """``(upper, lower)`` ``(n, n_cols)``: V(A exact, B uniform) and V(A uniform, B exact)."""
    bounds = [_level_reducers(game, (Exact(), Uniform())),
              _level_reducers(game, (Uniform(), Exact()))]  # fmt: skip
    values, _ = _solve_columns(leaf, None, game, bounds)
    return values[0], values[1]


def candidate_classes(leaf: np.ndarray, game: Game) -> np.ndarray:
    """Per image and column, whether it can be A's claim at some capability: ``(n, n_cols)``.

    Top-k (and best-of-n) averages are monotone in the children's values and lie between the
    best child and the mean, so every game value at any capabilities lies between
    V(A uniform, B exact) and V(A exact, B uniform). A column whose upper bound is below another
    column's lower bound can never be the (exact, first-index) claim.
    """
    upper, lower = _class_bounds(leaf, game)
    return upper >= lower.max(axis=1, keepdims=True)


def capability_bounds(game: Game, capabilities: Sequence) -> list[tuple] | None:
    """Per capability, the plan of an upper bound on each column's value: A as at that
    capability, every minimising level uniform (a top-k, exact or uniform minimiser's average is
    at most the uniform one, and top-k averages are monotone in the values below them). None
    where it bounds nothing: a game with no minimising level, or players of other policies."""
    caps = [normalise_capability(k) for k in capabilities]
    if all(lv.maximize for lv in game.levels) or not all(
        isinstance(p, TopK | Exact | Uniform) for k in caps for p in k
    ):
        return None
    return [_level_reducers(game, (k[0], Uniform())) for k in caps]


#: Rounding slack of the per-capability class bounds, in units of ``eps * max|leaf|`` per
#: option summed over levels (a top-k average of k float sums is off by at most about
#: ``k * eps * max|leaf|``; both the bound and the value carry such errors): generous.
BOUND_SLACK = 8


def _bound_margin(leaf: np.ndarray, game: Game) -> float:
    scale = float(np.abs(leaf).max()) if leaf.size else 0.0
    eps = float(np.finfo(leaf.dtype).eps)
    return BOUND_SLACK * eps * (sum(game.n_options) + game.n_levels) * scale


def _solve_candidates(leaf: np.ndarray, leaf_aux, game: Game, plans: list[tuple],
                      bound_plans: list[tuple] | None = None):  # fmt: skip
    """:func:`_solve_columns` on the candidate (image, column) pairs only, each as its own
    one-column game; the others get value -inf (never the claim) and aux NaN.

    ``bound_plans`` (one per plan: the same play with every minimising level uniform, an upper
    bound on that plan's value for top-k players) prunes further: the column with the best lower
    bound is solved first; another candidate column is solved only if its bound at some plan
    reaches that column's value there (less a rounding margin), since otherwise it is below
    that column, so never the claim, at every plan.
    """
    upper, lower = _class_bounds(leaf, game)
    cand = upper >= lower.max(axis=1, keepdims=True)
    values = np.full((len(plans),) + leaf.shape[:2], -np.inf, dtype=leaf.dtype)
    auxes = None if leaf_aux is None else np.full_like(values, np.nan)

    def fill(img, col):
        rows = leaf[img, col][:, None, :]
        rows_aux = None if leaf_aux is None else leaf_aux[img]
        v, a = _solve_columns(rows, rows_aux, game, plans)
        values[:, img, col] = v[:, :, 0]
        if a is not None:
            auxes[:, img, col] = a[:, :, 0]

    if bound_plans is None:
        fill(*np.nonzero(cand))
        return values, auxes
    n_img = len(leaf)
    first = lower.argmax(axis=1)
    lead = cand[np.arange(n_img), first]  # images whose best-lower-bound column is a candidate
    img1 = np.flatnonzero(lead)
    if img1.size:
        fill(img1, first[img1])
    others = cand.copy()
    others[img1, first[img1]] = False
    img, col = np.nonzero(others)
    sure = ~lead[img]  # no leading column solved: keep every candidate
    test = np.flatnonzero(~sure)
    if test.size:
        ub, _ = _solve_columns(leaf[img[test], col[test]][:, None, :], None, game, bound_plans)
        lead_value = values[:, img[test], first[img[test]]]  # (n_plans, n_test)
        reach = (ub[:, :, 0] + _bound_margin(leaf, game) >= lead_value).any(axis=0)
        sure[test[reach]] = True
    if sure.any():
        fill(img[sure], col[sure])
    return values, auxes


def game_protocol(n_cells: int, moves) -> Protocol:
    """The protocol of a reveal game given as a :class:`~debatelab.protocols.Protocol`, a
    registered name, or ``moves`` (cells per turn, players alternating), checked against the
    grid (every turn's cells fit)."""
    if isinstance(moves, Protocol | str):
        proto = as_protocol(moves, "cells")
        check_game(n_cells, proto.moves)
        return proto
    return as_protocol(check_game(n_cells, moves), "cells")


def _check_inputs(probs, n_cells, moves, rule_name, labels):
    as_rule(rule_name)  # an unknown rule: one error listing the registered ones
    proto = game_protocol(n_cells, moves)
    moves = proto.moves
    probs = np.asarray(probs)
    if probs.ndim != 3:
        raise ValueError(f"probs must be (n_images, n_masks, n_classes), got shape {probs.shape}")
    n_masks = comb(n_cells, sum(moves))
    if probs.shape[1] != n_masks:
        raise ValueError(
            f"probs has {probs.shape[1]} masks per image; moves {moves} on {n_cells} cells need "
            f"C({n_cells}, {sum(moves)}) = {n_masks} (combinations order)"
        )
    if probs.dtype not in (np.float32, np.float64):
        probs = probs.astype(np.float32)
    if labels is not None:
        labels = np.asarray(labels)
        if labels.shape != (len(probs),):
            raise ValueError(f"labels must be ({len(probs)},), got {labels.shape}")
    return probs, proto, labels


def default_chunk_images(game: Game, n_columns: int) -> int:
    """Images per chunk so that the largest sorted level stays near :data:`CHUNK_BYTES`."""
    widest = max(n * o for n, o in zip(game.n_nodes[:-1], game.n_options, strict=True))
    return max(1, CHUNK_BYTES // (32 * widest * n_columns))


def solve_capabilities(
    probs: np.ndarray,
    n_cells: int,
    moves: GameSpec,
    capabilities: Sequence,
    rule: str = "asym",
    labels: np.ndarray | None = None,
    chunk_images: int | None = None,
    prune: bool = True,
    ranking: str = "claim",
) -> dict[str, np.ndarray]:
    """Solve one reveal game at many capabilities ``[(k_A, k_B), ...]`` at once.

    Returns arrays ``(n_capabilities, n_images)``: ``claim``, ``value`` (A's game value at its
    claim; under ``asym`` the expected judge probability of the claim, i.e. the win rate) and,
    when ``labels`` are given, ``claim_correct`` and ``judge_accuracy`` (expected correctness of
    the judge's argmax on the revealed mask under the quantilised play).

    ``prune`` (asym and last_b, top-k / best-of-n / exact / uniform players) first drops, per
    image, the classes that cannot be A's claim at any capability (see
    :func:`candidate_classes`), and with top-k, exact or uniform players then those whose upper
    bound at every capability (:func:`capability_bounds`) stays below the value of the class
    with the best lower bound. The values are unchanged up to the last float32 bit of a
    uniform play's sum (summed in another order when other entries share its batch), so a claim
    can change only where two classes tie to that bit (none did in the comparisons run), and the
    solve is several times faster.

    ``ranking`` (see :data:`RANKINGS`): ``confidence`` makes a one-turn player (consultancy)
    rank the masks once by the judge's confidence, the same top k for every claim; A then
    claims the class with the best average over that top k (:func:`solve_confidence_ranked`).
    """
    probs, proto, labels = _check_inputs(probs, n_cells, moves, rule, labels)
    if len(capabilities) == 0:
        raise ValueError("give at least one capability (k_A, k_B)")
    if ranking not in RANKINGS:
        raise ValueError(f"unknown ranking {ranking!r}; use one of {RANKINGS}")
    if ranking == "confidence":  # no class bounds to prune with: one sort serves every class
        return solve_confidence_ranked(probs, n_cells, proto, capabilities, rule, labels,
                                       chunk_images)  # fmt: skip
    game = reveal_game(n_cells, proto)
    plans = [_level_reducers(game, normalise_capability(k)) for k in capabilities]
    n_classes = probs.shape[2]
    n_columns = as_rule(rule).n_columns(n_classes)
    pairs = as_rule(rule).pair_columns  # B claims before play: no class bounds to prune with
    step = chunk_images or default_chunk_images(game, n_columns)
    bound_plans = capability_bounds(game, capabilities)

    def chunk_values(chunk: np.ndarray, chunk_labels):
        leaf = leaf_columns(chunk, rule)
        leaf_aux = None
        if chunk_labels is not None:
            correct = chunk.argmax(axis=2) == chunk_labels[:, None]
            leaf_aux = correct[:, None, :].astype(probs.dtype)
        # the class bounds cost two exact solves: worth it for grids, not for one capability
        if prune and len(plans) > 2 and not pairs and all(map(_monotone, capabilities)):
            return _solve_candidates(leaf, leaf_aux, game, plans, bound_plans)
        return _solve_columns(leaf, leaf_aux, game, plans)

    return _solve_in_chunks(probs, labels, rule, step, chunk_values)


def _solve_in_chunks(probs: np.ndarray, labels, rule: str, step: int,
                     chunk_values) -> dict[str, np.ndarray]:  # fmt: skip
    """Claims and results ``(n_capabilities, n_images)`` of :func:`solve_capabilities`, chunk by
    chunk of ``step`` images; ``chunk_values(chunk, chunk_labels)`` gives the root values and
    aux ``(n_capabilities, n_chunk, n_columns)``."""
    parts = defaultdict(list)
    for lo in range(0, len(probs), step):
        chunk_labels = None if labels is None else labels[lo : lo + step]
        values, auxes = chunk_values(probs[lo : lo + step], chunk_labels)
        claim, value, aux = as_rule(rule).claims(values, auxes, probs.shape[2])
        parts["claim"].append(claim)
        parts["value"].append(value)
        if labels is not None:
            parts["claim_correct"].append(claim == chunk_labels[None, :])
            parts["judge_accuracy"].append(aux)
    return {key: np.concatenate(arrs, axis=1) for key, arrs in parts.items()}


def solve_confidence_ranked(probs: np.ndarray, n_cells: int, moves: GameSpec,
                            capabilities: Sequence, rule: str = "asym",
                            labels: np.ndarray | None = None,
                            chunk_images: int | None = None) -> dict[str, np.ndarray]:  # fmt: skip
    """:func:`solve_capabilities` with ``ranking="confidence"``: a one-turn game whose player
    ranks the masks by the judge's confidence max_c p(c | mask), one ranking for every claim
    (ties share mass), and plays uniformly over its top k; A's claim is the exact argmax of the
    resulting values (the game core's :func:`.core.reduce_level` with a ``rank_key``).
    Capabilities must be top-k (ints, ``TopK``, ``Exact``, ``Uniform``)."""
    probs, proto, labels = _check_inputs(probs, n_cells, moves, rule, labels)
    moves = proto.moves
    if len(moves) != 1:
        raise ValueError(f"ranking='confidence' is defined for one-turn games (consultancy, "
                         f"moves like (4,)), got moves {moves}; use ranking='claim'")  # fmt: skip
    n_masks = probs.shape[1]
    ks = []
    for cap in capabilities:
        reducer = resolve(normalise_capability(cap)[0], n_masks)
        if reducer.k is None:
            raise ValueError(f"ranking='confidence' takes top-k capabilities (ints, TopK, Exact, "
                             f"Uniform), got {cap!r}")  # fmt: skip
        ks.append(reducer.k)
    n_classes = probs.shape[2]
    n_columns = as_rule(rule).n_columns(n_classes)
    # small chunks: the prefix sums of a few images stay in cache (measured fastest)
    step = chunk_images or max(1, CHUNK_BYTES // 8 // (8 * (n_columns + 2) * n_masks))

    def chunk_values(chunk: np.ndarray, chunk_labels):
        channels = np.empty((len(chunk), n_columns + (chunk_labels is not None), n_masks))
        channels[:, :n_columns] = leaf_columns(chunk, rule)
        if chunk_labels is not None:  # the judge is right on the mask
            channels[:, n_columns] = chunk.argmax(axis=2) == chunk_labels[:, None]
        reduced = top_k_by_key(chunk.max(axis=2), channels, np.array(ks))
        values = reduced[..., :n_columns]
        if chunk_labels is None:
            return values, None
        return values, np.broadcast_to(reduced[..., n_columns:], values.shape)

    return _solve_in_chunks(probs, labels, rule, step, chunk_values)


def solve_reveal_game(
    probs: np.ndarray,
    n_cells: int,
    moves: GameSpec,
    k: int | RankPolicy | tuple = 1,
    rule: str = "asym",
    labels: np.ndarray | None = None,
    chunk_images: int | None = None,
    ranking: str = "claim",
) -> dict[str, np.ndarray]:
    """Solve a reveal game on every image against a frozen judge.

    Args:
        probs: ``(n_images, C(n_cells, sum(moves)), n_classes)`` judge probabilities on every
            mask, masks in combinations order (float32 is fast; float64 is exact).
        n_cells: cells of the grid.
        moves: the protocol: a :class:`~debatelab.protocols.Protocol`, a registered name
            (``debate3``, ``consult_rebut``, ...), or cells revealed per turn with the players
            alternating A, B, A, ...: ``(4,)`` consultancy, ``(2, 2)`` 2-turn and
            ``(1, 1, 1, 1)`` 4-turn debate.
        k: capabilities ``(k_A, k_B)``: ints (top-k quantilisers, clamped to the options at
            each node, 1 = exact) or rank policies (``BestOfN(8)``, ``Uniform()``, ...); a single
            value applies to both players.
        rule: a registered rule, ``asym``, ``sym`` or ``last_b`` (see the module docstring).
        labels: true classes ``(n_images,)``; adds ``claim_correct`` and ``judge_accuracy``.
        chunk_images: images solved at once (default: sized to a few hundred MB).
        ranking: ``claim`` (each claim's own ranking of the options) or, in one-turn games,
            ``confidence`` (one ranking of the masks by the judge's confidence; see
            :data:`RANKINGS`).

    Returns:
        per-image arrays ``claim``, ``value`` and, with labels, ``claim_correct`` (bool) and
        ``judge_accuracy`` (float).
    """
    out = solve_capabilities(probs, n_cells, moves, [normalise_capability(k)], rule, labels,
                             chunk_images, ranking=ranking)  # fmt: skip
    return {key: arr[0] for key, arr in out.items()}
