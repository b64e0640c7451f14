"""Chapter 16's strategies compiled ahead of time for real TPU slices, from a CPU machine.

libtpu's compiler runs without a TPU: `jax.experimental.topologies.get_topology_desc` describes
a slice (e.g. "v5e:2x4"), and `jax.jit(...).lower(shapes with shardings).compile()` compiles
for its devices. This tool takes chapter 16's own code (it execs the definitions of the
chapter's code cells: the model, the logical-axis rules, the optimizer and training step, the
scan with rematerialisation, and the cost model), builds each sharding strategy's training
step at the cost model's "1B" configuration (BIG), compiles it for each topology one at a
time, and reports per strategy:

- the TPU HLO's collectives (all-reduce, all-gather, reduce-scatter, all-to-all,
  collective-permute), synchronous or asynchronous (`-start`/`-done` pairs, `async-start`
  wrappers and TPU's async collective fusions are each counted once), with their operand and
  result bytes per device and their element types;
- `compiled.memory_analysis()` (arguments, outputs, aliased, temporaries, generated code) and
  the peak it implies, against the chip's HBM (v5e: memory_stats()['bytes_limit']);
- whether the compile itself failed for lack of memory (RESOURCE_EXHAUSTED);
- the cost model's predicted collective bytes and memory for the same strategy and slice.

The step follows the cost model's assumptions, not the small CPU run's: float32 parameters and
Adam state, computation in bfloat16 (the parameters cast at the top of the loss, `--f32` keeps
float32 as the chapter's small run does), every block rematerialised in full inside a
`lax.scan` over the stacked blocks (section 5's `scanned` and `deep_loss`), and the parameters
and optimizer state donated (`--no-donate` compiles the step as `make_train_step` jits it).

It needs libtpu, which must not enter the book's .venv (the CPU chapters' outputs must not
change): dev/aot_venv.sh builds .venv-aot. `make aot-record` runs this tool for v5e:2x4,
v6e:2x4 and v4:2x2x1 on the strategies the cost model prices and writes the committed record,
tests/aot_tpu.json, which tests/test_aot_tpu.py checks (in `make test`). `make test-aot` (CI)
compiles a sample of it again (`--compare`: every sampled record must equal the committed
one, timings aside) and runs those checks; a record made from other code fails them.
By hand:

    python3.12 -m venv /tmp/venv-aot
    /tmp/venv-aot/bin/pip install 'jax[tpu]==0.12.0.1' flax==0.12.12 optax==0.2.8 numpy
    JAX_PLATFORMS=cpu /tmp/venv-aot/bin/python dev/aot_tpu.py            # v5e:2x4, every strategy
    JAX_PLATFORMS=cpu /tmp/venv-aot/bin/python dev/aot_tpu.py --topology v6e:2x4 v4:2x2x1 \
        --json /tmp/aot.json --hlo-dir /tmp/aot_hlo

Options: --topology (several), --strategy (several; default all), --f32, --no-donate,
--batch (global sequences, default BIG's), --json FILE, --hlo-dir DIR (the compiled HLO of each),
--remat-choice TOPOLOGY... (on these slices, the cost model's cheapest remat policy that fits each
strategy, and the compiler's verdict on section 5's named policy: dev/aot_findings.md),
--compare RECORD (the new records against a committed one).
"""

import argparse
import ast
import hashlib
import json
import math
import os
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("JAX_PLATFORMS", "cpu")  # the host needs no TPU: libtpu only compiles

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax.experimental import topologies  # noqa: E402
from jax.sharding import AxisType, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "16_sharding_transformer.ipynb"

# The chapter's cells whose definitions the tool takes, in order. From each it keeps imports,
# functions, classes and assignments to UPPER_CASE names (and the few lowercase ones below);
# statements that train, print or read the data are left out.
CELLS = ["c16-imports", "c16-cost-model", "c16-model", "c16-split", "c16-step", "c16-measure",
         "c16-scan-stack", "c16-scan-compile", "c16-flops", "c16-roofline"]
LOWERCASE_KEPT = {"schedule", "optimizer", "plain_sgd", "block_kernels"}

# HBM per chip for the fits/does-not-fit verdict: the v5e's memory_stats()['bytes_limit']
# (measured), and the chapter's figures for the others (v4: 32 GiB, v6e: 32 GB).
HBM_LIMIT = {"TPU v5 lite": 16_909_336_064, "TPU v6 lite": 32e9, "TPU v4": 32 * 2**30}
# The cost model's slice for each topology (its chip figures and number of chips).
COST_MODEL_CHIP = {"v5e:2x4": "v5e-8", "v6e:2x4": "v6e-8", "v4:2x2x1": "v4-8"}
TOPOLOGY_OPTIONS = {"v4": {"chip_config_name": "megacore"}}  # one device per v4 chip


def chapter_namespace():
    """The chapter's definitions, executed from its code cells (no training, no data)."""
    cells = {cell.get("id"): "".join(cell["source"])
             for cell in json.loads(NOTEBOOK.read_text())["cells"] if cell["cell_type"] == "code"}
    namespace = {"__name__": "chapter16", "jax": jax, "os": os, "time": time}  # c16-devices
    for cell_id in CELLS:
        tree = ast.parse("\n".join(line for line in cells[cell_id].splitlines()
                                   if not line.startswith("%")))
        kept = []
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)):
                if any(isinstance(d, ast.Call) and "mesh" in ast.unparse(d)
                       for d in getattr(node, "decorator_list", [])):
                    continue  # bound to a concrete mesh of the small run (shard_map)
                kept.append(node)
            elif isinstance(node, ast.Assign):
                names = [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
                if names and all(n.isupper() or n in LOWERCASE_KEPT for n in names):
                    kept.append(node)
        if cell_id == "c16-roofline":  # ROW_SPLIT/COLUMN_SPLIT are counted from tp_specs
            build_abstract_model(namespace)
            namespace["tp_specs"] = namespace["partition_specs"](
                "tensor parallel", namespace["abstract_params"])
        for node in kept:  # one statement at a time: a constant of the small run is skipped
            try:
                exec(compile(ast.Module([node], []), cell_id, "exec"), namespace)
            except NameError:
                if not isinstance(node, ast.Assign):
                    raise
                namespace.setdefault("_skipped", []).append(ast.unparse(node.targets[0]))
        if "BIG" in namespace:  # the model's dimensions are BIG's, not the small run's
            big = namespace["BIG"]
            namespace.update(D_MODEL=big["width"], N_HEADS=big["heads"], N_LAYERS=big["layers"],
                             VOCAB_SIZE=big["vocab"], CONTEXT=big["context"])
    return namespace


def build_abstract_model(ns):
    """BIG's GPT as shapes only (nnx.eval_shape): its graphdefs and parameter shapes."""
    nnx = ns["nnx"]
    one_device = jax.make_mesh((1, 1), ("data", "model"), devices=jax.devices()[:1],
                               axis_types=(AxisType.Auto, AxisType.Auto))
    with jax.set_mesh(one_device), nnx.logical_axis_rules(ns["RULES"]["data parallel"]):
        gpt = nnx.eval_shape(lambda: ns["GPT"](rngs=nnx.Rngs(0)))
    graphdef, params = nnx.split(gpt)
    strip = lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype)  # noqa: E731
    ns["graphdef"], ns["abstract_params"] = graphdef, jax.tree.map(strip, params)
    ns["block_graphdef"] = nnx.graphdef(gpt.blocks[0])
    ns["block_state"] = jax.tree.map(strip, nnx.state(gpt.blocks[0]))
    outside_graphdef, outside_params = nnx.split(
        {name: getattr(gpt, name) for name in ns["OUTSIDE_BLOCKS"]})
    ns["outside_graphdef"], ns["outside_params"] = outside_graphdef, jax.tree.map(
        strip, outside_params)


# --- the strategies: (mesh shape, axis types, rules for the parameters, batch layout)
STRATEGIES = {
    # name: (mesh (data, model) as a function of chips, Auto axes?, rules, batch spec)
    "data parallel": (lambda n: (n, 1), False, "data parallel", P("data")),
    "FSDP (annotated)": (lambda n: (n, 1), True, "FSDP", P("data")),
    "tensor parallel": (lambda n: (1, n), False, "tensor parallel", P()),
    "tensor + sequence": (lambda n: (1, n), False, "tensor parallel", P(None, "model")),
    "2-D (data x model)": (lambda n: (n // 2, 2), False, "2-D (data x model)", P("data")),
    "FSDP x tensor": (lambda n: (n // 2, 2), True, "FSDP x tensor", P("data")),
}
# The cost model's name for each strategy (None: the cost model has no such strategy).
COST_MODEL_NAME = {"data parallel": "data parallel", "FSDP (annotated)": "FSDP",
                   "tensor parallel": "tensor parallel", "tensor + sequence": "tensor parallel",
                   "2-D (data x model)": "2-D (data x model)", "FSDP x tensor": "FSDP x TP"}
# What the cost model is told besides the name: sequence parallelism as the chapter writes it
# (the compiler keeps tensor parallelism's all-reduces and gathers the sequence besides).
COST_MODEL_CHANGES = {"tensor + sequence": {"sequence_gathers": True}}


def rules_for(ns, name):
    if name == "FSDP x tensor":  # MaxText's ici_fsdp x ici_tensor: the chapter's FSDP x TP
        return ns["RULES"]["FSDP x TP"]
    return ns["RULES"][name]


def build_step(ns, strategy, devices, *, bf16=True, donate=True, batch=None, remat="full"):
    """(jitted step, its abstract arguments, mesh, rules) for one strategy on these devices,
    its blocks rematerialised with section 5's policy `remat` ("full" or "named")."""
    nnx, optax = ns["nnx"], ns["optax"]
    mesh_shape, auto, rule_name, batch_spec = STRATEGIES[strategy]
    types = (AxisType.Auto if auto else AxisType.Explicit,) * 2
    mesh = jax.make_mesh(mesh_shape(len(devices)), ("data", "model"), devices=devices,
                         axis_types=types)
    rules = rules_for(ns, rule_name)
    with nnx.logical_axis_rules(rules):
        outside_specs = nnx.get_partition_spec(ns["outside_params"])
        block_specs = nnx.get_partition_spec(ns["block_state"])
    stacked_specs = jax.tree.map(lambda spec: P(None, *spec), block_specs,
                                 is_leaf=lambda x: isinstance(x, P))
    layers = ns["BIG"]["layers"]

    def place(shapes, specs, depth=None):
        lead = () if depth is None else (depth,)
        return jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(
            lead + a.shape, a.dtype, sharding=NamedSharding(mesh, s)), shapes, specs)

    params = {"outside": place(ns["outside_params"], outside_specs),
              "blocks": place(ns["block_state"], stacked_specs, layers)}
    optimizer = ns["optimizer"]
    opt_shapes = jax.eval_shape(optimizer.init, params)
    opt_layouts = optax.tree_utils.tree_map_params(
        optimizer, lambda _, param: param.sharding, opt_shapes, params,
        transform_non_params=lambda _: NamedSharding(mesh, P()))
    opt_state = jax.tree.map(lambda a, s: jax.ShapeDtypeStruct(a.shape, a.dtype, sharding=s),
                             opt_shapes, opt_layouts)
    sequences = batch or ns["BIG"]["batch"]
    tokens = jax.ShapeDtypeStruct((sequences, ns["BIG"]["context"]), jnp.int32,
                                  sharding=NamedSharding(mesh, batch_spec))

    # Section 5's scan with rematerialisation. Its block body, named_block, skipped
    # gather_sequence (sequence parallelism) when this tool was written (since fixed in the
    # chapter, and checked there against Block.__call__); under full remat the names it adds are
    # unused, so the tool runs the model's own Block.__call__ in its place, as the findings were
    # made. The named policy keeps what named_block names, so it runs the chapter's named_block.
    ns.setdefault("chapter_named_block", ns["named_block"])
    ns["named_block"] = (ns["chapter_named_block"] if remat == "named"
                         else lambda block, x: block(x))
    rematerialised = ns["scanned"](ns["POLICIES"][remat])

    def run_blocks(stacked, x):
        return rematerialised(stacked, ns["pin_activations"](x))  # pin: Auto axes only

    def cast(tree):  # mixed precision: float32 parameters, bfloat16 computation
        return jax.tree.map(lambda a: a.astype(jnp.bfloat16) if bf16 and a.dtype == jnp.float32
                            else a, tree)

    def loss(params, inputs, targets):
        return ns["deep_loss"](cast(params["outside"]), cast(params["blocks"]), inputs, targets,
                               run_blocks)

    def gradients(params, inputs, targets):
        return jax.value_and_grad(loss)(params, inputs, targets)

    layouts = jax.tree.map(lambda a: a.sharding, (params, opt_state)) if auto else None
    step = ns["make_train_step"](gradients, optimizer, layouts=layouts)
    if donate:
        step = jax.jit(step.__wrapped__, donate_argnums=(0, 1))
    return step, (params, opt_state, tokens, tokens), mesh, rules


# --- reading the TPU HLO
COLLECTIVES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")
TYPE = re.compile(r"\b(pred|bf16|f8e\w+|[fsu]\d+)\[([\d,]*)\]")
BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s16": 2, "u16": 2, "s32": 4, "u32": 4,
         "f32": 4, "s64": 8, "u64": 8, "f64": 8}
INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (.+?) ([\w\-]+)\((.*)$")
COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) (?:\(|\{)")


def array_bytes(text):
    """[(dtype, bytes)] of every array type written in `text`."""
    return [(dtype, BYTES.get(dtype, 1) * math.prod(int(d) for d in dims.split(",") if d))
            for dtype, dims in TYPE.findall(text)]


def parse_hlo(text):
    """({computation: [(name, result type text, opcode, rest of line)]}, {name: result type})."""
    computations, current, types = defaultdict(list), None, {}
    for line in text.splitlines():
        if line and not line.startswith(" ") and line.rstrip().endswith("{"):
            match = COMPUTATION.match(line)
            current = match.group(1) if match else None
            continue
        match = INSTRUCTION.match(line)
        if match and current:
            name, result, opcode, rest = match.groups()
            computations[current].append((name, result, opcode, rest))
            types[name] = result
    return computations, types


def operand_names(rest):
    """The instruction's operands: the %names before its closing parenthesis."""
    depth = 1
    for index, char in enumerate(rest):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0:
            return re.findall(r"%([\w.\-]+)", rest[:index])
    return []


CALLEES = re.compile(r"(calls|to_apply|body|condition|branch_computations|"
                     r"called_computations)=\{?([^}]*?)(?=\}|,\s*\w+=|$)")


def call_graph(computations):
    """({callee: (caller computation, opcode of the calling instruction)}, {while body: trips}).

    A while loop's trip count is read from its condition: `compare(counter, constant(N))`,
    direction=LT, with the counter starting at 0 (what XLA emits for a scan and for the
    SPMD partitioner's windowed loops)."""
    called_by, trips = {}, {}
    for comp, instructions in computations.items():
        for _, _, opcode, rest in instructions:
            for _, names in CALLEES.findall(rest):
                for callee in re.findall(r"%?([\w.\-]+)", names):
                    called_by.setdefault(callee, (comp, opcode))
            if opcode == "while":
                body = re.search(r"body=%?([\w.\-]+)", rest).group(1)
                condition = re.search(r"condition=%?([\w.\-]+)", rest).group(1)
                trips[body] = trip_count(computations.get(condition, []),
                                         computations.get(body, []))
    return called_by, trips


def constants_of(instructions):
    return {name: int(v) for name, _, opcode, rest in instructions if opcode == "constant"
            for v in re.findall(r"^(-?\d+)\)", rest)}


def trip_count(condition, body):
    """`counter < N` in the condition, the counter (tuple element i) stepped by `add(counter,
    constant(c))` in the body (the windowed loops are unrolled: c = 2): ceil(N / c) trips."""
    constants, limit, index = constants_of(condition), None, None
    elements = {name: re.search(r"index=(\d+)", rest) for name, _, opcode, rest in condition
                if opcode == "get-tuple-element"}
    for _, _, opcode, rest in condition:
        if opcode == "compare" and "direction=LT" in rest:
            for operand in operand_names(rest):
                if operand in constants:
                    limit = constants[operand]
                elif elements.get(operand):
                    index = elements[operand].group(1)
    if limit is None:
        return None  # unknown: counted once, and flagged
    step = 1
    body_constants = constants_of(body)
    counters = {name for name, _, opcode, rest in body if opcode == "get-tuple-element"
                and re.search(r"index=(\d+)", rest).group(1) == index}
    defined = {name: (opcode, operand_names(rest)) for name, _, opcode, rest in body}
    root = [operand_names(rest) for name, _, opcode, rest in body if opcode == "tuple"]
    if root and index is not None and int(index) < len(root[-1]):
        opcode, operands = defined.get(root[-1][int(index)], (None, []))
        if opcode == "add" and len(operands) == 2 and operands[0] in counters \
                and operands[1] in body_constants:
            step = body_constants[operands[1]]
    return -(-limit // step)


def group_size(rest, num_devices):
    """Devices per group of a collective, from its replica_groups in any of XLA's forms."""
    iota = re.search(r"replica_groups=\[(\d+),(\d+)\]<=", rest)
    if iota:
        return int(iota.group(2))
    mesh = re.search(r"replica_groups=mesh\[([^\]]*)\] \{([^}]*)\}", rest)
    if mesh:
        sizes = dict(re.findall(r"'(\w+)'=(\d+)", mesh.group(1)))
        return math.prod(int(sizes[a]) for a in re.findall(r"'(\w+)'", mesh.group(2)))
    listed = re.search(r"replica_groups=\{\{([\d,]*)\}", rest)
    if listed:
        return len(listed.group(1).split(","))
    if "source_target_pairs" in rest:
        return 2
    return num_devices


def collectives(text, num_devices=8):
    """Every collective of a compiled TPU program, counted once per execution.

    Forms: a plain `all-reduce(...)`; an `all-gather-start`/`-done` pair (counted once, its
    result the `-done`'s); an `async-start`/`async-done` pair around a computation that holds
    the collective; a fusion whose computation holds one (TPU's collective fusions). What a
    fusion or async wrapper holds is counted at the caller, not again. Collectives inside
    while loops (the scan over the layers, the SPMD partitioner's windowed matmuls, whose
    collective-permutes carry an all-gather or reduce-scatter in pieces) are multiplied by the
    loops' trip counts. Bytes are per device: `operand_bytes` what goes in, `result_bytes` what
    comes out (an all-gather's result is the whole array, a reduce-scatter's one piece)."""
    computations, types = parse_hlo(text)
    called_by, trips = call_graph(computations)
    done_of = {}  # start instruction -> its -done instruction's result type
    for instructions in computations.values():
        for _, result, opcode, rest in instructions:
            if opcode.endswith("-done"):
                for operand in operand_names(rest)[:1]:
                    done_of[operand] = result

    def enclosing_window(comp):
        # The SPMD partitioner's windowed matmul loops ("collective matmul"): a loop of
        # collective-permutes that all-gathers an operand (_ag) or reduce-scatters the result
        # (_rs) piece by piece while the pieces are multiplied. Its first piece's permute is
        # peeled into the enclosing computation; that one is not tagged.
        while comp:
            found = re.search(r"windowed_dot_general_body_(ag|rs|bidir)", comp)
            if found:
                return {"ag": "all-gather", "rs": "reduce-scatter"}.get(found.group(1), "bidir")
            comp = called_by.get(comp, (None,))[0]
        return None

    def times(comp):  # how often a computation runs per step
        factor, unknown = 1, False
        while comp in called_by:
            parent, opcode = called_by[comp]
            if opcode == "while" and comp in trips:
                if trips[comp] is None:
                    unknown = True
                else:
                    factor *= trips[comp]
            comp = parent
        return factor, unknown

    def inside(comp, seen=()):  # the collectives a fusion's or async wrapper's body holds
        found = []
        for name, result, opcode, rest in computations.get(comp, []):
            if opcode.removesuffix("-start") in COLLECTIVES:
                found.append((opcode.removesuffix("-start"), name, result, rest, comp))
            for _, names in CALLEES.findall(rest):
                for callee in re.findall(r"%?([\w.\-]+)", names):
                    if callee not in seen and callee in computations:
                        found += inside(callee, seen + (comp,))
        return found

    out = []
    for comp, instructions in computations.items():
        caller = called_by.get(comp)
        if caller and caller[1] not in ("while", "conditional", "call"):
            continue  # a fusion body, async wrapper or reducer: counted at its caller
        for name, result, opcode, rest in instructions:
            base = opcode.removesuffix("-start")
            kind = None
            if base in COLLECTIVES:
                kind, operands, result_text = base, operand_names(rest), done_of.get(name, result)
                if opcode == base:
                    result_text = result
                operand_types = [types.get(o, "") for o in operands]
            elif opcode in ("async-start", "fusion"):
                callee = re.search(r"calls=%?([\w.\-]+)", rest)
                held = inside(callee.group(1)) if callee else []
                if held:
                    kind, inner_name, inner_result, inner_rest, body = held[0]
                    inner_types = {n: r for n, r, _, _ in computations[body]}
                    operand_types = [inner_types.get(o, types.get(o, ""))
                                     for o in operand_names(inner_rest)]
                    result_text = done_of.get(name, inner_result) if opcode == "async-start" \
                        else inner_result
            if kind is None:
                continue
            factor, unknown = times(comp)
            operand_bytes = [b for t in operand_types for b in array_bytes(t)]
            result_bytes = array_bytes(result_text)
            meta = re.search(r'op_name="([^"]*)"', rest)
            op_name = meta.group(1) if meta else ""
            phase = ("backward" if "transpose(" in op_name else
                     "forward" if "jvp(" in op_name else "update")
            groups = re.search(r"(replica_groups=\S+|source_target_pairs=\{[^ ]*\})", rest)
            size = group_size(rest, num_devices)
            operand_total = sum(b for _, b in operand_bytes)
            result_total = sum(b for _, b in result_bytes)
            share = (size - 1) / size if size else 0.0
            sent = {"all-gather": share * result_total, "reduce-scatter": share * operand_total,
                    "all-reduce": 2 * share * operand_total, "all-to-all": share * operand_total,
                    "collective-permute": operand_total}[kind]
            window = enclosing_window(comp)
            out.append({"op": kind, "name": name, "form": opcode, "phase": phase,
                        "group": size, "sent_bytes": sent, "window": window,
                        "times": factor, "trip_unknown": unknown,
                        "in_loop": comp if comp in trips else None,
                        "operand_bytes": sum(b for _, b in operand_bytes),
                        "result_bytes": sum(b for _, b in result_bytes),
                        "dtypes": sorted({d for d, _ in result_bytes}),
                        "groups": groups.group(1)[:80] if groups else "",
                        "op_name": op_name[-100:]})
    return out


def attention_scores(text, batch, heads, context):
    """The attention scores and probabilities in the program: arrays of shape (batch, heads,
    context, context) for this device's batch and heads, by element type, split into those
    that are written to HBM (results of top-level or loop-body instructions) and those that
    live only inside a fusion (never stored)."""
    computations, _ = parse_hlo(text)
    fused = set(re.findall(r"kind=k\w+, calls=%?([\w.\-]+)", text))
    pattern = re.compile(rf"\b(bf16|f32)\[{batch},{heads},{context},{context}\]")
    stored, in_fusions = defaultdict(int), defaultdict(int)
    for comp, instructions in computations.items():
        for _, result, opcode, _ in instructions:
            if opcode in ("parameter", "get-tuple-element", "bitcast", "tuple"):
                continue  # views of a buffer counted where it is produced
            for dtype in pattern.findall(result):
                (in_fusions if comp in fused else stored)[dtype] += 1
    one = batch * heads * context * context
    return {"shape": [batch, heads, context, context], "stored": dict(stored),
            "in_fusions": dict(in_fusions), "f32_bytes_each": 4 * one, "bf16_bytes_each": 2 * one}


# --- compiling and reporting
def get_devices(topology):
    options = TOPOLOGY_OPTIONS.get(topology.split(":")[0], {})
    return topologies.get_topology_desc(platform="tpu", topology_name=topology, **options).devices


def ring_report(mesh):
    """For each mesh axis: are consecutive devices along it physical neighbours, and is the
    axis a closed ring (last back to first)? Coordinates from the topology."""
    report = {}
    grid = mesh.devices
    for axis, name in enumerate(mesh.axis_names):
        size = grid.shape[axis]
        if size == 1:
            continue
        lines = []
        for index in range(grid.size // size):
            other = list(range(grid.ndim))
            other.remove(axis)
            line = grid.transpose([*other, axis]).reshape(-1, size)[index]
            c = [tuple(d.coords) for d in line]
            hops = [sum(abs(a - b) for a, b in zip(c[i], c[(i + 1) % size], strict=True))
                    for i in range(size)]
            lines.append({"coords": c, "line": all(h == 1 for h in hops[:-1]),
                          "ring": all(h == 1 for h in hops)})
        report[name] = lines
    return report


def summarize(found):
    table = defaultdict(lambda: {"count": 0, "operand_bytes": 0, "result_bytes": 0,
                                 "sent_bytes": 0, "dtypes": set()})
    for c in found:
        key = c["op"] + (f" ({c['window']} loop)" if c["window"] else "")
        row = table[key]
        row["sent_bytes"] += c["times"] * c["sent_bytes"]
        row["count"] += c["times"]
        row["operand_bytes"] += c["times"] * c["operand_bytes"]
        row["result_bytes"] += c["times"] * c["result_bytes"]
        row["dtypes"] |= set(c["dtypes"])
    return {op: {**row, "dtypes": sorted(row["dtypes"])} for op, row in table.items()}


def predicted_volume(ns, strategy, chip, mesh_shape, remat="full"):
    """The cost model's collectives (V per kind, and the bytes each device sends: (X-1)/X of V,
    twice for an all-reduce) and memory per chip for this strategy and slice, if it has them."""
    name = COST_MODEL_NAME[strategy]
    if name is None or chip is None:
        return None
    changes = COST_MODEL_CHANGES.get(strategy, {})
    _, _, found = ns["strategy_volumes"](name, ns["BIG"], ns["CHIPS"][chip]["chips"],
                                         mesh=mesh_shape, **changes)
    p = ns["predict"](name, ns["BIG"], chip, mesh=mesh_shape, remat=remat, **changes)
    sent = defaultdict(float)
    for op, size, volume in found:
        sent[op] += (2 if op == "all-reduce" else 1) * (size - 1) / size * volume
    return {"volumes": ns["totals"](found), "sent": dict(sent), "memory": p["memory"],
            "breakdown": p["breakdown"], "fits": p["fits"], "comms_s": p["comms"]}


def argument_bytes(abstract):
    """Bytes per device of the step's arguments, from their shapes and shardings."""
    total = 0
    for leaf in jax.tree.leaves(abstract):
        shape = leaf.sharding.shard_shape(leaf.shape) if leaf.sharding else leaf.shape
        total += math.prod(shape) * jnp.dtype(leaf.dtype).itemsize
    return total


def compile_one(ns, topology, devices, strategy, args, remat="full"):
    nnx = ns["nnx"]
    start, cpu_start = time.perf_counter(), time.process_time()
    step, abstract, mesh, rules = build_step(ns, strategy, devices, bf16=not args.f32,
                                             donate=not args.no_donate, batch=args.batch,
                                             remat=remat)
    chip = COST_MODEL_CHIP.get(topology)
    record = {"topology": topology, "strategy": strategy, "mesh": dict(mesh.shape),
              "remat": remat,
              "predicted": predicted_volume(ns, strategy, chip, (mesh.shape["data"],
                                                                  mesh.shape["model"]), remat),
              "device_kind": devices[0].device_kind, "bf16": not args.f32,
              "donated": not args.no_donate}
    record["argument_bytes"] = argument_bytes(abstract)
    try:
        with jax.set_mesh(mesh), nnx.logical_axis_rules(rules):
            lowered = step.lower(*abstract)
        record["lower_s"] = time.perf_counter() - start
        compiled = lowered.compile()
    except Exception as error:  # the TPU compiler's out-of-memory is a compile error
        message = str(error)
        record.update(error=type(error).__name__, message=message[:2000],
                      oom="RESOURCE_EXHAUSTED" in message or "Ran out of memory" in message,
                      seconds=time.perf_counter() - start)
        scale = {"K": 2**10, "M": 2**20, "G": 2**30}  # libtpu's G is GiB (15.75G = 16.9e9)
        used = (re.search(r"Used ([\d.]+)([KMG]) of ([\d.]+)([KMG]) hbm", message) or
                re.search(r"required for HLO temporaries \(([\d.]+)([KMG])\) exceeds available "
                          r"HBM \(([\d.]+)([KMG])\)", message))
        if used:
            record["oom_required"] = float(used.group(1)) * scale[used.group(2)]
            record["oom_limit"] = float(used.group(3)) * scale[used.group(4)]
            record["oom_what"] = "temporaries" if "temporaries" in used.group(0) else "total"
        return record, None
    record["seconds"] = time.perf_counter() - start
    record["cpu_seconds"] = time.process_time() - cpu_start
    text = compiled.as_text()
    stats = compiled.memory_analysis()
    memory = {field: getattr(stats, field) for field in (
        "argument_size_in_bytes", "output_size_in_bytes", "alias_size_in_bytes",
        "temp_size_in_bytes", "generated_code_size_in_bytes")}
    peak = getattr(stats, "peak_memory_in_bytes", None)
    memory["peak"] = peak if peak else (memory["argument_size_in_bytes"]
                                        + memory["output_size_in_bytes"]
                                        - memory["alias_size_in_bytes"]
                                        + memory["temp_size_in_bytes"]
                                        + memory["generated_code_size_in_bytes"])
    memory["peak_from"] = "memory_analysis" if peak else "args + outputs - aliased + temp + code"
    limit = HBM_LIMIT.get(devices[0].device_kind)
    record.update(memory=memory, hbm_limit=limit, fits=memory["peak"] <= limit if limit else None,
                  oom=False)
    found = collectives(text, len(devices))
    record["collectives"] = found
    record["summary"] = summarize(found)
    big = ns["BIG"]
    sequences = (args.batch or big["batch"]) // mesh.shape["data"]
    record["attention"] = attention_scores(text, sequences, big["heads"] // mesh.shape["model"],
                                           big["context"])
    record["rings"] = ring_report(mesh)
    record["sent_bytes"] = sum(row["sent_bytes"] for row in record["summary"].values())
    record["hlo"] = text
    return record, compiled


# Section 5's policies, the one that recomputes less first.
REMAT_POLICIES = ("named", "full")


def remat_choice(ns, topology, devices, strategy, args):
    """The cost model's cheapest remat policy that fits this strategy on this slice, and the
    compiler's verdict on the named policy: confirming it where the model chose it, and as the
    negative control where the model rejected it for memory and chose full remat. None where
    the model has no such strategy or slice, or no policy fits (full remat's own compile, in
    the main records, is the compiler's verdict there)."""
    mesh_shape = STRATEGIES[strategy][0](len(devices))
    record = choose_remat(ns, topology, strategy, mesh_shape)
    if record is None:
        return None
    compiled, _ = compile_one(ns, topology, devices, strategy, args, remat="named")
    record["named"] = {key: compiled.get(key) for key in ("oom", "fits", "seconds", "error")}
    record["named"]["peak"] = compiled["memory"]["peak"] if "memory" in compiled else None
    record["named"]["hbm_limit"] = compiled.get("hbm_limit") or compiled.get("oom_limit")
    return record


def choose_remat(ns, topology, strategy, mesh_shape):
    """The model's side of remat_choice: both policies priced, and the cheaper that fits
    (None where the model has no such strategy or slice, or no policy fits)."""
    name, chip = COST_MODEL_NAME[strategy], COST_MODEL_CHIP.get(topology)
    if name is None or chip is None:
        return None
    changes = COST_MODEL_CHANGES.get(strategy, {})
    predicted = {}
    for remat in REMAT_POLICIES:
        p = ns["predict"](name, ns["BIG"], chip, mesh=mesh_shape, remat=remat, **changes)
        predicted[remat] = {key: p[key] for key in ("memory", "fits", "overlapped", "serial")}
    fitting = [remat for remat in REMAT_POLICIES if predicted[remat]["fits"]]
    if not fitting:
        return None
    # Cheapest by the step's lower bound (perfect overlap); the upper bound (no overlap) is
    # recorded beside it, and on the slices compiled here it orders the policies the same way.
    choice = min(fitting, key=lambda remat: predicted[remat]["overlapped"])
    return {"topology": topology, "strategy": strategy, "predicted": predicted,
            "choice": choice, "role": "choice" if choice == "named" else "control"}


def record_inputs(ns):
    """What the records depend on, so that a reader of the file (tests/test_aot_tpu.py) can
    tell a stale one: the chapter 16 cells this tool executes (tpu_record's hash of their
    code), this tool's source, and the compiler's versions."""
    from importlib import metadata

    import tpu_record  # dev/, beside this file: standard library only
    try:
        libtpu = metadata.version("libtpu")
    except metadata.PackageNotFoundError:
        libtpu = None
    return {"cells": CELLS, "cells_hash": tpu_record.cells_hash(NOTEBOOK, CELLS),
            "tool_hash": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
            "jax": jax.__version__, "libtpu": libtpu, "model": ns["BIG"]}


def reprice(path):
    """The cost model's side of a record, computed again from chapter 16 as it is now, with
    the compiler's side (the compiled programs, their collectives and memory) kept: for a
    change to the cost model's cells alone, which compiles the same programs. The record then
    names the current cells and tool, and `make test-aot` (CI) still compiles a sample again
    and requires it to equal the record, the compiler's side included."""
    ns = chapter_namespace()
    data = json.loads(path.read_text())
    for r in data["records"]:
        chip = COST_MODEL_CHIP.get(r["topology"])
        mesh_shape = (r["mesh"]["data"], r["mesh"]["model"])
        r["predicted"] = predicted_volume(ns, r["strategy"], chip, mesh_shape, r["remat"])
        if "at_smaller_batch" in r:
            r["at_smaller_batch"]["predicted"] = r["predicted"]
    choices = []
    for c in data.get("remat_choice", []):
        chips = math.prod(int(n) for n in c["topology"].split(":")[1].split("x"))
        mesh_shape = STRATEGIES[c["strategy"]][0](chips)  # one device a chip (v4: megacore)
        new = choose_remat(ns, c["topology"], c["strategy"], mesh_shape)
        if new is None:
            print(f"reprice: {c['topology']} {c['strategy']}: no policy fits now; dropped")
            continue
        if new["role"] != c["role"]:
            print(f"reprice: {c['topology']} {c['strategy']}: now the {new['role']}")
        choices.append({**c, **new})
    inputs = record_inputs(ns)
    if (inputs["jax"], inputs["libtpu"]) != (data["jax"], data["libtpu"]):
        sys.exit(f"reprice: the record was compiled with jax {data['jax']} and libtpu "
                 f"{data['libtpu']}, this is {inputs['jax']} and {inputs['libtpu']}: compile "
                 "again (make aot-record)")
    data.update(inputs, remat_choice=choices)
    data["repriced"] = time.strftime("%Y-%m-%d")
    path.write_text(json.dumps(data, indent=1, default=str))
    for r in data["records"]:
        print_record(r)
    for c in choices:
        print_choice(c)


def print_choice(c):
    p, named = c["predicted"], c["named"]
    verdict = "OUT OF MEMORY" if named["oom"] else "fits" if named["fits"] else "does not fit"
    peak = f", peak {named['peak'] / 1e9:.2f} GB" if named.get("peak") else ""
    named_fits = "fits" if p["named"]["fits"] else "no fit"
    print(f"{c['topology']:<9} {c['strategy']:<19} model: named "
          f"{p['named']['memory'] / 1e9:.1f} GB ({named_fits}), full "
          f"{p['full']['memory'] / 1e9:.1f} GB; cheapest that fits: {c['choice']} "
          f"({c['role']}); compiler, named: {verdict}{peak}")


def print_record(r):
    head = f"{r['topology']:<9} {r['strategy']:<19} mesh {r['mesh']}"
    p = r.get("predicted")
    if "error" in r:
        print(f"{head}: compile FAILED ({'out of memory' if r['oom'] else r['error']}) "
              f"after {r['seconds']:.1f} s; {r['message'].splitlines()[0][:300]}")
        if r.get("oom_required"):
            print(f"    the compiler's {r['oom_what']}: {r['oom_required'] / 1e9:.2f} GB, "
                  f"+ arguments "
                  f"{r['argument_bytes'] / 1e9:.2f} GB, of {r['oom_limit'] / 1e9:.2f} GB")
        if p:
            print(f"    predicted memory {p['memory'] / 1e9:.2f} GB "
                  f"({'fits' if p['fits'] else 'no fit'})")
        return
    m = r["memory"]
    batch = f" (at batch {r['batch']})" if r.get("batch") else ""
    print(f"{head}{batch}: compiled in {r['seconds']:.1f} s ({r['cpu_seconds']:.1f} s of CPU)")
    print(f"    memory/device GB: args {m['argument_size_in_bytes'] / 1e9:.2f}, out "
          f"{m['output_size_in_bytes'] / 1e9:.2f}, aliased {m['alias_size_in_bytes'] / 1e9:.2f}, "
          f"temp {m['temp_size_in_bytes'] / 1e9:.2f}, code "
          f"{m['generated_code_size_in_bytes'] / 1e6:.1f} MB; peak {m['peak'] / 1e9:.2f} GB "
          f"of {r['hbm_limit'] / 1e9:.2f}: {'fits' if r['fits'] else 'DOES NOT FIT'}")
    for op, row in sorted(r["summary"].items()):
        print(f"    {op:<36}{row['count']:>5} x  operands {row['operand_bytes'] / 1e6:9.1f} MB  "
              f"results {row['result_bytes'] / 1e6:9.1f} MB  sent {row['sent_bytes'] / 1e6:9.1f} MB"
              f"  {','.join(row['dtypes'])}")
    phases = defaultdict(float)
    for c in r["collectives"]:
        phases[c["phase"]] += c["times"] * c["sent_bytes"]
    print(f"    sent per device per step: {r['sent_bytes'] / 1e6:,.1f} MB (" + ", ".join(
        f"{phase} {sent / 1e6:,.1f}" for phase, sent in sorted(phases.items())) + ")")
    if p:
        for op, volume in sorted(p["volumes"].items()):
            print(f"    predicted {op:<15} V {volume / 1e6:9.1f} MB, "
                  f"sent {p['sent'][op] / 1e6:9.1f} MB")
        sent = sum(p["sent"].values())
        print(f"    predicted sent {sent / 1e6:,.1f} MB; HLO/predicted "
              f"{r['sent_bytes'] / sent if sent else float('nan'):.2f}")
        print(f"    predicted memory {p['memory'] / 1e9:.2f} GB "
              f"({'fits' if p['fits'] else 'no fit'}); compiler peak {m['peak'] / 1e9:.2f} GB, "
              f"ratio {m['peak'] / p['memory']:.2f}")
    a = r["attention"]
    print(f"    attention scores {a['shape']}: written to HBM {a['stored']}, only inside fusions "
          f"{a['in_fusions']} (f32 one: {a['f32_bytes_each'] / 1e9:.2f} GB)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topology", nargs="+", default=["v5e:2x4"])
    parser.add_argument("--strategy", nargs="+", default=list(STRATEGIES))
    parser.add_argument("--f32", action="store_true", help="compute in float32 (no bf16 cast)")
    parser.add_argument("--no-donate", action="store_true")
    parser.add_argument("--batch", type=int, default=None, help="global sequences per step")
    parser.add_argument("--no-retry", dest="retry", action="store_false",
                        help="no second compile at a quarter of the batch after out of memory")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--hlo-dir", type=Path, default=None)
    parser.add_argument("--compare", type=Path, default=None, metavar="RECORD",
                        help="after compiling, require every record (and remat choice) to "
                             "equal RECORD's of the same slice and strategy, timings aside; "
                             "exit 1 when one differs")
    parser.add_argument("--remat-choice", nargs="*", default=[], metavar="TOPOLOGY",
                        help="on these slices, the model's cheapest remat policy that fits, "
                             "with the compiler's verdict on the named policy")
    parser.add_argument("--reprice", type=Path, default=None, metavar="RECORD",
                        help="compile nothing: recompute RECORD's predictions from chapter 16 "
                             "as it is now (after a change to the cost model's cells only)")
    args = parser.parse_args()
    if args.reprice:
        return reprice(args.reprice)
    begin = time.perf_counter()
    ns = chapter_namespace()
    print(f"jax {jax.__version__}; chapter 16's definitions loaded in "
          f"{time.perf_counter() - begin:.1f} s; BIG = {ns['BIG']}")
    records = []
    for topology in args.topology:
        devices = get_devices(topology)
        print(f"{topology}: {len(devices)} x {devices[0].device_kind}, "
              f"{len({d.process_index for d in devices})} process(es)")
        for strategy in args.strategy:
            if STRATEGIES[strategy][0](len(devices))[0] < 1:
                continue
            record, _ = compile_one(ns, topology, devices, strategy, args)
            print_record(record)
            if record.get("oom") and args.retry:
                # Out of memory: the collectives at a quarter of the batch (the parameters'
                # collectives do not depend on it, the activations' scale with it).
                data = STRATEGIES[strategy][0](len(devices))[0]
                smaller = argparse.Namespace(**{**vars(args), "batch": max(
                    data, (args.batch or ns["BIG"]["batch"]) // 4)})
                retry, _ = compile_one(ns, topology, devices, strategy, smaller)
                retry["batch"] = smaller.batch
                record["at_smaller_batch"] = {k: v for k, v in retry.items() if k != "hlo"}
                print_record(retry)
                if args.hlo_dir and "hlo" in retry:
                    record["hlo"] = retry["hlo"]
            if args.hlo_dir and "hlo" in record:
                args.hlo_dir.mkdir(parents=True, exist_ok=True)
                safe = re.sub(r"\W+", "_", f"{topology}_{strategy}")
                (args.hlo_dir / f"{safe}.hlo.txt").write_text(record["hlo"])
            record.pop("hlo", None)
            records.append(record)
    choices = []
    for topology in args.remat_choice:
        devices = get_devices(topology)
        for strategy in args.strategy:
            if STRATEGIES[strategy][0](len(devices))[0] < 1:
                continue
            choice = remat_choice(ns, topology, devices, strategy, args)
            if choice is not None:
                print_choice(choice)
                choices.append(choice)
    total = time.perf_counter() - begin
    print(f"\n{'topology':<9} {'strategy':<19} {'compile s':>9} {'peak GB':>8} {'model GB':>8} "
          f"{'ratio':>6} {'sent GB':>8} {'model GB':>8} {'ratio':>6}  verdict (compiler / model)")
    for r in records:
        p = r.get("predicted") or {}
        small = r.get("at_smaller_batch", {})
        peak = r["memory"]["peak"] if "memory" in r else None
        sent, model_sent = r.get("sent_bytes"), sum(p.get("sent", {}).values()) or None
        row = [f"{r['seconds']:9.1f}",
               f"{peak / 1e9:8.2f}" if peak else f"{'OOM':>8}",
               f"{p['memory'] / 1e9:8.2f}" if p else f"{'':>8}",
               f"{peak / p['memory']:6.2f}" if peak and p else f"{'':>6}",
               f"{sent / 1e9:8.2f}" if sent else (f"{small['sent_bytes'] / 1e9:7.2f}*"
                                                  if "sent_bytes" in small else f"{'':>8}"),
               f"{model_sent / 1e9:8.2f}" if model_sent else f"{'':>8}",
               f"{sent / model_sent:6.2f}" if sent and model_sent else f"{'':>6}"]
        verdict = ("OOM" if r.get("oom") else "fits" if r.get("fits") else "no fit") + " / " + (
            ("fits" if p["fits"] else "no fit") if p else "-")
        print(f"{r['topology']:<9} {r['strategy']:<19} " + " ".join(row) + f"  {verdict}")
    print("* at a quarter of the batch (the full batch ran out of memory)")
    print(f"total {total:.1f} s")
    if args.json:
        inputs = {**record_inputs(ns), "bf16": not args.f32,
                  "donated": not args.no_donate, "batch": args.batch,
                  "topologies": args.topology, "strategies": args.strategy,
                  "remat_choice_topologies": args.remat_choice}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**inputs, "seconds": total, "records": records,
                                         "remat_choice": choices}, indent=1, default=str))
    if args.compare:
        return compare(args.compare, records, choices)


TIMINGS = {"seconds", "lower_s", "cpu_seconds"}  # differ from run to run; nothing else may


def without_timings(value):
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def compare(path, records, choices):
    """0 when each new record and remat choice equals the committed one of its slice and
    strategy (compiler output and the model's predictions, timings aside), else 1: the
    committed record (tests/aot_tpu.json, `make aot-record`) is not what this code and these
    versions compile."""
    committed = json.loads(path.read_text())
    differences = 0
    for kind, new, old in (("record", records, committed["records"]),
                           ("remat choice", choices, committed.get("remat_choice", []))):
        by_key = {(r["topology"], r["strategy"]): r for r in old}
        for r in new:
            key = (r["topology"], r["strategy"])
            if key not in by_key:
                print(f"compare: {kind} {key} is not in {path}")
                differences += 1
                continue
            a, b = without_timings(r), without_timings(json.loads(json.dumps(by_key[key],
                                                                             default=str)))
            a = json.loads(json.dumps(a, default=str))
            if a != b:
                fields = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
                print(f"compare: {kind} {key} differs from {path.name} in {fields}")
                differences += 1
            else:
                print(f"compare: {kind} {key} equals {path.name}'s")
    print(f"compare: {len(records) + len(choices)} compiled, {differences} differ")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
