"""reasoning-gym tasks (checkers on known right and wrong answers), the study's question
selection (pilot + accuracy filter), the chain-of-thought judge, and in-process model copies."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from conftest import needs_model
from debatelab.cli import main
from debatelab.llm.backends import LlamaCppModel
from debatelab.llm.generate import cot_verdict
from debatelab.llm.tasks import load_task, parse_task

pytest.importorskip("reasoning_gym")


@pytest.mark.parametrize("spec", ["gym:products,min_digits=1,max_digits=1,size=20",
                                  "gym:basic_arithmetic,size=20", "gym:chain_sum,size=20",
                                  "gym:gsm_symbolic,size=10"])  # fmt: skip
def test_the_generators_checker_grades_known_right_and_wrong_answers(spec):
    task = load_task(spec)
    assert len(task.questions()) in (10, 20)
    for q in task.questions():
        truth = str(task.entry(q)["answer"])
        # the true answer, written the ways a model writes it, is right
        for text in (f"Answer: {truth}", f"<answer>{truth}</answer>",
                     f"Let me think.\nThe answer is: {truth}."):  # fmt: skip
            answer = task.answer(q, text)
            assert answer is not None and task.verify(q, answer) == 1.0, (q.prompt, text)
        # a different number is wrong
        wrong = str(int(float(truth)) + 1)
        assert task.verify(q, task.answer(q, f"Answer: {wrong}")) == 0.0
    q = task.questions()[0]
    assert task.answer(q, "I do not know.") is None


def test_a_bare_number_counts_for_numeric_answers():
    task = load_task("gym:products,min_digits=1,max_digits=1,size=5")
    q = task.questions()[0]
    truth = task.entry(q)["answer"]
    assert task.verify(q, task.answer(q, f"I think it is {truth}")) == 1.0
    assert task.answer(q, "3 * 4 = 12, so the final result: 12") == "12"


def test_gym_specs_are_checked_before_any_work():
    with pytest.raises(ValueError, match="needs gym:NAME"):
        parse_task("gym")
    with pytest.raises(ValueError, match="no generator 'nosuch'"):
        load_task("gym:nosuch")
    with pytest.raises(ValueError, match="is not KEY=VALUE"):
        load_task("gym:products,min_digits")
    with pytest.raises(ValueError, match="refused its settings"):
        load_task("gym:products,no_such_setting=3")
    # same settings, same questions (the generator's seed)
    a, b = (load_task("gym:products,size=5,seed=3") for _ in range(2))
    assert [q.prompt for q in a.questions()] == [q.prompt for q in b.questions()]


def test_cot_verdicts_are_read_from_the_last_verdict():
    yes, no = ("Yes", "yes"), ("No", "no")
    assert cot_verdict("It is wrong... no wait. Verdict: Yes", yes, no) is True
    assert cot_verdict("Verdict: no.", yes, no) is False
    assert cot_verdict("yes it is, no it is not", yes, no) is False
    assert cot_verdict("I cannot tell.", yes, no) is None


@needs_model
def test_the_pilot_keeps_the_questions_in_range_and_pools_only_them(tmp_path, monkeypatch):
    monkeypatch.setenv("DEBATELAB_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    args = ["pools", "generate", "--task", "gym:products,min_digits=1,max_digits=1",
            "--questions", "0:6", "--pilot", "4", "--keep", "0:0.75", "--protocol", "proposal",
            "--n", "2", "--temperature", "0.7", "--proposal-tokens", "24",
            "--judge-samples", "3", "--judge-tokens", "40", "--out", str(out)]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    selection = json.loads((out / "selection.json").read_text())
    assert selection["attempts"] == 4 and selection["candidates_tried"] == 6
    rows = selection["questions"]
    for row in rows:
        assert len(row["correct"]) == 4
        assert row["accuracy"] == pytest.approx(sum(row["correct"]) / 4)
        assert row["kept"] == (0 < row["accuracy"] <= 0.75)
    kept = [r["question_id"] for r in rows if r["kept"]]
    pools = [json.loads(x) for x in (out / "pools.jsonl").read_text().splitlines()]
    assert kept and [p["question_id"] for p in pools] == kept
    assert selection["complete"] is True
    # a pilot cut after two candidates resumes from its record and selects the same questions
    cut = {**selection, "complete": False, "questions": rows[:2], "candidates_tried": 2}
    (out / "selection.json").write_text(json.dumps(cut))
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0, again.output
    assert json.loads((out / "selection.json").read_text())["questions"] == rows
    assert (out / "pools.jsonl").read_text().splitlines() == [json.dumps(p, sort_keys=True)
                                                              for p in pools]  # fmt: skip
    # the pilot's draws are not the pools' proposals (their own sample paths and seeds)
    transcripts = [json.loads(x) for x in (out / "transcripts.jsonl").read_text().splitlines()]
    assert selection["usage"]["pilot"][1] > 0
    # the chain-of-thought judge: each leaf's score is the fraction of its 3 verdicts saying yes
    from debatelab.llm.cache import CallCache, call_key
    from debatelab.llm.generate import load_templates, sample_seed  # noqa: F401

    templates = load_templates()
    cache = CallCache(tmp_path / "cache" / "llm" / "calls.sqlite")
    import hashlib

    from debatelab.llm.backends import smollm2_path
    from debatelab.llm.generate import hash_path, transcript

    name = f"llamacpp:{smollm2_path().name}:{smollm2_path().stat().st_size}"
    settings = {"temperature": 0.7, "max_tokens": 40, "seed": 0}
    checked = 0
    for t in transcripts:
        for prop in t["arms"]["main"]:
            text = transcript(prop["text"])
            messages = [{"role": "user", "content": templates["judge_cot"].format(
                question=t["question"], transcript=text)}]  # fmt: skip
            leaf = int.from_bytes(hashlib.sha256(text.encode()).digest()[:6], "little")
            said = []
            for k in range(3):
                reply = cache.get(call_key(name, "chat", messages, settings, hash_path((leaf, k))))
                assert reply is not None  # each of the K verdicts is its own cached call
                said.append(cot_verdict(reply.text, ("Yes", "yes"), ("No", "no")))
            given = [v for v in said if v is not None]
            want = sum(given) / len(given) if given else 0.5
            assert prop["score"] == pytest.approx(want)
            checked += 1
    cache.close()
    assert checked == 2 * len(kept)


@needs_model
def test_model_copies_give_the_replies_of_one(tmp_path):
    from debatelab.llm.backends import smollm2_path

    prompts = [f"Name a colour that starts with {c}." for c in "BGRY"]

    def ask(model, i):
        return model.chat([{"role": "user", "content": prompts[i]}], temperature=0.8,
                          max_tokens=12, seed=100 + i).text  # fmt: skip

    one = LlamaCppModel(smollm2_path(), n_ctx=1024)
    alone = [ask(one, i) for i in range(4)]
    two = LlamaCppModel(smollm2_path(), n_ctx=1024, copies=2)
    assert two.concurrency == 2
    with ThreadPoolExecutor(4) as pool:
        side_by_side = list(pool.map(lambda i: ask(two, i), range(4)))
    assert side_by_side == alone
