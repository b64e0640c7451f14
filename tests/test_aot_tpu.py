"""Chapter 16's cost model against the TPU compiler, for real slices, without a TPU (issue 42).

`make aot-record` compiles chapter 16's training step for each strategy the chapter's cost
model prices (data parallel, FSDP, tensor + sequence parallel, 2-D, FSDP x TP) ahead of time for TPU
slices, with libtpu's compiler on this CPU machine (dev/aot_tpu.py, in its own .venv-aot), and
writes what the compiler did, with the cost model's predictions for the same step, mesh and
slice, to the committed record tests/aot_tpu.json. This file reads it; it never imports
libtpu. `make test-aot` (CI) compiles a sample again and requires it to equal the record.
A record made from other code (chapter 16's cells that the tool executes, dev/aot_tpu.py, or
the pinned jax or libtpu differ) fails test_the_record_is_current, and the checks on it skip
(fail, with the file named in $JAXBOOK_AOT_JSON, as `make test-aot` does). The checks of the
rules themselves, on doctored records, always run.

Per slice and strategy:
- the model's fits / does-not-fit verdict is the compiler's (RESOURCE_EXHAUSTED is "does not
  fit"), and one configuration the model says does not fit fails to compile (data parallel on
  the v5e-8: the negative control);
- predicted peak memory within 15% of the compiler's peak, predicted bytes sent per device
  within 10% of the TPU HLO's collectives (issue 42's targets). Targets not met today are in
  MISSES with the measured ratio and the reason: each is an xfail (strict: one that starts
  meeting its target fails, so the table only shrinks), and its ratio must stay within BAND
  of the recorded one, so that a change in the compiler or in the model is seen;
- issue 42's questions, answered from the HLO: how annotated FSDP reduce-scatters its
  gradients (per slice), how many all-reduces per block tensor parallelism does (against the
  model's count), and the element type of the gradients' collectives.
"""

import hashlib
import json
import os
import re
import sys
from pathlib import Path

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "dev"))
import tpu_record  # noqa: E402  (standard library only: the chapter's code hash)

RECORD = ROOT / "tests" / "aot_tpu.json"  # committed: `make aot-record` writes it
AOT_JSON = Path(os.environ.get("JAXBOOK_AOT_JSON", RECORD))
# Named explicitly (as `make test-aot` does): an absent or stale file fails every check instead
# of skipping it. The committed record must always be current: test_the_record_is_current.
REQUIRED = "JAXBOOK_AOT_JSON" in os.environ
NOTEBOOK = ROOT / "notebooks" / "16_sharding_transformer.ipynb"
TOOL = ROOT / "dev" / "aot_tpu.py"
TOPOLOGIES = ("v5e:2x4", "v6e:2x4", "v4:2x2x1")
STRATEGIES = ("data parallel", "FSDP (annotated)", "tensor + sequence", "2-D (data x model)",
              "FSDP x tensor")
MEMORY_TOLERANCE = 0.15  # issue 42: predicted memory within 15% of the compiler's peak
BYTES_TOLERANCE = 0.10  # issue 42: predicted collective bytes within 10% of the TPU HLO's
BAND = 0.03  # a recorded miss's ratio may move this much (relative) before the test fails

# The targets missed today: (slice, strategy, "memory" or "bytes") -> (compiler / model, why).
# Measured with jax 0.12.0.1 and libtpu 0.0.50.1 on 2026-12-06, the Auto-axes strategies again on
# 2026-12-07 (dev/aot_findings.md has the
# analysis of each).
FSDP_GATHERS = ("the compiler gathers each weight about 3 times (forward, recomputation, the "
                "backward's input gradient) in windowed all-gather loops that never hold a "
                "whole weight, and its bidirectional loops send 8/8 of the array, not 7/8; the "
                "model prices 2 gathers and a ring reduce-scatter")
FSDP_PEAK = ("the compiler's peak is below the sum of the model's terms (state at 16 bytes a "
             "parameter, one block's f32 scores and bf16 probabilities, a whole gathered "
             "layer); not yet analysed term by term. On the v5e, whose 16.9 GB the compiler "
             "squeezes into, the same program is within the target (0.88)")
MISSES = {
    ("v5e:2x4", "FSDP (annotated)", "bytes"): (1.52, FSDP_GATHERS),
    ("v6e:2x4", "FSDP (annotated)", "bytes"): (1.98, FSDP_GATHERS),
    ("v4:2x2x1", "FSDP (annotated)", "bytes"): (1.31, (
        "on 4 chips the compiler all-reduces the whole gradient (as data parallelism does) "
        "instead of reduce-scattering it, on top of the weight gathers; the model prices a "
        "reduce-scatter")),
    ("v5e:2x4", "tensor + sequence", "bytes"): (1.27, (
        "the v5e compiler does 4 activation all-reduces per block, about 11 all-gathers of the "
        "sequence (93 GB of the 172 GB sent) and a windowed reduce-scatter; the model prices "
        "what the v6e and v4 compilers do, 5 all-reduces and 6 gathers per block")),
    ("v5e:2x4", "FSDP x tensor", "bytes"): (1.21, (
        "the v5e compiler's all-gathers send 3.2 GB per step where the v6e's send 0.9 GB for "
        "the same program (779 gathers against 329); its all-reduces and collective-permutes "
        "are the v6e's, and the v6e's and v4's bytes meet the target (1.05); not analysed "
        "further")),
    ("v6e:2x4", "FSDP (annotated)", "memory"): (0.79, FSDP_PEAK),
    ("v4:2x2x1", "FSDP (annotated)", "memory"): (0.84, FSDP_PEAK),
}

STALE = "{} was made from other code ({}): run `make aot-record` again"
ABSENT = (f"no {AOT_JSON.relative_to(ROOT) if AOT_JSON.is_relative_to(ROOT) else AOT_JSON}: "
          "`make test-aot` compiles chapter 16's strategies for TPU slices and writes it "
          "(it needs .venv-aot with libtpu, which dev/aot_venv.sh builds)")


def requirement(name):
    text = (ROOT / "requirements.txt").read_text()
    return re.search(rf"^{name}==(\S+)", text, re.M).group(1)


def libtpu_pin():
    text = (ROOT / "dev" / "aot_venv.sh").read_text()
    return re.search(r"^LIBTPU=libtpu==(\S+)", text, re.M).group(1)


def stale_because(data):
    """Why this JSON does not describe the code here (None when it does)."""
    reasons = []
    cells = data.get("cells") or []
    if not cells or data.get("cells_hash") != tpu_record.cells_hash(NOTEBOOK, cells):
        reasons.append("chapter 16's code cells that dev/aot_tpu.py executes changed")
    if data.get("tool_hash") != hashlib.sha256(TOOL.read_bytes()).hexdigest():
        reasons.append("dev/aot_tpu.py changed")
    if data.get("jax") != requirement("jax"):
        reasons.append(f"jax {data.get('jax')}, requirements.txt pins {requirement('jax')}")
    if data.get("libtpu") != libtpu_pin():
        reasons.append(f"libtpu {data.get('libtpu')}, dev/aot_venv.sh pins {libtpu_pin()}")
    if not data.get("bf16", False) or not data.get("donated", False) or data.get("batch"):
        reasons.append("not the cost model's step (bf16 compute, donated state, BIG's batch)")
    return "; ".join(reasons) or None


def test_the_record_is_current():
    # The committed record is what `make aot-record` compiles from the code here: chapter 16's
    # cells that the tool executes, the tool and the pins. Stale, it fails here (and every
    # check below skips), as a chapter whose code changed without re-executing fails nbval.
    assert AOT_JSON.exists(), ABSENT
    reason = stale_because(json.loads(AOT_JSON.read_text()))
    assert reason is None, STALE.format(AOT_JSON.name, reason)


def load():
    give_up = pytest.fail if REQUIRED else pytest.skip
    if not AOT_JSON.exists():
        give_up(ABSENT)
    data = json.loads(AOT_JSON.read_text())
    reason = stale_because(data)
    if reason:
        give_up(STALE.format(AOT_JSON.name, reason))
    return data


def record_for(data, topology, strategy):
    if topology not in data["topologies"] or strategy not in data["strategies"]:
        pytest.skip(f"{topology} {strategy} was not compiled (the run asked for "
                    f"{data['topologies']}, {data['strategies']})")
    found = [r for r in data["records"] if (r["topology"], r["strategy"]) == (topology, strategy)]
    assert len(found) == 1, f"{len(found)} records for {topology} {strategy}"
    return found[0]


# --- the rules: each a function of a record, shown failing on doctored records below ------


def compiled(record):
    """True: compiled; False: out of memory. Any other compile failure is a problem."""
    if "error" in record and not record.get("oom"):
        raise AssertionError(f"{record['topology']} {record['strategy']}: the compile failed "
                             f"for another reason than memory: {record['message'][:300]}")
    return not record.get("oom")


def verdict_problems(record):
    """The compiler's verdict (compiled and its peak within the chip's HBM) against the
    model's."""
    compiler = compiled(record) and record["fits"]
    model = record["predicted"]["fits"]
    if compiler != model:
        return [f"{record['topology']} {record['strategy']}: the compiler says "
                f"{'fits' if compiler else 'does not fit'}"
                f"{'' if compiled(record) else ' (RESOURCE_EXHAUSTED)'}, the model says "
                f"{'fits' if model else 'does not fit'} "
                f"({record['predicted']['memory'] / 1e9:.2f} GB)"]
    return []


def ratio(record, quantity):
    """Compiler over model: peak memory, or bytes sent per device per step."""
    if quantity == "memory":
        return record["memory"]["peak"] / record["predicted"]["memory"]
    return record["sent_bytes"] / sum(record["predicted"]["sent"].values())


def target_problems(record, quantity):
    tolerance = MEMORY_TOLERANCE if quantity == "memory" else BYTES_TOLERANCE
    value = ratio(record, quantity)
    if abs(value - 1) > tolerance:
        return [f"{record['topology']} {record['strategy']}: {quantity} compiler/model "
                f"{value:.3f}, outside 1 +- {tolerance}"]
    return []


def band_problems(record, quantity, misses=MISSES):
    recorded, why = misses[(record["topology"], record["strategy"], quantity)]
    value = ratio(record, quantity)
    if abs(value / recorded - 1) > BAND:
        return [f"{record['topology']} {record['strategy']}: {quantity} compiler/model is now "
                f"{value:.3f}, recorded {recorded} ({why}): the compiler or the model changed; "
                "find out which, then update MISSES"]
    return []


def gradient_bytes(record, data):
    """The gradients' bytes per device: every parameter, in bf16 (the step's computation)."""
    model = data["model"]
    matrices = 12 * model["layers"] * model["width"] ** 2
    embeddings = 2 * model["vocab"] * model["width"]
    return 2 * (matrices + embeddings)


def sent(record, key):
    return record["summary"].get(key, {}).get("sent_bytes", 0.0)


def fsdp_gradient_form(record, data):
    """How the gradients are reduced: 'windowed reduce-scatter' (a loop of collective-permutes
    inside the weight-gradient matmuls), 'reduce-scatter' (the instruction), or 'whole
    all-reduce' (every device gets the whole gradient, as data parallelism does). The one whose
    bytes sent carry at least half a ring reduce-scatter of the gradients."""
    size = record["mesh"]["data"]
    scatter = (size - 1) / size * gradient_bytes(record, data)  # a ring reduce-scatter's
    forms = {"windowed reduce-scatter": sent(record, "collective-permute (reduce-scatter loop)"),
             "reduce-scatter": sent(record, "reduce-scatter"),
             "whole all-reduce": sent(record, "all-reduce") / 2}
    carrying = [form for form, value in forms.items() if value >= scatter / 2]
    return ", ".join(carrying) or "none"


def tp_all_reduces_per_block(record, data):
    """All-reduces over the model axis of one block's activations (this device's tokens x
    width, bf16) inside the scan over the blocks, per block."""
    model, mesh = data["model"], record["mesh"]
    activation = 2 * model["batch"] * model["context"] // mesh["data"] * model["width"]
    count = sum(c["times"] for c in record["collectives"]
                if c["op"] == "all-reduce" and c["group"] == mesh["model"]
                and c["operand_bytes"] == activation and c["in_loop"])
    return count / model["layers"]


def model_all_reduces_per_block(record, data):
    """The cost model's count, from its predicted volume over the model axis."""
    model, mesh = data["model"], record["mesh"]
    activation = 2 * model["batch"] * model["context"] // mesh["data"] * model["width"]
    volume = record["predicted"]["volumes"]["all-reduce"]
    if mesh["data"] > 1 and record["strategy"] != "FSDP x tensor":  # minus the data axis's
        # all-reduce of the gradients (bf16), as strategy_volumes prices it: the blocks'
        # matrices split over model, the embeddings not (FSDP x TP reduce-scatters them)
        matrices = 12 * model["layers"] * model["width"] ** 2
        volume -= 2 * (matrices / mesh["model"] + 2 * model["vocab"] * model["width"])
    return volume / (activation * model["layers"])


def gradient_dtypes(record):
    """Element types of the collectives that carry the gradients: the backward pass's
    all-reduces and reduce-scatters, and the windowed reduce-scatter loops' permutes (those
    moving at least 1 MB a step: the loss's and the clipping norm's scalars are not
    gradients)."""
    return sorted({d for c in record["collectives"]
                   if ((c["op"] in ("all-reduce", "reduce-scatter") and c["phase"] == "backward")
                       or c["window"] == "reduce-scatter")
                   and c["times"] * c["operand_bytes"] >= 1e6 for d in c["dtypes"]})


# --- what the compiler does, per slice (asserted; the reasons in dev/aot_findings.md) -------

# FSDP's gradients: on the 8-chip 2x4 slices the SPMD partitioner turns each weight-gradient
# matmul into a windowed einsum whose collective-permutes reduce-scatter the product piece by
# piece; on the 4-chip v4 it all-reduces the whole gradient, as data parallelism does.
FSDP_FORM = {"v5e:2x4": "windowed reduce-scatter", "v6e:2x4": "windowed reduce-scatter",
             "v4:2x2x1": "whole all-reduce"}
# Activation all-reduces per block over the model axis: 2 forward, 1 recomputed, 2 backward,
# except the v5e's sequence-parallel program, which has one fewer.
TP_ALL_REDUCES = {(t, s): 4 if (t, s) == ("v5e:2x4", "tensor + sequence") else 5
                  for t in TOPOLOGIES
                  for s in ("tensor + sequence", "2-D (data x model)", "FSDP x tensor")}
# Chapter 16's count: ROW_SPLIT + (ROW_SPLIT - 1) + COLUMN_INPUTS, from these compiles. Until
# 2026-12-07 it priced 8 (ROW_SPLIT * 2 + COLUMN_SPLIT), the CPU compiler's count with the
# recomputation's all-reduces added, and the 2-D mesh's bytes came out at 0.64-0.66.
MODEL_TP_ALL_REDUCES = 5


# --- the checks on the compiler's records -------------------------------------------------

CASES = [(t, s) for t in TOPOLOGIES for s in STRATEGIES]


def case_id(case):
    return f"{case[0]}-{case[1]}".replace(" ", "_")


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_verdict_is_the_compilers(case):
    record = record_for(load(), *case)
    assert not verdict_problems(record), verdict_problems(record)


def test_a_configuration_predicted_not_to_fit_fails_to_compile():
    """The negative control: data parallelism on a v5e-8 (23 GB predicted, 16.9 GB of HBM)."""
    record = record_for(load(), "v5e:2x4", "data parallel")
    assert not record["predicted"]["fits"]
    assert record.get("oom") and "RESOURCE_EXHAUSTED" in record["message"], record.get("message")


def target_cases(quantity):
    cases = []
    for case in CASES:
        miss = MISSES.get((*case, quantity))
        marks = [pytest.mark.xfail(strict=True, reason=f"{miss[0]}: {miss[1]}")] if miss else []
        cases.append(pytest.param(case, marks=marks, id=case_id(case)))
    return cases


def target_test(case, quantity):
    record = record_for(load(), *case)
    if not compiled(record):
        pytest.skip("out of memory, as the model predicts (test_verdict_is_the_compilers)")
    assert not target_problems(record, quantity), target_problems(record, quantity)


@pytest.mark.parametrize("case", target_cases("memory"))
def test_memory_within_15_percent(case):
    target_test(case, "memory")


@pytest.mark.parametrize("case", target_cases("bytes"))
def test_collective_bytes_within_10_percent(case):
    target_test(case, "bytes")


@pytest.mark.parametrize("miss", sorted(MISSES), ids=lambda m: "-".join(m).replace(" ", "_"))
def test_recorded_miss_keeps_its_ratio(miss):
    record = record_for(load(), *miss[:2])
    assert not band_problems(record, miss[2]), band_problems(record, miss[2])


@pytest.mark.parametrize("topology", TOPOLOGIES)
def test_how_fsdp_reduces_its_gradients(topology):
    data = load()
    record = record_for(data, topology, "FSDP (annotated)")
    assert fsdp_gradient_form(record, data) == FSDP_FORM[topology]


@pytest.mark.parametrize("case", sorted(TP_ALL_REDUCES), ids=case_id)
def test_tensor_parallel_all_reduces_per_block(case):
    data = load()
    record = record_for(data, *case)
    assert model_all_reduces_per_block(record, data) == pytest.approx(MODEL_TP_ALL_REDUCES)
    assert tp_all_reduces_per_block(record, data) == TP_ALL_REDUCES[case]


@pytest.mark.parametrize("case", [(t, s) for t in TOPOLOGIES
                                  for s in ("data parallel", "FSDP (annotated)")], ids=case_id)
def test_gradient_collectives_are_bf16(case):
    """A bf16 step on f32 master weights: the collectives sit on the bf16 weight-gradient
    products, before the convert back to f32, so gradients move 2 bytes a value."""
    record = record_for(load(), *case)
    if not compiled(record):
        pytest.skip("out of memory, as the model predicts: no program to read")
    assert gradient_dtypes(record) == ["bf16"]


def test_every_requested_compile_has_a_record():
    data = load()
    assert {(r["topology"], r["strategy"]) for r in data["records"]} == {
        (t, s) for t in data["topologies"] for s in data["strategies"]}
    assert set(data["topologies"]) & set(TOPOLOGIES), data["topologies"]  # one to check


# --- the rules, shown failing on doctored records (no JSON needed) ------------------------

DATA = {"model": {"layers": 18, "width": 2048, "heads": 16, "vocab": 32_000, "context": 2048,
                  "batch": 64}}
GRADIENTS = gradient_bytes(None, DATA)


# --- the cheapest remat policy that fits (issue 42): the cost model chooses, the compiler
# confirms. make test-aot asks for it on the v5e-8, the slice whose HBM binds (--remat-choice).
REMAT_TOPOLOGY = "v5e:2x4"


def remat_choice_problems(choice):
    """The compiler's verdict on section 5's named policy against the model's: where the model
    chose it as the cheapest policy that fits, it compiles and fits; where the model rejected
    it for memory and chose full remat (the control), it does not fit."""
    named = choice["named"]
    where = f"{choice['topology']} {choice['strategy']}"
    if named.get("error") and not named.get("oom"):
        return [f"{where}: the named policy's compile failed for another reason than memory "
                f"({named['error']})"]
    compiler = not named.get("oom") and bool(named.get("fits"))
    model = choice["predicted"]["named"]["fits"]
    if compiler != model:
        return [f"{where}: the model says the named policy {'fits' if model else 'does not fit'}"
                f" ({choice['predicted']['named']['memory'] / 1e9:.2f} GB, so it chose "
                f"{choice['choice']}), the compiler says {'fits' if compiler else 'does not fit'}"]
    return []


def test_the_cheapest_remat_policy_that_fits_is_confirmed_by_the_compiler():
    data = load()
    if REMAT_TOPOLOGY not in data.get("remat_choice_topologies", []):
        (pytest.fail if REQUIRED else pytest.skip)(
            f"{AOT_JSON.name} has no remat choice for {REMAT_TOPOLOGY} (make test-aot asks for "
            "one with --remat-choice)")
    choices = [c for c in data["remat_choice"] if c["topology"] == REMAT_TOPOLOGY]
    problems = [problem for choice in choices for problem in remat_choice_problems(choice)]
    assert not problems, problems
    # Both outcomes present, so that the check could fail either way on this slice.
    assert {choice["role"] for choice in choices} == {"choice", "control"}, choices


def fake(strategy="FSDP (annotated)", topology="v5e:2x4", mesh=(8, 1), peak=8e9, predicted=8e9,
         fits=True, sent=5e9, predicted_sent=5e9, summary=None, collectives=()):
    return {"topology": topology, "strategy": strategy,
            "mesh": {"data": mesh[0], "model": mesh[1]}, "oom": False, "fits": fits,
            "memory": {"peak": peak}, "sent_bytes": sent, "summary": summary or {},
            "collectives": list(collectives),
            "predicted": {"memory": predicted, "fits": fits, "sent": {"all-gather": predicted_sent},
                          "volumes": {}}}


def test_rule_verdicts_disagreeing_are_caught():
    assert not verdict_problems(fake())
    assert verdict_problems(fake(fits=False) | {"predicted": fake()["predicted"]})
    out_of_memory = fake() | {"oom": True, "error": "XlaRuntimeError",
                              "message": "RESOURCE_EXHAUSTED"}
    assert verdict_problems(out_of_memory)  # the model says it fits
    out_of_memory["predicted"] = fake(fits=False)["predicted"]
    assert not verdict_problems(out_of_memory)
    with pytest.raises(AssertionError, match="another reason"):
        compiled(fake() | {"error": "ValueError", "message": "bad sharding"})


def test_rule_targets_catch_a_miss_and_pass_a_hit():
    assert not target_problems(fake(peak=1.14e9, predicted=1e9), "memory")
    assert target_problems(fake(peak=1.16e9, predicted=1e9), "memory")
    assert target_problems(fake(peak=0.84e9, predicted=1e9), "memory")
    assert not target_problems(fake(sent=1.09e9, predicted_sent=1e9), "bytes")
    assert target_problems(fake(sent=1.11e9, predicted_sent=1e9), "bytes")


def test_rule_a_miss_that_moves_is_caught():
    misses = {("v5e:2x4", "FSDP (annotated)", "bytes"): (1.48, "reason")}
    assert not band_problems(fake(sent=1.48e9, predicted_sent=1e9), "bytes", misses)
    assert not band_problems(fake(sent=1.50e9, predicted_sent=1e9), "bytes", misses)
    assert band_problems(fake(sent=1.55e9, predicted_sent=1e9), "bytes", misses)
    assert band_problems(fake(sent=1.0e9, predicted_sent=1e9), "bytes", misses)


def test_rule_misses_table_is_well_formed():
    for (topology, strategy, quantity), (value, why) in MISSES.items():
        assert topology in TOPOLOGIES and strategy in STRATEGIES, (topology, strategy)
        assert quantity in ("memory", "bytes") and len(why) > 20
        tolerance = MEMORY_TOLERANCE if quantity == "memory" else BYTES_TOLERANCE
        assert abs(value - 1) > tolerance, f"{value} meets its target: not a miss"


def test_rule_fsdp_forms_are_told_apart():
    scatter = 7 / 8 * GRADIENTS
    windowed = fake(summary={"collective-permute (reduce-scatter loop)": {"sent_bytes": scatter},
                             "all-reduce": {"sent_bytes": 1e7}})
    assert fsdp_gradient_form(windowed, DATA) == "windowed reduce-scatter"
    whole = fake(summary={"all-reduce": {"sent_bytes": 2 * scatter}})
    assert fsdp_gradient_form(whole, DATA) == "whole all-reduce"
    assert fsdp_gradient_form(fake(summary={"reduce-scatter": {"sent_bytes": scatter}}),
                              DATA) == "reduce-scatter"
    assert fsdp_gradient_form(fake(summary={"all-reduce": {"sent_bytes": 1e7}}), DATA) == "none"


def activation_all_reduce(times, operand_bytes, group=8, dtype="bf16"):
    return {"op": "all-reduce", "window": None, "group": group, "times": times,
            "phase": "backward",
            "operand_bytes": operand_bytes, "in_loop": "while_body" if times > 1 else None,
            "dtypes": [dtype]}


def test_rule_tp_count_reads_only_the_blocks_activation_all_reduces():
    activation = 2 * 64 * 2048 * 2048  # one device's tokens x width, bf16, on a (1, 8) mesh
    record = fake("tensor + sequence", mesh=(1, 8), collectives=[
        activation_all_reduce(18, activation) for _ in range(5)] + [
        activation_all_reduce(1, 131_072), activation_all_reduce(18, activation, group=4)])
    assert tp_all_reduces_per_block(record, DATA) == 5
    record["collectives"].append(activation_all_reduce(18, activation))
    assert tp_all_reduces_per_block(record, DATA) == 6
    record["predicted"]["volumes"] = {"all-reduce": 8 * 18 * activation}
    assert model_all_reduces_per_block(record, DATA) == 8


def test_rule_f32_gradients_are_seen():
    record = fake("data parallel", collectives=[activation_all_reduce(1, 2e9)])
    assert gradient_dtypes(record) == ["bf16"]
    record["collectives"].append(activation_all_reduce(1, 1e3, dtype="s32"))  # too small
    record["collectives"].append(activation_all_reduce(1, 4e9, dtype="f32") | {"phase": "update"})
    assert gradient_dtypes(record) == ["bf16"]
    record["collectives"].append(activation_all_reduce(1, 4e9, dtype="f32"))
    assert gradient_dtypes(record) == ["bf16", "f32"]
    window = {"op": "collective-permute", "window": "reduce-scatter", "phase": "backward",
              "times": 18, "operand_bytes": 1e8, "dtypes": ["f32"]}
    assert gradient_dtypes(fake(collectives=[window])) == ["f32"]


def test_rule_stale_json_is_told(tmp_path):
    cells = ["c16-imports", "c16-cost-model"]
    fresh = {"cells": cells, "cells_hash": tpu_record.cells_hash(NOTEBOOK, cells),
             "tool_hash": hashlib.sha256(TOOL.read_bytes()).hexdigest(),
             "jax": requirement("jax"), "libtpu": libtpu_pin(), "bf16": True, "donated": True,
             "batch": None}
    assert stale_because(fresh) is None
    assert "chapter 16" in stale_because(fresh | {"cells_hash": "0" * 64})
    assert "chapter 16" in stale_because(fresh | {"cells": cells[:1]})
    assert "chapter 16" in stale_because({k: v for k, v in fresh.items() if k != "cells"})
    assert "aot_tpu.py" in stale_because(fresh | {"tool_hash": "0" * 64})
    assert "jax" in stale_because(fresh | {"jax": "0.7.2"})
    assert "libtpu" in stale_because(fresh | {"libtpu": "0.0.42.1"})
    assert "step" in stale_because(fresh | {"bf16": False})


def test_rule_remat_choice_disagreements_are_caught():
    chose_named = {"topology": "v5e:2x4", "strategy": "FSDP (annotated)", "choice": "named",
                   "role": "choice", "predicted": {"named": {"memory": 15e9, "fits": True},
                                                   "full": {"memory": 9e9, "fits": True}},
                   "named": {"oom": False, "fits": True, "peak": 14e9}}
    assert remat_choice_problems(chose_named) == []
    assert remat_choice_problems(chose_named | {"named": {"oom": True, "fits": None}})
    assert remat_choice_problems(chose_named | {"named": {"oom": False, "fits": False}})
    control = chose_named | {"choice": "full", "role": "control",
                             "predicted": {"named": {"memory": 22e9, "fits": False},
                                           "full": {"memory": 16e9, "fits": True}},
                             "named": {"oom": True, "fits": None}}
    assert remat_choice_problems(control) == []
    assert remat_choice_problems(control | {"named": {"oom": False, "fits": True, "peak": 15e9}})
    assert remat_choice_problems(chose_named | {"named": {"oom": False, "error": "ValueError"}})
