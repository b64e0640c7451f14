#!/usr/bin/env bash
# Build .venv-aot: the TPU compiler (libtpu) for `make test-aot`, which compiles chapter 16's
# strategies ahead of time for TPU slices from this CPU machine (dev/aot_tpu.py). A venv of
# its own, so that the book's .venv never gets libtpu (the CPU chapters' outputs must not
# change). Same Python as .venv (dev/find_python.sh), and the versions requirements.txt pins
# for jax, jaxlib, flax, optax and numpy, with jax's [tpu] extra and its libtpu pinned here.
# About 640 MB installed (libtpu is a 214 MB wheel; pip's cache reuses the download that
# `make test-tpu-vm` makes). Idempotent: does nothing when the venv is newer than
# requirements.txt and this script.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=.venv-aot
STAMP=$VENV/.installed
LIBTPU=libtpu==0.0.50.1  # what jax[tpu]==0.12.0.1 brings (it asks for libtpu==0.0.50.*)

if [ -f "$STAMP" ] && [ "$STAMP" -nt requirements.txt ] && [ "$STAMP" -nt "$0" ]; then
  exit 0
fi

pin() {  # the line of requirements.txt that pins package $1
  local line
  line=$(grep -E "^$1==" requirements.txt) || { echo "requirements.txt pins no $1" >&2; exit 1; }
  echo "$line"
}
JAX=$(pin jax)
PACKAGES=("jax[tpu]==${JAX#jax==}" "$(pin jaxlib)" "$LIBTPU" "$(pin flax)" "$(pin optax)"
          "$(pin numpy)")

PYTHON=$(bash dev/find_python.sh)
echo "Building $VENV with $PYTHON ($("$PYTHON" --version)): ${PACKAGES[*]}"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "${PACKAGES[@]}"
touch "$STAMP"
