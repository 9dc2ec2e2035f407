"""Judge designs as registered objects: one declaration per design of the on-policy judges.

A **design** says everything that differs between judges trained on-policy (docs/trained-judges.md
#designs, #channel): how its model is built (:meth:`JudgeDesign.build`), how many class queries it
reads at a leaf for a (protocol, rule) (:meth:`JudgeDesign.queries`), whether it reads the claims
and raw bits, what it outputs (class logits or one logit, ``binary``), its factorised scorer (the
layer that reads the conv trunk and the scores from that layer's pre-activation), how it learns from
a realised play (:meth:`JudgeDesign.loss`), whether the search scores leaves in train mode, the
checkpoint family it is stored under, and how the published study named and seeded it.

The built-ins: ``D1`` (the frozen judge's CNN on channel groups, never sees a class), ``D3``
(narrower trunk, projection, claim one-hots in the head), ``D2`` (D3 with one logit read as
P(A's claim is right)) and ``bit`` (the argument channel's judge: a 3 x 64 head that may read 4
raw bits). Another package adds a design with one entry point in the group
``debatelab.judge_designs`` (see :mod:`debatelab.registry`) whose object is a
:class:`JudgeDesign`; everything that trains, loads or evaluates on-policy judges then takes
its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

from ..protocols import Protocol
from ..protocols import protocol as find_protocol
from ..protocols import rule as find_rule
from ..registry import Registry
from .cnn import ClaimJudgeCNN, JudgeCNN, default_widths


@dataclass(frozen=True)
class JudgeDesign:
    """One design of on-policy judge. Subclass it (or :class:`ClaimDesign`) for a new network;
    the fields say how the rest of the library treats it."""

    name: str
    summary: str
    reads_claims: bool = True
    """The head reads A's claim (and B's class) as one-hots: the leaf score is of A's claim."""
    binary: bool = False
    """One logit, P(A's claim is right), trained by binary cross-entropy: a belief, no class."""
    reads_bits: bool = False
    """May read raw bits beside the cells (the argument channel, docs/trained-judges.md#channel)."""
    argument_channel: bool = False
    """The argument channel's design: consultancy (asym) and debate under last_b, no controls."""
    sweep: bool = True
    """One of the designs of the published 13-judge sweeps (``debatelab judges --design``)."""
    search_in_train_mode: bool = False
    """The search scores leaves in train mode (dropout on), as published for D1."""
    checkpoint_family: str = "onpolicy"
    """The family of :data:`debatelab.judges.train.FAMILIES` its checkpoints are stored under."""
    seed_stride: int = 4
    """The published seeds (§5): consultancy 0, then ``1 + stride * rule + kind``."""
    published_tag: str | None = None
    """The tag of the published file names (``cc``, ``bce``; None: no tag); absent from the
    study when ``published_keys`` is None."""
    published_keys: dict[str, str] | None = field(default=None, compare=False)
    """State-dict key prefixes of the published notebooks -> ours."""

    def build(self, channels: int, groups: int, queries: int, image_size: int = 18,
              n_bits: int = 0) -> nn.Module:  # fmt: skip
        """A fresh model for ``channels``-channel images in ``groups`` groups, reading
        ``queries`` class one-hots and ``n_bits`` raw bits."""
        raise NotImplementedError

    def queries(self, protocol: str | Protocol, rule: str) -> int:
        """Class one-hots the head reads in a game of ``protocol`` under ``rule``: none when it
        reads no claim; A's claim when only A names one (one-sided, or asym); else d_A and
        d_B."""
        if not self.reads_claims:
            return 0
        one_sided = find_protocol(protocol).one_sided
        return 1 if one_sided or find_rule(rule).b_claims == "never" else 2

    def forward(self, model: nn.Module, x: torch.Tensor, queries, bits) -> torch.Tensor:
        """Logits of the encoded inputs ``x`` with the class ``queries`` and ``bits``."""
        return model(x, queries, bits)

    def first_linear(self, model: nn.Module) -> nn.Linear:
        """The layer that reads the conv trunk (the factorised scorer's first layer)."""
        return model.project

    def scores_from_hidden(self, model: nn.Module, h: torch.Tensor) -> torch.Tensor:
        """Claim scores from the first linear layer's pre-activation ``h (n, H)``: the network
        after its conv trunk (see ``OnPolicyJudge.claim_scores``)."""
        raise NotImplementedError

    def loss(self, logits: torch.Tensor, claim: torch.Tensor,
             labels: torch.Tensor) -> tuple[torch.Tensor, int]:  # fmt: skip
        """The training loss of one batch of realised plays and the count of right answers:
        cross-entropy against the true class, or (``binary``) binary cross-entropy against
        "A's claim is the true class"."""
        if self.binary:
            right = (claim == labels).float()
            loss = F.binary_cross_entropy_with_logits(logits[:, 0], right)
            return loss, int(right.sum().item())
        return F.cross_entropy(logits, labels), int((logits.argmax(1) == labels).sum().item())

    def curve_stem(self, kind: str, turns: str) -> str:
        """The stem of the published per-epoch arrays of a debate or control judge."""
        return f"{kind}_{turns}turn"


@dataclass(frozen=True)
class PlainDesign(JudgeDesign):
    """A classifier that never reads a claim (D1): :class:`.cnn.JudgeCNN` on the channel
    groups; its leaf scores are its class probabilities."""

    reads_claims: bool = False

    def build(self, channels, groups, queries, image_size=18, n_bits=0):
        if n_bits:
            raise ValueError(f"only the bit design reads bits, not {self.name}")
        return JudgeCNN(channels * groups, default_widths(channels), image_size)

    def forward(self, model, x, queries, bits):
        return model(x)

    def first_linear(self, model):
        return model.fc1

    def scores_from_hidden(self, model, h):
        logits = model.fc2(model.dropout(torch.relu(h)))
        return torch.softmax(logits.float(), dim=-1)

    def curve_stem(self, kind, turns):
        return f"{kind}{turns}"


@dataclass(frozen=True)
class ClaimDesign(JudgeDesign):
    """Trunk, projection and a head reading the class one-hots (:class:`.cnn.ClaimJudgeCNN`):
    ``depth`` x [Linear 64 - ReLU - Dropout ``dropout``] then Linear 10 (or 1, ``binary``)."""

    dropout: float = 0.3
    depth: int = 1

    def build(self, channels, groups, queries, image_size=18, n_bits=0):
        if n_bits and not self.reads_bits:
            raise ValueError(f"only a design that reads bits (as bit) takes them, not "
                             f"{self.name}")  # fmt: skip
        widths = (32, 32) if channels == 1 else (64, 64)  # CIFAR doubles the widths
        return ClaimJudgeCNN(channels * groups, queries, 1 if self.binary else 10, widths,
                             image_size, dropout=self.dropout, n_bits=n_bits,
                             depth=self.depth)  # fmt: skip

    def scores_from_hidden(self, model, h):
        if not model.n_queries:  # a plain classifier of the bit family (the baselines)
            return torch.softmax(model.head(torch.relu(h)).float(), dim=-1)
        return model.query_scores(torch.relu(h))


def _check_design(name: str, obj: object) -> JudgeDesign:
    if not isinstance(obj, JudgeDesign):
        raise TypeError(f"expected a debatelab.judges.designs.JudgeDesign, got "
                        f"{type(obj).__name__}")  # fmt: skip
    if obj.name != name:
        raise ValueError(f"the design's name is {obj.name!r}, registered as {name!r}")
    return obj


JUDGE_DESIGNS: Registry[JudgeDesign] = Registry("judge design", "debatelab.judge_designs",
                                                _check_design)  # fmt: skip


def register_design(design: JudgeDesign, source: str = "debatelab") -> JudgeDesign:
    """Add a design to :data:`JUDGE_DESIGNS`."""
    return JUDGE_DESIGNS.register(design.name, design, source)


def design(name: str | JudgeDesign) -> JudgeDesign:
    """The design named ``name``; an unknown name is one error listing the designs."""
    return name if isinstance(name, JudgeDesign) else JUDGE_DESIGNS.get(name)


def design_names(sweep: bool | None = None) -> tuple[str, ...]:
    """Registered design names (``sweep``: only those of the 13-judge sweeps, or only the
    others), in registration order."""
    return tuple(n for n, d in JUDGE_DESIGNS.items() if sweep is None or d.sweep == sweep)


def design_of_tag(tag: str | None) -> JudgeDesign:
    """The published design whose file names carry ``tag`` (None: no tag)."""
    for _, d in JUDGE_DESIGNS.items():
        if d.published_keys is not None and d.published_tag == tag:
            return d
    raise ValueError(f"no judge design is published with the tag {tag!r}")


#: state-dict key prefixes of the published notebooks -> ours.
_D1_KEYS = {"features.0": "conv1", "features.3": "conv2", "classifier.1": "fc1",
            "classifier.4": "fc2"}  # fmt: skip
_D3_KEYS = {"features_net.0": "conv1", "features_net.3": "conv2", "projection.0": "project",
            "head.0": "fc1", "head.3": "fc2"}  # fmt: skip

for _design in (
    PlainDesign("D1", "the frozen judge's CNN on 1, 2 or 4 channel groups; never sees a class",
                search_in_train_mode=True, seed_stride=10, published_keys=_D1_KEYS),
    ClaimDesign("D3", "narrower trunk, projection, claim one-hots in the head; scores p(d_A)",
                published_tag="cc", published_keys=_D3_KEYS),
    ClaimDesign("D2", "D3 with one logit, P(A's claim is right), trained by BCE", binary=True,
                published_tag="bce", published_keys=_D3_KEYS),
    ClaimDesign("bit", "the argument channel's judge: a 3 x 64 head (dropout 0.1) that may read "
                "4 raw bits", reads_bits=True, argument_channel=True, sweep=False, dropout=0.1,
                depth=3),
):  # fmt: skip
    register_design(_design)
