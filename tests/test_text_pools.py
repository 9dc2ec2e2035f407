"""Pool schema, readers and validation errors."""

import csv
import json

import numpy as np
import pytest

from debatelab.text.pools import PoolError, PoolSet, QuestionPool
from debatelab.text.readers import pools_from_records, read_pools, write_pools
from debatelab.text.synthetic import SyntheticConfig, synthetic_pools

SMALL = SyntheticConfig(n_questions=3, n_proposals=4, n_critiques=3, n_rebuttals=2)


def _same(a: PoolSet, b: PoolSet):
    assert len(a) == len(b)
    for qa in a:
        qb = next(q for q in b if q.question_id == qa.question_id and q.arm == qa.arm)
        order = [qb.proposal_ids.index(p) for p in qa.proposal_ids]
        assert np.array_equal(qa.correct, qb.correct[order])
        assert set(qa.scores) == set(qb.scores)
        for proto, arr in qa.scores.items():
            other = qb.scores[proto][order]
            # critiques and rebuttals may come back in another order within their parent
            assert np.allclose(np.sort(arr.reshape(arr.shape[0], -1), axis=1),
                               np.sort(other.reshape(arr.shape[0], -1), axis=1))  # fmt: skip
            assert arr.shape == other.shape
            assert np.allclose(np.sort(qa.tokens[proto].ravel()),
                               np.sort(qb.tokens[proto].ravel()))  # fmt: skip


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".parquet"])
def test_round_trip_through_every_format(tmp_path, suffix):
    if suffix == ".parquet":
        pytest.importorskip("pyarrow")
    pools = synthetic_pools(SMALL, seed=1)
    path = write_pools(pools, tmp_path / f"pools{suffix}")
    back = read_pools(path)
    _same(pools, back)
    assert back.arms == ("control", "main") or set(back.arms) == {"main", "control"}
    assert back.protocols("main") == ("proposal", "critique", "rebuttal")
    assert back.protocols("control") == ("proposal",)


def _nested_question(qid="q1", arm=None):
    q = {"question_id": qid, "proposals": [
        {"id": f"p{i}", "correct": i % 2 == 0, "score": 0.1 * (i + 1), "tokens": 100,
         "critiques": [{"id": f"c{j}", "score": 0.2 + 0.1 * j, "tokens": 50,
                        "rebuttals": [{"id": f"r{k}", "score": 0.3 + 0.05 * k, "tokens": 20}
                                      for k in range(2)]}
                       for j in range(3)]}
        for i in range(4)]}  # fmt: skip
    if arm:
        q["arm"] = arm
    return q


def test_nested_jsonl(tmp_path):
    path = tmp_path / "pools.jsonl"
    path.write_text("\n".join(json.dumps(q) for q in
                              [_nested_question("q1"), _nested_question("q2"),
                               _nested_question("q1", arm="control")]) + "\n")  # fmt: skip
    pools = read_pools(path)
    q = next(q for q in pools if q.question_id == "q2")
    assert q.scores["proposal"].shape == (4,)
    assert q.scores["critique"].shape == (4, 3)
    assert q.scores["rebuttal"].shape == (4, 3, 2)
    assert list(q.correct) == [1, 0, 1, 0]
    assert q.tokens["rebuttal"][0, 0, 0] == 170 and q.tokens["critique"][0, 0] == 150
    assert pools.question_ids("control") == ("q1",)


def _rows():
    return [{"question_id": "q", "proposal_id": f"p{i}", "critique_id": f"c{j}",
             "score": 0.5, "correct": 1} for i in range(3) for j in range(2)]  # fmt: skip


@pytest.mark.parametrize("mutate,message", [
    (lambda r: r[0].update(score=1.2), "outside"),
    (lambda r: r[0].update(score=-0.1), "outside"),
    (lambda r: r[0].update(score=float("nan")), "NaN"),
    (lambda r: r[0].update(correct=None), "correctness is missing"),
    (lambda r: r[0].update(correct=""), "correctness is missing"),
    (lambda r: r.pop(), "ragged"),
    (lambda r: r.append(dict(r[0])), "duplicate leaf"),
    (lambda r: r[1].update(correct=0), "conflicting correctness"),
    (lambda r: r[0].update(critique_id="", rebuttal_id="x"), "needs a critique_id"),
    (lambda r: r[0].update(score="high"), "not a number"),
    (lambda r: r.clear(), "no rows"),
])  # fmt: skip
def test_validation_errors(mutate, message):
    rows = _rows()
    mutate(rows)
    with pytest.raises(PoolError, match=message):
        pools_from_records(rows)


def test_ragged_rebuttals_and_missing_protocol_leaves():
    rows = [{"question_id": "q", "proposal_id": f"p{i}", "critique_id": f"c{j}",
             "rebuttal_id": f"r{k}", "score": 0.5, "correct": 0}
            for i in range(2) for j in range(2) for k in range(3)]  # fmt: skip
    rows.pop()
    with pytest.raises(PoolError, match="ragged 'rebuttal' pool"):
        pools_from_records(rows)
    rows = _rows() + [{"question_id": "q", "proposal_id": "p0", "score": 0.4, "correct": 1}]
    with pytest.raises(PoolError, match=r"ragged pool: proposal\(s\) \['p1', 'p2'\]"):
        pools_from_records(rows)


def test_array_level_validation():
    with pytest.raises(PoolError, match="empty"):
        QuestionPool("q", correct=np.ones(2), scores={"critique": np.zeros((2, 0))})
    with pytest.raises(PoolError, match="ragged pools are not supported"):
        QuestionPool("q", correct=np.ones(2),
                     scores={"critique": np.array([[0.1, 0.2], [0.3]], dtype=object)})  # fmt: skip
    with pytest.raises(PoolError, match="duplicate proposal ids"):
        QuestionPool("q", correct=np.ones(2), scores={"proposal": [0.1, 0.2]},
                     proposal_ids=("a", "a"))  # fmt: skip
    with pytest.raises(PoolError, match="correctness is missing"):
        QuestionPool("q", correct=[1, np.nan], scores={"proposal": [0.1, 0.2]})
    with pytest.raises(PoolError, match="non-empty"):
        QuestionPool("q", correct=[], scores={"proposal": []})
    q = QuestionPool("q", correct=[1, 0], scores={"proposal": [0.1, 0.2]})
    with pytest.raises(PoolError, match="duplicate question ids"):
        PoolSet((q, q))
    with pytest.raises(PoolError, match="unknown protocol"):
        QuestionPool("q", correct=[1, 0], scores={"debate": [0.1, 0.2]})


def test_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_pools(tmp_path / "missing.csv")
    bad = tmp_path / "pools.txt"
    bad.write_text("x")
    with pytest.raises(PoolError, match="unknown pool format"):
        read_pools(bad)
    csv_path = tmp_path / "pools.csv"
    with open(csv_path, "w", newline="") as fh:
        csv.writer(fh).writerows([["question_id", "proposal_id", "score"], ["q", "p", "0.5"]])
    with pytest.raises(PoolError, match="missing column"):
        read_pools(csv_path)
    jl = tmp_path / "pools.jsonl"
    jl.write_text('{"question_id": "q", "proposals": [{"id": "p", "correct": 1}]}\n')
    with pytest.raises(PoolError, match="no scored leaf"):
        read_pools(jl)
    jl.write_text("{not json}\n")
    with pytest.raises(PoolError, match="not valid JSON"):
        read_pools(jl)


def test_questions_of_different_sizes_are_allowed():
    rows = _rows() + [{"question_id": "q2", "proposal_id": "a", "critique_id": "c",
                       "score": 0.3, "correct": "true"}]  # fmt: skip
    pools = pools_from_records(rows)
    assert pools.stacked("main", "critique")[0][1].shape in ((1, 3, 2), (1, 1, 1))
    assert len(pools.stacked("main", "critique")) == 2


def test_judge_auc_is_the_pairwise_win_fraction_of_right_leaves_over_wrong_ones():
    from debatelab.text.pools import PoolSet, QuestionPool, judge_auc

    rng = np.random.default_rng(3)
    questions = []
    for q in range(4):
        correct = np.array([1.0, 0.0, 1.0, 0.0, 0.5])  # the partial one is left out
        scores = rng.integers(0, 5, size=(5, 3)) / 4  # ties on purpose
        questions.append(QuestionPool(f"q{q}", correct, {"critique": scores}))
    pools = PoolSet(tuple(questions))
    right = np.concatenate([q.scores["critique"][q.correct == 1].ravel() for q in questions])
    wrong = np.concatenate([q.scores["critique"][q.correct == 0].ravel() for q in questions])
    pairs = [(a > b) + 0.5 * (a == b) for a in right for b in wrong]  # by definition
    assert judge_auc(pools, "main", "critique") == pytest.approx(np.mean(pairs), abs=1e-12)
    assert judge_auc(pools, "main", "critique", ["q0"]) == pytest.approx(np.mean(
        [(a > b) + 0.5 * (a == b) for a in questions[0].scores["critique"][[0, 2]].ravel()
         for b in questions[0].scores["critique"][[1, 3]].ravel()]))  # fmt: skip
    all_right = PoolSet((QuestionPool("q", np.ones(2), {"proposal": np.array([0.2, 0.7])}),))
    assert judge_auc(all_right, "main", "proposal") is None
