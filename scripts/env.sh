# Sourced by the scripts (and by people, from any folder): put the project virtual environment made
# by scripts/bootstrap first on PATH. The repository is found from this file's own place.
# shellcheck shell=bash
_syncer_root="$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)"
export VIRTUAL_ENV="$_syncer_root/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
unset PYTHONHOME _syncer_root
