#!/usr/bin/env bash
# Build .venv-colab: Python 3.13 with Colab's versions (requirements-colab.txt), for
# `make test-compat`. Idempotent: does nothing when the venv matches the requirements.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-colab
STAMP=$VENV/.installed

if [ -f "$STAMP" ] && [ "$STAMP" -nt requirements-colab.txt ]; then
  exit 0
fi

find_python() {
  local candidate
  for candidate in "${COMPAT_PYTHON:-}" python3.13 "$HOME"/.pyenv/versions/3.13.*/bin/python3.13; do
    [ -n "$candidate" ] || continue
    if command -v "$candidate" >/dev/null 2>&1 \
      && "$candidate" -c 'import sys, venv; sys.exit(sys.version_info[:2] != (3, 13))' 2>/dev/null; then
      command -v "$candidate"
      return 0
    fi
  done
  return 1
}

if ! PYTHON=$(find_python); then
  if command -v pyenv >/dev/null 2>&1; then
    echo "No Python 3.13 found: installing one with pyenv (a few minutes)"
    pyenv install --skip-existing 3.13
  fi
  if ! PYTHON=$(find_python); then
    echo "make test-compat needs Python 3.13 (Colab's). Looked for \$COMPAT_PYTHON," >&2
    echo "python3.13 on PATH and ~/.pyenv/versions/3.13.*; pyenv is not available to" >&2
    echo "install one. Install Python 3.13 (e.g. 'pyenv install 3.13') and run again." >&2
    exit 1
  fi
fi

echo "Building $VENV with $PYTHON ($("$PYTHON" --version))"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# The machine-wide pip constraints (if any) cap torch for the main venv's Python only.
PIP_CONSTRAINT="" "$VENV/bin/python" -m pip install --quiet -r requirements-colab.txt
touch "$STAMP"
