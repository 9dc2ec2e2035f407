"""Run a fixed small slice of every experiment at two revisions and compare their outputs.

    python benchmarks/compare_revisions.py BEFORE [AFTER] [--only NAME,...] [--bench] [--keep DIR]

BEFORE and AFTER are git revisions; AFTER defaults to the working tree as it is (uncommitted
changes included). Each committed revision is checked out with ``git worktree add --detach``
in a scratch folder under ``${DEBATELAB_CACHE:-~/.cache/debatelab}/compare/`` (removed
afterwards); the working tree is used in place, read only. Every slice (see ``SLICES``) runs as
``python -m debatelab ...`` (or a python snippet) with this venv's python,
``PYTHONPATH=<checkout>/src`` (checked: ``debatelab.__file__`` must lie in that checkout),
the current folder outside the repository, a fresh ``DEBATELAB_CACHE`` per revision (judges are
trained by that revision's code), the same ``DEBATELAB_DATA``, ``DEBATELAB_OFFLINE=1`` and one
thread (``OMP_NUM_THREADS=1``: float sums depend on the thread count).

Outputs of a committed revision are kept under ``compare/results/<sha>/<slice>-<key>/``, the key
a hash of the slice's definition, so a later call reuses them; the working tree is always
recomputed, and so is AFTER when it is the same commit as BEFORE (the determinism check).

Each slice's run folders are compared file by file (``compare_file``): JSON value by value
(floats exactly) without the volatile keys in ``VOLATILE_KEYS``, ``.npy``/``.npz`` with
``np.array_equal`` (NaN equal), text files exactly without volatile lines, any other file byte
for byte. One row per slice: name, files compared, EQUAL or DIFFERENT (first differences),
seconds at each revision. Exit status 1 on any difference or failure, else 0.

``--bench`` also times the quick benchmarks of ``BENCHES`` at both revisions alternately
(``--repeats`` times each) and prints the median seconds and the ratio AFTER / BEFORE.
``--keep DIR`` copies both sides' run folders into DIR for inspection.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
SCRATCH = Path(os.environ.get("DEBATELAB_CACHE", Path.home() / ".cache" / "debatelab")) / "compare"
#: Bump when the way slices run changes (invalidates every kept result).
RUNNER_VERSION = 1

# ------------------------------------------------------------------------------------------
# the slices

#: Tiny MNIST judges (gold and sparse) shared by run, dump, sweep and study in one revision.
QUICK = ("--train-limit", "2000", "--epochs", "1", "--workers", "1", "--quiet")
#: One small on-policy judge: 2 epochs of 512 images, 16 leaves per image, 50 test images.
ONPOLICY = ("--epochs", "2", "--train-limit", "512", "--budget", "16",
            "--eval-images", "0:10000:200", "--device", "cpu", "--quiet")  # fmt: skip
#: The embedded SmolLM2 on one HumanEval question, two proposals, short texts.
POOLS = ("--n", "2", "--m", "1", "--r", "1", "--proposal-tokens", "48", "--critique-tokens",
         "24", "--rebuttal-tokens", "24", "--quiet")  # fmt: skip


@dataclass(frozen=True)
class Slice:
    """One slice: CLI commands run in order (each into its own run folder ``out/<i>``), or a
    python snippet given the output folder as ``sys.argv[1]``. A command argument
    ``{checkpoint:I}`` stands for the ``checkpoint`` of command I's metrics.json."""

    name: str
    commands: tuple[tuple[str, ...], ...] = ()
    snippet: str = ""
    what: str = ""

    def key(self) -> str:
        text = json.dumps([RUNNER_VERSION, asdict(self)], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def judges_train(design: str, protocol: str, rule: str, *extra: str) -> tuple[str, ...]:
    return ("judges", "train", "--design", design, "--protocol", protocol, "--rule", rule,
            *ONPOLICY, *extra)  # fmt: skip


# Library functions the CLI does not reach cheaply. Written against the API of 0658626; if a
# function moves, add a fallback import in the try blocks (each snippet writes one .npz/.json).
SNIPPET_SOLVER = """
import sys, numpy as np
try:
    from debatelab.games.solver import solve_capabilities
except ImportError:  # moved by a refactor: add its new home here
    raise
out = sys.argv[1]
rng = np.random.default_rng(0)
n_cells = 9  # a 3x3 grid: C(9, 4) = 126 masks
probs = rng.dirichlet(np.ones(10), size=(5, 126)).astype(np.float32)
labels = rng.integers(0, 10, size=5)
caps = [(1, 1), (2, 1), (1, 3), (4, 2), ("uniform", 1), (1, "uniform")]
arrays = {}
for moves in [(4,), (2, 2), (1, 1, 1, 1)]:
    for rule in ("asym", "sym", "last_b"):
        if len(moves) == 1 and rule != "asym":
            continue  # consultancy is scored asym only
        got = solve_capabilities(probs, n_cells, moves, caps, rule=rule, labels=labels)
        for name, value in got.items():
            arrays[f"{'-'.join(map(str, moves))}.{rule}.{name}"] = np.asarray(value)
np.savez(f"{out}/solver.npz", **arrays)
"""

SNIPPET_CELLPLAY = """
import json, sys, numpy as np
try:
    from debatelab.games.cellplay import CellDebate, CellGameRules
except ImportError:  # moved by a refactor: add its new home here
    raise
out = sys.argv[1]
rng = np.random.default_rng(1)
log = []
for i, (protocol, rule, k_a, k_b) in enumerate([
    ("consultancy", "asym", 1, 1), ("debate2", "asym", 1, 1), ("debate2", "sym", 2, 1),
    ("debate4", "last_b", 1, 3), ("debate4", "asym", "uniform", 1), ("debate4", "sym", 1, 1),
]):
    probs = rng.dirichlet(np.ones(10), size=58905)  # every 4-cell mask of the 6x6 grid
    game = CellDebate(probs, CellGameRules(protocol=protocol, rule=rule, k_a=k_a, k_b=k_b))
    play = np.random.default_rng(i)
    turns = []
    while len(turns) < len(game.rules.moves):
        cells, weights = game.options(turns)
        turns.append(list(game.ai_move(turns, play)))
        log.append({"game": i, "options": len(cells), "weights": weights.tolist()[:50],
                    "move": turns[-1]})
    log.append({"game": i, "claim": game.claim, "value": game.value,
                "verdict": game.verdict(turns)})
with open(f"{out}/cellplay.json", "w") as fh:
    json.dump(log, fh, indent=1)
"""

SNIPPET_SAMPLED = """
import sys, numpy as np, torch
try:
    from debatelab.games.sampled import rule_leaves, sample_tree, solve_tree
except ImportError:  # moved by a refactor: add its new home here
    raise
out = sys.argv[1]
g = torch.Generator().manual_seed(0)
arrays = {}
for protocol in ("consultancy", "debate2", "debate4"):
    tree = sample_tree(protocol, 4, g, budget=16 if protocol != "debate4" else 81)
    arrays[f"{protocol}.paths"] = tree.paths.numpy()
    scores = torch.rand(tree.paths.shape[:2] + (10,), generator=g).softmax(-1)
    for rule in ("asym", "sym", "last_b"):
        if protocol == "consultancy" and rule != "asym":
            continue
        leaves = rule_leaves(scores, rule, conditioned=False, consultancy=protocol == "consultancy")
        play = solve_tree(leaves, tree.branching, rule)
        for name in ("claim", "b_claim", "leaf", "value"):
            value = getattr(play, name)
            if value is not None:
                arrays[f"{protocol}.{rule}.{name}"] = value.numpy()
np.savez(f"{out}/sampled.npz", **arrays)
"""

SLICES: tuple[Slice, ...] = (
    Slice(
        "run",
        (("run", "--images", "0:32", *QUICK),),
        what="frozen-judge table on 32 images (trains the tiny MNIST judges)",
    ),
    Slice("dump", (("dump", "--images", "0:64", *QUICK),), what="one all-mask store chunk"),
    Slice(
        "sweep",
        (("sweep", "--images", "0:4", *QUICK),),
        what="capability grids, curves, diagonals on 4 images",
    ),
    Slice(
        "study",
        (
            (
                "study",
                "--variants",
                "mnist,fashionmnist",
                "--images",
                "0:6",
                "--sweep-images",
                "0:3",
                *QUICK,
            ),
        ),
        what="two variants, tiny judges",
    ),  # fmt: skip
    Slice(
        "pixels",
        (
            (
                "pixels",
                "--pixels",
                "4",
                "--judge-epochs",
                "1",
                "--rollouts",
                "30",
                "--images",
                "0:2",
                "--batch-games",
                "18",
                "--quiet",
            ),
        ),
        what="sparse-pixel game, K=4, MCTS 30 rollouts, 2 images",
    ),  # fmt: skip
    Slice(
        "agents",
        (
            (
                "agents",
                "train",
                "--pixels",
                "4",
                "--judge-epochs",
                "1",
                "--hidden",
                "32",
                "--warmup-epochs",
                "1",
                "--epochs",
                "1",
                "--train-limit",
                "300",
                "--plays",
                "2",
                "--curve-images",
                "0:10",
                "--curve-greedy-images",
                "0",
                "--images",
                "0:10",
                "--opponents",
                "learned,random",
                "--quiet",
            ),
        ),
        what="learned pixel debaters, one warm-up and one REINFORCE epoch",
    ),  # fmt: skip
    Slice(
        "judges-d1",
        (
            judges_train("D1", "debate2", "asym"),
            judges_train("D1", "consultancy", "asym"),
            judges_train("D1", "debate2", "asym", "--control"),
        ),
        what="D1: debate2 asym, consultancy, control",
    ),  # fmt: skip
    Slice(
        "judges-d3",
        (
            judges_train("D3", "debate4", "sym"),
            (
                "judges",
                "eval",
                "{checkpoint:0}",
                "--images",
                "0:10000:500",
                "--device",
                "cpu",
                "--quiet",
            ),
        ),
        what="D3 debate4 sym, then judges eval of it",
    ),  # fmt: skip
    Slice("judges-d2", (judges_train("D2", "debate2", "last_b"),), what="D2 debate2 last_b"),
    Slice(
        "bits",
        (
            (
                "bits",
                "train",
                "--dataset",
                "mnist",
                "--protocol",
                "debate2",
                "--epochs",
                "1",
                "--train-limit",
                "128",
                "--eval-images",
                "0:10000:200",
                "--device",
                "cpu",
                "--quiet",
            ),
        ),
        what="one arm of the 1-bit channel with its diagnostics",
    ),  # fmt: skip
    Slice(
        "bon",
        (
            (
                "bon",
                "--demo",
                "--demo-questions",
                "3",
                "--demo-sizes",
                "4x3x2",
                "--n",
                "1:3",
                "--m",
                "1,2",
                "--r",
                "1,2",
                "--replicates",
                "10",
                "--quiet",
            ),
        ),
        what="best-of-N demo pools",
    ),  # fmt: skip
    Slice(
        "pools",
        (("pools", "generate", "--task", "humaneval", "--questions", "0:1", *POOLS),),
        what="SmolLM2 in-process, one HumanEval question",
    ),  # fmt: skip
    Slice("lib-solver", snippet=SNIPPET_SOLVER, what="solve_capabilities, 3 protocols x 3 rules"),
    Slice("lib-cellplay", snippet=SNIPPET_CELLPLAY, what="CellDebate move logs"),
    Slice("lib-sampled", snippet=SNIPPET_SAMPLED, what="sample_tree + solve_tree"),
)

#: Quick benchmarks for --bench: (name, script, arguments). Each runs well under a minute.
BENCHES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("bon", "bench_bon.py", ("--replicates", "100", "--repeats", "1")),
    ("allmask", "bench_allmask.py", ("--fast-images", "8", "--naive-images", "1")),
    ("mcts", "bench_mcts.py", ("--games", "18", "--rollouts", "30", "--pixels", "4")),
)

# ------------------------------------------------------------------------------------------
# checkouts and running


@dataclass
class Revision:
    label: str  # BEFORE / AFTER
    spec: str  # as given ("" = the working tree)
    sha: str | None  # None = the working tree
    root: Path  # the checkout whose src/ is imported
    cache: Path  # its fresh DEBATELAB_CACHE
    keep_results: bool  # kept results may be reused (committed, not the determinism twin)
    added: bool = False  # a worktree this script added (to remove)
    seconds: dict[str, float] = field(default_factory=dict)


def git(*args: str) -> str:
    done = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def checkout(label: str, spec: str, work: Path, keep_results: bool) -> Revision:
    """A worktree of ``spec`` (detached, under ``work``), or the working tree when ``spec`` is
    empty. The worktree is added lazily (``ensure_worktree``): kept results need none."""
    cache = work / f"cache-{label.lower()}"
    if not spec:
        return Revision(label, "working tree", None, REPO, cache, False)
    sha = git("rev-parse", "--verify", f"{spec}^{{commit}}")
    return Revision(label, spec, sha, work / f"tree-{label.lower()}", cache, keep_results)


def ensure_worktree(rev: Revision) -> None:
    if rev.sha is None or rev.added:
        return
    git("worktree", "add", "--detach", str(rev.root), rev.sha)
    rev.added = True


def remove_worktree(rev: Revision) -> None:
    if rev.added:
        git("worktree", "remove", "--force", str(rev.root))
        rev.added = False


def environment(rev: Revision) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEBATELAB_")}
    env.update(PYTHONPATH=str(rev.root / "src"), DEBATELAB_CACHE=str(rev.cache),
               DEBATELAB_OFFLINE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
               PYTHONHASHSEED="0")  # fmt: skip
    if "DEBATELAB_DATA" in os.environ:
        env["DEBATELAB_DATA"] = os.environ["DEBATELAB_DATA"]
    return env


def check_import(rev: Revision, cwd: Path) -> None:
    """The revision's own code must be imported (PYTHONPATH before the editable install)."""
    done = subprocess.run([sys.executable, "-c", "import debatelab; print(debatelab.__file__)"],
                          env=environment(rev), cwd=cwd, capture_output=True, text=True)  # fmt: skip
    where = Path(done.stdout.strip()).resolve()
    if done.returncode or not where.is_relative_to((rev.root / "src").resolve()):
        sys.exit(f"{rev.label}: debatelab imported from {where or done.stderr}, not {rev.root}")


def resolve(arg: str, out: Path) -> str:
    """``{checkpoint:I}``: the checkpoint named by command I's metrics.json."""
    match = re.fullmatch(r"\{checkpoint:(\d+)\}", arg)
    if not match:
        return arg
    return json.loads((out / match.group(1) / "metrics.json").read_text())["checkpoint"]


def run_slice(rev: Revision, piece: Slice, out: Path, cwd: Path) -> str | None:
    """Run the slice into ``out`` (fresh); returns an error text, or None when it succeeded."""
    env = environment(rev)
    out.mkdir(parents=True)
    if piece.snippet:
        steps = [[sys.executable, "-c", piece.snippet, str(out)]]
    else:
        steps = [[sys.executable, "-m", "debatelab", *command, "--out", str(out / str(i))]
                 for i, command in enumerate(piece.commands)]  # fmt: skip
    for step in steps:
        step = [resolve(a, out) for a in step]
        done = subprocess.run(step, env=env, cwd=cwd, capture_output=True, text=True)
        (out.parent / f"{out.name}.log").open("a").write(done.stdout + done.stderr)
        if done.returncode:
            return f"exit {done.returncode}: {(done.stderr or done.stdout).strip()[-400:]}"
    return None


def results_of(rev: Revision, piece: Slice, work: Path, cwd: Path) -> tuple[Path, float, str]:
    """The slice's output folder at ``rev`` and its seconds (kept results reused when allowed),
    or an error text."""
    kept = SCRATCH / "results" / (rev.sha or "") / f"{piece.name}-{piece.key()}"
    if rev.keep_results and (kept / "seconds.json").exists():
        return kept / "out", json.loads((kept / "seconds.json").read_text())["seconds"], ""
    ensure_worktree(rev)
    if not rev.seconds.get("__checked__"):
        check_import(rev, cwd)
        rev.seconds["__checked__"] = 1
    out = work / f"out-{rev.label.lower()}" / piece.name
    began = time.perf_counter()
    error = run_slice(rev, piece, out, cwd)
    seconds = time.perf_counter() - began
    if error:
        return out, seconds, error
    if rev.keep_results:  # keep it (atomically: copy, then rename)
        partial = kept.with_name(kept.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(out, partial / "out")
        (partial / "seconds.json").write_text(json.dumps({"seconds": seconds}))
        shutil.rmtree(kept, ignore_errors=True)
        partial.rename(kept)
    return out, seconds, ""


# ------------------------------------------------------------------------------------------
# comparing outputs

#: JSON keys that hold wall times, dates, library versions or where things ran: they differ
#: between any two runs (or checkouts) and carry no result. Judged per file from the outputs
#: of every slice: manifest.json (argv has the absolute --out, git_commit/git_dirty name the
#: checkout, started_at / wall_time_s the clock, platform / device / versions the machine);
#: metrics.json / history.json (wall_seconds, train_seconds, timings_s); run summaries of pools
#: (seconds spent on calls). Seeds, config and every number stay compared.
VOLATILE_KEYS = {
    "argv", "git_commit", "git_dirty", "started_at", "finished_at", "wall_time_s",
    "wall_seconds", "train_seconds", "timings_s", "seconds", "elapsed_s", "platform",
    "versions", "version", "device", "date", "time", "timestamp",
}  # fmt: skip
#: Keys holding a path, and any absolute path: only the file name must agree (the caches and
#: run folders differ; the cache's file names carry the settings' key).
PATH_KEYS = {"checkpoint", "judge_checkpoint", "debaters_checkpoint", "store", "run_folder"}
#: Pieces of text files (reports, logs) that hold times, dates or absolute paths: replaced by
#: "<volatile>" before the comparison (e.g. the study report's "wall time" column, "0.3 min");
#: a markdown report's "## Timings" section is cut off whole.
VOLATILE_TEXT = re.compile(
    r"\b\d+(\.\d+)?\s*(ms|s|min|h)\b|/(tmp|home|root|work)/\S*|\d{4}-\d\d-\d\dT[\d:.+]*"
)
#: File names never compared (none so far: even matplotlib's PNG figures are equal byte for
#: byte between runs; the per-slice logs live beside the run folders, not in them).
SKIP_FILES: set[str] = set()


#: Any other key naming a time (``stage_times_s``, ``eval_seconds``, ...) is volatile too.
VOLATILE_KEY = re.compile(r"(time|seconds|wall)", re.IGNORECASE)


def plain(obj):
    """JSON data without volatile keys, paths reduced to their file name."""
    if isinstance(obj, dict):
        return {k: (Path(v).name if isinstance(v, str) and (k in PATH_KEYS or v.startswith("/"))
                    else plain(v))
                for k, v in obj.items()
                if k not in VOLATILE_KEYS and not VOLATILE_KEY.search(k)}  # fmt: skip
    if isinstance(obj, list):
        return [plain(v) for v in obj]
    return obj


def json_diffs(a, b, path: str = "") -> list[str]:
    """Keys where two JSON values differ (floats exactly; NaN equals NaN)."""
    if isinstance(a, dict) and isinstance(b, dict):
        diffs = [f"{path}/{k}: only {'before' if k in a else 'after'}"
                 for k in sorted(set(a) ^ set(b))]  # fmt: skip
        for k in sorted(set(a) & set(b)):
            diffs += json_diffs(a[k], b[k], f"{path}/{k}")
        return diffs
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{path}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True))
                for d in json_diffs(x, y, f"{path}[{i}]")]  # fmt: skip
    both_nan = isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
    if a == b and type(a) is type(b) or both_nan:
        return []
    return [f"{path}: {a!r} vs {b!r}"[:160]]


def array_diffs(a: np.ndarray, b: np.ndarray, name: str) -> list[str]:
    if a.shape != b.shape or a.dtype != b.dtype:
        return [f"{name}: {a.shape} {a.dtype} vs {b.shape} {b.dtype}"]
    equal_nan = a.dtype.kind in "fc"
    if np.array_equal(a, b, equal_nan=equal_nan):
        return []
    if a.dtype.kind in "fciub":
        bad = np.argwhere(~((a == b) | ((a != a) & (b != b)) if equal_nan else a == b))
        first = tuple(bad[0]) if a.ndim else ()
        return [
            f"{name}: {len(bad)} entries differ, first at {first}: {a[first]!r} vs {b[first]!r}"
        ]
    return [f"{name}: differs"]


def text_of(path: Path) -> list[str]:
    text = path.read_text(errors="replace")
    if path.suffix == ".md":
        text = text.split("\n## Timings")[0]
    return [VOLATILE_TEXT.sub("<volatile>", line) for line in text.splitlines()]


def compare_file(a: Path, b: Path, name: str) -> list[str]:
    suffix = a.suffix
    if suffix == ".json":
        return [f"{name}{d}" for d in json_diffs(plain(json.loads(a.read_text())),
                                                   plain(json.loads(b.read_text())))]  # fmt: skip
    if suffix == ".npy":
        return array_diffs(np.load(a), np.load(b), name)
    if suffix == ".npz":
        with np.load(a) as x, np.load(b) as y:
            if sorted(x.files) != sorted(y.files):
                return [f"{name}: arrays {sorted(x.files)} vs {sorted(y.files)}"]
            return [d for k in sorted(x.files) for d in array_diffs(x[k], y[k], f"{name}:{k}")]
    if suffix == ".jsonl":
        rows = [[plain(json.loads(line)) for line in p.read_text().splitlines() if line.strip()]
                for p in (a, b)]  # fmt: skip
        return [f"{name}{d}" for d in json_diffs(*rows)]
    if suffix in (".md", ".csv", ".txt", ".log", ".html", ".svg"):
        x, y = text_of(a), text_of(b)
        if x == y:
            return []
        i = next(
            (i for i, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y))
        )
        return [f"{name}: line {i + 1} differs: {x[i] if i < len(x) else '<end>'!r}"[:200]]
    # anything else (PNG figures, checkpoints, zarr chunks): byte for byte
    return [] if a.read_bytes() == b.read_bytes() else [f"{name}: bytes differ"]


def compare_folders(a: Path, b: Path) -> tuple[int, list[str]]:
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    diffs = [f"{p}: only {'before' if p in files_a else 'after'}"
             for p in sorted(files_a ^ files_b)]  # fmt: skip
    common = sorted(p for p in files_a & files_b if p.name not in SKIP_FILES)
    for p in common:
        try:
            diffs += compare_file(a / p, b / p, str(p))
        except Exception as exc:  # an unreadable file is a difference, said as such
            diffs.append(f"{p}: cannot compare ({exc})")
    return len(common), diffs


# ------------------------------------------------------------------------------------------
# benchmarks


def bench(revs: list[Revision], repeats: int, cwd: Path) -> None:
    print(f"\nbenchmarks ({repeats} repeats each, alternating, one thread; seconds of the whole "
          "script, median):")  # fmt: skip
    print(f"| bench | {revs[0].label} s | {revs[1].label} s | {revs[1].label}/{revs[0].label} |")
    print("|---|---|---|---|")
    for name, script, args in BENCHES:
        times: dict[str, list[float]] = {r.label: [] for r in revs}
        failed = ""
        for _ in range(repeats):
            for rev in revs:
                ensure_worktree(rev)
                path = rev.root / "benchmarks" / script
                began = time.perf_counter()
                # an empty cache: benchmarks that look for a trained judge use random weights
                env = {**environment(rev), "DEBATELAB_CACHE": str(cwd / "bench-cache")}
                done = subprocess.run([sys.executable, str(path), *args], env=env,
                                      cwd=cwd, capture_output=True, text=True)  # fmt: skip
                times[rev.label].append(time.perf_counter() - began)
                if done.returncode:
                    failed = f"{rev.label} failed: {done.stderr.strip()[-200:]}"
        if failed:
            print(f"| {name} | - | - | {failed} |")
            continue
        before, after = (statistics.median(times[r.label]) for r in revs)
        print(f"| {name} | {before:.2f} | {after:.2f} | {after / before:.3f} |")


# ------------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", help="git revision (BEFORE)")
    parser.add_argument("after", nargs="?", default="", help="git revision (default: working tree)")
    parser.add_argument("--only", default="", help="comma-separated slice names")
    parser.add_argument("--bench", action="store_true", help="also time the quick benchmarks")
    parser.add_argument("--repeats", type=int, default=3, help="benchmark repeats (--bench)")
    parser.add_argument("--keep", type=Path, help="copy both sides' outputs into this folder")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n]
    unknown = set(names) - {s.name for s in SLICES}
    if unknown:
        parser.error(f"unknown slice(s) {sorted(unknown)}; known: {[s.name for s in SLICES]}")
    slices = [s for s in SLICES if not names or s.name in names]

    SCRATCH.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=SCRATCH))
    cwd = work / "cwd"  # outside the repository: python -m debatelab imports PYTHONPATH's code
    cwd.mkdir()
    before = checkout("BEFORE", args.before, work, keep_results=True)
    after = checkout("AFTER", args.after, work, keep_results=True)
    if after.sha is not None and after.sha == before.sha:
        after.keep_results = False  # the same commit twice: compute it again (determinism)
    revs = [before, after]
    for rev in revs:
        print(f"{rev.label}: {rev.spec} ({rev.sha or 'uncommitted changes included'})")
    status = 0
    try:
        print(f"\n| slice | files | result | {before.label} s | {after.label} s |")
        print("|---|---|---|---|---|")
        total = {r.label: 0.0 for r in revs}
        for piece in slices:
            outs = []
            for rev in revs:
                out, seconds, error = results_of(rev, piece, work, cwd)
                total[rev.label] += seconds
                outs.append((out, seconds, error))
                if args.keep:
                    shutil.copytree(out, args.keep / rev.label.lower() / piece.name,
                                    dirs_exist_ok=True)  # fmt: skip
            errors = [f"{r.label} {e}" for r, (_, _, e) in zip(revs, outs, strict=True) if e]
            if errors:
                n, verdict = 0, "FAILED: " + "; ".join(errors).replace("\n", " ")
            else:
                n, diffs = compare_folders(outs[0][0], outs[1][0])
                more = f" (+{len(diffs) - 3} more)" if len(diffs) > 3 else ""
                verdict = "EQUAL" if not diffs else "DIFFERENT: " + "; ".join(diffs[:3]) + more
            status |= verdict != "EQUAL"
            print(f"| {piece.name} | {n} | {verdict} | {outs[0][1]:.1f} | {outs[1][1]:.1f} |",
                  flush=True)  # fmt: skip
        print(f"| total | | | {total[before.label]:.1f} | {total[after.label]:.1f} |")
        if args.bench:
            bench(revs, args.repeats, cwd)
    finally:
        for rev in revs:
            remove_worktree(rev)
        shutil.rmtree(work, ignore_errors=True)
    print("\nALL EQUAL" if status == 0 else "\nDIFFERENCES FOUND")
    return status


if __name__ == "__main__":
    sys.exit(main())
