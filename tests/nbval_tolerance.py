"""nbval with a declared, per-number tolerance for numbers that depend on floating-point order.

nbval compares every output to the letter. That is right for shapes, dtypes, error
messages, labels, hyper-parameters and small exact computations, and wrong for the numbers
that come out of many floating-point steps (a loss after training, an accuracy, a count of
misclassified images): XLA compiles different code for different CPUs (it depends on the
instruction set: SSE4.2, AVX, AVX2, AVX-512), the rounding differs, and a long training run
ends a few digits elsewhere. Such a cell declares how far which of its numbers may move,
with tags:

    tol-abs=0.003             a number with a fractional part or an exponent may differ
                              by 0.003
    tol-rel=0.01              ... or by 1% of the stored value (the two add up, as in
                              numpy.isclose)
    tol-count=25              a whole number (digits only, thousands separators allowed)
                              may differ by 25
    tol-abs=0.004@accuracy    the same, scoped: only the numbers on output lines that
                              contain "accuracy" (a plain, case-sensitive substring of the
                              stored line; tags have no spaces, so pick one distinctive
                              word or fragment such as "seed_spread")

A number compares exactly unless a tag covers it: a scoped tag of its kind whose scope is
on its line, else an unscoped tag of its kind (which covers every number of the cell). If
several scoped tags of one kind match a line, the smallest applies (test_nbval_tolerance
rejects such overlaps anyway). So labels, hyper-parameters, step sizes, digit classes and
dataset counts stay exact: scope the tolerances to the lines that print measured values.
A scope covers every number of a line, so a cell prints what must stay exact (a digit
class, a best step size) on a line of its own, apart from the measured number.
A tolerance is stated in its number's own unit: a line that prints percentage points gets
a tolerance in points.

A change of sign is a mismatch even within tolerance: +0.05 against -0.01 fails. Zero has
no sign: 0.00 against -0.00, or a stored 0.000 against a computed -0.001 within tolerance,
pass (a value that rounds to zero is a tie either way, so it cannot carry a direction).

Margins. Every tolerance-tagged cell also declares the smallest margin of a conclusion that
the prose draws from its numbers, in the same unit and with the same kind of scope:

    margin=0.04@gain          the conclusion would become false if a number on a line
                              containing "gain" moved by more than 0.04
    margin=3                  unscoped: bounds every number of the cell
    margin=none               the prose draws no conclusion from the cell's numbers

A margin is the smallest slack, over the conclusions drawn from the cell, with one printed
number moving and the others held: "gain 0.44 > twice the spread 0.38" has a margin of
0.06 on both lines. A conclusion is also asserted in the cell, on the computed values.

tests/test_nbval_tolerance.py fails when a tolerance-tagged cell has no margin tag, when a
tag's scope is on no line of the stored output, or when the tolerance that applies to a
number (abs + rel * |value|, or count) is wider than a margin whose scope is on its line.
The cell's code asserts the conclusion itself, with that margin, so that the claim is
checked again on the reader's hardware.

Everything else in the output (the words, the layout, the number of numbers) must be
equal, as in plain nbval, after runs of spaces are collapsed (a number that gains a digit
shifts the padding around it). A number outside its tolerance fails the cell with a list
of the offending numbers, followed by nbval's usual diff. Cells without tol tags are
compared by nbval unchanged. Figures are never compared (nbval skips image/png).

The tolerances are measured, not guessed: see "How the tolerances were found" in
CONTRIBUTING.md and dev/isa_spread.py.
"""

import copy
import re
from dataclasses import dataclass

from nbval.plugin import IPyNbCell

TAG = re.compile(r"^tol-(abs|rel|count)=([0-9.eE+-]+)(?:@(\S+))?$")
MARGIN = re.compile(r"^margin=(?:(none)|([0-9.eE+-]+)(?:@(\S+))?)$")
# A number not glued to a word or to a preceding dot, with its sign if it has one:
# 0.9660, -1.5e-03, +0.44, 49,920, 342, 97.8.
NUMBER = re.compile(
    r"(?<![\w.])[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
)
SPACES = re.compile(r"[ \t]+")


@dataclass(frozen=True)
class Rule:
    """One tag: kind is 'abs', 'rel', 'count' or 'margin'; value is None for margin=none;
    scope is None for a tag that covers the whole cell."""

    kind: str
    value: float | None
    scope: str | None = None

    def applies_to(self, line: str) -> bool:
        return self.scope is None or self.scope in line

    def __str__(self):
        name = "margin" if self.kind == "margin" else f"tol-{self.kind}"
        shown = "none" if self.value is None else f"{self.value:g}"
        return f"{name}={shown}" + (f"@{self.scope}" if self.scope else "")


def _tags(cell) -> list[str]:
    return cell.get("metadata", {}).get("tags", [])


def tolerance_of(cell) -> list[Rule] | None:
    """The cell's tolerance rules (tol-* tags), or None when it declares none."""
    found = []
    for tag in _tags(cell):
        match = TAG.match(tag)
        if match:
            found.append(Rule(match.group(1), float(match.group(2)), match.group(3)))
    return found or None


def margins_of(cell) -> list[Rule]:
    """The cell's margin rules; margin=none is Rule('margin', None)."""
    found = []
    for tag in _tags(cell):
        match = MARGIN.match(tag)
        if match:
            value = None if match.group(1) else float(match.group(2))
            found.append(Rule("margin", value, match.group(3)))
    return found


def as_rules(tolerance) -> list[Rule]:
    """Rules from a list of rules or from an unscoped {'abs': .., 'rel': .., 'count': ..}."""
    if isinstance(tolerance, dict):
        return [Rule(kind, float(amount)) for kind, amount in tolerance.items() if amount]
    return list(tolerance or [])


def amount(rules: list[Rule], kind: str, line: str) -> float:
    """The tolerance of one kind for the numbers on a line: the smallest scoped rule whose
    scope is on the line, else the smallest unscoped one, else 0."""
    scoped = [r.value for r in rules if r.kind == kind and r.scope and r.scope in line]
    if scoped:
        return min(scoped)
    unscoped = [r.value for r in rules if r.kind == kind and r.scope is None]
    return min(unscoped) if unscoped else 0.0


def allowed(rules: list[Rule], line: str, written: str, whole: bool) -> float:
    """How far the number `written` (stored), on the stored `line`, may move."""
    if whole:
        return amount(rules, "count", line)
    return amount(rules, "abs", line) + amount(rules, "rel", line) * abs(value(written))


def split_numbers(text: str) -> tuple[str, list[str]]:
    """The text with every number replaced by a placeholder (spaces collapsed), and the
    numbers as written."""
    numbers = NUMBER.findall(text)
    skeleton = SPACES.sub(" ", NUMBER.sub("\x00", text))
    return skeleton, numbers


def is_whole(written: str) -> bool:
    return not any(mark in written for mark in ".eE")


def value(written: str) -> float:
    return float(written.replace(",", ""))


def sign(number: float) -> int:
    return (number > 0) - (number < 0)


def numbers_by_line(text: str) -> list[tuple[str, str]]:
    """(stored line, number as written) for every number of the text, in order."""
    return [(line, number) for line in text.split("\n") for number in NUMBER.findall(line)]


def number_problems(stored: str, computed: str, tolerance) -> list[str] | None:
    """None when the two texts differ in more than numbers (nbval's diff says how);
    otherwise the numbers outside their tolerance or with a changed sign, described
    (empty: all fine). `tolerance` is a list of Rule or an unscoped dict."""
    rules = as_rules(tolerance)
    stored_skeleton, stored_numbers = split_numbers(stored)
    computed_skeleton, computed_numbers = split_numbers(computed)
    if stored_skeleton != computed_skeleton or len(stored_numbers) != len(computed_numbers):
        return None
    # Newlines are not collapsed, so the two texts have the same lines: number i of the
    # computed text sits on the line of number i of the stored text.
    located = numbers_by_line(stored)
    problems = []
    for index, ((line, old), new) in enumerate(zip(located, computed_numbers, strict=True)):
        if old == new:
            continue
        whole = is_whole(old) and is_whole(new)
        limit = allowed(rules, line, old, whole)
        gap = abs(value(new) - value(old))
        kind = "whole number" if whole else "number"
        where = f"(stored line: {line.strip()!r})"
        if sign(value(old)) * sign(value(new)) < 0:
            problems.append(f"{kind} #{index + 1}: stored {old}, computed {new}, changes "
                            f"sign   {where}")
        elif gap > limit + 1e-12:
            problems.append(f"{kind} #{index + 1}: stored {old}, computed {new}, differs by "
                            f"{gap:.4g} > tolerance {limit:.4g}   {where}")
    return problems


def stored_texts(cell) -> list[str]:
    """The texts of a cell's outputs that nbval compares: each stream (joined by name, as
    a stream may arrive in pieces) and each text/plain or text/html result."""
    streams, found = {}, []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream":
            text = output.get("text", "")
            text = text if isinstance(text, str) else "".join(text)
            streams[output["name"]] = streams.get(output["name"], "") + text
        for mime in ("text/plain", "text/html"):
            data = output.get("data", {}).get(mime)
            if data is not None:
                found.append(data if isinstance(data, str) else "".join(data))
    return [*streams.values(), *found]


def margin_problems(cell) -> list[str]:
    """What is wrong with a tolerance-tagged cell's margins (empty: nothing): no margin
    tag, margin=none beside a numeric margin, a tag whose scope is on no stored line with a
    number, or a number whose tolerance is wider than a margin whose scope is on its line."""
    rules = tolerance_of(cell)
    if not rules:
        return []
    margins = margins_of(cell)
    if not margins:
        return ["tolerance-tagged cell without a margin tag (margin=X[@scope] or "
                "margin=none)"]
    problems = []
    numeric = [m for m in margins if m.value is not None]
    if len(numeric) != len(margins) and numeric:
        problems.append("margin=none beside a numeric margin")
    located = [pair for text in stored_texts(cell) for pair in numbers_by_line(text)]
    for rule in rules + numeric:
        if rule.scope and not any(rule.scope in line for line, _ in located):
            problems.append(f"{rule}: no stored line with a number contains {rule.scope!r}")
    for kind in ("abs", "rel", "count"):
        scopes = [r.scope for r in rules if r.kind == kind and r.scope]
        for line, _ in located:
            matching = [s for s in scopes if s in line]
            if len({r.value for r in rules if r.kind == kind and r.scope in matching}) > 1:
                problems.append(f"tol-{kind} tags {matching} overlap on line {line.strip()!r}")
    for line, written in located:
        limit = allowed(rules, line, written, is_whole(written))
        for margin in numeric:
            if margin.applies_to(line) and limit > margin.value + 1e-12:
                problems.append(f"{written} on {line.strip()!r}: tolerance {limit:.4g} is "
                                f"wider than {margin}")
    return sorted(set(problems), key=problems.index)


_plain_compare = IPyNbCell.compare_outputs


def _text_pairs(test_output, ref_output):
    """(computed container, key, stored text) for every string field nbval compares in a
    pair of outputs, the computed one to be edited in place."""
    for key, field in test_output.items():
        if key == "data":
            for mime, data in field.items():
                stored = ref_output.get("data", {}).get(mime)
                if isinstance(data, str) and isinstance(stored, str):
                    yield field, mime, stored
        elif isinstance(field, str) and key not in ("output_type", "name"):
            if isinstance(ref_output.get(key), str):
                yield test_output, key, ref_output[key]


def compare_outputs(self, test, ref, skip_compare=None):
    rules = tolerance_of(self.cell)
    if rules is None:
        return _plain_compare(self, test, ref, skip_compare)
    if _plain_compare(self, test, ref, skip_compare):
        return True
    # Replace each computed text whose numbers are all within their tolerances by the
    # stored text, then let nbval compare what is left (so any other difference is still a
    # diff).
    adjusted = copy.deepcopy(test)
    problems = []
    if len(adjusted) == len(ref):
        for test_output, ref_output in zip(adjusted, ref, strict=True):
            for container, key, stored in list(_text_pairs(test_output, ref_output)):
                found = number_problems(self.sanitize(stored), self.sanitize(container[key]),
                                        rules)
                if found == []:
                    container[key] = stored
                elif found:
                    problems.extend(found)
    if not problems and _plain_compare(self, adjusted, ref, skip_compare):
        return True
    if not problems:  # differs in more than numbers: nbval's diff of the original output
        _plain_compare(self, test, ref, skip_compare)
        return False
    declared = ", ".join(str(rule) for rule in rules)
    self.comparison_traceback = [
        f"numbers outside their tolerance or with a changed sign ({declared}):",
        *(f"  {problem}" for problem in problems),
    ]
    traceback = self.comparison_traceback
    _plain_compare(self, test, ref, skip_compare)
    self.comparison_traceback = traceback + self.comparison_traceback
    return False


IPyNbCell.compare_outputs = compare_outputs
