"""pip's real resolver on every install line of tools/tpu_vm_install.sh.

tests/test_tpu_vm_install.py checks which pip command the script runs, with a fake Python, so
pip never decides whether that command can be satisfied. Here each command is taken from the
script's own dry run (so the two cannot drift apart) and handed to pip's resolver, for real:
`pip install --dry-run --ignore-installed --report`, against PyPI, with this test's Python
(the .venv's 3.12, the version the script installs on a TPU VM) and pip PIP_VERSION, put in a
temporary folder. Nothing is installed. A recent pip reads only the metadata of each wheel where
the index serves no separate metadata file (the PyPI proxy of the book's machine serves none);
the pip that Python 3.12.1's venv brings (23.2.1) downloads every wheel whole in a dry run,
several GB for torch and its CUDA libraries, and takes minutes per line.

The lines checked are the pinned one (a plain run) and every override the book documents: each
`JAXBOOK_...=... bash tools/tpu_vm_install.sh` command written in the README, the script's
header or a chapter (the TPU v2/v3 one: jax 0.5.3 with libtpu 0.0.7.1).

Each line is resolved with JAXBOOK_TORCH_INDEX= (torch from PyPI), because PyTorch's CPU index,
the script's default source of torch, cannot be reached from the book's CI machine. Where that
index can be reached, one more case resolves the pinned line as a reader's run makes it, with
torch and torchvision from the CPU index (`2.14.1+cpu` satisfies `torch==2.14.1`); elsewhere that
case is skipped, saying why.

Needs PyPI. Offline, set JAXBOOK_OFFLINE=1 to skip these tests (CI never sets it).
"""

import json
import os
import platform
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "tpu_vm_install.sh"
BASH = shutil.which("bash") or "/bin/bash"
PIP_PREFIX = [".venv/bin/python", "-m", "pip", "install"]  # how the script calls pip
RESOLVE_TIMEOUT = 600  # seconds for one pip resolve
PIP_VERSION = "26.3"  # the pip that resolves: fixed, so that a new pip cannot change the result

# Where the book documents an install command: the override lines are collected from these.
DOC_GLOBS = ("README.md", "tools/tpu_vm_install.sh", "notebooks/*.ipynb", "zh/notebooks/*.ipynb")
COMMAND = re.compile(r"((?:JAXBOOK_[A-Z_]+=[0-9A-Za-z.]+ +)+)bash tools/tpu_vm_install\.sh")

pytestmark = [
    pytest.mark.skipif(
        bool(os.environ.get("JAXBOOK_OFFLINE")), reason="JAXBOOK_OFFLINE is set: no PyPI"
    ),
    pytest.mark.skipif(
        sys.version_info[:2] < (3, 12) or sys.platform != "linux" or platform.machine() != "x86_64",
        reason="the TPU VM's platform is Linux x86_64 with Python >= 3.12",
    ),
]


def documented_overrides() -> list[tuple[tuple[str, str], ...]]:
    """Each documented `VAR=value ... bash tools/tpu_vm_install.sh` as sorted (VAR, value) pairs."""
    found = set()
    for pattern in DOC_GLOBS:
        for path in sorted(ROOT.glob(pattern)):
            for match in COMMAND.finditer(path.read_text()):
                pairs = (word.split("=", 1) for word in match.group(1).split())
                found.add(tuple(sorted((name, value) for name, value in pairs)))
    return sorted(found)


def reachable(host: str) -> bool:
    try:
        socket.create_connection((host, 443), timeout=5).close()
    except OSError:
        return False
    return True


OVERRIDES = documented_overrides()
TORCH_CPU = (("JAXBOOK_TORCH_INDEX", "https://download.pytorch.org/whl/cpu"),)
# () is a plain run: the pinned line. TORCH_CPU only where PyTorch's index answers.
CASES = [()] + OVERRIDES + ([TORCH_CPU] if reachable("download.pytorch.org") else [])
V2_V3 = (("JAXBOOK_JAX_VERSION", "0.5.3"), ("JAXBOOK_LIBTPU_VERSION", "0.0.7.1"))


def case_id(case) -> str:
    if case == TORCH_CPU:
        return "pinned-torch-cpu"
    return "pinned" if not case else "+".join(f"{k.removeprefix('JAXBOOK_')}={v}" for k, v in case)


def public(version: str) -> str:
    """The version without its local label: torch 2.14.1+cpu satisfies torch==2.14.1."""
    return version.split("+", 1)[0]


def script_pip_args(tmp: Path, case) -> list[str]:
    """The pip arguments the script's dry run prints for `case`, after `python -m pip install`."""
    repo = tmp / "repo"
    (repo / "tools").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "tools" / SCRIPT.name)
    shutil.copy(ROOT / "requirements.txt", repo / "requirements.txt")
    # An existing .venv whose Python says 3.12: the script goes straight to pip. The dry run
    # only asks it for its version.
    venv_python = repo / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text('#!/bin/sh\n[ "$1" = "-c" ] && echo 3.12\n')
    venv_python.chmod(0o755)
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(tmp),
        "JAXBOOK_DRY_RUN": "1",
        "JAXBOOK_TORCH_INDEX": "",
        **dict(case),
    }
    result = subprocess.run(
        [BASH, "tools/tpu_vm_install.sh"],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    pip_lines = [
        shlex.split(line.removeprefix("[dry run] "))
        for line in result.stdout.splitlines()
        if line.startswith("[dry run] ") and " -m pip " in line
    ]
    assert len(pip_lines) == 1, result.stdout  # one pip call: the install
    argv = pip_lines[0]
    assert argv[: len(PIP_PREFIX)] == PIP_PREFIX, argv
    return argv[len(PIP_PREFIX) :]


@pytest.fixture(scope="module")
def pip_path(tmp_path_factory) -> str:
    """A folder holding pip PIP_VERSION, for PYTHONPATH (it then comes before the .venv's pip)."""
    folder = tmp_path_factory.mktemp("pip")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--target",
            str(folder),
            f"pip=={PIP_VERSION}",
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return str(folder)


@pytest.fixture(scope="module")
def resolves(tmp_path_factory, pip_path):
    """Start pip's resolver on every case at once (they mostly wait on the network)."""
    env = os.environ | {"PYTHONPATH": pip_path}
    started = {}
    for case in CASES:
        tmp = tmp_path_factory.mktemp(case_id(case).replace("=", "-"))
        args = script_pip_args(tmp, case)
        report = tmp / "report.json"
        command = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            *args,
        ]
        proc = subprocess.Popen(
            command,
            cwd=tmp / "repo",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        started[case] = (args, report, proc)
    yield started
    for _, _, proc in started.values():
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def resolved(resolves, case) -> tuple[list[str], dict[str, str]]:
    """Wait for `case`'s resolve; return the pip arguments and {project: version} it chose."""
    args, report, proc = resolves[case]
    try:
        output, _ = proc.communicate(timeout=RESOLVE_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail(f"pip did not finish resolving {args} in {RESOLVE_TIMEOUT} s")
    errors = "\n".join(line for line in output.splitlines() if "Location 'file:" not in line)
    assert proc.returncode == 0, f"pip cannot resolve {' '.join(args)}:\n{errors}"
    data = json.loads(report.read_text())
    assert data["pip_version"] == PIP_VERSION, data["pip_version"]  # not the .venv's own pip
    install = data["install"]
    versions = {
        re.sub(r"[-_.]+", "-", item["metadata"]["name"]).lower(): item["metadata"]["version"]
        for item in install
    }
    return args, versions


def test_the_v2_v3_override_is_among_the_documented_ones():
    assert V2_V3 in OVERRIDES, OVERRIDES  # else the search for documented commands is broken


def test_torch_cpu_index_case(resolves):
    if TORCH_CPU not in resolves:
        pytest.skip(
            "download.pytorch.org cannot be reached from here: the default line "
            "(torch from PyTorch's CPU index) is not resolved"
        )
    args, versions = resolved(resolves, TORCH_CPU)
    assert args[-2:] == ["--extra-index-url", dict(TORCH_CPU)["JAXBOOK_TORCH_INDEX"]], args
    assert versions["torch"].endswith("+cpu"), versions["torch"]
    assert not any(name.startswith("nvidia-") for name in versions), sorted(versions)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_pip_resolves_the_script_install_line(resolves, case):
    args, versions = resolved(resolves, case)
    env = dict(case)
    jax = env.get("JAXBOOK_JAX_VERSION")
    if case == TORCH_CPU:
        pytest.skip("checked by test_torch_cpu_index_case")
    requirements = (ROOT / "requirements.txt").read_text()
    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", requirements, re.M))
    pins = {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in pins.items()}
    if jax is None:
        # The pinned line: every pin of requirements.txt exactly, and the TPU runtime.
        assert args[:2] == ["-r", "requirements.txt"], args
        for name, version in pins.items():
            assert public(versions.get(name, "")) == version, (name, version, versions.get(name))
        assert "libtpu" in versions  # brought by jax[tpu]
    else:
        assert versions["jax"] == jax and versions["jaxlib"] == jax, versions
        if "JAXBOOK_LIBTPU_VERSION" in env:
            assert versions["libtpu"] == env["JAXBOOK_LIBTPU_VERSION"]
        else:
            assert "libtpu" in versions
        # Every package of requirements.txt is still installed (but qwix, which the script
        # leaves out: it needs flax >= 0.12), those not capped for the older JAX at their pins.
        missing = set(pins) - {"jax", "jaxlib", "qwix"} - set(versions)
        assert not missing, f"the override leaves out {sorted(missing)}"
        for arg in args:
            match = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+)", arg)
            if match:
                name = re.sub(r"[-_.]+", "-", match.group(1)).lower()
                assert public(versions.get(name, "")) == match.group(2), (arg, versions.get(name))
