"""Keyed resume: every command that writes a run folder refuses a folder holding other
settings (naming the fields), resumes under the same settings, and starts afresh with --force."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from debatelab.cli import main
from debatelab.report.runs import RunFolder, RunFolderMismatch
from debatelab.resume import KeyedPieces, settings_hash, settings_key

QUICK = ["--train-limit", "2000", "--epochs", "1", "--quiet"]  # tiny real MNIST judges
BON = ["--demo", "--demo-questions", "3", "--demo-sizes", "4x3x2", "--n", "1:3", "--m", "1,2",
       "--r", "1,2", "--replicates", "10", "--quiet"]  # fmt: skip

# command: (first arguments, changed arguments, what the refusal must name)
CASES = {
    "run": (["run", "--images", "0:6", *QUICK], ["--dataset", "fashionmnist"],
            "variant (--dataset): 'mnist' there, 'fashionmnist' now"),
    "dump": (["dump", "--images", "0:6", *QUICK], ["--images", "0:12"],
             "images (--images): '0:6' there, '0:12' now"),
    "sweep": (["sweep", "--images", "0:6", *QUICK], ["--images", "6:12"],
              "images (--images): '0:6' there, '6:12' now"),
    "train": (["train", "--kind", "gold", *QUICK], ["--seed", "3"],
              "seed (--seed): 0 there, 3 now"),
    "study": (["study", "--variants", "mnist", "--images", "0:6", "--sweep-images", "0:3", *QUICK],
              ["--sweep-images", "3:6"], "sweep_images (--sweep-images): '0:3' there, '3:6' now"),
    "bon": (["bon", *BON], ["--replicates", "12"],
            "replicates (--replicates): 10 there, 12 now"),
}  # fmt: skip


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory, data_root):
    """One cache for the module, so the tiny judges train once."""
    return tmp_path_factory.mktemp("cache"), data_root


@pytest.mark.parametrize("command", sorted(CASES))
def test_a_run_folder_refuses_other_settings_and_resumes_the_same(command, shared_cache,
                                                                   tmp_path, monkeypatch):  # fmt: skip
    cache, data_root = shared_cache
    monkeypatch.setenv("DEBATELAB_CACHE", str(cache))
    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    first, change, named = CASES[command]
    out = ["--out", str(tmp_path / "run")]
    runner = CliRunner()
    result = runner.invoke(main, first + out)
    assert result.exit_code == 0, result.output
    metrics = (tmp_path / "run" / "metrics.json").read_text()

    refused = runner.invoke(main, first + change + out)
    assert refused.exit_code == 1, refused.output
    assert "holds a run with other settings" in refused.output and named in refused.output
    assert "Traceback" not in refused.output
    assert (tmp_path / "run" / "metrics.json").read_text() == metrics  # nothing was touched

    again = runner.invoke(main, first + out)  # the same settings resume
    assert again.exit_code == 0, again.output
    if command != "train":  # the same numbers (train reports its loaded judge the same way)
        assert json.loads((tmp_path / "run" / "metrics.json").read_text()).keys() == \
            json.loads(metrics).keys()  # fmt: skip

    forced = runner.invoke(main, first + change + out + ["--force"])
    assert forced.exit_code == 0, forced.output
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["command"] == command


def test_sweep_resume_reuses_finished_chunks_only_under_the_same_settings(shared_cache,
                                                                          tmp_path, monkeypatch):  # fmt: skip
    """The sweep's chunks lie under a hash of the store and plan: a forced rerun on other images
    solves afresh instead of mixing the old chunks in, and a plain rerun solves nothing."""
    import debatelab.experiments.sweep as sweep_module

    cache, data_root = shared_cache
    monkeypatch.setenv("DEBATELAB_CACHE", str(cache))
    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    out = ["--out", str(tmp_path / "run")]
    runner = CliRunner()
    assert runner.invoke(main, ["sweep", "--images", "0:6", *QUICK, *out]).exit_code == 0
    first = json.loads((tmp_path / "run" / "metrics.json").read_text())
    chunk_dirs = list((tmp_path / "run" / "chunks").iterdir())
    assert len(chunk_dirs) == 1 and list(chunk_dirs[0].glob("chunk_*.npz"))
    # a rerun with the same settings solves no chunk
    monkeypatch.setattr(sweep_module, "solve_chunk",
                        lambda *a, **k: pytest.fail("solved a finished chunk"))  # fmt: skip
    assert runner.invoke(main, ["sweep", "--images", "0:6", *QUICK, *out]).exit_code == 0
    monkeypatch.undo()
    monkeypatch.setenv("DEBATELAB_CACHE", str(cache))
    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    forced = runner.invoke(main, ["sweep", "--images", "6:12", *QUICK, *out, "--force"])
    assert forced.exit_code == 0, forced.output
    second = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert second["n_images"] == 6
    assert second["debate4_selection_accuracy"] != first["debate4_selection_accuracy"] or \
        second["consultancy_selection_accuracy"] != first["consultancy_selection_accuracy"] or \
        second["debate2_judge_accuracy"] != first["debate2_judge_accuracy"]  # fmt: skip


def test_settings_keys_change_with_every_setting_and_ignore_key_order(tmp_path):
    a = {"variant": "mnist", "images": "0:10", "plan": [36, 4]}
    assert settings_hash(a) == settings_hash(dict(reversed(list(a.items()))))
    for key, value in (("variant", "cifar10"), ("images", "0:11"), ("plan", [36, 8])):
        assert settings_hash({**a, key: value}) != settings_hash(a)
    assert settings_key("judge", a).startswith("judge-")
    one, two = KeyedPieces(tmp_path, a), KeyedPieces(tmp_path, {**a, "images": "0:11"})
    assert one.path("c.npz").parent != two.path("c.npz").parent


def test_workers_may_change_on_resume(tmp_path):
    """Settings marked compare=False (workers) do not decide results: a resume may change them."""
    from debatelab.experiments.sweep_report import SweepConfig

    RunFolder(tmp_path / "r", "sweep", SweepConfig(workers=1))
    (tmp_path / "r" / "chunks").mkdir()  # a folder that holds results
    RunFolder(tmp_path / "r", "sweep", SweepConfig(workers=2))
    with pytest.raises(RunFolderMismatch, match="images"):
        RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5"))
    with pytest.raises(RunFolderMismatch, match="command"):
        RunFolder(tmp_path / "r", "dump", SweepConfig())


def test_a_run_that_failed_on_bad_input_does_not_block_its_folder(tmp_path):
    """A run that stopped before writing anything but its config leaves nothing to protect."""
    out = ["--out", str(tmp_path / "run")]
    bad = CliRunner().invoke(main, ["bon", str(tmp_path / "missing.jsonl"), "--quiet", *out])
    assert bad.exit_code == 1 and "Traceback" not in bad.output
    good = CliRunner().invoke(main, ["bon", *BON, *out])
    assert good.exit_code == 0, good.output


def test_a_setting_added_since_reads_as_its_default(tmp_path):
    """A folder made before a setting existed resumes when the setting keeps its default."""
    from debatelab.experiments.sweep_report import SweepConfig

    RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5"))
    (tmp_path / "r" / "chunks").mkdir()
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    del config["mc_draws"]
    (tmp_path / "r" / "config.json").write_text(json.dumps(config))
    RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5"))
    with pytest.raises(RunFolderMismatch, match=r"mc_draws \(--mc-draws\): 10 there, 3 now"):
        RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5", mc_draws=3))


def test_a_folder_from_before_the_batch_size_setting_ran_with_256(tmp_path):
    """The judges' batch size became a setting when its default went from 256 to 128: a folder
    made before it (its config has no batch_size) ran with 256, so it resumes with
    --batch-size 256 and is refused, with both values named, under today's default."""
    from debatelab.experiments.sweep_report import SweepConfig

    RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5"))
    (tmp_path / "r" / "chunks").mkdir()
    config = json.loads((tmp_path / "r" / "config.json").read_text())
    del config["batch_size"]
    (tmp_path / "r" / "config.json").write_text(json.dumps(config))
    with pytest.raises(RunFolderMismatch, match=r"batch_size \(--batch-size\): 256 there, 128 now"):
        RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5"))
    RunFolder(tmp_path / "r", "sweep", SweepConfig(images="0:5", batch_size=256))
