"""debatelab: a laboratory for scalable-oversight experiments."""

from importlib.metadata import PackageNotFoundError, version

from .games import solve_reveal_game
from .judges import JudgeCNN
from .judges.allmask import all_mask_probs
from .text.solve import best_of_n_weights, nested_best_of_n

try:
    __version__ = version("debatelab")
except PackageNotFoundError:  # running from a source tree without installation
    __version__ = "0.0.0+unknown"

__all__ = [
    "JudgeCNN",
    "__version__",
    "all_mask_probs",
    "best_of_n_weights",
    "nested_best_of_n",
    "solve_reveal_game",
]
