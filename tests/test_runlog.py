"""The run log: ``log.jsonl`` events and stage lines when the output is not a terminal."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import warnings

import numpy as np

import debatelab.progress as progress_module
from debatelab.runlog import RunLog, read_log


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_are_stages_with_an_eta_and_lines_only_off_a_terminal(tmp_path, monkeypatch):
    monkeypatch.setattr(progress_module, "PROGRESS_SECONDS", 0.0)  # every step a progress event
    printed = io.StringIO()
    log = RunLog(tmp_path, "demo", stream=printed)  # a StringIO is no terminal: lines
    for _ in progress_module.progress(range(4), desc="chunks", unit="chunk"):
        pass
    with progress_module.progress(total=2, desc="quiet", enabled=False) as bar:
        bar.update(2)  # a hidden bar (--quiet) is still a stage of the log
    with progress_module.progress(total=3, desc="batches", stage=False) as bar:
        bar.update(3)  # a loop logged otherwise: no stage
    with progress_module.progress(total=3, desc="passes", unit="batch") as bar:
        bar.update(3)
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("a warning the run should keep", UserWarning, stacklevel=1)
    log.close()
    events = read_log(tmp_path / "log.jsonl")
    kinds = [(e["event"], e.get("stage"), e.get("done")) for e in events]
    assert kinds[0][0] == "sitting_started" and kinds[-1][0] == "sitting_finished"
    assert [k for k in kinds if k[1] == "chunks"] == [
        ("stage_started", "chunks", 0), *(("stage_progress", "chunks", i) for i in range(1, 5)),
        ("stage_finished", "chunks", 4)]  # fmt: skip
    assert ("stage_finished", "quiet", 2) in kinds and not any(k[1] == "batches" for k in kinds)
    progress_events = [e for e in events if e["event"] == "stage_progress"]
    assert progress_events[0]["total"] == 4 and progress_events[-1]["eta_s"] == 0.0
    assert any(e["event"] == "warning" and "a warning the run should keep" in e["message"]
               for e in events)  # fmt: skip
    lines = printed.getvalue().splitlines()
    shown = [e for e in events if e["event"] != "sitting_started"]  # the rest: one line each
    assert [line.split("] ", 1)[1] for line in lines] == [e["message"].splitlines()[0]
                                                         for e in shown]  # fmt: skip
    assert "chunks: 2 chunks of 4 chunks" in printed.getvalue()
    assert "passes: done, 3 batches in" in printed.getvalue()
    # on a terminal the bars speak: no lines, the log file all the same; a second sitting
    terminal = _Terminal()
    again = RunLog(tmp_path, "demo", stream=terminal)
    for _ in progress_module.progress(range(2), desc="more", enabled=False):
        pass
    again.close("error", "stopped by the test")
    assert terminal.getvalue() == ""
    events = read_log(tmp_path / "log.jsonl")
    assert [(e["sitting"], e["resumed"]) for e in events if e["event"] == "sitting_started"] == [
        (1, False), (2, True)]  # fmt: skip
    assert events[-1]["event"] == "error" and events[-1]["sitting"] == 2


def _pool_file(tmp_path):
    rng = np.random.default_rng(0)
    rows = ["question_id,proposal_id,critique_id,score,correct"]
    for q in range(3):
        for p in range(4):
            rows.append(f"q{q},p{p},,{rng.random():.3f},{p % 2}")
            rows += [f"q{q},p{p},c{c},{rng.random():.3f},{p % 2}" for c in range(2)]
    path = tmp_path / "pools.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_command_whose_output_is_a_file_writes_stage_lines_and_its_log(tmp_path):
    pools = _pool_file(tmp_path)
    out = tmp_path / "run"
    printed = tmp_path / "printed.txt"
    with open(printed, "w") as fh:  # `debatelab bon ... > printed.txt`
        done = subprocess.run([sys.executable, "-m", "debatelab", "bon", str(pools), "--n", "1:3",
                               "--replicates", "50", "--out", str(out)], stdout=fh,
                              stderr=subprocess.PIPE, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = printed.read_text()
    events = read_log(out / "log.jsonl")
    assert [e["event"] for e in events][:2] == ["sitting_started", "stage_started"]
    assert events[-1]["event"] == "sitting_finished"
    assert events[-1]["wall_time_s"] > 0
    # each stage line printed is the message of a logged event, in order, before the report
    messages = [e["message"] for e in events if e["event"] != "sitting_started"]
    staged = [line.split("] ", 1)[1] for line in text.splitlines() if line.startswith("[")]
    assert staged == messages and staged[0] == "bootstrap: started, 50 steps"
    assert text.index("bootstrap: done") < text.index("# Best-of-N debate proxy")
    # a run that stops on bad input after its folder opened logs why
    pools.write_text("question_id,proposal_id,score,correct\nq,p,1.5,1\n")
    bad = subprocess.run([sys.executable, "-m", "debatelab", "bon", str(pools), "--out",
                          str(tmp_path / "bad")], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert bad.returncode != 0 and "outside [0, 1]" in bad.stderr
    assert bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1  # still one error
    last = read_log(tmp_path / "bad" / "log.jsonl")[-1]
    assert last["event"] == "error" and "outside [0, 1]" in last["message"]
    assert json.loads((tmp_path / "bad" / "config.json").read_text())["command"] == "bon"


def test_a_run_folder_closes_its_log_however_the_run_ends(tmp_path):
    import pytest

    from debatelab import runlog
    from debatelab.report.runs import RunFolder

    with pytest.raises(ZeroDivisionError), RunFolder(tmp_path / "a", "demo", {"x": 1}):
        _ = 1 / 0
    assert not runlog._OPEN  # nothing left listening for the next run's events
    last = read_log(tmp_path / "a" / "log.jsonl")[-1]
    assert last["event"] == "error" and "ZeroDivisionError" in last["message"]
    # someone swaps warnings.showwarning between runs (a test runner, a notebook): the next
    # run's log still gets its warnings
    with warnings.catch_warnings(record=True):
        warnings.showwarning = lambda *a, **k: None
        with RunFolder(tmp_path / "b", "demo", {"x": 1}):
            warnings.warn("kept in b's log", UserWarning, stacklevel=1)
    assert not runlog._OPEN
    events = read_log(tmp_path / "b" / "log.jsonl")
    assert [e["event"] for e in events] == ["sitting_started", "warning", "sitting_finished"]
    assert "kept in b's log" in events[1]["message"]
    assert not any(
        "kept in b's log" in e["message"] for e in read_log(tmp_path / "a" / "log.jsonl")
    )


def test_a_stage_inside_a_stage_is_logged_but_prints_no_line(tmp_path):
    printed = io.StringIO()
    log = RunLog(tmp_path, "demo", stream=printed)
    with progress_module.progress(total=2, desc="dump") as outer:
        for _ in range(2):
            for _ in progress_module.progress(range(3), desc="one chunk"):
                pass
            outer.update(1)
    for _ in progress_module.progress(range(1), desc="after"):  # the outer one closed: a stage
        pass
    log.close()
    events = read_log(tmp_path / "log.jsonl")
    inner = [e for e in events if e.get("stage") == "one chunk"]
    assert len(inner) == 4 and all(e["nested"] for e in inner)  # started and done, twice
    assert not any(e.get("nested") for e in events if e.get("stage") in ("dump", "after"))
    text = printed.getvalue()
    assert "one chunk" not in text and "dump: done" in text and "after: done" in text
