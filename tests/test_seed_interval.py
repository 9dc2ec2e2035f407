"""docs/seed_interval.py tells seed-to-seed variation of a judge's accuracy from the image noise
of the shared test images. Checked against simulation with known truth: judges whose accuracy
on each image is the image's ease plus the judge's own offset, graded on a full test set of
10,000 images, the seeds compared on every tenth."""

import numpy as np
import pytest


def simulate(rng, n_full=10_000, step=10, n_seeds=5, sd_seed=0.02):
    """Per-image outcomes of seeds 0..n_seeds-1 and one new seed, and the true seed offsets."""
    ease = rng.uniform(0.2, 0.9, n_full)
    offsets = rng.normal(0, sd_seed, n_seeds + 1)
    hits = rng.random((n_full, n_seeds + 1)) < np.clip(ease[:, None] + offsets, 0, 1)
    shared = hits[::step, :n_seeds].astype(np.float64)
    return shared, hits[:, 0].mean(), hits[:, n_seeds].mean(), ease, offsets


def test_components_match_the_simulated_seed_and_image_spread(docs_module):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(0)
    seed_var, image_sd, true_image_sd = [], [], []
    for _ in range(300):
        shared, _, _, ease, offsets = simulate(rng)
        got_seed, got_image = seed_interval.variance_components(shared, np.ones(len(shared)))
        seed_var.append(got_seed**2)
        image_sd.append(got_image)
        p = np.clip(ease[::10], 0, 1)
        true_image_sd.append(np.sqrt((p * (1 - p)).sum()) / len(p))
    # the seeds' own variance (0.02^2): the method of moments is unbiased but for its clip at 0
    assert np.mean(seed_var) == pytest.approx(0.02**2, rel=0.15)
    assert np.mean(image_sd) == pytest.approx(np.mean(true_image_sd), rel=0.05)


def test_chunk_units_give_the_same_components_as_images(docs_module):
    seed_interval = docs_module("seed_interval")
    shared, *_ = simulate(np.random.default_rng(1))
    sizes = np.array([64] * 15 + [40])
    edges = np.cumsum(np.r_[0, sizes])
    chunks = np.stack(
        [shared[a:b].mean(axis=0) for a, b in zip(edges[:-1], edges[1:], strict=True)]
    )
    by_image = seed_interval.variance_components(shared, np.ones(len(shared)))
    by_chunk = seed_interval.variance_components(chunks, sizes.astype(float))
    # 16 chunks estimate the image noise with 15 x 4 degrees of freedom, not 999 x 4
    assert by_chunk[1] == pytest.approx(by_image[1], rel=0.35)
    assert np.var(chunks.T @ sizes / sizes.sum(), ddof=1) == pytest.approx(
        np.var(shared.mean(axis=0), ddof=1)
    )


def test_new_seeds_full_set_values_fall_in_the_interval_about_95_percent(docs_module):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(2)
    inside = []
    for _ in range(400):
        shared, seed0_full, new_full, *_ = simulate(rng)
        got = seed_interval.seed_interval(shared, np.ones(len(shared)), seed0_full)
        inside.append(got["low"] <= new_full <= got["high"])
    # 400 draws of a 95 % interval: 0.95 +- 3 binomial standard errors (0.011)
    assert 0.91 <= np.mean(inside) <= 0.99
