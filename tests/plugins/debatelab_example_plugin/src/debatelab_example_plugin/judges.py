"""A judge design for on-policy training: D3 with a deeper head.

``deep`` is D3's network (trunk, projection, claim one-hots in the head) with two hidden layers
of 64 in the head instead of one, and dropout 0.2 instead of 0.3. Everything else a design says
(how many claims it reads under each rule, its factorised scorer, its loss, its checkpoint
family) is :class:`~debatelab.judges.designs.ClaimDesign`'s, so the declaration is the whole
plug-in: ``debatelab judges train --design deep`` trains it on any protocol and rule.
"""

from __future__ import annotations

from debatelab.judges.designs import ClaimDesign

#: The registered part (entry point ``deep`` in the group ``debatelab.judge_designs``). It has
#: no published judges (``published_keys`` None) and takes the published seeds' stride of D3.
DEEP = ClaimDesign("deep", "D3 with a two-layer head (dropout 0.2)", depth=2, dropout=0.2)
