"""The first code cell of every chapter: what it installs, and when it asks for a restart.

The cell runs here with `importlib.metadata.version`, `importlib.util.find_spec`,
`shutil.which`, `os.path.exists` and `subprocess.run` replaced, so each case (Colab's JAX,
an old JAX on a CPU, GPU or TPU machine, no JAX at all) is checked without installing
anything.
"""

import glob
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import all_notebooks, code_cells, load, source

SETUP_CELLS = {path.name: source(code_cells(load(path))[0]) for path in all_notebooks()}


def run_setup(
    code, monkeypatch, capsys, *, jax=None, missing=(), tpu=False, gpu=False, override=False,
    vfio=False, python=(3, 12, 8),
):
    """Execute a setup cell in a faked environment: (pip arguments or None, printed text)."""
    calls = []

    def version(name):
        if name == "jax" and jax is not None:
            return jax
        raise importlib.metadata.PackageNotFoundError(name)

    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name in missing:
            return None
        if name == "libtpu":
            return object() if tpu else None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.metadata, "version", version)
    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/nvidia-smi" if gpu else None)
    # The only file that may exist: the install script's mark of an older JAX kept on purpose.
    monkeypatch.setattr(
        os.path, "exists", lambda path: override and path.endswith("jaxbook-jax-override")
    )
    # TPU v5e and v6e VMs show their chips as /dev/vfio/<n>, not /dev/accel<n>.
    vfio_groups = ["/dev/vfio/0"] if vfio else []
    monkeypatch.setattr(glob, "glob", lambda pattern: vfio_groups if "vfio" in pattern else [])
    monkeypatch.setattr(sys, "version_info", python)
    monkeypatch.setattr(subprocess, "run", lambda args, **kwargs: calls.append(args))
    exec(compile(code, "<setup cell>", "exec"), {})
    assert len(calls) <= 1, "the setup cell should call pip at most once"
    pip = calls[0][calls[0].index("install") + 1:] if calls else None
    return pip, capsys.readouterr().out


@pytest.mark.parametrize("name", sorted(SETUP_CELLS))
def test_every_chapter_starts_with_the_same_setup_cell(name):
    template = re.sub(r"CHAPTER_PACKAGES = \[.*\]", "", SETUP_CELLS["00_setup.ipynb"])
    assert re.sub(r"CHAPTER_PACKAGES = \[.*\]", "", SETUP_CELLS[name]) == template


@pytest.mark.parametrize("jax_version", ["0.7.2", "0.10.2", "0.8.0rc1"])
def test_new_enough_jax_installs_nothing_and_prints_nothing(jax_version, monkeypatch, capsys):
    pip, printed = run_setup(SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax=jax_version)
    assert pip is None and printed == ""


@pytest.mark.parametrize(
    ("tpu", "gpu", "wheel"),
    [(False, False, "jax"), (False, True, "jax[cuda12]"), (True, False, "jax[tpu]")],
)
def test_old_jax_is_upgraded_for_the_hardware_then_a_restart_is_asked(
    tpu, gpu, wheel, monkeypatch, capsys
):
    pip, printed = run_setup(
        SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax="0.4.30", tpu=tpu, gpu=gpu
    )
    assert pip == ["--quiet", "--upgrade", wheel]
    assert "Restart the runtime" in printed and printed.count("\n") <= 2


def test_a_tpu_seen_only_through_vfio_gets_the_tpu_wheel(monkeypatch, capsys):
    # A v5e or v6e TPU VM before libtpu is installed: no /dev/accel0, but /dev/vfio/0.
    pip, _ = run_setup(SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax="0.4.30", vfio=True)
    assert pip == ["--quiet", "--upgrade", "jax[tpu]"]


@pytest.mark.parametrize("jax_version", [None, "0.6.2"])
def test_python_too_old_for_the_books_jax_is_refused_without_installing(
    jax_version, monkeypatch, capsys
):
    # The TPU image's python3 is 3.10: pip would install JAX 0.6.2, still too old, and the
    # cell would ask for a restart after every restart. It stops with a way out instead.
    with pytest.raises(RuntimeError) as refused:
        run_setup(SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax=jax_version, tpu=True,
                  python=(3, 10, 12))
    message = str(refused.value)
    assert "Python 3.10" in message and "3.11 or newer" in message
    assert "tools/tpu_vm_install.sh" in message


def test_the_oldest_supported_python_passes(monkeypatch, capsys):
    pip, printed = run_setup(
        SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax="0.7.2", python=(3, 11, 0)
    )
    assert pip is None and printed == ""


def test_missing_jax_is_installed_without_a_restart(monkeypatch, capsys):
    pip, printed = run_setup(SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax=None)
    assert pip == ["--quiet", "--upgrade", "jax"]
    assert printed == ""  # nothing was loaded yet, so nothing needs a restart


def test_missing_chapter_packages_are_installed_in_one_call(monkeypatch, capsys):
    pip, printed = run_setup(
        SETUP_CELLS["08_optax_training.ipynb"], monkeypatch, capsys, jax="0.7.2",
        missing=("optax", "tqdm"),
    )
    assert pip == ["--quiet", "optax", "tqdm"] and printed == ""


def test_an_older_jax_the_install_script_was_asked_for_is_kept(monkeypatch, capsys):
    # JAXBOOK_JAX_VERSION=0.5.3 bash tools/tpu_vm_install.sh (a TPU v2 or v3) leaves the mark.
    pip, printed = run_setup(
        SETUP_CELLS["08_optax_training.ipynb"], monkeypatch, capsys, jax="0.5.3", tpu=True,
        override=True, missing=("optax",),
    )
    assert pip == ["--quiet", "optax"]  # the chapter's packages, and no JAX upgrade
    assert "JAX 0.5.3 is older than the book's 0.7.2 but is kept" in printed
    assert "Restart" not in printed


def test_the_mark_changes_nothing_for_a_new_enough_jax(monkeypatch, capsys):
    pip, printed = run_setup(
        SETUP_CELLS["00_setup.ipynb"], monkeypatch, capsys, jax="0.12.0.1", override=True
    )
    assert pip is None and printed == ""
