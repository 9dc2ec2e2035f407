"""The on-policy trained judges of REFERENCE B: designs D1, D3 and D2 (TRAINED-JUDGES.md §2).

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
from ..resume import settings_key
from .allmask import factorised_outputs
from .cnn import JudgeCNN, default_widths

DESIGNS = ("D1", "D3", "D2")
#: Designs an :class:`OnPolicyJudge` holds: the three of the trained-judge sweep and ``bit``, the
#: argument channel's D3-style judge (§4: a 3 x 64 head that may read 4 raw bits).
ALL_DESIGNS = DESIGNS + ("bit",)
#: Rule names in the published file names.
RULE_FILE_NAMES = {"asym": "asym", "sym": "sym", "last_b": "lastdig"}
#: Input channel groups per protocol family.
GROUPS = {"consultancy": 1, "debate": 2, "control": 4}


class ClaimJudgeCNN(nn.Module):
    """Designs D3 (``n_out = 10``), D2 (``n_out = 1``) and the argument channel's judge (``bit``):
    trunk, projection, a head that reads the class queries (and ``n_bits`` raw bits).

    The head is ``depth`` x [Linear ``hidden`` - ReLU - Dropout] then Linear ``n_out`` on
    ``[projection, onehot(d_A)(, onehot(d_B))(, bits)]``: D3 / D2 have depth 1 and dropout 0.3,
    the bit judge depth 3 and dropout 0.1. With no queries and no bits it is a plain classifier
    (the channel experiment's gold and random-mask baselines)."""

    def __init__(self, in_channels: int, n_queries: int, n_out: int = 10, widths=(32, 32),
                 image_size: int = 18, projection: int = 64, hidden: int = 64,
                 n_classes: int = 10, dropout: float = 0.3, n_bits: int = 0,
                 depth: int = 1):  # fmt: skip
        super().__init__()
        c1, c2 = widths
        self.in_channels, self.n_queries, self.n_out = in_channels, n_queries, n_out
        self.n_classes, self.image_size, self.widths = n_classes, image_size, (c1, c2)
        self.n_bits = n_bits
        final = (image_size // 2) // 2
        self.conv1 = nn.Conv2d(in_channels, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.project = nn.Linear(c2 * final * final, projection)
        self.fc1 = nn.Linear(projection + n_queries * n_classes + n_bits, hidden)
        self.deeper = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(depth - 1))
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, n_out)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """The conv trunk: ``(B, C, S, S)`` to ``(B, c2, S//4, S//4)``."""
        x = self.pool(torch.relu(self.conv1(x)))
        return self.pool(torch.relu(self.conv2(x)))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, C, S, S)`` to the projected features ``(B, projection)``."""
        return torch.relu(self.project(self.trunk(x).flatten(1)))

    def last_hidden(self, pre: torch.Tensor, buffers: list | None = None) -> torch.Tensor:
        """The input of the last layer from the head's first pre-activation ``(..., hidden)``
        (its ReLU in place); with ``buffers`` (one ``(rows, hidden)`` per deeper layer, no
        gradient) the deeper layers write into them instead of fresh tensors."""
        h = self.dropout(pre.relu_())
        for i, layer in enumerate(self.deeper):
            if buffers is None:
                h = layer(h)
            else:
                w, b = layer.weight.to(h.dtype), layer.bias.to(h.dtype)
                h = torch.addmm(b, h, w.T, out=buffers[i])
            h = self.dropout(h.relu_())
        return h

    def after_first(self, pre: torch.Tensor) -> torch.Tensor:
        """Logits from the head's first pre-activation ``(..., hidden)``."""
        return self.fc2(self.last_hidden(pre))

    def head(self, features: torch.Tensor, queries: torch.Tensor | None = None,
             bits: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        """Logits ``(..., n_out)`` of features ``(..., P)``, class queries ``(..., n_queries)``
        (d_A first) and bits ``(..., n_bits)`` (0/1 floats)."""
        parts = [features]
        if self.n_queries:
            parts.append(F.one_hot(queries, self.n_classes).to(features.dtype).flatten(-2))
        if self.n_bits:
            if bits is None or bits.shape[-1] != self.n_bits:
                raise ValueError(f"this judge reads {self.n_bits} bits per play; pass them")
            parts.append(bits.to(features.dtype))
        return self.after_first(self.fc1(torch.cat(parts, dim=-1)))

    @torch.no_grad()
    def query_scores(self, features: torch.Tensor) -> torch.Tensor:
        """The search's leaf score (no gradient) of every class query (and every codeword) at
        once: ``(B, [G,] K)`` (one query) or ``(B, [G,] K, K)`` (d_A, d_B), G = 2 ** n_bits
        codewords when the judge reads bits. D3 / bit: the head's softmax at d_A; D2: the
        sigmoid of its logit. The first layer is linear, so each one-hot (and each codeword's
        bits) adds a column of its weight to the features' shared pre-activation; one query of
        A at a time keeps the work in plain matrix products (about 3x faster than one (B, K, K,
        H) tensor)."""
        k, p = self.n_classes, features.shape[-1]
        w = self.fc1.weight
        base = torch.addmm(self.fc1.bias, features, w[:, :p].T)  # (B, H)
        w_a = w[:, p : p + k].T.contiguous()  # a transposed view would make every sum strided
        w_b = w[:, p + k : p + 2 * k].T.contiguous() if self.n_queries == 2 else None
        if self.n_bits:  # every codeword: (B, G, H)
            col = p + self.n_queries * k
            words = codeword_bits(torch.arange(2**self.n_bits), self.n_bits).to(features)
            base = base[:, None, :] + (words @ w[:, col : col + self.n_bits].T)[None]
        lead = base.shape[:-1]
        shape = lead + ((k,) if w_b is None else (k, k))
        out = torch.empty(shape, device=features.device, dtype=torch.float32)
        dtype, rows = base.dtype, base[..., 0].numel() * (1 if w_b is None else k)
        # every intermediate goes into buffers allocated once: a fresh multi-megabyte tensor
        # per op costs more in page faults than the op itself (2-3x on CPU)
        pre = torch.empty(rows, base.shape[-1], device=base.device, dtype=dtype)
        deeper = [torch.empty(rows, layer.out_features, device=base.device, dtype=dtype)
                  for layer in self.deeper]  # fmt: skip
        logits = torch.empty(self.n_out, rows, device=base.device, dtype=dtype)
        w_out, b_out = self.fc2.weight.to(dtype), self.fc2.bias.to(dtype)[:, None]
        for d_a in range(k):
            if w_b is None:
                torch.add(base.reshape(rows, -1), w_a[d_a].to(dtype), out=pre)
            else:  # every d_B: (..., K_B, H)
                torch.add(base[..., None, :], (w_b + w_a[d_a]).to(dtype),
                          out=pre.view(lead + (k, -1)))  # fmt: skip
            h = self.last_hidden(pre, deeper)
            # logits transposed, (n_out, rows): the softmax then reduces across 10 long rows,
            # several times faster on CPU than across each row's 10 entries
            scores = torch.addmm(b_out, w_out, h.T, out=logits).float()
            if self.n_out == 1:
                score = scores[0].sigmoid_()
            else:
                e = scores.sub_(scores.amax(dim=0)).exp_()
                score = e[d_a].div_(e.sum(dim=0))
            out.select(len(lead), d_a).copy_(score.view(lead + shape[len(lead) + 1 :]))
        return out

    def forward(self, x: torch.Tensor, queries: torch.Tensor | None = None,
                bits: torch.Tensor | None = None) -> torch.Tensor:  # fmt: skip
        return self.head(self.features(x), queries, bits)

    def config(self) -> dict:
        return {"in_channels": self.in_channels, "n_queries": self.n_queries,
                "n_out": self.n_out, "widths": list(self.widths),
                "image_size": self.image_size, "projection": self.project.out_features,
                "hidden": self.fc1.out_features, "n_classes": self.n_classes,
                "dropout": self.dropout.p, "n_bits": self.n_bits,
                "depth": 1 + len(self.deeper)}  # fmt: skip


def n_queries(design: str, rule: str, protocol: str) -> int:
    """Class one-hots the head reads: none for D1; d_A for consultancy and asym; d_A and d_B for
    sym and last_b."""
    if design == "D1":
        return 0
    return 1 if protocol == "consultancy" or rule == "asym" else 2


def make_model(design: str, channels: int, groups: int, queries: int, image_size: int = 18,
               n_bits: int = 0):  # fmt: skip
    """A fresh model of ``design`` for ``channels``-channel images in ``groups`` groups (the bit
    design reads ``n_bits`` raw bits in its head; 0 for a nested control or a baseline)."""
    if design not in ALL_DESIGNS:
        raise ValueError(f"unknown judge design {design!r}; choose among {', '.join(ALL_DESIGNS)}")
    if n_bits and design != "bit":
        raise ValueError(f"only the bit design reads bits, not {design}")
    if design == "D1":
        return JudgeCNN(channels * groups, default_widths(channels), image_size)
    widths = (32, 32) if channels == 1 else (64, 64)  # CIFAR doubles the widths
    if design == "bit":  # §4: 3 x [Linear 64, ReLU, Dropout 0.1] -> Linear 10
        return ClaimJudgeCNN(channels * groups, queries, 10, widths, image_size, dropout=0.1,
                             n_bits=n_bits, depth=3)  # fmt: skip
    return ClaimJudgeCNN(channels * groups, queries, 10 if design == "D3" else 1, widths,
                         image_size)  # fmt: skip


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
        if self.design not in ALL_DESIGNS:
            raise ValueError(f"unknown judge design {self.design!r}; choose among {ALL_DESIGNS}")
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
            if self.design == "D1":
                out.append(self.model(x))
                continue
            q = None if claims is None else claims[i : i + self.max_batch]
            bits = None
            if self.n_bits:
                bits = codeword_bits(codewords[i : i + self.max_batch], self.n_bits).to(x)
            out.append(self.model(x, q, bits))
        self.evaluations += len(values)
        return torch.cat(out)

    @property
    def first_linear(self) -> nn.Linear:
        """The layer that reads the conv trunk (D1: fc1; D3 / D2: the projection)."""
        return self.model.fc1 if self.design == "D1" else self.model.project

    def _trunk(self, x: torch.Tensor) -> torch.Tensor:
        return self.model.features(x) if self.design == "D1" else self.model.trunk(x)

    def scores_from_hidden(self, h: torch.Tensor) -> torch.Tensor:
        """Claim scores (as :meth:`claim_scores`) from the first linear layer's pre-activation
        ``h (n, H)``: the network after its conv trunk."""
        if self.design == "D1":
            logits = self.model.fc2(self.model.dropout(torch.relu(h)))
            return torch.softmax(logits.float(), dim=-1)
        if not self.conditioned:  # a plain classifier of the bit family (the baselines)
            return torch.softmax(self.model.head(torch.relu(h)).float(), dim=-1)
        return self.model.query_scores(torch.relu(h))

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
    ``1 + 4 r + k``; r indexes (asym, sym, last_b) and k (2-turn debate, 4-turn debate,
    2-turn control, 4-turn control)."""
    if protocol == "consultancy":
        return 0
    r = ("asym", "sym", "last_b").index(rule)
    k = (0 if protocol == "debate2" else 1) + (2 if control else 0)
    return 1 + 10 * r + k if design == "D1" else 1 + 4 * r + k


@dataclass
class OnPolicyConfig:
    """Settings of one on-policy trained judge."""

    family: ClassVar[str] = "onpolicy"

    design: str = "D1"
    """Judge design: D1 (never sees a class), D3 (reads the claims), D2 (P(claim correct))."""
    variant: str = "mnist"
    """Dataset variant."""
    protocol: str = "debate2"
    """consultancy, debate2 or debate4."""
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
        if self.design not in ALL_DESIGNS:
            raise ValueError(f"unknown judge design {self.design!r}; choose among {ALL_DESIGNS}")
        if self.protocol not in ("consultancy", "debate2", "debate4"):
            raise ValueError(f"unknown protocol {self.protocol!r}; choose consultancy, debate2 "
                             "or debate4")  # fmt: skip
        if self.control and self.protocol == "consultancy":
            raise ValueError("controls shuffle debate plays; consultancy has none")
        if self.rule not in ("asym", "sym", "last_b"):
            raise ValueError(f"unknown rule {self.rule!r}; choose asym, sym or last_b")
        if self.protocol == "consultancy" and self.rule != "asym":
            raise ValueError("consultancy has no scoring rule (B never moves); leave --rule at "
                             "asym")  # fmt: skip
        if self.seed is None:
            self.seed = published_seed(self.design, self.protocol, self.rule, self.control)
        if self.capability is not None and self.capability < 1:
            raise ValueError(f"capability is a top-k quantiliser's k >= 1, got {self.capability}")
        if self.search not in ("sampled", "exact"):
            raise ValueError(f"unknown search {self.search!r}; choose sampled or exact")
        if self.epochs < 1 or self.batch_size < 1 or self.eval_batch < 1:
            raise ValueError("epochs, batch_size and eval_batch must be >= 1")
        if self.bits and self.design != "bit":
            raise ValueError(f"only the bit design reads the argument channel, not {self.design}")
        if self.design == "bit":
            want = "asym" if self.protocol == "consultancy" else "last_b"
            if self.control or self.rule != want:
                raise ValueError("the argument channel runs consultancy (rule asym) and debate "
                                 "under last_b, without shuffled controls (its nested control "
                                 "is bits=False)")  # fmt: skip
        if self.branching is not None:
            turns = {"consultancy": 1, "debate2": 2, "debate4": 4}[self.protocol]
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
        if self.design == "bit":
            masks = prod(self.branching) if self.branching else self.budget
            return f"{self.protocol}_{'bits' if self.bits else 'nobits'}_{masks}"
        if self.protocol == "consultancy":
            return "consultancy"
        kind = "control" if self.control else "debate"
        return f"{kind}_{self.protocol[-1]}turn_{RULE_FILE_NAMES[self.rule]}"

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

#: state-dict key prefixes of the published notebooks -> ours.
_D1_KEYS = {"features.0": "conv1", "features.3": "conv2", "classifier.1": "fc1",
            "classifier.4": "fc2"}  # fmt: skip
_D3_KEYS = {"features_net.0": "conv1", "features_net.3": "conv2", "projection.0": "project",
            "head.0": "fc1", "head.3": "fc2"}  # fmt: skip


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
    design = {None: "D1", "cc": "D3", "bce": "D2"}[m["tag"]]
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
    keys = _D1_KEYS if name.design == "D1" else _D3_KEYS
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
    queries = n_queries(name.design, name.rule, name.protocol)
    model = make_model(name.design, channels, groups, queries)
    model.load_state_dict(renamed)  # strict: every key and shape must match
    model.eval()
    return OnPolicyJudge(name.design, model, name.family, name.rule, Grid(18, 6), channels,
                         max_batch)  # fmt: skip
