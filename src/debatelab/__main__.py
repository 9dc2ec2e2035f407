"""``python -m debatelab`` runs the command line."""

from .cli import main

main()
