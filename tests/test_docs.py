"""The docs cannot drift from the runs: every results table equals its rendering from the
records kept in the repository (docs/results.py), every other table of a results page says why
it is typed, every record it cites is a finished run's, and README stays a front page."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def results(docs_module):
    return docs_module("results")


def test_every_results_table_is_its_rendering_from_the_records(results):
    pages = [p for p in results.PAGES if results.MARK.search(p.read_text())]
    assert REPO / "README.md" in pages and REPO / "docs" / "index.md" in pages
    differed = [d for page in pages for d in results.update(page, check=True)]
    assert not differed, f"run `python docs/results.py` (tables differ: {differed})"


def test_each_table_row_links_a_record_that_holds_its_numbers(results):
    text = (REPO / "README.md").read_text()
    table = results.MARK.search(text).group(3)
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    assert len(rows) >= 8
    for row in rows:
        target = re.search(r"\]\(([^)]+)\)", row).group(1)
        assert (REPO / target).is_file(), row
    # a run record: a finished run's three files, the numbers as the run wrote them
    for record in sorted((REPO / "docs" / "records").iterdir()):
        files = {f: json.loads((record / f).read_text()) for f in results.RECORD_FILES}
        assert files["manifest.json"]["command"] == files["config.json"]["command"]
        assert files["manifest.json"]["wall_time_s"] > 0 and files["manifest.json"]["git_commit"]
        metrics = files["metrics.json"]
        if record.name == "run-mnist":
            sparse = f"{100 * metrics['sparse_accuracy']:.2f} ± {100 * metrics['sparse_accuracy_se']:.2f}"
            assert sparse in table


def test_every_other_table_of_a_results_page_says_why_it_is_typed(results, tmp_path, monkeypatch):
    unmarked = [t for page in results.RESULT_PAGES for t in results.unmarked_tables(page)]
    assert not unmarked, f"render these tables or mark them hand-written: {unmarked}"
    page = tmp_path / "page.md"
    page.write_text("<!-- results: headline -->\n| a |\n|---|\n<!-- /results -->\n\ntext\n\n"
                    "| b |\n|---|\n\n<!-- hand-written: benchmark: timings -->\n\n| c |\n|---|\n"
                    "\n<!-- hand-written: made up: no such kind -->\n\n| d |\n|---|\n")  # fmt: skip
    monkeypatch.setattr(results, "REPO", tmp_path)
    assert results.unmarked_tables(page) == ["page.md:8", "page.md:18"]


def test_published_judges_render_from_a_recorded_eval_published_run(results, tmp_path, monkeypatch):
    """``--record`` keeps eval-published's judges.json; the table per published folder shows
    each judge's numbers beside the published ones, as the run's own report does."""
    from debatelab.experiments.judges import published_report

    base = {"design": "D1", "variant": "mnist", "rule": "asym", "control": False,
            "n_images": 10000}  # fmt: skip
    judges = {
        "trained_judges_D1_mnist/consultancy_judge_mnist.pt": {
            **base, "protocol": "consultancy", "name": "consultancy", "published_judge": 95.79,
            "judge_accuracy": 0.9584, "selection_accuracy": 0.9584},
        "verifier_head_D2_mnist/debate_judge_2turn_asym_mnist.pt": {
            **base, "design": "D2", "protocol": "debate2", "name": "debate_2turn_asym",
            "published_selection": 10.28, "selection_accuracy": 0.1028, "belief": 0.1033,
            "published_belief": 10.33},
    }  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    config = {"command": "judges-eval-published", "images": "all", "search": "sampled",
              "budget": 1296, "seed": 0}  # fmt: skip
    (run / "config.json").write_text(json.dumps(config))
    (run / "manifest.json").write_text(json.dumps({**config, "wall_time_s": 1.0}))
    (run / "metrics.json").write_text(json.dumps({"n_judges": 2}))
    (run / "judges.json").write_text(json.dumps(judges))
    monkeypatch.setattr(results, "RUNS", tmp_path / "records")
    assert (results.record(run, "eval") / "judges.json").is_file()
    table = results.published_judges(REPO / "docs" / "page.md", "eval")
    report, _ = published_report(judges)
    assert table.startswith("All 2 judges (full test sets, sampled search, budget 1,296, seed 0")
    assert table.count('<details markdown="1">') == 2
    assert "<summary>verifier_head_D2_mnist (1 judges)</summary>" in table
    for line in report.splitlines():  # every row and summary line of the run's own report
        if line.startswith(("| consultancy", "| debate_2turn", "- ")):
            assert line in table


def test_a_trained_judges_epochs_render_beside_the_published_curve(results, tmp_path, monkeypatch):
    """``--record`` keeps a judges-train run's history and published curves; the epoch table
    shows each epoch's judge and selection accuracy, the published value of that epoch in
    brackets (none past the published curve's end) and the epoch's wall time."""
    run = tmp_path / "run"
    run.mkdir()
    config = {"command": "judges-train", "design": "D1"}
    (run / "config.json").write_text(json.dumps(config))
    (run / "manifest.json").write_text(json.dumps({**config, "wall_time_s": 1.0}))
    (run / "metrics.json").write_text(json.dumps({"judge": 0.9, "selection": 0.91}))
    history = [{"epoch": 1, "judge": 0.8171, "selection": 0.8236, "wall_seconds": 1608.0},
               {"epoch": 2, "judge": 0.8676, "selection": 0.8727, "wall_seconds": 301.0}]  # fmt: skip
    (run / "history.json").write_text(json.dumps(history))
    curves = {"this run": {"judge": [82.96], "selection": [83.57]}}
    (run / "published_curves.json").write_text(json.dumps(curves))
    monkeypatch.setattr(results, "RUNS", tmp_path / "records")
    kept = results.record(run, "d1")
    assert (kept / "history.json").is_file() and (kept / "published_curves.json").is_file()
    table = results.judge_epochs(REPO / "docs" / "page.md", "d1")
    rows = [
        line for line in table.splitlines() if line.startswith("| 1 ") or line.startswith("| 2 ")
    ]
    assert rows == ["| 1 | 81.71 (82.96) | 82.36 (83.57) | 26.8 min |",
                    "| 2 | 86.76 | 87.27 | 301 s |"]  # fmt: skip


def test_a_changed_record_shows_as_a_differing_table(results, tmp_path, monkeypatch):
    page = tmp_path / "page.md"
    page.write_text("x\n<!-- results: headline -->\nstale\n<!-- /results -->\ny\n")
    monkeypatch.setattr(results, "REPO", tmp_path)
    assert results.update(page, check=True) == ["page.md: headline"]
    assert "stale" in page.read_text()  # --check writes nothing
    results.update(page, check=False)
    assert results.update(page, check=True) == [] and "stale" not in page.read_text()


def test_readme_is_a_front_page():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 300, f"README has {len(lines)} lines; move detail into docs/"
