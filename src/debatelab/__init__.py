"""debatelab: a laboratory for scalable-oversight experiments.

The top-level names are loaded on first use (module ``__getattr__``), so ``import debatelab``
does not import torch, FastAPI or matplotlib until something that needs them is touched.
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from typing import TYPE_CHECKING

try:
    __version__ = version("debatelab")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

#: Public name -> the submodule that defines it.
_LAZY = {
    "JudgeCNN": ".judges",
    "all_mask_probs": ".judges.allmask",
    "best_of_n_weights": ".text.solve",
    "evaluate_trained_judge": ".games.sampled_play",
    "load_published_judge": ".judges.onpolicy",
    "nested_best_of_n": ".text.solve",
    "solve_reveal_game": ".games",
}

__all__ = [
    "JudgeCNN",
    "__version__",
    "all_mask_probs",
    "best_of_n_weights",
    "evaluate_trained_judge",
    "load_published_judge",
    "nested_best_of_n",
    "solve_reveal_game",
]

if TYPE_CHECKING:  # for type checkers and IDEs; nothing is imported at run time
    from .games import solve_reveal_game
    from .games.sampled_play import evaluate_trained_judge
    from .judges import JudgeCNN
    from .judges.allmask import all_mask_probs
    from .judges.onpolicy import load_published_judge
    from .text.solve import best_of_n_weights, nested_best_of_n


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(import_module(module, __name__), name)
        globals()[name] = value  # later look-ups skip this function
        return value
    if not name.startswith("_") and find_spec(f"{__name__}.{name}") is not None:
        return import_module(f".{name}", __name__)  # a subpackage: debatelab.games, ...
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
