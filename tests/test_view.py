"""``debatelab view`` in chromium, on run folders that real commands wrote in this module: a tiny
``run`` and ``sweep`` (3x3 cells, judges trained one epoch on 2,000 images), ``bon`` on a pool
file with a known nested best-of-n, two ``judges train`` runs that differ in one setting, and a
``train`` followed while it runs. (The pools' page is checked in test_llm_pools, on the run it
makes with SmolLM2.)"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from conftest import ARTIFACTS, FLAGS  # noqa: F401  (FLAGS: the browser fixture's)
from debatelab.cli import main

REPO = Path(__file__).resolve().parents[1]
SCREENSHOTS = os.environ.get("DEBATELAB_SCREENSHOTS")  # docs/screenshots.py sets it
TINY_JUDGES = ["--grid", "3", "--epochs", "1", "--train-limit", "2000", "--images", "0:20",
               "--workers", "1", "--quiet"]  # fmt: skip
JUDGES_TRAIN = ["judges", "train", "--design", "D1", "--protocol", "debate2", "--epochs", "2",
                "--train-limit", "256", "--budget", "16", "--eval-images", "0:50",
                "--device", "cpu", "--quiet"]  # fmt: skip


def _pool_file(path: Path) -> Path:
    """Eight questions of N = 8 proposals with M = 3 critiques each, random scores."""
    rng = np.random.default_rng(3)
    rows = ["question_id,proposal_id,critique_id,score,correct"]
    for q in range(8):
        for p in range(8):
            right = int(rng.random() < 0.4)
            rows.append(f"q{q},p{p},,{rng.random():.4f},{right}")
            rows += [f"q{q},p{p},c{c},{rng.random():.4f},{right}" for c in range(3)]
    path.write_text("\n".join(rows) + "\n")
    return path


def _invoke(args, env):
    result = CliRunner(env=env).invoke(main, args)
    assert result.exit_code == 0, result.output
    return result


@pytest.fixture(scope="module")
def runs(tmp_path_factory, data_root):
    root = tmp_path_factory.mktemp("view")
    env = {"DEBATELAB_CACHE": str(root / "cache"), "DEBATELAB_DATA": str(data_root)}
    folder = root / "runs"
    _invoke(["run", *TINY_JUDGES, "--out", str(folder / "tiny-run")], env)
    _invoke(["sweep", *TINY_JUDGES, "--out", str(folder / "tiny-sweep")], env)
    pools = _pool_file(root / "pools.csv")
    _invoke(["bon", str(pools), "--n", "1:8", "--m", "1,3", "--replicates", "50", "--quiet",
             "--out", str(folder / "bon")], env)  # fmt: skip
    _invoke([*JUDGES_TRAIN, "--out", str(folder / "judge-a")], env)
    _invoke([*JUDGES_TRAIN, "--rule", "sym", "--out", str(folder / "judge-b")], env)
    for rollouts in (10, 30):  # two pixel debates that differ in the search budget only
        _invoke(["pixels", "--pixels", "4", "--rollouts", str(rollouts), "--images", "0:24",
                 "--judge-epochs", "1", "--examples", "0", "--quiet", "--out",
                 str(folder / f"pixels-{rollouts}")], env)  # fmt: skip
    return {"root": root, "folder": folder, "pools": pools, "env": env}


@pytest.fixture(scope="module")
def viewer(runs):
    """``debatelab view`` of the runs under a real uvicorn server; yields its base URL."""
    import uvicorn

    from debatelab.web.view import view_app

    server = uvicorn.Server(uvicorn.Config(view_app([runs["folder"]]), host="127.0.0.1", port=0,
                                           log_level="warning"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert time.time() < deadline and thread.is_alive(), "the viewer did not start"
        time.sleep(0.05)
    yield f"http://127.0.0.1:{server.servers[0].sockets[0].getsockname()[1]}"
    server.should_exit = True
    thread.join(timeout=10)


class _Page:
    """A page that fails the test on a script error or a request outside ``base``."""

    def __init__(self, browser, base: str):
        self.base = base
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.page = self.context.new_page()
        self.errors, self.elsewhere = [], []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        self.page.on("requestfailed", lambda r: self.errors.append(f"failed: {r.url}"))
        self.page.on("request", lambda r: None if r.url.startswith(base)
                     else self.elsewhere.append(r.url))  # fmt: skip

    def open(self, path: str, ready: str):
        self.page.goto(f"{self.base}/{path}")
        self.page.wait_for_selector(ready, timeout=20_000)
        return self.page

    def close(self):
        self.context.close()
        assert not self.errors, self.errors
        assert not self.elsewhere, f"requests outside the pages: {self.elsewhere}"


def _shot(page, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOTS) / name))


def _run_id(page, label: str) -> str:
    return page.evaluate("(l) => VIEW.index.runs.find((r) => r.label === l).id", label)


def test_the_viewer_in_a_browser(browser, viewer, runs, tmp_path):
    """Every check on one set of runs (one module on one pytest-xdist worker: the runs are made
    once); each check is a function below."""
    index_lists_the_runs_and_a_worm_point_is_the_librarys_best_of_n(browser, viewer, runs)
    a_heat_map_hover_shows_the_arrays_value(browser, viewer, runs)
    a_play_is_replayed_move_by_move(browser, viewer, runs)
    two_runs_compare_with_their_differing_settings_highlighted(browser, viewer)
    runs_differing_in_one_number_draw_their_metrics_against_it(browser, viewer, runs)
    a_running_runs_page_follows_its_epochs(browser, viewer, runs)
    the_exported_folder_shows_the_same_figures_from_a_plain_static_server(browser, runs, tmp_path)
    every_metrics_key_is_documented(runs)


def every_metrics_key_is_documented(runs):
    """Each key these runs wrote (run, sweep, bon, judges train, train) matches a row of
    docs/metrics.md (``<x>`` there stands for any name; ``_se`` keys go with their key)."""
    page = (REPO / "docs" / "metrics.md").read_text()
    patterns = []
    for row in page.splitlines():
        if row.startswith("| `"):
            for code in re.findall(r"`([^`]+)`", row.split("|")[1]):
                literal = re.split(r"<[^>]+>", code)
                patterns.append(re.compile("[^/]+".join(map(re.escape, literal))))
    keys = set()
    for metrics in runs["folder"].glob("*/metrics.json"):
        keys |= {k.removesuffix("_se") for k in json.loads(metrics.read_text())}
    missing = sorted(k for k in keys if not any(p.fullmatch(k) for p in patterns))
    assert not missing, f"metrics keys not in docs/metrics.md: {missing}"


def index_lists_the_runs_and_a_worm_point_is_the_librarys_best_of_n(browser, viewer, runs):
    from debatelab.text import nested_best_of_n, read_pools

    p = _Page(browser, viewer)
    page = p.open("", "#runs tbody tr")
    rows = page.evaluate("() => [...document.querySelectorAll('#runs tbody tr')].map((r) => "
                         "[...r.cells].slice(1, 4).map((c) => c.textContent))")  # fmt: skip
    assert sorted(rows) == sorted([["tiny-run", "run", "finished"],
                                   ["tiny-sweep", "sweep", "finished"], ["bon", "bon", "finished"],
                                   ["judge-a", "judges-train", "finished"],
                                   ["judge-b", "judges-train", "finished"],
                                   ["pixels-10", "pixels", "finished"],
                                   ["pixels-30", "pixels", "finished"]])  # fmt: skip
    headline = page.locator("#runs tr", has_text="tiny-run").locator(".headline").text_content()
    metrics = json.loads((runs["folder"] / "tiny-run" / "metrics.json").read_text())
    assert f"gold_accuracy {metrics['gold_accuracy']:.5g}" in headline
    _shot(page, "view-index.png")
    # the worm of the critique protocol at critic Bo3: slide n to 5
    page = p.open(f"run.html?id={_run_id(page, 'bon')}", "#plot-worms .main-svg")
    n_values = page.evaluate("() => VIEW.runs[Object.keys(VIEW.runs)[0]].figures[0].extra.n")
    assert n_values == list(range(1, 9))
    page.locator(".n-slider").fill(str(n_values.index(5)))
    assert page.locator(".n-label").text_content() == "proposer Bo5"
    plotted = page.evaluate("""() => {
        const gd = document.getElementById('plot-worms');
        const extra = VIEW.runs[Object.keys(VIEW.runs)[0]].figures[0].extra;
        const k = extra.series.findIndex((s) => s.label === 'main critique critic Bo3');
        const t = gd.data[extra.first_marker + k];
        return [t.x[0], t.y[0]];
    }""")
    pools = read_pools(runs["pools"])
    solved = [nested_best_of_n(q.scores["critique"], q.correct, "bo5", "bo3") for q in pools]
    assert plotted[1] == pytest.approx(100 * np.mean([s.accuracy for s in solved]), abs=1e-4)
    assert plotted[0] == pytest.approx(100 * np.mean([s.win_rate for s in solved]), abs=1e-4)
    # a toggle hides the protocol's worms
    page.locator("[data-toggle='protocol:critique']").uncheck()
    hidden = page.evaluate("() => document.getElementById('plot-worms').data"
                           ".filter((t) => t.visible === false).length")  # fmt: skip
    assert hidden == 2 * 2  # two critic settings, each a line and its marker
    _shot(page, "view-worms.png")
    p.close()


def a_heat_map_hover_shows_the_arrays_value(browser, viewer, runs):
    p = _Page(browser, viewer)
    page = p.open("", "#runs tbody tr")
    page = p.open(
        f"run.html?id={_run_id(page, 'tiny-sweep')}", "#plot-heat-debate2-judge .main-svg"
    )
    with np.load(runs["folder"] / "tiny-sweep" / "sweep_arrays.npz") as saved:
        grid, ka, kb = (saved[f"debate2_grid_{x}"] for x in ("judge", "ka", "kb"))
    i, j = grid.shape[0] // 2, grid.shape[1] - 1
    # the mouse over the cell's centre (category axes: a cell per index)
    page.locator("#plot-heat-debate2-judge").scroll_into_view_if_needed()
    x, y = page.evaluate("""([i, j]) => {
        const gd = document.getElementById('plot-heat-debate2-judge');
        const box = gd.querySelector('.nsewdrag').getBoundingClientRect();
        return [box.left + gd._fullLayout.xaxis.l2p(j), box.top + gd._fullLayout.yaxis.l2p(i)];
    }""", [i, j])  # fmt: skip
    page.mouse.move(x, y)
    text = page.locator("#plot-heat-debate2-judge .hovertext").text_content()
    assert f"A's capability {int(ka[i])}" in text and f"B's capability {int(kb[j])}" in text
    assert f"{100 * grid[i, j]:.4f} %" in text
    curves = page.evaluate("() => [...document.querySelectorAll('.figure')].map((f) => f.id)")
    assert {"figure-curve-selection", "figure-curve-judge", "figure-curve-win"} <= set(curves)
    _shot(page, "view-heatmap.png")
    p.close()


def a_play_is_replayed_move_by_move(browser, viewer, runs):
    """The sweep's example plays (plays.json): at each move the image shows exactly the cells
    revealed so far, each with its frame."""
    record = json.loads((runs["folder"] / "tiny-sweep" / "plays.json").read_text())
    play = record["plays"][1]
    cell = len(play["image"]) // record["grid"]
    p = _Page(browser, viewer)
    page = p.open("", "#runs tbody tr")
    page = p.open(f"run.html?id={_run_id(page, 'tiny-sweep')}", "#plot-plays .main-svg")
    page.locator(".play-select").select_option("1")
    for t in range(len(play["moves"]) + 1):
        page.locator(".move-slider").fill(str(t))
        shown = page.evaluate("""() => { const gd = document.getElementById('plot-plays');
            return [gd.layout.shapes.length, gd.data[0].z]; }""")  # fmt: skip
        cells = {c for m in play["moves"][:t] for c in m["cells"]}
        assert shown[0] == len(cells)
        for y, row in enumerate(shown[1]):
            for x, value in enumerate(row):
                revealed = (y // cell) * record["grid"] + x // cell in cells
                assert value == (play["image"][y][x] if revealed else None)
    assert page.locator(".move-label").text_content() == f"{t} of {t} moves"
    p.close()


def _compare(p: _Page, labels, ready: str):
    """Tick the runs ``labels`` in the index, press Compare selected, wait for ``ready``."""
    page = p.open("", "#runs tbody tr")
    for label in labels:
        page.locator("#runs tr", has_text=label).locator("input[type=checkbox]").check()
    page.locator("#compare").click()
    page.wait_for_selector(ready)
    return page


def two_runs_compare_with_their_differing_settings_highlighted(browser, viewer):
    p = _Page(browser, viewer)
    page = _compare(p, ("judge-a", "judge-b"), "#settings tr.differs")
    differs = page.evaluate("() => [...document.querySelectorAll('#settings tr.differs')]"
                            ".map((r) => [r.dataset.key, ...[...r.cells].slice(1).map((c) => "
                            "c.textContent)])")  # fmt: skip
    assert sorted(differs) in ([["rule", "asym", "sym"]], [["rule", "sym", "asym"]])
    same = page.locator("#settings tr[data-key='epochs']")
    assert same.get_attribute("class") == "" and same.locator("td").nth(1).text_content() == "2"
    assert page.locator("#figures .compare-row").count() >= 1
    _shot(page, "view-compare.png")
    p.close()


def runs_differing_in_one_number_draw_their_metrics_against_it(browser, viewer, runs):
    """Two pixel debates at 10 and 30 rollouts compared: one figure of their metrics against
    rollouts, each point the run's metrics.json value (the headline shown, the rest in the
    legend, standard errors as error bars); judge-a and judge-b differ in a word: no such figure."""
    p = _Page(browser, viewer)
    page = _compare(p, ("pixels-30", "pixels-10"), "#plot-setting-curves .main-svg")
    traces = page.evaluate("() => document.getElementById('plot-setting-curves').data.map((t) => "
                           "[t.name, t.x, t.y, t.visible, t.error_y ? t.error_y.array : null])")  # fmt: skip
    by_name = {name: (x, y, visible, se) for name, x, y, visible, se in traces}
    saved = [json.loads((runs["folder"] / f"pixels-{r}" / "metrics.json").read_text())
             for r in (10, 30)]  # fmt: skip
    x, y, visible, se = by_name["honest_win_rate_precommit"]
    assert x == [10, 30] and y == [m["honest_win_rate_precommit"] for m in saved]
    assert se == [m["honest_win_rate_precommit_se"] for m in saved]
    assert set(by_name) == {k for k in saved[0] if isinstance(saved[0][k], int | float)
                            and not k.endswith("_se") and k in saved[1] and k != "rollouts"}  # fmt: skip
    from debatelab.report.catalog import HEADLINES

    shown = {name for name, (_, _, visible, _) in by_name.items() if visible is True}
    assert shown == set(HEADLINES["pixels"])
    page.locator("#plot-setting-curves").scroll_into_view_if_needed()
    _shot(page, "view-across-runs.png")
    page = p.open(f"compare.html?ids={_run_id(page, 'judge-a')},{_run_id(page, 'judge-b')}",
                  "#settings tr.differs")  # fmt: skip
    page.wait_for_selector("#figures .compare-row")
    assert page.locator("#plot-setting-curves").count() == 0
    p.close()


def a_running_runs_page_follows_its_epochs(browser, viewer, runs):
    """`train` of a gold judge (its own seed, so nothing is cached), four epochs of ~2 s each,
    started while its page is open: the page shows more epochs without a reload, then done."""
    out = runs["folder"] / "follow"
    proc = subprocess.Popen([sys.executable, "-m", "debatelab", "train", "--kind", "gold",
                             "--seed", "7", "--epochs", "4", "--train-limit", "6000", "--out",
                             str(out)], env={**os.environ, **runs["env"]},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    p = _Page(browser, viewer)
    try:
        deadline = time.time() + 300  # a loaded machine starts the command slowly
        while not (out / "log.jsonl").exists():
            assert time.time() < deadline and proc.poll() is None, proc.stderr.read()
            time.sleep(0.2)
        page = p.open("", "#runs tbody tr")
        page = p.open(f"run.html?id={_run_id(page, 'follow')}", "#status")
        page.evaluate("() => { window.marker = 'same page'; }")  # gone if the page reloads
        seen = set()
        while proc.poll() is None or len(seen) < 2:
            assert time.time() < deadline, "the page did not follow the run"
            points = page.evaluate("() => { const gd = document.getElementById('plot-training-loss');"
                                   " return gd && gd.data ? gd.data[0].x.length : 0; }")  # fmt: skip
            seen.add(points)
            if proc.poll() is not None and page.locator("#status").text_content() == "finished":
                break
            time.sleep(0.3)
        assert proc.wait() == 0, proc.stderr.read()
        page.wait_for_function("() => document.getElementById('status').textContent === 'finished'",
                               timeout=20_000)  # fmt: skip
        final = page.evaluate(
            "() => document.getElementById('plot-training-loss').data[0].x.length"
        )
        assert final == 4 and len(seen - {0, 4}) >= 1, seen  # an epoch count between, shown live
        assert page.evaluate("() => window.marker") == "same page"
    finally:
        if proc.poll() is None:
            proc.kill()
        p.close()


def the_exported_folder_shows_the_same_figures_from_a_plain_static_server(browser, runs, tmp_path):
    export = tmp_path / "export"
    result = CliRunner().invoke(main, ["view", str(runs["folder"]), "--export", str(export)])
    assert result.exit_code == 0, result.output
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(export))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        p = _Page(browser, base)
        page = p.open("index.html", "#runs tbody tr")
        assert page.locator("#runs tbody tr").count() >= 5
        sweep = _run_id(page, "tiny-sweep")
        page = p.open(f"run.html?id={sweep}", "#plot-heat-debate2-judge .main-svg")
        shown = page.evaluate("() => [...document.querySelectorAll('.figure')].map((f) => f.id)")
        from debatelab.report.interactive import run_figures

        assert shown == [f"figure-{f.id}" for f in run_figures(runs["folder"] / "tiny-sweep")]
        assert page.locator(".images img").count() == len(list((runs["folder"] / "tiny-sweep")
                                                               .glob("*.png")))  # fmt: skip
        page.wait_for_function("() => [...document.querySelectorAll('.images img')]"
                               ".every((i) => i.complete && i.naturalWidth > 0)")  # fmt: skip
        p.close()
        # from disk, without any server: the same pages
        p = _Page(browser, export.as_uri())
        page = p.open("index.html", "#runs tbody tr")
        page = p.open(f"run.html?id={sweep}", "#plot-heat-debate2-judge .main-svg")
        p.close()
    finally:
        server.shutdown()


def test_the_catalog_tells_finished_failed_running_and_stopped_runs(tmp_path):
    from debatelab.report.catalog import RUNNING_SECONDS, find_runs
    from debatelab.report.runs import RunFolder
    from debatelab.runlog import read_log

    pools = _pool_file(tmp_path / "pools.csv")
    folder = tmp_path / "runs"
    for _ in range(2):  # the second sitting resumes the finished run: its time adds up
        _invoke(["bon", str(pools), "--n", "1:2", "--replicates", "20", "--quiet", "--out",
                 str(folder / "good")], {})  # fmt: skip
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,proposal_id,score,correct\nq,p,1.5,1\n")
    result = CliRunner().invoke(main, ["bon", str(bad), "--quiet", "--out", str(folder / "bad")])
    assert result.exit_code == 1
    open_run = RunFolder(folder / "study", "study", {"x": 1})  # a run still going
    inner = RunFolder(folder / "study" / "mnist", "study", {"x": 1})
    inner.finish({"gold_accuracy": 0.99, "gold_accuracy_se": 0.001})
    runs = {r.label: r for r in find_runs([folder])}
    assert {k: r.status for k, r in runs.items()} == {
        "good": "finished",
        "bad": "failed",
        "study": "running",
        "study/mnist": "finished",
    }
    assert runs["study/mnist"].parent == runs["study"].id and runs["good"].parent is None
    outer = [e["event"] for e in read_log(folder / "study" / "log.jsonl")]
    assert outer == ["sitting_started"]  # the inner run's sittings are in its own log only
    sittings = [e for e in read_log(folder / "good" / "log.jsonl")
                if e["event"] == "sitting_finished"]  # fmt: skip
    assert runs["good"].sittings == 2
    assert runs["good"].wall_time_s == pytest.approx(sum(e["wall_time_s"] for e in sittings))
    assert runs["study/mnist"].headline == {"gold_accuracy": 0.99}  # its standard error aside
    # a run whose log has been silent longer than a running command ever is: stopped (killed)
    log = folder / "study" / "log.jsonl"
    old = time.time() - RUNNING_SECONDS - 5
    os.utime(log, (old, old))
    assert {r.label: r.status for r in find_runs([folder])}["study"] == "stopped"
    open_run.fail("the test is over")
    assert {r.label: r.status for r in find_runs([folder])}["study"] == "failed"
    with pytest.raises(FileNotFoundError, match="no such folder"):
        find_runs([tmp_path / "nowhere"])


def test_the_pixel_games_examples_are_written_for_the_replay(tmp_path):
    """`pixels` writes its example games as plays.json: a move at (row, col) is cell
    row * 28 + col of the 28 x 28 image, by the player who made it."""
    from debatelab.experiments.pixels import draw_examples

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(3, 28, 28)).astype(np.float32)
    rows = [{"image": 10 + i, "protocol": "precommit", "honest_label": 3, "liar_label": 5,
             "honest_win": i != 1, "logits": list(rng.normal(size=10)),
             "moves": [(4, 7, "honest"), (20, 1, "liar"), (13, 27, "honest")]}
            for i in range(3)]  # fmt: skip
    draw_examples(rows, images, range(10, 13), tmp_path / "examples.png", 3)
    record = json.loads((tmp_path / "plays.json").read_text())
    assert record["grid"] == 28 and len(record["plays"]) == 3
    play = next(p for p in record["plays"] if p["index"] == 11)
    assert play["moves"] == [{"player": "honest", "cells": [4 * 28 + 7]},
                             {"player": "liar", "cells": [20 * 28 + 1]},
                             {"player": "honest", "cells": [13 * 28 + 27]}]  # fmt: skip
    assert "liar wins" in play["caption"] and (play["label"], play["claim"]) == (3, 5)
    image = np.asarray(play["image"])
    scaled = (images[1] - images[1].min()) / (images[1].max() - images[1].min())
    assert np.abs(image - scaled).max() <= 5e-4  # kept to 3 decimals


def test_catalog_edge_cases_ids_killed_sittings_torn_lines_and_interrupts(tmp_path):
    from debatelab.report.catalog import find_runs
    from debatelab.report.runs import RunFolder
    from debatelab.runlog import read_log
    from debatelab.web.view import Catalog, run_data

    for side in ("a", "b"):  # two viewed folders, each with a run called x
        with RunFolder(tmp_path / side / "x", "demo", {"side": side}) as f:
            f.finish({"v": 1.0})
    runs = find_runs([tmp_path / "a", tmp_path / "b"])
    assert [r.label for r in runs] == ["x", "x"] and runs[0].id != runs[1].id
    # a sitting killed 100 s after it started (no end of sitting, a torn last line), resumed
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / "config.json").write_text(json.dumps({"command": "demo", "k": 1}))
    start = "2026-12-06T10:00:00.000+00:00"
    (killed / "log.jsonl").write_text(
        json.dumps({"time": start, "sitting": 1, "event": "sitting_started", "message": "s",
                    "folder": str(killed)}) + "\n"
        + json.dumps({"time": "2026-12-06T10:01:40.000+00:00", "sitting": 1, "event": "log",
                      "message": "working"}) + "\n" + '{"time": "torn')  # fmt: skip
    with pytest.raises(KeyboardInterrupt), RunFolder(killed, "demo", {"k": 1}):
        raise KeyboardInterrupt
    events = read_log(killed / "log.jsonl")
    assert [e["sitting"] for e in events if e["event"] == "sitting_started"] == [1, 2]
    (run,) = [r for r in find_runs([tmp_path]) if r.label == "killed"]
    assert run.status == "stopped" and run.sittings == 2  # interrupted: it resumes
    assert run.wall_time_s >= 100.0  # the killed sitting's 100 s count
    # raw HTML in a report is text on the page, and a file being written costs its figures only
    (killed / "report.md").write_text(
        "# r\n\n<img src=x onerror=alert(1)>\n\n| a |\n|---|\n| 1 |\n"
    )
    (killed / "table.csv").write_text("arm,protocol\nmain,proposal\n")
    data = run_data(next(r for r in Catalog([tmp_path]).runs() if r.label == "killed"))
    assert "<img" not in data["report_html"] and "&lt;img" in data["report_html"]
    assert "<table>" in data["report_html"]
    assert data["figure_problems"] and data["figure_problems"][0].startswith("table.csv")


def test_the_catalog_reads_again_only_the_files_that_changed(tmp_path, monkeypatch):
    """Each index request summarises every run; files unchanged since the last request are not
    read again (a viewer over thousands of runs once re-read every log per request), and a
    changed one is: the running run's new events show."""
    from debatelab.report import catalog
    from debatelab.report.runs import RunFolder

    for name in ("a", "b", "c"):
        with RunFolder(tmp_path / name, "demo", {"k": name}) as f:
            f.finish({"v": 1.0})
    running = RunFolder(tmp_path / "d", "demo", {"k": "d"})
    reads = []
    real = catalog.read_log
    monkeypatch.setattr(catalog, "read_log", lambda path: reads.append(path) or real(path))
    first = {r.label: r for r in catalog.find_runs([tmp_path])}
    assert first["d"].status == "running" and len(reads) == 4
    reads.clear()
    again = {r.label: r for r in catalog.find_runs([tmp_path])}
    assert reads == [] and {k: r.wall_time_s for k, r in again.items()} == {
        k: r.wall_time_s for k, r in first.items()
    }
    running.finish({"v": 2.0})  # the running run's log and metrics change
    after = {r.label: r for r in catalog.find_runs([tmp_path])}
    assert [Path(p).resolve() for p in reads] == [(tmp_path / "d" / "log.jsonl").resolve()]
    assert after["d"].status == "finished" and after["d"].metrics["v"] == 2.0
