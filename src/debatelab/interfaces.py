"""The small typed protocols that pluggable parts implement.

Games, agents and experiments talk to a judge only through :class:`Judge`; concrete families
(the cell-grid CNN judges, the pixel judge of the 2018 game, later trained and LLM judges) live
in :mod:`debatelab.judges` and satisfy it. This module sits below both ``games/`` and
``judges/`` and imports neither.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # torch is only needed by implementations
    import numpy as np
    import torch


@runtime_checkable
class Judge(Protocol):
    """A frozen judge: class scores for a batch of partly revealed images.

    What it sees: ``values``, the images as the family encodes them (``(B, 784)`` pixel values
    in [0, 1] for the pixel game, ``(B, C, S, S)`` preprocessed images for the cell grid), and
    ``mask``, which positions are revealed (``(B, 784)`` pixels or ``(B, n_cells)`` cells,
    boolean). What it returns: logits ``(B, n_classes)``. How it batches: any ``B``; the judge
    splits into forward passes of at most ``max_batch`` and counts ``evaluations`` (judged
    positions), so search agents can batch leaves and benchmarks can count work.
    """

    n_classes: int
    max_batch: int
    evaluations: int

    def logits(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...


@runtime_checkable
class FactorisedJudge(Judge, Protocol):
    """A judge with an exact all-positions path: its probabilities on every mask of ``reveal``
    cells of each image at once (masks in combinations order), much faster than
    :meth:`Judge.logits` on each masked copy."""

    def all_mask_probs(self, images: torch.Tensor, reveal: int) -> np.ndarray: ...


@runtime_checkable
class ClaimJudge(Judge, Protocol):
    """A judge trained on-policy (designs D1, D3, D2 of REFERENCE B), as the sampled-tree search
    sees it.

    ``mask`` holds integer cell codes ``(B, n_cells)``: 0 for a hidden cell, ``g + 1`` for a cell
    shown in channel group ``g`` (A's and B's cells, or a control's shuffled groups).
    ``logits(values, mask, claims)`` also takes the class queries ``claims (B, n_queries)``
    when the judge reads them (``conditioned``). ``claim_scores(values, mask)`` scores every
    claim column of each play at once: the class probabilities ``(B, K)`` of a judge that reads
    no claim, else its score of A's claim ``(B, K)`` (one query) or ``(B, K, K)`` (A's and B's
    classes). ``family`` names its input groups: consultancy, debate or control. A judge on the
    argument channel reads ``n_bits`` raw bits beside the cells (0 for every other judge): its
    ``claim_scores`` score every codeword too, ``(B, 2 ** n_bits, K[, K])``, and ``logits``
    takes each play's ``codewords (B,)``. A ``binary`` judge outputs one logit, P(A's claim is
    right) (its ``logits`` are ``(B, 1)``): it has a belief but no class prediction. ``design``
    names the judge's design for messages only: games never branch on it.
    """

    design: str
    family: str
    conditioned: bool
    binary: bool
    n_queries: int
    n_cells: int
    n_bits: int

    def claim_scores(self, values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor: ...

    def universe_scores(self, values: torch.Tensor, universe, index=None) -> torch.Tensor:
        """``claim_scores`` of every play of a :class:`debatelab.geometry.LabelledMasks`
        universe on each image, ``(B, len(universe), ...)`` (the exact search's leaves), or of
        the plays ``index`` ``(B, L)`` only, ``(B, L, ...)`` (a sampled tree's leaves)."""
        ...


@runtime_checkable
class ChatModel(Protocol):
    """A language model back end, as the pool generator sees it (:mod:`debatelab.llm`); a
    registered ``debatelab.llm.backends.Backend`` builds one from a ``BACKEND:MODEL`` spec.

    ``name`` identifies back end and model (it keys the call cache); ``concurrency`` is how many
    calls it takes at once. ``chat`` samples one reply to chat ``messages``, reproducibly for a
    given ``seed`` where the back end allows; ``verdict`` returns the log-probabilities of
    ``candidates`` (single tokens) as the next token of the reply, ``None`` for a candidate the
    back end cannot see. Both return a reply object with token counts (``debatelab.llm.Reply``).
    """

    name: str
    concurrency: int

    def chat(self, messages: list[dict], *, temperature: float, max_tokens: int,
             seed: int): ...  # fmt: skip

    def verdict(self, messages: list[dict], candidates: tuple[str, ...]): ...


@runtime_checkable
class Task(Protocol):
    """Questions with ground truth (:mod:`debatelab.llm.tasks`): ``questions()`` lists them,
    ``answer(question, text)`` extracts a proposal's answer (``None`` when there is none) and
    ``verify(question, answer)`` scores it in [0, 1] against the ground truth. A task may also
    have ``check(question, answer)``, a verdict with its reason (``debatelab.llm.Verdict``),
    which the pools' transcripts then record. Tasks are made by their registered
    ``debatelab.llm.tasks.TaskSpec``, which declares whether verification runs model-written
    code in the sandbox."""

    name: str

    def questions(self) -> list: ...

    def answer(self, question, text: str) -> str | None: ...

    def verify(self, question, answer: str) -> float: ...
