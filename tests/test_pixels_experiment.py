"""The `pixels` command end to end on a tiny stand-in judge and synthetic digits: run folder,
metrics, move log, figure, and resuming from stored chunks."""

import json

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from debatelab.cli import main
from debatelab.experiments import pixels as experiment
from debatelab.judges.pixel import PixelTrainConfig

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture
def stand_ins(pixel_stand_ins):
    return pixel_stand_ins


def test_pixels_command_writes_a_run_folder_and_resumes(stand_ins, tmp_path, monkeypatch):
    out = tmp_path / "run"
    args = ["--pixels", "2", "--rollouts", "3", "--images", "0:4", "--out", str(out), "--quiet"]
    result = CliRunner().invoke(main, ["pixels", *args])
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    for key in ("judge_accuracy", "honest_win_rate_precommit", "honest_win_rate_no_precommit"):
        assert 0.0 <= metrics[key] <= 1.0
    rows = [json.loads(line) for line in (out / "moves.jsonl").read_text().splitlines()]
    assert len(rows) == 4 * 9 + 4
    assert {r["protocol"] for r in rows} == {"precommit", "no_precommit"}
    for r in rows:
        assert [m[2] for m in r["moves"]] == ["liar", "honest"]  # liar reveals first by default
        assert r["liar_label"] != r["honest_label"]
    pre = [r for r in rows if r["protocol"] == "precommit"]
    by_image = {}
    for r in pre:
        by_image.setdefault(r["image"], []).append(r["honest_win"])
    expected = np.mean([all(v) for v in by_image.values()])
    assert metrics["honest_win_rate_precommit"] == pytest.approx(expected)
    assert (out / "examples.png").stat().st_size > 0
    assert (out / "manifest.json").exists() and (out / "report.md").exists()
    # other settings are refused, naming them, and touch nothing
    refused = CliRunner().invoke(main, ["pixels", *args, "--rollouts", "4", "--first", "honest"])
    assert refused.exit_code == 1 and "holds a run with other settings" in refused.output
    assert "rollouts (--rollouts): 3 there, 4 now" in refused.output
    assert "first (--first): 'liar' there, 'honest' now" in refused.output
    # a rerun into the same folder replays nothing: every chunk is stored
    monkeypatch.setattr(experiment, "play", lambda *a, **k: pytest.fail("replayed a chunk"))
    again = CliRunner().invoke(main, ["pixels", *args])
    assert again.exit_code == 0, again.output
    assert (
        json.loads((out / "metrics.json").read_text())["honest_win_rate_precommit"]
        == (metrics["honest_win_rate_precommit"])
    )


def test_an_interrupted_pixels_run_resumes_to_the_same_games(stand_ins, tmp_path, monkeypatch):
    """Killed after two finished chunks (one image's nine games each) and rerun into the same
    folder, a run plays only the missing chunks and ends with the same games and metrics as a
    run that was never interrupted."""
    args = ["--pixels", "3", "--rollouts", "20", "--images", "0:4", "--batch-games", "9",
            "--quiet"]  # fmt: skip
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert CliRunner().invoke(main, ["pixels", *args, "--out", str(whole)]).exit_code == 0
    real_play, played = experiment.play, []

    def play_then_die(*a, **k):
        if len(played) == 2:
            raise KeyboardInterrupt  # as if killed while the third chunk plays
        played.append(1)
        return real_play(*a, **k)

    monkeypatch.setattr(experiment, "play", play_then_die)
    CliRunner().invoke(main, ["pixels", *args, "--out", str(cut)])
    assert len(list((cut / "chunks").glob("*/*.json"))) == 2
    played.clear()
    monkeypatch.setattr(
        experiment, "play", lambda *a, **k: (played.append(1), real_play(*a, **k))[1]
    )
    assert CliRunner().invoke(main, ["pixels", *args, "--out", str(cut)]).exit_code == 0
    # four precommit chunks (9 games each) and one without precommit (9 images), less the two
    assert len(played) == 4 + 1 - 2
    assert (cut / "moves.jsonl").read_text() == (whole / "moves.jsonl").read_text()
    metrics = [json.loads((f / "metrics.json").read_text()) for f in (whole, cut)]
    for key in ("honest_win_rate_precommit", "honest_win_rate_no_precommit", "judge_accuracy"):
        assert metrics[0][key] == metrics[1][key]


def test_pixels_command_rejects_bad_input(stand_ins, tmp_path):
    result = CliRunner().invoke(main, ["pixels", "--images", "5:2", "--out", str(tmp_path / "r")])
    assert result.exit_code != 0 and "image range" in result.output
    with pytest.raises(ValueError, match="agent"):
        experiment.PixelExperimentConfig(agent="oracle")


def test_policy_agents_run_the_experiment(stand_ins, tmp_path):
    for agent in ("greedy", "random", "top3"):
        out = tmp_path / agent
        args = ["--agent", agent, "--pixels", "2", "--images", "0:3", "--out", str(out),
                "--quiet", "--skip-no-precommit"]  # fmt: skip
        result = CliRunner().invoke(main, ["pixels", *args])
        assert result.exit_code == 0, result.output
        metrics = json.loads((out / "metrics.json").read_text())
        assert "honest_win_rate_no_precommit" not in metrics and metrics["rollouts"] is None


def test_rollout_curve_figure(tmp_path):
    points = [
        {"rollouts": r, "rate": v, "n_images": 5, "slice": "images 0:5"}
        for r, v in ((10, 0.4), (100, 0.6), (1000, 1.0))
    ]
    path = experiment.plot_rollout_curve(points, tmp_path / "curve.png", published=88.9)
    assert path.stat().st_size > 0


@pytest.mark.slow
def test_pixel_judge_reproduces_the_published_accuracy(tmp_path, data_root):
    """The K = 6 pixel judge from a cold cache (10 epochs on 60,000 images, minutes on a CPU):
    accuracy on 6 random nonzero pixels of the 10,000 test images within 52-63 % (published
    59.4 %; public reproductions 53.0-55.5 %; this package measured 55.8 %)."""
    from debatelab.data import load_raw
    from debatelab.judges.pixel import PixelJudge, get_pixel_judge, random_pixel_accuracy

    trained = get_pixel_judge(PixelTrainConfig(pixels=6), data_root, tmp_path, progress=False)
    x, y = load_raw("mnist", "test", data_root)
    acc = random_pixel_accuracy(
        PixelJudge(trained.model), x, y, 6, torch.Generator().manual_seed(0)
    )
    assert 0.52 <= acc <= 0.63


def test_the_learned_agent_plays_the_experiment(stand_ins, tmp_path, monkeypatch):
    """--agent learned: the cached debaters of the run's settings play both sides (stand-in
    networks here); their training key enters the chunks' settings."""
    from debatelab.experiments import agents
    from debatelab.games.learned import DebaterNets
    from debatelab.judges.train import TrainedJudge

    asked = []

    def debaters(cfg, *a, **k):
        asked.append(cfg)
        torch.manual_seed(0)
        return TrainedJudge(DebaterNets(hidden=8), cfg, []), None

    monkeypatch.setattr(agents, "get_debaters", debaters)
    out = tmp_path / "learned"
    args = ["--agent", "learned", "--pixels", "2", "--images", "0:3", "--judge", "sparse",
            "--out", str(out), "--quiet"]  # fmt: skip
    result = CliRunner().invoke(main, ["pixels", *args])
    assert result.exit_code == 0, result.output
    assert [(c.pixels, c.first, c.judge) for c in asked] == [(2, "liar", "sparse")]
    rows = [json.loads(line) for line in (out / "moves.jsonl").read_text().splitlines()]
    assert len(rows) == 3 * 9 + 3 and all(
        len({tuple(m[:2]) for m in r["moves"]}) == 2 for r in rows
    )
    cfg = experiment.PixelExperimentConfig(agent="learned", pixels=2)
    assert experiment.play_settings(cfg)["debaters"] == cfg.debaters_config().key()
    assert "debaters" not in experiment.play_settings(experiment.PixelExperimentConfig())
