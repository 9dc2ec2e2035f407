"""`debatelab bon` on synthetic pools and on a pool file."""

import json

import pytest
from click.testing import CliRunner

from debatelab.cli import main
from debatelab.cli_common import parse_ints
from debatelab.text.readers import write_pools
from debatelab.text.synthetic import SyntheticConfig, synthetic_pools


def test_demo_writes_a_run_folder(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["bon", "--demo", "--demo-questions", "4", "--demo-sizes", "6x5x3",
                                      "--n", "1:4", "--m", "1,3", "--r", "1,2", "--ref-n", "3",
                                      "--replicates", "30", "--out", str(out), "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    for name in ("config.json", "manifest.json", "metrics.json", "report.md", "table.csv",
                 "per_question.csv", "contrasts.csv", "worms.png", "meshes.png"):  # fmt: skip
        assert (out / name).stat().st_size > 0, name
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["questions"] == 4
    assert "critique/accuracy@Bo3" in metrics
    report = (out / "report.md").read_text()
    assert "critic Bo3 - Bo1 at Bo3" in report and "control proposal" in report
    rows = (out / "table.csv").read_text().splitlines()
    # proposal 4 + critique 4x2 + rebuttal 4x2x2 + control 4 grid points, plus the header
    assert len(rows) == 1 + 4 + 8 + 16 + 4


def test_pool_file_and_friendly_errors(tmp_path):
    cfg = SyntheticConfig(n_questions=3, n_proposals=5, n_critiques=4, protocols=("critique",),
                          control=False)  # fmt: skip
    path = write_pools(synthetic_pools(cfg, 0), tmp_path / "pools.csv")
    out = tmp_path / "run"
    result = CliRunner().invoke(main, ["bon", str(path), "--n", "1,2,5", "--m", "1", "--replicates", "10",
                                      "--out", str(out), "--quiet"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not (out / "meshes.png").exists()  # a single critic policy draws no mesh
    bad = tmp_path / "bad.csv"
    bad.write_text("question_id,proposal_id,score,correct\nq,p,1.5,1\n")
    result = CliRunner().invoke(main, ["bon", str(bad), "--quiet", "--out", str(tmp_path / "x")])
    assert result.exit_code != 0 and "outside [0, 1]" in result.output
    result = CliRunner().invoke(main, ["bon", "--quiet"])
    assert result.exit_code != 0 and "POOLS file or --demo" in result.output


def test_parse_ints():
    assert parse_ints("1:5", "--n") == (1, 2, 3, 4, 5)
    assert parse_ints("2:10:4", "--n") == (2, 6, 10)
    assert parse_ints("1,10", "--m") == (1, 10)
    with pytest.raises(Exception, match="positive"):
        parse_ints("0,2", "--m")
