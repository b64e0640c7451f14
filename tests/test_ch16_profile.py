"""Chapter 16's profile reader (cell c16-cal-step) on a real TPU trace and on hand-written HLO.

On a CPU the calibration cells run a tiny model whose outputs are not compared, and the
reader's TPU branch (the device plane's line 'XLA Ops', events named by their HLO
instruction) and its kind "product with exp" never run there. This test runs the chapter's
own functions, taken from its code cell:

- operation_kinds on an HLO module written by hand, one instruction of each kind, with a
  product fusion that also exponentiates (a softmax fused into a product) and one that does not;
- operation_milliseconds on the trace chapter 18's test uses, recorded on a TPU v5e (JAX
  0.10.2; tests/fixtures/ch18_tpu_v5e_padded.xplane.pb, three runs of the four operations of
  `jit__lambda`), against the durations read directly from the same file, with a program
  that names those operations and, as the control, one that does not.
"""

import ast
import collections
import re
import warnings
from pathlib import Path

import pytest

from conftest import NOTEBOOK_DIR, load, source

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "ch18_tpu_v5e_padded.xplane.pb"
CHAPTER = load(NOTEBOOK_DIR / "16_sharding_transformer.ipynb")
CELL = next(source(cell) for cell in CHAPTER["cells"] if cell.get("id") == "c16-cal-step")
NAMES = ("HLO_INSTRUCTION", "HLO_COMPUTATION", "operation_kinds", "operation_times",
         "operation_milliseconds")

# One instruction of each kind; the fusions' computations hold what decides their kind.
HLO = """HloModule jit_train_step, entry_computation_layout={()->f32[]}

%fused_scores (p0: bf16[8,128], p1: bf16[128,8]) -> f32[8,8] {
  %p0 = bf16[8,128]{1,0} parameter(0)
  %p1 = bf16[128,8]{1,0} parameter(1)
  %convolution.1 = f32[8,8]{1,0} convolution(%p0, %p1), dim_labels=bf_io->bf
  ROOT %exponential.2 = f32[8,8]{1,0} exponential(%convolution.1)
}

%fused_dense (p0: bf16[8,128], p1: bf16[128,8]) -> f32[8,8] {
  %p0 = bf16[8,128]{1,0} parameter(0)
  %p1 = bf16[128,8]{1,0} parameter(1)
  ROOT %convolution.3 = f32[8,8]{1,0} convolution(%p0, %p1), dim_labels=bf_io->bf
}

ENTRY %main (a: bf16[8,128], b: bf16[128,8]) -> f32[8,8] {
  %a = bf16[8,128]{1,0} parameter(0)
  %b = bf16[128,8]{1,0} parameter(1)
  %fusion.1 = f32[8,8]{1,0} fusion(%a, %b), kind=kOutput, calls=%fused_scores
  %fusion.2 = f32[8,8]{1,0} fusion(%a, %b), kind=kOutput, calls=%fused_dense
  %custom-call.3 = f32[8,8]{1,0} custom-call(%a, %b), custom_call_target="tpu_custom_call"
  %while.4 = (f32[8,8]) while(%fusion.1), condition=%cond, body=%body
  ROOT %add.5 = f32[8,8]{1,0} add(%fusion.1, %fusion.2)
}
"""


@pytest.fixture(scope="module")
def reader():
    pytest.importorskip("jax")
    from jax.profiler import ProfileData

    tree = ast.parse(CELL)
    keep = [node for node in tree.body
            if (isinstance(node, ast.FunctionDef) and node.name in NAMES)
            or (isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) in NAMES)]
    assert len(keep) == len(NAMES), "the chapter's reader changed: update this test"
    namespace = {"re": re, "defaultdict": collections.defaultdict, "warnings": warnings,
                 "ProfileData": ProfileData}
    exec(ast.unparse(ast.Module(body=keep, type_ignores=[])), namespace)  # noqa: S102
    return namespace


def test_each_instruction_gets_its_kind(reader):
    kinds = reader["operation_kinds"](HLO)
    assert kinds["fusion.1"] == "product with exp"  # a convolution and an exponential
    assert kinds["fusion.2"] == "matrix product"
    assert kinds["custom-call.3"] == "kernel"
    assert kinds["while.4"] == "loop"
    assert kinds["add.5"] == "other"


def test_without_the_exponential_the_fusion_is_a_plain_product(reader):
    """The control: the same module with the softmax's exponential taken out of the fusion."""
    plain = HLO.replace("ROOT %exponential.2 = f32[8,8]{1,0} exponential(%convolution.1)",
                        "ROOT %negate.2 = f32[8,8]{1,0} negate(%convolution.1)")
    assert reader["operation_kinds"](plain)["fusion.1"] == "matrix product"


def tpu_operation_milliseconds() -> dict:
    """The fixture's 'XLA Ops' durations per instruction, read without the chapter's code."""
    from jax.profiler import ProfileData

    found = collections.Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for plane in ProfileData.from_file(str(FIXTURE)).planes:
            if plane.name.startswith("/device:TPU"):
                for line in plane.lines:
                    if line.name == "XLA Ops":
                        for event in line.events:
                            name = event.name.split(" = ", 1)[0].lstrip("%")
                            found[name] += event.duration_ns / 1e6
    return found


def test_tpu_operations_are_summed_by_kind(reader):
    direct = tpu_operation_milliseconds()
    assert set(direct) == {"copy-start", "copy-done", "tanh_reduce_fusion",
                           "multiply_reduce_fusion"}
    lines = [f"  %{name} = f32[] {'fusion' if 'fusion' in name else 'copy'}(%p)"
             for name in direct]
    program = "HloModule jit__lambda, entry\n\nENTRY %main {\n" + "\n".join(lines) + "\n}\n"
    found = reader["operation_milliseconds"](str(FIXTURE), program)
    assert set(found) == {"other"}  # reductions and copies: no product, no kernel
    assert found["other"] == pytest.approx(sum(direct.values()), rel=1e-9)


def test_operations_of_another_program_are_not_its_own(reader):
    """The control: a program that names none of the trace's operations gets none of them."""
    program = "HloModule jit__lambda, entry\n\nENTRY %main {\n  %add.1 = f32[] add(%p, %p)\n}\n"
    found = reader["operation_milliseconds"](str(FIXTURE), program)
    assert set(found) == {"not in the program"}
