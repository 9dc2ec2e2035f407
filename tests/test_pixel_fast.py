"""The sparse forwards of the pixel judges (CNN and MLP) equal their dense forwards (issue 18:
1e-5).

The two sum in different orders in float32, so they differ by a few units in the last place of
the logits: 1e-5 absolute plus 1e-5 relative to the logit. These test models' weights are far
from a trained judge's and reach logits near 30, where the largest difference measured was
1.05e-5 (3.5e-7 relative, an AMD EPYC machine of this kind; under 1e-5 on others)."""

from __future__ import annotations

import pytest
import torch

from debatelab.judges.cnn import JudgeCNN
from debatelab.judges.mlp import PixelMLP
from debatelab.judges.pixel import PixelJudge, pixel_planes, random_nonzero_masks
from debatelab.judges.pixel_fast import SparsePixelForward, SparsePixelMLPForward, compact_pixels


def judge_model(widths=(16, 32), seed=0) -> JudgeCNN:
    """The pixel judge's architecture with weights far from their init (biases of both signs,
    so ReLUs cut on the background too)."""
    torch.manual_seed(seed)
    model = JudgeCNN(in_channels=2, widths=widths, image_size=28).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model


def dense(model, values, mask):
    with torch.inference_mode():
        return model(pixel_planes(values, mask))


@pytest.mark.parametrize("pixels", [1, 2, 4, 6, 20])
@pytest.mark.parametrize("widths", [(16, 32), (4, 8)])
def test_sparse_equals_dense_on_random_positions(pixels, widths):
    model = judge_model(widths, seed=pixels)
    gen = torch.Generator().manual_seed(pixels)
    values = torch.rand(300, 784, generator=gen) * (torch.rand(300, 784, generator=gen) < 0.3)
    mask = random_nonzero_masks(values, pixels, gen)
    fast = SparsePixelForward(model)(*compact_pixels(values, mask))
    assert torch.allclose(fast, dense(model, values, mask), atol=1e-5, rtol=1e-5)


def test_sparse_equals_dense_at_borders_clusters_and_uneven_rows():
    """Corners and edges (clamped blocks), adjacent pixels (overlapping blocks, counted once),
    rows revealing 0..9 pixels in one batch, and zero-valued revealed pixels."""
    model = judge_model()
    gen = torch.Generator().manual_seed(1)
    values = torch.rand(200, 784, generator=gen)
    values[:, ::7] = 0.0
    mask = torch.zeros(200, 784, dtype=torch.bool)
    corners = torch.tensor([0, 27, 756, 783, 28, 55, 1, 782])
    for i in range(200):
        n = i % 10
        start = int(torch.randint(0, 784 - 60, (1,), generator=gen))
        cluster = torch.tensor([start, start + 1, start + 28, start + 29, start + 57])
        pool = torch.cat([corners, cluster, torch.randint(0, 784, (4,), generator=gen)])
        chosen = pool[torch.randperm(len(pool), generator=gen)][:n]
        mask[i, chosen] = True
    fast = SparsePixelForward(model)(*compact_pixels(values, mask))
    assert torch.allclose(fast, dense(model, values, mask), atol=1e-5, rtol=1e-5)


def test_compact_pixels_lists_each_rows_pixels_in_order():
    mask = torch.zeros(3, 784, dtype=torch.bool)
    mask[0, [5, 700, 3]] = True
    mask[2, 10] = True
    values = torch.arange(784.0).expand(3, 784) / 784
    pixels, vals, present = compact_pixels(values, mask)
    assert present.tolist() == [[True] * 3, [False] * 3, [True, False, False]]
    assert pixels[0].tolist() == [3, 5, 700] and int(pixels[2, 0]) == 10
    assert torch.equal(vals, values.gather(1, pixels) * present)


def test_pixel_judge_takes_the_sparse_path_and_agrees_with_dense(monkeypatch):
    model = judge_model()
    sparse, dense_judge = PixelJudge(model, max_batch=7), PixelJudge(model, sparse_limit=0)
    calls = []
    original = SparsePixelForward.__call__
    monkeypatch.setattr(SparsePixelForward, "__call__",
                        lambda self, *a: calls.append(len(a[0])) or original(self, *a))  # fmt: skip
    gen = torch.Generator().manual_seed(2)
    values = torch.rand(64, 784, generator=gen)
    mask = random_nonzero_masks(values, 6, gen)
    mask[::5] = False  # rows revealing nothing, split across batches of 7
    assert torch.allclose(sparse.logits(values, mask), dense_judge.logits(values, mask), atol=1e-5)
    assert calls == [7] * 9 + [1]
    # up to the limit the sparse path still agrees; above it the judge runs the dense forward
    limit = random_nonzero_masks(values, 32, gen)
    assert torch.allclose(sparse.logits(values, limit), dense_judge.logits(values, limit),
                          atol=1e-5, rtol=1e-5)  # fmt: skip
    calls.clear()
    many = random_nonzero_masks(values, 40, gen)
    assert torch.allclose(sparse.logits(values, many), dense_judge.logits(values, many), atol=1e-5)
    assert calls == []


def test_pixel_judge_follows_its_model():
    """New weights rebuild the sparse path; train mode (dropout) and float64 weights take the
    dense forward."""
    model = judge_model()
    judge = PixelJudge(model)
    gen = torch.Generator().manual_seed(3)
    values = torch.rand(16, 784, generator=gen)
    mask = random_nonzero_masks(values, 6, gen)
    before = judge.logits(values, mask)
    with torch.no_grad():
        model.fc2.bias.add_(1.0)
        model.conv1.weight.mul_(2.0)
    after = judge.logits(values, mask)
    assert not torch.allclose(before, after)
    assert torch.allclose(after, dense(model, values, mask), atol=1e-5)
    model.train()
    assert judge.sparse_forward() is None
    model.eval().double()
    assert judge.sparse_forward() is None


def test_sparse_forward_refuses_other_layouts():
    with pytest.raises(ValueError, match="dense forward"):
        SparsePixelForward(JudgeCNN(in_channels=1, image_size=18))


def mlp_model(hidden=64, seed=0) -> PixelMLP:
    torch.manual_seed(seed)
    model = PixelMLP(hidden=hidden).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn_like(p))
    return model


@pytest.mark.parametrize("pixels", [1, 4, 6, 20])
def test_sparse_mlp_equals_dense_on_random_positions(pixels):
    """The MLP judge's sparse first layer (2K weighted columns), uneven rows and zero-valued
    revealed pixels included, against its dense forward."""
    model = mlp_model(seed=pixels)
    gen = torch.Generator().manual_seed(pixels)
    values = torch.rand(300, 784, generator=gen) * (torch.rand(300, 784, generator=gen) < 0.3)
    mask = random_nonzero_masks(values, pixels, gen)
    mask[::7] = False
    mask[1::7, 0] = True  # a revealed zero
    fast = SparsePixelMLPForward(model)(*compact_pixels(values, mask))
    assert torch.allclose(fast, dense(model, values, mask), atol=1e-5, rtol=1e-5)
    # and the judge picks it for the MLP, and follows new weights
    judge = PixelJudge(model)
    assert isinstance(judge.sparse_forward(), SparsePixelMLPForward)
    with torch.no_grad():
        model.fc1.weight.mul_(2.0)
    assert torch.allclose(judge.logits(values, mask), dense(model, values, mask), atol=1e-5,
                          rtol=1e-5)  # fmt: skip
    model.train()
    assert judge.sparse_forward() is None
