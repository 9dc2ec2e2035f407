"""``debatelab bon``: the best-of-N debate proxy on a pool file (or on synthetic pools)."""

from __future__ import annotations

from pathlib import Path

import click

from .cli_common import friendly_errors as _friendly


def parse_ints(text: str, name: str) -> tuple[int, ...]:
    """'1:20' (inclusive range), '1:20:2' (with a step) or '1,2,5,10'."""
    try:
        if ":" in text:
            parts = [int(p) for p in text.split(":")]
            if len(parts) not in (2, 3):
                raise ValueError
            lo, hi, step = (*parts, 1) if len(parts) == 2 else parts
            values = tuple(range(lo, hi + 1, step))
        else:
            values = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r}: use 'a:b', 'a:b:step' or 'a,b,c'",
                                 param_hint=name) from None  # fmt: skip
    if not values or min(values) < 1:
        raise click.BadParameter(f"{text!r}: needs positive integers", param_hint=name)
    return values


@click.command("bon")
@click.argument("pools", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--demo", is_flag=True, help="Run on synthetic pools instead of a file.")
@click.option(
    "--n",
    "n_spec",
    default="1:20",
    show_default=True,
    help="Proposer best-of-n values: 'a:b', 'a:b:step' or 'a,b,c'.",
)
@click.option("--m", "m_spec", default="1,10", show_default=True, help="Critic best-of-m values.")
@click.option("--r", "r_spec", default="1,10", show_default=True, help="Rebuttal best-of-r values.")
@click.option(
    "--ref-n",
    type=int,
    default=10,
    show_default=True,
    help="Proposer n at which contrasts are reported.",
)
@click.option(
    "--replicates", type=int, default=1000, show_default=True, help="Bootstrap replicates."
)
@click.option(
    "--levels",
    default="questions,proposals,critiques,rebuttals",
    show_default=True,
    help="Levels the bootstrap resamples.",
)
@click.option(
    "--method",
    type=click.Choice(["basic", "percentile", "bca"]),
    default="basic",
    show_default=True,
    help="Bootstrap interval: basic corrects the bias of best-of-n on resampled pools "
    "(covered 91-98 % in simulation); percentile does not; bca is offered for comparison.",
)
@click.option(
    "--demo-questions", type=int, default=28, show_default=True, help="Synthetic questions."
)
@click.option(
    "--demo-sizes", default="50x50x20", show_default=True, help="Synthetic pool sizes N x M x R."
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run folder (default: runs/<timestamp>-bon).",
)
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap (and of the synthetic pools with --demo).",
)
@click.option("--quiet", is_flag=True, help="No progress bars.")
@_friendly
def bon(pools, demo, n_spec, m_spec, r_spec, ref_n, replicates, levels, method, demo_questions,
        demo_sizes, out, seed, quiet):  # fmt: skip
    """Best-of-N debate proxy: worms, meshes and paired bootstrap intervals for POOLS.

    POOLS is a JSON Lines, CSV or Parquet file of proposals, critiques and rebuttals with judge
    scores (schema: debatelab.text.readers). Proposer accuracy and win rate are computed for
    every protocol present (proposal only, + critique, + critique + rebuttal) and every arm
    (e.g. a token-matched control proposer pool named 'control').
    """
    from .report.runs import RunFolder, default_run_dir
    from .text.analysis import (
        BonConfig,
        analyse,
        grid_rows,
        key_metrics,
        markdown_report,
        question_rows,  # fmt: skip
        to_csv,
        write_figures,
    )
    from .text.bootstrap import BootstrapConfig
    from .text.readers import read_pools
    from .text.synthetic import SyntheticConfig, synthetic_pools

    if demo == (pools is not None):
        raise click.UsageError("give a POOLS file or --demo (not both)")
    cfg = BonConfig(n=parse_ints(n_spec, "--n"), m=parse_ints(m_spec, "--m"),
                    r=parse_ints(r_spec, "--r"), ref_n=ref_n, seed=seed,
                    bootstrap=BootstrapConfig(replicates=replicates, method=method,
                                              levels=tuple(x.strip() for x in levels.split(",")
                                                           if x.strip())))  # fmt: skip
    config = {"pools": str(pools) if pools else None, "demo": demo, "bon": cfg}
    if demo:
        try:
            n, m, r = (int(x) for x in demo_sizes.lower().split("x"))
        except ValueError:
            raise click.BadParameter(
                "use N x M x R, e.g. 50x50x20", param_hint="--demo-sizes"
            ) from None
        synth = SyntheticConfig(n_questions=demo_questions, n_proposals=n, n_critiques=m,
                                n_rebuttals=r)  # fmt: skip
        data = synthetic_pools(synth, seed)
        source = f"synthetic (seed {seed})"
        config["synthetic"] = synth
    else:
        data = read_pools(pools)
        source = str(pools)
    run = RunFolder(out or default_run_dir("bon"), "bon", _plain(config),
                    seeds={"bootstrap": seed, **({"synthetic": seed} if demo else {})})  # fmt: skip
    res = analyse(data, cfg, show_progress=not quiet)
    folder = run.path
    (folder / "table.csv").write_text(to_csv(grid_rows(res)))
    (folder / "per_question.csv").write_text(to_csv(question_rows(res)))
    (folder / "contrasts.csv").write_text(to_csv(res.contrasts))
    write_figures(res, folder)
    report = markdown_report(res, data, source)
    (folder / "report.md").write_text(report)
    run.finish(key_metrics(res))
    if not quiet:
        click.echo(report)
    click.echo(str(folder))


def _plain(obj):
    from dataclasses import asdict, is_dataclass

    if is_dataclass(obj):
        return _plain(asdict(obj))
    if isinstance(obj, dict):
        return {k: _plain(v) for k, v in obj.items()}
    return obj


__all__ = ["bon", "parse_ints"]
