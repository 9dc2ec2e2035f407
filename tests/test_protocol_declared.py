"""A protocol added as one declaration (registered here, nothing else edited) is solvable by
the exact solver, listed by ``debatelab protocols`` and playable through the demo's API."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from debatelab import protocols as P
from debatelab.cli import main
from debatelab.games.solver import solve_capabilities
from test_solver import brute_force, random_probs

#: The one declaration: A reveals one cell, then two more, then B rebuts with one (A1 A2 B1).
DECLARED = P.Protocol("test_a1a2b1", (P.Turn("A", 1), P.Turn("A", 2), P.Turn("B", 1)),
                      "A reveals 1 cell, then 2 more; B rebuts with 1",
                      branching=(6, 6, 36))  # fmt: skip


@pytest.fixture
def declared():
    P.register_protocol(DECLARED, source="the plug-in test-protocols")
    yield DECLARED
    # the registry has no removal (plug-ins are for the process's life); undo this test's
    P.PROTOCOLS._items.pop(DECLARED.name)
    P.PROTOCOLS._sources.pop(DECLARED.name)


@pytest.mark.parametrize("rule", ["asym", "sym", "last_b"])
def test_a_declared_protocol_is_solved_exactly(declared, rule):
    rng = np.random.default_rng(21)
    probs = random_probs(rng, 2, 7, 4, 3)
    labels = rng.integers(0, 3, 2)
    caps = [(1, 1), (2, 3), ("uniform", 1)]
    out = solve_capabilities(probs, 7, declared.name, caps, rule, labels)
    for ci, k in enumerate(caps):
        for i in range(2):
            claim, value, judge = brute_force(probs[i], labels[i], 7, declared.moves, k, rule,
                                              declared.players)  # fmt: skip
            assert out["claim"][ci, i] == claim
            assert out["value"][ci, i] == pytest.approx(value, abs=1e-9)
            assert out["judge_accuracy"][ci, i] == pytest.approx(judge, abs=1e-9)


def test_a_declared_protocol_is_listed(declared):
    runner = CliRunner()
    text = runner.invoke(main, ["protocols"]).output
    row = next(line for line in text.splitlines() if line.startswith(declared.name))
    for word in ("cells", "A1 A2 B1", "6x6x36", declared.summary, "the plug-in test-protocols"):
        assert word in row, (word, row)
    assert "last_b" in text and "after play" in text
    rows = json.loads(runner.invoke(main, ["protocols", "--json", "--medium", "cells"]).output)
    mine = next(r for r in rows["protocols"] if r["name"] == declared.name)
    assert mine["per_player"] == {"A": 3, "B": 1} and mine["players"] == ["A", "A", "B"]
    assert [r["name"] for r in rows["rules"]] == ["asym", "sym", "last_b"]
    assert "List the registered protocols" in runner.invoke(main, ["protocols", "--help"]).output


def test_the_cli_without_the_declaration_does_not_list_it():
    assert DECLARED.name not in CliRunner().invoke(main, ["protocols"]).output


def test_a_declared_protocol_is_playable_through_the_demo_api(declared, demo_models, mnist):
    from fastapi.testclient import TestClient

    from debatelab.games.cellplay import CellDebate, CellGameRules
    from debatelab.judges.allmask import all_mask_probs
    from debatelab.web.app import create_app

    client = TestClient(create_app(demo_models))
    info = client.get("/api/info").json()
    assert declared.name in [p["name"] for p in info["protocol_list"]]
    schema = client.get("/api/openapi.json").json()["components"]["schemas"]["CellRequest"]
    assert declared.name in schema["properties"]["protocol"]["enum"]
    image = client.get("/api/sample", params={"index": 4}).json()
    body = {"image": image["image"], "label": image["label"], "protocol": declared.name,
            "rule": "sym", "seed": 3, "play": True}  # fmt: skip
    turns, out = [], None
    for t in range(3):  # AI A twice, then AI B
        out = client.post("/api/cells", json={**body, "turns": turns}).json()
        assert out["players"] == ["A", "A", "B"] and len(out["ai_move"]) == declared.moves[t]
        turns = out["turns"]
    assert out["done"] and out["next"] is None
    probs = all_mask_probs(demo_models.sparse, mnist.x_test[4:5])[0]
    game = CellDebate(probs, CellGameRules(declared.name, "sym"))
    assert (out["claim"], out["b_class"]) == (game.claim, game.b_class)
    assert out["value"] == pytest.approx(game.value, abs=1e-5)
    assert out["verdict"]["payoff"] == pytest.approx(game.verdict(turns)["payoff"], abs=1e-5)
    assert out["verdict"]["payoff"] == pytest.approx(game.value, abs=1e-4)  # exact play
    bad = client.post("/api/cells", json={**body, "turns": [[0, 1]], "play": False})
    assert bad.status_code == 400 and "turn 1 (A) must reveal 1" in bad.json()["error"]
