"""Preprocessing: resize, standardisation and per-class ZCA whitening (REFERENCE B)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from debatelab.data import check_variant, load_variant
from debatelab.data.preprocess import ZCA_SHRINKAGE, per_class_zca, resize


def test_unknown_variant_lists_the_names():
    with pytest.raises(ValueError, match="mnist-whitened"):
        check_variant("mnist-white")


def test_resize_is_antialiased_mean_preserving():
    x = np.zeros((1, 28, 28), dtype=np.uint8)
    x[0, ::2] = 255  # stripes alias badly without antialiasing
    out = resize(x, 18)
    assert out.shape == (1, 1, 18, 18)
    assert abs(out.mean().item() - 0.5) < 0.02 and out.std().item() < 0.2


@pytest.fixture(scope="module")
def whitened(data_root):
    return load_variant("mnist-whitened", data_root)


def test_standardised_training_statistics(mnist):
    assert abs(mnist.x_train.mean().item()) < 1e-4
    assert abs(mnist.x_train.std().item() - 1) < 1e-3
    assert mnist.x_train.shape == (60000, 1, 18, 18) and mnist.x_test.shape == (10000, 1, 18, 18)


def test_whitening_statistics_per_class(mnist, whitened):
    """Per class: mean = global mean; covariance = Sigma (Sigma + eps I)^-1, close to I."""
    raw = torch.cat([mnist.x_train, mnist.x_test]).reshape(70000, -1).double().numpy()
    wh = torch.cat([whitened.x_train, whitened.x_test]).reshape(70000, -1).double().numpy()
    labels = np.concatenate([mnist.y_train.numpy(), mnist.y_test.numpy()])
    global_mean = raw.mean(0)
    d = raw.shape[1]
    for k in (0, 3, 8):
        idx = labels == k
        assert np.abs(wh[idx].mean(0) - global_mean).max() < 1e-4
        cov_raw = np.cov(raw[idx], rowvar=False)
        eps = ZCA_SHRINKAGE * np.trace(cov_raw) / d
        lam = np.linalg.eigvalsh(cov_raw)
        expected = np.sort(lam / (lam + eps))  # shrinkage leaves eigenvalues just under 1
        got = np.linalg.eigvalsh(np.cov(wh[idx], rowvar=False))
        assert np.abs(got - expected).max() < 1e-3
        # directions well above the shrinkage are whitened to ~1; none exceeds 1
        n_big = int((lam > 10 * eps).sum())
        assert n_big > 10 and got.max() < 1.0 + 1e-3
        assert (np.sort(got)[-n_big:] > 0.9).all()


def _linear_probe_accuracy(xtr, ytr, xte, yte, steps=300):
    gen = torch.Generator().manual_seed(0)
    w = torch.zeros(xtr.shape[1], 10, requires_grad=True)
    b = torch.zeros(10, requires_grad=True)
    opt = torch.optim.Adam([w, b], lr=0.01)
    for _ in range(steps):
        idx = torch.randint(0, len(xtr), (1024,), generator=gen)
        loss = torch.nn.functional.cross_entropy(xtr[idx] @ w + b, ytr[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
    return ((xte @ w + b).argmax(1) == yte).float().mean().item()


def test_linear_classifier_is_near_chance_on_whitened_data(mnist, whitened):
    def flat(d, n):
        return d.x_train[:n].reshape(n, -1), d.y_train[:n], d.x_test.reshape(10000, -1), d.y_test

    raw_acc = _linear_probe_accuracy(*flat(mnist, 20000))
    white_acc = _linear_probe_accuracy(*flat(whitened, 20000))
    assert raw_acc > 0.85  # the probe works on raw data
    assert white_acc < 0.2, f"linear probe on whitened data: {white_acc:.3f}"


def test_zca_needs_two_samples_per_class():
    x = torch.randn(11, 1, 2, 2)
    y = np.array([0] * 10 + [1])
    with pytest.raises(ValueError, match="class 1 has 1 samples"):
        per_class_zca(x, y, n_classes=2)
