"""tools/tpu_spot_launch.sh keeps a job going on a spot TPU: its logic, against a fake gcloud.

The fake `gcloud` on PATH keeps the state of one queued resource and its TPU VM in a JSON file,
answers `describe` from it and changes it on `create` and `delete`. Its `tpu-vm ssh` behaves as
the real one does (google-cloud-sdk, lib/googlecloudsdk/command_lib/compute/tpus/tpu_vm/ssh.py:
AttemptRunWithRetries and WaitForBatchCompletion): it runs the command on each worker, in
threads; when ssh itself fails (OpenSSH's status 255, which gcloud raises as ssh.CommandError:
command_lib/util/ssh/ssh.py, SSH_EXIT_CODES) it runs the whole command again, up to 10 attempts
5 s apart (FAKE_GCLOUD_RETRY_SECONDS makes the 5 s shorter here), and a worker whose 10 attempts
all failed counts as 255; it then exits with the first nonzero status in worker order, or 0.

Each worker's attempts come either from a list played back per call ("ok": the job finished,
"fail": it failed, the TPU is fine, "drop": ssh lost the connection, "preempt": the TPU was taken
away while the job ran, "preempt-late": ssh lost the connection but the states change only a few
`describe` calls later, as during a preempted VM's shutdown, "sigterm": the job saved and exited
with 143, "sigterm-late": 143, then the late preemption), or, with run_remote, from running the
command for real with bash in a folder per worker (its HOME), where a drop kills the ssh
session's process group once the job has started, as sshd does when the connection goes.
Every gcloud call is logged, so the tests check which commands the script ran, in which order.
The fake's `storage cat` and `storage cp -` keep the run's pinned commit in the state file; the
workers' own gcloud copies the job's log into sandbox/bucket. Nothing touches Google Cloud.
"""

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "tpu_spot_launch.sh"
BASH = shutil.which("bash") or "/bin/bash"

SETTINGS = {
    "PROJECT": "my-project",
    "ZONE": "europe-west4-a",
    "TPU_NAME": "jaxbook-spot",
    "ACCELERATOR_TYPE": "v5litepod-8",
    "RUNTIME_VERSION": "v2-alpha-tpuv5-lite",
    "BUCKET": "gs://my-bucket/run",
    "TRAIN_COMMAND": ".venv/bin/python train.py --checkpoints $BUCKET/checkpoints",
}

FAKE_GCLOUD = """#!{python}
import json
import os
import signal
import subprocess
import sys
import threading
import time

state_path = os.environ["FAKE_GCLOUD_STATE"]
with open(state_path) as file:
    state = json.load(file)
with open(os.environ["FAKE_GCLOUD_LOG"], "a") as log:
    log.write(json.dumps(sys.argv[1:]) + "\\n")
words = [arg for arg in sys.argv[1:] if not arg.startswith("-")]


def save():
    with open(state_path, "w") as file:
        json.dump(state, file)


def not_found(collection):
    print(f"ERROR: (gcloud.compute.tpus.{{group}}.{{verb}}) NOT_FOUND: Resource "
          f"'projects/my-project/locations/europe-west4-a/{{collection}}/{{words[4]}}' "
          "was not found",
          file=sys.stderr)
    sys.exit(1)


def one_describe_later():
    # A preemption that the API shows only after some looks (during the VM's soft-off).
    if state.get("preempt_after_looks") is not None:
        state["preempt_after_looks"] -= 1
        if state["preempt_after_looks"] <= 0:
            state["queued"], state["node"] = "SUSPENDED", "PREEMPTED"
            state["preempt_after_looks"] = None
        save()


if words[0] == "storage":  # the launcher's pin: gs:// paths kept in the state file
    bucket = state.setdefault("bucket", {{}})
    if state.get("storage_denied"):
        print("ERROR: (gcloud.storage.cat) HTTPError 403: caller does not have "
              "storage.objects.get access", file=sys.stderr)
        sys.exit(1)
    if words[1] == "cat" and words[2] in bucket:
        print(bucket[words[2]], end="")
    elif words[1] == "cat":
        print("ERROR: (gcloud.storage.cat) The following URLs matched no objects or files:\\n"
              f"-{{words[2]}}", file=sys.stderr)
        sys.exit(1)
    elif sys.argv[2:4] == ["cp", "-"]:  # words leaves the "-" out
        bucket[words[2]] = sys.stdin.read()
        save()
    else:
        print("fake gcloud: unexpected storage call", sys.argv[1:], file=sys.stderr)
        sys.exit(3)
    sys.exit(0)
group, verb = words[2], words[3]
fields = [arg for arg in sys.argv[1:] if arg.startswith("--format=")]
if group == "queued-resources" and verb == "describe":
    one_describe_later()
    if state["queued"] is None:
        not_found("queuedResources")
    if fields == ["--format=value(state.failedData)"]:
        print(state.get("failed_data", ""))
        sys.exit(0)
    # A queue that is waiting becomes ACTIVE after the number of looks it was given.
    if state["queued"] == "WAITING_FOR_RESOURCES":
        state["looks_until_active"] -= 1
        if state["looks_until_active"] <= 0:
            state["queued"], state["node"] = "ACTIVE", "READY"
        save()
    print(state["queued"])
elif group == "queued-resources" and verb == "create":
    if state["queued"] is not None:
        print("ERROR: (gcloud) ALREADY_EXISTS", file=sys.stderr)
        sys.exit(1)
    state["queued"], state["node"], state["reachable"] = "ACTIVE", "READY", True
    save()
elif group == "queued-resources" and verb == "delete":
    if state["queued"] is None:
        not_found("queuedResources")
    state["queued"], state["node"] = None, None
    save()
elif group == "tpu-vm" and verb == "describe":
    one_describe_later()
    if state["node"] is None:
        not_found("nodes")
    print(state["node"])
elif group == "tpu-vm" and verb == "ssh":
    if state["node"] != "READY":
        print(f"ERROR: (gcloud.compute.tpus.tpu-vm.ssh) the TPU is {{state['node']}}",
              file=sys.stderr)
        sys.exit(1)
    n_workers = state.get("workers", 1)
    (worker_flag,) = [arg for arg in sys.argv[1:] if arg.startswith("--worker=")]
    workers = (list(range(n_workers)) if worker_flag == "--worker=all"
               else [int(worker_flag.split("=")[1])])
    (command,) = [arg[len("--command="):] for arg in sys.argv[1:]
                  if arg.startswith("--command=")]
    retry_seconds = float(os.environ.get("FAKE_GCLOUD_RETRY_SECONDS", "5"))
    lock = threading.Lock()
    if not state.get("run_remote"):
        item = state["ssh"].pop(0)  # one item per gcloud call: "ok", or one per worker
        plans = {{worker: (item if isinstance(item, str) else item[worker]).split(",")
                 for worker in workers}}

    def playback(worker):
        # One attempt on a worker, from the list: the remote status, or 255.
        with lock:
            if not state["reachable"]:
                return 255  # the VM is going away or gone: ssh cannot connect
            outcome = plans[worker].pop(0) if plans[worker] else "drop"
            if outcome == "preempt":
                state["queued"], state["node"], state["reachable"] = (
                    "SUSPENDED", "PREEMPTED", False)
            if outcome.endswith("-late"):
                state["preempt_after_looks"], state["reachable"] = state["late_by"], False
        return {{"ok": 0, "fail": 1, "drop": 255, "preempt": 255, "preempt-late": 255,
                "sigterm": 143, "sigterm-late": 143}}[outcome]

    def run_for_real(worker):
        # One attempt: the command in the worker's folder, its session killed on a drop.
        home = os.path.join(state["sandbox"], f"worker{{worker}}")
        with lock:
            drops_left = state["drops"].get(str(worker), 0)
            if drops_left:
                state["drops"][str(worker)] = drops_left - 1
            first_drop = drops_left and not state["dropped"].get(str(worker))
            if drops_left:
                state["dropped"][str(worker)] = True
        if drops_left and not first_drop:
            return 255  # the connection cannot be made again yet
        session = subprocess.Popen(
            ["bash", "-c", command], cwd=home, start_new_session=True,
            env={{"HOME": home, "PATH": state["worker_path"]}})
        if not first_drop:
            return session.wait()
        marker = os.path.join(home, state.get("drop_when", "started"))
        deadline = time.monotonic() + 20
        while not os.path.exists(marker) and time.monotonic() < deadline:
            time.sleep(0.02)
        os.killpg(session.pid, signal.SIGHUP)  # the connection goes: sshd ends the session
        time.sleep(0.1)
        try:
            os.killpg(session.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        session.wait()
        return 255

    attempt = run_for_real if state.get("run_remote") else playback
    exit_statuses = {{worker: None for worker in workers}}

    def attempt_with_retries(worker):  # gcloud's AttemptRunWithRetries
        for number in range(10):
            status = attempt(worker)
            with lock:
                state.setdefault("attempts", []).append([worker, status])
            if status != 255:
                exit_statuses[worker] = status or None
                return
            if number == 9:
                exit_statuses[worker] = 255
                return
            print(f"Retrying: SSH command error (worker {{worker}})", file=sys.stderr)
            time.sleep(retry_seconds)

    threads = [threading.Thread(target=attempt_with_retries, args=(worker,))
               for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    save()
    for worker in workers:  # gcloud's WaitForBatchCompletion: the first nonzero, worker order
        if exit_statuses[worker]:
            sys.exit(exit_statuses[worker])
else:
    print("fake gcloud: unexpected call", sys.argv[1:], file=sys.stderr)
    sys.exit(3)
"""


@pytest.fixture
def sandbox(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "gcloud"
    fake.write_text(FAKE_GCLOUD.format(python=sys.executable))
    fake.chmod(0o755)
    for tool in ("grep", "mktemp", "rm", "cat", "sleep", "date", "cut"):  # besides gcloud
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return tmp_path


WORKER_GCLOUD = """#!/bin/sh
# The workers' gcloud: only the job wrapper's log copies, into a folder that stands for the bucket.
[ "$1" = storage ] && [ "$2" = cp ] || exit 3
dst="{bucket}/${{4#gs://}}"
mkdir -p "$(dirname "$dst")" && cp "$3" "$dst"
"""


def make_workers(sandbox, n_workers):
    """A folder per worker (its HOME) with the book already cloned, a git that does nothing and
    a gcloud that copies the job's log into sandbox/bucket."""
    worker_bin = sandbox / "worker-bin"
    worker_bin.mkdir(exist_ok=True)
    (worker_bin / "git").write_text("#!/bin/sh\nexit 0\n")  # fetch and checkout do nothing here
    (worker_bin / "git").chmod(0o755)
    (worker_bin / "gcloud").write_text(WORKER_GCLOUD.format(bucket=sandbox / "bucket"))
    (worker_bin / "gcloud").chmod(0o755)
    for worker in range(n_workers):
        repo = sandbox / f"worker{worker}" / "hands-on-jax"
        (repo / ".git").mkdir(parents=True)
        (repo / "tools").mkdir()
        (repo / "tools" / "tpu_vm_install.sh").write_text("true\n")
    return f"{worker_bin}:/usr/bin:/bin"


COMMIT = "0123456789abcdef0123456789abcdef01234567"  # what JAXBOOK_COMMIT pins unless a test says


def run_launcher(sandbox, queued=None, node=None, ssh=(), looks_until_active=0, late_by=3,
                 failed_data="", workers=1, run_remote=False, drops=None, script=SCRIPT,
                 bucket=None, storage_denied=False, **env):
    state = {"queued": queued, "node": node, "ssh": list(ssh), "reachable": True,
             "looks_until_active": looks_until_active, "late_by": late_by,
             "failed_data": failed_data, "workers": workers, "run_remote": run_remote,
             "drops": dict(drops or {}), "dropped": {}, "sandbox": str(sandbox),
             "bucket": dict(bucket or {}), "storage_denied": storage_denied}
    if run_remote:
        state["worker_path"] = make_workers(sandbox, workers)
    (sandbox / "state.json").write_text(json.dumps(state))
    (sandbox / "calls.log").write_text("")
    environment = {
        "PATH": str(sandbox / "bin"),
        "HOME": str(sandbox),
        "FAKE_GCLOUD_STATE": str(sandbox / "state.json"),
        "FAKE_GCLOUD_LOG": str(sandbox / "calls.log"),
        "FAKE_GCLOUD_RETRY_SECONDS": "0",
        "POLL_SECONDS": "0",
        "GRACE_SECONDS": "0",
        "JAXBOOK_COMMIT": COMMIT,
        **SETTINGS,
        **env,
    }
    environment = {name: value for name, value in environment.items() if value is not None}
    result = subprocess.run([BASH, str(script)], env=environment, capture_output=True,
                            text=True, timeout=120)
    calls = [json.loads(line) for line in (sandbox / "calls.log").read_text().splitlines()]
    final = json.loads((sandbox / "state.json").read_text())
    return result, calls, final


def ssh_commands(calls):
    return [arg[len("--command="):] for call in calls for arg in call
            if arg.startswith("--command=")]


def launch_of(command):
    (line,) = [line for line in command.splitlines() if line.startswith("launch=")]
    return line.split(";")[0][len("launch="):]


def verbs(calls):
    """Each call as 'queued-resources create', 'tpu-vm ssh', 'storage cat', ..."""
    return [" ".join(call[0:2] if call[0] == "storage" else call[2:4]) for call in calls]


def changes(calls):
    """The calls that change the TPU (the commit's pin in the bucket has tests of its own)."""
    return [verb for verb in verbs(calls)
            if not verb.endswith("describe") and not verb.startswith("storage")]


@pytest.mark.parametrize("unset", list(SETTINGS))
def test_a_missing_setting_is_refused_before_any_gcloud_call(sandbox, unset):
    result, calls, _ = run_launcher(sandbox, **{unset: None})
    assert result.returncode == 1
    assert f"error: missing settings: {unset}." in result.stderr
    assert "tools/tpu_spot_launch.sh" in result.stderr  # says how to run it
    assert calls == []


def test_all_missing_settings_are_named_at_once(sandbox):
    result, calls, _ = run_launcher(sandbox, ZONE=None, BUCKET=None, TRAIN_COMMAND="")
    assert result.returncode == 1
    assert "missing settings: ZONE BUCKET TRAIN_COMMAND." in result.stderr
    assert calls == []


def test_a_bucket_that_is_not_cloud_storage_is_refused(sandbox):
    result, calls, _ = run_launcher(sandbox, BUCKET="/home/me/checkpoints")
    assert result.returncode == 1
    assert "is not a Cloud Storage path" in result.stderr
    assert calls == []


def test_creates_when_absent_runs_the_job_and_cleans_up(sandbox):
    result, calls, final = run_launcher(sandbox, ssh=["ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == ["queued-resources create", "tpu-vm ssh", "queued-resources delete"]
    create = calls[verbs(calls).index("queued-resources create")]
    assert create[4] == SETTINGS["TPU_NAME"]
    for flag in ("--spot", "--node-id=jaxbook-spot", "--accelerator-type=v5litepod-8",
                 "--runtime-version=v2-alpha-tpuv5-lite", "--zone=europe-west4-a",
                 "--project=my-project"):
        assert flag in create
    delete = calls[verbs(calls).index("queued-resources delete")]
    assert "--force" in delete and "--quiet" in delete
    assert final["queued"] is None  # nothing left running (and billing) after the job
    assert "the job finished" in result.stdout


def test_the_job_runs_on_every_worker_through_the_install_script(sandbox):
    _, calls, _ = run_launcher(sandbox, ssh=["ok"])
    ssh = calls[verbs(calls).index("tpu-vm ssh")]
    assert "--worker=all" in ssh
    (command,) = ssh_commands(calls)
    assert "git clone https://github.com/hands-on-jax/hands-on-jax hands-on-jax" in command
    assert "git -C hands-on-jax fetch --quiet origin" in command  # a rerun fetches, not re-clones
    checkout = f"git checkout --quiet --detach {COMMIT}"  # the run's pinned commit
    assert command.index("hands-on-jax fetch") < command.index(checkout)
    quoted = subprocess.run([BASH, "-c", 'printf %q "$1"', "-", SETTINGS["TRAIN_COMMAND"]],
                            capture_output=True, text=True, check=True).stdout
    train = f"JAXBOOK_TRAIN_COMMAND={quoted}"  # run by the detached job, unchanged
    assert command.index("bash tools/tpu_vm_install.sh") < command.index(train)
    assert "export BUCKET=gs://my-bucket/run " in command
    assert "setsid nohup bash -c" in command  # detached from the ssh session
    assert command.startswith("set -e;")  # a failed install does not start the job


def test_no_second_create_when_already_active(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "queued-resources create" not in verbs(calls)
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete"]


def test_waits_while_the_request_is_queued(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="WAITING_FOR_RESOURCES", ssh=["ok"],
                                    looks_until_active=3)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is WAITING_FOR_RESOURCES: waiting" in result.stdout
    assert "queued-resources create" not in verbs(calls)
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete"]


def test_resumes_after_a_preemption(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                        ssh=["preempt", "ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == [
        "tpu-vm ssh",               # the job runs; the TPU is preempted under it
        "queued-resources delete",  # the SUSPENDED request goes
        "queued-resources create",  # a new spot request
        "tpu-vm ssh",               # the job starts again (and resumes from the bucket)
        "queued-resources delete",  # done: clean up
    ]
    assert "restart 1 (of at most 20): the TPU was preempted" in result.stdout
    assert final["queued"] is None


def test_a_preempted_vm_found_at_start_is_recreated(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="PREEMPTED", ssh=["ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == ["queued-resources delete", "queued-resources create",
                              "tpu-vm ssh", "queued-resources delete"]
    assert "the TPU VM jaxbook-spot is PREEMPTED" in result.stdout


def test_gives_up_after_max_restarts(sandbox):
    result, calls, _ = run_launcher(sandbox, ssh=["preempt", "preempt", "preempt"],
                                    MAX_RESTARTS="2")
    assert result.returncode == 1
    assert "restarted 3 times, more than MAX_RESTARTS=2" in result.stderr
    assert verbs(calls).count("queued-resources create") == 3


def test_a_failing_job_on_a_healthy_tpu_is_not_restarted(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["fail"])
    assert result.returncode == 1
    assert "not a preemption" in result.stderr
    assert changes(calls) == ["tpu-vm ssh"]  # no delete, no create: the TPU stays for a rerun
    assert final["queued"] == "ACTIVE"
    # Before deciding, it looked at the TPU again GRACE_POLLS (3) more times: 4 looks in all.
    after_the_job = verbs(calls)[verbs(calls).index("tpu-vm ssh"):]
    assert after_the_job.count("tpu-vm describe") == 4


def test_a_preemption_that_shows_late_is_still_a_preemption(sandbox):
    # ssh drops (255) while the VM is in its soft-off: the TPU reads READY/ACTIVE for a while.
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                        ssh=["preempt-late", "ok"], late_by=4)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "looking again" in result.stdout and "not a preemption" not in result.stderr
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete",
                              "queued-resources create", "tpu-vm ssh",
                              "queued-resources delete"]
    assert final["queued"] is None


def test_with_no_grace_a_late_preemption_costs_one_more_connection(sandbox):
    # GRACE_POLLS=0: the TPU still reads READY right after ssh failed, so the launcher takes it
    # for a dropped connection and connects again; the next look shows the preemption.
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                    ssh=["preempt-late", "ok"], late_by=4, GRACE_POLLS="0")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "lost the ssh connection (1 of at most 5)" in result.stdout
    assert "not a preemption" not in result.stderr
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete",
                              "queued-resources create", "tpu-vm ssh",
                              "queued-resources delete"]


def test_a_sigterm_stop_is_not_done_and_the_job_runs_again(sandbox):
    # Status 143: the job saved and stopped on SIGTERM. The TPU is still fine: run it again.
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                        ssh=["sigterm", "ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == ["tpu-vm ssh", "tpu-vm ssh", "queued-resources delete"]
    assert result.stdout.count("the job finished") == 1
    assert "restart 1 (of at most 20): the job stopped on SIGTERM" in result.stdout
    assert final["queued"] is None


def test_a_sigterm_stop_during_a_preemption_recreates_the_tpu(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                    ssh=["sigterm-late", "ok"], late_by=2)
    assert result.returncode == 0, result.stdout + result.stderr
    # Not "the job finished" + delete after the first ssh: the TPU is recreated and the job
    # resumes on the new one.
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete",
                              "queued-resources create", "tpu-vm ssh",
                              "queued-resources delete"]
    assert result.stdout.count("the job finished") == 1


def test_the_remote_command_attaches_to_a_running_job_instead_of_starting_a_second(sandbox):
    """Run the workers' command itself, twice at once, in a fake worker's home folder."""
    _, calls, _ = run_launcher(sandbox, ssh=["ok"], HEARTBEAT_SECONDS="0.1",
                               TRAIN_COMMAND=JOB)
    (command,) = ssh_commands(calls)
    path = make_workers(sandbox, 1)
    worker = sandbox / "worker0"
    environment = {"HOME": str(worker), "PATH": path}
    first = subprocess.Popen([BASH, "-c", command], cwd=worker, env=environment,
                             stdout=subprocess.PIPE, text=True)
    try:
        wait_for(worker / "started")
        second = subprocess.run([BASH, "-c", command.replace(launch_of(command), "another")],
                                cwd=worker, env=environment, capture_output=True, text=True,
                                timeout=30)
        assert second.returncode == 0  # it waited for the running job, and got its status
        assert "attaching to it, not starting a second copy" in second.stdout
        assert "heartbeat: " in second.stdout
        assert first.wait(timeout=30) == 0
    finally:
        first.kill()
        first.wait()
    assert starts(worker) == 1 and (worker / "finished").read_text() == "done\n"
    third = subprocess.run([BASH, "-c", command], cwd=worker, env=environment,
                           capture_output=True, text=True, timeout=30)
    assert third.returncode == 0 and "already ran on this worker" in third.stderr
    assert starts(worker) == 1  # the same launch again: reported, not started again
    fourth = subprocess.run([BASH, "-c", command.replace(launch_of(command), "next")],
                            cwd=worker, env=environment, capture_output=True, timeout=30)
    assert fourth.returncode == 0 and starts(worker) == 2  # a new launch starts it again


def test_a_failed_queued_resource_stops_and_shows_why(sandbox):
    result, calls, final = run_launcher(sandbox, queued="FAILED",
                                        failed_data="{'error': 'quota exceeded'}")
    assert result.returncode == 1
    assert "is FAILED, which is not a preemption" in result.stderr
    assert "quota exceeded" in result.stderr
    assert changes(calls) == []  # not deleted, not recreated: left for the reader to inspect
    assert final["queued"] == "FAILED"


def test_an_empty_state_is_not_polled_forever(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="", MAX_UNKNOWN="4")
    assert result.returncode == 1
    assert "empty state for jaxbook-spot 4 times in a row" in result.stderr
    assert verbs(calls) == ["queued-resources describe"] * 4


def test_a_not_found_that_is_not_the_resource_stops_the_script(sandbox):
    # A mistyped project or zone gives NOT_FOUND too, but not for this queued resource.
    broken = Path(sandbox / "bin" / "gcloud")
    broken.write_text("#!/bin/sh\necho 'ERROR: (gcloud.compute.tpus.queued-resources.describe)"
                      " NOT_FOUND: Location europe-west4-x was not found.' >&2\nexit 1\n")
    result, _, _ = run_launcher(sandbox)
    assert result.returncode == 1
    assert "Location europe-west4-x was not found" in result.stderr
    assert "could not read the state of the queued resource" in result.stderr


def test_dry_run_prints_the_next_change_and_stops(sandbox):
    result, calls, final = run_launcher(sandbox, JAXBOOK_DRY_RUN="1")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[dry run] gcloud compute tpus queued-resources create jaxbook-spot" in result.stdout
    assert changes(calls) == []
    assert final["queued"] is None


def test_an_unexpected_gcloud_error_stops_the_script(sandbox):
    broken = Path(sandbox / "bin" / "gcloud")
    broken.write_text("#!/bin/sh\necho 'ERROR: (gcloud) PERMISSION_DENIED' >&2\nexit 1\n")
    result, _, _ = run_launcher(sandbox)
    assert result.returncode == 1
    assert "PERMISSION_DENIED" in result.stderr
    assert "could not read the state of the queued resource" in result.stderr


# --- the fake gcloud's ssh, checked against what the real one does (see the docstring)

def fake_ssh(sandbox, item, workers=1, retry_seconds="0"):
    """One `gcloud compute tpus tpu-vm ssh --worker=all` call on the fake: (status, attempts,
    seconds)."""
    state = {"queued": "ACTIVE", "node": "READY", "reachable": True, "ssh": [item],
             "workers": workers}
    (sandbox / "state.json").write_text(json.dumps(state))
    environment = {"PATH": str(sandbox / "bin"), "FAKE_GCLOUD_STATE": str(sandbox / "state.json"),
                   "FAKE_GCLOUD_LOG": str(sandbox / "calls.log"),
                   "FAKE_GCLOUD_RETRY_SECONDS": retry_seconds}
    start = time.monotonic()
    result = subprocess.run([str(sandbox / "bin" / "gcloud"), "compute", "tpus", "tpu-vm", "ssh",
                             "jaxbook-spot", "--worker=all", "--command=true"],
                            env=environment, capture_output=True, text=True, timeout=60)
    seconds = time.monotonic() - start
    attempts = json.loads((sandbox / "state.json").read_text())["attempts"]
    return result.returncode, attempts, seconds


def test_fake_ssh_runs_the_whole_command_again_when_ssh_fails(sandbox):
    status, attempts, _ = fake_ssh(sandbox, "drop,drop,ok")
    assert status == 0 and attempts == [[0, 255], [0, 255], [0, 0]]
    status, attempts, seconds = fake_ssh(sandbox, "drop", retry_seconds="0.1")
    assert status == 255 and attempts == [[0, 255]] * 10  # 10 attempts, then ssh's 255
    assert seconds >= 9 * 0.1  # 9 waits between them
    status, attempts, _ = fake_ssh(sandbox, "fail")
    assert status == 1 and attempts == [[0, 1]]  # the remote command's failure: no retry


def test_fake_ssh_on_all_workers_exits_with_the_first_nonzero_status_in_worker_order(sandbox):
    assert fake_ssh(sandbox, ["ok", "sigterm", "fail"], workers=3)[0] == 143
    assert fake_ssh(sandbox, ["fail", "sigterm", "ok"], workers=3)[0] == 1
    assert fake_ssh(sandbox, ["ok", "drop", "fail"], workers=3)[0] == 255
    assert fake_ssh(sandbox, ["ok", "drop,ok", "ok"], workers=3)[0] == 0


# --- ssh drops: the job runs detached, so it is neither killed nor started twice

def test_a_drop_that_gcloud_retries_away_is_invisible(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["drop,ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete"]


def test_after_gcloud_gives_up_on_a_healthy_tpu_the_launcher_connects_to_the_same_launch(
        sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["drop", "ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert changes(calls) == ["tpu-vm ssh", "tpu-vm ssh", "queued-resources delete"]
    first, second = ssh_commands(calls)
    assert launch_of(first) == launch_of(second)  # attach, never a new start
    assert "lost the ssh connection (1 of at most 5)" in result.stdout


def test_a_sigterm_stop_starts_a_new_launch(sandbox):
    _, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["sigterm", "ok"])
    first, second = ssh_commands(calls)
    assert launch_of(first) != launch_of(second)


def test_gives_up_after_max_ssh_drops(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                        ssh=["drop"] * 3, MAX_SSH_DROPS="2")
    assert result.returncode == 1
    assert "lost the ssh connection to jaxbook-spot 3 times in a row" in result.stderr
    assert changes(calls) == ["tpu-vm ssh"] * 3
    assert final["queued"] == "ACTIVE"  # the TPU, and the job on it, are left alone


JOB = 'echo start >> "$HOME/starts"; touch "$HOME/started"; sleep 1.5; echo done > "$HOME/finished"'


def wait_for(path, seconds=20):
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def starts(worker):
    path = worker / "starts"
    return len(path.read_text().splitlines()) if path.exists() else 0


def run_with_drops(sandbox, drops, script=SCRIPT, **env):
    result, calls, final = run_launcher(
        sandbox, queued="ACTIVE", node="READY", workers=2, run_remote=True, drops=drops,
        script=script, TRAIN_COMMAND=JOB, HEARTBEAT_SECONDS="0.1", **env)
    counts = [starts(sandbox / f"worker{worker}") for worker in range(2)]
    finished = [(sandbox / f"worker{worker}" / "finished").exists() for worker in range(2)]
    return result, calls, final, counts, finished


def test_an_ssh_drop_during_the_job_neither_kills_it_nor_starts_a_second_copy(sandbox):
    # Worker 1's session is killed once its job has started; gcloud runs the command again.
    result, calls, final, counts, finished = run_with_drops(sandbox, {"1": 1})
    assert result.returncode == 0, result.stdout + result.stderr
    assert counts == [1, 1] and finished == [True, True]  # one job per worker, throughout
    assert [status for worker, status in final["attempts"] if worker == 1] == [255, 0]
    assert "attaching to it, not starting a second copy" in result.stdout
    assert changes(calls) == ["tpu-vm ssh", "queued-resources delete"]


def test_a_drop_longer_than_gcloud_retries_is_attached_to_by_the_launcher(sandbox):
    # 10 failed attempts on worker 0: gcloud exits 255, the TPU is READY, the launcher connects
    # again with the same launch and attaches to (or collects) the job that went on running.
    result, calls, _, counts, finished = run_with_drops(sandbox, {"0": 10})
    assert result.returncode == 0, result.stdout + result.stderr
    assert counts == [1, 1] and finished == [True, True]
    assert changes(calls) == ["tpu-vm ssh", "tpu-vm ssh", "queued-resources delete"]


def test_a_retry_after_the_job_ended_reports_it_instead_of_starting_it_again(sandbox):
    # gcloud's retry comes 3 s later, when the 1.5 s job is over: it must not run a second time.
    result, _, _, counts, finished = run_with_drops(sandbox, {"1": 1},
                                                    FAKE_GCLOUD_RETRY_SECONDS="3")
    assert result.returncode == 0, result.stdout + result.stderr
    assert counts == [1, 1] and finished == [True, True]
    assert "already ran on this worker: not starting it again" in result.stderr


# Planted faults in a copy of the launcher: the tests above must catch each of them.

def planted(sandbox, find, replace):
    text = SCRIPT.read_text()
    assert text.count(find) == 1, find
    copy = sandbox / "tpu_spot_launch_planted.sh"
    copy.write_text(text.replace(find, replace))
    return copy


def test_planted_fault_job_not_detached_dies_with_its_session(sandbox):
    script = planted(sandbox, "setsid nohup bash -c", "bash -c")
    result, _, _, counts, finished = run_with_drops(sandbox, {"1": 1}, script=script)
    assert finished == [True, False]  # worker 1's job was killed with its ssh session
    assert result.returncode == 1 and "not a preemption" in result.stderr


def test_planted_fault_no_launch_check_starts_a_second_copy(sandbox):
    script = planted(sandbox, '"$(cat "$J/launch" 2>/dev/null)" = "$launch"',
                     '"$(cat "$J/launch" 2>/dev/null)" = "never"')
    result, _, _, counts, _ = run_with_drops(sandbox, {"1": 1}, script=script,
                                             FAKE_GCLOUD_RETRY_SECONDS="3")
    assert counts == [1, 2]  # the one-job count catches it


# --- one commit for the whole run, and a log that outlives the VM

PIN = "gs://my-bucket/run/jaxbook-launch/commit"
OTHER = "fedcba9876543210fedcba9876543210fedcba98"


def checked_out(command):
    (line,) = [line for line in command.splitlines() if "git checkout" in line]
    return line.split()[-1]


def local_repo(sandbox, commits=2):
    """A git repository with `commits` commits, standing for the book's; returns its path and
    the hash of each commit. git joins the tools the launcher may call."""
    git = shutil.which("git")
    assert git
    (sandbox / "bin" / "git").symlink_to(git)
    repo = sandbox / "book-repo"
    repo.mkdir()
    env = {"HOME": str(sandbox), "PATH": "/usr/bin:/bin", "GIT_AUTHOR_NAME": "a",
           "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    hashes = []
    for number in range(commits):
        subprocess.run(["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m",
                        str(number)], check=True, env=env)
        hashes.append(subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], env=env,
                                     capture_output=True, text=True, check=True).stdout.strip())
    return repo, hashes


def test_the_first_launch_pins_its_commit_and_the_restart_after_a_preemption_runs_it(sandbox):
    result, calls, final = run_launcher(sandbox, ssh=["preempt", "ok"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert final["bucket"] == {PIN: COMMIT + "\n"}
    assert verbs(calls).count("storage cp") == 1  # written once, before the first job
    commands = ssh_commands(calls)
    assert len(commands) == 2 and {checked_out(command) for command in commands} == {COMMIT}
    assert f"export JAXBOOK_COMMIT={COMMIT} " in commands[0]


def test_a_rerun_runs_the_buckets_pin_not_the_newest_head(sandbox):
    # The run was pinned to the older commit; the repository has moved on since.
    repo, (older, newer) = local_repo(sandbox)
    result, calls, final = run_launcher(sandbox, ssh=["ok"], bucket={PIN: older + "\n"},
                                        JAXBOOK_COMMIT=None, JAXBOOK_REPO_URL=str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    (command,) = ssh_commands(calls)
    assert checked_out(command) == older != newer
    assert "storage cp" not in verbs(calls) and final["bucket"] == {PIN: older + "\n"}


def test_with_no_pin_and_no_commit_the_repositorys_head_is_pinned(sandbox):
    repo, (_, head) = local_repo(sandbox)
    result, calls, final = run_launcher(sandbox, ssh=["ok"], JAXBOOK_COMMIT=None,
                                        JAXBOOK_REPO_URL=str(repo))
    assert result.returncode == 0, result.stdout + result.stderr
    (command,) = ssh_commands(calls)
    assert checked_out(command) == head and final["bucket"] == {PIN: head + "\n"}


def test_a_commit_other_than_the_runs_pin_is_refused(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["ok"],
                                        bucket={PIN: OTHER + "\n"})
    assert result.returncode == 1
    assert f"pinned to commit {OTHER}" in result.stderr and "new BUCKET" in result.stderr
    assert "tpu-vm ssh" not in verbs(calls) and final["bucket"] == {PIN: OTHER + "\n"}


@pytest.mark.parametrize("commit", ["main", "0123abc"])
def test_a_commit_that_is_not_a_full_hash_is_refused(sandbox, commit):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["ok"],
                                    JAXBOOK_COMMIT=commit)
    assert result.returncode == 1 and "40 hex digits" in result.stderr
    assert "tpu-vm ssh" not in verbs(calls)


def test_a_pin_that_cannot_be_read_stops_the_launcher(sandbox):
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["ok"],
                                    storage_denied=True)
    assert result.returncode == 1
    assert "HTTPError 403" in result.stderr and f"could not read {PIN}" in result.stderr
    assert "tpu-vm ssh" not in verbs(calls)


def test_a_dry_run_writes_no_pin(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["ok"],
                                        JAXBOOK_DRY_RUN="1")
    assert result.returncode == 0
    assert f"[dry run] would pin commit {COMMIT} in {PIN}" in result.stdout
    assert "[dry run] gcloud compute tpus tpu-vm ssh" in result.stdout
    assert final["bucket"] == {} and "storage cp" not in verbs(calls)


def test_the_jobs_log_is_copied_to_the_bucket(sandbox):
    job = 'echo "step 1"; sleep 0.5; echo "step 2"'
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY", workers=1,
                                    run_remote=True, TRAIN_COMMAND=job,
                                    HEARTBEAT_SECONDS="0.1")
    assert result.returncode == 0, result.stdout + result.stderr
    (command,) = ssh_commands(calls)
    logs = list((sandbox / "bucket" / "my-bucket" / "run" / "jaxbook-launch" / "logs").rglob(
        "*.log"))
    assert len(logs) == 1 and logs[0].parent.name == launch_of(command)
    text = logs[0].read_text()
    assert text.startswith(f"commit {COMMIT}, launch {launch_of(command)}, started ")
    assert "step 1\nstep 2\nthe job ended with status 0" in text  # the last copy is complete


def test_planted_fault_the_pin_ignored_runs_the_newest_head(sandbox):
    script = planted(sandbox, "if [[ -n $pinned ]]; then\n        COMMIT=$pinned",
                     "if false; then\n        COMMIT=$pinned")  # the pin read, then not used
    repo, (older, newer) = local_repo(sandbox)
    result, calls, _ = run_launcher(sandbox, ssh=["ok"], bucket={PIN: older + "\n"},
                                    JAXBOOK_COMMIT=None, JAXBOOK_REPO_URL=str(repo),
                                    script=script)
    (command,) = ssh_commands(calls)
    assert checked_out(command) == newer != older  # what the rerun test above refuses
