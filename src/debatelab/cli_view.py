"""``debatelab view``: browse run folders in a local page, or export the pages as files."""

from __future__ import annotations

from pathlib import Path

import click

from .cli_common import friendly_errors, server_options


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("folders", nargs=-1, type=click.Path(file_okay=False, path_type=Path))
@server_options(8050, "the page")
@click.option(
    "--export",
    "export_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write the pages as a static folder here (opens without a server; nothing "
    "is loaded from outside it) instead of serving them.",
)
@friendly_errors
def view(folders, host, port, export_dir):  # fmt: skip
    """Look at runs: an index of the run folders under FOLDERS (default ./runs; every folder
    with a config.json, down to 4 levels), a page per run and a comparison of runs.

    The index lists each run's command, status (finished, running, failed, or stopped: a killed
    run, which resumes when rerun with the same settings), start, wall time and headline
    metrics. A run page shows its interactive figures (capability curves, heat maps, worms with
    a slider over the proposer's n and a toggle per arm and protocol, meshes, training curves
    with the published ones dashed, calls and tokens per role), the figures it wrote, its
    settings, metrics, report and log, and follows a running run as its chunks finish. Tick
    two or more runs in the index to compare them: settings that differ are highlighted,
    metrics shown with their standard errors.
    """
    from .web.view import export_view, view_app

    folders = list(folders) or [Path("runs")]
    if export_dir is not None:
        out, runs = export_view(folders, export_dir)
        click.echo(f"{runs} runs exported; open {out / 'index.html'} (or serve the folder)")
        return
    import uvicorn

    app = view_app(folders)
    click.echo(f"debatelab view of {', '.join(map(str, folders))} on http://{host}:{port}/ "
               "(Ctrl+C stops it)")  # fmt: skip
    uvicorn.run(app, host=host, port=port, log_level="warning")
