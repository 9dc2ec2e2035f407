"""The demo as a static site: one folder of plain files that any static host serves.

The page, its script and style are the server's own (``static/``); ``local.js`` answers the
page's API calls in the browser, with the judges and the learned debaters as ONNX files run by
onnxruntime-web (fetched from its npm package at build time and copied into the folder, so
nothing is loaded from a CDN when the page runs). What runs client-side: classifying a drawing or
a sample with the gold classifier, and the 2018 pixel game with the learned, greedy and random
agents, for every role. What needs the server (``debatelab serve``): the cell-grid games and the
sparse judge's all-mask average (58,905 forward passes per image), and MCTS agents.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import torch

from ..errors import DebatelabError
from ..games.learned import N_INPUTS, LearnedAgent, policy_inputs
from ..games.pixels import PixelRules, liar_games
from ..judges.export import export_onnx
from ..output_folders import check_output_folder, make_output_folder, move_aside
from ..paths import cache_dir
from ..protocols import describe, protocol, protocol_names, rule_names
from .models import CLASSES, DemoModels

STATIC = Path(__file__).parent / "static"
#: onnxruntime-web's npm release the site is built with, and the files of it the page loads.
ORT_VERSION = "1.31.1"
ORT_FILES = ("ort.wasm.min.js", "ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs")
AGENTS = ("learned", "greedy", "random")


class SiteError(DebatelabError):
    """The site cannot be built (no npm, an npm failure, a folder that holds something else)."""


def fetch_onnxruntime_web(cache=None, version: str = ORT_VERSION, npm: str = "npm") -> Path:
    """The ``dist`` folder of onnxruntime-web ``version``, installed from the npm registry into
    the cache on first use."""
    prefix = cache_dir(cache) / "npm" / f"onnxruntime-web-{version}"
    dist = prefix / "node_modules" / "onnxruntime-web" / "dist"
    if all((dist / name).exists() for name in ORT_FILES):
        return dist
    if shutil.which(npm) is None:
        raise SiteError(
            f"building the static site needs npm (Node.js) to fetch onnxruntime-web {version} "
            "from the npm registry; install Node.js (e.g. apt-get install nodejs npm) and rerun"
        )
    prefix.mkdir(parents=True, exist_ok=True)
    cmd = [npm, "install", "--prefix", str(prefix), "--no-save", "--no-audit", "--no-fund",
           "--loglevel", "error", f"onnxruntime-web@{version}"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or not all((dist / name).exists() for name in ORT_FILES):
        raise SiteError(
            f"`{' '.join(cmd)}` failed ({proc.returncode}): {proc.stderr.strip()[-500:]}; check "
            "that the npm registry can be reached"
        )
    return dist


def _page() -> str:
    """The server's page with relative paths and the in-browser back end loaded first."""
    html = (STATIC / "index.html").read_text()
    server = '<script src="/static/app.js"></script>'
    if server not in html:
        raise SiteError("index.html no longer loads /static/app.js; update web/site.py")
    local = ('<script src="ort/ort.wasm.min.js"></script>\n<script src="local.js"></script>\n'
             '<script src="app.js"></script>')  # fmt: skip
    return html.replace(server, local).replace('href="/static/', 'href="')


def build_site(models: DemoModels, out: str | Path, samples: int = 200, cache=None,
               version: str = ORT_VERSION) -> dict:  # fmt: skip
    """Write the static site of ``models`` into the folder ``out`` (built beside it and moved
    into place; an existing site there is moved aside to ``<out>.replaced-<time>``, nothing is
    deleted; any other non-empty folder, the current or home folder and a git repository are
    refused). ``samples``: the first N MNIST test images, for the page's "random image".
    Returns the site's manifest."""
    out = Path(out)
    check_output_folder(out, lambda p: (p / "site.json").is_file(), "site", "OUT")
    ks = sorted(models.pixel)
    if not ks and models.gold is None:
        raise SiteError(
            "no judges in the cache to put on the site; make them with `debatelab train --kind "
            "gold` and `debatelab train --kind pixel --pixels 6`"
        )
    dist = fetch_onnxruntime_web(cache, version)
    make_output_folder(out.parent, "OUT")
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent))
    try:
        info = _write_site(models, tmp, ks, dist, samples, version)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # our own temporary folder, never the user's
        raise
    if out.exists():
        if any(out.iterdir()):
            info["replaced"] = str(move_aside(out))
        else:
            out.rmdir()
    tmp.rename(out)
    return info


def _write_site(models: DemoModels, tmp: Path, ks: list[int], dist: Path, samples: int,
                version: str) -> dict:  # fmt: skip
    """Everything of the site into the fresh folder ``tmp``; returns the manifest."""
    (tmp / "models").mkdir()
    (tmp / "ort").mkdir()
    for name in ORT_FILES:
        shutil.copy2(dist / name, tmp / "ort" / name)
    for name in ("app.js", "style.css", "local.js"):
        shutil.copy2(STATIC / name, tmp / name)
    (tmp / "index.html").write_text(_page())
    exported = {}
    if models.gold is not None:
        exported["gold"] = export_onnx(models.gold, tmp / "models" / "gold.onnx",
                                       {"judge": "gold classifier"})  # fmt: skip
    for k in ks:
        exported[f"pixel{k}"] = export_onnx(models.pixel[k], tmp / "models" / f"pixel{k}.onnx",
                                            {"judge": f"pixel judge, {k} pixels"})  # fmt: skip
    learned = sorted(k for k in models.debaters if k in models.pixel)
    for k in learned:
        positions = _debater_positions(models, k)
        for side in ("honest", "liar"):
            name = f"debaters{k}-{side}"
            exported[name] = export_onnx(models.debaters[k].net(side),
                                         tmp / "models" / f"{name}.onnx",
                                         {"agent": f"learned {side} debater, {k} pixels"},
                                         (N_INPUTS,), positions)  # fmt: skip
    n = min(samples, len(models.test_images))
    (tmp / "samples.json").write_text(json.dumps({
        "images": np.asarray(models.test_images[:n]).reshape(n, -1).tolist(),
        "labels": [int(v) for v in models.test_labels[:n]],
    }, separators=(",", ":")))  # fmt: skip
    agents = [a for a in AGENTS if a != "learned" or learned]
    # the registry's cells protocols, listed as the server lists them (they play on the server)
    protocols = [describe(protocol(n)) for n in protocol_names("cells")]
    protocols = [p for p in protocols if p["total"] == models.reveal]
    info = {
        "static": True, "onnxruntime_web": version,
        "models": {"gold": models.gold is not None, "sparse": False, "pixel": ks,
                   "debaters": learned},
        "missing": {"sparse": "debatelab serve"}, "classes": CLASSES, "test_images": n,
        "protocols": {p["name"]: p["moves"] for p in protocols},
        "protocol_list": protocols, "rules": list(rule_names()), "pixel_range": [min(ks), max(ks)] if ks else [0, 0],
        "max_rollouts": 0, "agents": agents, "mean": list(models.mean),
        "std": list(models.std), "image_size": models.image_size, "grid": models.grid,
        "reveal": models.reveal,
        "max_abs_diff": {name: meta["max_abs_diff"] for name, meta in exported.items()},
    }  # fmt: skip
    (tmp / "site.json").write_text(json.dumps(info, indent=1))
    return info


def _debater_positions(models: DemoModels, k: int, images: int = 10) -> torch.Tensor:
    """The learned debaters' inputs at every turn of their games on the first test images
    against all nine liars (the ONNX check's inputs: what the page will feed them)."""
    rules = PixelRules(k)
    games, _ = liar_games(models.test_images[:images],
                          np.asarray(models.test_labels[:images]).astype(np.int64), rules)  # fmt: skip
    agent, inputs = LearnedAgent(models.debaters[k]), []
    while not games.done:
        inputs.append(policy_inputs(games))
        games = games.play(agent.moves(games, None, torch.Generator()))
    return torch.cat(inputs)


def site_size(folder: str | Path) -> int:
    """Bytes on disk of every file in ``folder``."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


__all__ = ["ORT_VERSION", "SiteError", "build_site", "fetch_onnxruntime_web", "site_size"]
