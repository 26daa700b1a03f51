"""``python -m syncer`` runs the command line."""

from syncer.cli import main

main()
