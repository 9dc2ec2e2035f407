"""An example debatelab plug-in: each module declares one registered part.

- :mod:`.segments`: the dataset variant ``segments`` (seven-segment digits it draws itself);
- :mod:`.arithmetic`: the task ``arithmetic`` (sums with exact answers, verified on the host);
- :mod:`.judges`: the judge design ``deep`` (D3 with a two-layer head) for on-policy training.

``pyproject.toml`` names them as entry points; debatelab finds them when it is installed.
Importing this package imports nothing else (debatelab loads each part on first use).
"""
