"""``llamacpp:NAME`` for a known model: fetched from the model hub into the cache once, through
the real download path, and kept only when its size and sha256 are the publisher's (a local
HTTP server stands in for the hub, with a small file in place of the GGUF)."""

from __future__ import annotations

import hashlib
import http.server
import threading
from functools import partial

import pytest

from debatelab.llm import backends
from debatelab.llm.backends import BackendError, HubModel, hub_model_path


@pytest.fixture
def hub(tmp_path, monkeypatch):
    root = tmp_path / "hub"
    (root / "org" / "tiny" / "resolve" / "main").mkdir(parents=True)
    data = bytes(range(256)) * 40
    (root / "org" / "tiny" / "resolve" / "main" / "tiny.gguf").write_bytes(data)
    hits = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            super().do_GET()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             partial(Handler, directory=str(root)))  # fmt: skip
    threading.Thread(target=server.serve_forever, daemon=True).start()
    entry = HubModel("org/tiny", "tiny.gguf", len(data), hashlib.sha256(data).hexdigest(), "MIT")
    monkeypatch.setitem(backends.HUB_MODELS, "tiny", entry)
    monkeypatch.setenv("DEBATELAB_MODELS_URL", f"http://127.0.0.1:{server.server_port}")
    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("DEBATELAB_OFFLINE", raising=False)
    yield root, data, hits, tmp_path / "cache" / "models" / "tiny.gguf"
    server.shutdown()


def test_a_known_model_is_downloaded_once_and_checked(hub):
    _, data, hits, path = hub
    assert hub_model_path("tiny", progress=False) == path
    assert path.read_bytes() == data and hits == ["/org/tiny/resolve/main/tiny.gguf"]
    assert hub_model_path("tiny", progress=False) == path
    assert len(hits) == 1  # the cache's copy is used


def test_a_damaged_download_is_refused_and_not_kept(hub, monkeypatch):
    root, data, hits, path = hub
    (root / "org" / "tiny" / "resolve" / "main" / "tiny.gguf").write_bytes(data[:-1] + b"x")
    with pytest.raises(BackendError, match="sha256 .* was not kept"):
        hub_model_path("tiny", progress=False)
    assert not path.exists() and not list(path.parent.glob("*"))


def test_a_hand_copied_file_is_checked_and_offline_mode_says_what_to_do(hub, monkeypatch):
    _, data, hits, path = hub
    monkeypatch.setenv("DEBATELAB_OFFLINE", "1")
    with pytest.raises(BackendError, match="forbids downloading it: download tiny.gguf from "
                       "org/tiny"):  # fmt: skip
        hub_model_path("tiny", progress=False)
    path.parent.mkdir(parents=True)
    path.write_bytes(data[::-1])  # the right size, the wrong bytes
    with pytest.raises(BackendError, match="size or sha256"):
        hub_model_path("tiny", progress=False)
    path.write_bytes(data)
    assert hub_model_path("tiny", progress=False) == path and hits == []
