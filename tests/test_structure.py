"""The notebooks are what the site shows and what nbval re-runs: check their shape."""

import getpass
import re

import pytest

from conftest import (
    ABSOLUTE_PATH,
    NOTEBOOK_PARAMS,
    ROOT,
    all_notebooks,
    code_cells,
    load,
    output_text,
    source,
    toc_files,
    toc_notebooks,
)


def test_every_notebook_is_in_the_toc():
    in_toc = {path.resolve() for path in toc_notebooks()}
    missing = [p.name for p in all_notebooks() if p.resolve() not in in_toc]
    assert not missing, f"notebooks missing from book/_toc.yml: {missing}"


def test_every_toc_entry_exists():
    absent = [
        name
        for name in toc_files()
        if not any((ROOT / f"{name}{suffix}").exists() for suffix in (".ipynb", ".md"))
    ]
    assert not absent, f"book/_toc.yml names files that do not exist: {absent}"


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_ran_top_to_bottom_on_a_fresh_kernel(path):
    cells = [c for c in code_cells(load(path)) if source(c).strip()]
    counts = [c.get("execution_count") for c in cells]
    assert counts == list(range(1, len(cells) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..N; "
        f"re-run it with `make execute NB=notebooks/{path.name}`"
    )


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_no_error_outputs(path):
    errors = [
        output.get("ename")
        for cell in code_cells(load(path))
        for output in cell.get("outputs", [])
        if output.get("output_type") == "error"
    ]
    assert not errors, f"{path.name} has error outputs: {errors}"


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_kernelspec_is_python3(path):
    assert load(path)["metadata"].get("kernelspec", {}).get("name") == "python3"


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_no_machine_paths_or_user_names_in_outputs(path):
    user = getpass.getuser()
    for cell in code_cells(load(path)):
        for output in cell.get("outputs", []):
            text = output_text(output)
            match = ABSOLUTE_PATH.search(text)
            assert not match, f"{path.name}: an output shows a local path: {match.group(0)}"
            if user not in ("root", "runner"):
                assert user not in text, f"{path.name}: an output shows the user name {user}"


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_no_deprecation_or_future_warnings_in_outputs(path):
    for cell in code_cells(load(path)):
        for output in cell.get("outputs", []):
            text = output_text(output)
            assert not re.search(r"DeprecationWarning|FutureWarning", text), (
                f"{path.name}: a warning in an output: {text.strip()[:200]}"
            )


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_first_cell_is_the_chapter_title(path):
    first = load(path)["cells"][0]
    assert first["cell_type"] == "markdown"
    assert re.match(r"# \d+\. \S", source(first)), (
        f"{path.name}: the first cell must be the title, '# N. Title'"
    )


@pytest.mark.parametrize("path", NOTEBOOK_PARAMS)
def test_no_imports_of_repository_code(path):
    """Each chapter must run alone in Colab, with nothing from this repository beside it."""
    local_modules = {p.stem for p in ROOT.glob("*.py")} | {"tools", "dev", "tests", "benchmarks"}
    for cell in code_cells(load(path)):
        for line in source(cell).splitlines():
            found = re.match(r"\s*(?:from|import)\s+([\w.]+)", line)
            if found:
                assert found.group(1).split(".")[0] not in local_modules, line
