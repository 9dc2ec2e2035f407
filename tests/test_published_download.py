"""The published judges come from the study's repository: downloaded on first use into the cache,
checked against the package's manifest by size and sha256, never downloaded twice, refused
(with nothing kept) when they do not match, and not downloaded at all under
``DEBATELAB_OFFLINE=1``.

The real download code runs against a real HTTP server on 127.0.0.1 (``http.server`` in a
thread) that serves a copy laid out like the repository (``weights/``, ``results/``), built from
the project's offline copy (../shared/published-judges, whose files are the repository's byte
for byte); the server counts the requests it answers."""

from __future__ import annotations

import hashlib
import json
import shutil
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from debatelab.cli import main
from debatelab.experiments.judges import curve_entries, published_curves
from debatelab.judges import published
from debatelab.judges.onpolicy import OnPolicyConfig, load_published_judge
from debatelab.judges.published_manifest import COMMIT, REPOSITORY, TABLE

SHARED = Path(__file__).resolve().parents[2] / "shared" / "published-judges"
pytestmark = pytest.mark.skipif(not SHARED.exists(),
                                reason="the published judges are not on this machine")  # fmt: skip
D2 = "verifier_head_D2_mnist"


@pytest.fixture(scope="module")
def repository(tmp_path_factory) -> Path:
    """A copy of the shared files laid out like the repository at the commit."""
    root = tmp_path_factory.mktemp("repository")
    for f in SHARED.rglob("*"):
        if f.is_file() and f.name != "README.md":
            rel = f.relative_to(SHARED)
            dest = root / ("results" / rel.relative_to("curves") if rel.parts[0] == "curves"
                           else "weights" / rel)  # fmt: skip
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(f, dest)
    return root


class Server:
    """``http.server`` in a thread, serving ``root``; ``requests`` lists the paths it was asked
    for."""

    def __init__(self, root: Path):
        self.root, self.requests = root, []
        server = self

        class Handler(SimpleHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                super().do_GET()

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(root)))
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(repository, tmp_path, monkeypatch):
    """A server of a private copy of the repository (a test may damage its files), with the
    cache and the download address pointed at it."""
    root = tmp_path / "served"
    shutil.copytree(repository, root)
    server = Server(root)
    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("DEBATELAB_PUBLISHED_URL", server.url)
    monkeypatch.delenv("DEBATELAB_OFFLINE", raising=False)
    yield server
    server.close()


def files_under(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file()) if path.exists() else []


def test_the_manifest_is_the_published_copy():
    """Every line of the manifest (path in the repository, size, sha256) is computed from the
    shared copy again; it lists the 52 judges and their per-epoch arrays."""
    assert published.manifest_of(published.local_copy(SHARED)) == TABLE
    assert REPOSITORY == "emparu/debate-quantilizers-images" and COMMIT.startswith("f7b3074b")
    assert len(COMMIT) == 40
    judges = published.judge_entries()
    assert len(judges) == 52
    assert {e.folder for e in judges} == set(published.FOLDERS.values())
    assert all(len(published.judge_entries([f])) == 13 for f in published.FOLDERS.values())
    assert published.DEFAULT_URL.endswith(f"/{REPOSITORY}/{COMMIT}/")


def test_files_are_downloaded_checked_and_cached_once(served, tmp_path):
    entries = published.judge_entries([D2]) + published.curve_entries(D2)
    copy = published.fetch(entries)
    assert copy.root == tmp_path / "cache" / "published-judges" / COMMIT
    assert sorted(served.requests) == sorted(f"/{e.path}" for e in entries)
    for e in entries:
        got = copy.path(e.path)
        assert hashlib.sha256(got.read_bytes()).hexdigest() == e.sha256
        assert got.read_bytes() == (served.root / e.path).read_bytes()
    assert files_under(copy.root) == sorted(copy.path(e.path) for e in entries)  # no debris
    again = published.fetch(entries)
    assert again == copy and len(served.requests) == len(entries)  # nothing downloaded again
    # a cached file that no longer matches (damaged on disk) is fetched again, alone
    damaged = copy.path(entries[0].path)
    damaged.write_bytes(b"not a judge")
    published.fetch(entries)
    assert len(served.requests) == len(entries) + 1
    assert hashlib.sha256(damaged.read_bytes()).hexdigest() == entries[0].sha256


@pytest.mark.parametrize("damage", ["one byte changed", "truncated", "longer"])
def test_a_download_that_does_not_match_is_refused_and_not_kept(served, damage):
    good, bad = published.judge_entries([D2])[:2]
    served_file = served.root / bad.path
    data = bytearray(served_file.read_bytes())
    if damage == "one byte changed":
        data[len(data) // 2] ^= 0xFF
    elif damage == "truncated":
        data = data[:-100]
    else:
        data += b"\0" * 100
    served_file.write_bytes(bytes(data))
    with pytest.raises(published.PublishedError) as err:
        published.fetch([good, bad])
    message = str(err.value)
    assert bad.path in message and "not kept" in message and "--published DIR" in message
    assert ("sha256" in message) == (damage == "one byte changed")
    root = published.cache_root()
    assert files_under(root) == [root / good.path]  # the good one stays; of the bad one, nothing


def test_offline_refuses_to_download_and_names_the_offline_copy(served, monkeypatch, tmp_path):
    monkeypatch.setenv("DEBATELAB_OFFLINE", "1")
    entries = published.judge_entries([D2])
    with pytest.raises(published.PublishedError, match="--published DIR") as err:
        published.fetch(entries)
    assert "DEBATELAB_OFFLINE" in str(err.value) and "13 of the 13" in str(err.value)
    started = time.monotonic()
    result = CliRunner().invoke(main, ["judges", "eval-published", "--folders", D2, "--quiet",
                                       "--out", str(tmp_path / "run")])  # fmt: skip
    assert result.exit_code != 0 and time.monotonic() - started < 30
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "--published DIR" in lines[0] and "DEBATELAB_OFFLINE" in lines[0]
    assert served.requests == [] and files_under(published.cache_root()) == []
    # once in the cache, offline use needs no network
    monkeypatch.delenv("DEBATELAB_OFFLINE")
    published.fetch(entries)
    monkeypatch.setenv("DEBATELAB_OFFLINE", "1")
    published.fetch(entries)
    assert len(served.requests) == len(entries)


def test_a_server_that_cannot_be_reached_is_one_clear_error(served, monkeypatch):
    served.close()
    entry = published.judge_entries([D2])[0]
    with pytest.raises(published.PublishedError, match="could not download") as err:
        published.fetch([entry], url=served.url)
    assert entry.path in str(err.value) and "--published DIR" in str(err.value)
    assert files_under(published.cache_root()) == []


def test_eval_published_reads_the_downloaded_copy(served, tmp_path, data_root, monkeypatch):
    """`judges eval-published` without --published downloads the judges of the folders it is
    asked for and evaluates them: the numbers `judges eval` gives for the offline copy's file,
    and the same weights; a rerun downloads nothing."""
    from debatelab.experiments.judges import EvalJudgeConfig, evaluate_checkpoint

    monkeypatch.setenv("DEBATELAB_DATA", str(data_root))
    args = ["judges", "eval-published", "--folders", D2, "--images", "0:10000:2000", "--budget",
            "16", "--quiet", "--out", str(tmp_path / "run")]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    entries = published.judge_entries([D2])
    assert sorted(served.requests) == sorted(f"/{e.path}" for e in entries)
    results = json.loads((tmp_path / "run" / "judges.json").read_text())
    assert sorted(results) == sorted(f"{D2}/{e.name}" for e in entries)
    name = "debate_judge_2turn_bce_asym_mnist.pt"
    offline = evaluate_checkpoint(EvalJudgeConfig(judge_file=str(SHARED / D2 / name),
                                                  images="0:10000:2000", budget=16), data_root)  # fmt: skip
    assert {k: results[f"{D2}/{name}"][k] for k in offline} == offline
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert len(served.requests) == len(entries)  # the second use downloaded nothing
    for e in entries:
        ours = load_published_judge(published.cache_root() / e.path).model.state_dict()
        theirs = load_published_judge(SHARED / D2 / e.name).model.state_dict()
        assert ours.keys() == theirs.keys()
        assert all(torch.equal(ours[k], theirs[k]) for k in ours)


def test_published_curves_come_from_the_same_copy(served, repository):
    """The per-epoch curves of the plots: downloaded (only the judge's own arrays), read from a
    repository-layout copy, or from the shared layout: the same numbers."""
    cfg = OnPolicyConfig(design="D3", variant="mnist", protocol="debate4", rule="last_b")
    wanted = curve_entries(cfg)
    assert sorted(m for m, _ in wanted) == ["belief", "judge", "selection"]
    got = published_curves(cfg)
    assert sorted(served.requests) == sorted(f"/{e.path}" for _, e in wanted)
    for other in (published_curves(cfg, repository), published_curves(cfg, SHARED)):
        assert other.keys() == got.keys()
        assert all((other[k] == got[k]).all() for k in got)
    assert got["judge"][-1] == pytest.approx(88.78, abs=0.006)  # REFERENCE B, D3 4-turn last_b
    published_curves(cfg)
    assert len(served.requests) == len(wanted)
    assert published_curves(OnPolicyConfig(design="D2", variant="fashionmnist")) == {}
