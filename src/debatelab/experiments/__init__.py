"""Experiments: each is a config dataclass (one docstring per field) and
``run(config, run_folder) -> metrics``; the CLI generates its options from the dataclass.

:data:`EXPERIMENTS` names each experiment's module and config class, and says in a line what it
does; ``experiment(name)`` imports one.
"""

from __future__ import annotations

import importlib
import warnings
from dataclasses import dataclass, is_dataclass
from typing import Any

from ..registry import PluginError, Registry


@dataclass(frozen=True)
class Experiment:
    """One experiment: its config class and its ``run(config, run_folder) -> metrics``."""

    name: str
    config: type
    run: Any
    doc: str


#: command name -> (module, config class, one-line summary)
EXPERIMENTS = {
    "run": ("table", "TableConfig",
            "The main job: judges of a dataset variant and the reference table."),
    "train": ("train", "TrainJudgesConfig",
              "Train the gold classifier and/or the sparse judge, or a pixel judge (cached)."),
    "dump": ("dump", "DumpConfig",
             "Store the sparse judge's probabilities on every 4-cell mask of test images."),
    "sweep": ("sweep_report", "SweepConfig",
              "Consultancy and debate against the frozen sparse judge at every capability."),
    "study": ("study", "StudyConfig",
              "The frozen-judge study on every dataset variant, with a combined report."),
    "pixels": ("pixels", "PixelExperimentConfig",
               "The sparse-pixel MNIST debate of Irving, Christiano & Amodei (2018)."),
    "bon": ("bon", "BonExperimentConfig",
            "Best-of-N debate proxy: worms, meshes and paired bootstrap intervals for POOLS."),
    "judges train": ("judges", "JudgeConfig",
                     "Train one judge on-policy (design, protocol, rule, control).", "run"),
    "judges sweep": ("judges", "SweepJudgesConfig",
                     "The published 13-judge sweep of a design on a dataset.", "run_sweep"),
    "judges eval": ("judges", "EvalJudgeConfig",
                    "Evaluate a trained judge (ours or a published one) on test images.",
                    "run_eval"),
    "judges eval-published": ("judges", "EvalPublishedConfig",
                              "Evaluate every published trained judge (resumable per judge).",
                              "run_eval_published"),
    "bits train": ("bits", "ChannelArmConfig",
                   "Train one arm of the 1-bit argument channel (or its nested control).", "run"),
    "bits sweep": ("bits", "ChannelSweepConfig",
                   "Every arm of the argument channel, baselines and diagnostics.", "run_sweep"),
    "bits baselines": ("bits", "ChannelBaselinesConfig",
                       "The channel's baselines alone: gold, random mask, its ensembles.",
                       "run_baselines"),
    "agents train": ("agents", "AgentsConfig",
                     "Train learned pixel debaters (warm-up + REINFORCE) and play them against "
                     "the search agents.", "run"),
    "pools generate": ("pools", "PoolsConfig",
                       "Generate, verify and judge pools of proposals, critiques and rebuttals."),
    "pools plan": ("pools_plan", "PlanConfig",
                   "From a pilot run: the questions and pool sizes an interval width needs, "
                   "and their cost."),
}  # fmt: skip
#: Commands that are not experiments (``debatelab.cli`` defines them); a plug-in may not
#: take their names.
BUILTIN_TOOLS = ("serve", "export-onnx", "export-site", "protocols", "view")
#: Groups of experiment commands (``debatelab judges train``): group name -> summary.
GROUPS = {
    "judges": "Judges trained on-policy: train one, sweep 13, evaluate any checkpoint.",
    "agents": "Learned debaters of the pixel game: train and evaluate them.",
    "pools": "LLM debate pools from real models, for `debatelab bon`.",
    "bits": "The 1-bit argument channel: train one arm, sweep every arm with diagnostics, or "
    "the baselines alone.",
}


def _check_experiment(name: str, obj: object) -> Experiment:
    if not isinstance(obj, Experiment):
        raise TypeError(f"experiment {name!r} must be a debatelab.experiments.Experiment "
                        f"(name, config dataclass, run(config, folder), doc), not "
                        f"{type(obj).__name__}")  # fmt: skip
    command = name.replace("_", "-")
    if command in EXPERIMENTS or command in GROUPS or command in BUILTIN_TOOLS:
        raise ValueError(f"debatelab already has a command {command!r}; rename the experiment")
    if not is_dataclass(obj.config) or not callable(obj.run):
        raise TypeError(f"experiment {name!r}: config must be a dataclass and run a function "
                        "run(config, run_folder) -> metrics")  # fmt: skip
    return obj


#: Experiments of other packages, by entry point in the group ``debatelab.experiments``; each
#: is a top-level command, its name with dashes (``critic_pressure``: ``debatelab
#: critic-pressure``).
PLUGIN_EXPERIMENTS: Registry[Experiment] = Registry("experiment", "debatelab.experiments",
                                                    _check_experiment)  # fmt: skip


def plugin_commands() -> dict[str, str]:
    """Command name -> registry name of the plug-ins' experiments. A plug-in that cannot be
    loaded is a warning naming it, not an error: every other command still works."""
    try:
        names = PLUGIN_EXPERIMENTS.names()
    except PluginError as exc:
        if str(exc) not in _WARNED:
            _WARNED.add(str(exc))
            warnings.warn(f"{exc}; its experiments are not available", stacklevel=2)
        names = tuple(PLUGIN_EXPERIMENTS._items)
    return {name.replace("_", "-"): name for name in names}


_WARNED: set[str] = set()


def summary(doc: str) -> str:
    """A docstring's first line (a command's one-line summary)."""
    return next((line.strip() for line in (doc or "").splitlines() if line.strip()), "")


def experiment(name: str) -> Experiment:
    """Import experiment ``name`` (one of :data:`EXPERIMENTS`, or a plug-in's command)."""
    plugins = plugin_commands() if name not in EXPERIMENTS else {}
    if name in plugins:
        return PLUGIN_EXPERIMENTS.get(plugins[name])
    if name not in EXPERIMENTS:
        known = sorted(EXPERIMENTS) + sorted(plugins)
        raise ValueError(f"unknown experiment {name!r}; choose one of {known}")
    module_name, config_name, _, *run_name = EXPERIMENTS[name]
    module = importlib.import_module(f"{__name__}.{module_name}")
    run = getattr(module, run_name[0] if run_name else "run")
    doc = (run.__doc__ or "") if run_name else (module.__doc__ or "")
    return Experiment(name, getattr(module, config_name), run, doc)
