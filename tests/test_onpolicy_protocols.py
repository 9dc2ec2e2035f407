"""On-policy training of D1 judges on the protocols no seed ran, debate3 (A 1, B 2, A 1) and
consult_rebut (A 3, B 1), on small real MNIST slices: the judge learns (its loss falls and its
accuracy on the realised plays rises well above chance), a killed run resumes to the same
numbers and weights, and the cached checkpoint loads back as the protocol's judge."""

from __future__ import annotations

import pytest
import torch

import debatelab.training.onpolicy as module
from debatelab.games import sampled_play
from debatelab.judges.onpolicy import OnPolicyConfig
from debatelab.training.onpolicy import get_onpolicy_judge, load_onpolicy_judge, train_onpolicy

#: 64 leaves per image: 4 x 4 x 4 (debate3) and 8 x 8 (consult_rebut)
SHORT = {"budget": 64, "batch_size": 64, "eval_batch": 20}


def _timeless(history):
    return [{k: v for k, v in e.items() if not k.endswith("_seconds")} for e in history]


@pytest.mark.parametrize("protocol", ["debate3", "consult_rebut"])
def test_a_judge_of_a_new_protocol_learns_and_is_cached(protocol, mnist, tmp_path, torch_threads):
    """Two epochs on 2,000 images: the loss falls and the judge's accuracy on the realised
    plays of 200 test images is above 25 % (chance 10 %, three standard errors 6 points;
    measured about 35-45 %)."""
    config = OnPolicyConfig(design="D1", protocol=protocol, rule="asym", epochs=2,
                            train_limit=2000, eval_images="0:10000:50", **SHORT)  # fmt: skip
    judge = get_onpolicy_judge(config, mnist, tmp_path, progress=False)
    first, last = judge.history[0], judge.history[-1]
    assert last["loss"] < first["loss"], judge.history
    assert last["judge"] > 0.25 and last["selection"] > 0.25, last
    loaded = load_onpolicy_judge(judge.path)
    assert loaded.family == "debate" and loaded.trained_config.protocol == protocol
    assert config.name == f"{protocol}_asym"


@pytest.mark.parametrize("protocol", ["debate3", "consult_rebut"])
def test_a_killed_run_of_a_new_protocol_resumes_to_the_same_numbers(protocol, mnist, tmp_path,
                                                                    monkeypatch,
                                                                    one_torch_thread):  # fmt: skip
    config = OnPolicyConfig(design="D1", protocol=protocol, rule="sym", epochs=2,
                            train_limit=256, eval_images="0:10000:500", **SHORT)  # fmt: skip
    whole = train_onpolicy(config, mnist, tmp_path / "a.pt", progress=False)
    calls = {"n": 0}
    real_play = sampled_play.play

    def dying_play(*args, **kwargs):  # killed mid-epoch 2 (4 steps per epoch)
        calls["n"] += 1
        if calls["n"] == 4 + 2:
            raise KeyboardInterrupt
        return real_play(*args, **kwargs)

    monkeypatch.setattr(module, "play", dying_play)
    with pytest.raises(KeyboardInterrupt):
        train_onpolicy(config, mnist, tmp_path / "b.pt", progress=False)
    monkeypatch.setattr(module, "play", real_play)
    resumed = train_onpolicy(config, mnist, tmp_path / "b.pt", progress=False)
    assert _timeless(resumed.history) == _timeless(whole.history)
    for key, value in whole.model.state_dict().items():
        assert torch.equal(value, resumed.model.state_dict()[key]), key
