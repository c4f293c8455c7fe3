#!/usr/bin/env bash
# Runs a test script under the Python venv of scripts/setup.d/40-python.sh (TensorBoard,
# safetensors, numpy), for ctest entries that check our files with the stock readers.
# Usage: venv-python.sh SCRIPT [ARGS...]
venv="${TAAS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/taas}/venv"
[ -x "$venv/bin/python" ] || { echo "no venv at $venv: run scripts/setup.sh"; exit 1; }
exec "$venv/bin/python" "$@"
