"""The networks of the image judges, on one conv trunk (:class:`ConvTrunk`).

:class:`JudgeCNN`, the classifier of REFERENCE B, used as the gold classifier, the sparse judge
and the on-policy design D1: Conv3x3(c1) - ReLU - MaxPool2 - Conv3x3(c2) - ReLU - MaxPool2 -
Flatten - Linear(128) - ReLU - Dropout(0.3) - Linear(n_classes). Hidden cells are zeros in the
input. :class:`ClaimJudgeCNN`, the on-policy designs that read the claims (D3, D2) and the
argument channel's judge: the same trunk, a projection and a head that reads class one-hots
(and raw bits).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from ..codewords import codeword_bits


class ConvTrunk(nn.Module):
    """The conv trunk every image judge shares: ``conv1``, ``conv2`` (``kernel`` x ``kernel``,
    3 unless said, with "same" padding), each followed by ReLU and a 2x2 max-pool. Subclasses
    call :meth:`_build_trunk` where the trunk's layers are created, so the weights draw from the
    RNG in the same order as ever."""

    def _build_trunk(self, in_channels: int, widths: tuple[int, int], kernel: int = 3) -> None:
        if kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"kernel must be an odd size >= 1, got {kernel}")
        c1, c2 = widths
        self.conv1 = nn.Conv2d(in_channels, c1, kernel, padding=kernel // 2)
        self.conv2 = nn.Conv2d(c1, c2, kernel, padding=kernel // 2)
        self.pool = nn.MaxPool2d(2)

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """The conv trunk: ``(B, C, S, S)`` to ``(B, c2, S//4, S//4)``."""
        x = self.pool(torch.relu(self.conv1(x)))
        return self.pool(torch.relu(self.conv2(x)))


class JudgeCNN(ConvTrunk):
    """Two conv blocks and a two-layer head; ``forward`` maps ``(B, C, S, S)`` to logits ``(B, K)``.

    Widths ``(32, 64)`` for 1-channel data and ``(64, 128)`` for CIFAR-10, as published. With
    ``kernel=5``, ``hidden=1024`` and ``dropout=0.4`` it is the TensorFlow layers tutorial's MNIST
    network, the 2018 paper's pixel judge.
    """

    def __init__(
        self,
        in_channels: int = 1,
        widths: tuple[int, int] = (32, 64),
        image_size: int = 18,
        hidden: int = 128,
        n_classes: int = 10,
        dropout: float = 0.3,
        kernel: int = 3,
    ):
        super().__init__()
        if image_size < 4:
            raise ValueError(f"image_size {image_size} is too small for two 2x2 poolings")
        c1, c2 = widths
        self.in_channels, self.widths, self.image_size = in_channels, (c1, c2), image_size
        self.n_classes = n_classes
        self.final_size = (image_size // 2) // 2
        self._build_trunk(in_channels, (c1, c2), kernel)
        self.fc1 = nn.Linear(c2 * self.final_size**2, hidden)
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, n_classes)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        """The conv trunk: ``(B, C, S, S)`` to ``(B, c2, S//4, S//4)``."""
        return self.trunk(x)

    def head(self, features: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(features.flatten(1)))
        return self.fc2(self.dropout(h))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim != 4 or x.shape[1:] != (self.in_channels, self.image_size, self.image_size):
            raise ValueError(
                f"JudgeCNN expects images (B, {self.in_channels}, {self.image_size}, "
                f"{self.image_size}), got {tuple(x.shape)}"
            )
        return self.head(self.features(x))

    def config(self) -> dict:
        """The constructor arguments, stored in checkpoints."""
        config = {
            "in_channels": self.in_channels,
            "widths": list(self.widths),
            "image_size": self.image_size,
            "hidden": self.fc1.out_features,
            "n_classes": self.n_classes,
            "dropout": self.dropout.p,
        }
        if self.conv1.kernel_size[0] != 3:  # 3x3 checkpoints stay readable by older versions
            config["kernel"] = self.conv1.kernel_size[0]
        return config


class ClaimJudgeCNN(ConvTrunk):
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
        self._build_trunk(in_channels, (c1, c2))
        self.project = nn.Linear(c2 * final * final, projection)
        self.fc1 = nn.Linear(projection + n_queries * n_classes + n_bits, hidden)
        self.deeper = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(depth - 1))
        self.dropout = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, n_out)

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


def default_widths(in_channels: int) -> tuple[int, int]:
    """Published widths: (32, 64) for grey images, (64, 128) for colour."""
    return (32, 64) if in_channels == 1 else (64, 128)
