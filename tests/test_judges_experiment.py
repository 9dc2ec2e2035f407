"""`debatelab judges`: train one judge (run folder, history, plot, cache, resume), evaluate a
published checkpoint beside its published numbers, and the published tables themselves."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from debatelab.cli import main
from debatelab.experiments.judges import published_curves
from debatelab.judges.onpolicy import OnPolicyConfig
from debatelab.reference import TRAINED_JUDGES, TRAINED_SWEEP

PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "published-judges"
needs_published = pytest.mark.skipif(not PUBLISHED.exists(),
                                     reason="the published judges are not on this machine")  # fmt: skip


@needs_published
def test_published_tables_equal_the_published_logs():
    """reference.TRAINED_JUDGES (typed from REFERENCE B) against the last epoch of every
    published per-epoch log."""
    checked = 0
    for (design, variant), table in TRAINED_JUDGES.items():
        for protocol, rule, control in TRAINED_SWEEP:
            cfg = OnPolicyConfig(design=design, variant=variant, protocol=protocol, rule=rule,
                                 control=control)  # fmt: skip
            curves = published_curves(cfg, PUBLISHED)
            assert set(curves) == set(table[(protocol, rule, control)]), cfg.name
            for metric, values in curves.items():
                assert len(values) == 10
                assert values[-1] == pytest.approx(table[(protocol, rule, control)][metric],
                                                   abs=0.006), (design, variant, cfg.name)  # fmt: skip
                checked += 1
    assert checked == (12 * 2 + 1) + 2 * (13 * 3) + 13 * 2  # D1, D3 (x2), D2


def test_judges_train_writes_a_run_and_resumes_from_the_cache(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    monkeypatch.setenv("DEBATELAB_OFFLINE", "1")  # the published curves cannot be downloaded
    out = tmp_path / "run"
    args = ["judges", "train", "--design", "D3", "--protocol", "debate4", "--rule", "sym",
            "--epochs", "2", "--budget", "16", "--train-limit", "256",
            "--eval-images", "0:10000:500", "--device", "cpu", "--quiet", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    history = json.loads((out / "history.json").read_text())
    assert [e["epoch"] for e in history] == [1, 2]
    assert 0 <= metrics["judge"] <= 1 and 0 <= metrics["belief"] <= 1
    assert (
        metrics["judge"] == history[-1]["judge"]
        and metrics["selection"] == history[-1]["selection"]
    )
    assert (out / "curves.png").stat().st_size > 0
    assert "88.29 / 88.29 / 89.47" in result.output  # the published D3 MNIST 4-turn sym judge
    # offline, the plot goes without the published curves and the run says how to add them
    assert "curves.png leaves out the published curves" in result.output
    assert "--published DIR" in result.output
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0 and json.loads((out / "metrics.json").read_text()) == metrics
    bad = CliRunner().invoke(main, ["judges", "train", "--protocol", "consultancy", "--rule",
                                    "sym", "--out", str(tmp_path / "bad")])  # fmt: skip
    assert bad.exit_code != 0 and "no scoring rule" in bad.output


@needs_published
def test_judges_eval_reads_a_published_judge(tmp_path, data_root, monkeypatch):
    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    path = PUBLISHED / "verifier_head_D2_mnist" / "debate_judge_2turn_bce_asym_mnist.pt"
    out = tmp_path / "eval"
    result = CliRunner().invoke(main, ["judges", "eval", str(path), "--images", "0:10000:250",
                                       "--quiet", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert (metrics["design"], metrics["protocol"], metrics["rule"]) == ("D2", "debate2", "asym")
    assert metrics["n_images"] == 40 and "judge_accuracy" not in metrics
    assert metrics["published_selection"] == 19.87
    assert np.isfinite(metrics["belief"])


@needs_published
def test_judges_eval_published_resumes_per_judge(tmp_path, data_root, monkeypatch):
    """Every judge of a published folder, one piece per judge: the batch equals `judges eval`
    of each file, and a rerun reads finished judges back and evaluates only the missing."""
    from debatelab.experiments.judges import EvalJudgeConfig, evaluate_checkpoint

    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    pub = tmp_path / "published" / "verifier_head_D2_mnist"
    pub.mkdir(parents=True)
    names = ["consultancy_judge_bce_mnist.pt", "debate_judge_2turn_bce_asym_mnist.pt"]
    for name in names:
        (pub / name).symlink_to(PUBLISHED / "verifier_head_D2_mnist" / name)
    out = tmp_path / "run"
    args = ["judges", "eval-published", "--published", str(pub.parent), "--images",
            "0:10000:1000", "--quiet", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    first = json.loads((out / "judges.json").read_text())
    assert sorted(first) == [f"verifier_head_D2_mnist/{n}" for n in names]
    direct = evaluate_checkpoint(EvalJudgeConfig(judge_file=str(pub / names[1]),
                                                 images="0:10000:1000"), data_root)  # fmt: skip
    key = f"verifier_head_D2_mnist/{names[1]}"
    assert {k: first[key][k] for k in direct} == direct
    assert "19.87" in (out / "report.md").read_text()  # published selection of the 2-turn judge
    pieces = {p.name: p for p in (out / "judges").rglob("*.json")}
    kept, dropped = (pieces[f"verifier_head_D2_mnist--{Path(n).stem}.json"] for n in names)
    marked = {**json.loads(kept.read_text()), "marker": 1}
    kept.write_text(json.dumps(marked))
    dropped.unlink()
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    second = json.loads((out / "judges.json").read_text())
    assert second[f"verifier_head_D2_mnist/{names[0]}"]["marker"] == 1  # read back, not rerun
    assert {k: second[key][k] for k in direct} == direct  # rerun: the same numbers
    bad = CliRunner().invoke(main, ["judges", "eval-published", "--published", str(pub.parent),
                                    "--folders", "nowhere", "--out", str(tmp_path / "bad")])  # fmt: skip
    assert bad.exit_code != 0 and "no judges in nowhere" in bad.output


def test_published_report_counts_judges_within_tolerance():
    """Tolerance = 1.1 points + 3 binomial standard errors at the published number: at 10,000
    images and 92.30 % that is 1.1 + 0.80 points."""
    from debatelab.experiments.judges import published_report

    base = {"design": "D1", "variant": "mnist", "protocol": "debate2", "rule": "asym",
            "control": False, "n_images": 10000, "published_judge": 92.30,
            "published_selection": 92.60}  # fmt: skip
    results = {
        "a/near.pt": {**base, "judge_accuracy": 0.9411, "selection_accuracy": 0.9260},
        "a/far.pt": {**base, "judge_accuracy": 0.9430, "selection_accuracy": 0.9000},
    }
    report, summary = published_report(results)
    assert summary["judge_within_tolerance"] == 1  # +1.81 inside 1.90, +2.00 outside
    assert summary["selection_within_tolerance"] == 1 and summary["selection_compared"] == 2
    assert summary["selection_max_abs_difference"] == 2.6
    assert "+1.81" in report and "-2.60" in report
