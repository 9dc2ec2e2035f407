"""Best-of-N proxy for text debates: pools, nested solve, sweeps, bootstrap, synthetic pools.

See ``pools`` for the data schema, ``solve`` for the nested best-of-n solve on the game core
(players are rank policies; numbers of best-of-n draws become ``BestOfN`` at the config edges), ``sweeps`` for worms and meshes, ``bootstrap`` for the paired hierarchical bootstrap and
``synthetic`` for pools with a known ground truth.
"""

from .bootstrap import BootstrapConfig, BootstrapResult, bootstrap
from .pools import PROTOCOLS, PoolError, PoolSet, QuestionPool
from .readers import read_pools, write_pools
from .solve import NestedResult, best_of_n_weights, draws_policy, nested_best_of_n, text_policy
from .sweeps import Sweep, SweepSpec, mesh, sweep, worm
from .synthetic import SyntheticConfig, population_metrics, synthetic_pools

__all__ = [
    "PROTOCOLS",
    "BootstrapConfig",
    "BootstrapResult",
    "NestedResult",
    "PoolError",
    "PoolSet",
    "QuestionPool",
    "Sweep",
    "SweepSpec",
    "SyntheticConfig",
    "best_of_n_weights",
    "bootstrap",
    "draws_policy",
    "mesh",
    "nested_best_of_n",
    "population_metrics",
    "read_pools",
    "sweep",
    "synthetic_pools",
    "text_policy",
    "worm",
    "write_pools",
]
