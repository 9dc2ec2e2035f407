"""The ``debatelab sweep`` command: the frozen-judge capability sweep of REFERENCE B.

Register it on the main group with ``main.add_command(sweep)`` (after the helpers of
:mod:`debatelab.cli` are defined, e.g. at the end of cli.py).
"""

from __future__ import annotations

import json

import click

from .cli import _common, _dataset_option, _friendly_errors, _images_option


@click.command()
@_dataset_option()
@_images_option("0:1000")
@click.option("--workers", type=int, default=1, show_default=True,
              help="Processes solving image chunks in parallel.")  # fmt: skip
@_common
@_friendly_errors
def sweep(variant, images, workers, data_dir, cache_dir, out, seed, quiet):
    """Consultancy and debate against the frozen sparse judge at every capability.

    Solves consultancy (k in 1..58,905), 2-turn and 4-turn debate ((k_A, k_B) grids and
    diagonals) exactly on every chosen test image, from the cached all-mask probabilities
    (computed first if missing), and writes arrays, capability curves, heat maps, an
    example-plays figure, the best-capability table and a markdown report to the run folder.
    An interrupted sweep resumes when run again with the same --out.
    """
    from .experiments.setup import JudgeSetupConfig, dump_store, prepare_judges
    from .experiments.sweep_report import frozen_judge_sweep
    from .report.runs import RunFolder, default_run_dir

    if workers < 1:
        raise ValueError(f"--workers must be >= 1, got {workers}")
    cfg = JudgeSetupConfig(variant=variant, seed=seed)
    run_folder = RunFolder(out or default_run_dir("sweep"), "sweep",
                           {**vars(cfg), "images": images, "workers": workers, "rule": "asym"},
                           seeds={"train": seed})  # fmt: skip
    setup = prepare_judges(cfg, data_dir, cache_dir, progress=not quiet)
    store = dump_store(setup, images, cache_dir, progress=not quiet)
    start, stop = store.attrs["image_start"], store.attrs["image_stop"]
    labels = setup.data.y_test[start:stop].numpy()
    metrics = frozen_judge_sweep(
        run_folder, store, labels, variant, images, seed,
        test_images=setup.data.x_test[start : start + 256].numpy(), workers=workers,
        progress=not quiet,
    )  # fmt: skip
    run_folder.finish(metrics, store=str(store.path))
    shown = {k: round(100 * v, 2) for k, v in metrics.items()
             if k.endswith("_accuracy") and not k.startswith("zero")}  # fmt: skip
    click.echo(json.dumps(shown, indent=2))
    click.echo(str(run_folder.path))
