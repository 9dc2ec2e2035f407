"""The demo's game logic called directly, without a server: the same answers as the HTTP API for
the same request, the same answer every time, and ValueError for illegal positions."""

from __future__ import annotations

import json

import httpx
import pytest

from debatelab.web import positions
from debatelab.web.positions import (
    CellPosition,
    Compute,
    MissingModelError,
    PixelPosition,
    cell_position,
    classify,
    pixel_position,
)


@pytest.fixture(scope="module")
def client(demo_server):
    with httpx.Client(base_url=demo_server, timeout=120) as c:
        yield c


def _json(value):
    """What the API would send for ``value``."""
    return json.loads(json.dumps(value))


def _post(client, path, body):
    r = client.post(path, json=body)
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def image(demo_models):
    return positions.sample(demo_models, 3)


def test_info_and_sample_equal_the_api(client, demo_models):
    assert _json(positions.info(demo_models)) == client.get("/api/info").json()
    got = positions.sample(demo_models, 7)
    assert got == client.get("/api/sample", params={"index": 7}).json()
    with pytest.raises(ValueError, match="test set's size"):
        positions.sample(demo_models, len(demo_models.test_images))


@pytest.mark.parametrize("center", [False, True])
def test_classify_equals_the_api(client, demo_models, image, center):
    want = _post(client, "/api/classify", {"image": image["image"], "center": center})
    assert _json(classify(demo_models, image["image"], center)) == want


def test_pixel_game_equals_the_api_move_by_move(client, demo_models, image):
    label = image["label"]
    body = {"image": image["image"], "honest": label, "liar": (label + 1) % 10, "pixels": 4,
            "first": "liar", "agent": "mcts", "rollouts": 20, "seed": 11, "play": True}  # fmt: skip
    moves: list[int] = []
    for _ in range(4):
        want = _post(client, "/api/pixels", {**body, "moves": moves})
        pos = PixelPosition(**{**body, "moves": moves})
        got = _json(pixel_position(demo_models, pos))
        assert got == want
        assert _json(pixel_position(demo_models, pos)) == got  # deterministic
        moves = got["moves"]
    assert got["done"] and got["verdict"] is not None
    for agent in ("greedy", "random"):
        pos = {**body, "agent": agent, "moves": moves[:1]}
        assert _json(pixel_position(demo_models, PixelPosition(**pos))) == _post(
            client, "/api/pixels", pos
        )


@pytest.mark.parametrize("protocol,rule,k_b", [("debate2", "last_b", 2), ("debate4", "sym", "bo3"),
                                               ("consultancy", "asym", 1)])  # fmt: skip
def test_cell_game_equals_the_api_move_by_move(client, demo_models, image, protocol, rule, k_b):
    body = {"image": image["image"], "label": image["label"], "protocol": protocol,
            "rule": rule, "k_a": 2, "k_b": k_b, "seed": 5, "play": True}  # fmt: skip
    turns: list[list[int]] = []
    while True:
        want = _post(client, "/api/cells", {**body, "turns": turns})
        pos = CellPosition(**{**body, "turns": turns})
        got = _json(cell_position(demo_models, pos))
        assert got == want
        assert _json(cell_position(demo_models, pos)) == got  # deterministic
        turns = got["turns"]
        if got["done"]:
            break
    assert got["verdict"] is not None and got["ai_move"] == turns[-1]


def test_a_caching_compute_gives_the_same_answers(demo_models, image):
    """A static-site build may keep the heavy steps in a dict: one all-mask pass per image, one
    solve per setting, the same positions."""

    class Memo(Compute):
        def __init__(self):
            self.kept, self.made = {}, []

        def cached(self, kind, key, make):
            if (kind, key) not in self.kept:
                self.made.append(kind)
                self.kept[kind, key] = make()
            return self.kept[kind, key]

    memo = Memo()
    body = {"image": image["image"], "label": image["label"], "protocol": "debate2", "play": True}
    first = cell_position(demo_models, CellPosition(**body), memo)
    second = cell_position(demo_models, CellPosition(**body, turns=[first["turns"][0]]), memo)
    classify(demo_models, image["image"], center=False, compute=memo)
    assert memo.made == ["probs", "cell_game"]
    assert first == cell_position(demo_models, CellPosition(**body))
    assert second == cell_position(demo_models, CellPosition(**body, turns=[first["turns"][0]]))


def test_illegal_positions_raise_value_error(demo_models, image):
    label = image["label"]
    cells = {"image": image["image"], "label": label}
    with pytest.raises(ValueError, match="already revealed"):
        cell_position(demo_models, CellPosition(**cells, turns=[[0], [0]]))
    with pytest.raises(ValueError, match="must reveal 2 distinct"):
        cell_position(demo_models, CellPosition(**cells, protocol="debate2", turns=[[0]]))
    pix = {"image": image["image"], "honest": label, "liar": (label + 1) % 10, "pixels": 4}
    with pytest.raises(ValueError, match="not a nonzero pixel"):
        pixel_position(demo_models, PixelPosition(**pix, moves=[0]))
    ink = [i for i, v in enumerate(image["image"]) if v > 0]
    with pytest.raises(ValueError, match="over"):  # a fifth pixel in a 4-pixel game
        pixel_position(demo_models, PixelPosition(**pix, moves=ink[:5]))
    with pytest.raises(ValueError, match="empty"):
        classify(demo_models, [0.0] * 784)
    with pytest.raises(MissingModelError, match="debatelab train --kind pixel --pixels 6"):
        pixel_position(demo_models, PixelPosition(**{**pix, "pixels": 6}))


@pytest.mark.parametrize("kind,fields,message", [
    (PixelPosition, {"honest": 3, "liar": 3}, "must differ"),
    (PixelPosition, {"honest": 3, "liar": 4, "agent": "oracle"}, "agent"),
    (PixelPosition, {"honest": 3, "liar": 4, "seed": -1}, "seed"),
    (CellPosition, {"label": 3, "protocol": "debate9"}, "protocol"),
    (CellPosition, {"label": 3, "k_a": "clever"}, "rank policy"),
    (CellPosition, {"label": 12}, "label"),
])  # fmt: skip
def test_malformed_positions_fail_when_built(kind, fields, message):
    with pytest.raises(ValueError, match=message):
        kind(image=[0.5] * 784, **fields)
    with pytest.raises(ValueError, match="784 numbers"):
        kind(image=[0.5] * 10, **fields)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        kind(image=[2.0] * 784, **fields)


def test_positions_have_no_http_imports():
    import subprocess
    import sys

    code = ("import sys, debatelab.web.positions; "
            "print([m for m in ('fastapi', 'starlette', 'pydantic', 'uvicorn') if m in sys.modules])")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
