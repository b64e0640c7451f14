"""nbval with a declared tolerance for numbers that depend on floating-point order.

nbval compares every output to the letter. That is right for shapes, dtypes, error
messages and small exact computations, and wrong for the numbers that come out of many
floating-point steps (a loss after training, an accuracy, a count of misclassified
images): XLA compiles different code for different CPUs (it depends on the instruction
set: SSE4.2, AVX, AVX2, AVX-512), the rounding differs, and a long training run ends a
few digits elsewhere. Such a cell declares how far its numbers may move, with tags:

    tol-abs=0.003   a number with a fractional part or an exponent may differ by 0.003
    tol-rel=0.01    ... or by 1% of the stored value (the two add up, as in numpy.isclose)
    tol-count=25    a whole number (digits only, thousands separators allowed) may
                    differ by 25; without this tag whole numbers are compared exactly

Everything else in the output (the words, the layout, the number of numbers) must be
equal, as in plain nbval, after runs of spaces are collapsed (a number that gains a digit
shifts the padding around it). A number outside its tolerance fails the cell with a list
of the offending numbers, followed by nbval's usual diff. Cells without these tags are
compared by nbval unchanged. Figures are never compared (nbval skips image/png).

The tolerances are measured, not guessed: see "How the tolerances were found" in the
README and tools/isa_spread.py.
"""

import copy
import re

from nbval.plugin import IPyNbCell

TAG = re.compile(r"^tol-(abs|rel|count)=([0-9.eE+-]+)$")
# A number not glued to a word or to a preceding dot: 0.9660, -1.5e-03, 49,920, 342, 97.8.
NUMBER = re.compile(
    r"(?<![\w.])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])"
)
SPACES = re.compile(r"[ \t]+")


def tolerance_of(cell) -> dict | None:
    """The cell's {'abs': ..., 'rel': ..., 'count': ...} from its tags, or None."""
    found = {}
    for tag in cell.get("metadata", {}).get("tags", []):
        match = TAG.match(tag)
        if match:
            found[match.group(1)] = float(match.group(2))
    if not found:
        return None
    return {"abs": 0.0, "rel": 0.0, "count": 0.0, **found}


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


def number_problems(stored: str, computed: str, tolerance: dict) -> list[str] | None:
    """None when the two texts differ in more than numbers (nbval's diff says how);
    otherwise the numbers outside the tolerance, described (empty: all within)."""
    stored_skeleton, stored_numbers = split_numbers(stored)
    computed_skeleton, computed_numbers = split_numbers(computed)
    if stored_skeleton != computed_skeleton or len(stored_numbers) != len(computed_numbers):
        return None
    problems = []
    lines = stored.splitlines() or [""]
    for index, (old, new) in enumerate(zip(stored_numbers, computed_numbers, strict=True)):
        if old == new:
            continue
        whole = is_whole(old) and is_whole(new)
        allowed = (
            tolerance["count"] if whole
            else tolerance["abs"] + tolerance["rel"] * abs(value(old))
        )
        gap = abs(value(new) - value(old))
        if gap > allowed + 1e-12:
            line = next((line for line in lines if old in line), "").strip()
            kind = "whole number" if whole else "number"
            problems.append(
                f"{kind} #{index + 1}: stored {old}, computed {new}, differs by {gap:.4g} "
                f"> tolerance {allowed:.4g}   (stored line: {line!r})"
            )
    return problems


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


_plain_compare = IPyNbCell.compare_outputs


def compare_outputs(self, test, ref, skip_compare=None):
    tolerance = tolerance_of(self.cell)
    if tolerance is None:
        return _plain_compare(self, test, ref, skip_compare)
    if _plain_compare(self, test, ref, skip_compare):
        return True
    # Replace each computed text that is within tolerance of the stored one by the stored
    # text, then let nbval compare what is left (so any other difference is still a diff).
    adjusted = copy.deepcopy(test)
    problems = []
    if len(adjusted) == len(ref):
        for test_output, ref_output in zip(adjusted, ref, strict=True):
            for container, key, stored in list(_text_pairs(test_output, ref_output)):
                found = number_problems(self.sanitize(stored), self.sanitize(container[key]),
                                        tolerance)
                if found == []:
                    container[key] = stored
                elif found:
                    problems.extend(found)
    if not problems and _plain_compare(self, adjusted, ref, skip_compare):
        return True
    if not problems:  # differs in more than numbers: nbval's diff of the original output
        _plain_compare(self, test, ref, skip_compare)
        return False
    declared = ", ".join(f"{k}={v:g}" for k, v in tolerance.items() if v)
    self.comparison_traceback = [
        f"numbers outside the cell's tolerance ({declared}):",
        *(f"  {problem}" for problem in problems),
    ]
    traceback = self.comparison_traceback
    _plain_compare(self, test, ref, skip_compare)
    self.comparison_traceback = traceback + self.comparison_traceback
    return False


IPyNbCell.compare_outputs = compare_outputs
