"""Codewords of the argument channel (docs/trained-judges.md#channel).

Each decision of a play emits a symbol from an alphabet of ``2 ** (cells it reveals)``; the
play's symbols form one codeword g (decision 1 most significant) that the judge reads as the
raw 0/1 bits of its binary expansion.
"""

from __future__ import annotations

import torch


def codeword_index(symbols, alphabets: tuple[int, ...]) -> torch.Tensor:
    """The codeword g of per-decision symbols ``(..., turns)``, decision 1 most significant:
    2-turn ``g = 4 s_A + s_B``, 4-turn ``g = 8 a1 + 4 b1 + 2 a2 + b2``."""
    symbols = torch.as_tensor(symbols)
    g = torch.zeros(symbols.shape[:-1], dtype=torch.long, device=symbols.device)
    for t, v in enumerate(alphabets):
        g = g * v + symbols[..., t]
    return g


def codeword_bits(codewords, n_bits: int = 4) -> torch.Tensor:
    """The judge's bit inputs: the ``n_bits``-bit binary expansion of each codeword, most
    significant bit first, as raw 0/1 floats ``(..., n_bits)``."""
    g = torch.as_tensor(codewords, dtype=torch.long)
    shifts = torch.arange(n_bits - 1, -1, -1, device=g.device)
    return ((g[..., None] >> shifts) & 1).float()
