"""Re-run notebooks top to bottom in a fresh kernel and store their outputs.

Usage: python dev/execute_notebook.py notebooks/01_jax_numpy.ipynb [...]

This is how every committed output in the book is produced: one clean run,
execution counts 1..N. The kernel's working directory is the notebook's folder,
as it is under nbval and in Jupyter.
"""

import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}


def execute(path: Path, target: Path | None = None) -> float:
    """Run `path` in a fresh kernel (working directory: its folder) and write the result to
    `target`, by default `path` itself. Returns the seconds it took."""
    notebook = nbformat.read(path, as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
        cell.metadata.pop("execution", None)
    notebook.metadata["kernelspec"] = KERNELSPEC
    client = NotebookClient(
        notebook,
        timeout=900,
        kernel_name="python3",
        resources={"metadata": {"path": str(path.parent)}},
        record_timing=False,
    )
    start = time.perf_counter()
    client.execute()
    seconds = time.perf_counter() - start
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, target or path)
    return seconds


def main(paths: list[str]) -> None:
    for name in paths:
        seconds = execute(Path(name))
        print(f"{name}: executed in {seconds:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
