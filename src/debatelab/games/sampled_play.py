"""One step of the on-policy loop and the per-epoch evaluation
(docs/trained-judges.md#training-loop), for any judge of the
:class:`debatelab.interfaces.ClaimJudge` protocol.

:func:`play` samples each image's candidate tree (or, with ``search="exact"``, takes the tree of
every candidate), scores every leaf with the judge (no grad; the exact tree through the judge's
factorised scores of its whole universe of plays), solves it exactly (ties to the first index)
and returns the realised play: the cells with their channel groups, A's claim and B's class,
ready for the judge's one forward on it.
:func:`evaluate_trained_judge` runs it over a test set and returns selection accuracy, judge
accuracy and belief.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass
from functools import lru_cache
from math import prod

import numpy as np
import torch

from ..geometry import LabelledMasks
from ..interfaces import ClaimJudge
from ..policies import TopK
from ..progress import progress as progress_bar
from ..protocols import Protocol
from ..protocols import rule as find_rule
from .sampled import (
    CandidateTree,
    _exact_paths,
    cell_protocol,
    exact_tree,
    fold_symbols,
    group_codes,
    rule_leaves,
    sample_tree,
    slot_groups,
    solve_tree,
    solve_tree_policy,
    symbol_alphabets,
    unfold_leaf,
)

SEARCHES = ("sampled", "exact")
SCORERS = ("batched", "factorised")


def __getattr__(name: str):
    """``PROTOCOL_OF_MOVES``, the old name: each cell protocol by its cells per turn."""
    if name == "PROTOCOL_OF_MOVES":
        from ..protocols import protocol, protocol_names

        return {protocol(n).moves: n for n in protocol_names("cells")}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class Play:
    """The realised play of each image of a batch."""

    codes: torch.Tensor
    """``(B, n_cells)`` the revealed cells' channel groups + 1 (0 hidden): the judge's mask."""
    claim: torch.Tensor
    """``(B,)`` A's claim."""
    b_claim: torch.Tensor | None
    """``(B,)`` B's class (sym; last_b for a judge that reads it), else None."""
    queries: torch.Tensor | None
    """``(B, n_queries)`` the class one-hots the judge reads (D3, D2), else None."""
    value: torch.Tensor
    """``(B,)`` the game value of the realised play."""
    codeword: torch.Tensor | None = None
    """``(B,)`` the play's codeword on the argument channel (decision 1 most significant), for
    a judge that reads bits; else None."""


def family_of(protocol: str | Protocol, control: bool) -> str:
    """The input groups a judge of these plays reads: consultancy (a one-sided protocol: one
    group), debate (A's cells, B's cells) or control (every revealed cell its own group, in a
    fresh order per play)."""
    proto = cell_protocol(protocol)
    if control and proto.one_sided:
        raise ValueError(f"controls shuffle debate plays; {proto.name} has none (only A moves)")
    return "control" if control else ("consultancy" if proto.one_sided else "debate")


def claims_read(protocol: str | Protocol, rule: str) -> int:
    """Classes named in a game of ``protocol`` under ``rule``: A's claim alone (one-sided, or B
    names none), or A's and B's."""
    proto = cell_protocol(protocol)
    return 1 if proto.one_sided or find_rule(rule).b_claims == "never" else 2


def check_judge(judge: ClaimJudge, protocol: str | Protocol, rule: str, control: bool) -> None:
    """The judge must read the inputs of this protocol family (and, when it reads the claims,
    as many class queries as the rule names)."""
    proto = cell_protocol(protocol)
    family = family_of(proto, control)
    if judge.family != family:
        raise ValueError(f"this judge reads {judge.family} inputs; {proto.name}"
                         f"{' control' if control else ''} plays give {family} inputs")  # fmt: skip
    want = claims_read(proto, rule)  # d_A, or d_A and d_B
    if judge.conditioned and judge.n_queries != want:
        raise ValueError(f"this {judge.design} judge reads {judge.n_queries} class one-hot(s); "
                         f"{proto.name} under {rule} needs {want}")  # fmt: skip


def family_universe(family: str, n_cells: int, a_cells: int = 2, b_cells: int = 2) -> LabelledMasks:
    """Every input a judge of this protocol family can see: the masks of ``a_cells + b_cells``
    cells (consultancy), their splits into A's ``a_cells`` and B's ``b_cells`` (debate: the
    judge reads A's and B's cells, not the order), or every assignment of the cells to as many
    groups (control). The default 2 + 2 is the seed protocols'; :func:`protocol_universe`
    derives them from a protocol."""
    total = a_cells + b_cells
    if family == "consultancy":
        return LabelledMasks.masks(n_cells, total)
    if family == "debate":
        return LabelledMasks.splits(n_cells, a_cells, b_cells)
    if family == "control":
        return LabelledMasks.permuted(n_cells, total)
    raise ValueError(f"unknown protocol family {family!r}")


def protocol_universe(protocol: str | Protocol, control: bool, n_cells: int) -> LabelledMasks:
    """Every input a judge of ``protocol``'s plays can see, from the cells each player reveals
    (:meth:`debatelab.protocols.Protocol.reveals_of`)."""
    proto = cell_protocol(protocol)
    return family_universe(family_of(proto, control), n_cells, proto.reveals_of("A"),
                           proto.reveals_of("B"))  # fmt: skip


def tree_universe(tree: CandidateTree, family: str, n_cells: int) -> LabelledMasks:
    """The universe of a tree's plays as a judge of ``family`` reads them."""
    a = sum(m for p, m in zip(tree.turn_players, tree.moves, strict=True) if p == "A")
    return family_universe(family, n_cells, a, sum(tree.moves) - a)


@lru_cache(maxsize=4)
def _shared_index(moves: tuple[int, ...], players: tuple[str, ...], family: str,
                  n_cells: int) -> torch.Tensor:  # fmt: skip
    """Universe index of every leaf of the exact tree when the groups are the players'."""
    paths, branching = _exact_paths(moves, n_cells)
    tree = CandidateTree(torch.from_numpy(paths)[None], branching, moves, players)
    groups = slot_groups(tree, control=False)
    index = tree_universe(tree, family, n_cells).rank(tree.paths[0].numpy(), groups[0].numpy())
    return torch.from_numpy(index)


def default_scorer(device: torch.device | str) -> str:
    """The faster way to score a sampled tree's leaves where it was measured: the factorised
    trunk on CPU (benchmarks/bench_onpolicy.py), the batched forward elsewhere."""
    return "factorised" if torch.device(device).type == "cpu" else "batched"


def tree_scores(judge: ClaimJudge, images: torch.Tensor, tree: CandidateTree,
                groups: torch.Tensor, search: str = "sampled",
                autocast: bool = False, scorer: str = "batched") -> torch.Tensor:  # fmt: skip
    """The judge's claim scores of every leaf ``(B, L, ...)`` (no grad, in the judge's current
    train/eval mode). ``sampled``: with ``scorer="batched"`` one batched forward on each leaf's
    masked image (``autocast``: in float16); with ``"factorised"`` the factorised trunk on just
    the tree's leaves (fp32). ``exact``: the judge's scores on its family's whole universe (the
    factorised trunk), gathered at each leaf's index. All equal up to float rounding."""
    if search not in SEARCHES:
        raise ValueError(f"unknown search {search!r}; available: {', '.join(SEARCHES)}")
    if scorer not in SCORERS:
        raise ValueError(f"unknown scorer {scorer!r}; available: {', '.join(SCORERS)}")
    b, n_leaves = tree.paths.shape[:2]
    if search == "sampled" and scorer == "factorised":
        universe = tree_universe(tree, judge.family, judge.n_cells)
        index = universe.rank(tree.paths.cpu().numpy(), groups.cpu().numpy())
        with torch.no_grad():
            return judge.universe_scores(images, universe, torch.from_numpy(index).to(
                images.device)).float()  # fmt: skip
    if search == "exact":
        universe = tree_universe(tree, judge.family, judge.n_cells)
        if judge.family == "control":
            index = universe.rank(tree.paths.cpu().numpy(), groups.cpu().numpy())
            index = torch.from_numpy(index)
        else:
            index = _shared_index(tree.moves, tree.turn_players, judge.family,
                                  judge.n_cells).expand(b, n_leaves)  # fmt: skip
        with torch.no_grad():
            every = judge.universe_scores(images, universe).float()  # (B, U, ...)
        rows = torch.arange(b, device=every.device)[:, None]
        return every[rows, index.to(every.device)]
    codes = group_codes(tree.paths, groups, judge.n_cells).to(images.device)  # (B, L, n_cells)
    values = images[:, None].expand((b, n_leaves) + images.shape[1:]).flatten(0, 1)
    cast = (torch.autocast(images.device.type, dtype=torch.float16) if autocast
            else nullcontext())  # fmt: skip
    with torch.no_grad(), cast:
        scores = judge.claim_scores(values, codes.flatten(0, 1)).float()
    return scores.reshape((b, n_leaves) + scores.shape[1:])


def play(judge: ClaimJudge, images: torch.Tensor, protocol: str | Protocol, rule: str,
         control: bool,
         generator: torch.Generator, budget: int = 1296, autocast: bool = False,
         capability: int | None = None, search: str = "sampled",
         branching: tuple[int, ...] | None = None, scorer: str = "batched") -> Play:  # fmt: skip
    """Build the tree, score (no grad, in the judge's current train/eval mode), solve and
    realise.

    ``branching`` gives the cell candidates per node explicitly instead of ``budget``. A judge
    that reads bits (the argument channel, docs/trained-judges.md#channel) scores every codeword
    of every cell path; each turn's symbol is folded into its cell moves
    (:func:`.sampled.fold_symbols`), so the same minimax chooses cells and symbols, and the play
    carries its codeword.

    ``search``: ``sampled`` (the published anchor: a fresh candidate tree of ``budget`` leaves
    per image) or ``exact`` (every candidate: :func:`.sampled.exact_tree`, scored by the
    factorised trunk, image by image). ``capability`` k makes both debaters top-k
    quantilisers at every turn (the rank policies of the frozen sweep; the play is drawn from
    their weights); None (the published anchor) is exact play with ties to the first index.
    ``scorer`` scores a sampled tree's leaves (:func:`tree_scores`). An unknown ``search`` or
    ``scorer`` is refused by :func:`tree_scores`. ``protocol``: any registered cell protocol
    (:mod:`debatelab.protocols`); who maximises at each turn is its players'."""
    proto = cell_protocol(protocol)
    b_claims = find_rule(rule).b_claims
    b, n_cells = len(images), judge.n_cells
    bits = getattr(judge, "n_bits", 0)
    if search == "exact" and bits:
        raise ValueError("the exact search does not take the argument channel; use sampled")
    if search == "exact" and b > 1:  # a universe of scores per image: one at a time
        parts = [play(judge, images[i : i + 1], proto, rule, control, generator, budget,
                      autocast, capability, search) for i in range(b)]  # fmt: skip
        return Play(*(None if getattr(parts[0], f) is None
                      else torch.cat([getattr(q, f) for q in parts])
                      for f in ("codes", "claim", "b_claim", "queries", "value")))  # fmt: skip
    if search == "exact":
        tree = exact_tree(proto, b, n_cells, generator.device)
    else:
        tree = sample_tree(proto, b, generator, n_cells, budget, generator.device, branching)
    groups = slot_groups(tree, control, generator)  # drawn where the generator lives
    scores = tree_scores(judge, images, tree, groups, search, autocast, scorer)  # (B, L, [G,] ...)
    leaves = rule_leaves(scores, rule, judge.conditioned, proto.one_sided)
    moves = tree.branching
    if bits:
        alphabets = symbol_alphabets(proto)
        if 2**bits != prod(alphabets):
            raise ValueError(f"{proto.name} plays carry {prod(alphabets)} codewords; this judge "
                             f"reads {bits} bits ({2**bits})")  # fmt: skip
        leaves, moves = fold_symbols(leaves, tree.branching, alphabets)
    if capability is None:
        solved = solve_tree(leaves, moves, rule, judge.n_classes, tree.maximize)
    else:
        policies = [TopK(capability)] * len(moves)
        solved = solve_tree_policy(leaves, moves, rule, policies, generator, judge.n_classes,
                                   tree.maximize)  # fmt: skip
    rows = torch.arange(b, device=images.device)
    leaf, codeword = solved.leaf, None
    if bits:
        leaf, codeword = unfold_leaf(solved.leaf, tree.branching, alphabets)
    b_claim = solved.b_claim
    if b_claims == "after_play" and judge.conditioned and not proto.one_sided:
        at_leaf = scores[rows, leaf] if codeword is None else scores[rows, leaf, codeword]
        at_leaf = at_leaf[rows, solved.claim]  # (B, K): B's class minimises belief
        b_claim = (at_leaf == at_leaf.min(dim=-1, keepdim=True).values).to(torch.uint8).argmax(-1)
    queries = None
    if judge.conditioned:
        queries = (solved.claim[:, None] if judge.n_queries == 1
                   else torch.stack([solved.claim, b_claim], dim=1))  # fmt: skip
    leaf = leaf.to(tree.paths.device)
    at = torch.arange(b, device=tree.paths.device)
    codes = group_codes(tree.paths[at, leaf], groups[at, leaf], n_cells).to(images.device)
    return Play(codes, solved.claim, b_claim, queries, solved.value, codeword)


def _checked_labels(judge, images, labels, protocol, rule, control, search, batch, capability):
    if search not in SEARCHES:
        raise ValueError(f"unknown search {search!r}; available: {', '.join(SEARCHES)}")
    check_judge(judge, protocol, rule, control)
    labels = torch.as_tensor(np.asarray(labels), dtype=torch.long)
    if len(labels) != len(images):
        raise ValueError(f"{len(images)} images but {len(labels)} labels")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    if capability is not None and capability < 1:
        raise ValueError(f"capability is a top-k quantiliser's k >= 1, got {capability}")
    return labels


def realised_plays(judge: ClaimJudge, images: torch.Tensor, labels, *, protocol: str, rule: str,
                   control: bool = False, search: str = "sampled", budget: int = 1296,
                   seed: int = 0, batch: int = 32, progress: bool = False,
                   capability: int | None = None, branching: tuple[int, ...] | None = None,
                   scorer: str | None = None):  # fmt: skip
    """Per batch of ``batch`` images (judge in eval mode, a fresh sampled tree per batch): the
    images, labels, realised :class:`Play` and the judge's fp32 logits on it, as
    ``(x, y, play, logits)``. The evaluation and the channel diagnostics read these.
    ``scorer``: how the sampled leaves are scored (default: :func:`default_scorer` of the
    images' device)."""
    scorer = scorer or default_scorer(images.device)
    labels = _checked_labels(judge, images, labels, protocol, rule, control, search, batch,
                             capability)  # fmt: skip
    generator = torch.Generator(device=images.device).manual_seed(seed)
    judge.model.eval()
    bar = progress_bar(total=len(images), enabled=progress, desc="evaluate", unit="img")
    for i in range(0, len(images), batch):
        x, y = images[i : i + batch], labels[i : i + batch].to(images.device)
        p = play(judge, x, protocol, rule, control, generator, budget, capability=capability,
                 search=search, branching=branching, scorer=scorer)  # fmt: skip
        with torch.no_grad():
            logits = judge.logits(x, p.codes, p.queries, p.codeword).float()
        yield x, y, p, logits
        bar.update(len(y))
    bar.close()


def evaluate_trained_judge(judge: ClaimJudge, images: torch.Tensor, labels, *,
                           protocol: str, rule: str, control: bool = False,
                           search: str = "sampled", budget: int = 1296, seed: int = 0,
                           batch: int = 32, progress: bool = False,
                           capability: int | None = None,
                           branching: tuple[int, ...] | None = None,
                           scorer: str | None = None) -> dict[str, float]:  # fmt: skip
    """Selection accuracy, judge accuracy and belief (fractions) of a trained judge on
    ``images`` ``(N, C, S, S)`` (preprocessed) with ``labels`` ``(N,)``: per batch of ``batch``
    images, a fresh sampled tree, the exact search in eval mode, then one fp32 forward on the
    realised play (``capability``: top-k quantilised debaters, see :func:`play`; ``scorer``:
    see :func:`realised_plays`). A judge that reads no claim (D1) has no belief (its
    consultancy claim is the class at the chosen mask); a ``binary`` judge (D2: one logit,
    P(A's claim is right)) has no judge accuracy, belief only."""
    sums = {"selection": 0.0, "judge": 0.0, "belief": 0.0}
    for _, y, p, logits in realised_plays(
        judge, images, labels, protocol=protocol, rule=rule, control=control, search=search,
        budget=budget, seed=seed, batch=batch, progress=progress, capability=capability,
        branching=branching, scorer=scorer,
    ):  # fmt: skip
        sums["selection"] += (p.claim == y).sum().item()
        if judge.binary:
            sums["belief"] += torch.sigmoid(logits[:, 0]).sum().item()
        else:
            sums["judge"] += (logits.argmax(dim=-1) == y).sum().item()
            if judge.conditioned:
                rows = torch.arange(len(y), device=y.device)
                sums["belief"] += torch.softmax(logits, -1)[rows, p.claim].sum().item()
    n = len(images)
    out = {"selection_accuracy": sums["selection"] / n}
    if not judge.binary:
        out["judge_accuracy"] = sums["judge"] / n
    if judge.conditioned:
        out["belief"] = sums["belief"] / n
    out["n_images"] = n
    return out


def channel_diagnostics(judge: ClaimJudge, images: torch.Tensor, labels, *, protocol: str,
                        rule: str, budget: int = 1296, seed: int = 0, batch: int = 64,
                        branching: tuple[int, ...] | None = None,
                        progress: bool = False) -> dict:  # fmt: skip
    """The argument channel's diagnostics (docs/trained-judges.md#channel) on a fresh test pass of
    a judge that reads bits: selection / judge accuracy and belief; the plug-in entropy of the
    codeword (bits, out of 4) and its counts; the randomised-bit ablation (the same plays, claims
    and d_B with a uniform random codeword: change in judge accuracy and belief); and per bit
    (most significant first) P(b = 1), H(b), I(b; claim), I(b; y), I(b; y | claim) in bits,
    each also divided by H(b) (NaN where H(b) = 0)."""
    from ..codewords import codeword_bits
    from ..information import (
        binary_entropy,
        conditional_mutual_information,
        entropy_of_counts,
        mutual_information,
    )

    n_bits = getattr(judge, "n_bits", 0)
    if not n_bits:
        raise ValueError("channel diagnostics need a judge that reads bits (an arm with bits)")
    noise = torch.Generator(device=images.device).manual_seed(seed + 7919)
    rec = {k: [] for k in ("claim", "y", "word", "hit", "belief", "hit_r", "belief_r")}
    for x, y, p, logits in realised_plays(
        judge, images, labels, protocol=protocol, rule=rule, budget=budget, seed=seed,
        batch=batch, progress=progress, branching=branching,
    ):  # fmt: skip
        rows = torch.arange(len(y), device=y.device)
        random_words = torch.randint(0, 2**n_bits, (len(y),), generator=noise,
                                     device=images.device)  # fmt: skip
        with torch.no_grad():
            ablated = judge.logits(x, p.codes, p.queries, random_words).float()
        for name, lg in (("", logits), ("_r", ablated)):
            rec["hit" + name].append((lg.argmax(-1) == y).cpu())
            rec["belief" + name].append(torch.softmax(lg, -1)[rows, p.claim].cpu())
        rec["claim"].append(p.claim.cpu())
        rec["y"].append(y.cpu())
        rec["word"].append(p.codeword.cpu())
    r = {k: torch.cat(v).numpy() for k, v in rec.items()}
    counts = np.bincount(r["word"], minlength=2**n_bits)
    out = {
        "selection_accuracy": float((r["claim"] == r["y"]).mean()),
        "judge_accuracy": float(r["hit"].mean()),
        "belief": float(r["belief"].mean()),
        "codeword_entropy": entropy_of_counts(counts),
        "codeword_counts": counts.tolist(),
        "ablation_judge_accuracy_change": float(r["hit_r"].mean() - r["hit"].mean()),
        "ablation_belief_change": float(r["belief_r"].mean() - r["belief"].mean()),
        "n_images": len(r["y"]),
        "bits": [],
    }
    planes = codeword_bits(torch.from_numpy(r["word"]), n_bits).numpy().astype(np.int64)
    for j in range(n_bits):
        b = planes[:, j]
        h = binary_entropy(float(b.mean()))
        row = {"p_one": float(b.mean()), "entropy": h,
               "mi_claim": mutual_information(b, r["claim"]),
               "mi_label": mutual_information(b, r["y"]),
               "mi_label_given_claim": conditional_mutual_information(b, r["y"], r["claim"])}  # fmt: skip
        for k in ("mi_claim", "mi_label", "mi_label_given_claim"):
            row[k + "_normalised"] = row[k] / h if h > 0 else float("nan")
        out["bits"].append(row)
    return out
