"""Training: the loops that train judges and debaters against games, between ``judges/`` and
``games/`` (rank 2) and ``experiments/`` (rank 4).

- :mod:`.onpolicy`: the on-policy judge loop (sample or enumerate each image's candidate tree,
  score its leaves with the current judge, solve it, one step on the realised plays), for every
  judge design (:mod:`debatelab.judges.designs`) and cell protocol (:mod:`debatelab.protocols`);
- :mod:`.debaters`: the learned pixel debaters' training and loading.

Supervised judge training (:mod:`debatelab.judges.train`) and the one checkpoint format, cache
and family registry (:mod:`debatelab.judges.checkpoints`) stay in ``judges/``, where the judge
families that use them live.
"""
