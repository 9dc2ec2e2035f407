"""The static site (`debatelab export-site`) in Debian's chromium, served by a plain static file
server (Python's http.server) with no debatelab process behind it: the page's calls are answered
in the browser by onnxruntime-web. Every result is checked against the library on the same
input. Screenshots land in test-artifacts/."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import numpy as np
import pytest
import torch

from conftest import ARTIFACTS, demo_page, draw_one


@pytest.fixture(scope="module")
def site(demo_models, tmp_path_factory):
    """The site of the test models (gold, pixel judge K = 4, learned debaters K = 4), served
    by `python -m http.server` on a free port; yields its URL."""
    import os
    import shutil

    from debatelab.web.site import build_site

    if shutil.which("npm") is None:  # the build installs onnxruntime-web from the npm registry
        if os.environ.get("DEBATELAB_REQUIRE_BROWSER") == "1":
            pytest.fail("no npm: the static site's build needs it (apt-get install npm)")
        pytest.skip("npm is not installed; the static site cannot be built")
    folder = tmp_path_factory.mktemp("site") / "site"
    info = build_site(demo_models, folder, samples=50)
    assert info["models"]["debaters"] == [4] and info["agents"] == ["learned", "greedy", "random"]
    assert all(d < 1e-4 for d in info["max_abs_diff"].values()), info["max_abs_diff"]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind",
                             "127.0.0.1", "-d", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 30
    while True:
        try:
            httpx.get(url + "/site.json").raise_for_status()
            break
        except httpx.TransportError:
            assert proc.poll() is None and time.time() < deadline, "http.server did not start"
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def page(browser, site):
    with demo_page(browser, site) as pg:  # also: nothing fetched from outside the site (no CDN)
        yield pg


def _shot(page, name):
    page.screenshot(path=str(ARTIFACTS / f"site-{name}.png"), full_page=True)


def test_draw_and_classify_in_the_browser(page, demo_models):
    from debatelab.data.digits import center_digit
    from debatelab.judges import predict_proba

    draw_one(page)
    page.locator("#gold-pred[data-cls]").wait_for(timeout=60_000)
    assert page.locator("#gold-pred").get_attribute("data-cls") == "1"
    assert "debatelab serve" in page.locator("#sparse-bars").text_content()
    _shot(page, "classify-drawn-1")
    # the page's centring and gold probabilities are the library's on the same canvas
    canvas = np.array(page.evaluate("canvasValues()"), dtype=np.float32).reshape(28, 28)
    centred = center_digit(canvas)
    np.testing.assert_allclose(page.evaluate("app.image"), centred.ravel(), atol=2e-4)
    want = predict_proba(demo_models.gold, demo_models.prepare(centred[None]))[0]
    np.testing.assert_allclose(page.evaluate("app.gold"), want.numpy(), atol=1e-4)


def _pixel_game(page, role, agent, first="liar"):
    page.click("#random")
    page.wait_for_selector("#gold-pred[data-cls]")
    page.click("#tab-debate")
    assert page.locator("#game option").count() == 1  # the cell games need the server
    page.select_option("#role", role)
    page.select_option("#agent", agent)
    page.select_option("#first", first)
    page.click("#start")


def _python_verdict(page, demo_models):
    from debatelab.judges.pixel import PixelJudge

    game = page.evaluate("({image: app.game.image, honest: app.game.honest, liar: app.game.liar,"
                         " moves: app.game.state.moves, verdict: app.game.state.verdict})")  # fmt: skip
    values = torch.tensor(game["image"], dtype=torch.float32)[None]
    mask = torch.zeros(1, 784, dtype=torch.bool)
    mask[0, game["moves"]] = True
    logits = PixelJudge(demo_models.pixel[4]).logits(values, mask)[0]
    np.testing.assert_allclose(game["verdict"]["logits"], logits, atol=1e-4)
    assert game["verdict"]["honest_wins"] == bool(logits[game["honest"]] > logits[game["liar"]])
    return game


def test_spectator_debate_between_the_learned_agents(page, demo_models):
    """Both learned debaters play in the page (ONNX); every move is the PyTorch debater's on
    the same position, and the verdict is the library judge's."""
    from debatelab.games.learned import LearnedAgent
    from debatelab.games.pixels import PixelGames, PixelRules

    _pixel_game(page, "spectator", "learned")
    page.wait_for_selector("#winner", timeout=60_000)
    assert page.locator("#moves li").count() == 4
    game = _python_verdict(page, demo_models)
    games = PixelGames.new(np.array(game["image"], dtype=np.float32)[None], [game["honest"]],
                           [game["liar"]], PixelRules(4))  # fmt: skip
    agent = LearnedAgent(demo_models.debaters[4])
    while not games.done:
        games = games.play(agent.moves(games, None, torch.Generator()))
    assert games.revealed_pixels()[0].tolist() == game["moves"]
    _shot(page, "spectator-learned")


def test_a_person_plays_the_honest_side_against_the_greedy_liar(page, demo_models):
    _pixel_game(page, "honest", "greedy")
    clicked = []
    for _ in range(2):
        page.wait_for_function(
            "document.getElementById('status').textContent.startsWith('Your move')"
        )
        pixel = page.evaluate(
            "(() => { const taken = new Set(app.game.state.moves); let best = -1;"
            " app.image.forEach((v, i) => { if (!taken.has(i) && (best < 0 || v > app.image[best]))"
            " best = i; }); return best; })()"
        )
        box = page.locator("#full").bounding_box()
        u = box["width"] / 28
        page.mouse.click(box["x"] + (pixel % 28 + 0.5) * u, box["y"] + (pixel // 28 + 0.5) * u)
        page.wait_for_function(f"app.game.state.moves.includes({pixel})")
        clicked.append(pixel)
    page.wait_for_selector("#winner", timeout=60_000)
    assert page.locator("#moves li.honest").count() == 2
    game = _python_verdict(page, demo_models)
    assert game["moves"][1::2] == clicked  # liar first: the person's pixels are turns 2 and 4
    _shot(page, "human-honest")


def test_a_person_judges_a_debate_of_random_agents(page):
    _pixel_game(page, "judge", "random")
    page.wait_for_selector("#judge-buttons button", timeout=60_000)
    assert "who is honest is hidden" in page.locator("#claims").text_content()
    assert page.locator("#judge-buttons button").count() == 2
    _shot(page, "judge")
    truth = page.evaluate("app.game.truth")
    page.click(f"#judge-buttons button[data-cls='{truth}']")
    page.wait_for_selector("#judge-result")
    assert page.locator("#judge-result").get_attribute("data-correct") == "true"


def test_bad_positions_get_the_servers_errors(page):
    """The in-browser API refuses what the server refuses, with the same messages."""
    call = ("body => debatelabLocal.api('/api/pixels', {first: 'liar', moves: [], agent: 'random',"
            " seed: 0, play: true, pixels: 4, ...body}).then(() => 'no error', e => e.message)")  # fmt: skip
    two_dots = [1.0, 1.0] + [0.0] * 782
    ink = [1.0] * 784
    assert "only 2 nonzero pixels" in page.evaluate(call, {"image": two_dots, "honest": 1,
                                                           "liar": 2})  # fmt: skip
    assert "must differ" in page.evaluate(call, {"image": ink, "honest": 3, "liar": 3})
    five = [1.0] * 5 + [0.0] * 779
    assert "not a nonzero pixel" in page.evaluate(call, {"image": five, "honest": 1, "liar": 2,
                                                         "moves": [5]})  # fmt: skip
