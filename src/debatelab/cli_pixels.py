"""``debatelab pixels``: the 2018 sparse-pixel MNIST debate with tree-search agents.

Register it on the main group with ``main.add_command(pixels)``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from .cli_common import friendly_errors as _friendly
from .cli_common import path_options


@click.command()
@click.option(
    "--pixels",
    type=click.IntRange(1, 784),
    default=6,
    show_default=True,
    help="Pixels revealed per debate (the paper: 4 or 6); the judge is trained on as many.",
)
@click.option(
    "--rollouts",
    type=click.IntRange(min=1),
    default=1000,
    show_default=True,
    help="MCTS simulations per move (the paper: 10,000).",
)
@click.option(
    "--images",
    default="0:500",
    show_default=True,
    help="Test images: 'all', 'N' (the first N) or 'start:stop'.",
)
@click.option(
    "--agent",
    type=str,
    default="mcts",
    show_default=True,
    help="Both players' agent: mcts, greedy, random, or a rank policy over one-step values "
    "(top5, bo4).",
)
@click.option(
    "--first",
    type=click.Choice(["honest", "liar"]),
    default="liar",
    show_default=True,
    help="Who reveals the first pixel (liar first gives the honest player the last word).",
)
@click.option(
    "--no-precommit/--skip-no-precommit",
    "no_precommit",
    default=True,
    show_default=True,
    help="Also play the variant where the liar names its label last.",
)
@click.option(
    "--batch-games",
    type=click.IntRange(min=1),
    default=64,
    show_default=True,
    help="Games searched in lockstep (their leaves are judged in one batch).",
)
@click.option("--c-puct", type=float, default=1.0, show_default=True, help="PUCT exploration.")
@click.option(
    "--accuracy-draws",
    type=click.IntRange(min=1),
    default=5,
    show_default=True,
    help="Random nonzero-pixel masks per test image for the judge accuracy.",
)
@click.option("--judge-epochs", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--device", default="cpu", show_default=True, help="Where the judge runs.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    help="Torch CPU threads (default: torch's choice).",
)
@path_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run folder (default: runs/<timestamp>-pixels); rerun into it to resume.",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the judge's training and of the agents' random choices.",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
@_friendly
def pixels(
    pixels,
    rollouts,
    images,
    agent,
    first,
    no_precommit,
    batch_games,
    c_puct,
    accuracy_draws,
    judge_epochs,
    device,
    threads,
    data_dir,
    cache_dir,
    out,
    seed,
    quiet,
):
    """The sparse-pixel MNIST debate of Irving, Christiano & Amodei (2018).

    Trains (or loads) the pixel judge, measures it on random nonzero pixels, plays each test
    image against all nine precommitted liars (and once without precommit) and writes
    metrics.json, moves.jsonl, examples.png and report.md into the run folder.
    """  # fmt: skip
    import torch

    from .experiments.pixels import PixelExperimentConfig, run_pixels
    from .report.runs import RunFolder, default_run_dir

    if threads is not None:
        torch.set_num_threads(threads)
    cfg = PixelExperimentConfig(
        pixels=pixels, rollouts=rollouts, images=images, first=first, agent=agent,
        c_puct=c_puct, batch_games=batch_games, no_precommit=no_precommit, judge_seed=seed,
        judge_epochs=judge_epochs, seed=seed, device=device, accuracy_draws=accuracy_draws,
    )  # fmt: skip
    run = RunFolder(out or default_run_dir("pixels"), "pixels", cfg,
                    seeds={"judge": seed, "play": seed}, device=device)  # fmt: skip
    metrics = run_pixels(cfg, run.path, data_dir, cache_dir, progress=not quiet)
    run.finish(metrics)
    shown = {k: v for k, v in metrics.items() if "rate" in k or "accuracy" in k}
    click.echo(json.dumps(shown, indent=2))
    click.echo(str(run.path))
