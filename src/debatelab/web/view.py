"""``debatelab view``: a local page over run folders, and the same pages as a static folder.

The pages (``static/view/``) are plain HTML and one script; what they show comes as small
script files that set ``window.VIEW`` (``data/index.js``: the catalog; ``data/run/<id>.js``:
one run with its figures), so the very same pages work from this FastAPI server, which writes
those files afresh at each request (a running run's page polls its file and redraws), and from
a folder on disk (:func:`export_view`), opened as ``file://`` or served by any static server:
script tags, unlike ``fetch``, load from ``file://``. Plotly's bundled JavaScript draws the
figures; nothing is loaded from outside the pages' folder.

The server only reads: run folders are listed by :mod:`debatelab.report.catalog`, and the only
files it serves from them are the images a run page lists.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from fastapi import FastAPI, HTTPException
from fastapi.responses import FileResponse, HTMLResponse, Response

from ..atomic import write_atomic
from ..errors import DebatelabError
from ..output_folders import check_output_folder, make_output_folder
from ..report.catalog import RunSummary, find_runs
from ..report.interactive import plotly_js, run_figures
from ..runlog import LOG_NAME, read_log

PAGES = ("index.html", "run.html", "compare.html")
ASSETS = ("view.js", "view.css")
#: How often a page polls a running run, in milliseconds.
FOLLOW_MS = 2000
#: Log events a run page shows, the latest last.
LOG_TAIL = 40
#: Images a run page shows (the figures the run wrote as PNG).
IMAGE_SUFFIXES = (".png", ".svg")


class ViewError(DebatelabError, ValueError):
    """Folders to view that do not exist."""


def _static(name: str) -> bytes:
    return (resources.files("debatelab.web") / "static" / "view" / name).read_bytes()


def _clean(value: Any) -> Any:
    """JSON without NaN or infinity (a metric not yet defined shows as empty)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _script(statement: str, data: Any) -> str:
    payload = json.dumps(_clean(data), separators=(",", ":"), allow_nan=False)
    return ("window.VIEW = window.VIEW || {runs: {}};\n"
            f"{statement} = {payload};\n")  # fmt: skip


def _report_html(path: Path, run_id: str, images: list[str]) -> str | None:
    """The run's report.md as HTML, its images pointing where the pages serve them."""
    if not path.is_file():
        return None
    from markdown_it import MarkdownIt

    # CommonMark with tables and without raw HTML: a report may quote model output, so its
    # text is escaped, never run as markup or script on the page
    html = MarkdownIt("commonmark", {"html": False}).enable("table").render(
        path.read_text(encoding="utf-8", errors="replace"))  # fmt: skip

    def image(match: re.Match) -> str:
        name = match.group(1)
        return f'src="files/{quote(run_id)}/{quote(name)}"' if name in images else match.group(0)

    return re.sub(r'src="([^"/]+)"', image, html)


def _stages(events: list[dict]) -> list[dict]:
    """The latest state of each stage of the last sitting: done, total, ETA, finished."""
    last_start = max((i for i, e in enumerate(events) if e.get("event") == "sitting_started"),
                     default=0)  # fmt: skip
    stages: dict[str, dict] = {}
    for e in events[last_start:]:
        if e.get("event") in ("stage_started", "stage_progress", "stage_finished"):
            stages[e["stage"]] = {"stage": e["stage"], "done": e.get("done"),
                                  "total": e.get("total"), "eta_s": e.get("eta_s"),
                                  "finished": e["event"] == "stage_finished"}  # fmt: skip
    return list(stages.values())


def run_data(run: RunSummary) -> dict:
    """Everything a run page shows: the summary, figures, images, report and the log's tail."""
    events = read_log(run.path / LOG_NAME)
    images = sorted(p.name for p in run.path.iterdir()
                    if p.suffix in IMAGE_SUFFIXES and p.is_file())  # fmt: skip
    problems: list[str] = []
    figures = [f.as_json() for f in run_figures(run.path, run.metrics, problems)]
    last = [e for e in events if e.get("event") in ("sitting_started", "sitting_finished",
                                                     "error")]  # fmt: skip
    return {
        **run.as_json(),
        "open": bool(last) and last[-1]["event"] == "sitting_started",
        "figures": figures,
        "figure_problems": problems,
        "images": images,
        "report_html": _report_html(run.path / "report.md", run.id, images),
        "stages": _stages(events),
        "log": [
            {"time": e.get("time"), "event": e.get("event"), "message": e.get("message")}
            for e in events[-LOG_TAIL:]
        ],  # fmt: skip
    }


class Catalog:
    """The runs under the viewed folders, looked up afresh at each request (a new run appears,
    a running one moves on)."""

    def __init__(self, folders: list[Path]):
        self.folders = [Path(f) for f in folders]
        for f in self.folders:
            if not f.is_dir():
                raise ViewError(f"{f}: no such folder; name folders that hold run folders "
                                "(debatelab writes them under ./runs by default)")  # fmt: skip

    def runs(self) -> list[RunSummary]:
        return find_runs(self.folders)

    def index(self, live: bool, runs: list[RunSummary] | None = None) -> dict:
        runs = self.runs() if runs is None else runs
        return {"runs": [r.as_json() for r in runs], "folders": [str(f) for f in self.folders],
                "live": live, "follow_ms": FOLLOW_MS}  # fmt: skip

    def run(self, run_id: str) -> RunSummary:
        for r in self.runs():
            if r.id == run_id:
                return r
        raise KeyError(run_id)


def view_app(folders: list[Path]) -> FastAPI:
    """The viewer's server over ``folders`` (read only)."""
    catalog = Catalog(folders)
    app = FastAPI(title="debatelab view", docs_url=None, redoc_url=None, openapi_url=None)

    def js(text: str) -> Response:
        return Response(text, media_type="text/javascript",
                        headers={"Cache-Control": "no-store"})  # fmt: skip

    @app.get("/", response_class=HTMLResponse)
    @app.get("/index.html", response_class=HTMLResponse)
    def index_page():
        return HTMLResponse(_static("index.html"))

    @app.get("/run.html", response_class=HTMLResponse)
    def run_page():
        return HTMLResponse(_static("run.html"))

    @app.get("/compare.html", response_class=HTMLResponse)
    def compare_page():
        return HTMLResponse(_static("compare.html"))

    @app.get("/static/plotly.min.js")
    def plotly_bundle():
        return FileResponse(plotly_js(), media_type="text/javascript")

    @app.get("/static/{name}")
    def asset(name: str):
        if name not in ASSETS:
            raise HTTPException(404, f"no asset {name}")
        media = "text/javascript" if name.endswith(".js") else "text/css"
        return Response(_static(name), media_type=media)

    @app.get("/data/index.js")
    def index_data():
        return js(_script("VIEW.index", catalog.index(live=True)))

    @app.get("/data/run/{run_id}.js")
    def one_run(run_id: str):
        try:
            run = catalog.run(run_id)
        except KeyError:
            raise HTTPException(404, f"no run {run_id} under the viewed folders") from None
        return js(_script(f"VIEW.runs[{json.dumps(run_id)}]", run_data(run)))

    @app.get("/files/{run_id}/{name}")
    def run_file(run_id: str, name: str):
        try:
            run = catalog.run(run_id)
        except KeyError:
            raise HTTPException(404, f"no run {run_id}") from None
        path = run.path / name
        if Path(name).name != name or path.suffix not in IMAGE_SUFFIXES or not path.is_file():
            raise HTTPException(404, f"{name} is not an image of run {run_id}")
        return FileResponse(path, headers={"Cache-Control": "no-store"})

    return app


def _write(path: Path, text: str) -> None:
    write_atomic(path, lambda p: p.write_text(text, encoding="utf-8"))


def export_view(folders: list[Path], out: Path) -> tuple[Path, int]:
    """The viewer's pages over ``folders`` as a static folder ``out``: index, run and compare
    pages, one data script per run, the runs' images and Plotly's script. It opens from disk
    (``out/index.html``) or from any static server, and loads nothing from outside ``out``.
    Returns the folder and how many runs it holds."""
    catalog = Catalog(folders)
    out = Path(out)
    check_output_folder(out, lambda p: (Path(p) / "data" / "index.js").is_file(),
                        what="viewer export", option="--export")  # fmt: skip
    make_output_folder(out)
    for sub in ("static", "data/run", "files"):
        (out / sub).mkdir(parents=True, exist_ok=True)
    for page in PAGES:
        (out / page).write_bytes(_static(page))
    for name in ASSETS:
        (out / "static" / name).write_bytes(_static(name))
    shutil.copyfile(plotly_js(), out / "static" / "plotly.min.js")
    runs = catalog.runs()  # one scan: the index and the pages show the same runs
    _write(out / "data" / "index.js", _script("VIEW.index", catalog.index(False, runs)))
    for run in runs:
        data = run_data(run)
        _write(
            out / "data" / "run" / f"{run.id}.js", _script(f"VIEW.runs[{json.dumps(run.id)}]", data)
        )
        if data["images"]:
            (out / "files" / run.id).mkdir(parents=True, exist_ok=True)
            for name in data["images"]:
                shutil.copyfile(run.path / name, out / "files" / run.id / name)
    return out, len(runs)
