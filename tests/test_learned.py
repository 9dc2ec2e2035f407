"""Learned pixel debaters: the REINFORCE gradient against the exact policy gradient by
enumeration, legal play for every claim, Grad-CAM against a hook-based computation, warm-up
targets against a sort, and training that resumes to the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from debatelab.games.learned import (
    DebaterNets,
    LearnedAgent,
    reinforce_loss,
    saliency_targets,
    self_play,
    slot_log_probs,
)
from debatelab.games.pixels import PixelGames, PixelRules, liar_games, play
from debatelab.judges.pixel import PixelJudge, PixelTrainConfig, gradcam, make_pixel_model


def sparse_images(n: int, nonzero: int, seed: int) -> np.ndarray:
    """``n`` 28x28 uint8 images with exactly ``nonzero`` nonzero pixels each."""
    rng = np.random.default_rng(seed)
    out = np.zeros((n, 784), dtype=np.uint8)
    for i in range(n):
        out[i, rng.choice(784, nonzero, replace=False)] = rng.integers(1, 256, nonzero)
    return out.reshape(n, 28, 28)


def random_judge(pixels: int, seed: int) -> PixelJudge:
    torch.manual_seed(seed)
    return PixelJudge(make_pixel_model(PixelTrainConfig(pixels=pixels)))


def flat_grad(nets: DebaterNets, loss: torch.Tensor) -> torch.Tensor:
    grads = torch.autograd.grad(loss, list(nets.parameters()), allow_unused=True,
                                retain_graph=True)  # fmt: skip
    return torch.cat([
        (g if g is not None else torch.zeros_like(p)).reshape(-1)
        for g, p in zip(grads, nets.parameters(), strict=True)
    ])  # fmt: skip


@pytest.mark.parametrize("group", [0, 20000])
def test_reinforce_gradient_equals_the_exact_policy_gradient(group):
    """Two images with four nonzero pixels, two reveals (liar, then honest): the exact gradient
    of each network's expected reward, by enumerating all 12 plays per image, against the mean
    REINFORCE gradient of 20,000 sampled plays per image, with the leave-one-out baseline of
    the batch (group 0) or of each image's own plays
    (at that size the norm ratio fell within 0.92-1.09 over seeds 0-3, the grouped baseline's
    within 0.99-1.04)."""
    torch.manual_seed(0)
    nets = DebaterNets(hidden=8)
    with torch.no_grad():  # sharper policies than the initial near-uniform ones
        for net in (nets.honest, nets.liar):
            net.layers[-1].weight.mul_(20)
    judge = random_judge(2, 1)
    with torch.no_grad():  # rewards spread over (0, 1) rather than all near 1/2
        judge.model.fc2.weight.mul_(30)
    rules = PixelRules(pixels=2, first="liar")
    base = PixelGames.new(sparse_images(2, 4, 3), [3, 7], [5, 1], rules)
    plays = [(a, b) for a in range(4) for b in range(4) if a != b]
    index = torch.arange(2).repeat_interleave(len(plays))
    moves = torch.tensor(plays * 2)
    enumerated = self_play(base.subset(index), nets, judge, moves=moves)
    prob = (enumerated.log_prob["honest"] + enumerated.log_prob["liar"]).exp()
    assert torch.allclose(prob.view(2, -1).sum(1), torch.ones(2), atol=1e-5)
    expected_honest = (prob * enumerated.honest_reward).view(2, -1).sum(1).mean()
    honest_params = sum(p.numel() for p in nets.honest.parameters())
    exact_h = flat_grad(nets, expected_honest)[:honest_params]
    exact_l = flat_grad(nets, 1 - expected_honest)[honest_params:]

    n = 20000
    order = torch.arange(2).repeat_interleave(n) if group else torch.arange(2).repeat(n)
    sampled = self_play(base.subset(order), nets, judge, torch.Generator().manual_seed(0))
    estimate = -flat_grad(nets, reinforce_loss(sampled, group))
    for exact, est in ((exact_h, estimate[:honest_params]), (exact_l, estimate[honest_params:])):
        assert exact.norm() > 1e-2  # a gradient worth comparing
        cosine = torch.nn.functional.cosine_similarity(exact, est, dim=0)
        assert cosine > 0.99, cosine
        assert abs(est.norm() / exact.norm() - 1) < 0.1


def test_equal_rewards_give_no_gradient():
    """The leave-one-out baseline of a batch whose rewards are all equal is that reward, so
    every advantage and the surrogate's gradient vanish (up to float rounding)."""
    torch.manual_seed(1)
    nets = DebaterNets(hidden=8)
    judge = random_judge(2, 2)
    games = PixelGames.new(sparse_images(64, 5, 4), [1] * 64, [2] * 64, PixelRules(pixels=2))
    played = self_play(games, nets, judge, torch.Generator().manual_seed(1))
    played.honest_reward = torch.full((64,), 0.3)
    assert flat_grad(nets, reinforce_loss(played)).abs().max() < 1e-6


@pytest.mark.parametrize("precommit", [True, False])
@pytest.mark.parametrize("sample", [False, True])
def test_learned_agents_reveal_distinct_nonzero_pixels_for_every_claim(precommit, sample):
    images = sparse_images(5, 9, 5)
    labels = np.array([0, 3, 5, 8, 9])
    rules = PixelRules(pixels=6, precommit=precommit)
    games, image_of = liar_games(images, labels, rules)
    torch.manual_seed(2)
    agent = LearnedAgent(DebaterNets(hidden=16), sample=sample)
    record = play(games, agent, agent, random_judge(6, 3), torch.Generator().manual_seed(2))
    pixels = record.games.revealed_pixels()
    values = torch.as_tensor(images.reshape(5, 784))[torch.as_tensor(image_of)]
    for g in range(len(pixels)):
        assert len(set(pixels[g].tolist())) == 6
        assert (values[g, pixels[g]] > 0).all()
    if precommit:  # every liar claim was played
        assert sorted(set(zip(games.honest.tolist(), games.liar.tolist(), strict=True))) == sorted(
            (int(y), int(z)) for y in labels for z in range(10) if z != y
        )


def test_policy_puts_no_mass_on_illegal_slots():
    torch.manual_seed(3)
    nets = DebaterNets(hidden=8)
    games = PixelGames.new(sparse_images(4, 7, 6), [1, 2, 3, 4], [0, 0, 0, 0], PixelRules(6))
    games = games.play([0, 1, 2, 3]).play([4, 4, 4, 4])
    logp = slot_log_probs(nets, games)
    assert torch.isneginf(logp[~games.available()]).all()
    assert torch.allclose(logp.exp().sum(1), torch.ones(4), atol=1e-6)


def test_gradcam_equals_a_hook_based_computation():
    torch.manual_seed(4)
    model = make_pixel_model(PixelTrainConfig()).eval()
    images = torch.as_tensor(sparse_images(3, 60, 7).reshape(3, 784)).float() / 255
    mask = images > 0
    classes = torch.tensor([2, 5, 9])
    captured = []

    def keep(_module, inputs):
        captured.append(inputs[0])  # the pool's inputs: relu(conv1), then relu(conv2)

    handle = model.pool.register_forward_pre_hook(keep)
    planes = torch.stack([mask.float(), images * mask], 1).view(3, 2, 28, 28)
    with torch.enable_grad():
        logits = model(planes)
        maps = captured[1]
        (grad,) = torch.autograd.grad(logits.gather(1, classes[:, None]).sum(), maps)
    handle.remove()
    cam = (grad.mean((2, 3), keepdim=True) * maps).sum(1).relu()
    expected = torch.nn.functional.interpolate(cam[:, None], scale_factor=2, mode="nearest")
    got = gradcam(model, images, mask, classes)
    assert torch.allclose(got, expected.reshape(3, 784), atol=1e-6)
    assert got.abs().sum() > 0


def test_saliency_targets_are_the_top_available_slots():
    games = PixelGames.new(sparse_images(6, 12, 8), [1] * 6, [2] * 6, PixelRules(6))
    games = games.play(torch.arange(6) % 12)
    saliency = torch.rand(6, 784, generator=torch.Generator().manual_seed(5))
    targets = saliency_targets(games, saliency, 4)
    for g in range(6):
        free = [s for s in range(games.valid.shape[1]) if games.available()[g, s]]
        ranked = sorted(free, key=lambda s: -float(saliency[g, games.candidates[g, s]]))
        assert set(targets[g].nonzero()[:, 0].tolist()) == set(ranked[:4])
        assert torch.allclose(targets[g].sum(), torch.tensor(1.0))


def test_training_resumes_to_the_same_weights(tmp_path, monkeypatch):
    """A run killed in its second REINFORCE epoch and restarted ends with the weights of an
    uninterrupted run."""
    from debatelab.training import debaters as agents

    cfg = agents.DebaterTrainConfig(pixels=4, hidden=16, warmup_epochs=1, epochs=2,
                                    batch_size=32, plays=2, train_limit=96, curve_images="0:4",
                                    curve_greedy_images=1)  # fmt: skip
    images, labels = sparse_images(96, 20, 9), np.arange(96) % 10
    test_images, test_labels = sparse_images(4, 20, 10), np.arange(4)

    def train(partial):
        return agents.train_debaters(cfg, random_judge(4, 5), images, labels, test_images,
                                     test_labels, partial, progress=False)  # fmt: skip

    whole = train(tmp_path / "a.partial.pt")
    calls = {"n": 0}
    real = agents.reinforce_loss

    def dying(played, group):
        calls["n"] += 1
        if calls["n"] == 5:  # 3 steps per epoch: the second step of the second epoch
            raise KeyboardInterrupt
        return real(played, group)

    monkeypatch.setattr(agents, "reinforce_loss", dying)
    with pytest.raises(KeyboardInterrupt):
        train(tmp_path / "b.partial.pt")
    monkeypatch.setattr(agents, "reinforce_loss", real)
    resumed = train(tmp_path / "b.partial.pt")
    for (k, a), b in zip(whole.model.state_dict().items(), resumed.model.state_dict().values(),
                         strict=True):  # fmt: skip
        assert torch.equal(a, b), k
    assert [h["phase"] for h in resumed.history] == ["warmup", "reinforce", "reinforce"]
    assert resumed.history == whole.history or all(
        {k: v for k, v in a.items() if "seconds" not in k}
        == {k: v for k, v in b.items() if "seconds" not in k}
        for a, b in zip(whole.history, resumed.history, strict=True)
    )
    assert not (tmp_path / "warmup-b.partial.pt").exists()


def test_debaters_refuse_a_judge_without_gradcam_maps():
    from debatelab.training import debaters as agents

    with pytest.raises(ValueError, match="Grad-CAM"):
        agents.DebaterTrainConfig(judge="mlp")
