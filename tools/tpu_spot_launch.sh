#!/usr/bin/env bash
# Keep a training job running on a Cloud TPU Spot VM, through preemptions (chapter 17).
#
# Run it on your own machine (or a small always-on VM) where gcloud is installed and logged in:
#
#   export PROJECT=my-project ZONE=europe-west4-a TPU_NAME=jaxbook-spot \
#          ACCELERATOR_TYPE=v5litepod-8 RUNTIME_VERSION=v2-alpha-tpuv5-lite \
#          BUCKET=gs://my-bucket/jaxbook-run \
#          TRAIN_COMMAND='.venv/bin/python my_train.py --checkpoints $BUCKET/checkpoints'
#   bash tools/tpu_spot_launch.sh
#
# TRAIN_COMMAND runs in the book's folder on every worker, with the book's .venv installed. It is
# your own script, written like chapter 17's: it restores the newest checkpoint in $BUCKET on
# start, saves there with Orbax, exits 0 only when the training is finished, and exits 143 after
# saving on SIGTERM. On a multi-host slice it calls jax.distributed.initialize() first.
#
# It loops:
#   1. `gcloud compute tpus queued-resources describe TPU_NAME`: no queued resource -> create one
#      with --spot (node id = TPU_NAME). One that exists is never created twice.
#   2. Waiting, provisioning, suspending, deleting: poll every POLL_SECONDS.
#   3. ACTIVE and the TPU VM READY: run one command on every worker (--worker=all) that either
#      attaches to the job already running there or starts it. The job runs detached from the
#      ssh session (setsid nohup), so a dropped connection neither kills it nor, when gcloud or
#      this script connects again, starts a second copy:
#      - ~/.jaxbook-job/lock is held (flock) by the job for as long as it runs. Held: the job is
#        running; the command attaches to it.
#      - Free, and ~/.jaxbook-job/launch names this very launch: the job of this launch already
#        ran and ended (the connection dropped and gcloud ran the command again): the command
#        reports the job's exit status instead of starting it again.
#      - Otherwise it clones or fetches the book, checks out the pinned commit (below), installs
#        it with tools/tpu_vm_install.sh and starts TRAIN_COMMAND detached (with BUCKET and
#        JAXBOOK_COMMIT exported), holding the lock, then attaches.
#      Attached, it prints the job's heartbeat (~/.jaxbook-job/heartbeat: the time, the pid and
#      whatever the job writes to $JAXBOOK_PROGRESS, e.g. its step) when it changes, every
#      HEARTBEAT_SECONDS, and ends with the job's own exit status (~/.jaxbook-job/status).
#   4. The command ends with status 0: the job is done; the queued resource (and with --force,
#      its TPU VM) is deleted, and the script exits 0. Any other status is not "done".
#   5. Any other status: a preempted TPU can still read READY (and its queued resource ACTIVE)
#      during its shutdown, so the states are read again, GRACE_POLLS times GRACE_SECONDS apart.
#      - SUSPENDED, or the TPU VM PREEMPTED or gone: the TPU was taken away. Delete the queued
#        resource, count a restart, and go back to 1.
#      - Still READY and ACTIVE, status 255 (ssh lost the connection, after gcloud's own
#        retries): the job is detached and may still run. Connect again with the same launch,
#        which attaches to it or reports how it ended; at most MAX_SSH_DROPS times in a row.
#      - Still READY and ACTIVE, status 143 (the job saved and stopped on SIGTERM): count a
#        restart and start the job again (a new launch) on the same TPU.
#      - Still READY and ACTIVE, any other status: a bug in the job, not a preemption. Stop
#        (exit 1) and leave the TPU up, so that a rerun reuses it.
#   A queued resource in state FAILED is not a preemption either: the script prints its
#   state.failedData and stops. So does an empty answer from gcloud, MAX_UNKNOWN times in a row.
#
# One commit for the whole run. A job resumed after a preemption must run the code that wrote its
# checkpoints, not whatever the repository's main branch holds by then. The first launch for a
# BUCKET pins a commit (JAXBOOK_COMMIT, or else the repository's HEAD as `git ls-remote` reads it
# here) and writes it to $BUCKET/jaxbook-launch/commit; every launch, restart and rerun for that
# BUCKET reads it from there and checks it out on every worker. A JAXBOOK_COMMIT that differs
# from the bucket's pin is refused: a new commit is a new run, with its own BUCKET.
#
# A log that outlives the VM. A spot VM's disk goes with it, so the job's wrapper copies the job's
# output (~/.jaxbook-job/job.log) to $BUCKET/jaxbook-launch/logs/LAUNCH/HOSTNAME.log every
# HEARTBEAT_SECONDS and once more when the job ends; after a preemption, the last copy shows
# what the job printed until at most one heartbeat before the end.
#
# Rerunning the script picks up whatever state the queued resource is in and never creates a
# second one; on the workers it attaches to a job that is still running instead of starting a
# second copy (a job that already ended is started again by a rerun: it resumes from its newest
# checkpoint, which for a finished job means it finds itself done).
#
# Settings (environment variables):
#   PROJECT, ZONE, TPU_NAME, ACCELERATOR_TYPE, RUNTIME_VERSION, BUCKET, TRAIN_COMMAND  (required)
#   POLL_SECONDS=60        how long to wait between two looks at the queued resource
#   GRACE_POLLS=3          after a job that did not end with 0, how many more looks before
#   GRACE_SECONDS=60         deciding that it was not a preemption, and the wait between them
#   MAX_RESTARTS=20        give up after this many restarts (preemptions or SIGTERM stops)
#   MAX_UNKNOWN=10         give up after this many empty answers in a row
#   MAX_SSH_DROPS=5        give up after this many lost ssh connections in a row on a TPU that
#                          still reads READY (each one after gcloud's own retries)
#   HEARTBEAT_SECONDS=60   how often the job's heartbeat is written, and read while attached
#   JAXBOOK_REPO_URL=...   the repository to clone on the workers (default: the book's)
#   JAXBOOK_COMMIT=...     the commit to run (40 hex digits); default: the bucket's pin, or HEAD
#   JAXBOOK_DRY_RUN=1      print the first command that would change something, instead of
#                          running it, and stop (nothing has changed, so nothing comes after it)
set -euo pipefail

REQUIRED=(PROJECT ZONE TPU_NAME ACCELERATOR_TYPE RUNTIME_VERSION BUCKET TRAIN_COMMAND)
POLL_SECONDS=${POLL_SECONDS:-60}
GRACE_POLLS=${GRACE_POLLS:-3}
GRACE_SECONDS=${GRACE_SECONDS:-60}
MAX_RESTARTS=${MAX_RESTARTS:-20}
MAX_UNKNOWN=${MAX_UNKNOWN:-10}
MAX_SSH_DROPS=${MAX_SSH_DROPS:-5}
HEARTBEAT_SECONDS=${HEARTBEAT_SECONDS:-60}
REPO_URL=${JAXBOOK_REPO_URL:-https://github.com/hands-on-jax/hands-on-jax}
COMMIT=${JAXBOOK_COMMIT:-}
DRY_RUN=${JAXBOOK_DRY_RUN:-}
STOPPED_ON_SIGTERM=143  # 128 + 15: the job saved and exited on SIGTERM (chapter 17's script)
SSH_FAILED=255          # ssh's own status when the connection failed or dropped

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
        "BUCKET=gs://my-bucket/run TRAIN_COMMAND='.venv/bin/python my_train.py'" \
        "bash tools/tpu_spot_launch.sh (see the header of this script, and chapter 17)."
fi
[[ $BUCKET == gs://* ]] ||
    die "BUCKET=$BUCKET is not a Cloud Storage path (gs://...): a spot TPU's own disk is" \
        "deleted with it, so checkpoints must go to a bucket."
for name in POLL_SECONDS GRACE_POLLS GRACE_SECONDS MAX_RESTARTS MAX_UNKNOWN MAX_SSH_DROPS; do
    [[ ${!name} =~ ^[0-9]+$ ]] || die "$name=${!name} is not a whole number."
done
[[ $HEARTBEAT_SECONDS =~ ^[0-9]+(\.[0-9]+)?$ && ! $HEARTBEAT_SECONDS =~ ^0+(\.0*)?$ ]] ||
    die "HEARTBEAT_SECONDS=$HEARTBEAT_SECONDS is not a positive number of seconds."
command -v gcloud >/dev/null 2>&1 ||
    die "gcloud is not on PATH: install the Google Cloud CLI and run 'gcloud auth login'."

WHERE=(--zone="$ZONE" --project="$PROJECT")
PIN=$BUCKET/jaxbook-launch/commit
LOGS=$BUCKET/jaxbook-launch/logs

# Run a command that changes something; in dry-run mode print it and stop.
act() {
    if [[ -n $DRY_RUN ]]; then
        printf '[dry run] %s\n' "$*"
        exit 0
    fi
    "$@"
}

# Print the value of one field of a describe command, UNKNOWN if gcloud answered nothing, or
# ABSENT if this very resource does not exist (gcloud's "NOT_FOUND: Resource
# 'projects/.../<collection>/TPU_NAME' was not found"). Any other error, including a NOT_FOUND
# for a mistyped project or zone, stops the script.
describe() {
    local collection=$1 format=$2 err output
    shift 2
    err=$(mktemp)
    if output=$(gcloud "$@" "${WHERE[@]}" --format="value($format)" 2>"$err"); then
        rm -f "$err"
        printf '%s\n' "${output:-UNKNOWN}"
        return 0
    fi
    if grep -q 'NOT_FOUND' "$err" && grep -qF "/$collection/$TPU_NAME' was not found" "$err"; then
        rm -f "$err"
        printf 'ABSENT\n'
        return 0
    fi
    printf '%s\n' "gcloud $* failed:" >&2
    cat "$err" >&2
    rm -f "$err"
    return 1
}

queued_state() {
    describe queuedResources state.state compute tpus queued-resources describe "$TPU_NAME"
}
queued_failure() {
    describe queuedResources state.failedData compute tpus queued-resources describe "$TPU_NAME"
}
node_state() { describe nodes state compute tpus tpu-vm describe "$TPU_NAME"; }

# Empty answers: a few in a row can be a glitch, many are a problem that waiting won't fix.
unknown=0
count_unknown() {
    if [[ $1 != UNKNOWN ]]; then
        unknown=0
        return 0
    fi
    unknown=$((unknown + 1))
    ((unknown < MAX_UNKNOWN)) ||
        die "gcloud gave an empty state for $TPU_NAME $unknown times in a row: stopping." \
            "Check it with: gcloud compute tpus queued-resources describe $TPU_NAME" \
            "--zone=$ZONE --project=$PROJECT"
}

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

# The commit this run is pinned to: the bucket's pin if there is one (a JAXBOOK_COMMIT that
# differs from it is refused), else JAXBOOK_COMMIT, else the repository's HEAD. Sets COMMIT and
# pinned (the bucket's pin, empty if there is none yet).
read_pin() {
    local err
    err=$(mktemp)
    if pinned=$(gcloud storage cat "$PIN" 2>"$err"); then
        rm -f "$err"
    elif grep -q 'matched no objects' "$err"; then
        rm -f "$err"
        pinned=
    else
        cat "$err" >&2
        rm -f "$err"
        die "could not read $PIN (is BUCKET right, and may this account read it?)."
    fi
    pinned=${pinned//[[:space:]]/}
    if [[ -n $pinned && -n $COMMIT && $COMMIT != "$pinned" ]]; then
        die "this BUCKET's run is pinned to commit $pinned ($PIN), and JAXBOOK_COMMIT=$COMMIT" \
            "differs: its checkpoints were written by the pinned code. Leave JAXBOOK_COMMIT" \
            "unset to resume that run, or start a new run with a new BUCKET."
    fi
    if [[ -n $pinned ]]; then
        COMMIT=$pinned
    elif [[ -z $COMMIT ]]; then
        COMMIT=$(git ls-remote "$REPO_URL" HEAD | cut -f1) ||
            die "could not read the HEAD of $REPO_URL with git ls-remote: set JAXBOOK_COMMIT."
    fi
    [[ $COMMIT =~ ^[0-9a-f]{40}$ ]] ||
        die "JAXBOOK_COMMIT=$COMMIT is not a commit's full hash (40 hex digits, as" \
            "'git rev-parse HEAD' prints it)."
}

# Before the first job of this launcher starts: read the pin, and write it if the run has none
# yet (a dry run only says so).
pin_commit() {
    [[ -n ${pin_read:-} ]] && return 0
    read_pin
    pin_read=1
    if [[ -n $pinned ]]; then
        say "this run's commit: $COMMIT (pinned in $PIN)"
        return 0
    fi
    if [[ -n $DRY_RUN ]]; then
        printf '[dry run] would pin commit %s in %s\n' "$COMMIT" "$PIN"
        return 0
    fi
    printf '%s\n' "$COMMIT" | gcloud storage cp - "$PIN" >/dev/null ||
        die "could not write the pin $PIN."
    pinned=$COMMIT
    say "this run's commit: $COMMIT (pinned now in $PIN)"
}

# What the detached job runs on a worker (bash -c, with JAXBOOK_JOB_DIR, JAXBOOK_TRAIN_COMMAND,
# JAXBOOK_PROGRESS and JAXBOOK_HEARTBEAT_SECONDS exported). It holds the lock through the file
# descriptor 9 it inherits; a SIGTERM (a preemption's shutdown sends it to every process) is
# trapped, so the wrapper waits for the job to save and stop and records its status (143).
# The heartbeat loop closes its copy of the lock and ends soon after the wrapper does.
JOB_WRAPPER='trap : TERM
J=$JAXBOOK_JOB_DIR
save_log() { gcloud storage cp "$J/job.log" "$JAXBOOK_LOG_URL" >/dev/null 2>&1 || true; }
( exec 9>&-; while kill -0 $$ 2>/dev/null; do
    printf "%s pid=%s %s\n" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" $$ "$(cat "$JAXBOOK_PROGRESS" 2>/dev/null)" >"$J/heartbeat.tmp"
    mv -f "$J/heartbeat.tmp" "$J/heartbeat"; save_log; sleep "$JAXBOOK_HEARTBEAT_SECONDS"; done ) &
echo "commit $JAXBOOK_COMMIT, launch $JAXBOOK_LAUNCH, started $(date -u +%Y-%m-%dT%H:%M:%SZ)"
status=0; eval "$JAXBOOK_TRAIN_COMMAND" || status=$?
echo "the job ended with status $status, $(date -u +%Y-%m-%dT%H:%M:%SZ)"; save_log
printf "%s\n" "$status" >"$J/status.tmp"; mv -f "$J/status.tmp" "$J/status"
exit "$status"'

# The command every worker runs for one launch (an id that this script makes up for each new
# start of the job): attach to the job if it runs, report its status if this launch's job
# already ended, else get the book, install it, start the job detached, and attach.
remote_command() {
    local launch=$1 repo=${REPO_URL##*/}
    repo=${repo%.git}
    printf '%s\n' \
        'set -e; J="$HOME/.jaxbook-job"; mkdir -p "$J"; exec 9>>"$J/lock"' \
        "launch=$launch; beat=$(printf '%q' "$HEARTBEAT_SECONDS")" \
        'if flock -n 9; then' \
        '  if [ "$(cat "$J/launch" 2>/dev/null)" = "$launch" ]; then' \
        '    exec 9>&-; echo "the job of launch $launch already ran on this worker: not starting it again" >&2' \
        '  else' \
        '    rm -f "$J/status" "$J/heartbeat" "$J/progress"' \
        "    if [ -d $repo/.git ]; then git -C $repo fetch --quiet origin;" \
        "    else git clone $(printf '%q' "$REPO_URL") $repo; fi; cd $repo" \
        "    git checkout --quiet --detach $COMMIT" \
        '    bash tools/tpu_vm_install.sh' \
        "    export BUCKET=$(printf '%q' "$BUCKET") JAXBOOK_TRAIN_COMMAND=$(printf '%q' "$TRAIN_COMMAND")" \
        "    export JAXBOOK_COMMIT=$COMMIT JAXBOOK_LAUNCH=\$launch" \
        "    export JAXBOOK_LOG_URL=$(printf '%q' "$LOGS")/\$launch/\$(uname -n).log" \
        '    export JAXBOOK_JOB_DIR="$J" JAXBOOK_PROGRESS="$J/progress" JAXBOOK_HEARTBEAT_SECONDS=$beat' \
        '    printf "%s\n" "$launch" >"$J/launch"' \
        "    setsid nohup bash -c $(printf '%q' "$JOB_WRAPPER") >\"\$J/job.log\" 2>&1 </dev/null &" \
        '    exec 9>&-; echo "started the job (launch $launch, pid $!), detached; its output: $J/job.log"' \
        '  fi' \
        'else' \
        '  exec 9>&-; echo "the job of launch $(cat "$J/launch" 2>/dev/null) is running on this worker: attaching to it, not starting a second copy"' \
        'fi' \
        'last=; while ! flock -n "$J/lock" true; do' \
        '  now=$(cat "$J/heartbeat" 2>/dev/null || true)' \
        '  if [ "$now" != "$last" ]; then echo "heartbeat: $now"; last=$now; fi; sleep "$beat"; done' \
        'tail -n 20 "$J/job.log" 2>/dev/null || true' \
        'if [ -f "$J/status" ]; then exit "$(cat "$J/status")"; fi' \
        'echo "the job ended without recording an exit status (killed with its wrapper?)" >&2; exit 1'
}

launches=0
new_launch() {
    launches=$((launches + 1))
    launch="$(date +%s)-$$-$launches"
}

run_job() {
    pin_commit
    say "$1 (launch $launch, commit $COMMIT) on every worker of $TPU_NAME; its log goes to" \
        "$LOGS/$launch/"
    act gcloud compute tpus tpu-vm ssh "$TPU_NAME" --worker=all \
        --command="$(remote_command "$launch")" "${WHERE[@]}"
}

restarts=0
drops=0
launch=
count_restart() {
    restarts=$((restarts + 1))
    ((restarts <= MAX_RESTARTS)) ||
        die "the job was restarted $restarts times, more than MAX_RESTARTS=$MAX_RESTARTS:" \
            "giving up. The checkpoints are in $BUCKET; rerun this script to go on."
    say "restart $restarts (of at most $MAX_RESTARTS): $1; the job will resume from the" \
        "newest checkpoint in $BUCKET"
}

# After a job that did not end with 0: read both states again until they show that the TPU is
# going away, at most GRACE_POLLS more times. Sets node and state.
look_again() {
    local look
    for ((look = 0; look <= GRACE_POLLS; look++)); do
        if ((look > 0)); then
            say "the TPU still reads READY: looking again in $GRACE_SECONDS s" \
                "($look of $GRACE_POLLS)"
            sleep "$GRACE_SECONDS"
        fi
        node=$(node_state) || die "could not read the state of the TPU VM $TPU_NAME."
        state=$(queued_state) || die "could not read the state of $TPU_NAME."
        [[ $node == READY && $state == ACTIVE ]] || return 0
    done
}

while true; do
    state=$(queued_state) || die "could not read the state of the queued resource $TPU_NAME."
    count_unknown "$state"
    case $state in
    ABSENT)
        create_queued
        ;;
    ACTIVE)
        node=$(node_state) || die "could not read the state of the TPU VM $TPU_NAME."
        count_unknown "$node"
        case $node in
        READY)
            status=0
            if [[ -z ${launch:-} ]]; then
                new_launch
                run_job "starting or attaching to the job" || status=$?
            else
                run_job "connecting again to the job" || status=$?
            fi
            if ((status == 0)); then
                say "the job finished"
                delete_queued
                exit 0
            fi
            say "the job stopped with status $status: is the TPU going away?"
            look_again
            if [[ $node == READY && $state == ACTIVE ]]; then
                case $status in
                "$SSH_FAILED")
                    drops=$((drops + 1))
                    ((drops <= MAX_SSH_DROPS)) ||
                        die "lost the ssh connection to $TPU_NAME $drops times in a row, more" \
                            "than MAX_SSH_DROPS=$MAX_SSH_DROPS, on a TPU that still reads" \
                            "READY. The job runs detached and may still be running there:" \
                            "rerun this script to attach to it."
                    say "lost the ssh connection ($drops of at most $MAX_SSH_DROPS), the TPU is" \
                        "still READY: the job runs detached, connecting again to attach to it"
                    continue
                    ;;
                "$STOPPED_ON_SIGTERM")
                    count_restart "the job stopped on SIGTERM and the TPU is still READY"
                    ;;
                *)
                    die "the job failed (status $status) on a TPU that is still READY: that is" \
                        "not a preemption, so it is not restarted. Look at its output above," \
                        "fix it, and rerun this script (it reuses the TPU). Delete the TPU" \
                        "when you are done: gcloud compute tpus queued-resources delete" \
                        "$TPU_NAME --force --zone=$ZONE --project=$PROJECT"
                    ;;
                esac
            else
                say "the TPU is $node (queued resource $state)"
            fi
            launch=
            drops=0
            ;;
        PREEMPTED | TERMINATED | ABSENT)
            say "the TPU VM $TPU_NAME is $node"
            count_restart "the TPU was preempted"
            launch=
            drops=0
            delete_queued
            ;;
        *)
            say "the TPU VM $TPU_NAME is $node: waiting"
            sleep "$POLL_SECONDS"
            ;;
        esac
        ;;
    SUSPENDED)
        say "the queued resource $TPU_NAME is $state"
        count_restart "the TPU was preempted"
        launch=
        drops=0
        delete_queued
        ;;
    FAILED)
        failure=$(queued_failure) || failure="(could not read state.failedData)"
        die "the queued resource $TPU_NAME is FAILED, which is not a preemption. Its" \
            "state.failedData: $failure. Fix the cause (quota, accelerator type, runtime" \
            "version, zone), delete it with: gcloud compute tpus queued-resources delete" \
            "$TPU_NAME --force --zone=$ZONE --project=$PROJECT, and rerun this script."
        ;;
    *)
        # CREATING, ACCEPTED, WAITING_FOR_RESOURCES, PROVISIONING, SUSPENDING, DELETING, ...
        say "the queued resource $TPU_NAME is $state: waiting"
        sleep "$POLL_SECONDS"
        ;;
    esac
done
