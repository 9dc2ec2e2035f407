"""The on-policy judge designs (docs/trained-judges.md#designs): input encodings, the claim-aware
head's all-queries path against one forward per query, and the published checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from debatelab.games.sampled import group_codes, sample_tree, slot_groups
from debatelab.games.sampled_play import check_judge
from debatelab.geometry import Grid
from debatelab.judges.onpolicy import (
    ClaimJudgeCNN,
    OnPolicyJudge,
    encode,
    load_published_judge,
    make_model,
    parse_published_name,
)

PUBLISHED = Path(__file__).resolve().parents[2] / "shared" / "published-judges"
GRID = Grid(18, 6)


def test_encode_puts_each_group_on_its_own_cells():
    gen = torch.Generator().manual_seed(0)
    images = torch.randn(3, 2, 18, 18, generator=gen)
    codes = torch.zeros(3, 36, dtype=torch.long)
    codes[0, [0, 7]] = 1
    codes[0, [35]] = 2
    codes[1, 14] = 3
    x = encode(images, codes, 3, GRID)
    assert x.shape == (3, 6, 18, 18)
    pix = GRID.pixel_masks(torch.eye(36)[[0, 7]].sum(0, keepdim=True).bool())[0, 0]
    assert torch.equal(x[0, 0:2], images[0] * pix)
    assert torch.equal(x[0, 2:4], images[0] * GRID.pixel_masks(torch.eye(36)[[35]].bool())[0, 0])
    assert torch.equal(x[0, 4:6], torch.zeros(2, 18, 18))
    assert torch.count_nonzero(x[1, :4]) == 0 and torch.count_nonzero(x[1, 4:]) > 0
    assert torch.count_nonzero(x[2]) == 0


@pytest.mark.parametrize("queries,n_out", [(1, 10), (2, 10), (1, 1), (2, 1)])
def test_query_scores_equal_one_forward_per_query(queries, n_out):
    """Every (d_A[, d_B]) at once equals the head's forward on that query: D3 its softmax at
    d_A, D2 the sigmoid of its one logit."""
    torch.manual_seed(0)
    model = ClaimJudgeCNN(2, queries, n_out).eval()
    x = torch.randn(5, 2, 18, 18)
    allq = model.query_scores(model.features(x))
    assert allq.shape == (5, 10) + ((10,) if queries == 2 else ())
    for d_a in range(10):
        for d_b in range(10) if queries == 2 else [None]:
            q = torch.tensor([[d_a] if d_b is None else [d_a, d_b]] * 5)
            one = model(x, q)
            one = torch.sigmoid(one[:, 0]) if n_out == 1 else torch.softmax(one, -1)[:, d_a]
            got = allq[:, d_a] if d_b is None else allq[:, d_a, d_b]
            assert torch.allclose(got, one, atol=1e-6)


@pytest.mark.parametrize("design,rule", [("D1", "sym"), ("D3", "asym"), ("D3", "last_b"),
                                         ("D2", "sym")])  # fmt: skip
def test_claim_scores_are_the_judge_score_of_each_claim(design, rule):
    torch.manual_seed(1)
    queries = 0 if design == "D1" else (1 if rule == "asym" else 2)
    judge = OnPolicyJudge(design, make_model(design, 1, 2, queries).eval(), "debate", rule, GRID,
                          max_batch=7)  # fmt: skip
    gen = torch.Generator().manual_seed(2)
    tree = sample_tree("debate2", 4, gen, budget=9)
    codes = group_codes(tree.paths, slot_groups(tree, False)).flatten(0, 1)
    images = torch.randn(4, 1, 18, 18).repeat_interleave(9, 0)
    scores = judge.claim_scores(images, codes)
    for d_a in range(10):
        for d_b in range(10) if queries == 2 else [None]:
            if design == "D1":
                expect = torch.softmax(judge.logits(images, codes), -1)[:, d_a]
                got = scores[:, d_a]
            else:
                q = torch.tensor([[d_a] if d_b is None else [d_a, d_b]] * len(images))
                logits = judge.logits(images, codes, q)
                expect = (torch.sigmoid(logits[:, 0]) if design == "D2"
                          else torch.softmax(logits, -1)[:, d_a])  # fmt: skip
                got = scores[:, d_a] if d_b is None else scores[:, d_a, d_b]
            assert torch.allclose(got, expect, atol=1e-5)


def test_a_judge_refuses_plays_of_another_family_or_rule():
    judge = OnPolicyJudge("D3", make_model("D3", 1, 2, 1), "debate", "asym", GRID)
    with pytest.raises(ValueError, match="reads debate inputs"):
        check_judge(judge, "debate2", "asym", control=True)
    with pytest.raises(ValueError, match="class one-hot"):
        check_judge(judge, "debate2", "sym", control=False)
    with pytest.raises(ValueError, match="claims"):
        judge.logits(torch.zeros(1, 1, 18, 18), torch.zeros(1, 36, dtype=torch.long))


def test_published_names_parse():
    assert parse_published_name("debate_judge_2turn_asym_mnist.pt").design == "D1"
    name = parse_published_name("control_judge_4turn_cc_lastdig_fashionmnist_normalized.pt")
    assert (name.design, name.protocol, name.rule, name.control, name.dataset) == (
        "D3",
        "debate4",
        "last_b",
        True,
        "fashionmnist-whitened",
    )
    name = parse_published_name("consultancy_judge_bce_mnist.pt")
    assert (name.design, name.protocol, name.family) == ("D2", "consultancy", "consultancy")
    with pytest.raises(ValueError, match="not named like"):
        parse_published_name("judge.pt")


@pytest.mark.skipif(not PUBLISHED.exists(), reason="the published judges are not on this machine")
def test_every_published_judge_loads_strictly():
    files = sorted(PUBLISHED.glob("*/*.pt"))
    assert len(files) == 52
    designs = {}
    for f in files:
        judge = load_published_judge(f)  # strict state-dict load: every key and shape
        name = parse_published_name(f)
        designs[name.design] = designs.get(name.design, 0) + 1
        assert judge.family == name.family and judge.groups * judge.channels == (
            judge.model.conv1.in_channels
        )
        if judge.conditioned:
            assert judge.n_queries == (1 if name.rule == "asym" or name.family == "consultancy"
                                       else 2)  # fmt: skip
    assert designs == {"D1": 13, "D3": 26, "D2": 13}
