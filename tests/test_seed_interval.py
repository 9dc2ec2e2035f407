"""docs/seed_interval.py tells seed-to-seed variation of a judge's accuracy from the image noise
of the shared test images. Checked against simulation with known truth: judges whose accuracy
on each image is the image's ease plus the judge's own offset, graded on a full test set of
10,000 images, the seeds compared on every tenth."""

import numpy as np
import pytest


def simulate(rng, sd_seed=0.02, n_full=10_000, step=10, n_seeds=5):
    """Per-image outcomes of seeds 0..n_seeds-1 on the shared images, seed 0's and a new seed's
    full-set accuracy, and the true image noise of one seed's accuracy on the shared images."""
    ease = rng.uniform(0.2, 0.9, n_full)
    offsets = rng.normal(0, sd_seed, n_seeds + 1)
    p = np.clip(ease[:, None] + offsets, 0, 1)
    hits = rng.random((n_full, n_seeds + 1)) < p
    shared = hits[::step, :n_seeds].astype(np.float64)
    q = p[::step, :n_seeds]
    true_image_sd = np.sqrt((q * (1 - q)).sum(axis=0).mean()) / len(q)
    return shared, hits[:, 0].mean(), hits[:, n_seeds].mean(), true_image_sd


def test_components_match_the_simulated_seed_and_image_spread(docs_module):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(0)
    seed_var, image_sd, true_image_sd = [], [], []
    for _ in range(300):
        shared, _, _, truth = simulate(rng)
        got_seed, got_image = seed_interval.variance_components(shared, np.ones(len(shared)))
        seed_var.append(got_seed**2)
        image_sd.append(got_image)
        true_image_sd.append(truth)
    # the seeds' own variance (0.02^2): the method of moments is unbiased but for its clip at 0
    assert np.mean(seed_var) == pytest.approx(0.02**2, rel=0.15)
    assert np.mean(image_sd) == pytest.approx(np.mean(true_image_sd), rel=0.05)


def test_unequal_chunks_give_the_components_of_their_images(docs_module):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(1)
    sizes = np.array([8, 200, 16, 120, 40, 200, 8, 64, 150, 24, 100, 70])  # 1,000 images
    edges = np.cumsum(np.r_[0, sizes])
    seed_var, image_sd, true_image_sd = [], [], []
    for _ in range(200):
        shared, _, _, truth = simulate(rng)
        chunks = np.stack(
            [shared[a:b].mean(axis=0) for a, b in zip(edges[:-1], edges[1:], strict=True)]
        )
        got_seed, got_image = seed_interval.variance_components(chunks, sizes.astype(float))
        seed_var.append(got_seed**2)
        image_sd.append(got_image)
        true_image_sd.append(truth)
    # 12 chunks estimate the image noise with 11 x 4 degrees of freedom: close on average
    assert np.mean(image_sd) == pytest.approx(np.mean(true_image_sd), rel=0.1)
    assert np.mean(seed_var) == pytest.approx(0.02**2, rel=0.2)


@pytest.mark.parametrize("sd_seed", [0.0, 0.02])
def test_the_prediction_sd_is_the_spread_of_a_new_seed_about_the_centre(docs_module, sd_seed):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(2)
    misses, predicted = [], []
    for _ in range(1000):
        shared, seed0_full, new_full, truth = simulate(rng, sd_seed)
        centre = shared.mean(axis=0).mean() + seed0_full - shared[:, 0].mean()
        misses.append(new_full - centre)
        predicted.append(seed_interval.prediction_sd(sd_seed, truth, 5, 0.1) ** 2)
    # 1,000 draws: the variance to about 4.5 % (one standard error)
    assert np.var(misses) == pytest.approx(np.mean(predicted), rel=0.12)


def test_new_seeds_full_set_values_fall_in_the_interval_about_95_percent(docs_module):
    seed_interval = docs_module("seed_interval")
    rng = np.random.default_rng(3)
    inside = []
    for _ in range(400):
        shared, seed0_full, new_full, _ = simulate(rng)
        got = seed_interval.seed_interval(shared, np.ones(len(shared)), seed0_full, 10_000)
        inside.append(got["low"] <= new_full <= got["high"])
    # 400 draws of a 95 % interval: 0.95 +- 3 binomial standard errors (0.011)
    assert 0.91 <= np.mean(inside) <= 0.99
