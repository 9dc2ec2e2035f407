"""Judge training: a tiny end-to-end run, determinism, resume, cache and atomic writes."""

from __future__ import annotations

import pytest
import torch

from debatelab import JudgeCNN
from debatelab.errors import CacheError
from debatelab.judges import TrainConfig, get_judge, load_checkpoint, train_judge
from debatelab.judges.train import _save


def tiny(kind="sparse", **kw):
    return TrainConfig(kind=kind, epochs=2, batch_size=64, train_limit=512, **kw)


def _same_weights(a, b):
    return all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


def test_judge_cnn_shapes_and_input_check():
    model = JudgeCNN(in_channels=3, widths=(64, 128))
    assert model(torch.zeros(5, 3, 18, 18)).shape == (5, 10)
    assert model.fc1.in_features == 128 * 16
    with pytest.raises(ValueError, match=r"expects images \(B, 3, 18, 18\)"):
        model(torch.zeros(5, 1, 18, 18))


def test_tiny_training_is_deterministic_and_learns(mnist):
    a = train_judge(tiny("gold"), mnist, progress=False)
    b = train_judge(tiny("gold"), mnist, progress=False)
    assert _same_weights(a.model, b.model)
    assert a.history[-1]["loss"] < a.history[0]["loss"]
    c = train_judge(tiny("gold", seed=1), mnist, progress=False)
    assert not _same_weights(a.model, c.model)


def test_resume_after_interruption_equals_uninterrupted(mnist, tmp_path):
    full = train_judge(tiny(), mnist, progress=False)
    partial = tmp_path / "p.pt"
    cfg_one = tiny()
    cfg_one.epochs = 1  # "interrupted" after the first epoch; its checkpoint carries the RNGs
    train_judge(cfg_one, mnist, resume_path=partial, progress=False)
    resumed = train_judge(tiny(), mnist, resume_path=partial, progress=False)
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in full.history]
    assert _same_weights(full.model, resumed.model)


def test_cache_reuses_trained_judge(mnist, cache):
    first = get_judge(tiny(), mnist, progress=False)
    assert not first.cached and first.path.exists()
    assert not list(first.path.parent.glob("*.partial.pt"))
    second = get_judge(tiny(), mnist, progress=False)
    assert second.cached and second.path == first.path
    assert _same_weights(first.model, second.model)
    assert load_checkpoint(first.path).config == tiny()


def test_unreadable_cache_entry_is_a_clear_error(mnist, cache):
    judge = get_judge(tiny(), mnist, progress=False)
    judge.path.write_bytes(judge.path.read_bytes()[:100])
    with pytest.raises(CacheError, match="unreadable.*delete it"):
        get_judge(tiny(), mnist, progress=False)


def test_failed_write_leaves_nothing_behind(tmp_path):
    target = tmp_path / "ckpt.pt"
    with pytest.raises((TypeError, AttributeError)):
        _save(target, {"format": "x", "bad": lambda: None})  # lambdas cannot be pickled
    assert list(tmp_path.iterdir()) == []


def test_judge_keys_change_with_the_dataset_revision(monkeypatch):
    """A reader change (a new data revision) gives new judge keys, hence new stores: nothing
    made from the old images is reused; other datasets keep their keys."""
    from debatelab.data import sources
    from debatelab.judges.train import TrainConfig

    now = {v: TrainConfig(v, "sparse").key() for v in ("cifar10", "cifar10-whitened", "mnist")}
    monkeypatch.setattr(sources, "DATA_REVISIONS", {})
    before = {v: TrainConfig(v, "sparse").key() for v in now}
    assert (
        now["cifar10"] != before["cifar10"]
        and now["cifar10-whitened"] != before["cifar10-whitened"]
    )
    assert now["mnist"] == before["mnist"] and now["cifar10"].startswith("cifar10-sparse-s0-")
