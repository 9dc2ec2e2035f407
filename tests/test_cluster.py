"""Pieces on a real local Ray cluster (`ray start --head`, 2 CPUs, worker processes of their
own): an all-mask dump, a frozen sweep, a pixel run and two on-policy judges give bit-identical
results to the local run; a worker killed while it holds a piece is retried and every piece is
written once."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from debatelab.cluster import Cluster, run_pieces
from debatelab.errors import MissingExtraError

# ---------------------------------------------------------------------------------------------
# without Ray


def test_cluster_text():
    assert Cluster.parse("local") == Cluster() and Cluster.parse(None) == Cluster()
    assert Cluster.parse("ray") == Cluster("ray")
    assert Cluster.parse("ray:auto") == Cluster("ray", "auto")
    assert Cluster.parse("ray:10.0.0.5:6379", workers=3) == Cluster("ray", "10.0.0.5:6379", 3)
    assert Cluster.of(2) == Cluster(workers=2) and str(Cluster("ray", "auto")) == "ray:auto"
    for bad in ("ray:", "slurm", "Ray"):
        with pytest.raises(ValueError, match="use local, ray"):
            Cluster.parse(bad)


def _square(x):
    return x * x


def _fails_on_two(x):
    if x == 2:
        raise ValueError("piece 2 failed")
    return x


def test_local_pieces_in_process_and_in_a_pool():
    assert list(run_pieces(_square, [1, 2, 3])) == [(0, 1), (1, 4), (2, 9)]
    assert sorted(run_pieces(_square, [1, 2, 3], 2)) == [(0, 1), (1, 4), (2, 9)]
    for where in (1, 2):  # a piece that raises stops the run with its error
        with pytest.raises(ValueError, match="piece 2 failed"):
            list(run_pieces(_fails_on_two, [1, 2, 3], where))


def test_ray_missing_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError, match=r'pip install "debatelab\[ray\]"'):
        list(run_pieces(_square, [1], "ray"))


# ---------------------------------------------------------------------------------------------
# on a real Ray cluster

ray = pytest.importorskip("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, data_root):
    """A head node with 2 CPUs started by the `ray` command, joined by this test process."""
    ray_cli = shutil.which("ray", path=str(Path(sys.executable).parent)) or "ray"
    port = _free_port()
    temp = tmp_path_factory.mktemp("ray")
    # A throwaway cluster on 127.0.0.1 without token authentication, whatever ~/.ray holds (a
    # local ray.init() of Ray >= 2.5x writes a token there that a later `ray start` would pick
    # up): the head and this driver must agree, so both are told.
    auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "DEBATELAB_DATA": str(data_root),
           "OMP_NUM_THREADS": "1"}  # fmt: skip
    start = [ray_cli, "start", "--head", f"--port={port}", "--num-cpus=2", "--num-gpus=0",
             "--include-dashboard=false", "--disable-usage-stats", f"--temp-dir={temp}"]  # fmt: skip
    try:
        subprocess.run(start, check=True, env=env, capture_output=True, timeout=180)
        yield Cluster("ray", f"127.0.0.1:{port}")
    finally:
        if ray.is_initialized():
            ray.shutdown()
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)
        if auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = auth


def _images(mnist, n):
    return mnist.x_test[:n]


def test_dump_and_sweep_on_ray_equal_the_local_run(cluster, mnist, tmp_path, one_torch_thread):
    from debatelab.experiments.sweep import SweepPlan, run_sweep
    from debatelab.judges.cnn import JudgeCNN
    from debatelab.store import dump_all_mask_probs

    torch.manual_seed(0)
    model = JudgeCNN(1, (8, 16), 18).eval()
    images = _images(mnist, 6)
    local = dump_all_mask_probs(model, images, tmp_path / "local", chunk_images=2,
                                progress=False)  # fmt: skip
    # a driver that stops after one chunk on Ray, resumed there and then finished locally
    part = dump_all_mask_probs(model, images, tmp_path / "moved", chunk_images=2,
                               progress=False, where=cluster, stop_after_chunks=1)  # fmt: skip
    assert part.done[:].tolist() == [True, False, False]
    dump_all_mask_probs(model, images, tmp_path / "moved", chunk_images=2, progress=False,
                        stop_after_chunks=1)  # fmt: skip
    moved = dump_all_mask_probs(model, images, tmp_path / "moved", chunk_images=2,
                                progress=False, where=cluster)  # fmt: skip
    assert np.array_equal(local.probs[:], moved.probs[:])
    remote = dump_all_mask_probs(model, images, tmp_path / "ray", chunk_images=2,
                                 progress=False, where=cluster)  # fmt: skip
    assert remote.complete and np.array_equal(local.probs[:], remote.probs[:])
    labels = mnist.y_test[:6].numpy()
    plan = SweepPlan.build(36, 4, grid_points=3, diagonal_points=3, consultancy_points=4)
    here = run_sweep(local, labels, plan, tmp_path / "chunks_local", progress=False)
    there = run_sweep(remote, labels, plan, tmp_path / "chunks_ray", cluster, progress=False)
    assert here.keys() == there.keys()
    for key in here:
        assert np.array_equal(here[key], there[key]), key
    assert len(list((tmp_path / "chunks_ray").glob("chunk_*.npz"))) == 3


def test_a_worker_killed_mid_piece_is_retried_and_written_once(cluster, mnist, tmp_path,
                                                               monkeypatch, one_torch_thread):  # fmt: skip
    """The first attempt at chunk 1 kills its own worker process (SIGKILL) while it holds the
    piece; Ray reruns it on another worker; the sweep completes with every chunk written once
    and the same numbers as an uninterrupted run."""
    from debatelab.experiments import sweep
    from debatelab.judges.cnn import JudgeCNN
    from debatelab.store import dump_all_mask_probs

    torch.manual_seed(1)
    store = dump_all_mask_probs(JudgeCNN(1, (8, 16), 18).eval(), _images(mnist, 6),
                                tmp_path / "store", chunk_images=2, progress=False)  # fmt: skip
    labels = mnist.y_test[:6].numpy()
    plan = sweep.SweepPlan.build(36, 4, grid_points=2, diagonal_points=2, consultancy_points=3)
    whole = sweep.run_sweep(store, labels, plan, progress=False)
    marker = tmp_path / "killed-once"
    real = sweep._chunk_task

    def dying(args, real=real, marker=str(marker)):
        if args[1] == 2 and not os.path.exists(marker):  # chunk 1 (images 2-3), first attempt
            open(marker, "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        return real(args)

    writes = []
    real_save = sweep._save_npz
    monkeypatch.setattr(sweep, "_chunk_task", dying)
    monkeypatch.setattr(sweep, "_save_npz", lambda path, arrays: (writes.append(path.name),
                                                                  real_save(path, arrays)))  # fmt: skip
    survived = sweep.run_sweep(store, labels, plan, tmp_path / "chunks", cluster,
                               progress=False)  # fmt: skip
    assert marker.exists()  # the worker really died once

    def fails_on_two(x):  # defined here: Ray ships it by value (the test module is not on
        if x == 2:  # the workers' path)
            raise ValueError("piece 2 failed")
        return x

    with pytest.raises(ValueError, match="piece 2 failed"):  # an error is not retried: raised
        list(run_pieces(fails_on_two, [1, 2, 3], cluster))
    assert sorted(writes) == sorted(set(writes)) and len(writes) == 3
    for key in whole:
        assert np.array_equal(whole[key], survived[key]), key


def test_a_pixel_run_on_ray_equals_the_local_run(cluster, tmp_path, pixel_stand_ins,
                                                 one_torch_thread):  # fmt: skip
    from debatelab.experiments import pixels as experiment

    runs = {}
    for where in ("local", str(cluster)):
        cfg = experiment.PixelExperimentConfig(pixels=2, rollouts=3, images="0:4", batch_games=9,
                                               cluster=where)  # fmt: skip
        out = tmp_path / where.replace(":", "_")
        out.mkdir()
        runs[where] = experiment.run_pixels(cfg, out, progress=False)
        runs[where + "/moves"] = (out / "moves.jsonl").read_text()
    here, there = runs["local"], runs[str(cluster)]
    assert runs["local/moves"] == runs[str(cluster) + "/moves"]
    for key in ("honest_win_rate_precommit", "honest_win_rate_no_precommit",
                "judge_evaluations_this_session"):  # fmt: skip
        assert here[key] == there[key], key
    assert here["judge_evaluations_this_session"] > 0


def test_two_onpolicy_judges_on_ray_equal_the_local_run(cluster, mnist, tmp_path, data_root,
                                                        one_torch_thread):  # fmt: skip
    from debatelab.experiments.judges import train_many
    from debatelab.judges.onpolicy import OnPolicyConfig
    from debatelab.report.runs import RunFolder

    tiny = {"train_limit": 128, "budget": 16, "epochs": 2, "batch_size": 64,
            "eval_images": "0:10000:500", "eval_batch": 20}  # fmt: skip
    cfgs = [OnPolicyConfig(design="D1", protocol="debate2", rule="asym", **tiny),
            OnPolicyConfig(design="D3", protocol="consultancy", **tiny)]  # fmt: skip
    judges = {}
    for where in ("local", str(cluster)):
        cache = tmp_path / f"cache_{where.replace(':', '_')}"
        folder = RunFolder(tmp_path / f"run_{where.replace(':', '_')}", "judges sweep", {},
                           data_dir=data_root, cache_dir=cache, progress=False)  # fmt: skip
        judges[where] = train_many(cfgs, folder, "cpu", mnist, where)
        assert all(j.path.exists() and j.path.parent == cache / "judges" for j in judges[where])
        assert not list((cache / "judges").glob("*.partial.pt"))
    for a, b in zip(judges["local"], judges[str(cluster)], strict=True):
        timeless = [[{k: v for k, v in e.items() if not k.endswith("_seconds")} for e in j.history]
                    for j in (a, b)]  # fmt: skip
        assert timeless[0] == timeless[1]
        for key, value in a.model.state_dict().items():
            assert torch.equal(value, b.model.state_dict()[key]), key
