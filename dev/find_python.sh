#!/usr/bin/env bash
# Print the path of a Python >= 3.12 for the book's .venv (JAX 0.11 and newer need it),
# installing one with pyenv or uv when the machine has neither. Used by the Makefile.
# Prefers 3.12, the version the committed outputs come from.
#   JAXBOOK_PYTHON=/path/to/python   use this interpreter (it must be >= 3.12)
set -euo pipefail
WANT=3.12

ok() {  # $1 runs, is Python >= 3.12 and has venv
    "$1" -c 'import sys, venv; sys.exit(sys.version_info[:2] < (3, 12))' >/dev/null 2>&1
}

candidates() {
    printf '%s\n' python3.12
    compgen -G "$HOME/.pyenv/versions/3.12.*/bin/python3.12" || true
    printf '%s\n' python3.13 python3.14 python3
    compgen -G "$HOME/.pyenv/versions/3.1[3-9].*/bin/python3" || true
}

find_one() {
    local candidate path
    if [[ -n ${JAXBOOK_PYTHON:-} ]]; then
        ok "$JAXBOOK_PYTHON" && { command -v "$JAXBOOK_PYTHON"; return 0; }
        echo "JAXBOOK_PYTHON=$JAXBOOK_PYTHON is not a Python >= 3.12 with venv" >&2
        exit 1
    fi
    while read -r candidate; do
        path=$(command -v "$candidate" 2>/dev/null) || continue
        # a pyenv shim for a version that is not selected fails to run: ok() skips it
        if ok "$path"; then
            printf '%s\n' "$path"
            return 0
        fi
    done < <(candidates)
    return 1
}

find_one && exit 0
if command -v pyenv >/dev/null 2>&1; then
    echo "No Python >= 3.12 found: installing Python $WANT with pyenv (a few minutes)" >&2
    pyenv install --skip-existing "$WANT" >&2 && find_one && exit 0
elif command -v uv >/dev/null 2>&1; then
    echo "No Python >= 3.12 found: installing Python $WANT with uv" >&2
    uv python install "$WANT" >&2 && uv python find "$WANT" && exit 0
fi
cat >&2 <<MSG
The book's environment needs Python 3.12 or newer (jax 0.12 supports no older Python).
Looked for \$JAXBOOK_PYTHON, python3.12, python3.13, python3.14 and python3 on PATH and
~/.pyenv/versions/3.1[2-9].*, and found neither pyenv nor uv to install one.
Install Python 3.12 (for example 'pyenv install 3.12' or 'uv python install 3.12'), then
run again, or point to one with JAXBOOK_PYTHON=/path/to/python3.12.
MSG
exit 1
