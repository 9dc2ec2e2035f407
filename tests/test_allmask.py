"""Exact all-mask probabilities: the fast path against the naive one, and the resumable store."""

from __future__ import annotations

from math import comb

import numpy as np
import pytest
import torch

from debatelab import JudgeCNN
from debatelab.errors import CacheError
from debatelab.geometry import Grid, all_masks, masks_to_bool
from debatelab.judges.allmask import _compact, all_mask_probs
from debatelab.judges.columns import column_hits
from debatelab.store import dump_all_mask_probs, open_store, parse_image_range


def _random_judge(in_channels, widths, image_size=18, seed=0):
    torch.manual_seed(seed)
    model = JudgeCNN(in_channels, widths, image_size=image_size)
    with torch.no_grad():  # larger weights make the logits spread, a sharper test
        for p in model.parameters():
            p.mul_(2.0)
    return model.eval()


@pytest.mark.parametrize(
    "in_channels,widths,image_size,grid,reveal",
    [
        (1, (32, 64), 18, 6, 2),
        (3, (64, 128), 18, 6, 1),
        (1, (8, 16), 18, 3, 3),
        (3, (8, 16), 18, 9, 1),
        (1, (4, 8), 12, 4, 3),
        (2, (4, 8), 16, 2, 2),
        (1, (4, 8), 20, 5, 2),
    ],
)
def test_fast_equals_naive(in_channels, widths, image_size, grid, reveal):
    model = _random_judge(in_channels, widths, image_size)
    images = torch.randn(
        3, in_channels, image_size, image_size, generator=torch.Generator().manual_seed(1)
    )
    fast = all_mask_probs(model, images, grid, reveal, batch_images=2)
    naive = all_mask_probs(model, images, grid, reveal, method="naive")
    assert fast.shape == (3, comb(grid * grid, reveal), 10) and fast.dtype == np.float32
    assert np.abs(fast - naive).max() <= 1e-5


def test_fast_equals_naive_on_mnist_four_cells(mnist):
    """The published setting on real images: all 58,905 masks fast, 6,000 of them checked
    against masked images pushed through the model (the naive path on every mask takes ~15 s
    per image and is covered by the benchmark)."""
    model = _random_judge(1, (32, 64), seed=3)
    x = mnist.x_test[:2]
    fast = all_mask_probs(model, x)
    grid = Grid(18, 6)
    pick = np.random.default_rng(0).choice(comb(36, 4), size=6000, replace=False)
    masks = torch.from_numpy(masks_to_bool(all_masks(36, 4)[pick], 36))
    with torch.inference_mode():
        for i in range(len(x)):
            naive = torch.softmax(
                model(grid.apply(x[i : i + 1].expand(len(pick), -1, -1, -1), masks)), 1
            )
            assert np.abs(fast[i, pick] - naive.numpy()).max() <= 1e-5


@pytest.mark.parametrize("n,size", [(200, 50), (200, 1000), (200, 5000), (30, 400)])
def test_compact_equals_torch_unique(n, size):
    """Each way of compacting (marks read back by nonzero or from their positions, sorting
    when the values are few against the range) equals torch.unique with its inverse."""
    values = torch.randint(0, size, (n // 10, 10), generator=torch.Generator().manual_seed(n))
    unique, inverse = _compact(values, size)
    expected, expected_inverse = torch.unique(values, return_inverse=True)
    assert torch.equal(unique, expected) and torch.equal(inverse, expected_inverse)


def test_all_mask_probs_rejects_bad_input():
    model = _random_judge(1, (4, 8))
    with pytest.raises(ValueError, match=r"expects \(N, 1, 18, 18\)"):
        all_mask_probs(model, torch.zeros(2, 3, 18, 18))
    with pytest.raises(ValueError, match="unknown method"):
        all_mask_probs(model, torch.zeros(2, 1, 18, 18), method="fastest")
    with pytest.raises(ValueError, match="not divisible"):
        all_mask_probs(model, torch.zeros(2, 1, 18, 18), grid=4)


def test_model_mode_is_restored():
    model = _random_judge(1, (4, 8)).train()
    all_mask_probs(model, torch.zeros(1, 1, 18, 18), grid=3, reveal=2)
    assert model.training


def _dump(path, model, images, **kw):
    return dump_all_mask_probs(model, images, path, grid=6, reveal=2, chunk_images=2,
                               attrs={"variant": "test"}, progress=False, **kw)  # fmt: skip


def test_interrupted_dump_resumes_to_the_same_store(tmp_path, monkeypatch):
    model = _random_judge(1, (8, 16))
    images = torch.randn(7, 1, 18, 18, generator=torch.Generator().manual_seed(2))
    whole = _dump(tmp_path / "whole.zarr", model, images)
    assert whole.complete

    calls = []
    import debatelab.store as store_module

    real = store_module.all_mask_probs

    def counting(*args, **kwargs):
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(store_module, "all_mask_probs", counting)
    part = _dump(tmp_path / "part.zarr", model, images, stop_after_chunks=2)
    assert not part.complete and part.done.tolist() == [True, True, False, False]
    resumed = _dump(tmp_path / "part.zarr", model, images)
    assert resumed.complete
    assert calls == [2, 2, 2, 1]  # the resume computed only the two missing chunks
    assert np.array_equal(resumed.probs[:], whole.probs[:])
    _dump(tmp_path / "part.zarr", model, images)  # finished: nothing recomputed
    assert calls == [2, 2, 2, 1]
    expected = all_mask_probs(model, images, 6, 2).astype(np.float16)
    assert np.array_equal(whole.probs[:], expected)


def test_store_with_other_settings_or_damage_is_a_clear_error(tmp_path):
    model = _random_judge(1, (8, 16))
    images = torch.randn(3, 1, 18, 18)
    _dump(tmp_path / "s.zarr", model, images)
    other = _random_judge(1, (8, 16), seed=5)
    with pytest.raises(CacheError, match="other settings.*judge_fingerprint"):
        _dump(tmp_path / "s.zarr", other, images)
    (tmp_path / "s.zarr" / "zarr.json").write_text("{not json")
    with pytest.raises(CacheError, match="unreadable"):
        open_store(tmp_path / "s.zarr")


def test_parse_image_range():
    assert parse_image_range("all", 100) == (0, 100)
    assert parse_image_range("10:20", 100) == (10, 20)
    assert parse_image_range("30", 100) == (0, 30)
    for bad in ("20:10", "0:101", "a:b", ""):
        with pytest.raises(ValueError, match="image range"):
            parse_image_range(bad, 100)


def test_reference_columns_on_a_hand_made_example():
    # two images, three masks, three classes
    probs = np.array([
        [[0.6, 0.3, 0.1], [0.2, 0.7, 0.1], [0.5, 0.1, 0.4]],
        [[0.1, 0.1, 0.8], [0.4, 0.5, 0.1], [0.3, 0.3, 0.4]],
    ], dtype=np.float32)  # fmt: skip
    labels = np.array([0, 1])
    gold_pred = np.array([1, 1])  # image 0: gold is wrong, judge most sure of class 1 on mask 1
    hits = column_hits(probs, labels, gold_pred)
    assert np.allclose(hits["sparse"], [2 / 3, 1 / 3])
    assert hits["ensemble"].tolist() == [1.0, 0.0]  # means (.43,.37,.2) and (.27,.3,.43)
    assert hits["perfect"].tolist() == [0.0, 1.0]


def test_a_dump_that_cannot_fit_stops_with_one_clear_error_before_writing(tmp_path, monkeypatch):
    """7 images x C(36, 2) masks x 10 classes in float16 need 88,200 bytes (rounded up to whole
    chunks: 8 images, 100,800); with less free, the dump refuses before computing any chunk."""
    import shutil as real_shutil
    from collections import namedtuple

    import debatelab.store as store_module
    from debatelab.errors import CacheError

    usage = namedtuple("usage", "total used free")
    fake = type("FakeShutil", (), {"disk_usage": staticmethod(lambda p: usage(1, 1, 100_000)),
                                   "rmtree": staticmethod(real_shutil.rmtree)})  # fmt: skip
    monkeypatch.setattr(store_module, "shutil", fake)
    model = _random_judge(1, (8, 16))
    images = torch.randn(7, 1, 18, 18, generator=torch.Generator().manual_seed(2))
    with pytest.raises(CacheError, match=r"needs about 0\.0 GB more .* DEBATELAB_CACHE"):
        _dump(tmp_path / "big.zarr", model, images)
    assert not store_module.open_store(tmp_path / "big.zarr").done.any()
    fake.disk_usage = staticmethod(lambda p: usage(1, 1, 100_800))
    assert _dump(tmp_path / "big.zarr", model, images).complete  # exactly enough: it runs


def test_a_part_of_a_finished_whole_test_set_store_is_copied_not_computed(tmp_path, monkeypatch):
    """dump_store reads a slice of the test set from the whole set's finished store of the same
    judge (the numbers a dump would compute, bit for bit); an unfinished whole store, or one of
    another judge under the same key, is not used."""
    from types import SimpleNamespace

    import debatelab.store as store_module
    from debatelab.experiments.setup import dump_store

    model = _random_judge(1, (8, 16))
    x_test = torch.randn(20, 1, 18, 18, generator=torch.Generator().manual_seed(3))
    setup = SimpleNamespace(
        data=SimpleNamespace(x_test=x_test),
        config=SimpleNamespace(variant="test", grid=6, reveal=2),
        sparse=SimpleNamespace(model=model, config=SimpleNamespace(key=lambda: "judge-key")),
    )
    computed = []
    real = store_module.all_mask_probs
    monkeypatch.setattr(store_module, "all_mask_probs",
                        lambda m, images, **kw: computed.append(len(images)) or real(m, images, **kw))  # fmt: skip

    def dump(images):
        return dump_store(setup, images, tmp_path, progress=False)

    expected = real(model, x_test, grid=6, reveal=2).astype(np.float16)
    part = dump("1:17:4")  # no whole store yet: computed
    assert computed == [4] and np.array_equal(part.probs[:], expected[1:17:4])
    whole = dump("all")
    assert whole.complete and sum(computed) == 4 + 20
    computed.clear()
    for images, rows in (("0:20:3", slice(0, 20, 3)), ("5:12", slice(5, 12))):
        copied = dump(images)
        assert computed == [] and copied.complete
        assert np.array_equal(copied.probs[:], expected[rows])
        assert copied.attrs["judge_fingerprint"] == whole.attrs["judge_fingerprint"]

    setup.sparse.model = _random_judge(1, (8, 16), seed=5)  # retrained under the same key
    other = dump("2:6")
    assert computed == [4]
    assert np.array_equal(other.probs[:], real(setup.sparse.model, x_test[2:6], grid=6,
                                               reveal=2).astype(np.float16))  # fmt: skip

    import shutil

    from debatelab.store import store_path

    whole_path = store_path("test", "judge-key", 6, 2, 0, 20, tmp_path)
    shutil.rmtree(whole_path)  # an unfinished whole store of this judge: not read
    unfinished = dump_all_mask_probs(setup.sparse.model, x_test, whole_path, grid=6, reveal=2,
                                     chunk_images=4, progress=False, stop_after_chunks=3)  # fmt: skip
    assert not unfinished.complete
    computed.clear()
    assert np.array_equal(dump("8:12").probs[:], real(setup.sparse.model, x_test[8:12], grid=6,
                                                      reveal=2).astype(np.float16))  # fmt: skip
    assert computed == [4]
