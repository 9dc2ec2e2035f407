"""`import debatelab` stays light: torch, FastAPI, matplotlib, uvicorn and zarr load only when a
name that needs them is used. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("torch", "fastapi", "matplotlib", "uvicorn", "zarr")


def _loaded_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; which of HEAVY it left in sys.modules, and what it
    printed last (``out``)."""
    script = (
        "import json, sys\n"
        f"{code}\n"
        f"print(json.dumps({{'heavy': [m for m in {HEAVY!r} if m in sys.modules],"
        " 'out': globals().get('out')}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_import_debatelab_loads_no_heavy_library():
    got = _loaded_after("import debatelab\nout = sorted(debatelab.__all__)")
    assert got["heavy"] == []
    assert "JudgeCNN" in got["out"] and "all_mask_probs" in got["out"]


def test_the_public_names_resolve_on_first_use():
    got = _loaded_after(
        "import debatelab\n"
        "out = [debatelab.JudgeCNN.__name__, debatelab.all_mask_probs.__name__,\n"
        "       debatelab.solve_reveal_game.__name__, debatelab.nested_best_of_n.__name__,\n"
        "       debatelab.best_of_n_weights.__name__, debatelab.__version__ != '',\n"
        "       debatelab.load_published_judge.__name__, debatelab.evaluate_trained_judge.__name__]\n"
        "from debatelab import JudgeCNN\n"
        "out.append(JudgeCNN is debatelab.judges.JudgeCNN)"
    )
    assert got["out"] == ["JudgeCNN", "all_mask_probs", "solve_reveal_game",
                          "nested_best_of_n", "best_of_n_weights", True,
                          "load_published_judge", "evaluate_trained_judge", True]  # fmt: skip
    assert "torch" in got["heavy"]  # JudgeCNN is a torch module: now it is loaded


def test_unknown_names_are_attribute_errors():
    import debatelab

    with pytest.raises(AttributeError, match="no_such_name"):
        debatelab.no_such_name  # noqa: B018
    assert "JudgeCNN" in dir(debatelab)


LIGHT = ["debatelab.policies", "debatelab.errors", "debatelab.paths", "debatelab.text",
         "debatelab.games", "debatelab.games.core", "debatelab.geometry", "debatelab.interfaces",
         "debatelab.configs", "debatelab.resume", "debatelab.experiments"]  # fmt: skip


@pytest.mark.parametrize("module", LIGHT)
def test_light_modules_stay_free_of_torch(module):
    """The game core, the text proxy and the spine's joints are numpy only: they load without
    torch, matplotlib, FastAPI or zarr."""
    assert _loaded_after(f"import {module}")["heavy"] == []
