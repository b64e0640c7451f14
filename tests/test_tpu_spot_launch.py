"""tools/tpu_spot_launch.sh keeps a job going on a spot TPU: its logic, against a fake gcloud.

The fake `gcloud` on PATH keeps the state of one queued resource and its TPU VM in a JSON file,
answers `describe` from it, changes it on `create` and `delete`, and plays back the outcome of
each `tpu-vm ssh` from a list: "ok" (the job finished), "fail" (the job failed, the TPU is
fine) or "preempt" (the TPU was taken away while the job ran). Every call is logged, so the
tests check which commands the script ran, in which order. Nothing touches Google Cloud.
"""

import json
import shutil
import subprocess
import sys
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


def not_found():
    print("ERROR: (gcloud) NOT_FOUND: Resource not found", file=sys.stderr)
    sys.exit(1)


group, verb = words[2], words[3]
if group == "queued-resources" and verb == "describe":
    if state["queued"] is None:
        not_found()
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
        not_found()
    state["queued"], state["node"] = None, None
    save()
elif group == "tpu-vm" and verb == "describe":
    if state["node"] is None:
        not_found()
    print(state["node"])
elif group == "tpu-vm" and verb == "ssh":
    outcome = state["ssh"].pop(0)
    if outcome == "preempt":
        state["queued"], state["node"] = "SUSPENDED", "PREEMPTED"
    save()
    sys.exit({{"ok": 0, "fail": 1, "preempt": 255}}[outcome])
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


def run_launcher(sandbox, queued=None, node=None, ssh=(), looks_until_active=0, **env):
    state = {"queued": queued, "node": node, "ssh": list(ssh),
             "looks_until_active": looks_until_active}
    (sandbox / "state.json").write_text(json.dumps(state))
    (sandbox / "calls.log").write_text("")
    environment = {
        "PATH": str(sandbox / "bin"),
        "HOME": str(sandbox),
        "FAKE_GCLOUD_STATE": str(sandbox / "state.json"),
        "FAKE_GCLOUD_LOG": str(sandbox / "calls.log"),
        "POLL_SECONDS": "0",
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
    assert "preemption 1 (of at most 20)" in result.stdout
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
    assert "preempted 3 times, more than MAX_RESTARTS=2" in result.stderr
    assert verbs(calls).count("queued-resources create") == 3


def test_a_failing_job_on_a_healthy_tpu_is_not_restarted(sandbox):
    result, calls, final = run_launcher(sandbox, queued="ACTIVE", node="READY", ssh=["fail"])
    assert result.returncode == 1
    assert "not a preemption" in result.stderr
    assert changes(calls) == ["tpu-vm ssh"]  # no delete, no create: the TPU stays for a rerun
    assert final["queued"] == "ACTIVE"


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
