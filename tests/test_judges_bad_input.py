"""Bad input to `debatelab judges ...` fails within seconds with one message that names the option
or the file, before any data is loaded (issue 38): the data root is an empty folder and downloads
are off, so a command that reached its data would fail with "dataset ... not found" instead;
errors found while the settings are read leave no run folder and no cache behind."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from debatelab.cli import main

LIMIT_S = 30
SHARED = Path(__file__).resolve().parents[2] / "shared" / "published-judges"
PUBLISHED_JUDGE = SHARED / "trained_judges_D1_mnist" / "debate_judge_2turn_asym_mnist.pt"


@pytest.fixture
def nowhere(tmp_path, monkeypatch) -> Path:
    """An empty data root, no downloads, a cache that must stay unmade."""
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("DEBATELAB_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DEBATELAB_OFFLINE", "1")
    return tmp_path


def refused(args: list[str], tmp_path: Path) -> str:
    """Run ``debatelab ARGS`` under the timer; return its one error line (an option click
    range-checks also shows the usage line above it)."""
    started = time.monotonic()
    result = CliRunner().invoke(main, [*args, "--quiet", "--out", str(tmp_path / "run")])
    seconds = time.monotonic() - started
    assert seconds < LIMIT_S, f"`debatelab {' '.join(args)}` took {seconds:.0f} s"
    # a clean exit with a message (not an exception the CLI let through)
    assert result.exit_code != 0 and isinstance(result.exception, SystemExit), result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1 and "Traceback" not in result.output, result.output
    assert "not found" not in errors[0], "the command loaded data before checking its input"
    assert not (tmp_path / "cache").exists(), "work started before the input was checked"
    return errors[0]


# (arguments, words the error must hold)
OPTIONS = {
    "train limit 0": (["judges", "train", "--train-limit", "0"], "--train-limit"),
    "train limit -5": (["judges", "train", "--train-limit", "-5"], "--train-limit"),
    "epochs 0": (["judges", "train", "--epochs", "0"], "--epochs"),
    "budget 0": (["judges", "train", "--budget", "0"], "--budget"),
    "budget not a square": (["judges", "train", "--budget", "17"], "--budget 17"),
    "sweep budget not a fourth power": (["judges", "sweep", "--budget", "36"], "--budget 36"),
    "capability 0": (["judges", "train", "--capability", "0"], "--capability"),
    "seed -1": (["judges", "train", "--seed", "-1"], "--seed"),
    "eval images": (["judges", "train", "--eval-images", "5:2"],
                    "--eval-images: image range '5:2'"),
    "curves folder": (["judges", "sweep", "--published", "/no/such/folder"],
                      "--published /no/such/folder: no such folder"),
    "published workers": (["judges", "eval-published", "--workers", "0"], "--workers"),
    "published batch": (["judges", "eval-published", "--batch", "0"], "--batch"),
    "published budget": (["judges", "eval-published", "--budget", "36"], "--budget 36"),
    "published images": (["judges", "eval-published", "--images", "abc"],
                         "--images: image range 'abc'"),
    "train device": (["judges", "train", "--device", "tpu"], "--device: 'tpu' is not a device"),
    "published folders": (["judges", "eval-published", "--folders", "nowhere"],
                          "--folders: no published judges in nowhere"),
    "published folder": (["judges", "eval-published", "--published", "/no/such/folder"],
                         "--published /no/such/folder: no such folder"),
    "eval missing file": (["judges", "eval", "missing.pt"], "missing.pt does not exist"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_a_bad_option_is_refused_up_front(case, nowhere):
    args, words = OPTIONS[case]
    line = refused(args, nowhere)
    assert words in line, line
    assert not (nowhere / "run").exists(), "a run folder was made for a run that cannot run"


def test_a_file_that_is_not_a_judge_is_named_not_called_a_cache_entry(nowhere):
    """`judges eval FILE` names the user's file and says what to give instead; it never tells
    the user to delete their file to retrain it."""
    text = nowhere / "notes.pt"
    text.write_text("not a checkpoint")
    damaged = nowhere / "debate_judge_2turn_asym_mnist.pt"  # named like a published judge
    damaged.write_bytes(b"\x80\x02garbage")
    cases = {
        text: "cannot be read as a judge checkpoint",
        damaged: "cannot be read as a published judge",
        nowhere / "data": "is a directory",  # click says so, naming it
        nowhere / "gone.pt": "does not exist",
    }
    for path, words in cases.items():
        line = refused(["judges", "eval", str(path)], nowhere)
        assert str(path) in line and words in line, line
        assert "cache entry" not in line and "delete" not in line and "retrain" not in line, line
        assert not (nowhere / "run").exists()
    assert text.read_text() == "not a checkpoint" and damaged.exists()  # nothing deleted


@pytest.mark.skipif(not PUBLISHED_JUDGE.exists(), reason="the published judges are not here")
def test_a_budget_the_judges_protocol_cannot_spread_is_refused_before_data(nowhere):
    """The protocol of `judges eval` comes from the checkpoint: a 2-turn judge needs a square."""
    line = refused(["judges", "eval", str(PUBLISHED_JUDGE), "--budget", "17"], nowhere)
    assert "--budget 17" in line and "debate2" in line, line
    line = refused(["judges", "eval", str(PUBLISHED_JUDGE), "--batch", "0"], nowhere)
    assert "--batch" in line, line


def test_the_configs_refuse_bad_numbers_from_python_too():
    """The checks live in the config dataclasses, so a run started from Python is refused the
    same way, with the option named as the command line spells it."""
    from debatelab.experiments.judges import (
        EvalJudgeConfig,
        EvalPublishedConfig,
        JudgeConfig,
        SweepJudgesConfig,
    )

    cases = [
        (lambda: JudgeConfig(train_limit=0), "--train-limit must be >= 1"),
        (lambda: JudgeConfig(epochs=-1), "--epochs must be >= 1"),
        (lambda: JudgeConfig(budget=17), "--budget 17"),
        (lambda: JudgeConfig(protocol="consultancy", rule="asym", budget=17), None),
        (lambda: SweepJudgesConfig(budget=81), None),
        (lambda: SweepJudgesConfig(budget=36), "--budget 36"),
        (lambda: SweepJudgesConfig(capability=0), "--capability"),
        (lambda: EvalPublishedConfig(workers=0), "--workers must be >= 1"),
        (lambda: EvalPublishedConfig(seed=-2), "--seed must be >= 0"),
        (lambda: EvalJudgeConfig(judge_file="missing.pt"), "missing.pt does not exist"),
    ]
    for make, words in cases:
        if words is None:
            make()
            continue
        with pytest.raises(ValueError, match=words.replace("+", r"\+")):
            make()
