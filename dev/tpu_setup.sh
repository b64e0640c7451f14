# Set up the lent TPU machine (the `device` tool's tpu-v5e) for dev/tpu_run.py.
#
# That machine is bare: Python 3.11 with JAX, jaxlib, libtpu, numpy and scipy in a folder
# that PYTHONPATH names, no network, and a package index of its own on its disk
# (file:///opt/pypi/simple) plus a wheel folder (/opt/wheels) that holds a CPU build of torch.
# This script installs into $JAXBOOK_TPU_SITE (/tmp/site), which goes at the END of
# PYTHONPATH so that the machine's own JAX stays first:
#   1. from the machine's index: what the chapters import (flax, optax, orbax-checkpoint,
#      tensorstore, matplotlib, ipython, tqdm, rich, ...), resolved against the machine's
#      jax and jaxlib versions (a constraint; without it if that fails), so pip picks
#      versions that fit them;
#   2. torch, the CPU build, from the wheel folder (JAXBOOK_TPU_TORCH=0 skips it: only
#      chapters 0, 7 to 10, 12 and 14 need it);
#   3. the wheels that dev/tpu_prepare.sh downloaded into .whl-tpu/ on a machine with
#      PyPI (grain, array-record, qwix, portpicker, xprof), --no-deps, each only where its
#      distribution is not installed yet;
#   4. removes any jax, jaxlib, numpy, scipy, ml_dtypes, opt_einsum or libtpu that pip put into the
#      folder beside the machine's own, then prints the version of every module the chapters
#      import, or why it does not import.
# Nothing here stops at a failure: it says what failed and goes on. Run it a second time on
# the same (still warm) machine and it only prints the versions.
#
# Usage, from the repository root on that machine (sourced, so that PYTHONPATH stays set):
#   . dev/tpu_setup.sh
#   python3 dev/tpu_run.py --out "$OUT" --budget 540 02 03
# README, "Testing on a TPU", has the whole device command.

jaxbook_tpu_setup() {
  local py=${PYTHON:-python3}
  local site=${JAXBOOK_TPU_SITE:-/tmp/site}
  local index=${JAXBOOK_TPU_INDEX:-file:///opt/pypi/simple}
  local wheels=${JAXBOOK_TPU_WHEELS:-/opt/wheels}
  local carried=${JAXBOOK_TPU_CARRIED:-.whl-tpu}
  local start=$SECONDS
  # What the chapters import from a package index (`grep -h '^import\|^from' notebooks`),
  # less what the machine has and what travels as wheels; etils's extras are grain's needs.
  local packages=(flax optax orbax-checkpoint tensorstore matplotlib matplotlib-inline ipython
                  tqdm rich pillow absl-py cloudpickle "etils[epath,epy]" protobuf psutil)
  mkdir -p "$site"
  local stamp=$site/.jaxbook-tpu-setup
  local want
  want="$(printf '%s ' "${packages[@]}") torch=${JAXBOOK_TPU_TORCH:-1} $(ls "$carried" 2>/dev/null | tr '\n' ' ')"
  local pipi=(env PIP_CONFIG_FILE=/dev/null "$py" -m pip install --isolated -q
              --disable-pip-version-check --only-binary=:all: --no-compile --no-cache-dir
              --target "$site")
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "tpu_setup: $site is already set up"
  else
    # The machine's own versions, read before $site joins the path.
    local constraints=$site/.constraints.txt
    "$py" - > "$constraints" <<'EOF'
import importlib.metadata as m
for name in ("jax", "jaxlib"):
    try:
        print(f"{name}=={m.version(name)}")
    except m.PackageNotFoundError:
        pass
EOF
    echo "tpu_setup: the machine has $(tr '\n' ' ' < "$constraints")"
    echo "tpu_setup: installing from $index: ${packages[*]}"
    if ! "${pipi[@]}" --index-url "$index" -c "$constraints" "${packages[@]}"; then
      echo "tpu_setup: FAILED as one install constrained to the machine's versions above;"
      echo "tpu_setup: again without the constraint"
      if ! "${pipi[@]}" --index-url "$index" "${packages[@]}"; then
        echo "tpu_setup: FAILED again; one package at a time"
        local name
        for name in "${packages[@]}"; do
          "${pipi[@]}" --index-url "$index" "$name" || echo "tpu_setup: FAILED: $name"
        done
      fi
    fi
    if [ "${JAXBOOK_TPU_TORCH:-1}" != 0 ]; then
      echo "tpu_setup: installing torch (CPU build) from $wheels"
      "${pipi[@]}" --index-url "$index" --find-links "$wheels" -c "$constraints" torch \
        || "${pipi[@]}" --index-url "$index" --find-links "$wheels" torch \
        || echo "tpu_setup: FAILED: torch (chapters 0, 7-10, 12 and 14 need it)"
    fi
    # Carried wheels whose distribution is not installed yet (neither the machine's nor
    # from the index above), all in one call, without their dependencies.
    local missing
    missing=$(PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site" "$py" - "$carried" <<'EOF'
import importlib.metadata as m
import pathlib
import sys

for wheel in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name = wheel.name.split("-")[0]
    try:
        m.version(name)
    except m.PackageNotFoundError:
        print(wheel)
EOF
)
    if [ -n "$missing" ]; then
      echo "tpu_setup: installing carried wheels: $(echo $missing | xargs -n1 basename | tr '\n' ' ')"
      # shellcheck disable=SC2086  # one path a word
      "${pipi[@]}" --no-index --no-deps $missing || echo "tpu_setup: FAILED: carried wheels"
    elif ! ls "$carried"/*.whl >/dev/null 2>&1; then
      echo "tpu_setup: no $carried/*.whl (run dev/tpu_prepare.sh and carry .whl-tpu):" \
           "grain, array-record and qwix will be missing"
    fi
    # pip brings jax, jaxlib, numpy... along as dependencies: the machine's own stay, the
    # copies go (they sit behind the machine's on the path anyway).
    local name
    for name in jax jaxlib jax_plugins numpy numpy.libs scipy scipy.libs ml_dtypes opt_einsum libtpu; do
      if [ -e "$site/$name" ] && (cd / && "$py" -c "import ${name%.libs}" 2>/dev/null); then
        rm -rf "${site:?}/$name" "$site"/"${name%.libs}"-*.dist-info
        echo "tpu_setup: removed $site/$name (the machine has its own)"
      fi
    done
    echo "$want" > "$stamp"
    echo "tpu_setup: installed in $((SECONDS - start)) s"
  fi
  case ":${PYTHONPATH:-}:" in
    *":$site:"*) ;;
    *) export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$site" ;;
  esac
  # Versions, and what does not import. JAX_PLATFORMS=cpu: this process must not hold the
  # chip (dev/tpu_run.py's chapter processes will).
  JAX_PLATFORMS=cpu "$py" - <<'EOF'
import importlib
import importlib.metadata as m
import platform
import sys

print(f"Python {platform.python_version()}, glibc {platform.libc_ver()[1]}")
modules = [("jax", "jax"), ("jaxlib", "jaxlib"), ("libtpu", "libtpu"), ("numpy", "numpy"),
           ("scipy", "scipy"), ("flax", "flax"), ("optax", "optax"),
           ("orbax.checkpoint", "orbax-checkpoint"), ("tensorstore", "tensorstore"),
           ("grain", "grain"), ("array_record", "array-record"), ("qwix", "qwix"),
           ("matplotlib", "matplotlib"), ("IPython", "ipython"), ("tqdm", "tqdm"),
           ("rich", "rich"), ("PIL", "pillow"), ("torch", "torch"),
           ("torchvision", "torchvision")]
for module, dist in modules:
    try:
        where = importlib.import_module(module).__file__ or ""
        try:
            found = m.version(dist)
        except m.PackageNotFoundError:
            found = "?"
        print(f"  {module:18} {found:14} {where.rsplit('/site-packages', 1)[0][:60]}")
    except Exception as error:  # noqa: BLE001 - report and go on
        line = f"{type(error).__name__}: {error}".splitlines()[0]
        print(f"  {module:18} NOT IMPORTABLE  {line[:150]}")
sys.stdout.flush()
EOF
}

jaxbook_tpu_setup
