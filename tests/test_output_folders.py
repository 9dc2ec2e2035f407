"""Run folders never cost a user a file: debatelab writes only into a new, empty or run folder,
refuses the current and home folders and git repositories, checks every setting before it
touches anything, and moves a replaced run aside instead of deleting it (issue 38, part 1).

Each scenario snapshots the folder tree (every path and every file's bytes) before and after
and asserts they are equal."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from debatelab.cli import main

BON = ["bon", "--demo", "--demo-questions", "3", "--demo-sizes", "4x3x2", "--n", "1:3", "--m",
       "1,2", "--r", "1,2", "--replicates", "10", "--quiet"]  # fmt: skip


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` (folders as None, files with their bytes)."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}  # fmt: skip


def user_folder(path: Path) -> Path:
    path.mkdir(parents=True)
    (path / "thesis.tex").write_text("\\documentclass{article}\n")
    (path / "data.csv").write_text("a,b\n1,2\n")
    (path / "sub").mkdir()
    (path / "sub" / "notes.md").write_text("keep\n")
    return path


def invoke(args, cwd: Path | None = None):
    old = Path.cwd()
    try:
        if cwd is not None:
            os.chdir(cwd)
        return CliRunner().invoke(main, [str(a) for a in args])
    finally:
        os.chdir(old)


def refused(result, *words) -> bool:
    lines = result.output.strip().splitlines()
    return (result.exit_code == 1 and "Traceback" not in result.output and len(lines) == 1
            and all(w in result.output for w in words))  # fmt: skip


@pytest.mark.parametrize("force", [False, True])
def test_a_folder_of_user_files_is_refused_and_nothing_is_touched(tmp_path, force):
    folder = user_folder(tmp_path / "project")
    before = snapshot(folder)
    result = invoke([*BON, "--out", folder, *(["--force"] if force else [])])
    assert refused(result, "holds files that are not a debatelab run folder"), result.output
    assert snapshot(folder) == before


@pytest.mark.parametrize("force", [False, True])
def test_the_current_folder_and_a_git_repository_are_refused(tmp_path, force):
    """`bon --demo --out .` (then `--force`) once emptied the working folder, .git included."""
    repo = user_folder(tmp_path / "repo")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    before = snapshot(repo)
    flags = ["--force"] if force else []
    result = invoke([*BON, "--out", ".", *flags], cwd=repo)
    assert refused(result, "the current folder"), result.output
    result = invoke([*BON, "--out", repo.parent, *flags], cwd=repo)
    assert refused(result, "a folder above the current one"), result.output
    result = invoke([*BON, "--out", repo, *flags], cwd=tmp_path)
    assert refused(result, "git repository"), result.output
    assert snapshot(repo) == before


def test_the_home_folder_is_refused(tmp_path, monkeypatch):
    home = user_folder(tmp_path / "home")
    monkeypatch.setenv("HOME", str(home))
    before = snapshot(home)
    for out in ("~", str(home)):
        result = invoke([*BON, "--out", out, "--force"], cwd=tmp_path)
        assert refused(result, "your home folder"), result.output
    assert snapshot(home) == before


def test_an_empty_repository_is_refused_even_when_empty_otherwise(tmp_path):
    (tmp_path / "r" / ".git").mkdir(parents=True)
    result = invoke([*BON, "--out", tmp_path / "r"])
    assert refused(result, "git repository"), result.output
    assert snapshot(tmp_path / "r") == {".git": None}


def test_bad_settings_with_force_leave_a_finished_run_byte_for_byte(tmp_path):
    """`sweep --images abc --out FINISHED --force` once wiped a finished run, then failed."""
    run = tmp_path / "finished"
    assert invoke([*BON, "--out", run]).exit_code == 0
    before = snapshot(run)
    assert "manifest.json" in before and "metrics.json" in before
    for bad in (["sweep", "--images", "abc"], ["sweep", "--cluster", "nowhere"],
                [*BON, "--replicates", "0"], ["pixels", "--device", "tpu"]):  # fmt: skip
        result = invoke([*bad, "--out", run, "--force"])
        assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        assert snapshot(run) == before
    other = invoke([*BON, "--replicates", "12", "--out", run])
    assert refused(other, "replicates (--replicates): 10 there, 12 now"), other.output
    assert snapshot(run) == before
    assert not list(tmp_path.glob("finished.replaced-*"))


def test_force_moves_the_old_run_aside_whole(tmp_path):
    """--force starts afresh in the folder; the old run, and anything a user left in it, is
    moved to a sibling folder, byte for byte."""
    run = tmp_path / "run"
    assert invoke([*BON, "--out", run]).exit_code == 0
    (run / "my-notes.txt").write_text("written by the user\n")
    before = snapshot(run)
    result = invoke([*BON, "--replicates", "12", "--out", run, "--force"])
    assert result.exit_code == 0, result.output
    (aside,) = tmp_path.glob("run.replaced-*")
    assert f"moved the run that was in {run} to {aside}" in result.output
    assert snapshot(aside) == before
    assert '"replicates": 12' in (run / "config.json").read_text()
    assert not (run / "my-notes.txt").exists()


def test_a_file_or_a_read_only_place_is_one_clear_error(tmp_path):
    (tmp_path / "a-file").write_text("x")
    result = invoke([*BON, "--out", tmp_path / "a-file"])  # click's own check of --out
    assert result.exit_code == 2 and "is a file" in result.output, result.output
    result = invoke([*BON, "--out", tmp_path / "a-file" / "run"])
    assert refused(result, "is a file, so no folder can be made"), result.output
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is needed for a read-only mount")
    ro = tmp_path / "ro"
    ro.mkdir()
    done = subprocess.run(
        ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(ro), str(ro), sys.executable, "-m",
         "debatelab", *BON, "--out", str(ro / "run")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    if "Operation not permitted" in done.stderr and "bwrap" in done.stderr:
        pytest.skip(f"bubblewrap cannot mount here: {done.stderr.strip()}")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert "is not writable" in done.stderr and not any(ro.iterdir())


def test_export_site_refuses_a_folder_of_user_files_before_any_work(tmp_path):
    """The static site obeys the same rule (``models`` is None: the refusal comes before they
    are used)."""
    from debatelab.output_folders import OutputFolderError
    from debatelab.web.site import build_site

    folder = user_folder(tmp_path / "site")
    before = snapshot(folder)
    with pytest.raises(OutputFolderError, match="holds files that are not a debatelab site"):
        build_site(None, folder)
    assert snapshot(folder) == before
