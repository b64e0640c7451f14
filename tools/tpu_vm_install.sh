#!/usr/bin/env bash
# Set up .venv for Hands-on JAX on a Cloud TPU VM. Run from the repository root:
#
#   bash tools/tpu_vm_install.sh
#
# The pinned jax (0.11 and newer) needs Python >= 3.12. The TPU VM images (tpu-ubuntu2204-base, ...) are
# Ubuntu 22.04 and ship Python 3.10, so this script looks for a newer Python. If it finds
# none, it lets uv install one. Running it again is safe: a good .venv is reused.
#
# An older JAX, for a TPU v2-8 or v3-8 (current JAX is no longer tested on those, and a fresh v3
# has been reported to fail with "Couldn't mmap", jax-ml/jax#30834). The last combination seen
# working on a v2-8 is Colab's retired v2-8 runtime, jax 0.5.3 with libtpu 0.0.7.1:
#
#   JAXBOOK_JAX_VERSION=0.5.3 JAXBOOK_LIBTPU_VERSION=0.0.7.1 bash tools/tpu_vm_install.sh
#
# That installs requirements.txt without its jax and jaxlib lines, with the pins of optax,
# orbax-checkpoint and flax (they follow JAX releases) turned into upper bounds, so that pip can
# go back to releases made for that jax (orbax-checkpoint 0.12.8 needs jax >= 0.6.0 and flax
# 0.12.12 jax >= 0.11.1, so with 0.5.3 pip picks flax 0.10.6; optax 0.2.8 needs >= 0.5.3, so
# with 0.5.3 it stays; grain does not depend on jax and keeps its pin). flax is capped, not left
# out: chapters 14 to 17's setup cells pip-install a missing flax, which would bring the newest
# jax with it and undo the override. Below jax 0.6,
# orbax-checkpoint is held at 0.11.23 or older: 0.11.24 declares jax >= 0.5.0 but calls
# jax.monitoring.record_scalar, new in jax 0.6.0, so chapter 8's checkpoint cell fails with it.
# tests/test_tpu_vm_resolve.py runs pip's resolver on this line and on the pinned one. Plus:
#   - without JAXBOOK_LIBTPU_VERSION: jax[tpu]==X, whose extra picks the libtpu (0.0.11.* for 0.5.3);
#   - with it: jax==X jaxlib==X libtpu==Y requests, named one by one, because the tpu extra pins
#     its own libtpu (jax[tpu]==0.5.3 and libtpu==0.0.7.1 cannot be installed together).
# It writes .venv/jaxbook-jax-override ("jax==X", and "libtpu==Y" when given), which tells the
# chapters' setup cell to leave JAX as it is. A run without JAXBOOK_JAX_VERSION goes back to the
# pins and removes that file. Some chapters need a newer JAX: chapter 11 lists them. With 0.5.3,
# chapters 14 to 17 (Part IV, the ones that import flax) do not run: executed cell by cell on a
# CPU with jax 0.5.3 and flax 0.10.6, each stopped at its first newer API: 14 at an assignment
# into an nnx.Variable (layer.kernel[...] = ...), 15 at nnx.data, 16 at jax.sharding.reshard,
# and 17's training script at optimizer.update(model, grads) (flax 0.10.6 takes only grads).
#
# torch and torchvision (the chapters read MNIST with torchvision) come from PyTorch's CPU index
# by default: PyPI's torch for Linux x86_64 is the CUDA build, which pulls NVIDIA's CUDA libraries
# and triton (5.5 of the 7.0 GB of the book's pinned .venv on its x86_64 machine), useless on a TPU
# VM. The index is passed as --extra-index-url: pip then prefers torch==X+cpu (a local version
# label sorts above the plain X, and the requirement torch==X matches both) and takes every
# other package from PyPI as before. JAXBOOK_TORCH_INDEX= (empty) goes back to PyPI's build.
#
# Running the script twice is safe: a .venv with a good Python is reused, and pip leaves what is
# already installed at the right version alone.
#
# Environment variables:
#   PYTHON=/path/to/python         use this interpreter (it must be >= 3.12)
#   JAXBOOK_NO_DOWNLOAD=1          never download uv (an offline VM)
#   JAXBOOK_DRY_RUN=1              print the install commands (and the file writes) instead of
#                                  running them
#   JAXBOOK_JAX_VERSION=X.Y.Z      install this jax instead of the pinned one (see above)
#   JAXBOOK_LIBTPU_VERSION=X.Y.Z   with JAXBOOK_JAX_VERSION: this libtpu instead of the extra's
#   JAXBOOK_TORCH_INDEX=URL        where torch's CPU build comes from (default: PyTorch's CPU
#                                  index); empty: PyPI's torch, the CUDA build (about 5 GB more)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

MIN_MINOR=12   # Python 3.12
UV_PYTHON=3.12 # what uv installs: the version the book's outputs come from
DRY_RUN=${JAXBOOK_DRY_RUN:-}
REJECTED=()    # "name (version)" of every interpreter looked at and turned down
JAX_VERSION=${JAXBOOK_JAX_VERSION:-}       # empty: the pin in requirements.txt
LIBTPU_VERSION=${JAXBOOK_LIBTPU_VERSION:-} # empty: whatever jax[tpu] brings
TORCH_INDEX=${JAXBOOK_TORCH_INDEX-https://download.pytorch.org/whl/cpu} # empty: PyPI's torch
INDEX_ARGS=()
[[ -z $TORCH_INDEX ]] || INDEX_ARGS=(--extra-index-url "$TORCH_INDEX")
MARKER=.venv/jaxbook-jax-override          # the setup cell leaves JAX alone when this exists
# Packages whose releases follow JAX's: with JAXBOOK_JAX_VERSION their pins become upper bounds.
JAX_FOLLOWERS=(optax orbax-checkpoint flax)
# Packages left out with JAXBOOK_JAX_VERSION: qwix (chapter 20's int8 section) needs flax >= 0.12,
# so jax >= 0.11.1; chapter 20 then skips that section with a message (it does not run on such
# an old JAX anyway: chapters 14 onwards need a newer flax).
OVERRIDE_LEAVES_OUT=(qwix)
# The newest orbax-checkpoint that runs with jax < 0.6 (see the header): pip cannot tell.
ORBAX_BEFORE_JAX_0_6=0.11.23

say() { printf '==> %s\n' "$*"; }

die() {
    printf '\nerror: %s\n' "$*" >&2
    exit 1
}

# Run a command, or print it in dry-run mode. Read-only queries bypass this.
run() {
    if [[ -n $DRY_RUN ]]; then
        local arg out=""
        for arg in "$@"; do
            [[ $arg =~ [^A-Za-z0-9_./=:+-] ]] && arg="\"$arg\""
            out+=" $arg"
        done
        printf '[dry run]%s\n' "$out"
    else
        "$@"
    fi
}

# Write $2 (and a newline) to the file $1, or print what would be written in dry-run mode.
write_file() {
    if [[ -n $DRY_RUN ]]; then
        printf '[dry run] write %s: %s\n' "$1" "${2//$'\n'/ }"
    else
        printf '%s\n' "$2" >"$1"
    fi
}

# Print "3.X" for an interpreter. Fails if it cannot be run.
py_version() {
    "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null
}

# True if $1 runs and is Python 3.12 or newer. Otherwise it is noted in REJECTED.
py_ok() {
    local version
    if ! version=$(py_version "$1"); then
        REJECTED+=("$1 (does not run)")
        return 1
    fi
    if [[ $version =~ ^3\.([0-9]+)$ ]] && ((BASH_REMATCH[1] >= MIN_MINOR)); then
        return 0
    fi
    REJECTED+=("$1 ($version)")
    return 1
}

# Set PY to the first Python >= 3.12 on this machine. (Globals, not $(...): a subshell would
# lose what REJECTED records.)
find_python() {
    if [[ -n ${PYTHON:-} ]]; then
        # An explicit choice is not second-guessed: if it is too old, say so.
        py_ok "$PYTHON" || return 1
        PY=$(command -v "$PYTHON" || printf '%s' "$PYTHON")
        return 0
    fi
    local name path
    for name in python3.12 python3.13 python3.14 python3; do
        path=$(command -v "$name") || continue
        if py_ok "$path"; then
            PY=$path
            return 0
        fi
    done
    return 1
}

find_uv() {
    command -v uv 2>/dev/null && return 0
    # The installer puts uv here, and this shell's PATH may not include it yet.
    [[ -x $HOME/.local/bin/uv ]] && printf '%s\n' "$HOME/.local/bin/uv"
}

install_uv() {
    local get
    if command -v curl >/dev/null 2>&1; then
        get="curl -LsSf"
    elif command -v wget >/dev/null 2>&1; then
        get="wget -qO-"
    else
        say "neither curl nor wget is installed, so uv cannot be downloaded"
        return 1
    fi
    say "installing uv into ~/.local/bin with its official installer"
    run sh -c "$get https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=\"\$HOME/.local/bin\" sh"
}

# No Python >= 3.12 on the machine: set PY to one that uv provides.
python_from_uv() {
    local uv
    uv=$(find_uv) || true
    if [[ -z $uv ]]; then
        if [[ -n ${JAXBOOK_NO_DOWNLOAD:-} ]]; then
            say "uv is not installed, and JAXBOOK_NO_DOWNLOAD is set, so it is not downloaded"
            return 1
        fi
        install_uv || return 1
        uv=$(find_uv) || true
        if [[ -z $uv ]]; then
            [[ -n $DRY_RUN ]] || return 1
            uv=uv # dry run: nothing was installed, so show the commands with the plain name
        fi
    fi
    # A uv-managed Python may already exist (e.g. from an earlier run).
    if PY=$("$uv" python find ">=3.$MIN_MINOR" 2>/dev/null); then
        return 0
    fi
    say "no Python >= 3.$MIN_MINOR here: uv installs Python $UV_PYTHON"
    run "$uv" python install "$UV_PYTHON" || return 1
    if ! PY=$("$uv" python find "$UV_PYTHON" 2>/dev/null); then
        [[ -n $DRY_RUN ]] || return 1
        PY="\$($uv python find $UV_PYTHON)" # dry run: nothing was installed
    fi
}

no_python_message() {
    local rejected="none found" uv_state="not installed" fix
    if ((${#REJECTED[@]})); then
        rejected=$(printf '%s, ' "${REJECTED[@]}")
        rejected=${rejected%, }
    fi
    find_uv >/dev/null && uv_state="installed, but it provided no Python"
    if [[ -n ${JAXBOOK_NO_DOWNLOAD:-} ]]; then
        fix="rerun without JAXBOOK_NO_DOWNLOAD (and with network access), so that the script"
        fix+=" installs uv into ~/.local/bin and runs 'uv python install $UV_PYTHON'"
    else
        fix="check the network (uv and its Python are downloaded) and that curl or wget is"
        fix+=" installed, then rerun"
    fi
    die "no Python >= 3.$MIN_MINOR was found, and the pinned jax $JAX_PIN needs one." \
        "Looked for \$PYTHON (${PYTHON:-unset}), then python3.12, python3.13, python3.14 and" \
        "python3 on PATH, then a uv-managed Python. Turned down: $rejected. uv: $uv_state." \
        "To fix it, either $fix, or install Python 3.$MIN_MINOR+ (with its venv module) yourself" \
        "and rerun as: PYTHON=/path/to/python3.12 bash tools/tpu_vm_install.sh"
}

# --- the jax version pinned in requirements.txt (jax[tpu] must match it)
[[ -f requirements.txt ]] || die "requirements.txt not found: run this from the repository root."
JAX_PIN=$(sed -n 's/^jax==\([0-9][0-9A-Za-z.]*\).*/\1/p' requirements.txt | sed -n 1p)
[[ -n $JAX_PIN ]] || die "requirements.txt has no 'jax==X.Y.Z' line to take the version from."

# Stop unless $2 (the value of the variable $1) is a plain release number like 0.5.3 or 0.0.7.1.
check_version() {
    [[ $2 =~ ^[0-9]+(\.[0-9]+){2,3}$ ]] && return 0
    die "$1='$2' is not a version number: give a release such as 0.5.3 or 0.0.7.1" \
        "(three or four numbers separated by dots, no '==', ranges or spaces)."
}

# Lowercase, with '_' and '.' as '-' (how pip compares project names).
norm_name() {
    local name=${1,,}
    name=${name//_/-}
    printf '%s' "${name//./-}"
}

# True if JAXBOOK_JAX_VERSION is older than 0.6.0.
jax_before_0_6() {
    [[ $JAX_VERSION =~ ^0\.([0-9]+)\. ]] && ((BASH_REMATCH[1] < 6))
}

# Fill REQS with requirements.txt for JAXBOOK_JAX_VERSION: one pip argument per requirement,
# without the jax and jaxlib lines, with each JAX_FOLLOWERS pin "name==V" as "name<=V", and
# orbax-checkpoint held at ORBAX_BEFORE_JAX_0_6 or older for a jax older than 0.6, and without
# the OVERRIDE_LEAVES_OUT packages.
override_requirements() {
    local line name follower left_out
    REQS=()
    while IFS= read -r line || [[ -n $line ]]; do
        line=${line%%#*}
        line=${line#"${line%%[![:space:]]*}"}
        line=${line%"${line##*[![:space:]]}"}
        [[ -z $line ]] && continue
        [[ $line == -* ]] &&
            die "requirements.txt has the pip option line '$line', which JAXBOOK_JAX_VERSION" \
                "cannot pass on: run without JAXBOOK_JAX_VERSION, or move that option out."
        name=$(norm_name "${line%%[<>=!~;[ ]*}")
        [[ $name == jax || $name == jaxlib ]] && continue
        for left_out in "${OVERRIDE_LEAVES_OUT[@]}"; do
            [[ $name == "$left_out" ]] && continue 2
        done
        for follower in "${JAX_FOLLOWERS[@]}"; do
            if [[ $name == "$follower" && $line =~ ^[^=]+==([^=;[:space:]]+)$ ]]; then
                line="${line%%==*}<=${BASH_REMATCH[1]}"
            fi
        done
        if [[ $name == orbax-checkpoint ]] && jax_before_0_6; then
            line="orbax-checkpoint<=$ORBAX_BEFORE_JAX_0_6"
        fi
        REQS+=("$line")
    done <requirements.txt
}

# --- an older jax instead of the pin (JAXBOOK_JAX_VERSION), checked before anything changes
if [[ -n $JAX_VERSION ]]; then
    check_version JAXBOOK_JAX_VERSION "$JAX_VERSION"
    [[ -z $LIBTPU_VERSION ]] || check_version JAXBOOK_LIBTPU_VERSION "$LIBTPU_VERSION"
elif [[ -n $LIBTPU_VERSION ]]; then
    die "JAXBOOK_LIBTPU_VERSION=$LIBTPU_VERSION is set without JAXBOOK_JAX_VERSION. libtpu must" \
        "match the jax: jax[tpu]==$JAX_PIN brings its own. Set both, e.g." \
        "JAXBOOK_JAX_VERSION=0.5.3 JAXBOOK_LIBTPU_VERSION=0.0.7.1 bash tools/tpu_vm_install.sh"
fi

# --- the interpreter for .venv
if [[ -x .venv/bin/python ]] && py_ok .venv/bin/python; then
    say ".venv already has Python $(py_version .venv/bin/python): reusing it"
else
    if [[ -e .venv ]]; then
        OLD=$(py_version .venv/bin/python || echo "a broken interpreter")
        say ".venv has Python $OLD, older than 3.$MIN_MINOR: it will be recreated"
        REJECTED=()   # .venv is not a candidate, so leave it out of the error message
    fi
    PY=""
    find_python || python_from_uv || no_python_message
    say "using $PY"
    [[ -e .venv ]] && run rm -rf .venv
    run "$PY" -m venv .venv ||
        die "'$PY -m venv .venv' failed. On Ubuntu, install the venv package for that Python" \
            "(e.g. sudo apt-get install python3.12-venv), or unset PYTHON so that uv provides one."
fi

# --- the book's packages, with the TPU build of the pinned jax (it brings a matching libtpu)
install_pinned() {
    if [[ -e $MARKER ]]; then
        say "removing $MARKER (left by a JAXBOOK_JAX_VERSION run): back to the pinned jax"
        run rm -f "$MARKER"
    fi
    say "installing requirements.txt and jax[tpu]==$JAX_PIN${TORCH_INDEX:+ (torch from $TORCH_INDEX)}"
    run .venv/bin/python -m pip install -r requirements.txt "jax[tpu]==$JAX_PIN" \
        ${INDEX_ARGS[@]+"${INDEX_ARGS[@]}"}
}

# --- or the same packages around JAXBOOK_JAX_VERSION (see the header for the why of each part)
install_override() {
    local jax_specs marker_text="jax==$JAX_VERSION"
    override_requirements
    if [[ -n $LIBTPU_VERSION ]]; then
        jax_specs=("jax==$JAX_VERSION" "jaxlib==$JAX_VERSION" "libtpu==$LIBTPU_VERSION" requests)
        marker_text+=$'\n'"libtpu==$LIBTPU_VERSION"
    else
        jax_specs=("jax[tpu]==$JAX_VERSION")
    fi
    say "JAXBOOK_JAX_VERSION=$JAX_VERSION: installing requirements.txt without its jax and jaxlib" \
        "pins (${JAX_FOLLOWERS[*]} at most their pins) and ${jax_specs[*]}"
    run .venv/bin/python -m pip install "${REQS[@]}" "${jax_specs[@]}" \
        ${INDEX_ARGS[@]+"${INDEX_ARGS[@]}"}
    write_file "$MARKER" "$marker_text"
}

if [[ -n $JAX_VERSION ]]; then
    install_override
    INSTALLED="jax $JAX_VERSION (from JAXBOOK_JAX_VERSION, not the book's pin $JAX_PIN)"
    if [[ -n $LIBTPU_VERSION ]]; then
        INSTALLED+=" with libtpu $LIBTPU_VERSION"
    fi
    NOTE=("$MARKER tells the chapters' setup cell to leave this jax alone."
        "Chapters that need a newer JAX are listed in chapter 11 (notebooks/11_cloud_tpu.ipynb)."
        "To go back to the pinned jax, rerun without JAXBOOK_JAX_VERSION.")
else
    install_pinned
    INSTALLED="jax $JAX_PIN (the book's pin) with the libtpu that jax[tpu] brings"
    NOTE=()
fi

printf '%s\n' "" \
    "Done: .venv has $INSTALLED." \
    "${NOTE[@]}" \
    "Check that JAX sees the TPU (it should list TpuDevice entries, not CpuDevice):" \
    "  .venv/bin/python -c \"import jax; print(jax.devices())\"" \
    "Start Jupyter on the VM inside tmux (it survives an ssh drop), then tunnel port 8888" \
    "from your machine (gcloud compute tpus tpu-vm ssh NAME --zone ZONE -- -L 8888:localhost:8888):" \
    "  tmux new -s jupyter   (later: tmux attach -t jupyter)" \
    "  .venv/bin/jupyter lab --no-browser --port 8888" \
    "Only one process can own the TPU: one open notebook kernel at a time (chapter 11, step 8)."
