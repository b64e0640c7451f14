"""tools/tpu_vm_install.sh finds a Python >= 3.12 (or gets one from uv) and installs jax[tpu].

Every run is a dry run (JAXBOOK_DRY_RUN=1) in a temporary copy holding only the script and
requirements.txt. PATH holds fake interpreters and the few tools the script needs, so nothing
is installed or downloaded and the machine's own Pythons stay out of view.
"""

import glob
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ROOT

SCRIPT = ROOT / "tools" / "tpu_vm_install.sh"
BASH = shutil.which("bash") or "/bin/bash"
TOOLS = ("sed", "dirname", "rm")  # the external commands the script runs besides Python/uv

JAX_PIN = re.search(r"^jax==(\S+)", (ROOT / "requirements.txt").read_text(), re.M).group(1)

# Answers every `python -c ...` (the script's version query) with 3.10, like Ubuntu 22.04's python3.
FAKE_PY310 = "#!/bin/sh\necho 3.10\n"
# A Python 3.11: new enough for the old pin, too old for jax 0.12.
FAKE_PY311 = "#!/bin/sh\necho 3.11\n"

# A uv that knows no Python >= 3.12 and refuses everything else, so a dry run must not call it.
FAKE_UV = """#!/bin/sh
if [ "$1 $2" = "python find" ]; then
    echo "error: No interpreter found for Python $3" >&2
    exit 2
fi
echo "fake uv was called for real: $*" >&2
exit 3
"""


@pytest.fixture
def python() -> str:
    """A real interpreter >= 3.12 that is not on the test PATH (pyenv's, on this machine)."""
    for pattern in ("3.12.*/bin/python3.12", "3.13.*/bin/python3.13"):
        found = sorted(glob.glob(f"/root/.pyenv/versions/{pattern}"))
        if found:
            return found[-1]
    pytest.skip("no Python 3.12/3.13 under /root/.pyenv/versions")


def write_exe(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


@pytest.fixture
def sandbox(tmp_path):
    """A repo copy with the script and requirements.txt, an empty HOME and a bin/ for PATH."""
    repo = tmp_path / "repo"
    (repo / "tools").mkdir(parents=True)
    shutil.copy(SCRIPT, repo / "tools" / SCRIPT.name)
    shutil.copy(ROOT / "requirements.txt", repo / "requirements.txt")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in TOOLS:
        (bin_dir / tool).symlink_to(shutil.which(tool))
    (tmp_path / "home").mkdir()
    return tmp_path


def run_script(sandbox: Path, **env: str) -> subprocess.CompletedProcess:
    base = {
        "PATH": str(sandbox / "bin"),
        "HOME": str(sandbox / "home"),
        "JAXBOOK_DRY_RUN": "1",
    }
    return subprocess.run(
        [BASH, "tools/tpu_vm_install.sh"],
        cwd=sandbox / "repo",
        env=base | env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def pip_line() -> str:
    return f'.venv/bin/python -m pip install -r requirements.txt "jax[tpu]=={JAX_PIN}"'


def test_only_python_310_offline_stops_with_a_clear_message(sandbox):
    write_exe(sandbox / "bin" / "python3", FAKE_PY310)
    result = run_script(sandbox, JAXBOOK_NO_DOWNLOAD="1")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    err = result.stderr
    assert "error: no Python >= 3.12 was found" in err
    assert "python3 (3.10)" in err  # says what it looked at and why it said no
    assert "uv: not installed" in err
    assert "JAXBOOK_NO_DOWNLOAD" in err and "PYTHON=/path/to/python3.12" in err  # what to do
    assert "[dry run]" not in result.stdout  # it stopped before touching .venv or pip
    assert not (sandbox / "repo" / ".venv").exists()


def test_python_310_given_as_PYTHON_is_refused(sandbox):
    write_exe(sandbox / "bin" / "old-python", FAKE_PY310)
    result = run_script(
        sandbox, PYTHON=str(sandbox / "bin" / "old-python"), JAXBOOK_NO_DOWNLOAD="1"
    )
    assert result.returncode == 1
    assert "old-python (3.10)" in result.stderr


def test_new_enough_python_creates_venv_and_installs_jax_tpu(sandbox, python):
    write_exe(sandbox / "bin" / "python3.12", FAKE_PY311)  # judged by its version, not its name
    write_exe(sandbox / "bin" / "python3.13", FAKE_PY310)  # a stale one is passed over
    (sandbox / "bin" / "python3").symlink_to(python)
    result = run_script(sandbox, JAXBOOK_NO_DOWNLOAD="1")
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert f"[dry run] {sandbox / 'bin' / 'python3'} -m venv .venv" in out
    assert f"[dry run] {pip_line()}" in out
    assert ".venv/bin/jupyter lab --no-browser --port 8888" in out
    assert '.venv/bin/python -c "import jax; print(jax.devices())"' in out
    assert not (sandbox / "repo" / ".venv").exists()  # a dry run changes nothing


def test_existing_good_venv_is_reused(sandbox, python):
    venv_bin = sandbox / "repo" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(python)
    result = run_script(sandbox)  # no Python on PATH at all: none is needed
    assert result.returncode == 0, result.stdout + result.stderr
    assert "reusing it" in result.stdout
    assert "-m venv" not in result.stdout
    assert f"[dry run] {pip_line()}" in result.stdout


def test_old_venv_is_recreated(sandbox, python):
    venv_bin = sandbox / "repo" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    write_exe(venv_bin / "python", FAKE_PY310)
    result = run_script(sandbox, PYTHON=python)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert ".venv has Python 3.10, older than 3.12: it will be recreated" in out
    assert out.index("[dry run] rm -rf .venv") < out.index(f"[dry run] {python} -m venv .venv")
    assert f"[dry run] {pip_line()}" in out
    assert (venv_bin / "python").exists()  # the dry run removed nothing


def test_uv_installs_python_when_only_310_exists(sandbox):
    write_exe(sandbox / "bin" / "python3", FAKE_PY310)
    write_exe(sandbox / "bin" / "uv", FAKE_UV)
    result = run_script(sandbox, JAXBOOK_NO_DOWNLOAD="1")  # uv is there: nothing to download
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    uv = sandbox / "bin" / "uv"
    assert f"[dry run] {uv} python install 3.12" in out
    assert f'[dry run] "$({uv} python find 3.12)" -m venv .venv' in out
    assert f"[dry run] {pip_line()}" in out
    assert "fake uv was called for real" not in result.stderr


def test_missing_uv_is_fetched_with_the_official_installer(sandbox):
    write_exe(sandbox / "bin" / "python3", FAKE_PY310)
    write_exe(sandbox / "bin" / "curl", "#!/bin/sh\necho 'curl was called for real' >&2\nexit 7\n")
    result = run_script(sandbox)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "curl -LsSf https://astral.sh/uv/install.sh | env UV_INSTALL_DIR=" in out
    assert "[dry run] uv python install 3.12" in out
    assert f"[dry run] {pip_line()}" in out
    assert "called for real" not in result.stderr
