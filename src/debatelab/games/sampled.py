"""Sampled candidate trees and their exact play: the search of on-policy judge training.

The trained-judge experiments of REFERENCE B (docs/trained-judges.md#search) give each
image a budget of judge evaluations (1,296 by default) and spend it on a candidate tree sampled
afresh at every step:

- consultancy ``(4,)``: 1,296 independent uniform masks of 4 cells;
- 2-turn debate ``(2, 2)``: 36 uniform A-pairs, and for *each* A-pair 36 B-pairs drawn from its
  34 remaining cells;
- 4-turn debate ``(1, 1, 1, 1)``: 6 cells per node at every level, each uniform among the cells
  not yet revealed on its path.

Siblings are independent draws (so they may repeat); cells are distinct within a play. All
classes share one tree; only the leaf values depend on the claim.

Which protocols there are, who moves at each turn and how many cells each move reveals, the
published branching and the rules all come from :mod:`debatelab.protocols` (any registered
``cells`` protocol runs here, e.g. ``debate3`` and ``consult_rebut``).

The search is exact minimax on that tree with the published tie rule, *ties to the first
index* (:data:`debatelab.protocols.TIE_RULES` ``"first"``, :data:`TIE_RULE`): the claim is
the first argmax of the root values over claim columns, and the realised
play descends by first argmax (A) / first argmin (B). (The game core's reducer splits tied mass
instead; it gives the same node values, tested in tests/test_sampled.py, but a trained judge
needs one realised play per image.) Everything is batched torch so that it runs where the
judge runs. :func:`exact_tree` is the tree that holds every candidate once, for the exact search.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod

import numpy as np
import torch

from ..geometry import all_masks
from ..protocols import PUBLISHED_BUDGET, TIE_RULES, Protocol, protocol_names
from ..protocols import protocol as find_protocol
from ..protocols import rule as find_rule

#: The tie rule of the trained-judge search: the first index (the published anchor).
TIE_RULE = "first"
assert TIE_RULE in TIE_RULES


def __getattr__(name: str):
    """Old names, derived from the registry: ``PROTOCOL_MOVES`` (cells per turn of each cell
    protocol) and ``RULES`` (the rule names)."""
    if name == "PROTOCOL_MOVES":
        return {n: find_protocol(n).moves for n in protocol_names("cells")}
    if name == "RULES":
        from ..protocols import rule_names

        return rule_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def cell_protocol(protocol: str | Protocol) -> Protocol:
    """The registered ``cells`` protocol of that name (one error listing them otherwise)."""
    return find_protocol(protocol, medium="cells")


def check_protocol(protocol: str | Protocol) -> tuple[int, ...]:
    """Cells per turn of a registered cell protocol."""
    return cell_protocol(protocol).moves


def branching_for(protocol: str | Protocol, budget: int = PUBLISHED_BUDGET) -> tuple[int, ...]:
    """Candidates per node at each turn for a budget of leaves per image: the protocol's
    published branching at the published budget (e.g. debate3's 12 x 12 x 9), else the budget
    spread evenly over the turns (:meth:`debatelab.protocols.Protocol.branching_for`)."""
    return cell_protocol(protocol).branching_for(budget)


@dataclass(frozen=True)
class CandidateTree:
    """A sampled candidate tree per image.

    ``paths`` ``(B, L, n_slots)``: the cells of every leaf's play in play order (L = the product
    of ``branching``, leaves in depth-first order), ``owners`` ``(n_slots,)``: the player (0 = A,
    1 = B) who revealed each slot.
    """

    paths: torch.Tensor
    branching: tuple[int, ...]
    moves: tuple[int, ...]
    players: tuple[str, ...] | None = None
    """The player to move at each turn (None: A, B, A, ... alternating)."""

    @property
    def turn_players(self) -> tuple[str, ...]:
        if self.players is not None:
            return self.players
        return tuple("AB"[t % 2] for t in range(len(self.moves)))

    @property
    def maximize(self) -> tuple[bool, ...]:
        """Whether the player to move at each turn maximises (A) or minimises (B)."""
        return tuple(p == "A" for p in self.turn_players)

    @property
    def one_sided(self) -> bool:
        """Only A moves (consultancy): every cell is shown in one channel group."""
        return all(p == "A" for p in self.turn_players)

    @property
    def owners(self) -> torch.Tensor:
        return torch.cat([torch.full((m,), 0 if p == "A" else 1)
                          for p, m in zip(self.turn_players, self.moves, strict=True)])  # fmt: skip

    @property
    def n_leaves(self) -> int:
        return prod(self.branching)


def check_branching(protocol: str, branching) -> tuple[int, ...]:
    """Candidates per node at each turn, given explicitly (e.g. CIFAR-10's 4-turn (4, 4, 3, 3)
    of the argument-channel runs): one positive count per turn of ``protocol``."""
    moves = check_protocol(protocol)
    branching = tuple(int(n) for n in branching)
    if len(branching) != len(moves) or min(branching) < 1:
        raise ValueError(f"{protocol} has {len(moves)} turn(s): give that many positive "
                         f"candidate counts per node, got {branching}")  # fmt: skip
    return branching


def sample_tree(protocol: str, n_images: int, generator: torch.Generator, n_cells: int = 36,
                budget: int = 1296, device="cpu", branching=None) -> CandidateTree:  # fmt: skip
    """Draw one candidate tree per image (docs/trained-judges.md#search): at each turn, for each
    node, ``branching[t]`` independent uniform sets of ``moves[t]`` cells not yet revealed on the
    node's path. ``branching`` defaults to :func:`branching_for` the budget."""
    proto = cell_protocol(protocol)
    moves = proto.moves
    branching = (branching_for(proto, budget) if branching is None
                 else check_branching(protocol, branching))  # fmt: skip
    if sum(moves) > n_cells:
        raise ValueError(f"{protocol} reveals {sum(moves)} cells; the grid has {n_cells}")
    paths = torch.zeros((n_images, 0), dtype=torch.long, device=device)
    for t, m in enumerate(moves):
        shape = (n_images,) + branching[: t + 1]
        keys = torch.rand(shape + (n_cells,), generator=generator, device=device)
        used = paths.reshape((n_images,) + branching[:t] + (1, paths.shape[-1]))
        if used.shape[-1]:  # revealed cells on the path sort last
            keys.scatter_(-1, used.expand(shape + (used.shape[-1],)), 2.0)
        new = keys.topk(m, dim=-1, largest=False).indices
        paths = torch.cat([used.expand(shape + (used.shape[-1],)), new], dim=-1)
    return CandidateTree(paths.reshape(n_images, prod(branching), sum(moves)), branching, moves,
                         proto.players)  # fmt: skip


def exact_tree(protocol: str, n_images: int, n_cells: int = 36, device="cpu") -> CandidateTree:
    """The tree that holds every candidate once (``--search exact``): every mask of 4 cells
    (consultancy), every A-pair and every B-pair of the remaining cells (2-turn), every ordered
    reveal a1, b1, a2, b2 (4-turn); any protocol: at each turn every set of its cells among those
    not yet revealed, in combinations order, so the first-index tie rule prefers the lowest
    cells. The same for every image (``expand``ed)."""
    proto = cell_protocol(protocol)
    moves = proto.moves
    if sum(moves) > n_cells:
        raise ValueError(f"{protocol} reveals {sum(moves)} cells; the grid has {n_cells}")
    paths, branching = _exact_paths(moves, n_cells)
    paths = torch.from_numpy(paths).to(device)
    return CandidateTree(paths.expand(n_images, *paths.shape), branching, moves, proto.players)


@lru_cache(maxsize=8)
def _exact_paths(moves: tuple[int, ...], n_cells: int) -> tuple[np.ndarray, tuple[int, ...]]:
    """Every play of ``moves``: per turn every combination of the cells not yet revealed on the
    path (ascending), prefix-major (depth-first)."""
    paths = np.zeros((1, 0), dtype=np.int64)
    branching = []
    for m in moves:
        used = np.zeros((len(paths), n_cells), dtype=bool)
        np.put_along_axis(used, paths, True, axis=1)
        left = np.nonzero(~used)[1].reshape(len(paths), -1)  # ascending per row
        combos = all_masks(left.shape[1], m).astype(np.int64)
        new = left[:, combos]  # (P, C, m)
        prefix = np.broadcast_to(paths[:, None], new.shape[:2] + (paths.shape[1],))
        paths = np.concatenate([prefix, new], axis=-1).reshape(-1, paths.shape[1] + m)
        branching.append(len(combos))
    return paths, tuple(branching)


def control_groups(n_images: int, n_leaves: int, n_slots: int,
                   generator: torch.Generator, device="cpu") -> torch.Tensor:  # fmt: skip
    """A fresh uniform permutation per (image, candidate path): slot k goes to channel group
    ``perm[k]`` (the shuffled controls of §2)."""
    keys = torch.rand((n_images, n_leaves, n_slots), generator=generator, device=device)
    return keys.argsort(dim=-1)


def slot_groups(tree: CandidateTree, control: bool, generator: torch.Generator | None = None):
    """The channel group of every slot of every path, ``(B, L, n_slots)``: 0 for consultancy,
    the owner (A 0, B 1) for debate, a fresh permutation per path for a control."""
    b, n_leaves, n_slots = tree.paths.shape
    if control:
        if tree.one_sided:
            raise ValueError("controls shuffle debate plays; consultancy has none")
        if generator is None:
            raise ValueError("a control needs a generator for its permutations")
        return control_groups(b, n_leaves, n_slots, generator, tree.paths.device)
    owners = tree.owners.to(tree.paths.device)
    if tree.one_sided:
        owners = torch.zeros_like(owners)
    return owners.expand(b, n_leaves, n_slots)


def group_codes(paths: torch.Tensor, groups: torch.Tensor, n_cells: int = 36) -> torch.Tensor:
    """Plays as the trained judges' masks: ``(..., n_cells)`` int, 0 for a hidden cell and
    ``group + 1`` for a revealed one."""
    codes = torch.zeros(paths.shape[:-1] + (n_cells,), dtype=torch.long, device=paths.device)
    return codes.scatter_(-1, paths, groups + 1)


# ---------------------------------------------------------------------------------------------
# the argument channel: moves are (cell candidate, symbol) pairs (docs/trained-judges.md#channel)


def symbol_alphabets(protocol: str) -> tuple[int, ...]:
    """Symbols per decision: ``2 ** cells revealed at it``, one bit per revealed cell:
    consultancy (16,), 2-turn (4, 4), 4-turn (2, 2, 2, 2)."""
    return tuple(2**m for m in check_protocol(protocol))


def fold_symbols(leaves: torch.Tensor, branching: tuple[int, ...],
                 alphabets: tuple[int, ...]) -> tuple[torch.Tensor, tuple[int, ...]]:  # fmt: skip
    """Fold the codeword axis into the cells of the emitting turns.

    ``leaves`` ``(B, L, G, ...)``: the value of every cell path (depth-first, L = prod
    branching) under every codeword (G = prod alphabets, decision 1 most significant). Returns
    the leaves of the tree whose move at turn t is ``cell * V_t + symbol`` (branching
    ``n_t * V_t``), depth-first, and that branching. Each node's cell candidates are shared by
    its parent's symbols, as published."""
    b, n_leaves, n_words = leaves.shape[:3]
    rest = leaves.shape[3:]
    turns = len(branching)
    if n_leaves != prod(branching) or n_words != prod(alphabets) or len(alphabets) != turns:
        raise ValueError(f"leaves {tuple(leaves.shape[:3])} do not match branching {branching} "
                         f"and alphabets {alphabets}")  # fmt: skip
    x = leaves.reshape((b,) + tuple(branching) + tuple(alphabets) + rest)
    order = [0] + [a for t in range(turns) for a in (1 + t, 1 + turns + t)]
    order += list(range(1 + 2 * turns, x.dim()))
    folded = tuple(n * v for n, v in zip(branching, alphabets, strict=True))
    return x.permute(order).reshape((b, prod(folded)) + rest), folded


def unfold_leaf(index: torch.Tensor, branching: tuple[int, ...],
                alphabets: tuple[int, ...]) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """A leaf of the folded tree as (cell path index, codeword): the inverse of
    :func:`fold_symbols`."""
    cell = torch.zeros_like(index)
    word = torch.zeros_like(index)
    rest = index
    radices = [r for n, v in zip(branching, alphabets, strict=True) for r in (n, v)]
    digits = []
    for r in reversed(radices):
        digits.append(rest % r)
        rest = rest // r
    digits.reverse()
    for t, (n, v) in enumerate(zip(branching, alphabets, strict=True)):
        cell = cell * n + digits[2 * t]
        word = word * v + digits[2 * t + 1]
    return cell, word


# ---------------------------------------------------------------------------------------------
# leaf values of a rule and the exact search


def rule_leaves(scores: torch.Tensor, rule: str, conditioned: bool, consultancy: bool):
    """Leaf values ``(..., n_columns)`` of the minimax from a judge's scores.

    Unconditioned scores (design D1: the judge's class probabilities ``(..., K)``): asym
    ``p[c]``; sym ``p[d_A] - p[d_B]`` over the K x K columns ``d_A * K + d_B`` (d_B = d_A
    included); last_b ``p[d_A] - max_d p[d]``. Conditioned scores (D3 / D2: the judge's score of
    A's claim given the claim inputs, ``(..., K)`` for one claim or ``(..., K, K)`` for (d_A,
    d_B)): asym as they are; sym over the K x K columns; last_b ``min_{d_B}``, so B's class
    is chosen at the realised leaf. Consultancy (``consultancy``: a one-sided protocol) takes
    scores as they are. The rule is read by when B names its class
    (:attr:`debatelab.protocols.Rule.b_claims`), so a registered rule of the same kind works.
    """
    b_claims = find_rule(rule).b_claims
    if consultancy:
        return scores
    if not conditioned:
        if b_claims == "never":
            return scores
        if b_claims == "before_play":
            return (scores[..., :, None] - scores[..., None, :]).flatten(-2)
        return scores - scores.max(dim=-1, keepdim=True).values
    if b_claims == "never":
        return scores
    if b_claims == "before_play":
        return scores.flatten(-2)
    return scores.min(dim=-1).values


@dataclass(frozen=True)
class SampledPlay:
    """The exact play of each image's sampled tree."""

    claim: torch.Tensor
    """``(B,)`` A's claim (consultancy: the class at the chosen mask)."""
    b_claim: torch.Tensor | None
    """``(B,)`` B's class under sym (chosen at the root) and last_b (at the realised leaf of a
    conditioned judge; the judge's runner-up-or-best class otherwise), else None."""
    leaf: torch.Tensor
    """``(B,)`` index of the realised leaf (depth-first order)."""
    value: torch.Tensor
    """``(B,)`` the game value of the realised play."""


def _first_arg(x: torch.Tensor, maximize: bool) -> torch.Tensor:
    """First index of the max (min) along the last axis, whatever the backend's tie rule."""
    best = x.max(dim=-1, keepdim=True).values if maximize else x.min(dim=-1, keepdim=True).values
    hit = x == best
    return hit.to(torch.uint8).argmax(dim=-1)  # argmax of 0/1 returns the first 1


def _maximizers(branching: tuple[int, ...], maximize) -> tuple[bool, ...]:
    if maximize is None:  # A, B, A, ...
        return tuple(t % 2 == 0 for t in range(len(branching)))
    maximize = tuple(bool(m) for m in maximize)
    if len(maximize) != len(branching):
        raise ValueError(f"give who maximises at each of the {len(branching)} turns, got "
                         f"{maximize}")  # fmt: skip
    return maximize


def solve_tree(leaves: torch.Tensor, branching: tuple[int, ...], rule: str,
               n_classes: int = 10, maximize=None) -> SampledPlay:  # fmt: skip
    """Exact minimax of every image's sampled tree, ties to the first index (:data:`TIE_RULE`).

    ``leaves`` ``(B, L, n_columns)`` from :func:`rule_leaves` (L = prod(branching), leaves in
    depth-first order). ``maximize[t]``: whether the player of turn t maximises (A) or
    minimises (B), from the protocol (:attr:`CandidateTree.maximize`); default A, B, A, .... The claim column is
    the first argmax of the root values (under sym: ``max_{d_A} min_{d_B}`` over the K x K
    columns); consultancy (one turn) takes the first argmax over (mask, class), mask-major.
    """
    b, n_leaves, n_columns = leaves.shape
    if n_leaves != prod(branching):
        raise ValueError(f"{n_leaves} leaves per image, the tree has {prod(branching)}")
    rows = torch.arange(b, device=leaves.device)
    if len(branching) == 1:  # consultancy: argmax over (mask, class), mask-major
        flat = _first_arg(leaves.reshape(b, -1), maximize=True)
        leaf, claim = flat // n_columns, flat % n_columns
        return SampledPlay(claim, None, leaf, leaves[rows, leaf, claim])
    # node values per level, columns in front: values[t] is (B, n_columns, *branching[:t])
    tree = leaves.transpose(1, 2).reshape((b, n_columns) + tuple(branching))
    maximize = _maximizers(branching, maximize)
    values = [tree]
    for t in reversed(range(len(branching))):
        v = values[0]
        values.insert(0, v.amax(dim=-1) if maximize[t] else v.amin(dim=-1))
    root = values[0]  # (B, n_columns)
    b_claim = None
    if find_rule(rule).pair_columns:
        grid = root.reshape(b, n_classes, n_classes)
        claim = _first_arg(grid.amin(dim=-1), maximize=True)
        b_claim = _first_arg(grid[rows, claim], maximize=False)
        column = claim * n_classes + b_claim
    else:
        claim = column = _first_arg(root, maximize=True)
    node = [values[t + 1][rows, column] for t in range(len(branching))]
    index = torch.zeros(b, dtype=torch.long, device=leaves.device)
    for t, n in enumerate(branching):  # descend: index is the node's rank among its level
        children = node[t].reshape(b, -1, n)[rows, index]
        index = index * n + _first_arg(children, maximize=maximize[t])
    return SampledPlay(claim, b_claim, index, tree.reshape(b, n_columns, -1)[rows, column, index])


def solve_tree_policy(leaves: torch.Tensor, branching: tuple[int, ...], rule: str,
                      policies, generator: torch.Generator, n_classes: int = 10,
                      maximize=None) -> SampledPlay:  # fmt: skip
    """Play of every image's sampled tree under rank policies (quantilised debaters), through
    the game core's reducer (:func:`.core.solve` on :func:`.core.sampled_tree`).

    ``policies`` holds one rank policy per turn (root first). Node values are the policies'
    expected values (tied children share their rank block's mass); the claim is still the first
    argmax of the root values over claim columns (under sym: ``max_{d_A} min_{d_B}``), and the
    realised play is *drawn* turn by turn from the players' play weights with ``generator``.
    Consultancy (one turn): the claim is the class of best value under the policy, its mask
    drawn from the policy's weights.
    """
    import numpy as np

    from .core import sampled_tree, solve

    b, n_leaves, n_columns = leaves.shape
    maximize = _maximizers(branching, maximize)
    if any(m != (t % 2 == 0) for t, m in enumerate(maximize)):
        raise ValueError("quantilised debaters need alternating turns (A, B, A, ...): the game "
                         f"core's sampled tree alternates players; this protocol plays {maximize}")  # fmt: skip
    if len(policies) != len(branching):
        raise ValueError(f"give one rank policy per turn ({len(branching)}), got {len(policies)}")
    game = sampled_tree(branching)
    values = leaves.transpose(1, 2).double().cpu().numpy()  # (B, columns, L)
    solution = solve(game, values, policies)
    root = torch.from_numpy(solution.root_value[..., 0])  # (B, columns)
    rows = torch.arange(b)
    b_claim = None
    if find_rule(rule).pair_columns and len(branching) > 1:
        grid = root.reshape(b, n_classes, n_classes)
        claim = _first_arg(grid.amin(dim=-1), maximize=True)
        b_claim = _first_arg(grid[rows, claim], maximize=False)
        column = claim * n_classes + b_claim
    else:
        claim = column = _first_arg(root, maximize=True)
    index = torch.zeros(b, dtype=torch.long)
    for t, n in enumerate(branching):  # draw each turn's child from its play weights
        w = torch.from_numpy(np.ascontiguousarray(solution.weights[t]))  # (B, cols, nodes, n)
        probs = w[rows, column, index].clamp_min(0)
        pick = torch.multinomial(probs.float(), 1, generator=generator)[:, 0]
        index = index * n + pick
    value = torch.from_numpy(values)[rows, column, index].to(leaves.dtype)
    return SampledPlay(claim.to(leaves.device), None if b_claim is None else
                       b_claim.to(leaves.device), index.to(leaves.device),
                       value.to(leaves.device))  # fmt: skip
