"""Learned debaters of the pixel game: policy networks that reveal pixels, trained by self-play.

The public in-browser MNIST debate demo (seed 002) plays two learned agents, each a policy
network 1588 -> 512 -> 512 -> 784: its inputs are the image (784 values in [0, 1]), the mask of
revealed pixels (784) and the two claims (one-hot honest claim, one-hot liar claim; the liar's
is all zeros when it has not committed), its outputs one logit per pixel. The mover's policy is
the softmax of those logits over the pixels it may reveal (nonzero, not yet revealed).

This module holds the networks, the agent that plays them through the :class:`Agent` interface,
and the two losses that train them (the saliency warm-up and REINFORCE with a leave-one-out
baseline); ``debatelab.experiments.agents`` runs the training against a frozen judge.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..geometry import N_PIXELS
from ..interfaces import Judge
from .pixels import N_CLASSES, PixelGames, honest_margin

N_INPUTS = 2 * N_PIXELS + 2 * N_CLASSES  # 1588


class PolicyNet(nn.Module):
    """One debater: ``(B, 1588)`` inputs to ``(B, 784)`` pixel logits."""

    def __init__(self, hidden: int = 512):
        super().__init__()
        self.hidden = hidden
        self.layers = nn.Sequential(
            nn.Linear(N_INPUTS, hidden), nn.ReLU(),
            nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, N_PIXELS),
        )  # fmt: skip

    def forward(self, inputs: torch.Tensor) -> torch.Tensor:
        return self.layers(inputs)


class DebaterNets(nn.Module):
    """The two debaters trained together: ``honest`` and ``liar``, each a :class:`PolicyNet`."""

    def __init__(self, hidden: int = 512):
        super().__init__()
        self.honest = PolicyNet(hidden)
        self.liar = PolicyNet(hidden)

    def net(self, player: str) -> PolicyNet:
        if player not in ("honest", "liar"):
            raise ValueError(f"player must be 'honest' or 'liar', got {player!r}")
        return self.honest if player == "honest" else self.liar

    def config(self) -> dict:
        """The constructor arguments, stored in checkpoints."""
        return {"hidden": self.honest.hidden}


def policy_inputs(games: PixelGames) -> torch.Tensor:
    """The networks' inputs ``(G, 1588)``: values, revealed mask, one-hot honest claim and
    one-hot liar claim (zeros without precommit)."""
    mask = games.pixel_mask(games.used()).to(torch.float32)
    honest = nn.functional.one_hot(games.honest, N_CLASSES).to(torch.float32)
    liar = nn.functional.one_hot(games.liar.clamp(min=0), N_CLASSES).to(torch.float32)
    liar = liar * (games.liar >= 0)[:, None]
    return torch.cat([games.values, mask, honest, liar], dim=1)


def slot_log_probs(nets: DebaterNets, games: PixelGames) -> torch.Tensor:
    """The mover's log-probabilities over candidate slots ``(G, C)``; ``-inf`` where a slot may
    not be revealed (padding or already revealed)."""
    logits = nets.net(games.mover())(policy_inputs(games))
    per_slot = logits.gather(1, games.candidates.clamp(max=N_PIXELS - 1))
    per_slot = per_slot.masked_fill(~games.available(), float("-inf"))
    return torch.log_softmax(per_slot, dim=1)


@dataclass(frozen=True)
class LearnedAgent:
    """Plays the debater network of the side it moves for: the most probable pixel (``sample``
    False, the default for evaluation) or a draw from the policy."""

    nets: DebaterNets
    """The trained pair; the agent uses ``nets.honest`` or ``nets.liar`` by ``games.mover()``."""
    sample: bool = False
    """Draw the pixel from the policy instead of taking its most probable one."""

    def moves(self, games: PixelGames, judge: Judge, generator: torch.Generator) -> torch.Tensor:
        with torch.no_grad():
            logp = slot_log_probs(self.nets, games)
        if self.sample:
            return torch.multinomial(logp.exp(), 1, generator=generator)[:, 0]
        return logp.argmax(1)


@dataclass
class SelfPlay:
    """Games played to the end by both networks' policies, with what REINFORCE needs."""

    games: PixelGames
    """The final positions."""
    log_prob: dict[str, torch.Tensor]
    """Per player, the summed log-probability ``(G,)`` of its moves (differentiable)."""
    honest_reward: torch.Tensor
    """The honest player's reward ``(G,)`` in [0, 1]; the liar's is one minus it."""


def honest_reward(logits: torch.Tensor, games: PixelGames, kind: str = "sigmoid") -> torch.Tensor:
    """The honest player's reward on the judge's final ``logits``: ``sigmoid`` of the honest
    margin (the judge's probability of the honest claim against the liar's, a smooth win) or
    ``win`` (1 where the honest player wins, the game's own payoff)."""
    margin = honest_margin(logits, games.honest, games.liar)
    if kind == "sigmoid":
        return torch.sigmoid(margin)
    if kind == "win":
        return (margin > 0).to(torch.float32)
    raise ValueError(f"reward must be 'sigmoid' or 'win', got {kind!r}")


def self_play(
    games: PixelGames,
    nets: DebaterNets,
    judge: Judge,
    generator: torch.Generator | None = None,
    moves: torch.Tensor | None = None,
    reward: str = "sigmoid",
) -> SelfPlay:
    """Both networks play ``games`` to the end, each move drawn from the mover's policy with
    ``generator``, or the given ``moves (G, pixels - turn)`` replayed (their log-probabilities
    under the policies, for checks by enumeration); the frozen judge scores the end."""
    if moves is None and generator is None:
        raise ValueError("self_play needs a generator to draw moves, or the moves to replay")
    log_prob = {"honest": torch.zeros(len(games)), "liar": torch.zeros(len(games))}
    t = 0
    while not games.done:
        logp = slot_log_probs(nets, games)
        if moves is None:
            slots = torch.multinomial(logp.detach().exp(), 1, generator=generator)[:, 0]
        else:
            slots = moves[:, t]
        mover = games.mover()
        log_prob[mover] = log_prob[mover] + logp.gather(1, slots[:, None])[:, 0]
        games = games.play(slots)
        t += 1
    logits = judge.logits(games.values, games.pixel_mask(games.used()))
    return SelfPlay(games, log_prob, honest_reward(logits, games, reward))


def leave_one_out(rewards: torch.Tensor, group: int = 0) -> torch.Tensor:
    """Each sample's baseline: the mean reward of the other samples of its group, independent
    of the sample's own moves, so the policy gradient stays unbiased. ``group=0``: the whole
    batch is one group; ``group=S``: consecutive runs of S samples (S plays of one game) are
    the groups, which also removes the variance between games of different difficulty."""
    g = group or len(rewards)
    if len(rewards) % g:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {g}")
    if g < 2:
        return torch.zeros_like(rewards)
    r = rewards.view(-1, g)
    return ((r.sum(1, keepdim=True) - r) / (g - 1)).reshape(-1)


def reinforce_loss(play: SelfPlay, group: int = 0) -> torch.Tensor:
    """The REINFORCE surrogate of one batch of self-play: its gradient is an unbiased estimate
    of minus the gradient of (honest net: expected honest reward; liar net: expected liar
    reward), each with the leave-one-out baseline of ``group`` (see :func:`leave_one_out`)."""
    r = play.honest_reward.detach()
    honest = (r - leave_one_out(r, group)) * play.log_prob["honest"]
    liar = ((1 - r) - leave_one_out(1 - r, group)) * play.log_prob["liar"]
    return -(honest + liar).mean()


def saliency_targets(games: PixelGames, saliency: torch.Tensor, top: int) -> torch.Tensor:
    """Warm-up targets ``(G, C)``: uniform over the ``top`` available slots that ``saliency
    (G, 784)`` (of the mover's claimed class) ranks highest."""
    per_slot = saliency.gather(1, games.candidates.clamp(max=N_PIXELS - 1))
    per_slot = per_slot.masked_fill(~games.available(), float("-inf"))
    k = min(top, int(games.available().sum(1).min()))
    best = per_slot.topk(k, dim=1).indices
    return torch.zeros(per_slot.shape).scatter_(1, best, 1.0 / k)


def warmup_loss(nets: DebaterNets, games: PixelGames, targets: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the mover's policy against the warm-up ``targets (G, C)``."""
    logp = slot_log_probs(nets, games)
    return -(targets * logp.masked_fill(targets == 0, 0.0)).sum(1).mean()
