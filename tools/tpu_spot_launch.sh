#!/usr/bin/env bash
# Keep a training job running on a Cloud TPU Spot VM, through preemptions (chapter 17).
#
# Run it on your own machine (or a small always-on VM) where gcloud is installed and logged in:
#
#   export PROJECT=my-project ZONE=europe-west4-a TPU_NAME=jaxbook-spot \
#          ACCELERATOR_TYPE=v5litepod-8 RUNTIME_VERSION=v2-alpha-tpuv5-lite \
#          BUCKET=gs://my-bucket/jaxbook-run \
#          TRAIN_COMMAND='.venv/bin/python train.py --checkpoints $BUCKET/checkpoints'
#   bash tools/tpu_spot_launch.sh
#
# It loops:
#   1. `gcloud compute tpus queued-resources describe TPU_NAME`: no queued resource -> create one
#      with --spot (node id = TPU_NAME). One that exists is never created twice.
#   2. Waiting, provisioning, suspending, deleting: poll every POLL_SECONDS.
#   3. ACTIVE and the TPU VM READY: run one command on every worker (--worker=all) that clones or
#      updates the book, installs it with tools/tpu_vm_install.sh and runs TRAIN_COMMAND (with
#      BUCKET exported). The command must resume from the newest checkpoint in BUCKET.
#   4. The command ends with status 0: the job is done; the queued resource (and with --force,
#      its TPU VM) is deleted, and the script exits 0.
#   5. SUSPENDED or FAILED, or the TPU VM PREEMPTED: the TPU is gone. Delete the queued
#      resource, count a restart, and go back to 1.
#   A command that fails while the TPU is still READY is a bug in the job, not a preemption:
#   the script stops (exit 1) and leaves the TPU up, so that a rerun reuses it.
#
# Running it again at any time is safe: it picks up whatever state the queued resource is in.
#
# Settings (environment variables):
#   PROJECT, ZONE, TPU_NAME, ACCELERATOR_TYPE, RUNTIME_VERSION, BUCKET, TRAIN_COMMAND  (required)
#   POLL_SECONDS=60        how long to wait between two looks at the queued resource
#   MAX_RESTARTS=20        give up after this many preemptions
#   JAXBOOK_REPO_URL=...   the repository to clone on the workers (default: the book's)
#   JAXBOOK_DRY_RUN=1      print the next command that would change something, instead of
#                          running it, and stop
set -euo pipefail

REQUIRED=(PROJECT ZONE TPU_NAME ACCELERATOR_TYPE RUNTIME_VERSION BUCKET TRAIN_COMMAND)
POLL_SECONDS=${POLL_SECONDS:-60}
MAX_RESTARTS=${MAX_RESTARTS:-20}
REPO_URL=${JAXBOOK_REPO_URL:-https://github.com/hands-on-jax/hands-on-jax}
DRY_RUN=${JAXBOOK_DRY_RUN:-}

say() { printf '==> %s\n' "$*"; }

die() {
    printf '\nerror: %s\n' "$*" >&2
    exit 1
}

# --- settings: refuse to start, naming every missing one
missing=()
for name in "${REQUIRED[@]}"; do
    [[ -n ${!name:-} ]] || missing+=("$name")
done
if ((${#missing[@]})); then
    die "missing settings: ${missing[*]}. Set them as environment variables, e.g." \
        "PROJECT=my-project ZONE=europe-west4-a TPU_NAME=jaxbook-spot" \
        "ACCELERATOR_TYPE=v5litepod-8 RUNTIME_VERSION=v2-alpha-tpuv5-lite" \
        "BUCKET=gs://my-bucket/run TRAIN_COMMAND='.venv/bin/python train.py'" \
        "bash tools/tpu_spot_launch.sh (see the header of this script, and chapter 17)."
fi
[[ $BUCKET == gs://* ]] ||
    die "BUCKET=$BUCKET is not a Cloud Storage path (gs://...): a spot TPU's own disk is" \
        "deleted with it, so checkpoints must go to a bucket."
[[ $POLL_SECONDS =~ ^[0-9]+$ && $MAX_RESTARTS =~ ^[0-9]+$ ]] ||
    die "POLL_SECONDS and MAX_RESTARTS must be whole numbers."
command -v gcloud >/dev/null 2>&1 ||
    die "gcloud is not on PATH: install the Google Cloud CLI and run 'gcloud auth login'."

WHERE=(--zone="$ZONE" --project="$PROJECT")

# Run a command that changes something; in dry-run mode print it and stop.
act() {
    if [[ -n $DRY_RUN ]]; then
        printf '[dry run] %s\n' "$*"
        exit 0
    fi
    "$@"
}

# Print the value of one field of a describe command, or ABSENT if the resource does not
# exist. Any other error (no permission, no network, a wrong zone) stops the script.
describe() {
    local format=$1 err output
    shift
    err=$(mktemp)
    if output=$(gcloud "$@" "${WHERE[@]}" --format="value($format)" 2>"$err"); then
        rm -f "$err"
        printf '%s\n' "${output:-UNKNOWN}"
        return 0
    fi
    if grep -qiE 'NOT_FOUND|not found' "$err"; then
        rm -f "$err"
        printf 'ABSENT\n'
        return 0
    fi
    printf '%s\n' "gcloud $* failed:" >&2
    cat "$err" >&2
    rm -f "$err"
    return 1
}

queued_state() { describe state.state compute tpus queued-resources describe "$TPU_NAME"; }
node_state() { describe state compute tpus tpu-vm describe "$TPU_NAME"; }

create_queued() {
    say "creating the spot queued resource $TPU_NAME ($ACCELERATOR_TYPE, $RUNTIME_VERSION)"
    act gcloud compute tpus queued-resources create "$TPU_NAME" --node-id="$TPU_NAME" \
        --accelerator-type="$ACCELERATOR_TYPE" --runtime-version="$RUNTIME_VERSION" --spot \
        "${WHERE[@]}"
}

delete_queued() {
    say "deleting the queued resource $TPU_NAME and its TPU VM"
    act gcloud compute tpus queued-resources delete "$TPU_NAME" --force --quiet "${WHERE[@]}"
}

# The command every worker runs: get the book, install it, run the job with BUCKET set.
remote_command() {
    local repo=${REPO_URL##*/}
    repo=${repo%.git}
    printf '%s' "set -e; if [ -d $repo/.git ]; then git -C $repo pull --ff-only;" \
        " else git clone $(printf '%q' "$REPO_URL") $repo; fi; cd $repo;" \
        " bash tools/tpu_vm_install.sh; export BUCKET=$(printf '%q' "$BUCKET"); $TRAIN_COMMAND"
}

run_job() {
    say "starting the job on every worker of $TPU_NAME"
    act gcloud compute tpus tpu-vm ssh "$TPU_NAME" --worker=all --command="$(remote_command)" \
        "${WHERE[@]}"
}

restarts=0
count_restart() {
    restarts=$((restarts + 1))
    ((restarts <= MAX_RESTARTS)) ||
        die "the TPU was preempted $restarts times, more than MAX_RESTARTS=$MAX_RESTARTS:" \
            "giving up. The checkpoints are in $BUCKET; rerun this script to go on."
    say "preemption $restarts (of at most $MAX_RESTARTS): recreating, the job will resume" \
        "from the newest checkpoint in $BUCKET"
}

while true; do
    state=$(queued_state) || die "could not read the state of the queued resource $TPU_NAME."
    case $state in
    ABSENT)
        create_queued
        ;;
    ACTIVE)
        node=$(node_state) || die "could not read the state of the TPU VM $TPU_NAME."
        case $node in
        READY)
            if run_job; then
                say "the job finished"
                delete_queued
                exit 0
            fi
            node=$(node_state) || die "could not read the state of the TPU VM $TPU_NAME."
            state=$(queued_state) || die "could not read the state of $TPU_NAME."
            if [[ $node == READY && $state == ACTIVE ]]; then
                die "the job failed on a TPU that is still READY: that is not a preemption," \
                    "so it is not restarted. Look at its output above, fix it, and rerun this" \
                    "script (it reuses the TPU). Delete the TPU when you are done:" \
                    "gcloud compute tpus queued-resources delete $TPU_NAME --force" \
                    "--zone=$ZONE --project=$PROJECT"
            fi
            say "the job stopped and the TPU is $node (queued resource $state)"
            ;;
        PREEMPTED | TERMINATED | ABSENT)
            say "the TPU VM $TPU_NAME is $node"
            count_restart
            delete_queued
            ;;
        *)
            say "the TPU VM $TPU_NAME is $node: waiting"
            sleep "$POLL_SECONDS"
            ;;
        esac
        ;;
    SUSPENDED | FAILED)
        say "the queued resource $TPU_NAME is $state"
        count_restart
        delete_queued
        ;;
    *)
        # CREATING, ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, SUSPENDING, DELETING, ...
        say "the queued resource $TPU_NAME is $state: waiting"
        sleep "$POLL_SECONDS"
        ;;
    esac
done
