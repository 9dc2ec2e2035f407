"""docs/pixel_curve.py keeps the pixel debate's measured rows (docs/pixel_rollouts.csv):
runs over disjoint image ranges pool into one row with their rates weighted by images and
their wall times and judge evaluations summed, and the docs' tables render from those rows."""

import json

import pytest
from click.testing import CliRunner

from debatelab.cli import main

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def test_runs_pool_into_a_row_that_renders_in_the_docs_table(pixel_stand_ins, docs_module,
                                                            tmp_path, monkeypatch):  # fmt: skip
    curve, results = docs_module("pixel_curve"), docs_module("results")
    runs = [tmp_path / "a", tmp_path / "b"]
    for run, images in zip(runs, ("0:3", "3:8"), strict=True):
        args = ["pixels", "--pixels", "2", "--rollouts", "3", "--images", images, "--out",
                str(run), "--quiet"]  # fmt: skip
        assert CliRunner().invoke(main, args).exit_code == 0
    metrics = [json.loads((r / "metrics.json").read_text()) for r in runs]
    walls = [json.loads((r / "manifest.json").read_text())["wall_time_s"] for r in runs]
    [row] = curve.pooled(runs, 2)
    assert row["n_images"] == 8
    rate = "honest_win_rate_precommit"
    assert row[rate] == pytest.approx((3 * metrics[0][rate] + 5 * metrics[1][rate]) / 8)
    assert row["wall_s"] == pytest.approx(sum(walls))
    assert row["judge_evaluations"] == sum(m["judge_evaluations_this_session"] for m in metrics)
    assert row["judge_evaluations"] > 0

    table = tmp_path / "pixel_rollouts.csv"
    curve.write_table(table, ["# a comment"], [row])
    comments, [back] = curve.read_table(table)
    assert comments == ["# a comment"] and back["judge_evaluations"] == row["judge_evaluations"]
    assert back["wall_s"] == pytest.approx(row["wall_s"], abs=0.5)  # whole seconds
    # the docs' table of K = 2 from that file: the pooled rate and its binomial error
    monkeypatch.setattr(results, "DOCS", tmp_path)
    monkeypatch.setitem(curve.PUBLISHED, 2, {"debate": 50.0})
    rendered = results.pixel_rollouts(tmp_path / "page.md", "2")
    p = back[rate]
    assert f"| liar | MCTS, 3, images 0:8 | **{100 * p:.1f}** " \
           f"({100 * (p * (1 - p) / 8) ** 0.5:.1f}) |" in rendered  # fmt: skip
    assert f"{back['judge_evaluations'] / 1e6:.2f} M |" in rendered
