"""The on-policy trained judges of REFERENCE B: designs D1, D3 and D2
(docs/trained-judges.md#designs).

- **D1**: the frozen judge's CNN (:class:`.cnn.JudgeCNN`) on ``groups x C`` input channels; it
  never sees a class.
- **D3**: a narrower trunk (Conv 32 - Conv 32, 512 features) projected to 64 features, and a
  head that also reads A's claim as a one-hot (and B's class under sym and last_b):
  ``[projection, onehot(d_A)(, onehot(d_B))] -> Linear 64 - ReLU - Dropout 0.3 - Linear 10``.
  The leaf score is the head's softmax at A's claim.
- **D2**: D3 with a one-logit head read through a sigmoid: P(A's claim is correct).

Input encodings: channel group ``g`` of the input holds the image on the cells whose code is
``g + 1`` (consultancy: one group; debate: A's cells, B's cells; control: the four revealed
cells in a fresh order per play). Masks are therefore integer cell codes ``(B, n_cells)``,
0 = hidden (:func:`debatelab.games.sampled.group_codes`).

:class:`OnPolicyJudge` wraps a model as a :class:`debatelab.interfaces.Judge` and scores every
claim (column) of many plays at once; :func:`load_published_judge` reads the published
checkpoints (:mod:`.published` says where they come from).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import nn

from ..codewords import codeword_bits
from ..data import check_variant, data_revision
from ..geometry import Grid, LabelledMasks
from ..protocols import protocol as find_protocol
from ..protocols import rule as find_rule
from ..resume import settings_key
from .allmask import factorised_outputs
from .cnn import ClaimJudgeCNN  # noqa: F401  (its old home)
from .designs import _D1_KEYS, _D3_KEYS, JudgeDesign, design_names, design_of_tag  # noqa: F401
from .designs import design as find_design


def __getattr__(name: str):
    """``DESIGNS`` (the sweeps' designs) and ``ALL_DESIGNS`` (every registered design), the old
    names, read from :data:`.designs.JUDGE_DESIGNS`."""
    if name == "DESIGNS":
        return design_names(sweep=True)
    if name == "ALL_DESIGNS":
        return design_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Rule names in the published file names.
RULE_FILE_NAMES = {"asym": "asym", "sym": "sym", "last_b": "lastdig"}
#: Turns in the published file names of the study's debates.
PUBLISHED_TURNS = {"debate2": "2", "debate4": "4"}
#: Input channel groups per protocol family.
GROUPS = {"consultancy": 1, "debate": 2, "control": 4}


def n_queries(design: str | JudgeDesign, rule: str, protocol: str) -> int:
    """Class one-hots the head of ``design`` reads (:meth:`.designs.JudgeDesign.queries`): none
    for D1; d_A for consultancy and asym; d_A and d_B for sym and last_b."""
    return find_design(design).queries(protocol, rule)


def make_model(design: str | JudgeDesign, channels: int, groups: int, queries: int,
               image_size: int = 18, n_bits: int = 0):  # fmt: skip
    """A fresh model of ``design`` for ``channels``-channel images in ``groups`` groups (a design
    that reads bits takes ``n_bits`` raw bits in its head; 0 for a nested control or a
    baseline): :meth:`.designs.JudgeDesign.build`."""
    return find_design(design).build(channels, groups, queries, image_size, n_bits)


def encode(images: torch.Tensor, codes: torch.Tensor, groups: int, grid: Grid) -> torch.Tensor:
    """Judge input ``(B, groups * C, S, S)`` from images ``(B, C, S, S)`` and cell codes
    ``(B, n_cells)`` (0 hidden, g + 1 in group g): group g shows the image on its cells."""
    onehot = F.one_hot(codes, groups + 1)[..., 1:].to(images.dtype)  # (B, n_cells, G)
    side, cell = grid.grid, grid.cell_size
    pix = onehot.transpose(1, 2).reshape(-1, groups, side, side)
    pix = pix.repeat_interleave(cell, dim=2).repeat_interleave(cell, dim=3)  # (B, G, S, S)
    return (pix[:, :, None] * images[:, None]).flatten(1, 2)


@dataclass
class OnPolicyJudge:
    """A trained judge of one design, protocol family and rule, behind the judge interface.

    ``logits(values, mask, claims)``: the model's logits on images ``values (B, C, S, S)`` whose
    revealed cells carry their channel group in ``mask (B, n_cells)`` (0 hidden), with the class
    queries ``claims (B, n_queries)`` for D3 / D2. ``claim_scores`` scores every claim column of
    many plays at once (the search's leaves).
    """

    design: str
    model: nn.Module
    family: str
    rule: str
    grid: Grid
    channels: int = 1
    max_batch: int = 16000
    evaluations: int = 0

    def __post_init__(self):
        self.spec = find_design(self.design)
        if self.family not in GROUPS:
            raise ValueError(
                f"unknown protocol family {self.family!r}; choose among {list(GROUPS)}"
            )
        # channels-last convolutions run about twice as fast on CPU (oneDNN), same numbers
        self.model.to(memory_format=torch.channels_last)

    @property
    def n_classes(self) -> int:
        return 10

    @property
    def n_cells(self) -> int:
        return self.grid.n_cells

    @property
    def groups(self) -> int:
        return GROUPS[self.family]

    @property
    def conditioned(self) -> bool:
        """Whether the judge reads the claim (D3, D2, the bit judges of the arms)."""
        return self.n_queries > 0

    @property
    def binary(self) -> bool:
        """One logit, P(A's claim is right) (D2): a belief, no class prediction."""
        return self.spec.binary

    @property
    def n_queries(self) -> int:
        return getattr(self.model, "n_queries", 0)

    @property
    def n_bits(self) -> int:
        """Raw bits the judge reads beside the cells (4 on the argument channel, else 0)."""
        return getattr(self.model, "n_bits", 0)

    def inputs(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = encode(values, mask, self.groups, self.grid)
        return x.contiguous(memory_format=torch.channels_last)

    def logits(self, values: torch.Tensor, mask: torch.Tensor,
               claims: torch.Tensor | None = None,
               codewords: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """Logits ``(B, 10)`` (D1, D3, bit) or ``(B, 1)`` (D2) of one play per image; a judge
        on the argument channel also reads each play's ``codewords (B,)``."""
        if self.conditioned and (claims is None or claims.shape[-1] != self.n_queries):
            raise ValueError(f"design {self.design} reads {self.n_queries} class queries per "
                             "play; pass claims (B, n_queries)")  # fmt: skip
        if self.n_bits and (codewords is None or codewords.shape != (len(values),)):
            raise ValueError(f"this judge reads each play's codeword ({self.n_bits} bits); "
                             "pass codewords (B,)")  # fmt: skip
        out = []
        for i in range(0, len(values), self.max_batch):
            x = self.inputs(values[i : i + self.max_batch], mask[i : i + self.max_batch])
            q = None if claims is None else claims[i : i + self.max_batch]
            bits = None
            if self.n_bits:
                bits = codeword_bits(codewords[i : i + self.max_batch], self.n_bits).to(x)
            out.append(self.spec.forward(self.model, x, q, bits))
        self.evaluations += len(values)
        return torch.cat(out)

    @property
    def first_linear(self) -> nn.Linear:
        """The layer that reads the conv trunk (D1: fc1; D3 / D2: the projection)."""
        return self.spec.first_linear(self.model)

    def _trunk(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.trunk(x)

    def scores_from_hidden(self, h: torch.Tensor) -> torch.Tensor:
        """Claim scores (as :meth:`claim_scores`) from the first linear layer's pre-activation
        ``h (n, H)``: the network after its conv trunk (the design's factorised scorer)."""
        return self.spec.scores_from_hidden(self.model, h)

    def _chunk(self) -> int:
        """Plays per chunk: two queries score K x K head rows per play, bits 2 ** n_bits times
        that."""
        step = self.max_batch if self.n_queries < 2 else max(1, self.max_batch // 16)
        return max(1, step >> self.n_bits)

    def claim_scores(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Scores of every claim column for each play, the search's leaf scores: D1 the class
        probabilities ``(B, K)``; D3 ``p(d_A | play, d_A[, d_B])`` and D2 ``sigmoid`` of its
        logit, ``(B, K)`` or ``(B, K, K)`` over (d_A, d_B); a judge that reads bits scores
        every codeword too, ``(B, G, K[, K])``."""
        out = []
        step = self._chunk()  # two queries: K x K head rows per play
        for i in range(0, len(values), step):
            x = self.inputs(values[i : i + step], mask[i : i + step])
            h = self.first_linear(self._trunk(x).flatten(1))
            out.append(self.scores_from_hidden(h))
        self.evaluations += len(values)
        return torch.cat(out)

    def universe_scores(self, values: torch.Tensor, universe: LabelledMasks,
                        index: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """:meth:`claim_scores` of every play of ``universe`` on each image, ``(B, len(universe),
        K[, K])``, by the factorised trunk (:func:`.allmask.factorised_outputs`): the exact
        search's leaves; with ``index`` ``(B, L)`` only those plays of each image, ``(B, L,
        ...)`` (a sampled tree's leaves). Universe labels are channel groups + 1, as the masks'
        codes."""
        if universe.groups != self.groups or universe.n_cells != self.n_cells:
            raise ValueError(f"plays in {universe.groups} group(s) on {universe.n_cells} cells "
                             f"do not fit a {self.family} judge ({self.groups} group(s), "
                             f"{self.n_cells} cells)")  # fmt: skip
        out = factorised_outputs(self.model, self.first_linear, values, universe,
                                 self.scores_from_hidden, self.grid.grid, self._chunk(), index)  # fmt: skip
        self.evaluations += out.shape[0] * out.shape[1]
        return out


def published_seed(design: str, protocol: str, rule: str, control: bool) -> int:
    """The seed of §5: D1 consultancy 0, then ``1 + 10 r + k``; D3 / D2 consultancy 0, then
    ``1 + 4 r + k`` (the design's ``seed_stride``); r indexes (asym, sym, last_b) and k (2-turn
    debate, 4-turn debate, 2-turn control, 4-turn control). A protocol the study did not run
    takes the seed of the 4-turn debate (its tree differs); a one-sided one consultancy's 0."""
    if find_protocol(protocol).one_sided:
        return 0
    r = ("asym", "sym", "last_b").index(rule)
    k = (0 if protocol == "debate2" else 1) + (2 if control else 0)
    return 1 + find_design(design).seed_stride * r + k


@dataclass
class OnPolicyConfig:
    """Settings of one on-policy trained judge."""

    family: ClassVar[str] = "onpolicy"

    design: str = "D1"
    """Judge design (:data:`.designs.JUDGE_DESIGNS`): D1 (never sees a class), D3 (reads the
    claims), D2 (P(claim correct)), bit (the argument channel)."""
    variant: str = "mnist"
    """Dataset variant."""
    protocol: str = "debate2"
    """A cell protocol of :mod:`debatelab.protocols`: consultancy, debate2, debate4, debate3,
    consult_rebut, ..."""
    rule: str = "asym"
    """asym, sym or last_b (consultancy: asym)."""
    control: bool = False
    """The shuffled control: the same cells in four channel groups in a fresh order per play."""
    seed: int | None = None
    """Seed of the weights, batch order, candidate draws and dropout (default: the published
    seed of this judge, §5)."""
    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    gamma: float = 0.85
    """ExponentialLR decay, applied once per epoch."""
    budget: int = 1296
    """Judge evaluations (tree leaves) per image per step: 1,296 = 1,296 masks = 36 x 36 =
    6^4; any number that is a square and a fourth power (16, 81, 256, 625, 1296)."""
    train_limit: int | None = None
    """Train on the first N training images (None: all)."""
    eval_images: str = "all"
    """Test images evaluated after every epoch: 'all', 'N', 'a:b' or 'a:b:step'."""
    eval_batch: int = 32
    capability: int | None = None
    """Debaters' capability: top-k quantilisers at every turn of the sampled tree (None: exact
    play, the published anchor)."""
    autocast: bool = True
    """Score the search's leaves in float16 autocast on CUDA, as published (never on CPU)."""
    search: str = "sampled"
    """sampled: the published candidate trees of ``budget`` leaves; exact: every candidate
    (every mask, every pair split, every ordered reveal), scored by the factorised trunk."""
    bits: bool = False
    """The argument channel (design bit only): every decision also emits a symbol, one bit per
    cell it reveals, and the judge reads the play's 4 bits; False is the nested control."""
    branching: tuple[int, ...] | None = None
    """Cell candidates per node at each turn, overriding ``budget`` (e.g. CIFAR-10's 4-turn
    (4, 4, 3, 3) of the channel runs); with bits each turn's moves are candidates x symbols."""
    loop_seed: int | None = None
    """Re-seed batch order, candidate draws and dropout with this after the weights are drawn
    from ``seed`` (the channel runs: seed = arm index, loop seed = turns, so a bits arm and its
    nested control see the same batches and candidates); None: ``seed`` seeds everything."""

    def __post_init__(self):
        spec = find_design(self.design)
        proto = find_protocol(self.protocol, medium="cells")
        if self.control and proto.one_sided:
            raise ValueError(f"controls shuffle debate plays; {proto.name} has none")
        find_rule(self.rule)  # an unknown rule: one error listing them
        if proto.one_sided and self.rule != "asym":
            raise ValueError(f"{proto.name} has no scoring rule (B never moves); leave --rule at "
                             "asym")  # fmt: skip
        if self.seed is None:
            self.seed = published_seed(self.design, self.protocol, self.rule, self.control)
        if self.capability is not None and self.capability < 1:
            raise ValueError(f"capability is a top-k quantiliser's k >= 1, got {self.capability}")
        if self.search not in ("sampled", "exact"):
            raise ValueError(f"unknown search {self.search!r}; choose sampled or exact")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_batch < 1:
            raise ValueError("epochs, batch_size and eval_batch must be >= 1")
        if self.bits and not spec.reads_bits:
            readers = " / ".join(n for n in design_names() if find_design(n).reads_bits)
            raise ValueError(f"only the {readers} design reads the argument channel, not "
                             f"{self.design}")  # fmt: skip
        if spec.argument_channel:
            want = "asym" if proto.one_sided else "last_b"
            if self.control or self.rule != want:
                raise ValueError("the argument channel runs consultancy (rule asym) and debate "
                                 "under last_b, without shuffled controls (its nested control "
                                 "is bits=False)")  # fmt: skip
        if self.branching is not None:
            turns = len(proto.turns)
            self.branching = tuple(int(n) for n in self.branching)
            if len(self.branching) != turns or min(self.branching) < 1:
                raise ValueError(
                    f"{self.protocol} has {turns} turn(s): give branching as that "
                    f"many positive candidate counts, got {self.branching}"
                )
        if self.bits and self.search == "exact":
            raise ValueError("the exact search does not take the argument channel; use sampled")

    @property
    def name(self) -> str:
        """The published file-name stem of this judge, e.g. ``debate_2turn_asym``."""
        if find_design(self.design).argument_channel:
            masks = prod(self.branching) if self.branching else self.budget
            return f"{self.protocol}_{'bits' if self.bits else 'nobits'}_{masks}"
        if self.protocol == "consultancy":
            return "consultancy"
        rule = RULE_FILE_NAMES.get(self.rule, self.rule)
        if self.protocol in PUBLISHED_TURNS:  # the published stems, e.g. debate_2turn_asym
            kind = "control" if self.control else "debate"
            return f"{kind}_{PUBLISHED_TURNS[self.protocol]}turn_{rule}"
        return f"{'control_' if self.control else ''}{self.protocol}_{rule}"

    def key(self) -> str:
        revision = data_revision(check_variant(self.variant)[0])
        settings = {**self.__dict__, "data_revision": revision}
        if self.capability is None:  # keys of exact-play judges predate the option
            del settings["capability"]
        if self.search == "sampled":  # likewise the sampled search
            del settings["search"]
        for later in ("bits", "branching", "loop_seed"):  # and the argument channel's options
            if settings[later] is None or settings[later] is False:
                del settings[later]
        return settings_key(f"{self.variant}-{self.design}-{self.name}-s{self.seed}", settings)


# ---------------------------------------------------------------------------------------------
# the published checkpoints


@dataclass(frozen=True)
class PublishedName:
    """What a published judge's file name says: design, protocol, rule, control."""

    design: str
    protocol: str
    rule: str
    control: bool
    dataset: str

    @property
    def family(self) -> str:
        return "control" if self.control else ("consultancy" if self.protocol == "consultancy"
                                               else "debate")  # fmt: skip


_NAME = re.compile(r"^(?P<kind>consultancy|debate|control)_judge(?:_(?P<turns>[24])turn)?"
                   r"(?:_(?P<tag>cc|bce))?(?:_(?P<rule>asym|sym|lastdig))?_(?P<data>.+)\.pt$")  # fmt: skip


def parse_published_name(path: str | os.PathLike) -> PublishedName:
    """Design, protocol, rule and control from a published file name, e.g.
    ``debate_judge_2turn_asym_mnist.pt`` (D1), ``control_judge_4turn_cc_sym_mnist.pt`` (D3),
    ``debate_judge_2turn_bce_lastdig_mnist.pt`` (D2)."""
    name = Path(path).name
    m = _NAME.match(name)
    if m is None:
        raise ValueError(f"{name} is not named like a published trained judge "
                         "(e.g. debate_judge_2turn_asym_mnist.pt)")  # fmt: skip
    design = design_of_tag(m["tag"]).name
    protocol = "consultancy" if m["kind"] == "consultancy" else f"debate{m['turns']}"
    rule = {"lastdig": "last_b", None: "asym"}.get(m["rule"], m["rule"])
    dataset = m["data"].replace("_normalized", "-whitened")
    return PublishedName(design, protocol, rule, m["kind"] == "control", dataset)


def load_published_judge(path: str | os.PathLike, max_batch: int = 16000) -> OnPolicyJudge:
    """A published trained judge (a file of :mod:`.published`) as an :class:`OnPolicyJudge`.

    Its design, protocol family and rule come from the file name; the architecture from the
    state dict, which is checked key by key and shape by shape."""
    name = parse_published_name(path)
    try:
        payload = torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise
    except Exception as exc:  # torch raises many kinds on a damaged file
        raise ValueError(f"{path} cannot be read as a published judge ({type(exc).__name__}: "
                         f"{exc}); give an intact copy of the published file") from exc  # fmt: skip
    if not isinstance(payload, dict):
        raise ValueError(f"{path} holds a {type(payload).__name__}, not a published judge's "
                         "state dict")  # fmt: skip
    state = payload["state_dict"] if "state_dict" in payload else payload
    spec = find_design(name.design)
    keys = spec.published_keys
    renamed = {}
    for key, tensor in state.items():
        prefix, _, leaf = key.rpartition(".")
        if prefix not in keys:
            raise ValueError(f"{Path(path).name}: unexpected weight {key!r} for design "
                             f"{name.design}")  # fmt: skip
        renamed[f"{keys[prefix]}.{leaf}"] = tensor
    first = renamed["conv1.weight"]
    groups = GROUPS[name.family]
    channels, rem = divmod(first.shape[1], groups)
    if rem:
        raise ValueError(f"{Path(path).name}: {first.shape[1]} input channels do not split "
                         f"into {groups} groups")  # fmt: skip
    model = spec.build(channels, groups, spec.queries(name.protocol, name.rule))
    model.load_state_dict(renamed)  # strict: every key and shape must match
    model.eval()
    return OnPolicyJudge(name.design, model, name.family, name.rule, Grid(18, 6), channels,
                         max_batch)  # fmt: skip
