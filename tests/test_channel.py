"""The 1-bit argument channel (docs/trained-judges.md#channel): codewords, the folded (cell, symbol)
search against a brute-force walk, the head's codeword scores, the pre-flight check, the
information estimators and the diagnostics."""

from __future__ import annotations

import itertools
from math import log2, prod

import numpy as np
import pytest
import torch

from debatelab.codewords import codeword_bits, codeword_index
from debatelab.games.sampled import (
    fold_symbols,
    solve_tree,
    symbol_alphabets,
    unfold_leaf,
)
from debatelab.games.sampled_play import channel_diagnostics, evaluate_trained_judge, play
from debatelab.geometry import Grid
from debatelab.information import (
    binary_entropy,
    conditional_mutual_information,
    entropy,
    entropy_of_counts,
    joint_table,
    mutual_information,
    mutual_information_of_table,
)
from debatelab.judges.onpolicy import OnPolicyConfig, OnPolicyJudge, make_model

# ---------------------------------------------------------------------------------------------
# codewords


def test_alphabets_are_one_bit_per_revealed_cell():
    assert symbol_alphabets("consultancy") == (16,)
    assert symbol_alphabets("debate2") == (4, 4)
    assert symbol_alphabets("debate4") == (2, 2, 2, 2)


def test_codeword_index_follows_the_published_formulas():
    for s_a, s_b in itertools.product(range(4), range(4)):
        assert codeword_index(torch.tensor([s_a, s_b]), (4, 4)).item() == 4 * s_a + s_b
    for a1, b1, a2, b2 in itertools.product(range(2), repeat=4):
        g = codeword_index(torch.tensor([a1, b1, a2, b2]), (2, 2, 2, 2)).item()
        assert g == 8 * a1 + 4 * b1 + 2 * a2 + b2
    assert codeword_index(torch.tensor([[11]]), (16,)).tolist() == [11]


def test_codeword_bits_are_the_binary_expansion_msb_first():
    bits = codeword_bits(torch.arange(16))
    assert bits.dtype == torch.float32 and bits.shape == (16, 4)
    assert bits[5].tolist() == [0, 1, 0, 1] and bits[8].tolist() == [1, 0, 0, 0]
    back = (bits * torch.tensor([8.0, 4.0, 2.0, 1.0])).sum(-1)
    assert back.tolist() == list(range(16))
    # 4-turn: bit j is the symbol of decision j
    for word in itertools.product(range(2), repeat=4):
        g = codeword_index(torch.tensor(word), (2, 2, 2, 2))
        assert codeword_bits(g).tolist() == list(word)


# ---------------------------------------------------------------------------------------------
# the folded search against a brute-force walk over (cell, symbol) moves


def brute_force(values: np.ndarray, branching, alphabets, consultancy: bool):
    """Exhaustive walk of one image's tree whose moves are (cell candidate, symbol) pairs,
    candidate-major, ties to the first move; ``values[cell_leaf, codeword, column]``. Returns
    (claim, value, cell leaf, codeword) of the realised play."""
    turns = len(branching)
    n_columns = values.shape[-1]

    def leaf_of(cells, symbols):
        cell = word = 0
        for t in range(turns):
            cell = cell * branching[t] + cells[t]
            word = word * alphabets[t] + symbols[t]
        return cell, word

    def moves(t):
        return [(c, s) for c in range(branching[t]) for s in range(alphabets[t])]

    def value(column, t, cells, symbols):
        if t == turns:
            cell, word = leaf_of(cells, symbols)
            return values[cell, word, column], (cell, word)
        best = None
        for c, s in moves(t):
            v, leaf = value(column, t + 1, cells + [c], symbols + [s])
            better = best is None or (v > best[0] if t % 2 == 0 else v < best[0])
            if better:
                best = (v, leaf)
        return best

    if consultancy:  # argmax over (mask, codeword, class), mask-major
        best = None
        for (c, s), col in itertools.product(moves(0), range(n_columns)):
            v = values[c, s, col]
            if best is None or v > best[0]:
                best = (v, col, c, s)
        return best[1], best[0], best[2], best[3]
    roots = [value(col, 0, [], []) for col in range(n_columns)]
    claim = max(range(n_columns), key=lambda col: (roots[col][0], -col))
    v, (cell, word) = roots[claim]
    return claim, v, cell, word


@pytest.mark.parametrize(
    "protocol,branching",
    [("consultancy", (3,)), ("debate2", (2, 3)), ("debate4", (2, 1, 2, 2)),
     ("debate4", (1, 2, 1, 1))],
)  # fmt: skip
@pytest.mark.parametrize("seed", range(3))
def test_folded_search_equals_brute_force_walk(protocol, branching, seed):
    alphabets = symbol_alphabets(protocol)
    g = torch.Generator().manual_seed(seed)
    n_images, n_columns = 4, 3
    shape = (n_images, prod(branching), prod(alphabets), n_columns)
    # few distinct values, so ties are everywhere
    values = torch.randint(0, 3, shape, generator=g).double()
    folded, moves = fold_symbols(values, branching, alphabets)
    assert moves == tuple(n * v for n, v in zip(branching, alphabets, strict=True))
    solved = solve_tree(folded, moves, "asym", n_columns)
    cell, word = unfold_leaf(solved.leaf, branching, alphabets)
    for i in range(n_images):
        claim, v, c, w = brute_force(values[i].numpy(), branching, alphabets,
                                     protocol == "consultancy")  # fmt: skip
        assert (solved.claim[i].item(), solved.value[i].item()) == (claim, v)
        assert (cell[i].item(), word[i].item()) == (c, w)


def test_unfold_inverts_fold():
    branching, alphabets = (3, 2, 2, 1), (2, 2, 2, 2)
    leaves = torch.arange(prod(branching) * 16).reshape(1, prod(branching), 16, 1)
    folded, _ = fold_symbols(leaves, branching, alphabets)
    cell, word = unfold_leaf(torch.arange(folded.shape[1]), branching, alphabets)
    assert torch.equal(folded[0, :, 0], cell * 16 + word)


# ---------------------------------------------------------------------------------------------
# the bit judge: codeword scores, the pre-flight check


def bit_judge(protocol: str, bits: bool, seed: int = 0) -> OnPolicyJudge:
    torch.manual_seed(seed)
    family = "consultancy" if protocol == "consultancy" else "debate"
    queries = 1 if protocol == "consultancy" else 2
    model = make_model("bit", 1, 1 if family == "consultancy" else 2, queries, 18,
                       4 if bits else 0).eval()  # fmt: skip
    rule = "asym" if protocol == "consultancy" else "last_b"
    return OnPolicyJudge("bit", model, family, rule, Grid(18, 6), 1)


@pytest.mark.parametrize("protocol", ["consultancy", "debate2"])
def test_codeword_scores_equal_the_head_forward(protocol):
    judge = bit_judge(protocol, bits=True)
    model = judge.model
    features = torch.randn(5, 64)
    scores = model.query_scores(features)  # (5, 16, K[, K])
    assert scores.shape == (5, 16) + (10,) * model.n_queries
    for g in (0, 6, 15):
        bits = codeword_bits(torch.full((5,), g))
        for d_a in range(10):
            for d_b in range(10) if model.n_queries == 2 else [None]:
                q = [d_a] if d_b is None else [d_a, d_b]
                queries = torch.tensor([q] * 5)
                p = torch.softmax(model.head(features, queries, bits), -1)[:, d_a]
                got = scores[:, g, d_a] if d_b is None else scores[:, g, d_a, d_b]
                torch.testing.assert_close(got, p, atol=1e-5, rtol=0)


def zero_bit_twin(control: OnPolicyJudge, protocol: str) -> OnPolicyJudge:
    """A bits judge with the control's weights and zero weights on its bit inputs."""
    twin = bit_judge(protocol, bits=True, seed=1)
    state = {k: v.clone() for k, v in control.model.state_dict().items()}
    w = state["fc1.weight"]
    state["fc1.weight"] = torch.cat([w, torch.zeros(w.shape[0], 4)], dim=1)
    twin.model.load_state_dict(state)
    return twin


@pytest.mark.parametrize("protocol,branching",
                         [("consultancy", (6,)), ("debate2", (3, 3)), ("debate4", (2, 2, 2, 2))])  # fmt: skip
def test_preflight_zero_bit_weights_play_as_the_control(protocol, branching):
    """§4's pre-flight check: with its bit weights zeroed the bits judge realises the same
    claim, reveal and d_B as the nested control under one seed (every symbol ties, and the
    first, 0, wins)."""
    control = bit_judge(protocol, bits=False)
    twin = zero_bit_twin(control, protocol)
    images = torch.randn(12, 1, 18, 18, generator=torch.Generator().manual_seed(3))
    rule = "asym" if protocol == "consultancy" else "last_b"
    a = play(control, images, protocol, rule, False, torch.Generator().manual_seed(9),
             branching=branching)  # fmt: skip
    b = play(twin, images, protocol, rule, False, torch.Generator().manual_seed(9),
             branching=branching)  # fmt: skip
    assert torch.equal(a.claim, b.claim) and torch.equal(a.codes, b.codes)
    assert torch.equal(a.queries, b.queries)
    if protocol != "consultancy":
        assert torch.equal(a.b_claim, b.b_claim)
    assert a.codeword is None and b.codeword.tolist() == [0] * 12
    # the check can fail: with live bit weights the symbols are chosen
    live = bit_judge(protocol, bits=True, seed=4)
    c = play(live, images, protocol, rule, False, torch.Generator().manual_seed(9),
             branching=branching)  # fmt: skip
    assert (c.codeword != 0).any()


def test_bit_judge_needs_codewords_and_matching_alphabet():
    judge = bit_judge("debate2", bits=True)
    images = torch.randn(2, 1, 18, 18)
    codes = torch.zeros(2, 36, dtype=torch.long)
    with pytest.raises(ValueError, match="codeword"):
        judge.logits(images, codes, torch.zeros(2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="exact search"):
        play(judge, images, "debate2", "last_b", False, torch.Generator(), search="exact")
    with pytest.raises(ValueError, match="argument channel runs"):
        OnPolicyConfig(design="bit", protocol="debate2", rule="asym", bits=True)
    with pytest.raises(ValueError, match="only the bit design"):
        OnPolicyConfig(design="D3", bits=True)
    with pytest.raises(ValueError, match="turn"):
        OnPolicyConfig(design="bit", protocol="debate2", rule="last_b", branching=(4, 4, 4))


def test_new_options_keep_old_cache_keys():
    """Judges trained before the channel keep their cache keys; the new options change them."""
    base = OnPolicyConfig(design="D3", protocol="debate2", rule="sym")
    assert base.key() == OnPolicyConfig(design="D3", protocol="debate2", rule="sym",
                                        bits=False, branching=None, loop_seed=None).key()  # fmt: skip
    arm = OnPolicyConfig(design="bit", protocol="consultancy", rule="asym", loop_seed=0)
    assert arm.key() != OnPolicyConfig(design="bit", protocol="consultancy", rule="asym").key()


# ---------------------------------------------------------------------------------------------
# information estimators against hand-computed tables and simulation


def test_entropies_by_hand():
    assert entropy([0, 1, 2, 3]) == pytest.approx(2.0)
    assert entropy([5, 5, 5]) == 0.0
    assert entropy_of_counts([1, 1, 2]) == pytest.approx(1.5)
    assert binary_entropy(0.5) == pytest.approx(1.0) and binary_entropy(0.0) == 0.0
    assert binary_entropy(0.25) == pytest.approx(-(0.25 * log2(0.25) + 0.75 * log2(0.75)))


def test_mutual_information_by_hand():
    # joint counts [[1, 1], [0, 2]]: p = [[.25, .25], [0, .5]], px = (.5, .5), py = (.25, .75)
    want = 0.25 * log2(0.25 / (0.5 * 0.25)) + 0.25 * log2(0.25 / (0.5 * 0.75))
    want += 0.5 * log2(0.5 / (0.5 * 0.75))
    assert mutual_information_of_table([[1, 1], [0, 2]]) == pytest.approx(want)
    x, y = [0, 0, 1, 1], [0, 1, 1, 1]
    assert joint_table(x, y).tolist() == [[1, 1], [0, 2]]
    assert mutual_information(x, y) == pytest.approx(want)
    assert mutual_information([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert mutual_information([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(0.0)


def test_conditional_mutual_information_by_hand():
    # z = 0: x == y (1 bit); z = 1: x independent of y (0 bits); z = 2 has one sample: skipped
    x = [0, 1, 0, 1, 0, 0, 1, 1, 1]
    y = [0, 1, 0, 1, 0, 1, 0, 1, 0]
    z = [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert conditional_mutual_information(x, y, z) == pytest.approx(4 / 9 * 1.0 + 4 / 9 * 0.0)
    # y = x xor z: nearly independent of x alone; given z, y determines x, so the plug-in
    # I(x; y | z) is exactly the plug-in H(x | z)
    rng = np.random.default_rng(0)
    xs, zs = rng.integers(0, 2, 4000), rng.integers(0, 2, 4000)
    assert mutual_information(xs, xs ^ zs) < 0.005
    h_x_given_z = sum((zs == v).mean() * entropy(xs[zs == v]) for v in (0, 1))
    assert conditional_mutual_information(xs, xs ^ zs, zs) == pytest.approx(h_x_given_z)
    assert h_x_given_z == pytest.approx(1.0, abs=0.002)


def test_mutual_information_against_a_simulated_channel():
    """A binary symmetric channel with flip probability 0.1 carries 1 - h(0.1) bits."""
    rng = np.random.default_rng(1)
    x = rng.integers(0, 2, 200_000)
    y = x ^ (rng.random(200_000) < 0.1)
    assert mutual_information(x, y) == pytest.approx(1 - binary_entropy(0.1), abs=0.005)


def test_estimators_refuse_bad_input():
    with pytest.raises(ValueError, match="integer labels"):
        entropy([0.5, 1.0])
    with pytest.raises(ValueError, match="same length|differ"):
        mutual_information([0, 1], [0])
    with pytest.raises(ValueError, match="non-negative"):
        mutual_information_of_table([[0, 0], [0, 0]])


# ---------------------------------------------------------------------------------------------
# diagnostics


def test_diagnostics_of_a_judge_that_ignores_its_bits():
    """Zero bit weights: the randomised-bit ablation changes nothing; every play's codeword is
    0 (entropy 0) and the per-bit informations vanish; the numbers equal the evaluation's."""
    control = bit_judge("debate2", bits=False)
    twin = zero_bit_twin(control, "debate2")
    images = torch.randn(24, 1, 18, 18, generator=torch.Generator().manual_seed(5))
    labels = torch.randint(0, 10, (24,), generator=torch.Generator().manual_seed(6))
    d = channel_diagnostics(twin, images, labels, protocol="debate2", rule="last_b",
                            branching=(3, 3), batch=8, seed=2)  # fmt: skip
    assert d["ablation_judge_accuracy_change"] == 0 and d["ablation_belief_change"] == 0
    assert d["codeword_counts"] == [24] + [0] * 15 and d["codeword_entropy"] == 0
    assert all(b["mi_claim"] == 0 and np.isnan(b["mi_claim_normalised"]) for b in d["bits"])
    ev = evaluate_trained_judge(twin, images, labels, protocol="debate2", rule="last_b",
                                branching=(3, 3), batch=8, seed=2)  # fmt: skip
    assert d["judge_accuracy"] == ev["judge_accuracy"]
    assert d["belief"] == pytest.approx(ev["belief"], abs=1e-6)
    live = bit_judge("debate2", bits=True, seed=4)
    d = channel_diagnostics(live, images, labels, protocol="debate2", rule="last_b",
                            branching=(3, 3), batch=8, seed=2)  # fmt: skip
    assert sum(d["codeword_counts"]) == 24 and 0 < d["codeword_entropy"] <= 4
    assert d["ablation_belief_change"] != 0


def test_the_baseline_ensemble_reads_the_factorised_universe():
    """The random-mask baseline (no claim, no bits) scores every mask through the factorised
    trunk: equal to its batched forward on every mask of a 3 x 3 grid."""
    from debatelab.games.sampled import exact_tree, slot_groups
    from debatelab.games.sampled_play import tree_scores

    torch.manual_seed(0)
    model = make_model("bit", 1, 1, 0, 18).eval()
    judge = OnPolicyJudge("bit", model, "consultancy", "asym", Grid(18, 3), 1)
    assert not judge.conditioned
    images = torch.randn(2, 1, 18, 18, generator=torch.Generator().manual_seed(1))
    tree = exact_tree("consultancy", 2, judge.n_cells)
    groups = slot_groups(tree, False)
    fast = tree_scores(judge, images, tree, groups, "exact")
    naive = tree_scores(judge, images, tree, groups, "sampled")
    assert fast.shape == (2, 126, 10)
    assert (fast - naive).abs().max() <= 1e-5
    torch.testing.assert_close(naive.sum(-1), torch.ones(2, 126))


def test_bits_train_command_writes_a_run_and_reads_the_cache_back(tmp_path, data_root,
                                                                   one_torch_thread):  # fmt: skip
    import json

    from click.testing import CliRunner

    from debatelab.cli import main

    args = ["bits", "train", "--dataset", "fashionmnist-whitened", "--protocol", "debate4",
            "--epochs", "1", "--train-limit", "64", "--eval-images", "0:10000:500",
            "--branching", "2,1,1,2", "--data-dir", str(data_root), "--cache-dir",
            str(tmp_path / "cache"), "--quiet"]  # fmt: skip
    first = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "a")])
    assert first.exit_code == 0, first.output
    metrics = json.loads((tmp_path / "a" / "metrics.json").read_text())
    assert {"selection", "judge", "belief", "loss", "checkpoint"} <= metrics.keys()
    assert "debate4_bits_4" in metrics["checkpoint"]
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert manifest["seeds"] == {"init": 2, "loop": 4}  # arm index 2, four turns
    # a bits arm ends with the diagnostics of its final judge on the 20 test images
    diagnostics = json.loads((tmp_path / "a" / "diagnostics.json").read_text())
    assert sum(diagnostics["codeword_counts"]) == 20 and len(diagnostics["codeword_counts"]) == 16
    assert 0 <= metrics["codeword_entropy"] == diagnostics["codeword_entropy"] <= 4
    assert (tmp_path / "a" / "codewords.png").stat().st_size > 0
    again = CliRunner().invoke(main, [*args, "--out", str(tmp_path / "b")])
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "b" / "metrics.json").read_text())["judge"] == metrics["judge"]
    assert json.loads((tmp_path / "b" / "diagnostics.json").read_text()) == diagnostics
    bad = CliRunner().invoke(main, [*args, "--branching", "4,4", "--out", str(tmp_path / "c")])
    assert bad.exit_code != 0 and "4 turn(s)" in bad.output


def test_bits_sweep_pairs_each_arm_with_its_control_and_shares_the_arms_with_train(
        tmp_path, data_root, one_torch_thread):  # fmt: skip
    """A tiny sweep end to end: each delta is its bits arm's judge accuracy minus its nested
    control's, the report lists every arm, and `bits train` of one arm with the same settings
    reads the sweep's cached judge back and gives the same diagnostics."""
    import json

    from click.testing import CliRunner

    from debatelab.cli import main

    where = ["--dataset", "fashionmnist-whitened", "--eval-images", "0:10000:500", "--data-dir",
             str(data_root), "--cache-dir", str(tmp_path / "cache"), "--quiet"]  # fmt: skip
    common = [*where, "--epochs", "1", "--train-limit", "64"]
    sweep = CliRunner().invoke(main, ["bits", "sweep", *common, "--out", str(tmp_path / "s")])
    assert sweep.exit_code == 0, sweep.output
    metrics = json.loads((tmp_path / "s" / "metrics.json").read_text())
    for protocol in ("debate2", "debate4", "consultancy"):
        bits, control = metrics[f"{protocol}_bits_16/judge"], metrics[f"{protocol}_nobits_16/judge"]
        assert metrics[f"delta/{protocol}"] == pytest.approx(bits - control)
    assert 0 <= metrics["baseline/gold"] <= 1 and "consultancy_nobits_81/judge" in metrics
    report = (tmp_path / "s" / "report.md").read_text()
    assert all(f"| {arm} |" in report for arm in ("debate2_bits_16", "debate4_nobits_16",
                                                  "consultancy_nobits_81"))  # fmt: skip
    swept = json.loads((tmp_path / "s" / "diagnostics.json").read_text())
    assert set(swept) == {"debate2_bits_16", "debate4_bits_16", "consultancy_bits_16"}
    one = CliRunner().invoke(main, ["bits", "train", *common, "--protocol", "debate2",
                                    "--out", str(tmp_path / "t")])  # fmt: skip
    assert one.exit_code == 0, one.output
    assert json.loads((tmp_path / "t" / "metrics.json").read_text())["judge"] == (
        metrics["debate2_bits_16/judge"])  # fmt: skip
    assert json.loads((tmp_path / "t" / "diagnostics.json").read_text()) == (
        swept["debate2_bits_16"])  # fmt: skip
    # the baselines alone read the sweep's cached judges and draw the same masks
    base = CliRunner().invoke(main, ["bits", "baselines", *where, "--out", str(tmp_path / "b")])
    assert base.exit_code == 0, base.output
    base_metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert base_metrics == {k.split("/")[1]: v for k, v in metrics.items()
                            if k.startswith("baseline/")}  # fmt: skip
    assert "| random_mask_1 |" in base.output and "51.35" in base.output
