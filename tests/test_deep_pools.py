"""Debates of any depth (proposal, critique, rebuttal, critique, ...): the nested best-of-n
solve of the game core against brute-force enumeration of every draw on small pools."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from conftest import needs_model
from debatelab.games.core import pool_game, pool_level_name, solve_pool
from debatelab.policies import BestOfN


def brute_force(scores: np.ndarray, correct: np.ndarray, draws: list[int]):
    """Win rate and accuracy by definition: at each node, every ordered tuple of ``draws``
    children drawn with replacement is equally likely; the player takes the best of its draw
    (maximising at even depths, minimising at odd), the proposer's pick carries correctness."""

    def value(node: np.ndarray, depth: int) -> float:
        if node.ndim == 0:
            return float(node)
        values = [value(child, depth + 1) for child in node]
        pick = max if depth % 2 == 0 else min
        tuples = list(itertools.product(range(len(values)), repeat=draws[depth]))
        return sum(pick(values[i] for i in t) for t in tuples) / len(tuples)

    values = [value(scores[i], 1) for i in range(len(scores))]
    tuples = list(itertools.product(range(len(values)), repeat=draws[0]))
    win = acc = 0.0
    for t in tuples:
        best = max(t, key=lambda i: values[i])  # scores are distinct: no ties
        win += values[best]
        acc += correct[best]
    return win / len(tuples), acc / len(tuples)


@pytest.mark.parametrize("shape, draws", [((3, 2, 2, 2), [2, 2, 1, 2]),
                                          ((2, 2, 2, 2, 2), [2, 1, 2, 2, 1]),
                                          ((3, 2, 1, 2, 2, 2), [1, 2, 1, 2, 2, 2])])  # fmt: skip
def test_deep_pools_solve_as_enumeration_says(shape, draws):
    rng = np.random.default_rng(len(shape))
    scores = rng.permutation(np.prod(shape)).reshape(shape) / np.prod(shape)  # distinct values
    correct = rng.integers(0, 2, size=shape[0]).astype(float)
    solution = solve_pool(scores, correct, [BestOfN(d) for d in draws])
    win, acc = brute_force(scores, correct, draws)
    assert float(solution.root_value[0]) == pytest.approx(win, abs=1e-12)
    assert float(solution.root_carried[0]) == pytest.approx(acc, abs=1e-12)


def test_deep_pool_levels_are_named_and_counted():
    assert [pool_level_name(d) for d in range(6)] == [
        "proposals", "critiques", "rebuttals", "critiques2", "rebuttals2", "critiques3"]  # fmt: skip
    game = pool_game((2, 2, 2, 2), counts={"critiques2": np.ones((2, 2, 2, 2))})
    assert len(game.levels) == 4 and [lv.maximize for lv in game.levels] == [
        True,
        False,
        True,
        False,
    ]
    with pytest.raises(ValueError, match="unknown pool level"):
        pool_game((2, 2), counts={"rebuttals": np.ones((2, 2))})


# -- the text pools of any depth: fast path, files, bootstrap, generation ----------------------


def materialise(scores: np.ndarray, counts: dict[str, np.ndarray]) -> np.ndarray:
    """The resampled pool itself: at every level each child repeated as often as its count
    says (the straightforward path the multiplicities stand for)."""

    def build(node: np.ndarray, path: tuple[int, ...]) -> np.ndarray:
        if node.ndim == 0:
            return node
        level = counts.get(pool_level_name(len(path)))
        reps = np.ones(len(node), int) if level is None else level[path]
        return np.stack(
            [build(node[i], path + (i,)) for i in np.repeat(np.arange(len(node)), reps)]
        )

    return build(scores, ())


@pytest.mark.parametrize("shape", [(4, 3, 2, 3), (3, 2, 3, 2, 2), (3, 2, 2, 2, 2, 2)])
def test_the_fast_sweep_equals_the_core_solve_at_any_depth(shape):
    from debatelab.policies import TopK
    from debatelab.text.bootstrap import _counts
    from debatelab.text.solve import nested_best_of_n, sweep_arrays

    rng = np.random.default_rng(sum(shape))
    groups = 3
    scores = rng.random((groups, *shape)).round(1)  # ties on purpose
    correct = rng.integers(0, 2, (groups, shape[0])).astype(float)
    n, m, r = [BestOfN(1), BestOfN(3), TopK(2)], [BestOfN(1), BestOfN(2)], [BestOfN(1), BestOfN(4)]
    counts = {
        pool_level_name(d): _counts(rng, (groups, *shape[: d + 1])) for d in range(len(shape))
    }
    for with_counts in (False, True):
        acc, win, _ = sweep_arrays(scores, correct, n, m, r,
                                   counts=counts if with_counts else None)  # fmt: skip
        assert acc.shape == (groups, 3, 2, 2)
        for g, (a, pn), (b, pm), (c, pr) in itertools.product(
                range(groups), enumerate(n), enumerate(m), enumerate(r)):  # fmt: skip
            pool, corr = scores[g], correct[g]
            if with_counts:  # the resample built out, proposals with their correctness
                pool = materialise(pool, {k: v[g] for k, v in counts.items()})
                corr = np.repeat(corr, counts["proposals"][g])
            want = nested_best_of_n(pool, corr, pn, pm, pr)
            assert acc[g, a, b, c] == pytest.approx(want.accuracy, abs=1e-12)
            assert win[g, a, b, c] == pytest.approx(want.win_rate, abs=1e-12)


def deep_pool_set(depth: int, sizes=(3, 2, 2), seed=0):
    from debatelab.text.pools import PoolSet, QuestionPool, level_sizes, protocol_at_depth

    rng = np.random.default_rng(seed)
    questions = []
    for q in range(3):
        scores = {protocol_at_depth(d): rng.random(level_sizes(*sizes, d))
                  for d in range(1, depth + 1)}  # fmt: skip
        tokens = {p: rng.integers(10, 90, s.shape).astype(float) for p, s in scores.items()}
        questions.append(QuestionPool(f"q{q}", rng.integers(0, 2, sizes[0]).astype(float),
                                      scores, tokens=tokens))  # fmt: skip
    return PoolSet(tuple(questions))


def test_deep_pools_are_named_shaped_and_round_trip_through_files(tmp_path):
    from debatelab.text.pools import PoolError, protocol_depth, protocol_name
    from debatelab.text.readers import read_pools, write_pools

    assert [protocol_name(p) for p in ("critique1", "Critique2", "rebuttal2", "rebuttal3")] == [
        "critique", "critique2", "rebuttal2", "rebuttal3"]  # fmt: skip
    assert [protocol_depth(p) for p in ("critique2", "rebuttal2", "critique3")] == [4, 5, 6]
    with pytest.raises(PoolError, match="later round's critique2"):
        protocol_name("critique0")
    pools = deep_pool_set(5)
    assert pools.protocols() == ("proposal", "critique", "rebuttal", "critique2", "rebuttal2")
    assert pools.questions[0].shape("rebuttal2") == (3, 2, 2, 2, 2)
    for suffix in ("csv", "jsonl"):
        back = read_pools(write_pools(pools, tmp_path / f"deep.{suffix}"))
        for q, b in zip(pools, back, strict=True):
            for proto in q.scores:
                np.testing.assert_array_equal(b.scores[proto], q.scores[proto])
                np.testing.assert_array_equal(b.tokens[proto], q.tokens[proto])
    # the nested form, as `pools generate` writes it: a rebuttal's critiques, their rebuttals
    nested = {"question_id": "q", "proposals": [
        {"id": str(i), "correct": i % 2, "critiques": [
            {"id": "0", "rebuttals": [{"id": "0", "critiques": [
                {"id": str(j), "score": 0.1 * (i + j + 1)} for j in range(2)]}]}]}
        for i in range(2)]}  # fmt: skip
    path = tmp_path / "nested.jsonl"
    path.write_text(json.dumps(nested) + "\n")
    read = read_pools(path).questions[0]
    assert list(read.scores) == ["critique2"]
    np.testing.assert_allclose(read.scores["critique2"][:, 0, 0, :], [[0.1, 0.2], [0.2, 0.3]])
    nested["proposals"][1]["critiques"][0]["rebuttals"][0]["critiques"].pop()
    path.write_text(json.dumps(nested) + "\n")
    with pytest.raises(PoolError, match="ragged 'critique2' pool: each rebuttal must have the "
                                        "same number of critiques2, found between 1 and 2"):  # fmt: skip
        read_pools(path)
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,proposal_id,critique_id,rebuttal_id,critique2_id,score,correct\n"
                   "q,p,c,,c2,0.5,1\n")  # fmt: skip
    with pytest.raises(PoolError, match="row 1: a critique2_id needs a rebuttal_id"):
        read_pools(bad)


def test_the_bootstrap_resamples_later_rounds_with_their_kind():
    from debatelab.text.bootstrap import BootstrapConfig, bootstrap
    from debatelab.text.pools import PoolSet, QuestionPool
    from debatelab.text.sweeps import SweepSpec

    # only the second critiques differ: resampling 'critiques' moves the estimate, resampling
    # proposals (all alike) or rebuttals (one each) does not
    scores = np.full((2, 1, 1, 4), 0.5)
    scores[..., 0] = 0.1
    q = QuestionPool("q", np.array([1.0, 1.0]), {"critique2": scores})
    pools = PoolSet((q,))
    spec = SweepSpec("critique2", n=(1,), m=(1,), r=(1,))
    spread = {}
    for levels in (("critiques",), ("proposals", "rebuttals")):
        res = bootstrap(pools, [spec], BootstrapConfig(replicates=200, levels=levels), seed=1)
        spread[levels[0]] = float(np.std(res.replicates[(0, "win_rate")]))
        assert res.estimate[(0, "win_rate")][0, 0, 0] == pytest.approx(0.4)
    assert spread["critiques"] > 0.05 and spread["proposals"] == 0.0


def test_a_deep_debate_is_generated_turn_by_turn_and_counted_before_any_call(tmp_path):
    from debatelab.llm.cache import CallCache
    from debatelab.llm.generate import PoolGenerator, PoolPlan, load_templates
    from debatelab.llm.tasks import code_file_task
    from debatelab.text.readers import read_pools
    from test_llm_pools import ScriptedModel

    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps({"id": "add", "prompt": "Write add(a, b).",
                                "tests": "assert add(2, 3) == 5"}) + "\n")  # fmt: skip
    task = code_file_task(path)
    plan = PoolPlan(n=2, m=2, r=1, depth=5, control=True)
    # calls: 2 proposals, 4 critiques, 4 rebuttals, 8 second critiques, 8 second rebuttals
    assert plan.calls() == {"proposer": 2, "critic": 12, "rebuttal": 12, "judge": 28, "control": 2}
    model = ScriptedModel()
    prompts = []
    chat = model.chat
    model.chat = lambda messages, **kw: (
        prompts.append(messages[-1]["content"]),
        chat(messages, **kw),
    )[1]
    cache = CallCache(tmp_path / "calls.sqlite")
    gen = PoolGenerator(task, model, model, plan, cache, load_templates())
    try:
        pools, text = gen.question(task.questions()[0])
    finally:
        gen.close()
    made = {role: c["calls_made"] for role, c in cache.counts.items()}
    assert made == plan.calls()
    # a second-round critique reads the whole debate before it, under its headings
    shown = text["arms"]["main"][1]["critiques"][0]["rebuttals"][0]
    later = [p for p in prompts if "Proposer's rebuttal:\n" + shown["text"] in p
             and "debate about a proposed solution" in p]  # fmt: skip
    assert len(later) == 2 and all(text["arms"]["main"][1]["text"] in p for p in later)
    pool = read_pools(_write(tmp_path / "pools.jsonl", pools))
    main = next(q for q in pool if q.arm == "main")
    assert [main.shape(p) for p in main.scores] == [(2,), (2, 2), (2, 2, 1), (2, 2, 1, 2),
                                                    (2, 2, 1, 2, 1)]  # fmt: skip


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_bon_reports_every_round_of_a_deep_pool_file(tmp_path):
    from click.testing import CliRunner

    from debatelab.cli import main
    from debatelab.text.readers import write_pools
    from debatelab.text.sweeps import worm

    pools = deep_pool_set(5)
    path = write_pools(pools, tmp_path / "deep.csv")
    out = tmp_path / "bon"
    result = CliRunner().invoke(main, ["bon", str(path), "--n", "1:3", "--m", "1,2", "--r", "1",
                                       "--replicates", "20", "--quiet", "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    for proto in ("critique2", "rebuttal2"):
        want = worm(pools, proto, n=(3,), m=1, r=1).mean()[0, 0, 0]
        assert metrics[f"{proto}/accuracy@Bo3"]["estimate"] == pytest.approx(want)
    report = (out / "report.md").read_text()
    assert "| main: rebuttal2 - critique2 at Bo3 |" in report
    assert "| critique2: critic Bo2 - Bo1 at Bo3 |" in report


@needs_model
def test_a_deep_debate_with_smollm2_end_to_end(tmp_path, monkeypatch):
    """`pools generate --protocol critique2` with the real model: the dry run's counts are the
    calls made, and a second critique's score is the judge's verdict on the four-turn
    transcript, recomputed here with the model."""
    from click.testing import CliRunner

    from debatelab.cli import main
    from debatelab.llm.backends import ModelOptions, load_model, verdict_score
    from debatelab.llm.generate import load_templates, transcript

    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    args = ["pools", "generate", "--task", "gym:products,min_digits=1,max_digits=1",
            "--questions", "0:1", "--protocol", "critique2", "--n", "1", "--m", "1", "--r", "1",
            "--proposal-tokens", "24", "--critique-tokens", "24", "--rebuttal-tokens", "24",
            "--temperature", "0.7", "--out", str(out)]  # fmt: skip
    dry = CliRunner().invoke(main, [*args, "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "1 proposer calls, 2 critic calls, 1 rebuttal calls, 4 judge calls" in dry.output
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert [metrics[f"{role}_calls_made"] for role in ("proposer", "critic", "rebuttal", "judge")] \
        == [1, 2, 1, 4]  # fmt: skip
    record = json.loads((out / "transcripts.jsonl").read_text().splitlines()[0])
    pool = json.loads((out / "pools.jsonl").read_text().splitlines()[0])
    judge = load_model(None, ModelOptions())
    template = load_templates()["judge"]
    for prop, scored in zip(record["arms"]["main"], pool["proposals"], strict=True):
        crit = prop["critiques"][0]
        reb = crit["rebuttals"][0]
        later = reb["critiques"][0]
        text = transcript(prop["text"], crit["text"], reb["text"], later["text"])
        assert "Critique (round 2):" in text
        reply = judge.verdict([{"role": "user", "content": template.format(
            question=record["question"], transcript=text, options="Yes or No")}],
            ("Yes", "yes", "No", "no"))  # fmt: skip
        want = verdict_score(reply.logprobs, ("Yes", "yes"), ("No", "no"))
        got = scored["critiques"][0]["rebuttals"][0]["critiques"][0]["score"]
        assert got == pytest.approx(want, abs=1e-6)
