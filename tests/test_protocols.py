"""Protocols and rules as registered data (debatelab.protocols, debatelab.registry)."""

from math import prod

import pytest

from debatelab import protocols as P
from debatelab.registry import PluginError, Registry


def test_the_seed_protocols_keep_their_moves_and_published_branching():
    # REFERENCE B's trees: 1,296 masks, 36 x 36, 6 x 6 x 6 x 6 (docs/trained-judges.md#search)
    expected = {"consultancy": ((4,), (1296,)), "debate2": ((2, 2), (36, 36)),
                "debate4": ((1, 1, 1, 1), (6, 6, 6, 6))}  # fmt: skip
    for name, (moves, branching) in expected.items():
        p = P.protocol(name)
        assert (p.moves, p.branching_for()) == (moves, branching)
        assert p.players == ("A", "B", "A", "B")[: len(moves)]
    assert P.protocol("consultancy").one_sided and not P.protocol("debate2").one_sided


def test_every_cell_protocol_spends_the_published_budget():
    for name in P.protocol_names("cells"):
        assert prod(P.protocol(name).branching_for()) == P.PUBLISHED_BUDGET


def test_an_even_budget_needs_a_power_of_the_turns():
    assert P.protocol("debate4").branching_for(16) == (2, 2, 2, 2)
    with pytest.raises(ValueError, match="must be a 3-th power"):
        P.protocol("debate3").branching_for(12)


def test_names_aliases_and_media():
    assert P.protocol("+critique").name == "critique"
    with pytest.raises(ValueError, match="text protocol; here choose one of consultancy"):
        P.protocol("rebuttal", medium="cells")
    with pytest.raises(ValueError, match="unknown protocol 'debate9'"):
        P.protocol("debate9")
    assert [P.rule(r).b_claims for r in P.rule_names()] == ["never", "before_play", "after_play"]


@pytest.mark.parametrize("turns, words", [
    ((), "at least one turn"),
    ((P.Turn("B", 1),), "A, the claimant, moves first"),
    ((P.Turn("A", 0),), "positive whole number"),
    ((P.Turn("C", 1),), "player A or B"),
])  # fmt: skip
def test_a_bad_declaration_is_refused(turns, words):
    with pytest.raises(ValueError, match=words):
        P.Protocol("bad", turns, "bad")


def test_a_registry_refuses_a_second_part_of_one_name_and_checks_parts():
    reg = Registry("thing", "debatelab.test_things", lambda name, obj: int(obj))
    reg.register("one", "1")
    assert reg.get("one") == 1 and "one" in reg and reg.source("one") == "debatelab"
    with pytest.raises(PluginError, match="two things are named 'one'"):
        reg.register("one", 1, "the plug-in x")
    with pytest.raises(PluginError, match="thing 'two' from debatelab: invalid literal"):
        reg.register("two", "zwei")
    with pytest.raises(ValueError, match="unknown thing 'three'; choose one of one"):
        reg.get("three")
    with pytest.raises(PluginError, match="branching"):
        P.register_protocol(P.Protocol("odd", P.alternating(2, 2), "x", branching=(30, 30)))
