#!/usr/bin/env bash
# Prepare, on a machine that reaches PyPI, what the lent TPU machine (the `device` tool's
# tpu-v5e: no network) lacks for dev/tpu_run.py, in two folders that git ignores and that
# the device command names in `carry`:
#   .whl-tpu/   wheels its own package index does not have (cp311, manylinux x86_64);
#   .tpu-data/  MNIST (MNIST/raw/*.gz) and Tiny Shakespeare (tinyshakespeare/input.txt), laid
#               out as the chapters expect under JAXBOOK_DATA (the Makefile's `data` target).
# Safe to run again: what is there is kept. Both folders are added to .git/info/exclude.
#
# The wheels, each checked by its Requires-Dist (unzip -p WHEEL '*/METADATA'):
#   grain 0.2.18        absl-py, array-record>=0.8.1, cloudpickle, etils[epath,epy], numpy,
#                       portpicker, protobuf>=5.28.3: no jax pin (the same version as
#                       requirements.txt; it works with the machine's JAX 0.10.2)
#   array-record 0.8.6  absl-py, etils[epath] (its binary wheel is manylinux2014, glibc 2.17)
#   qwix 0.1.8          jax, jaxlib, flax>=0.12.0, numpy, opt_einsum, absl-py: no upper
#                       bounds; the machine's index gives flax 0.12.8 (seen in issue 40's run)
#   portpicker 1.6.0    psutil; grain's only need that the machine's index lacks
#   xprof 2.24.2        (py3-none, manylinux_2_27; 32 MB) chapter 18 uses only its converter,
#                       xprof.convert.raw_to_tool_data, which needs protobuf (installed from
#                       the index); the rest of its needs (gviz-api, cheroot, werkzeug, fsspec,
#                       google-cloud-storage, duckdb, ...) serve its web server, not used there
# Every other need (absl-py, cloudpickle, etils, protobuf, psutil, flax, opt_einsum) is in
# the machine's index; dev/tpu_setup.sh installs them from there first and then only the
# carried wheels whose distribution is still missing.
#
# torchvision: the machine's torch is a CPU build (2.13.0+cpu, from /opt/wheels); PyPI's
# torchvision wheels are built against PyPI's CUDA torch and fail at import beside it, and
# PyTorch's own CPU index is out of reach from the book's machines. So the chapter processes
# use dev/tpu_standins/torchvision (MNIST from the same files) where the real one does not
# import; this script checks nothing about it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
WHEELS=.whl-tpu
DATA=.tpu-data
PINS=(grain==0.2.18 array-record==0.8.6 qwix==0.1.8 portpicker==1.6.0 xprof==2.24.2)
SHARED=${JAXBOOK_SHARED_DATA:-../shared/data}
LOCAL=${JAXBOOK_DATA:-data}
MNIST_FILES=(train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz
             t10k-labels-idx1-ubyte.gz)

exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for folder in "/$WHEELS/" "/$DATA/"; do
  grep -qxF "$folder" "$exclude" 2>/dev/null || echo "$folder" >> "$exclude"
done

mkdir -p "$WHEELS"
for pin in "${PINS[@]}"; do
  name=${pin%%==*}
  stem="${name//-/_}-${pin##*==}-"
  if ls "$WHEELS/$stem"*.whl >/dev/null 2>&1; then
    continue
  fi
  # One version of each distribution: an older download of it goes.
  rm -f "$WHEELS/${name//-/_}"-*.whl
  "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
    --only-binary=:all: --python-version 3.11 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d "$WHEELS" "$pin"
done
echo "wheels in $WHEELS:"
for wheel in "$WHEELS"/*.whl; do
  needs=$(unzip -p "$wheel" '*.dist-info/METADATA' | sed -n 's/^Requires-Dist: //p' \
          | grep -v 'extra ==' | tr '\n' ';' | sed 's/;$//')
  echo "  $(basename "$wheel"): needs ${needs:-nothing}"
done

mkdir -p "$DATA/MNIST/raw" "$DATA/tinyshakespeare"
for file in "${MNIST_FILES[@]}"; do
  target="$DATA/MNIST/raw/$file"
  [ -f "$target" ] && continue
  for source in "$SHARED/mnist/$file" "$LOCAL/MNIST/raw/$file"; do
    if [ -f "$source" ]; then cp "$source" "$target"; chmod u+w "$target"; break; fi
  done
  [ -f "$target" ] || echo "MISSING: $file (not in $SHARED/mnist nor $LOCAL/MNIST/raw)" >&2
done
target="$DATA/tinyshakespeare/input.txt"
if [ ! -f "$target" ]; then
  for source in "$SHARED/tinyshakespeare/input.txt" "$LOCAL/tinyshakespeare/input.txt"; do
    if [ -f "$source" ]; then cp "$source" "$target"; chmod u+w "$target"; break; fi
  done
  [ -f "$target" ] || echo "MISSING: tinyshakespeare/input.txt" >&2
fi
du -sh "$WHEELS" "$DATA"
echo "carry: [\"$WHEELS\", \"$DATA\"] (the travelling tree must stay under 64 MiB)"
