"""How far each asserted comparison of a chapter is from failing, recorded while it runs.

An assert such as `assert schedule_gain > SEED_SPREAD` holds or fails; what it does not say is
by how much. A conclusion that holds by 0.1 % on this machine may fail on a CPU of another
instruction set, under Colab's JAX or on a TPU (issue 39). This module rewrites, in each
code cell as IPython runs it, every assert whose test is an ordered comparison `a < b`,
`a <= b`, `a > b`, `a >= b` (alone, or joined by `and`) into a call that computes the same
comparison, returns the same object and records the two sides:

    assert a < b, message   ->   assert __jaxbook_margin__(0, a, "<", b), message

The comparison is made by the same operator on the same objects, in the same order, so the
chapter runs as before; the recording never raises. Per comparison it keeps the number of
times it ran and its smallest *relative margin*: (b - a) / max(|a|, |b|) for `<` and `<=`,
(a - b) / max(|a|, |b|) for `>` and `>=` (for arrays, the smallest over the elements), so
that a positive margin holds with room, zero holds with none (allowed only for `<=` and
`>=`), and a negative one fails. Sides that are not numbers (sets, strings) are not
recorded.

dev/tpu_run.py installs it in every chapter process (TPU or CPU: JAX_PLATFORMS=cpu, XLA_FLAGS,
JAX_NUM_CPU_DEVICES and another Python make the other platforms), and writes each cell's
margins into its record; dev/conclusions.py gathers them into tests/conclusions.json.
"""

import ast
import math
import operator

NAME = "__jaxbook_margin__"
OPERATORS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def ordered_comparisons(test: ast.expr) -> list[ast.Compare]:
    """The comparisons of an assert's test that are recorded: one ordered comparison, or
    several joined by `and` (not chained ones such as `0 < x < 1`)."""
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test]
    return [part for part in parts if isinstance(part, ast.Compare) and len(part.ops) == 1
            and type(part.ops[0]) in OPERATORS]


def asserted_comparisons(source: str) -> list[str]:
    """The recorded comparisons of a cell's source, in the order the rewrite numbers them
    (ast.walk's), as ast.unparse writes them. IPython's magics and shell lines are
    blanked first; a cell that does not parse has none."""
    lines = ["" if line.lstrip().startswith(("%", "!")) else line
             for line in source.splitlines()]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return []
    return [ast.unparse(part) for node in ast.walk(tree) if isinstance(node, ast.Assert)
            for part in ordered_comparisons(node.test)]


class Rewrite(ast.NodeTransformer):
    """Replaces each recorded comparison inside an assert by a call to the recorder. The
    numbering follows ast.walk's order over the asserts, as asserted_comparisons does."""

    def __init__(self):
        self.numbers = {}

    def visit_Module(self, node):
        self.numbers = {}
        asserts = [n for n in ast.walk(node) if isinstance(n, ast.Assert)]
        count = 0
        for statement in asserts:
            for part in ordered_comparisons(statement.test):
                self.numbers[id(part)] = count
                count += 1
        return ast.fix_missing_locations(self.generic_visit(node))

    def visit_Compare(self, node):
        self.generic_visit(node)
        number = self.numbers.get(id(node))
        if number is None:
            return node
        call = ast.Call(func=ast.Name(id=NAME, ctx=ast.Load()),
                        args=[ast.Constant(number), node.left,
                              ast.Constant(OPERATORS[type(node.ops[0])]), node.comparators[0]],
                        keywords=[])
        return ast.copy_location(call, node)


class Recorder:
    """The callable the rewritten asserts call; `cell` is the cell being run."""

    def __init__(self):
        self.cell = None
        self.records = {}  # cell id -> {number: {"op", "margin", "left", "right", "runs"}}

    def __call__(self, number, left, op, right):
        result = COMPARE[op](left, right)
        try:
            self.note(number, left, op, right)
        except Exception:  # noqa: BLE001 - recording must never change the chapter
            pass
        return result

    def note(self, number, left, op, right):
        import numpy as np

        a = np.asarray(left, dtype=np.float64)
        b = np.asarray(right, dtype=np.float64)
        difference = (b - a) if op in ("<", "<=") else (a - b)
        scale = np.maximum(np.abs(a), np.abs(b))
        relative = np.where(scale > 0, difference / np.where(scale > 0, scale, 1.0), 0.0)
        if relative.size == 0 or not np.all(np.isfinite(relative)):
            return
        worst = int(np.argmin(relative))
        margin = float(relative.ravel()[worst])
        entry = self.records.setdefault(self.cell, {}).setdefault(
            number, {"op": op, "margin": math.inf, "runs": 0})
        entry["runs"] += 1
        if margin < entry["margin"]:
            pick = np.broadcast_to(a, relative.shape).ravel()[worst]
            other = np.broadcast_to(b, relative.shape).ravel()[worst]
            entry.update(margin=margin, left=float(pick), right=float(other))

    def take(self, cell_id) -> list:
        """The margins a cell recorded, as a list for its record, and forget them."""
        found = self.records.pop(cell_id, {})
        return [{"number": number, **{k: (round(v, 6) if isinstance(v, float) else v)
                                      for k, v in entry.items()}}
                for number, entry in sorted(found.items())]


def install(shell) -> Recorder:
    """Rewrite the asserts of every cell `shell` (an IPython InteractiveShell) runs from now
    on, and put the recorder in its namespace. Set `recorder.cell` before each cell."""
    recorder = Recorder()
    shell.user_ns[NAME] = recorder
    shell.ast_transformers.append(Rewrite())
    return recorder
