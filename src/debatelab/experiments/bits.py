"""The 1-bit argument channel (REFERENCE B's last experiment; docs/trained-judges.md#channel).

Every decision of a play also emits a symbol, one bit per cell it reveals (consultancy 16
symbols, 2-turn debate 4 per player, 4-turn 2 per turn); the play's 4 bits reach the judge's
head as raw 0/1 inputs beside the D3-style projection and the claim one-hots. Moves are (cell,
symbol) pairs chosen by the same exact minimax under last_b. Each arm with the channel is
paired with its nested control: the same protocol, cell candidates, batch order and head
without the 4 bit inputs. `debatelab bits train` trains one arm, `debatelab bits sweep` every
arm of a dataset with the baselines (gold; the random-mask judge on one mask and as an ensemble
at each arm's mask budget and over all 58,905 masks) and the channel diagnostics (codeword
entropy, randomised-bit ablation, per-bit mutual information).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from math import prod

import numpy as np

from ..data import VARIANTS, load_variant
from ..judges.onpolicy import OnPolicyConfig
from ..options import CLUSTER, DEVICE, IMAGES, INTS, parse_device, parse_int_list
from ..progress import progress
from ..reference import CHANNEL_DELTAS, CHANNEL_ENTROPY, CHANNEL_RANDOM_MASK
from ..report.runs import RunFolder
from ..store import parse_images
from .judges import final_metrics, train_many

#: Cell candidates per node of each arm (§4's budgets), by image channels (1: FashionMNIST's
#: budgets, 3: CIFAR-10's). ``consultancy`` is the bits arm and its nested control;
#: ``consultancy_large`` the plain consultancy at the larger search.
BRANCHING = {
    "paper": {
        1: {"debate2": (16, 16), "debate4": (4, 4, 4, 4), "consultancy": (324,),
            "consultancy_large": (1296,)},
        3: {"debate2": (12, 12), "debate4": (4, 4, 3, 3), "consultancy": (144,),
            "consultancy_large": (1296,)},
    },
    "cpu": {
        1: {"debate2": (4, 4), "debate4": (2, 2, 2, 2), "consultancy": (16,),
            "consultancy_large": (81,)},
        3: {"debate2": (4, 4), "debate4": (2, 2, 2, 2), "consultancy": (16,),
            "consultancy_large": (81,)},
    },
}  # fmt: skip
#: Schedules: ``paper`` as published (15 epochs on every training image, the whole test set);
#: ``cpu`` a reduced one for this project's 2-core machine (see docs/results-argument-channel.md).
PRESETS = {
    "paper": {"epochs": 15, "batch_size": 128, "train_limit": None, "eval_images": "all",
              "baseline_epochs": 15},
    "cpu": {"epochs": 2, "batch_size": 32, "train_limit": 12000, "eval_images": "0:10000:10",
            "baseline_epochs": 5},
}  # fmt: skip
#: The arms of a sweep, in order: the index is the arm's initialisation seed, and its loop seed
#: is its number of turns, so each bits arm and its nested control see the same batches and
#: candidates (§5; the published arm order is not recorded, this one is ours).
ARMS = (("debate2", True, "debate2"), ("debate2", False, "debate2"),
        ("debate4", True, "debate4"), ("debate4", False, "debate4"),
        ("consultancy", True, "consultancy"), ("consultancy", False, "consultancy"),
        ("consultancy", False, "consultancy_large"))  # fmt: skip
TURNS = {"consultancy": 0, "debate2": 2, "debate4": 4}
#: Seeds of the baselines (§4).
GOLD_SEED, RANDOM_MASK_SEED = 555, 777


@dataclass
class ChannelSchedule:
    """Settings shared by one arm and a sweep: dataset, preset, overrides, device."""

    variant: str = field(
        default="fashionmnist-whitened", metadata={"flag": "--dataset", "choices": VARIANTS}
    )
    """Dataset variant (published: fashionmnist-whitened and cifar10)."""
    preset: str = field(default="cpu", metadata={"choices": tuple(PRESETS)})
    """cpu: 2 epochs on 12,000 training images in batches of 32, 16 cell paths per image
    (2-turn 4 x 4, 4-turn 2 x 2 x 2 x 2, consultancy 16; plain consultancy also at 81), 1,000
    test images; paper: §4
    as published (15 epochs on every training image; FashionMNIST 16 x 16, 4^4, 324 and 1,296
    masks; CIFAR-10 12 x 12, 4 x 4 x 3 x 3, 144 and 1,296), the whole test set."""
    epochs: int | None = field(default=None, metadata={"min": 1})
    """Override the preset's epochs."""
    train_limit: int | None = field(default=None, metadata={"min": 1})
    """Override the preset's training images (the first N)."""
    eval_images: str | None = field(default=None, metadata=IMAGES)
    """Override the preset's test images (each epoch's evaluation and the diagnostics)."""
    device: str = field(default="auto", compare=False, metadata=DEVICE)
    """Where to train: auto (a CUDA device when there is one, else the CPU), cpu, cuda or
    cuda:N."""
    cluster: str = field(default="local", compare=False, metadata=CLUSTER)
    """Where the arms train: local (one after another here), ray (a local Ray instance),
    ray:auto (join the running Ray cluster) or ray:HOST:PORT (one Ray task per arm, with a GPU
    when --device is cuda); results do not depend on it."""

    def chosen(self) -> dict:
        out = dict(PRESETS[self.preset])
        for name in ("epochs", "train_limit", "eval_images"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def arm(self, protocol: str, bits: bool, budget_name: str, channels: int,
            branching: tuple[int, ...] | None = None) -> OnPolicyConfig:  # fmt: skip
        """The :class:`OnPolicyConfig` of one arm under this schedule."""
        chosen = self.chosen()
        index = ARMS.index((protocol, bits, budget_name)) if (
            (protocol, bits, budget_name) in ARMS) else len(ARMS)  # fmt: skip
        return OnPolicyConfig(
            design="bit", variant=self.variant, protocol=protocol,
            rule="asym" if protocol == "consultancy" else "last_b", seed=index,
            loop_seed=TURNS[protocol], bits=bits, epochs=chosen["epochs"],
            batch_size=chosen["batch_size"],
            train_limit=chosen["train_limit"], eval_images=chosen["eval_images"], eval_batch=64,
            branching=branching or BRANCHING[self.preset][channels][budget_name],
        )  # fmt: skip


@dataclass
class ChannelArmConfig(ChannelSchedule):
    """Settings of one arm of the argument-channel experiment."""

    protocol: str = field(default="debate2", metadata={"choices": tuple(TURNS)})
    """consultancy (16 symbols), debate2 (4 per player) or debate4 (2 per turn)."""
    control: bool = False
    """The nested control: the same protocol, cells and head without the bit inputs."""
    branching: str | None = field(default=None, metadata=INTS)
    """Override the preset's cell candidates per node, comma-separated (e.g. 16,16 or 1296)."""


def _channels(variant: str) -> int:
    return 3 if variant.startswith("cifar10") else 1


def run(config: ChannelArmConfig, folder: RunFolder) -> dict:
    """Train one arm of the argument channel on-policy (design bit: a D3-style judge with a
    3 x 64 head; last_b for debate), resumable per epoch. With the channel, every decision
    emits a symbol (one bit per revealed cell) chosen by the same minimax as the cells, and
    the judge reads the play's 4 bits; `--control` is its nested control without them. Writes
    history.json and curves.png, and for an arm with bits the diagnostics of its final judge
    on a fresh test pass (diagnostics.json, codewords.png); prints selection, judge accuracy
    and belief."""
    device = parse_device(config.device, config.cluster)
    branching = None
    if config.branching:
        branching = parse_int_list(config.branching)
    cfg = config.arm(config.protocol, not config.control, config.protocol,
                     _channels(config.variant), branching)  # fmt: skip
    folder.seeds.update(init=cfg.seed, loop=cfg.loop_seed)
    data = load_variant(cfg.variant, folder.data_dir)
    (judge,) = train_many([cfg], folder, device, data, config.cluster)
    (folder.path / "history.json").write_text(json.dumps(judge.history, indent=1))
    from ..report.plots import codeword_bars, epoch_curves

    epoch_curves({cfg.name: judge.history}, folder.file("curves.png"))
    metrics = final_metrics(judge.history)
    folder.echo(f"{cfg.name}: " + ", ".join(f"{k} {100 * metrics[k]:.2f}"
                                            for k in ("selection", "judge", "belief")))  # fmt: skip
    if cfg.bits:
        here = parse_device("auto") if device.startswith("cuda") else device
        test = _test_images(data, config.chosen()["eval_images"])
        d = _diagnose(cfg, judge.path, data, test, here, folder)
        (folder.path / "diagnostics.json").write_text(json.dumps(d, indent=1))
        codeword_bars({cfg.name: d["codeword_counts"]}, folder.file("codewords.png"),
                      f"{config.variant} ({config.preset})")  # fmt: skip
        metrics["codeword_entropy"] = d["codeword_entropy"]
        metrics["ablation_judge_accuracy_change"] = d["ablation_judge_accuracy_change"]
        folder.echo(f"codeword entropy {d['codeword_entropy']:.2f} bits; randomised bits: "
                    f"judge accuracy {100 * d['ablation_judge_accuracy_change']:+.2f}, belief "
                    f"{100 * d['ablation_belief_change']:+.2f} points")  # fmt: skip
    return {**metrics, "checkpoint": str(judge.path)}


def _test_images(data, spec: str) -> range:
    """The test images an ``--eval-images`` spec names, as a range over the test set."""
    return range(len(data.x_test))[parse_images(spec, len(data.x_test))]


def _diagnose(cfg: OnPolicyConfig, checkpoint, data, test: range, device: str,
              folder: RunFolder) -> dict:  # fmt: skip
    """The channel diagnostics of a bits arm's final judge on a fresh pass of the ``test``
    images (its own seed, apart from the training's evaluations)."""
    from ..games.sampled_play import channel_diagnostics
    from ..training.onpolicy import load_onpolicy_judge

    judge = load_onpolicy_judge(checkpoint)
    judge.model.to(device)
    return channel_diagnostics(
        judge, data.x_test[test.start : test.stop : test.step].to(device),
        data.y_test[test.start : test.stop : test.step], protocol=cfg.protocol, rule=cfg.rule,
        seed=2_000_003 + cfg.seed, batch=64, branching=cfg.branching,
        progress=folder.progress)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# the sweep: every arm, the baselines and the diagnostics


@dataclass
class ChannelSweepConfig(ChannelSchedule):
    """Settings of the argument-channel sweep of one dataset."""


def baselines(variant: str, preset: str, folder: RunFolder, data, images: range,
              budgets: list[int], device: str) -> dict[str, float]:  # fmt: skip
    """Gold (full images), the random-mask judge on one fresh mask, and its ensemble (argmax of
    the probabilities averaged over ``n`` random masks, for each ``n`` of ``budgets``, and over
    all 58,905 masks), on the test ``images``; the same net as the arms without claim or bit
    inputs."""
    import torch

    from ..geometry import Grid, LabelledMasks
    from ..judges.onpolicy import OnPolicyJudge
    from ..judges.train import TrainConfig, get_judge

    schedule = PRESETS[preset]
    common = {"variant": variant, "epochs": schedule["baseline_epochs"], "batch_size": 128,
              "train_limit": schedule["train_limit"], "architecture": "bit"}  # fmt: skip
    gold = get_judge(TrainConfig(kind="gold", seed=GOLD_SEED, **common), data, folder.cache_dir,
                     folder.progress)  # fmt: skip
    sparse = get_judge(TrainConfig(kind="sparse", seed=RANDOM_MASK_SEED, **common), data,
                       folder.cache_dir, folder.progress)  # fmt: skip
    x = data.x_test[images.start : images.stop : images.step].to(device)
    y = data.y_test[images.start : images.stop : images.step].numpy()
    out = {}
    with torch.no_grad():
        gold.model.to(device).eval()
        out["gold"] = float((gold.model(x).argmax(-1).cpu().numpy() == y).mean())
    judge = OnPolicyJudge("bit", sparse.model.to(device).eval(), "consultancy", "asym",
                          Grid(data.image_size, 6), data.in_channels)  # fmt: skip
    universe = LabelledMasks.masks(judge.n_cells, 4)
    gen = np.random.default_rng(RANDOM_MASK_SEED)
    picks = {n: gen.integers(0, len(universe), (len(images), n)) for n in [1, *budgets]}
    sums = {n: 0 for n in picks}
    sums["all"] = 0
    # every image against all 58,905 masks: minutes on a CPU, so it is a stage of the log
    for i in progress(range(0, len(images), 16), enabled=folder.progress, unit="batch",
                      desc=f"random-mask ensembles ({len(universe):,} masks)"):  # fmt: skip
        with torch.no_grad():
            probs = judge.universe_scores(x[i : i + 16], universe).double().cpu().numpy()
        yy = y[i : i + 16]
        rows = np.arange(len(yy))[:, None]
        for n, pick in picks.items():
            mean = probs[rows, pick[i : i + 16]].mean(axis=1)
            sums[n] += int((mean.argmax(-1) == yy).sum())
        sums["all"] += int((probs.mean(axis=1).argmax(-1) == yy).sum())
    out["random_mask_1"] = sums.pop(1) / len(images)
    for n, hits in sums.items():
        out[f"ensemble_{n}"] = hits / len(images)
    return out


def mask_budgets(preset: str, channels: int) -> list[int]:
    """The cell paths per image of every arm of a preset: the ensembles' mask budgets."""
    return sorted({prod(b) for b in BRANCHING[preset][channels].values()})


@dataclass
class ChannelBaselinesConfig:
    """Settings of the argument channel's baselines on one dataset."""

    variant: str = field(
        default="fashionmnist-whitened", metadata={"flag": "--dataset", "choices": VARIANTS}
    )
    """Dataset variant (published: fashionmnist-whitened and cifar10)."""
    preset: str = field(default="cpu", metadata={"choices": tuple(PRESETS)})
    """cpu: the baselines train 5 epochs on the first 12,000 training images and are tested on
    1,000 test images; paper: 15 epochs on every training image, the whole test set."""
    eval_images: str | None = field(default=None, metadata=IMAGES)
    """Override the preset's test images."""
    device: str = field(default="auto", compare=False, metadata=DEVICE)
    """Where to train: auto (a CUDA device when there is one, else the CPU), cpu, cuda or
    cuda:N."""


def run_baselines(config: ChannelBaselinesConfig, folder: RunFolder) -> dict:
    """The argument channel's baselines alone (what `bits sweep` also computes): gold on full
    images (seed 555), the random-mask judge (seed 777) on one fresh mask per test image, and
    its ensemble at each arm's mask budget and over all 58,905 masks; the same net as the arms
    without claim or bit inputs. Writes report.md with the published random-mask value."""
    device = parse_device(config.device)
    data = load_variant(config.variant, folder.data_dir)
    folder.seeds.update(gold=GOLD_SEED, random_mask=RANDOM_MASK_SEED)
    chosen = config.eval_images or PRESETS[config.preset]["eval_images"]
    test = _test_images(data, chosen)
    base = baselines(config.variant, config.preset, folder, data, test,
                     mask_budgets(config.preset, data.in_channels), device)  # fmt: skip
    published = CHANNEL_RANDOM_MASK.get(config.variant)
    lines = [f"# debatelab bits baselines: {config.variant} ({config.preset})", "",
             f"{len(test):,} test images, percent.", "", "| baseline | this run | published |",
             "|---|---|---|"]  # fmt: skip
    for name, value in base.items():
        pub = "-"
        if name == "random_mask_1" and published:
            pub = f"{published['table']:.2f} (epoch-15 log {published['log']:.2f})"
        lines.append(f"| {name} | {100 * value:.2f} | {pub} |")
    report = "\n".join(lines) + "\n"
    folder.file("report.md").write_text(report)
    folder.echo(report)
    return base


def run_sweep(config: ChannelSweepConfig, folder: RunFolder) -> dict:
    """Every arm of the argument channel on a dataset, with baselines and diagnostics.

    Arms (docs/trained-judges.md#channel): 2-turn and 4-turn debate under last_b and consultancy,
    each with the channel and as its nested control, plus plain consultancy at the larger search;
    each cached and resumable per epoch. Baselines: gold, the random-mask judge on one mask and
    its ensembles. Diagnostics of each bits arm's final judge on a fresh test pass: codeword
    entropy and distribution, randomised-bit ablation, per-bit I(b; claim), I(b; y) and
    I(b; y | claim). Writes report.md (tables beside the published deltas and entropies),
    diagnostics.json, codewords.png and curves.png.
    """
    device = parse_device(config.device, config.cluster)
    here = parse_device("auto") if device.startswith("cuda") else device  # diagnostics, baselines
    data = load_variant(config.variant, folder.data_dir)
    channels = data.in_channels
    chosen = config.chosen()
    test = _test_images(data, chosen["eval_images"])
    results, histories, configs, diagnostics = {}, {}, {}, {}
    cfgs = [config.arm(protocol, bits, budget_name, channels)
            for protocol, bits, budget_name in ARMS]  # fmt: skip
    for cfg, trained in zip(cfgs, train_many(cfgs, folder, device, data, config.cluster),
                            strict=True):  # fmt: skip
        bits = cfg.bits
        results[cfg.name] = final_metrics(trained.history)
        histories[cfg.name], configs[cfg.name] = trained.history, cfg
        folder.echo(f"{cfg.name}: " + ", ".join(
            f"{k} {100 * v:.2f}" for k, v in results[cfg.name].items()
            if k in ("selection", "judge", "belief")))  # fmt: skip
        if bits:
            diagnostics[cfg.name] = _diagnose(cfg, trained.path, data, test, here, folder)
    base = baselines(config.variant, config.preset, folder, data, test,
                     mask_budgets(config.preset, channels), here)  # fmt: skip
    (folder.path / "histories.json").write_text(json.dumps(histories, indent=1))
    (folder.path / "diagnostics.json").write_text(json.dumps(diagnostics, indent=1))
    from ..report.plots import codeword_bars, epoch_curves

    epoch_curves(histories, folder.file("curves.png"))
    codeword_bars({n: d["codeword_counts"] for n, d in diagnostics.items()},
                  folder.file("codewords.png"), f"{config.variant} ({config.preset})")  # fmt: skip
    report = channel_report(config, configs, results, diagnostics, base, len(test))
    folder.file("report.md").write_text(report)
    folder.echo(report)
    metrics = {f"{n}/{k}": v for n, m in results.items() for k, v in m.items()}
    metrics.update({f"baseline/{k}": v for k, v in base.items()})
    for name, d in diagnostics.items():
        metrics[f"{name}/codeword_entropy"] = d["codeword_entropy"]
        metrics[f"{name}/ablation_judge_accuracy_change"] = d["ablation_judge_accuracy_change"]
        metrics[f"{name}/ablation_belief_change"] = d["ablation_belief_change"]
    metrics.update({f"delta/{p}": v for p, v in channel_deltas(configs, results).items()})
    metrics["n_images"] = len(test)
    metrics["wall_seconds"] = round(sum(m["wall_seconds"] for m in results.values()), 1)
    return metrics


def channel_deltas(configs: dict, results: dict) -> dict[str, float]:
    """Judge accuracy of each bits arm minus its nested control (fractions), by protocol."""
    out = {}
    for name, cfg in configs.items():
        if not cfg.bits:
            continue
        pair = next(n for n, c in configs.items() if not c.bits and c.protocol == cfg.protocol
                    and c.branching == cfg.branching)  # fmt: skip
        out[cfg.protocol] = results[name]["judge"] - results[pair]["judge"]
    return out


def delta_standard_error(bits: float, control: float, n_images: int) -> float:
    """Binomial standard error of a bits arm's judge accuracy minus its control's (fractions),
    the two counted as independent samples of ``n_images``."""
    return float(np.hypot(*(np.sqrt(v * (1 - v) / n_images) for v in (bits, control))))


def channel_report(config, configs, results, diagnostics, base, n_images) -> str:
    pct = lambda v: f"{100 * v:.2f}"  # noqa: E731
    se = lambda v: f"{100 * np.sqrt(max(v * (1 - v), 1e-12) / n_images):.2f}"  # noqa: E731
    lines = [f"# debatelab bits sweep: {config.variant} ({config.preset})", "",
             f"Final epoch on {n_images:,} test images, percent (binomial standard error in "
             "brackets).", "",
             "| arm | cell paths | evals / image | selection | judge | belief |",
             "|---|---|---|---|---|---|"]  # fmt: skip
    for name, cfg in configs.items():
        m, paths = results[name], prod(cfg.branching)
        lines.append(f"| {name} | {'x'.join(map(str, cfg.branching))} = {paths} | "
                     f"{paths * (16 if cfg.bits else 1)} | {pct(m['selection'])} | "
                     f"{pct(m['judge'])} ({se(m['judge'])}) | {pct(m['belief'])} |")  # fmt: skip
    lines += ["", "Baselines (same net, no claim input): "
              + ", ".join(f"{k} {pct(v)}" for k, v in base.items()), "",
              "**The channel's effect on judge accuracy** (bits arm minus nested control, "
              "points) and codeword entropy (bits, of 4):", "",
              "| protocol | bits - control (standard error) | published | entropy | published | "
              "ablation: judge / belief change |", "|---|---|---|---|---|---|"]  # fmt: skip
    deltas = channel_deltas(configs, results)
    pub_d = CHANNEL_DELTAS.get(config.variant, {})
    pub_h = CHANNEL_ENTROPY.get(config.variant, {})
    for name, cfg in configs.items():
        if not cfg.bits:
            continue
        d = diagnostics[name]
        pair = results[name]["judge"] - deltas[cfg.protocol]  # the control's judge accuracy
        se_delta = delta_standard_error(results[name]["judge"], pair, n_images)
        lines.append(f"| {cfg.protocol} | {100 * deltas[cfg.protocol]:+.2f} "
                     f"({100 * se_delta:.2f}) | "
                     f"{pub_d.get(cfg.protocol, '-')} | {d['codeword_entropy']:.2f} | "
                     f"{pub_h.get(cfg.protocol, '-')} | "
                     f"{100 * d['ablation_judge_accuracy_change']:+.2f} / "
                     f"{100 * d['ablation_belief_change']:+.2f} |")  # fmt: skip
    lines += ["", "**What the bits encode** (per bit, most significant first: P(b = 1), then "
              "I(b; claim), I(b; y), I(b; y | claim) divided by H(b)):", "",
              "| arm | P(b=1) | I(b; claim)/H | I(b; y)/H | I(b; y given claim)/H |",
              "|---|---|---|---|---|"]  # fmt: skip
    for name, d in diagnostics.items():

        def col(key, d=d):
            return " ".join(f"{b[key]:.2f}" for b in d["bits"])

        lines.append(
            f"| {name} | {col('p_one')} | {col('mi_claim_normalised')} | "
            f"{col('mi_label_normalised')} | {col('mi_label_given_claim_normalised')} |"
        )
    lines += [
        "",
        "![codeword distribution per arm](codewords.png)",
        "",
        "![metrics against epochs](curves.png)",
        "",
    ]
    return "\n".join(lines)
