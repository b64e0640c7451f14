"""tools/tpu_spot_launch.sh keeps a job going on a spot TPU: its logic, against a fake gcloud.

The fake `gcloud` on PATH keeps the state of one queued resource and its TPU VM in a JSON file,
answers `describe` from it, changes it on `create` and `delete`, and plays back the outcome of
each `tpu-vm ssh` from a list: "ok" (the job finished), "fail" (the job failed, the TPU is
fine), "preempt" (the TPU was taken away while the job ran), "preempt-late" (ssh lost the
connection, status 255, but the states change only a few `describe` calls later, as during a
preempted VM's shutdown), "sigterm" (the job saved and exited with 143, the TPU is fine),
"sigterm-late" (143, then the late preemption) or "locked" (another copy holds the lock, 75).
Every call is logged, so the tests check which commands the script ran, in which order.
Nothing touches Google Cloud.
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
import sys

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
    state["queued"], state["node"] = "ACTIVE", "READY"
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
    outcome = state["ssh"].pop(0)
    if outcome == "preempt":
        state["queued"], state["node"] = "SUSPENDED", "PREEMPTED"
    if outcome.endswith("-late"):
        state["preempt_after_looks"] = state["late_by"]
    save()
    sys.exit({{"ok": 0, "fail": 1, "preempt": 255, "preempt-late": 255, "sigterm": 143,
              "sigterm-late": 143, "locked": 75}}[outcome])
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
    for tool in ("grep", "mktemp", "rm", "cat", "sleep"):  # what the script runs besides gcloud
        found = shutil.which(tool)
        assert found, tool
        (bin_dir / tool).symlink_to(found)
    return tmp_path


def run_launcher(sandbox, queued=None, node=None, ssh=(), looks_until_active=0, late_by=3,
                 failed_data="", **env):
    state = {"queued": queued, "node": node, "ssh": list(ssh),
             "looks_until_active": looks_until_active, "late_by": late_by,
             "failed_data": failed_data}
    (sandbox / "state.json").write_text(json.dumps(state))
    (sandbox / "calls.log").write_text("")
    environment = {
        "PATH": str(sandbox / "bin"),
        "HOME": str(sandbox),
        "FAKE_GCLOUD_STATE": str(sandbox / "state.json"),
        "FAKE_GCLOUD_LOG": str(sandbox / "calls.log"),
        "POLL_SECONDS": "0",
        "GRACE_SECONDS": "0",
        **SETTINGS,
        **env,
    }
    environment = {name: value for name, value in environment.items() if value is not None}
    result = subprocess.run([BASH, str(SCRIPT)], env=environment, capture_output=True,
                            text=True, timeout=60)
    calls = [json.loads(line) for line in (sandbox / "calls.log").read_text().splitlines()]
    final = json.loads((sandbox / "state.json").read_text())
    return result, calls, final


def verbs(calls):
    """Each call as 'queued-resources create', 'tpu-vm ssh', ..."""
    return [" ".join(arg for arg in call[2:4]) for call in calls]


def changes(calls):
    return [verb for verb in verbs(calls) if not verb.endswith("describe")]


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
    (command,) = [arg[len("--command="):] for arg in ssh if arg.startswith("--command=")]
    assert "git clone https://github.com/hands-on-jax/hands-on-jax hands-on-jax" in command
    assert "git -C hands-on-jax pull --ff-only" in command  # a rerun updates, not re-clones
    assert command.index("bash tools/tpu_vm_install.sh") < command.index(
        SETTINGS["TRAIN_COMMAND"])
    assert "export BUCKET=gs://my-bucket/run;" in command
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


def test_with_no_grace_a_late_preemption_reads_as_a_failure(sandbox):
    # What the script did before it looked again: GRACE_POLLS=0 shows why the grace is needed.
    result, calls, _ = run_launcher(sandbox, queued="ACTIVE", node="READY",
                                    ssh=["preempt-late"], late_by=4, GRACE_POLLS="0")
    assert result.returncode == 1
    assert "not a preemption" in result.stderr
    assert changes(calls) == ["tpu-vm ssh"]


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


def test_a_job_already_running_is_not_started_twice(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["locked"])
    assert result.returncode == 1
    assert "already running" in result.stderr
    assert changes(calls) == ["tpu-vm ssh"]
    assert final["queued"] == "ACTIVE"  # the running job's TPU is left alone


def test_the_remote_lock_refuses_a_second_copy_on_a_worker(sandbox):
    """Run the remote command itself, twice at once, in a fake worker's home folder."""
    _, calls, _ = run_launcher(sandbox, ssh=["ok"],
                               TRAIN_COMMAND="touch started; sleep 3; echo done > finished")
    ssh = calls[verbs(calls).index("tpu-vm ssh")]
    (command,) = [arg[len("--command="):] for arg in ssh if arg.startswith("--command=")]
    worker = sandbox / "worker"
    repo = worker / "hands-on-jax"
    (repo / ".git").mkdir(parents=True)
    (repo / "tools").mkdir()
    (repo / "tools" / "tpu_vm_install.sh").write_text("true\n")
    worker_bin = sandbox / "worker-bin"
    worker_bin.mkdir()
    (worker_bin / "git").write_text("#!/bin/sh\nexit 0\n")  # the pull does nothing here
    (worker_bin / "git").chmod(0o755)
    environment = {"HOME": str(worker), "PATH": f"{worker_bin}:/usr/bin:/bin"}
    first = subprocess.Popen([BASH, "-c", command], cwd=worker, env=environment)
    try:
        for _ in range(200):
            if (repo / "started").exists():
                break
            time.sleep(0.05)
        assert (repo / "started").exists()
        second = subprocess.run([BASH, "-c", command], cwd=worker, env=environment,
                                capture_output=True, text=True, timeout=30)
        assert second.returncode == 75
        assert "already running on this worker" in second.stderr
        assert first.wait(timeout=30) == 0
    finally:
        first.kill()
        first.wait()
    assert (repo / "finished").read_text() == "done\n"
    third = subprocess.run([BASH, "-c", command.replace("sleep 3", "true")],
                           cwd=worker, env=environment, capture_output=True, timeout=30)
    assert third.returncode == 0  # the lock goes with the job that held it


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
