"""One judge interface and one checkpoint format for every judge family."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from debatelab.errors import CacheError
from debatelab.geometry import Grid, all_masks, masks_to_bool
from debatelab.interfaces import FactorisedJudge, Judge
from debatelab.judges import CellJudge, JudgeCNN, TrainConfig, load_judge
from debatelab.judges.pixel import PixelJudge, PixelTrainConfig, load_pixel_checkpoint
from debatelab.judges.train import cached_judge, find_cached, judge_path


def small_cell_judge():
    torch.manual_seed(0)
    return CellJudge(JudgeCNN(1, (4, 8), image_size=18).eval(), Grid(18, 6), max_batch=7)


def test_every_family_satisfies_the_judge_protocol():
    cell = small_cell_judge()
    torch.manual_seed(1)
    pixel = PixelJudge(JudgeCNN(2, (2, 4), image_size=28).eval())
    assert isinstance(cell, Judge) and isinstance(pixel, Judge)
    assert isinstance(cell, FactorisedJudge) and not isinstance(pixel, FactorisedJudge)
    assert cell.n_classes == pixel.n_classes == 10


def test_cell_judge_logits_and_factorised_path_agree():
    """The all-masks path equals the plain path (masked images through the model), batched in
    forward passes of at most max_batch, with evaluations counted."""
    judge = small_cell_judge()
    images = torch.randn(2, 1, 18, 18)
    probs = judge.all_mask_probs(images, reveal=2)
    masks = all_masks(36, 2)
    pick = np.random.default_rng(0).choice(len(masks), 20, replace=False)
    bool_masks = torch.as_tensor(masks_to_bool(masks[pick], 36))
    for i in range(2):
        logits = judge.logits(images[i : i + 1].expand(20, -1, -1, -1), bool_masks)
        direct = torch.softmax(logits, dim=1).numpy()
        np.testing.assert_allclose(probs[i, pick], direct, atol=1e-5)
    assert judge.evaluations == 40


def test_one_checkpoint_format_for_every_family(tmp_path):
    """Both families go through one cache step and one file format (family, config, model
    config, weights, history); loading checks the family."""
    torch.manual_seed(0)
    families = []
    for config, model in ((TrainConfig(kind="gold", epochs=1), JudgeCNN(1, (4, 8))),
                          (PixelTrainConfig(pixels=3, epochs=1), JudgeCNN(2, (2, 4), image_size=28))):  # fmt: skip
        from debatelab.judges.train import TrainedJudge

        made = cached_judge(config, tmp_path, False,
                            lambda partial, c=config, m=model: TrainedJudge(m, c, [{"loss": 1.0}]))  # fmt: skip
        assert made.path == judge_path(config, tmp_path)
        payload = torch.load(made.path, weights_only=True)
        assert payload["format"] == "debatelab-judge/2" and payload["family"] == config.family
        loaded = find_cached(config, tmp_path)
        assert loaded.config == config and loaded.family == config.family and loaded.cached
        for name, tensor in model.state_dict().items():
            assert torch.equal(loaded.model.state_dict()[name], tensor)
        families.append(made.path)
    with pytest.raises(CacheError, match="not a pixel judge"):
        load_pixel_checkpoint(families[0])
    assert find_cached(TrainConfig(kind="sparse"), tmp_path) is None


def test_checkpoints_of_the_previous_formats_still_load(tmp_path):
    torch.manual_seed(0)
    model = JudgeCNN(2, (2, 4), image_size=28)
    config = PixelTrainConfig(pixels=3)
    from dataclasses import asdict

    path = tmp_path / "old.pt"
    torch.save({"format": "debatelab-pixel-judge/1", "model_config": model.config(),
                "train_config": asdict(config), "state_dict": model.state_dict(),
                "history": []}, path)  # fmt: skip
    judge = load_judge(path)
    assert judge.family == "pixel" and judge.config == config
    path.write_bytes(b"not a checkpoint")
    with pytest.raises(CacheError, match="unreadable"):
        load_judge(path)
