"""The new cell protocols in the served demo, in Debian's chromium: debate3 (A1 B2 A1) and
consult_rebut (A3 B1) are listed from the server's registry with their summaries and played to
the end, with human and AI moves, and what the page shows equals the library's solution of the
same image (the claim, the AI's exact replies, the verdict and A's payoff)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import ARTIFACTS, demo_page
from debatelab import protocols as P
from debatelab.games.cellplay import CellDebate, CellGameRules
from debatelab.web.positions import mask_probs


@pytest.fixture
def page(browser, demo_server):
    with demo_page(browser, demo_server) as pg:
        yield pg


def _start(page, protocol: str, role: str, rule: str):
    page.click("#random")
    page.wait_for_selector("#gold-pred[data-cls]")
    page.click("#tab-debate")
    page.select_option("#game", "cells")
    page.select_option("#role", role)
    page.select_option("#protocol", protocol)
    page.select_option("#rule", rule)
    page.click("#start")


def _click_cell(page, cell: int, side: int = 6):
    box = page.locator("#full").bounding_box()
    u = box["width"] / side
    page.mouse.click(box["x"] + (cell % side + 0.5) * u, box["y"] + (cell // side + 0.5) * u)


def _my_turn(page, n_turns_before: int):
    page.wait_for_function(
        f"app.game && app.game.turns.length === {n_turns_before} && "
        "document.getElementById('status').textContent.startsWith('Your move')"
    )


def _library_game(demo_models, page, protocol, rule, claim=None):
    image = np.asarray(page.evaluate("app.game.image"), dtype=np.float32).reshape(28, 28)
    probs = mask_probs(demo_models, image)
    return CellDebate(probs, CellGameRules(protocol, rule, 1, 1), claim)


def _free(turns, n, avoid=()):
    taken = {c for t in turns for c in t} | set(avoid)
    return [c for c in range(36) if c not in taken][:n]


def _check_verdict(page, game, turns):
    want = game.verdict(turns)
    assert page.locator("#winner").get_attribute("data-winner") == ("A" if want["a_wins"] else "B")
    text = page.locator("#verdict").text_content()
    payoff = float(re.search(r"Payoff to A: (-?\d+\.\d{3})", text).group(1))
    assert payoff == pytest.approx(want["payoff"], abs=1e-3)
    assert f"The judge says {want['judge_class']}" in text


def test_the_protocol_select_is_the_servers_registry(page):
    page.click("#tab-debate")
    page.select_option("#game", "cells")
    options = page.eval_on_selector_all("#protocol option", "os => os.map(o => [o.value, o.title])")
    want = [(n, P.protocol(n).summary) for n in P.protocol_names("cells")]
    assert [tuple(o) for o in options] == want
    page.select_option("#protocol", "debate3")
    summary = page.locator("#protocol-summary")
    assert summary.get_attribute("data-turns") == "A1 B2 A1"
    assert "3 turns, A reveals 2 cells, B 2" in summary.text_content()
    page.select_option("#protocol", "consult_rebut")
    assert "2 turns, A reveals 3 cells, B 1" in summary.text_content()


def test_play_debate3_as_a_against_the_exact_b(page, demo_models):
    """A person plays A (the honest claim) under sym: one cell, then the AI's two, then the last
    cell; B's reply and the verdict are the library's."""
    _start(page, "debate3", "honest", "sym")
    _my_turn(page, 0)
    truth = page.evaluate("app.game.truth")
    game = _library_game(demo_models, page, "debate3", "sym", claim=truth)
    assert page.evaluate("app.game.state.b_class") == game.b_class
    assert page.evaluate("app.game.state.players") == ["A", "B", "A"]
    turns = [_free([], 1)]
    _click_cell(page, turns[0][0])
    _my_turn(page, 2)  # the AI B moved: two cells, among its exact best replies
    b_move = page.evaluate("app.game.turns[1]")
    assert len(b_move) == 2
    cells, weights = game.options(turns)
    assert weights[cells.index(tuple(b_move))] == weights.max() > 0
    turns.append(b_move)
    last = _free(turns, 1)
    _click_cell(page, last[0])
    page.wait_for_selector("#winner", timeout=60_000)
    turns.append(last)
    assert page.evaluate("app.game.turns") == turns
    assert [li.get_attribute("class") for li in page.locator("#moves li").all()] == ["A", "B", "A"]
    assert page.locator("#moves li").nth(1).text_content().startswith("B: cells ")
    _check_verdict(page, game, turns)
    page.screenshot(path=str(ARTIFACTS / "debate-cells-debate3.png"), full_page=True)


def test_play_consult_rebut_as_the_liar_then_watch_it(page, demo_models):
    """A person plays a lying consultant (three cells), the exact B rebuts with one; then an AI
    consultant plays the same protocol and the page reaches the library's exact value."""
    _start(page, "consult_rebut", "liar", "last_b")
    _my_turn(page, 0)
    lie = page.evaluate("app.game.claim")
    game = _library_game(demo_models, page, "consult_rebut", "last_b", claim=lie)
    mine = [7, 10, 25]
    for cell in mine:
        _click_cell(page, cell)
    page.click("#reveal")
    page.wait_for_selector("#winner", timeout=60_000)
    turns = page.evaluate("app.game.turns")
    assert turns[0] == mine and len(turns) == 2 and len(turns[1]) == 1
    cells, weights = game.options([mine])
    assert weights[cells.index(tuple(turns[1]))] == weights.max() > 0
    _check_verdict(page, game, turns)

    page.select_option("#role", "spectator")
    page.click("#start")
    page.wait_for_selector("#winner", timeout=60_000)
    spectator = _library_game(demo_models, page, "consult_rebut", "last_b")
    assert page.evaluate("app.game.state.claim") == spectator.claim
    turns = page.evaluate("app.game.turns")
    assert [len(t) for t in turns] == [3, 1]
    assert spectator.verdict(turns)["payoff"] == pytest.approx(spectator.value, abs=1e-9)
    _check_verdict(page, spectator, turns)
    page.screenshot(path=str(ARTIFACTS / "debate-cells-consult-rebut.png"), full_page=True)
