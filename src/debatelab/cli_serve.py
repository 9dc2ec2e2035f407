"""``debatelab serve`` (the browser demo), ``debatelab export-site`` (the same demo as static
files) and ``debatelab export-onnx``."""

from __future__ import annotations

from pathlib import Path

import click

from .cli_common import friendly_errors, path_options, server_options


def _judge_seed_option(func):
    return click.option("--seed", type=int, default=0, show_default=True,
                        help="Which cached judges to use (their training seed).")(func)  # fmt: skip


@click.command()
@server_options(8000, "the demo")
@_judge_seed_option
@path_options
@friendly_errors
def serve(host, port, seed, data_dir, cache_dir):
    """Start the interactive demo: draw a digit, then watch, play or judge a debate about it.

    Serves a page with three tabs (Classify, Debate, About) at http://HOST:PORT/. It uses the
    judges already in the cache and trains nothing: `debatelab run` (or `debatelab train`) makes
    the MNIST gold classifier and sparse judge, `debatelab train --kind pixel --pixels K` the
    pixel judge of the K-pixel game, `debatelab agents train --pixels K` its learned debaters.
    The page names the command for any that is missing.
    """  # fmt: skip
    import uvicorn

    from .web.app import serve_app
    from .web.models import load_demo_models

    models = load_demo_models(cache_dir, data_dir, seed)
    have = ["gold"] * (models.gold is not None) + ["sparse"] * (models.sparse is not None)
    have += [f"pixel K={k}" for k in sorted(models.pixel)]
    have += [f"learned debaters K={k}" for k in sorted(models.debaters)]
    click.echo(f"models loaded: {', '.join(have) or 'none'}")
    for name, command in models.missing.items():
        if not name.startswith(("pixel", "debaters")) or name[-1] in "46":
            click.echo(f"missing {name}: make it with `{command}`")
    click.echo(f"debatelab demo on http://{host}:{port}/ (Ctrl+C stops it)")
    uvicorn.run(serve_app(models), host=host, port=port, log_level="warning")


@click.command("export-onnx")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("onnx"),
    show_default=True,
    help="Folder for the .onnx files and their .json descriptions.",
)
@click.option("--checkpoint", "checkpoints", multiple=True,
              type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="Export this judge checkpoint (.pt from the cache; repeatable) instead of the "
                   "cached MNIST judges.")  # fmt: skip
@_judge_seed_option
@path_options
@friendly_errors
def export_onnx(out, checkpoints, seed, data_dir, cache_dir):
    """Write judges as ONNX files: the cached MNIST judges (gold, sparse, each pixel judge) or
    the checkpoints given with --checkpoint (judges, or learned debaters: one file per side).

    Each FILE.onnx takes `x` (float32, batch first) and returns `logits`; FILE.onnx.json says how
    to build `x`. With onnxruntime installed every file is checked against PyTorch.
    """
    from .judges.export import export_onnx as export
    from .judges.export import require_onnx

    require_onnx()  # before any judge is loaded or trained
    jobs = _checkpoint_jobs(checkpoints) if checkpoints else _cached_jobs(cache_dir, data_dir, seed)
    for name, model, meta, *shape in jobs:
        path = out / f"{name}.onnx"
        result = export(model, path, meta, *shape)
        diff = result["max_abs_diff"]
        check = "not checked (no onnxruntime)" if diff is None else f"max |diff| {diff:.2e}"
        click.echo(f"{path}  ({check})")


PIXEL_INPUT = ("channel 0: mask of revealed pixels (1/0); channel 1: pixel/255 where revealed, "
               "else 0; 28x28")  # fmt: skip


def _checkpoint_jobs(paths):
    """(name, model, meta) for each checkpoint file, cell-grid or pixel judge."""
    from dataclasses import asdict

    from .errors import CacheError
    from .judges import load_judge

    jobs = []
    for path in paths:
        try:
            judge = load_judge(path)
        except CacheError as exc:
            debaters = _debater_jobs(path)
            if debaters is None:
                raise click.ClickException(
                    f"{path} is not a debatelab judge checkpoint (cell-grid or pixel judge) "
                    "nor learned debaters"
                ) from exc
            jobs += debaters
            continue
        if judge.family == "pixel":
            meta = {"judge": f"pixel judge, {judge.config.pixels} random nonzero pixels",
                    "preprocess": PIXEL_INPUT}  # fmt: skip
        else:
            meta = {
                "judge": f"{judge.config.kind} judge of {judge.config.variant}",
                "preprocess": f"the {judge.config.variant} variant's (debatelab.data)",
            }
        jobs.append((path.stem, judge.model, {**meta, "train_config": asdict(judge.config),
                                              "checkpoint": str(path)}))  # fmt: skip
    return jobs


DEBATER_INPUT = ("1588 floats: pixel/255 (784, row-major), mask of revealed pixels (784, 1/0), "
                 "one-hot honest claim (10), one-hot liar claim (10; zeros without precommit); "
                 "output: one logit per pixel (784); the mover reveals the highest-logit pixel "
                 "among the nonzero, unrevealed ones")  # fmt: skip


def _debater_jobs(path):
    """(name, model, meta, input shape) for each network of a learned-debaters checkpoint, or
    None when the file holds something else."""
    from dataclasses import asdict

    from .errors import CacheError
    from .games.learned import N_INPUTS
    from .training.debaters import load_debaters

    try:
        trained = load_debaters(path)
    except CacheError:
        return None
    meta = {"preprocess": DEBATER_INPUT, "train_config": asdict(trained.config),
            "checkpoint": str(path)}  # fmt: skip
    return [(f"{path.stem}-{side}", trained.model.net(side),
             {**meta, "agent": f"learned {side} debater, {trained.config.pixels} pixels"},
             (N_INPUTS,)) for side in ("honest", "liar")]  # fmt: skip


def _cached_jobs(cache_dir, data_dir, seed):
    from .web.models import load_demo_models

    models = load_demo_models(cache_dir, data_dir, seed)
    cells = {"preprocess": "28x28 uint8 -> /255 -> antialiased bilinear resize to 18x18 -> "
                           "(x - mean) / std; hidden cells 0 after that", "mean": models.mean,
             "std": models.std, "grid": models.grid, "seed": seed}  # fmt: skip
    jobs = []
    if models.gold is not None:
        jobs.append((f"mnist-gold-s{seed}", models.gold, {**cells, "judge": "gold classifier"}))
    if models.sparse is not None:
        jobs.append(
            (
                f"mnist-sparse-s{seed}",
                models.sparse,
                {**cells, "judge": f"sparse judge, trained on {models.reveal} random cells"},
            )
        )
    for k, model in sorted(models.pixel.items()):
        jobs.append((f"mnist-pixel{k}-s{seed}", model, {
            "judge": f"pixel judge, {k} random nonzero pixels", "preprocess": PIXEL_INPUT,
            "seed": seed}))  # fmt: skip
    if not jobs:
        raise click.ClickException(
            "no judges in the cache; make them with `debatelab run` (gold and sparse) or "
            "`debatelab train --kind pixel --pixels 6`"
        )
    return jobs


@click.command("export-site")
@click.argument("out", type=click.Path(file_okay=False, path_type=Path))
@click.option("--samples", type=click.IntRange(1, 10000), default=200, show_default=True,
              help="MNIST test images the page offers as random samples (the first N).")  # fmt: skip
@_judge_seed_option
@path_options
@friendly_errors
def export_site(out, samples, seed, data_dir, cache_dir):
    """Write the demo into the folder OUT as static files that any web server can serve.

    The page is the server's page; its calls are answered in the browser by onnxruntime-web
    (copied into OUT from its npm package, so nothing is fetched from a CDN at run time) running
    the cached judges and learned debaters as ONNX files: classify a drawing or a sample, and
    the 2018 pixel game with the learned, greedy and random agents in every role. The cell-grid
    games and MCTS need `debatelab serve`. Building needs npm the first time (the runtime is
    cached afterwards). Try it: `python -m http.server -d OUT 8001`.
    """  # fmt: skip
    from .web.models import load_demo_models
    from .web.site import build_site, site_size

    models = load_demo_models(cache_dir, data_dir, seed)
    info = build_site(models, out, samples, cache_dir)
    if "replaced" in info:
        click.echo(f"the site that was in {out} is now in {info['replaced']}")
    have = ["gold"] * info["models"]["gold"] + [f"pixel K={k}" for k in info["models"]["pixel"]]
    have += [f"learned debaters K={k}" for k in info["models"]["debaters"]]
    click.echo(f"models on the site: {', '.join(have)}; agents: {', '.join(info['agents'])}")
    for name in ("pixel6", "debaters6"):
        if name in models.missing:
            click.echo(f"missing {name}: make it with `{models.missing[name]}`")
    click.echo(f"{out}  ({site_size(out) / 2**20:.1f} MB)")
