"""``python -m devfleet`` runs ``syncer-fleet``."""

from devfleet.cli import main

main()
