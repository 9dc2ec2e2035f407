"""The frozen-judge sweep on a tiny store (3x3 grid, 9 cells): plan, resume, metrics, outputs."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from debatelab.experiments.sweep import (
    SweepPlan,
    capability_ks,
    exact_play_metrics,
    run_sweep,
    solve_chunk,
)
from debatelab.experiments.sweep_report import frozen_judge_sweep
from debatelab.games.solver import solve_reveal_game
from debatelab.judges.cnn import JudgeCNN
from debatelab.report.runs import RunFolder
from debatelab.store import dump_all_mask_probs


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A store of 20 random 18x18 images under an untrained judge, 3x3 grid, 4 cells."""
    torch.manual_seed(0)
    model = JudgeCNN().eval()
    images = torch.randn(20, 1, 18, 18)
    path = tmp_path_factory.mktemp("store") / "tiny.zarr"
    store = dump_all_mask_probs(model, images, path, grid=3, reveal=4, chunk_images=8,
                                progress=False)  # fmt: skip
    labels = np.random.default_rng(0).integers(0, 10, 20)
    return store, labels, images.numpy()


def test_capability_ks_are_log_spaced_and_span_the_range():
    ks = capability_ks(630, 31)
    assert ks[0] == 1 and ks[-1] == 630 and np.all(np.diff(ks) > 0)
    assert len(capability_ks(36, 31)) < 31  # duplicates on a short range are removed
    with pytest.raises(ValueError):
        capability_ks(0, 5)


def test_plan_of_the_published_sweep():
    plan = SweepPlan.build()
    cons, cons_confidence, d2, d4 = plan.protocols
    assert cons.ks_a[-1] == 58905 and d2.ks_a[-1] == 630 and d2.ks_b[-1] == 561
    assert (cons.ranking, cons_confidence.ranking) == ("claim", "confidence")
    assert np.array_equal(cons.ks_a, cons_confidence.ks_a)
    assert d4.ks_a[-1] == 36 and d4.ks_b[-1] == 35 and d2.diagonal[-1] == 630
    assert (1, 1) in d4.capabilities()
    with pytest.raises(ValueError, match="multiple of 4"):
        SweepPlan.build(36, 3)


def test_sweep_matches_direct_solves_and_resumes(tiny, tmp_path):
    store, labels, _ = tiny
    plan = SweepPlan.build(9, 4, grid_points=4, diagonal_points=5, consultancy_points=6)
    res = run_sweep(store, labels, plan, chunk_dir=tmp_path / "chunks", progress=False)
    probs = np.asarray(store.probs[:], dtype=np.float32)
    for proto in plan.protocols:
        caps = proto.capabilities()
        i = caps.index((2, 1)) if (2, 1) in caps else 0
        direct = solve_reveal_game(
            probs, 9, proto.moves, caps[i], labels=labels, ranking=proto.ranking
        )
        assert res[f"{proto.name}/selection"][i] == pytest.approx(direct["claim_correct"].mean())
        assert res[f"{proto.name}/judge"][i] == pytest.approx(direct["judge_accuracy"].mean())
        assert res[f"{proto.name}/win"][i] == pytest.approx(direct["value"].mean(), rel=1e-6)
    # resume: the chunk files are reused (a poisoned file shows it was read, not recomputed)
    files = sorted((tmp_path / "chunks").glob("*.npz"))
    assert len(files) == 3
    saved = dict(np.load(files[0]))
    saved["consultancy/selection"] = saved["consultancy/selection"] * 0 + 8
    np.savez(files[0], **saved)
    again = run_sweep(store, labels, plan, chunk_dir=tmp_path / "chunks", progress=False)
    assert np.all(again["consultancy/selection"] >= 8 / 20)


def test_a_protocol_added_to_the_plan_is_solved_on_finished_chunks_only(tiny, tmp_path):
    """Chunks of a plan without the confidence-ranked consultant keep their protocols (a
    poisoned value survives) and get the new one, the same as a sweep from scratch."""
    store, labels, _ = tiny
    full = SweepPlan.build(9, 4, grid_points=2, diagonal_points=3, consultancy_points=4)
    older = SweepPlan(9, 4, 2, 3, 4, tuple(p for p in full.protocols if p.ranking == "claim"))
    run_sweep(store, labels, older, chunk_dir=tmp_path / "chunks", progress=False)
    files = sorted((tmp_path / "chunks").glob("*.npz"))
    saved = dict(np.load(files[0]))
    assert "consultancy_confidence/selection" not in saved
    saved["debate4/selection"] = saved["debate4/selection"] * 0 + 8
    np.savez(files[0], **saved)
    grown = run_sweep(store, labels, full, chunk_dir=tmp_path / "chunks", progress=False)
    fresh = run_sweep(store, labels, full, progress=False)
    assert np.all(grown["debate4/selection"] >= 8 / 20)
    for key in ("selection", "judge", "win"):
        np.testing.assert_allclose(grown[f"consultancy_confidence/{key}"],
                                   fresh[f"consultancy_confidence/{key}"])  # fmt: skip
    assert all("consultancy_confidence/selection" in np.load(f) for f in files)
    # a protocol saved at other capabilities (another grid) is solved again, not mixed in
    saved = dict(np.load(files[1]))
    saved["consultancy/selection"] = np.zeros(2)
    np.savez(files[1], **saved)
    again = run_sweep(store, labels, full, chunk_dir=tmp_path / "chunks", progress=False)
    np.testing.assert_allclose(again["consultancy/selection"], fresh["consultancy/selection"])


def test_zero_capability_is_the_ensemble_for_every_protocol(tiny):
    store, labels, _ = tiny
    plan = SweepPlan.build(9, 4, grid_points=3, diagonal_points=3, consultancy_points=3)
    probs = np.asarray(store.probs[:], dtype=np.float32)
    out = solve_chunk(probs, labels, plan)
    ensemble = (probs.mean(axis=1).argmax(axis=1) == labels).mean()
    sparse = (probs.argmax(axis=2) == labels[:, None]).mean()
    for proto in plan.protocols:
        last = len(proto.capabilities()) - 1 if not proto.is_debate else None
        if proto.is_debate:
            k = int(proto.diagonal[-1])
            last = proto.capabilities().index((k, k))
        assert out[f"{proto.name}/selection"][last] / len(labels) == pytest.approx(ensemble)
        assert out[f"{proto.name}/judge"][last] / len(labels) == pytest.approx(sparse, abs=1e-6)


def test_exact_play_metrics_keys_and_consistency(tiny):
    store, labels, _ = tiny
    metrics = exact_play_metrics(store, labels)
    columns = {
        "consultancy_selection_accuracy", "debate2_selection_accuracy",
        "debate4_selection_accuracy", "debate2_judge_accuracy", "debate4_judge_accuracy",
    }  # fmt: skip
    assert set(metrics) == columns | {f"{c}_se" for c in columns}
    probs = np.asarray(store.probs[:], dtype=np.float32)
    best = probs.max(axis=1).argmax(axis=1)  # consultancy at k = 1: the most confident mask
    hits = best == labels
    assert metrics["consultancy_selection_accuracy"] == pytest.approx(hits.mean())
    # the standard error over images: sample sd / sqrt(n)
    se = hits.std(ddof=1) / np.sqrt(len(hits))
    assert metrics["consultancy_selection_accuracy_se"] == pytest.approx(se)
    assert all(0 <= v <= 1 for v in metrics.values())
    with pytest.raises(ValueError, match="labels"):
        exact_play_metrics(store, labels[:5])


def test_frozen_judge_sweep_writes_the_run_folder(tiny, tmp_path):
    store, labels, images = tiny
    run = RunFolder(tmp_path / "run", "sweep", {"variant": "mnist"})
    plan = SweepPlan.build(9, 4, grid_points=4, diagonal_points=4, consultancy_points=5)
    metrics = frozen_judge_sweep(run, store, labels, "mnist", "0:20", test_images=images,
                                 plan=plan, progress=False)  # fmt: skip
    run.finish(metrics)
    names = {p.name for p in run.path.iterdir()}
    for expected in (
        "sweep_arrays.npz",
        "exact_play.npz",
        "report.md",
        "metrics.json",
        "curve_selection.png",
        "heatmap_debate4_judge.png",
        "example_plays.png",
    ):
        assert expected in names, expected  # fmt: skip
    saved = json.loads((run.path / "metrics.json").read_text())
    assert "debate4_judge_accuracy" in saved and "best_debate2_selection_accuracy" in saved
    arrays = np.load(run.path / "sweep_arrays.npz")
    assert arrays["debate2_grid_selection"].shape == (len(arrays["debate2_grid_ka"]),
                                                      len(arrays["debate2_grid_kb"]))  # fmt: skip
    report = (run.path / "report.md").read_text()
    assert "| published |" in report and "curve_selection.png" in report


def test_cli_sweep_rejects_bad_workers():
    from debatelab.cli import main

    result = CliRunner().invoke(main, ["sweep", "--workers", "0"])
    assert result.exit_code != 0 and "--workers" in result.output


def test_curves_only_equals_the_whole_sweep_on_its_curves(tiny, tmp_path):
    """The study's best-capability pass (no heat-map grid) reads the same curves, exact play and
    best capability as the whole sweep, and resumes from its own chunks."""
    from debatelab.experiments.sweep_report import curves_only

    store, labels, _ = tiny
    run = RunFolder(tmp_path / "run", "sweep", {"variant": "mnist"})
    whole = frozen_judge_sweep(run, store, labels, "mnist", "0:20", progress=False)
    curves = curves_only(store, run, labels, progress=False)
    shared = [k for k in curves if k.startswith(("best_", "zero_", "exact_", "debate", "consul"))]
    assert len(shared) > 20
    for key in shared:
        assert curves[key] == pytest.approx(whole[key], abs=1e-12), key
    assert sorted((run.path / "curve_chunks").rglob("chunk_*.npz"))
    debate2 = SweepPlan.build(9, 4, grid_points=0).protocol("debate2")
    assert debate2.capabilities() == [(int(k), int(k)) for k in debate2.diagonal]
    with pytest.raises(ValueError, match="grid_points"):
        SweepPlan.build(9, 4, grid_points=-1)
