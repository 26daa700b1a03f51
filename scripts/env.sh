# Sourced by the scripts: put the project virtual environment made by scripts/bootstrap first on PATH.
# shellcheck shell=bash
export VIRTUAL_ENV="$PWD/.venv"
export PATH="$VIRTUAL_ENV/bin:$PATH"
unset PYTHONHOME
