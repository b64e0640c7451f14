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

REQUIREMENTS = (ROOT / "requirements.txt").read_text()
JAX_PIN = re.search(r"^jax==(\S+)", REQUIREMENTS, re.M).group(1)

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


TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"  # the script's default for torch
INDEX_ARGS = f"--extra-index-url {TORCH_CPU_INDEX}"


def pip_line(index_args: str = INDEX_ARGS) -> str:
    line = f'.venv/bin/python -m pip install -r requirements.txt "jax[tpu]=={JAX_PIN}"'
    return f"{line} {index_args}" if index_args else line


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


# --- JAXBOOK_JAX_VERSION: an older jax (e.g. 0.5.3 for a TPU v2-8/v3-8) instead of the pin

MARKER = ".venv/jaxbook-jax-override"
OLD_JAX = "0.5.3"
OLD_LIBTPU = "0.0.7.1"  # Colab's retired v2-8 runtime ran jax 0.5.3 with this libtpu

# A .venv Python 3.12 that installs nothing: it answers the version query and records each
# other call (pip's) in pip-calls.log next to .venv, so a real (not dry) run can be checked.
FAKE_VENV_PY = """#!/bin/sh
if [ "$1" = "-c" ]; then
    echo 3.12
    exit 0
fi
echo "$*" >> "{log}"
"""


def override_args(jax_version: str = OLD_JAX) -> list[str]:
    """requirements.txt as the override passes it: no jax/jaxlib/qwix; optax, orbax, flax capped.

    Below jax 0.6 orbax-checkpoint is held at 0.11.23: 0.11.24 calls jax.monitoring.record_scalar
    (new in jax 0.6.0) although it declares jax >= 0.5.0.
    """
    before_0_6 = tuple(int(n) for n in jax_version.split(".")[:2]) < (0, 6)
    args = []
    for line in REQUIREMENTS.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name = re.split(r"[<>=!~;\[ ]", line, maxsplit=1)[0].lower().replace("_", "-")
        if name in ("jax", "jaxlib", "qwix"):  # qwix needs flax >= 0.12: left out
            continue
        if name in ("optax", "orbax-checkpoint", "flax"):
            line = line.replace("==", "<=")
        if name == "orbax-checkpoint" and before_0_6:
            line = "orbax-checkpoint<=0.11.23"
        args.append(f'"{line}"' if re.search(r"[^A-Za-z0-9_./=:+-]", line) else line)
    return args


def override_pip_line(*jax_args: str, jax_version: str = OLD_JAX) -> str:
    return " ".join(
        [".venv/bin/python -m pip install", *override_args(jax_version), *jax_args, INDEX_ARGS]
    )


@pytest.fixture
def venv(sandbox, python):
    """An existing good .venv (a real Python 3.12), so runs go straight to the install."""
    venv_bin = sandbox / "repo" / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(python)
    return sandbox / "repo" / ".venv"


def test_override_args_leave_out_jax_and_cap_its_followers():
    args = override_args()
    assert not any(a.startswith(("jax", '"jax')) for a in args)
    assert '"optax<=' in " ".join(args) and '"orbax-checkpoint<=0.11.23"' in args
    pinned_flax = re.search(r"^flax==(\S+)", REQUIREMENTS, re.M).group(1)
    assert f'"flax<={pinned_flax}"' in args  # flax 0.12 needs jax >= 0.11.1: pip goes back
    assert any(a.startswith("torch==") for a in args)  # the other pins stay exact
    pinned_orbax = re.search(r"^orbax-checkpoint==(\S+)", REQUIREMENTS, re.M).group(1)
    assert f'"orbax-checkpoint<={pinned_orbax}"' in override_args("0.6.2")


def test_override_from_jax_0_6_caps_orbax_at_its_pin(sandbox, venv):
    result = run_script(sandbox, JAXBOOK_JAX_VERSION="0.6.2")
    assert result.returncode == 0, result.stdout + result.stderr
    jax_tpu = '"jax[tpu]==0.6.2"'
    assert f"[dry run] {override_pip_line(jax_tpu, jax_version='0.6.2')}\n" in result.stdout
    assert "0.11.23" not in result.stdout


def test_override_installs_jax_tpu_of_that_version(sandbox, venv):
    result = run_script(sandbox, JAXBOOK_JAX_VERSION=OLD_JAX)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    jax_tpu = f'"jax[tpu]=={OLD_JAX}"'
    assert f"[dry run] {override_pip_line(jax_tpu)}\n" in out
    assert "-r requirements.txt" not in out and f"jax[tpu]=={JAX_PIN}" not in out
    # The marker follows the dry-run convention: printed after the install, not written.
    assert f"[dry run] write {MARKER}: jax=={OLD_JAX}\n" in out
    assert out.index("[dry run] .venv/bin/python -m pip") < out.index(f"[dry run] write {MARKER}")
    assert not (sandbox / "repo" / MARKER).exists()
    done = f"Done: .venv has jax {OLD_JAX} (from JAXBOOK_JAX_VERSION, not the book's pin {JAX_PIN})"
    assert done in out
    assert "chapter 11" in out


def test_override_with_libtpu_names_jax_jaxlib_and_libtpu(sandbox, venv):
    result = run_script(sandbox, JAXBOOK_JAX_VERSION=OLD_JAX, JAXBOOK_LIBTPU_VERSION=OLD_LIBTPU)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    # Not jax[tpu]: its extra pins libtpu==0.0.11.* for 0.5.3, which conflicts with 0.0.7.1.
    line = override_pip_line(
        f"jax=={OLD_JAX}", f"jaxlib=={OLD_JAX}", f"libtpu=={OLD_LIBTPU}", "requests"
    )
    assert f"[dry run] {line}\n" in out
    assert "jax[tpu]" not in out
    assert f"[dry run] write {MARKER}: jax=={OLD_JAX} libtpu=={OLD_LIBTPU}\n" in out
    assert f"with libtpu {OLD_LIBTPU}." in out


def test_override_for_real_writes_the_marker_and_a_plain_run_removes_it(sandbox):
    repo = sandbox / "repo"
    log = sandbox / "pip-calls.log"
    (repo / ".venv" / "bin").mkdir(parents=True)
    write_exe(repo / ".venv" / "bin" / "python", FAKE_VENV_PY.format(log=log))
    env = {"JAXBOOK_DRY_RUN": "", "JAXBOOK_JAX_VERSION": OLD_JAX}
    result = run_script(sandbox, **env, JAXBOOK_LIBTPU_VERSION=OLD_LIBTPU)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "[dry run]" not in result.stdout
    assert (repo / MARKER).read_text() == f"jax=={OLD_JAX}\nlibtpu=={OLD_LIBTPU}\n"
    assert (
        log.read_text()
        .splitlines()[-1]
        .endswith(f"jax=={OLD_JAX} jaxlib=={OLD_JAX} libtpu=={OLD_LIBTPU} requests {INDEX_ARGS}")
    )

    result = run_script(sandbox, JAXBOOK_DRY_RUN="")  # back to the pin
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"removing {MARKER}" in result.stdout
    assert not (repo / MARKER).exists()
    pinned = f"-m pip install -r requirements.txt jax[tpu]=={JAX_PIN} {INDEX_ARGS}"
    assert log.read_text().splitlines()[-1] == pinned


@pytest.mark.parametrize(
    "variable, value",
    [
        ("JAXBOOK_JAX_VERSION", "0.5"),
        ("JAXBOOK_JAX_VERSION", "==0.5.3"),
        ("JAXBOOK_JAX_VERSION", ">=0.5.3"),
        ("JAXBOOK_JAX_VERSION", "0.5.3 libtpu==0.0.1"),
        ("JAXBOOK_JAX_VERSION", "0.5.3; rm -rf /"),
        ("JAXBOOK_JAX_VERSION", "v0.5.3"),
        ("JAXBOOK_LIBTPU_VERSION", "0.0.7.1.2.3"),
        ("JAXBOOK_LIBTPU_VERSION", "nightly"),
    ],
)
def test_malformed_version_is_refused_before_anything_happens(sandbox, python, variable, value):
    env = {"JAXBOOK_JAX_VERSION": OLD_JAX, variable: value}
    result = run_script(sandbox, PYTHON=python, **env)  # no .venv: it would be created
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"error: {variable}='{value}' is not a version number" in result.stderr
    assert "such as 0.5.3" in result.stderr
    assert "[dry run]" not in result.stdout  # refused before the venv or pip


def test_libtpu_without_jax_version_is_refused(sandbox, venv):
    result = run_script(sandbox, JAXBOOK_LIBTPU_VERSION=OLD_LIBTPU)
    assert result.returncode == 1
    assert "JAXBOOK_LIBTPU_VERSION=0.0.7.1 is set without JAXBOOK_JAX_VERSION" in result.stderr
    assert "[dry run]" not in result.stdout


def test_without_override_the_install_is_the_pinned_one(sandbox, venv):
    result = run_script(sandbox)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    dry = [line for line in out.splitlines() if line.startswith("[dry run]")]
    assert dry == [f"[dry run] {pip_line()}"]  # no marker written or removed, no other pip line
    assert f"Done: .venv has jax {JAX_PIN} (the book's pin)" in out
    assert "JAXBOOK_JAX_VERSION" not in out and MARKER not in out


def test_without_override_an_old_marker_is_removed_before_the_install(sandbox, venv):
    (venv / "jaxbook-jax-override").write_text(f"jax=={OLD_JAX}\n")
    result = run_script(sandbox)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.index(f"[dry run] rm -f {MARKER}") < out.index(f"[dry run] {pip_line()}")
    assert (venv / "jaxbook-jax-override").exists()  # a dry run removes nothing


# --- torch's CPU build, and running the script twice


def test_torch_comes_from_the_cpu_index_unless_told_otherwise(sandbox, venv):
    result = run_script(sandbox)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"(torch from {TORCH_CPU_INDEX})" in result.stdout
    assert f"[dry run] {pip_line()}\n" in result.stdout
    result = run_script(sandbox, JAXBOOK_TORCH_INDEX="")  # empty: PyPI's torch, the CUDA build
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"[dry run] {pip_line(index_args='')}\n" in result.stdout
    assert "extra-index-url" not in result.stdout and "torch from" not in result.stdout


def test_running_the_script_twice_reuses_the_venv_and_repeats_the_same_install(sandbox):
    """The reader's `git clone ... && bash tools/tpu_vm_install.sh`, run a second time."""
    repo = sandbox / "repo"
    log = sandbox / "pip-calls.log"
    (repo / ".venv" / "bin").mkdir(parents=True)
    write_exe(repo / ".venv" / "bin" / "python", FAKE_VENV_PY.format(log=log))
    runs = [run_script(sandbox, JAXBOOK_DRY_RUN="") for _ in range(2)]
    for result in runs:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "reusing it" in result.stdout and "-m venv" not in result.stdout
        assert "rm -rf" not in result.stdout and "removing" not in result.stdout
    calls = log.read_text().splitlines()
    assert len(calls) == 2 and calls[0] == calls[1], calls  # one identical pip call per run
    assert calls[0] == f"-m pip install -r requirements.txt jax[tpu]=={JAX_PIN} {INDEX_ARGS}"
    assert runs[0].stdout == runs[1].stdout
    assert not (repo / MARKER).exists()
