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
import gzip
import json
import os
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest

from conftest import NOTEBOOK_DIR, load, source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ch18_tpu_v5e_padded.xplane.pb"
# The chip-sized step of c18-chip-time (width 2048, 6 blocks, remat keeping nothing), its three
# traced steps and its compiled HLO, from a TPU v5e run of 2026-12-07 (JAX 0.10.2).
CHIP_STEP = Path(__file__).resolve().parent / "fixtures" / "ch18_tpu_v5e_chip_step"
CHAPTER_PATH = NOTEBOOK_DIR / "18_reading_a_profile.ipynb"
# dev/mutants.py names a copy of a chapter with a planted fault ("tests" in tests/mutants/).
MUTANT = Path(os.environ.get("JAXBOOK_MUTANT_NOTEBOOK", ""))
CHAPTER = load(MUTANT if MUTANT.name == CHAPTER_PATH.name else CHAPTER_PATH)
CELLS = {cell.get("id"): source(cell) for cell in CHAPTER["cells"] if cell["cell_type"] == "code"}


def literal(node: ast.expr) -> bool:
    """Whether an expression is a constant or a literal of constants (a set of names, ...)."""
    try:
        ast.literal_eval(node)
    except ValueError:
        return False
    return True


def definitions(cell_id: str) -> str:
    """A code cell's functions and its assignments of constants, without running the rest."""
    tree = ast.parse("\n".join("" if line.startswith("# NBVAL") else line
                               for line in CELLS[cell_id].splitlines()))
    keep = [node for node in tree.body if isinstance(node, ast.FunctionDef) or (
        isinstance(node, ast.Assign) and (literal(node.value) or (
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


@pytest.fixture(scope="module")
def chip_step(tmp_path_factory):
    """The chip-sized step's trace, in a folder of its own (XProf writes a cache beside it),
    and its HLO text."""
    folder = tmp_path_factory.mktemp("chip_step")
    xplane = folder / "chip_step.xplane.pb"
    xplane.write_bytes(gzip.decompress(CHIP_STEP.with_suffix(".xplane.pb.gz").read_bytes()))
    hlo_text = gzip.decompress(CHIP_STEP.with_suffix(".hlo.txt.gz").read_bytes()).decode()
    return str(xplane), hlo_text


def test_the_chip_step_profile_on_a_tpu_trace(reader, chip_step):
    """c18-chip-profile's step_profile on the chip's own trace: the figures of the record."""
    namespace = dict(reader)
    for cell_id in ("c18-hlo", "c18-chip-profile"):
        exec(definitions(cell_id), namespace)  # noqa: S102 (the chapter's own code)
    found = namespace["step_profile"](*chip_step)
    assert found["steps"] == 3 and set(found["operations_per_run"]) == {950}
    assert found["busy"] == pytest.approx(0.9937, abs=1e-4)
    assert sum(found["by_kind"].values()) == pytest.approx(363.63, abs=0.01)
    assert "not in the program" not in found["by_kind"]


def test_xprof_views_agree_with_the_reader_on_a_tpu_trace(reader, chip_step):
    """c18-xprof's views of the chip's trace, checked by the chapter's own c18-xprof-check
    cell, which on a CPU has nothing of a TPU's to check: the op profile's time against the
    reader's, its idle share, the trace viewer's device operations, the memory profile."""
    pytest.importorskip("xprof")
    from xprof.convert import raw_to_tool_data

    namespace = dict(reader, raw_to_tool_data=raw_to_tool_data, json=json)
    for cell_id in ("c18-hlo", "c18-chip-profile", "c18-xprof"):
        exec(definitions(cell_id), namespace)  # noqa: S102 (the chapter's own code)
    (chip_flops,) = [node for node in ast.parse(CELLS["c18-chip-model"]).body
                     if isinstance(node, ast.FunctionDef) and node.name == "chip_flops"]
    exec(ast.unparse(chip_flops), namespace)  # noqa: S102
    xplane, hlo_text = chip_step
    # c18-chip-model's sizes on a TPU; 65 characters in Tiny Shakespeare
    namespace.update(VOCAB_SIZE=65, CHIP_CONTEXT=1024, CHIP_BATCH=16)
    # the compiler's peak as c18-chip-time printed it, to the MiB; the runtime's peak after it
    chip_traces = {(2048, 6): (xplane, hlo_text, 8125 * 2**20)}
    views = namespace["xprof_views"](xplane, "jit_chip_step")
    assert views["device"] == "TPU" and views["compilations"] == 0
    assert views["program_ms"] / 3 == pytest.approx(363.645, abs=0.01)
    assert views["categories"][0][0] == "convolution fusion"
    namespace.update(chip_traces=chip_traces, xprof_found={(2048, 6): views},
                     chip_profiles={(2048, 6): namespace["step_profile"](xplane, hlo_text)},
                     memory_stats={"peak_bytes_in_use": 3784261120})
    exec(CELLS["c18-xprof-check"], namespace)  # noqa: S102 (its asserts are the test)
