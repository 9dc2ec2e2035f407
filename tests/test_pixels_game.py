"""Rules of the sparse-pixel debate: claims, turns, legality, verdicts, the nine-liar protocol,
and the pixel judge's input and training pieces."""

import numpy as np
import pytest
import torch
from torch import nn

from debatelab.errors import CacheError
from debatelab.games.agents import PolicyAgent, greedy_agent, random_agent
from debatelab.games.pixels import (
    PixelGames,
    PixelRules,
    honest_margin,
    honest_wins,
    image_honest_wins,
    liar_games,
    play,
)
from debatelab.judges.pixel import (
    PixelJudge,
    PixelTrainConfig,
    get_pixel_judge,
    load_pixel_checkpoint,
    pixel_planes,
    pixel_values,
    random_nonzero_masks,
    train_pixel_judge,
)
from debatelab.policies import TopK

pytestmark = pytest.mark.usefixtures("one_torch_thread")


class PixelSum(nn.Module):
    """A transparent judge: the logit of class c is the sum of revealed values in column c."""

    def forward(self, planes):
        values = planes[:, 1]  # (B, 28, 28)
        return values[:, :, :10].sum(1)


def images_with(pixels: list[list[tuple[int, int, int]]]) -> np.ndarray:
    out = np.zeros((len(pixels), 28, 28), np.uint8)
    for i, pts in enumerate(pixels):
        for r, c, v in pts:
            out[i, r, c] = v
    return out


def test_rules_turn_order_and_validation():
    assert [PixelRules(4, "honest").mover(t) for t in range(4)] == ["honest", "liar"] * 2
    assert [PixelRules(3, "liar").mover(t) for t in range(3)] == ["liar", "honest", "liar"]
    with pytest.raises(ValueError, match="first"):
        PixelRules(4, "judge")
    with pytest.raises(ValueError, match="turn"):
        PixelRules(4).mover(4)


def test_margin_precommit_and_no_precommit():
    logits = torch.tensor([[0.0, 3.0, 1.0, 5.0, 0, 0, 0, 0, 0, 0]])
    honest = torch.tensor([1])
    assert honest_margin(logits, honest, torch.tensor([2])).item() == 2.0
    assert honest_margin(logits, honest, torch.tensor([3])).item() == -2.0
    # no precommit: the liar names the best other label (3) after the reveal
    assert honest_margin(logits, honest, torch.tensor([-1])).item() == -2.0
    tie = torch.tensor([[1.0, 1.0] + [0.0] * 8])
    assert honest_wins(tie, torch.tensor([0]), torch.tensor([1])).item() == 0.0


def test_new_games_candidates_and_errors():
    imgs = images_with([[(0, 5, 9), (3, 3, 200), (27, 27, 1)], [(1, 1, 50), (2, 2, 60)]])
    games = PixelGames.new(imgs, [1, 2], [0, 3], PixelRules(pixels=2, first="honest"))
    assert games.candidates[0].tolist() == [5, 3 * 28 + 3, 783]
    assert games.candidates[1].tolist() == [29, 58, 784]  # padded
    assert games.valid.tolist() == [[True] * 3, [True, True, False]]
    with pytest.raises(ValueError, match="nonzero pixels"):
        PixelGames.new(imgs, [1, 2], [0, 3], PixelRules(pixels=3, first="honest"))
    with pytest.raises(ValueError, match="differ"):
        PixelGames.new(imgs, [1, 2], [1, 3], PixelRules(pixels=2, first="honest"))
    with pytest.raises(ValueError, match="liars' labels"):
        PixelGames.new(imgs, [1, 2], None, PixelRules(pixels=2, first="honest"))
    with pytest.raises(ValueError, match="after the reveal"):
        PixelGames.new(imgs, [1, 2], [0, 3], PixelRules(pixels=2, first="honest", precommit=False))


def test_play_reveals_only_unrevealed_nonzero_pixels():
    imgs = images_with([[(0, 0, 9), (0, 1, 9), (0, 2, 9)], [(5, 5, 1), (6, 6, 1)]])
    games = PixelGames.new(imgs, [1, 2], [0, 3], PixelRules(pixels=2, first="honest"))
    assert games.mover() == "honest"
    after = games.play([2, 1])
    assert after.mover() == "liar" and after.turn == 1
    assert after.revealed_pixels().tolist() == [[2], [6 * 28 + 6]]
    with pytest.raises(ValueError, match="already revealed"):
        after.play([2, 0])
    with pytest.raises(ValueError, match="padding"):
        games.play([0, 2])  # game 1 has only two candidates
    done = after.play([0, 0])
    assert done.done
    with pytest.raises(ValueError, match="over"):
        done.play([1, 1])
    mask = done.pixel_mask(done.used())
    assert mask.sum(1).tolist() == [2, 2] and mask[0, 0] and mask[0, 2] and not mask[0, 1]


def test_judge_verdict_on_revealed_pixels_only_and_turn_order_matters():
    # honest claims 1 (one bright pixel in column 1), the liar claims 2 (two pixels in column 2)
    imgs = images_with([[(0, 1, 255), (0, 2, 200), (9, 2, 200)]])
    judge = PixelJudge(PixelSum())
    games = PixelGames.new(imgs, [1], [2], PixelRules(pixels=2, first="honest"))
    rec = play(games, greedy_agent(), greedy_agent(), judge, torch.Generator())
    assert rec.log_rows()[0]["moves"][0] == [0, 1, "honest"]
    assert rec.log_rows()[0]["moves"][1][1:] == [2, "liar"]
    assert rec.honest_win.item() == 1.0  # 1.0 > 0.78
    assert rec.logits[0, 1].item() == pytest.approx(1.0)
    # three pixels, liar first: the liar shows both of its pixels, 1.57 > 1.0
    three = PixelGames.new(imgs, [1], [2], PixelRules(pixels=3, first="liar"))
    rec = play(three, greedy_agent(), greedy_agent(), judge, torch.Generator())
    assert rec.honest_win.item() == 0.0
    assert rec.logits[0, 2].item() == pytest.approx(400 / 255)
    assert rec.log_rows()[0]["honest_win"] is False


def test_nine_liars_and_image_aggregation():
    imgs = images_with([[(0, 0, 1), (0, 1, 1)], [(3, 3, 3), (4, 4, 4)]])
    rules = PixelRules(pixels=2, first="honest")
    games, image_of = liar_games(imgs, np.array([4, 9]), rules)
    assert len(games) == 18 and image_of.tolist() == [0] * 9 + [1] * 9
    for i, label in enumerate([4, 9]):
        liars = games.liar[image_of == i].tolist()
        assert sorted(liars) == sorted(set(range(10)) - {label})
    wins = torch.ones(18)
    wins[12] = 0.0  # one liar beats image 1
    assert image_honest_wins(wins, image_of, 2).tolist() == [True, False]
    no_pc, idx = liar_games(
        imgs, np.array([4, 9]), PixelRules(pixels=2, first="honest", precommit=False)
    )
    assert len(no_pc) == 2 and (no_pc.liar == -1).all() and idx.tolist() == [0, 1]


@pytest.mark.parametrize("max_batch", [4096, 1])
def test_policy_agents_choose_legal_pixels_and_greedy_is_exact(max_batch):
    """Also with the one-step positions judged in many pieces (max_batch 1: pieces of 16)."""
    rng = np.random.default_rng(3)
    imgs = np.zeros((4, 28, 28), np.uint8)
    for i in range(4):
        imgs[i, rng.integers(0, 28, 12), rng.integers(0, 10, 12)] = rng.integers(1, 255, 12)
    judge = PixelJudge(PixelSum(), max_batch=max_batch)
    games = PixelGames.new(imgs, [0, 1, 2, 3], [5, 6, 7, 8], PixelRules(pixels=4, first="honest"))
    gen = torch.Generator().manual_seed(0)
    for agent in (greedy_agent(), random_agent(), PolicyAgent(TopK(3))):
        slots = agent.moves(games, judge, gen)
        assert games.available().gather(1, slots[:, None]).all()
    # greedy honest maximises the one-step margin: +value in its column, -value in the liar's
    slots = greedy_agent().moves(games, judge, gen)
    for g in range(4):
        cand = games.candidates[g][games.valid[g]]
        v, col = games.values[g, cand], cand % 28
        gain = v * (col == g) - v * (col == g + 5)
        assert gain[slots[g]] == gain.max()


def test_planes_and_nonzero_masks():
    values = torch.zeros(3, 784)
    values[:, :5] = torch.tensor([0.1, 0.0, 0.3, 0.4, 0.5])
    masks = random_nonzero_masks(values, 3, torch.Generator().manual_seed(1))
    assert masks.sum(1).tolist() == [3, 3, 3]
    assert not masks[:, 1].any() and not masks[:, 5:].any()
    planes = pixel_planes(values, masks)
    assert planes.shape == (3, 2, 28, 28)
    assert torch.equal(planes[:, 0].reshape(3, -1), masks.float())
    assert torch.equal(planes[:, 1].reshape(3, -1), values * masks)
    with pytest.raises(ValueError, match="fewer than 5"):
        random_nonzero_masks(values, 5, torch.Generator())


def untimed(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if not k.endswith("_seconds")} for e in history]


def test_pixel_judge_training_is_deterministic_and_cached(tmp_path):
    rng = np.random.default_rng(0)
    imgs = (rng.random((96, 28, 28)) < 0.2).astype(np.uint8) * 200
    labels = rng.integers(0, 10, 96)
    cfg = PixelTrainConfig(pixels=4, epochs=2, batch_size=32, widths=(2, 4))
    a = train_pixel_judge(cfg, imgs, labels, progress=False)
    b = train_pixel_judge(cfg, imgs, labels, progress=False)
    assert untimed(a.history) == untimed(b.history)  # wall times differ run to run
    assert all(
        torch.equal(a.model.state_dict()[k], b.model.state_dict()[k]) for k in a.model.state_dict()
    )
    assert not any(p.requires_grad for p in a.model.parameters())
    # resume: one epoch, then a second, equals two at once
    part = tmp_path / "p.pt"
    train_pixel_judge(
        PixelTrainConfig(pixels=4, epochs=1, batch_size=32, widths=(2, 4)),
        imgs,
        labels,
        part,
        False,
    )
    c = train_pixel_judge(cfg, imgs, labels, part, False)
    assert untimed(c.history) == untimed(a.history)
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CacheError, match="unreadable"):
        load_pixel_checkpoint(bad)
    assert cfg.key() != PixelTrainConfig(pixels=6, epochs=2, batch_size=32, widths=(2, 4)).key()


def test_get_pixel_judge_uses_the_cache(tmp_path, monkeypatch):
    rng = np.random.default_rng(1)
    imgs = (rng.random((40, 28, 28)) < 0.2).astype(np.uint8) * 200
    labels = rng.integers(0, 10, 40)
    monkeypatch.setattr("debatelab.judges.pixel.load_raw", lambda *a, **k: (imgs, labels))
    cfg = PixelTrainConfig(pixels=4, epochs=1, batch_size=16, widths=(2, 4))
    first = get_pixel_judge(cfg, cache=tmp_path, progress=False)
    second = get_pixel_judge(cfg, cache=tmp_path, progress=False)
    assert not first.cached and second.cached and first.path == second.path
    sd1, sd2 = first.model.state_dict(), second.model.state_dict()
    assert all(torch.equal(sd1[k], sd2[k]) for k in sd1)


def test_the_demos_sparse_classifier_sees_any_pixel_with_probability_visible(tmp_path,
                                                                            monkeypatch):  # fmt: skip
    """DemoSparseConfig (the public demo's judge): every training sample shows each of the 784
    pixels independently with probability ``visible``, background included; it is cached under
    its own family and key, beside the K-nonzero-pixel judge."""
    from debatelab.judges import pixel as pixel_module
    from debatelab.judges.pixel import DemoSparseConfig, pixel_judge_config

    rng = np.random.default_rng(2)
    imgs = (rng.random((64, 28, 28)) < 0.2).astype(np.uint8) * 200
    labels = rng.integers(0, 10, 64)
    seen = []
    real = pixel_module.pixel_planes

    def spy(values, mask):
        seen.append((values, mask))
        return real(values, mask)

    monkeypatch.setattr(pixel_module, "pixel_planes", spy)
    monkeypatch.setattr(pixel_module, "load_raw", lambda *a, **k: (imgs, labels))
    cfg = DemoSparseConfig(pixels=6, visible=0.3, epochs=1, batch_size=32, widths=(2, 4))
    trained = get_pixel_judge(cfg, cache=tmp_path, progress=False)
    masks = torch.cat([m for _, m in seen])
    values = torch.cat([v for v, _ in seen])
    assert abs(masks.float().mean().item() - 0.3) < 0.01  # 64 x 784 draws
    assert (masks & (values == 0)).any()  # background pixels are shown too
    again = pixel_module.load_pixel_checkpoint(trained.path)
    assert again.family == "pixel-sparse" and again.config == cfg
    assert trained.path.name.startswith("mnist-pixelsparse30-s0-")
    assert pixel_judge_config("nonzero", 6, 0, 10) == PixelTrainConfig(pixels=6)
    with pytest.raises(ValueError, match="visible"):
        DemoSparseConfig(visible=0)


def test_the_mlp_judge_trains_caches_and_judges_through_its_sparse_path(tmp_path, monkeypatch):
    """PixelMLPConfig: the K-nonzero-pixel task learned by a PixelMLP, cached under its own
    family and key; the loaded checkpoint gives the trained model's logits, and the game judge
    takes the MLP's sparse path."""
    from debatelab.judges import pixel as pixel_module
    from debatelab.judges.mlp import PixelMLP
    from debatelab.judges.pixel import PixelMLPConfig, pixel_judge_config
    from debatelab.judges.pixel_fast import SparsePixelMLPForward

    rng = np.random.default_rng(3)
    imgs = (rng.random((64, 28, 28)) < 0.2).astype(np.uint8) * 200
    labels = rng.integers(0, 10, 64)
    monkeypatch.setattr(pixel_module, "load_raw", lambda *a, **k: (imgs, labels))
    cfg = PixelMLPConfig(pixels=4, epochs=2, batch_size=16, hidden=32)
    trained = get_pixel_judge(cfg, cache=tmp_path, progress=False)
    assert isinstance(trained.model, PixelMLP) and len(trained.history) == 2
    again = pixel_module.load_pixel_checkpoint(trained.path)
    assert again.family == "pixel-mlp" and again.config == cfg
    assert trained.path.name.startswith("mnist-pixelmlp4-s0-")
    values = pixel_values(imgs[:20])
    mask = random_nonzero_masks(values, 4, torch.Generator().manual_seed(0))
    judge = PixelJudge(again.model)
    assert isinstance(judge.sparse_forward(), SparsePixelMLPForward)
    with torch.inference_mode():
        expected = trained.model(pixel_planes(values, mask))
    assert torch.allclose(judge.logits(values, mask), expected, atol=1e-5)
    recipe = pixel_judge_config("mlp", 6, 0)
    assert (recipe.epochs, recipe.gamma, recipe.hidden) == (30, 0.9, 1024)
    assert pixel_judge_config("mlp", 6, 0, 5).epochs == 5
    with pytest.raises(ValueError, match="hidden"):
        PixelMLPConfig(hidden=0)
