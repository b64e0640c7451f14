"""Chapter 18's trace reader on a real TPU trace, on a machine without a TPU.

The chapter's stored outputs come from a CPU, whose trace names each operation with the
stats hlo_op, hlo_module and run_id. A TPU's trace does not: its device plane has a line
'XLA Modules' (one event per run of a program) and a line 'XLA Ops' (one event per
operation, named by its HLO instruction), and the reader's TPU part, label_tpu_operations,
assigns each operation to the run whose time contains it. This test runs the chapter's own
functions, taken from its code cells, on a trace recorded on a TPU v5e (JAX 0.10.2) by the
chapter's exercise 2 (the padded batches: one compilation of `jit__lambda`, three runs of
its four operations, three copies to the host): tests/fixtures/ch18_tpu_v5e_padded.xplane.pb.
"""

import ast
import collections
import glob
import os
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import NOTEBOOK_DIR, load, source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ch18_tpu_v5e_padded.xplane.pb"
CHAPTER = load(NOTEBOOK_DIR / "18_reading_a_profile.ipynb")
CELLS = {cell.get("id"): source(cell) for cell in CHAPTER["cells"] if cell["cell_type"] == "code"}


def definitions(cell_id: str) -> str:
    """A code cell's functions and its assignments of constants, without running the rest."""
    tree = ast.parse(CELLS[cell_id])
    keep = [node for node in tree.body if isinstance(node, ast.FunctionDef) or (
        isinstance(node, ast.Assign) and (isinstance(node.value, ast.Constant) or (
            isinstance(node.value, ast.Call) and ast.unparse(node.value.func) == "re.compile")))]
    return ast.unparse(ast.Module(body=keep, type_ignores=[]))


@pytest.fixture(scope="module")
def reader():
    pytest.importorskip("jax")
    from jax.profiler import ProfileData

    namespace = {"collections": collections, "glob": glob, "np": np, "os": os, "re": re,
                 "tempfile": tempfile, "warnings": warnings, "ProfileData": ProfileData}
    for cell_id in ("c18-read", "c18-profile-helper"):
        exec(definitions(cell_id), namespace)  # noqa: S102 (the chapter's own code)
    return namespace


def test_tpu_operations_are_assigned_to_their_runs(reader):
    events = reader["read_trace"](str(FIXTURE))
    assert "/device:TPU:0" in {event["plane"] for event in events}
    runs = reader["executions"](events, "jit__lambda")
    assert len(runs) == 3 and {len(run) for run in runs} == {4}
    assert len({run[0]["run"] for run in runs}) == 3  # three distinct run_ids
    names = {op["op"] for run in runs for op in run}
    assert names == {"copy-start", "copy-done", "tanh_reduce_fusion", "multiply_reduce_fusion"}
    # every operation lies within the run it was given (the runs on 'XLA Modules')
    spans = {event["run"]: (event["start"], event["start"] + event["duration"])
             for event in events if event["line"] == "XLA Modules"}
    assert all(spans[op["run"]][0] <= op["start"] <= spans[op["run"]][1]
               for run in runs for op in run)


def test_without_the_tpu_part_the_reader_finds_no_runs(reader):
    """The negative control: read as the CPU's trace is, the TPU's operations have no program."""
    namespace = dict(reader)
    exec(definitions("c18-read"), namespace)  # noqa: S102 (read_trace bound to this namespace)
    namespace["label_tpu_operations"] = lambda events: None
    events = namespace["read_trace"](str(FIXTURE))
    assert namespace["executions"](events, "jit__lambda") == []


def test_host_events_count_alike_on_a_tpu(reader):
    events = reader["read_trace"](str(FIXTURE))
    assert reader["count"](events, reader["COMPILATION"]) == 1
    assert reader["count"](events, "np.asarray(jax.Array)") == 3
    assert reader["count"](events, "JitCompiler::Compile") == 0  # XLA:CPU's, not on a TPU
