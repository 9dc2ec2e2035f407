"""ONNX export of judges, checked with onnxruntime."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from debatelab import JudgeCNN

ort = pytest.importorskip("onnxruntime")


@pytest.mark.parametrize("channels,widths", [(1, (8, 16)), (2, (4, 8))])
def test_exported_judge_matches_pytorch(tmp_path, channels, widths):
    from debatelab.judges.export import export_onnx

    torch.manual_seed(0)
    model = JudgeCNN(channels, widths, image_size=18 if channels == 1 else 28).eval()
    path = tmp_path / "judge.onnx"
    meta = export_onnx(model, path, {"judge": "test"})
    assert meta["max_abs_diff"] < 1e-4
    side = model.image_size
    x = torch.randn(5, channels, side, side)  # another batch size than the export's example
    got = ort.InferenceSession(str(path)).run(["logits"], {"x": x.numpy()})[0]
    with torch.inference_mode():
        np.testing.assert_allclose(got, model(x).numpy(), atol=1e-4)
    # one self-contained file: no external weight files beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge.onnx", "judge.onnx.json"]
    written = json.loads(path.with_name("judge.onnx.json").read_text())
    assert written["input"]["shape"] == ["batch", channels, side, side]
    assert written["judge"] == "test"


def test_export_onnx_command_on_trained_checkpoints(tmp_path, demo_judges):
    """`debatelab export-onnx --checkpoint` on cached cell-grid and pixel judge checkpoints."""
    from click.testing import CliRunner

    from debatelab.cli import main
    from debatelab.judges.export import check_onnx

    gold, pixel = demo_judges["gold"], demo_judges["pixel4"]
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    runner = CliRunner()
    out = tmp_path / "onnx"
    args = ["export-onnx", "--out", str(out), "--checkpoint", str(gold.path),
            "--checkpoint", str(pixel.path)]  # fmt: skip
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.output.count("max |diff|") == 2
    assert check_onnx(gold.model, out / f"{gold.path.stem}.onnx") < 1e-4
    assert check_onnx(pixel.model, out / f"{pixel.path.stem}.onnx") < 1e-4
    meta = json.loads((out / f"{pixel.path.stem}.onnx.json").read_text())
    assert meta["train_config"]["pixels"] == 4 and meta["input"]["shape"][1] == 2
    result = runner.invoke(main, ["export-onnx", "--out", str(out), "--checkpoint", str(bad)])
    assert result.exit_code != 0 and "not a debatelab judge checkpoint" in result.output


def test_learned_debaters_export_one_file_per_side(tmp_path):
    """`debatelab export-onnx --checkpoint` on a learned-debaters checkpoint (the one checkpoint
    format, family debaters): each side's network equals PyTorch (1e-4) on real positions."""
    from click.testing import CliRunner

    from debatelab.cli import main
    from debatelab.games.learned import DebaterNets, policy_inputs
    from debatelab.games.pixels import PixelRules, liar_games
    from debatelab.judges.train import TrainedJudge, cached_judge
    from debatelab.training.debaters import DebaterTrainConfig, load_debaters

    cfg = DebaterTrainConfig(pixels=4, hidden=32)
    torch.manual_seed(0)
    nets = DebaterNets(hidden=32)
    saved = cached_judge(cfg, tmp_path / "cache", False, lambda _: TrainedJudge(nets, cfg, []),
                         load=load_debaters)  # fmt: skip
    out = tmp_path / "onnx"
    result = CliRunner().invoke(main, ["export-onnx", "--out", str(out), "--checkpoint",
                                       str(saved.path)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output.count("max |diff|") == 2
    rng = np.random.default_rng(0)
    images = (rng.random((3, 28, 28)) < 0.2) * rng.integers(1, 256, (3, 28, 28))
    games, _ = liar_games(images.astype(np.uint8), np.array([1, 4, 7]), PixelRules(4))
    games = games.play(games.available().float().argmax(1))
    x = policy_inputs(games).numpy()
    for side in ("honest", "liar"):
        path = out / f"{saved.path.stem}-{side}.onnx"
        got = ort.InferenceSession(str(path)).run(["logits"], {"x": x})[0]
        with torch.inference_mode():
            np.testing.assert_allclose(got, nets.net(side)(torch.as_tensor(x)).numpy(), atol=1e-4)
        meta = json.loads(path.with_name(path.name + ".json").read_text())
        assert meta["input"]["shape"] == ["batch", 1588] and meta["output"]["shape"][1] == 784
