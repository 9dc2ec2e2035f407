"""The demo page in real headless Chromium (Debian's chromium driven by Playwright).

Screenshots of every step land in test-artifacts/ (git-ignored). Without /usr/bin/chromium the
tests skip, unless DEBATELAB_REQUIRE_BROWSER=1 (CI installs chromium and sets it).
"""

from __future__ import annotations

import pytest

from conftest import ARTIFACTS, demo_page, draw_one


@pytest.fixture
def page(browser, demo_server):
    with demo_page(browser, demo_server) as pg:
        yield pg


def _shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def test_draw_a_digit_and_read_the_prediction(page):
    draw_one(page)
    pred = page.locator("#gold-pred[data-cls]")
    pred.wait_for(timeout=30_000)
    assert pred.get_attribute("data-cls") == "1"
    assert page.locator("#sparse-pred[data-cls]").count() == 1
    assert page.locator("#gold-bars .bar-row").count() == 10
    _shot(page, "classify-drawn-1")


def _random_image(page):
    page.click("#random")
    page.wait_for_selector("#gold-pred[data-cls]")


def _click_board(page, index: int, side: int):
    """Click square ``index`` of the full-image board, which shows ``side`` x ``side`` squares."""
    box = page.locator("#full").bounding_box()
    u = box["width"] / side
    page.mouse.click(box["x"] + (index % side + 0.5) * u, box["y"] + (index // side + 0.5) * u)


def _wait_for_my_turn(page):
    page.wait_for_function("document.getElementById('status').textContent.startsWith('Your move')")


def _start_pixel_game(page, role: str, rollouts: int, first: str = "liar"):
    """A K = 4 pixel debate on a random test image with MCTS agents of ``rollouts``."""
    _random_image(page)
    _debate_tab(page, "pixels", role)
    page.fill("#rollouts", str(rollouts))
    page.locator("#k").fill("4")
    page.select_option("#first", first)
    page.click("#start")


def _debate_tab(page, game, role):
    page.click("#tab-debate")
    page.select_option("#game", game)
    page.select_option("#role", role)


def test_spectator_pixel_debate_reaches_a_verdict(page):
    _start_pixel_game(page, "spectator", 20)
    page.wait_for_selector("#winner", timeout=60_000)
    assert page.locator("#moves li").count() == 4
    assert page.locator("#winner").get_attribute("data-winner") in ("honest", "liar")
    _shot(page, "debate-pixels-spectator")


def test_spectator_cell_debate_reaches_a_verdict(page):
    _debate_tab(page, "cells", "spectator")
    page.select_option("#protocol", "debate4")
    page.select_option("#rule", "last_b")
    page.click("#start")
    page.wait_for_selector("#winner", timeout=60_000)
    assert page.locator("#moves li").count() == 4
    assert page.locator("#moves li.A").count() == 2 and page.locator("#moves li.B").count() == 2
    _shot(page, "debate-cells-spectator")


def test_play_the_honest_side_of_the_pixel_game(page):
    _start_pixel_game(page, "honest", 20, first="liar")
    _wait_for_my_turn(page)
    assert page.locator("#moves li.liar").count() == 1  # the AI liar moved first
    # click the brightest pixel that is not revealed yet
    pixel = page.evaluate(
        "(() => { const taken = new Set(app.game.state.moves); let best = -1;"
        " app.image.forEach((v, i) => { if (!taken.has(i) && (best < 0 || v > app.image[best]))"
        " best = i; }); return best; })()"
    )
    _click_board(page, pixel, 28)
    page.wait_for_function("document.querySelectorAll('#moves li').length >= 3")
    honest = page.locator("#moves li.honest").first.text_content()
    assert honest == f"honest: pixel ({pixel // 28}, {pixel % 28})"
    _shot(page, "debate-pixels-human-honest")


def test_play_the_liar_in_consultancy_and_judge_a_debate(page):
    _random_image(page)
    _debate_tab(page, "cells", "liar")
    page.select_option("#protocol", "consultancy")
    page.click("#start")
    _wait_for_my_turn(page)
    for cell in (7, 10, 25, 28):
        _click_board(page, cell, 6)
    page.click("#reveal")
    page.wait_for_selector("#winner")
    assert page.locator("#moves li.A").text_content() == "A: cells (1, 1) (1, 4) (4, 1) (4, 4)"
    lie = page.evaluate("app.game.claim")
    assert lie != page.evaluate("app.game.truth")
    _shot(page, "debate-cells-human-liar")

    page.select_option("#role", "judge")
    page.select_option("#protocol", "debate2")
    page.click("#start")
    page.wait_for_selector("#judge-buttons button")
    corner = page.evaluate(
        "Array.from(document.getElementById('full').getContext('2d').getImageData(5, 5, 1, 1).data)"
    )
    assert corner == [34, 34, 34, 255]  # the judge does not see the full image
    truth = page.evaluate("app.game.truth")
    page.click(f"#judge-buttons button[data-cls='{truth}']")
    page.wait_for_selector("#judge-result")
    assert page.locator("#judge-result").get_attribute("data-correct") == "true"
    _shot(page, "debate-cells-judge")


def test_about_tab(page):
    page.click("#tab-about")
    assert page.locator("#about").is_visible()
    assert "2018 pixel game" in page.locator("#about").text_content()
    _shot(page, "about")


def test_judge_the_pixel_game_without_being_told_who_is_honest(page):
    _start_pixel_game(page, "judge", 10)
    page.wait_for_selector("#judge-buttons button")
    moves = page.locator("#moves").text_content()
    claims = page.locator("#claims").text_content()
    assert "honest" not in moves and "liar" not in moves
    assert "claims" in moves and "who is honest is hidden" in claims
    assert not page.locator("#truth").is_visible()
    assert page.locator("#judge-buttons button").count() == 2
    _shot(page, "debate-pixels-judge")
    truth = page.evaluate("app.game.truth")
    page.click(f"#judge-buttons button[data-cls='{truth}']")
    page.wait_for_selector("#judge-result")
    assert "honest" in page.locator("#moves").text_content()  # revealed after the verdict
