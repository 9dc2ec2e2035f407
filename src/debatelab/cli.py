"""The ``debatelab`` command line."""

from __future__ import annotations

from pathlib import Path

import click

from .cli_common import friendly_errors as _friendly_errors
from .cli_common import path_options as _path_options


def _common(func):
    """Options every experiment command takes."""
    options = [
        click.option("--out", type=click.Path(file_okay=False, path_type=Path),
                     help="Run folder (default: runs/<timestamp>-<command>)."),
        click.option("--seed", type=int, default=0, show_default=True,
                     help="Seed of the judges' training."),
        click.option("--quiet", is_flag=True, help="No progress bars."),
    ]  # fmt: skip
    for option in reversed(options):
        func = option(func)
    return _path_options(func)


def _dataset_option(default="mnist"):
    from .data.preprocess import VARIANTS

    return click.option(
        "--dataset", "variant", type=click.Choice(list(VARIANTS)), default=default,
        show_default=True, help="Dataset variant.",
    )  # fmt: skip


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="debatelab")
def main():
    """debatelab: debate and consultancy between strong agents in front of a weak judge.

    Start with `debatelab run`: it trains (or loads from the cache) the MNIST judges and prints
    the reference table. Every command writes a run folder with its config, manifest and metrics.
    """


@main.command()
@_dataset_option()
@click.option("--kind", type=click.Choice(["gold", "sparse", "both", "pixel"]), default="both",
              show_default=True,
              help="Which judge to train: the cell-grid judges (gold, sparse, both) or the "
                   "MNIST pixel judge of the 2018 debate (pixel, with --pixels).")  # fmt: skip
@click.option(
    "--pixels",
    type=click.IntRange(1, 784),
    default=6,
    show_default=True,
    help="Nonzero pixels the pixel judge sees (--kind pixel only).",
)
@click.option("--epochs", type=int, default=10, show_default=True)
@click.option("--retrain", is_flag=True, help="Ignore the cache and train again.")
@_common
@_friendly_errors
def train(variant, kind, pixels, epochs, retrain, data_dir, cache_dir, out, seed, quiet):
    """Train the gold classifier and/or the sparse judge of a dataset variant, or a pixel judge.

    Trained judges are cached (keyed by variant, settings and seed); a second call loads them.
    Accuracy: gold on full test images, sparse on random masks (Monte Carlo, 10 per image), the
    pixel judge on random nonzero pixels (5 draws per image).
    """
    from .data import load_variant
    from .experiments.setup import JudgeSetupConfig, monte_carlo_accuracy
    from .judges import get_judge
    from .report.runs import RunFolder, default_run_dir

    if kind == "pixel":
        return _train_pixel(pixels, epochs, retrain, data_dir, cache_dir, out, seed, quiet)
    cfg = JudgeSetupConfig(variant=variant, seed=seed, epochs=epochs)
    run = RunFolder(out or default_run_dir("train"), "train", cfg, seeds={"train": seed})
    data = load_variant(variant, data_dir)
    metrics = {}
    for k in ["gold", "sparse"] if kind == "both" else [kind]:
        judge = get_judge(cfg.judge_config(k), data, cache_dir, not quiet, retrain)
        metrics[f"{k}_accuracy"] = monte_carlo_accuracy(judge, data, cfg)
        metrics[f"{k}_final_train_loss"] = judge.history[-1]["loss"]
        click.echo(f"{k} judge: {100 * metrics[f'{k}_accuracy']:.2f} % test accuracy, "
                   f"{'cached' if judge.cached else 'trained'}: {judge.path}")  # fmt: skip
    run.finish(metrics, checkpoints={k: str(judge.path)})
    click.echo(str(run.path))


def _train_pixel(pixels, epochs, retrain, data_dir, cache_dir, out, seed, quiet):
    """``train --kind pixel``: the MNIST pixel judge of the 2018 debate."""
    import torch

    from .data import load_raw
    from .judges.pixel import PixelJudge, PixelTrainConfig, get_pixel_judge, random_pixel_accuracy
    from .report.runs import RunFolder, default_run_dir

    cfg = PixelTrainConfig(pixels=pixels, seed=seed, epochs=epochs)
    run = RunFolder(out or default_run_dir("train"), "train", cfg, seeds={"train": seed})
    trained = get_pixel_judge(cfg, data_dir, cache_dir, not quiet, retrain)
    images, labels = load_raw("mnist", "test", data_dir)
    gen = torch.Generator().manual_seed(seed)  # as `debatelab pixels` measures it
    acc = random_pixel_accuracy(PixelJudge(trained.model), images, labels, pixels, gen, draws=5)
    click.echo(f"pixel judge K={pixels}: {100 * acc:.2f} % on random nonzero pixels, "
               f"{'cached' if trained.cached else 'trained'}: {trained.path}")  # fmt: skip
    run.finish({"judge_accuracy": acc}, checkpoints={"pixel": str(trained.path)})
    click.echo(str(run.path))


def _images_option(default: str):
    return click.option(
        "--images", default=default, show_default=True,
        help="Test images: 'all', 'N' (the first N) or 'start:stop'.",
    )  # fmt: skip


@main.command()
@_dataset_option()
@_images_option("0:2000")
@_common
@_friendly_errors
def run(variant, images, data_dir, cache_dir, out, seed, quiet):
    """The main job: judges of a dataset variant and the reference table.

    Trains (or loads) the gold classifier and the sparse judge, computes the sparse judge's
    probabilities on every 4-cell mask of the chosen test images (cached, resumable), solves
    consultancy and 2- and 4-turn debate under exact play against that frozen judge, and prints
    the reference table next to the published numbers. `debatelab sweep` adds the capability
    curves, heat maps and example plays.
    """
    from .data import load_variant
    from .experiments.setup import JudgeSetupConfig, dump_store, exact_metrics, prepare_judges
    from .experiments.sweep import exact_play_metrics
    from .reference import SETUP_COLUMNS
    from .report.runs import RunFolder, default_run_dir
    from .report.tables import setup_table
    from .store import parse_image_range

    cfg = JudgeSetupConfig(variant=variant, seed=seed)
    run_folder = RunFolder(out or default_run_dir("run"), "run", {**vars(cfg), "images": images},
                           seeds={"train": seed})  # fmt: skip
    data = load_variant(variant, data_dir)
    parse_image_range(images, len(data.x_test))  # a bad range fails before any training
    setup = prepare_judges(cfg, data_dir, cache_dir, progress=not quiet, data=data)
    store = dump_store(setup, images, cache_dir, progress=not quiet)
    metrics = exact_metrics(setup, store)
    start, stop = store.attrs["image_start"], store.attrs["image_stop"]
    metrics.update(exact_play_metrics(store, setup.data.y_test[start:stop].numpy(),
                                      progress=not quiet))  # fmt: skip
    table = setup_table(variant, metrics, list(SETUP_COLUMNS))
    report = (f"# debatelab run: {variant}\n\n{metrics['n_images']} test images "
              f"(range {images}); judges seed {seed}.\n\n{table}\n")  # fmt: skip
    run_folder.file("report.md").write_text(report)
    run_folder.finish(metrics, store=str(store.path))
    click.echo(table)
    click.echo(str(run_folder.path))


@main.command()
@_dataset_option()
@_images_option("all")
@_common
@_friendly_errors
def dump(variant, images, data_dir, cache_dir, out, seed, quiet):
    """Store the sparse judge's probabilities on every 4-cell mask of test images.

    The store is chunked and resumable: an interrupted dump continues with the missing chunks,
    and a finished one is reused as it is.
    """
    from .data import load_variant
    from .experiments.setup import JudgeSetupConfig, dump_store, prepare_judges
    from .report.runs import RunFolder, default_run_dir
    from .store import parse_image_range

    cfg = JudgeSetupConfig(variant=variant, seed=seed)
    run_folder = RunFolder(out or default_run_dir("dump"), "dump", {**vars(cfg), "images": images},
                           seeds={"train": seed})  # fmt: skip
    data = load_variant(variant, data_dir)
    parse_image_range(images, len(data.x_test))  # a bad range fails before any training
    setup = prepare_judges(cfg, data_dir, cache_dir, progress=not quiet, data=data)
    store = dump_store(setup, images, cache_dir, progress=not quiet)
    run_folder.finish({"complete": store.complete}, store=str(store.path))
    click.echo(f"store: {store.path}")
    click.echo(str(run_folder.path))


def _register_commands():
    """Commands that live in their own modules."""
    from .cli_bon import bon
    from .cli_pixels import pixels
    from .cli_serve import export_onnx, serve
    from .cli_sweep import sweep

    main.add_command(bon)
    main.add_command(pixels)
    main.add_command(sweep)
    main.add_command(serve)
    main.add_command(export_onnx)


_register_commands()
