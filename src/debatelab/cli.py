"""The ``debatelab`` command line.

Every experiment command is generated from its config dataclass (:mod:`debatelab.experiments`):
options, defaults and help are written once, in the dataclass. Commands are imported only when
used, so ``debatelab --help`` starts fast.
"""

from __future__ import annotations

import click

from .experiments import EXPERIMENTS, GROUPS, experiment, plugin_commands, summary

#: Commands that are not experiments (no run folder): name -> (module, attribute, summary).
TOOLS = {
    "serve": ("debatelab.cli_serve", "serve",
              "Start the interactive demo: watch, play or judge a debate."),
    "export-onnx": ("debatelab.cli_serve", "export_onnx",
                    "Write judges as ONNX files, checked against PyTorch."),
    "export-site": ("debatelab.cli_serve", "export_site",
                    "Write the demo as a static site that runs in the browser."),
    "view": ("debatelab.cli_view", "view",
             "Browse run folders: an index, run pages with interactive figures, comparisons."),
    "protocols": ("debatelab.cli", "protocols_command",
                  "List the registered protocols (who reveals what, when) and rules."),
}  # fmt: skip


def _help_text(doc: str) -> str:
    """A module docstring as command help (click rewraps paragraphs)."""
    return doc.strip().replace("``", "`")


class _LazyGroup(click.Group):
    """A group whose commands are built on first use; the listing needs no imports.

    Experiments named ``"group sub"`` (``judges train``) appear as subcommands of a group."""

    prefix = ""

    def _mine(self) -> dict:
        """This group's experiments, by their last word."""
        if not self.prefix:
            return {**{n: n for n in EXPERIMENTS if " " not in n},
                    **{n: n for n in plugin_commands()}}  # fmt: skip
        return {n[len(self.prefix) + 1 :]: n for n in EXPERIMENTS
                if n.startswith(self.prefix + " ")}  # fmt: skip

    def list_commands(self, ctx):
        top = [] if self.prefix else list(GROUPS) + list(TOOLS)
        return list(self._mine()) + top

    def get_command(self, ctx, name):
        mine = self._mine()
        if name in mine:
            from .cli_common import experiment_command

            exp = experiment(mine[name])
            return experiment_command(mine[name].replace(" ", "-"), exp.config, exp.run,
                                      _help_text(exp.doc))  # fmt: skip
        if self.prefix:
            return None
        if name in GROUPS:
            group = _LazyGroup(name, help=GROUPS[name],
                               context_settings={"help_option_names": ["-h", "--help"]})  # fmt: skip
            group.prefix = name
            return group
        if name in TOOLS:
            import importlib

            module, attr, _ = TOOLS[name]
            return getattr(importlib.import_module(module), attr)
        return None

    def format_commands(self, ctx, formatter):
        mine = self._mine()
        rows = [(short, EXPERIMENTS[full][2] if full in EXPERIMENTS
                 else summary(experiment(full).doc)) for short, full in mine.items()]  # fmt: skip
        if not self.prefix:
            rows += list(GROUPS.items())
            rows += [(n, s) for n, (_, _, s) in TOOLS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="debatelab")
def main():
    """debatelab: debate and consultancy between strong agents in front of a weak judge.

    Start with `debatelab run`: it trains (or loads from the cache) the MNIST judges and prints
    the reference table. Every experiment command writes a run folder with its config, manifest
    and metrics; rerunning into the same --out with the same settings resumes it.
    """


@click.command("protocols", context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--medium",
    type=click.Choice(["cells", "pixels", "text"]),
    default=None,
    help="Only the protocols of one medium (cells, pixels or text).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON object instead of the tables.")
def protocols_command(medium, as_json):  # fmt: skip
    """List the registered protocols and rules.

    A protocol is a sequence of turns after A's claim, each a player (A, the claimant; B, its
    opponent) and the units its move reveals (cells, pixels or messages): `A1 B2 A1` is A
    revealing one cell, B two, A the last one. For each: its medium, turns, units per player,
    the published branching of the sampled on-policy tree (1,296 leaves), its summary and its
    source (built-in, or the plug-in that registered it through the entry-point group
    `debatelab.protocols`). Then the rules: when B names its class (never, before play, after
    play) and A's payoff.
    """
    import json

    from .protocols import describe, describe_rule, protocol, protocol_names, rule, rule_names

    rows = [describe(protocol(n)) for n in protocol_names(medium)]
    rules = [describe_rule(rule(n)) for n in rule_names()]
    if as_json:
        click.echo(json.dumps({"protocols": rows, "rules": rules}, indent=1))
        return

    def table(head, lines):
        widths = [max(len(str(x)) for x in col) for col in zip(head, *lines, strict=True)]
        for line in [head, ["-" * w for w in widths], *lines]:
            click.echo(
                "  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
            )

    click.echo("Protocols")
    table(["name", "medium", "turns", "A units", "B units", "branching", "summary", "source"],
          [[r["name"], r["medium"], r["turns"], r["per_player"]["A"], r["per_player"]["B"],
            "x".join(map(str, r["branching"])) if r["branching"] else "-", r["summary"],
            r["source"]] for r in rows])  # fmt: skip
    click.echo("\nRules")
    table(["name", "B claims", "summary", "source"],
          [[r["name"], r["b_claims"].replace("_", " "), r["summary"], r["source"]]
           for r in rules])  # fmt: skip
