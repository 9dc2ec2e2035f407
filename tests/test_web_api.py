"""The demo server over real HTTP: answers that agree with the library, clear 4xx on bad input,
and 50 concurrent requests."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
import torch

from debatelab.games.solver import solve_reveal_game
from debatelab.judges import predict_proba
from debatelab.judges.allmask import all_mask_probs
from debatelab.judges.pixel import PixelJudge


@pytest.fixture(scope="module")
def client(demo_server):
    with httpx.Client(base_url=demo_server, timeout=120) as c:
        yield c


def _image(client, index=0):
    s = client.get("/api/sample", params={"index": index}).json()
    return s["image"], s["label"]


def test_info_names_the_missing_models(client):
    info = client.get("/api/info").json()
    assert info["models"] == {"gold": True, "sparse": True, "pixel": [4], "debaters": [4]}
    assert info["missing"]["pixel6"] == "debatelab train --kind pixel --pixels 6"
    assert info["missing"]["debaters6"] == "debatelab agents train --pixels 6"
    assert info["test_images"] == 10_000


def test_classify_agrees_with_the_training_pipeline(client, demo_models, mnist):
    """The server's preprocessing of a test image equals the dataset variant's, so its gold and
    sparse probabilities equal the library's on the stored test tensor."""
    for index in (0, 1, 2):
        image, label = _image(client, index)
        out = client.post("/api/classify", json={"image": image, "center": False}).json()
        x = mnist.x_test[index : index + 1]
        np.testing.assert_allclose(out["gold"], predict_proba(demo_models.gold, x)[0], atol=1e-5)
        want = all_mask_probs(demo_models.sparse, x)[0].mean(axis=0)
        np.testing.assert_allclose(out["sparse"], want, atol=1e-5)
        assert np.argmax(out["gold"]) == label


def test_pixel_game_to_a_verdict(client, demo_models):
    image, label = _image(client, 3)
    liar = (label + 1) % 10
    body = {"image": image, "honest": label, "liar": liar, "pixels": 4, "first": "liar",
            "agent": "mcts", "rollouts": 20, "seed": 5, "play": True}  # fmt: skip
    moves = []
    for turn in range(4):
        out = client.post("/api/pixels", json={**body, "moves": moves}).json()
        assert out["ai_move"] == out["moves"][-1] and len(out["moves"]) == turn + 1
        moves = out["moves"]
    assert out["done"] and out["movers"] == ["liar", "honest", "liar", "honest"]
    values = torch.tensor(image).reshape(1, 784)
    assert all(values[0, p] > 0 for p in moves) and len(set(moves)) == 4
    mask = torch.zeros(1, 784, dtype=torch.bool)
    mask[0, moves] = True
    logits = PixelJudge(demo_models.pixel[4]).logits(values, mask)[0]
    assert out["verdict"]["honest_wins"] == bool(logits[label] > logits[liar])
    np.testing.assert_allclose(out["verdict"]["logits"], logits, atol=1e-5)
    again = client.post("/api/pixels", json={**body, "moves": moves[:2]}).json()
    assert again["moves"][2] == moves[2]  # same seed, same position: same move


def test_learned_agents_play_through_the_api_as_in_the_library(client, demo_models):
    """agent=learned: each AI move is the learned debater's move on the same position."""
    from debatelab.games.learned import LearnedAgent
    from debatelab.games.pixels import PixelGames, PixelRules

    image, label = _image(client, 5)
    liar = (label + 3) % 10
    body = {"image": image, "honest": label, "liar": liar, "pixels": 4, "agent": "learned",
            "play": True}  # fmt: skip
    games = PixelGames.new(np.array(image, dtype=np.float32)[None], [label], [liar],
                           PixelRules(4))  # fmt: skip
    agent = LearnedAgent(demo_models.debaters[4])
    moves = []
    while not games.done:
        out = client.post("/api/pixels", json={**body, "moves": moves}).json()
        slot = agent.moves(games, None, torch.Generator())
        games = games.play(slot)
        assert out["ai_move"] == int(games.candidates[0, slot[0]])
        moves = out["moves"]
    assert out["done"] and out["verdict"] is not None


def test_cell_game_exact_play_reaches_the_solver_value(client, demo_models, mnist):
    image, label = _image(client, 4)
    probs = all_mask_probs(demo_models.sparse, mnist.x_test[4:5])
    for protocol, moves in [("consultancy", (4,)), ("debate4", (1, 1, 1, 1))]:
        body = {"image": image, "label": label, "protocol": protocol, "rule": "asym",
                "k_a": 1, "k_b": 1, "play": True}  # fmt: skip
        turns = []
        while True:
            out = client.post("/api/cells", json={**body, "turns": turns}).json()
            turns = out["turns"]
            if out["done"]:
                break
        want = solve_reveal_game(probs, 36, moves, 1, "asym")
        assert out["claim"] == int(want["claim"][0])
        assert out["verdict"]["payoff"] == pytest.approx(float(want["value"][0]), abs=1e-4)


def test_a_human_move_then_the_ai_reply(client):
    image, label = _image(client, 5)
    body = {"image": image, "label": label, "protocol": "debate2", "rule": "last_b",
            "claim": label, "k_b": 2}  # fmt: skip
    out = client.post("/api/cells", json={**body, "turns": [[0, 35]]}).json()
    assert out["next"] == "B" and out["claim"] == label
    out = client.post("/api/cells", json={**body, "turns": [[0, 35]], "play": True}).json()
    assert out["done"] and len(out["ai_move"]) == 2 and not {0, 35} & set(out["ai_move"])


@pytest.mark.parametrize("body,status,message", [
    ({"image": [0.0] * 100}, 422, "784 numbers"),
    ({"image": ["x"] * 784}, 422, "valid number"),
    ({"image": [2.0] * 784}, 422, "in [0, 1]"),
    ({"image": [0.0] * 784}, 400, "empty"),
])  # fmt: skip
def test_classify_rejects_bad_canvases(client, body, status, message):
    r = client.post("/api/classify", json=body)
    assert r.status_code == status and message in r.json()["error"]


def test_games_reject_bad_requests(client):
    image, label = _image(client, 0)
    cells = {"image": image, "label": label}
    pix = {"image": image, "honest": label, "liar": (label + 1) % 10, "pixels": 4}
    cases = [
        ("/api/cells", {**cells, "protocol": "debate9"}, 422, "protocol"),
        ("/api/cells", {**cells, "rule": "majority"}, 422, "rule"),
        ("/api/cells", {**cells, "k_a": "clever"}, 422, "rank policy"),
        ("/api/cells", {**cells, "turns": [[0], [0]]}, 400, "already revealed"),
        ("/api/pixels", {**pix, "moves": [0]}, 400, "not a nonzero pixel"),
        ("/api/pixels", {**pix, "liar": label}, 422, "must differ"),
        ("/api/pixels", {**pix, "pixels": 6}, 404, "debatelab train --kind pixel --pixels 6"),
        ("/api/pixels", {**pix, "agent": "oracle"}, 422, "agent"),
        ("/api/pixels", {**pix, "rollouts": 10**6}, 422, "rollouts"),
    ]
    for path, body, status, message in cases:
        r = client.post(path, json=body)
        assert (r.status_code, message in r.json()["error"]) == (status, True), (body, r.text)
    r = client.post(
        "/api/classify", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422 and "JSON" in r.json()["error"]
    r = client.get("/api/sample", params={"index": 10_000})
    assert r.status_code == 422
    more = [
        ("/api/cells", {**cells, "seed": -1}, 422, "seed"),
        ("/api/pixels", {**pix, "seed": 2**40}, 422, "seed"),
        ("/api/cells", {**cells, "k_b": "bo" + "9" * 400}, 422, "k_b"),
        ("/api/cells", {**cells, "k_a": 10**9}, 422, "k_a"),
        ("/api/cells", {**cells, "turns": [[1]] * 5}, 422, "turns"),
    ]
    for path, body, status, message in more:
        r = client.post(path, json=body)
        assert (r.status_code, message in r.json()["error"]) == (status, True), (body, r.text)
    r = client.get("/api/nothing-here")
    assert r.status_code == 404 and "error" in r.json()
    r = client.get("/api/classify")
    assert r.status_code == 405 and "error" in r.json()


def test_a_malformed_content_length_gets_400(demo_server):
    import socket

    host, port = demo_server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as sock:
        sock.sendall(b"POST /api/classify HTTP/1.1\r\nHost: x\r\nContent-Length: 12a\r\n\r\n")
        reply = sock.recv(4096).decode()
    assert reply.startswith("HTTP/1.1 400")


@pytest.mark.parametrize("rule", ["sym", "last_b"])
def test_cell_verdicts_under_sym_and_last_b(client, demo_models, mnist, rule):
    """The API's verdict equals the library's game on the same probabilities."""
    from debatelab.games.cellplay import CellDebate, CellGameRules

    image, label = _image(client, 6)
    turns = [[3, 14], [20, 31]]
    body = {"image": image, "label": label, "protocol": "debate2", "rule": rule,
            "claim": label, "turns": turns}  # fmt: skip
    out = client.post("/api/cells", json=body).json()
    probs = all_mask_probs(demo_models.sparse, mnist.x_test[6:7])[0]
    game = CellDebate(probs, CellGameRules("debate2", rule), claim=label)
    want = game.verdict(turns)
    assert out["b_class"] == game.b_class and out["verdict"]["b_class"] == want["b_class"]
    assert out["verdict"]["a_wins"] == want["a_wins"]
    assert out["verdict"]["payoff"] == pytest.approx(want["payoff"], abs=1e-5)
    p = np.array(out["verdict"]["probs"])
    b = want["b_class"]
    if rule == "sym":  # B committed first: p[a] - p[b]
        assert out["verdict"]["payoff"] == pytest.approx(p[label] - p[b], abs=1e-5)
    else:  # B names the judge's best other class after the reveal; payoff p[a] - max_d p[d]
        others = p.copy()
        others[label] = -1
        assert b == int(others.argmax())
        assert out["verdict"]["payoff"] == pytest.approx(p[label] - p.max(), abs=1e-5)
        assert out["verdict"]["a_wins"] == bool(p[label] > p[b])


def test_identical_concurrent_requests_compute_once():
    import threading
    import time

    from debatelab.web.app import _LRU

    cache, calls = _LRU(4), []

    def make():
        calls.append(1)
        time.sleep(0.2)
        return object()

    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("k", make)))
               for _ in range(10)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and cache.computed == 1 and len({id(r) for r in results}) == 1
    with pytest.raises(ZeroDivisionError):  # a failure reaches the caller and is not cached
        cache.get("bad", lambda: 1 / 0)
    assert cache.get("bad", lambda: 7) == 7


def test_oversized_bodies_get_413(client):
    big = {"image": [0.5] * 200_000}  # about 1 MB of JSON
    r = client.post("/api/classify", json=big)
    assert r.status_code == 413 and "too large" in r.json()["error"]

    def chunks():  # no content-length: the limit applies to what is streamed
        for _ in range(100):
            yield b" " * 4096

    r = client.post("/api/classify", content=chunks(), headers={"content-type": "application/json"})
    assert r.status_code == 413
    assert client.get("/api/info").status_code == 200


def test_fifty_concurrent_requests(client, demo_server):
    images = [_image(client, i)[0] for i in range(10)]

    def call(i):
        with httpx.Client(base_url=demo_server, timeout=120) as c:
            if i % 3 == 0:
                return c.post("/api/classify", json={"image": images[i % 10], "center": True})
            if i % 3 == 1:
                return c.post(
                    "/api/cells",
                    json={"image": images[i % 10], "label": 0, "protocol": "debate2", "play": True},
                )
            return c.post("/api/classify", json={"image": [0.0] * 10})  # a bad one, too

    with ThreadPoolExecutor(50) as pool:
        responses = list(pool.map(call, range(50)))
    codes = [r.status_code for r in responses]
    assert codes.count(200) == 34 and codes.count(422) == 16
    assert client.get("/api/info").status_code == 200


def test_serve_command_with_an_empty_cache_names_the_commands(tmp_path, data_root, client):
    """`debatelab serve` as a user starts it, on a cache with no judges: the page loads, the
    info and the 404s say which command makes each judge."""
    import os
    import socket
    import subprocess
    import sys
    import time

    image, _ = _image(client, 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DEBATELAB_CACHE": str(tmp_path / "empty"),
           "DEBATELAB_DATA": str(data_root)}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "debatelab", "serve", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                info = httpx.get(url + "/api/info").json()
                break
            except httpx.TransportError:
                assert proc.poll() is None and time.time() < deadline, "serve did not start"
                time.sleep(0.2)
        assert info["models"] == {"gold": False, "sparse": False, "pixel": [], "debaters": []}
        assert info["missing"]["gold"] == "debatelab train --kind gold"
        assert info["missing"]["debaters6"] == "debatelab agents train --pixels 6"
        assert info["missing"]["pixel6"] == "debatelab train --kind pixel --pixels 6"
        page = httpx.get(url + "/")
        assert page.status_code == 200 and 'id="tab-debate"' in page.text
        out = httpx.post(url + "/api/classify", json={"image": image}).json()
        assert out["gold"] is None and out["missing"]["sparse"] == "debatelab train --kind sparse"
        r = httpx.post(url + "/api/cells", json={"image": image, "label": 7})
        assert r.status_code == 404 and "`debatelab train --kind sparse`" in r.json()["error"]
    finally:
        proc.terminate()
        text = proc.communicate(timeout=30)[0]
    assert "missing gold: make it with `debatelab train --kind gold`" in text
