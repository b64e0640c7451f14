"""Keep the prose honest: a number quoted in a chapter's text must come from the output it
describes, bound to it, not merely found somewhere in the chapter.

    python3 dev/prose_numbers.py [NOTEBOOK ...]        check (default: notebooks/*.ipynb;
                                                       zh/notebooks/X.ipynb: the twin)
    python3 dev/prose_numbers.py --bind [NOTEBOOK ...]     (re)write the bindings
    python3 dev/prose_numbers.py --rewrite [NOTEBOOK ...]  numbers from the bound outputs
    python3 dev/prose_numbers.py --heuristic [NOTEBOOK ...]  rules 1-5 alone

The workflow. An author who edits a chapter's prose (either edition) runs `--bind` on the
English notebook, which rebinds it and its Chinese twin, and reviews the diff of
tests/prose_bindings.json: each changed line is a number whose source, label or direction
words changed, and should be one the author meant to change. After a chapter is
re-executed, `--rewrite` on it writes each bound number of both editions as its bound
output now reads, rounded as the prose rounds it (a spelled-out number or a bound such as
"more than 3 s" it lists for a person to rewrite; the Chinese cells' translation stamps
follow when they were current), then the check shows what still needs a person: a
conclusion the new numbers no longer support is not something a tool can rewrite.
`--bind` is deterministic (the same tree gives the same file) and takes seconds.

The check prints, per chapter, each measured number of the markdown prose that disagrees
with its binding (rule 6), or has none and fails rules 1-4 and is not on the allow-list
(rule 5), with its cell id, the sentence and the reason, and exits 1 if there is any. Plain
python3 (json and re only); tests/test_prose_numbers.py runs it on every chapter, English
and Chinese (the same digits and units, a few Chinese units, label and direction words).
Rules 1-5 are the heuristic that proposes the bindings.

1. What is checked. Only markdown cells. Fenced code, math, HTML, URLs and link targets
   are removed; a code span (`...`) is kept as a label (`jax.jit`) with its free-standing
   digits masked, so `lr = 0.5` is not a number. Checked are:
   - a decimal (3.5, 0.053), whatever follows it;
   - any number followed by %, a ratio sign (1.75x, 2 ×, "2.17 times", an integer with
     "times" only before faster/slower/more/... or "as"; "3 times" alone is a count), or a
     unit: time (ms, s, seconds, minutes, ...), size (MB, GiB, bytes, ...), speed (GFLOP/s,
     GB/s, examples/s, ...), count (epochs, steps, rounds, runs: "in all 7 rounds") or
     percentage points;
   - spelled-out numbers that carry a comparison or a unit: a fraction followed by "of"
     ("a tenth of", "four fifths of"), "N-fold"/"sixfold", "twice"/"half"/"ten times" before
     a comparative ("twice as fast", "ten times shorter"), "three seconds", "ten steps";
     in Chinese X分之Y (五分之四) and N倍.
   - an integer of at least 100 without a unit, a result ("12,940 device operations",
     "against 490") or a setting ("batches of 500", "10,000 images"), unless it is a year,
     an exit status, a port, an issue number or a part of a shape (`measured_integer`);
     it must match exactly, so "below 964 tokens" is not a bound.
     Chinese rates with their unit around the number (每秒 32,349 个词元) read as tokens/s
     or examples/s.
   Not checked: other integers without a unit ("three seeds", "8 devices", "chapter 7",
   "101 points", years, "784-512-512-10"), scientific notation
   (hyper-parameters), versions (a bare number after Python/JAX/torch/... -- "JAX 0.12",
   not "torch 2.97 ms" or "JAX 1.3x faster"
   --, after "version", ">=", or with two dots; Chinese "0.7 版"), numbers inside words
   (v5e, bfloat16, x86_64).
2. Where it must be found: the scope of a paragraph is its "##" section (from the "##"
   heading above it to the next "##" or "#" heading, "###" subsections included: a
   subsection often recalls a figure of the one before), plus, for the text that opens a
   markdown cell, the code cells right before that cell. Text under the "#" title only
   (the chapter's introduction), and a section without a code cell of its own (the
   summary), may quote the whole chapter. A number is found in the stored outputs of the
   scope's code cells (stream text, text/plain, text/html, text/markdown, errors;
   `# NBVAL_IGNORE_OUTPUT` cells included), rounded as the prose rounds it (within half a
   unit of its last digit; a spelled fraction n/d within a quarter of its value and
   1/(2d)); a bound ("more than a hundred times", "well under 1 %") by a number past it,
   printed with its unit. Or it is in the code: any literal of the scope's code, or a
   constant (NAME = 0.01, n_epochs=8, "rounds": 15) anywhere in the chapter; a hyper-parameter or a
   count such as "200 steps" needs no output.
3. With its unit: an output number's unit is the one written right after it ("3.34 ms",
   "1.500 epochs", "98%", "1.39x"), else a unit named elsewhere on its line or in its table's
   header line ("seconds to 98%: 3.45, 2.56", "fast step alone (ms): 9.64"; "s", "min",
   "steps" name a unit there only in parentheses). A prose time needs an output time
   (converted: 350 ms = 0.35 s); a size or speed the same unit; a percentage an output
   percentage or a printed fraction (0.9835 -> 98.35%; a whole number is a count); a ratio
   an "x" or a printed non-integer ("ten times" is not the 10 of a shape); percentage
   points "points" on the line; epochs/steps a bare number or the same unit; a bare decimal
   any number. From the code, a time, size, speed or ratio only with the same unit written
   after it (a comment saying "256 MB"; a constant named timeout/seconds is in seconds);
   a fraction also as its reciprocal ("a third of an epoch": CHUNKS_PER_EPOCH = 3).
4. With its label, so that swapped figures and a ratio quoted for the wrong comparison
   fail. The label of a prose number is the nearest word of its sentence, with no other
   number in between and at most MAX_GAP letters of other words (2 per punctuation mark),
   that tells apart the lines of the output cell(s) that printed the value: a word on some,
   not all, of that cell's numbers of a compatible unit (`torch.compile`, "mean", "peak",
   "throughput"; not "step" when every timing line says "per step"). Words after "per"
   (the unit) or "than" (the reference) are not labels; "average" reads as "mean" (平均
   too), "training" as "train". The output line that holds the value must carry the label,
   on each side of the number where there is one: every word of a line labels every number
   on it, except a statistic's name (mean, min, max, median, best, worst, total), which
   labels only the number right after it; the header line of a table (a first line without
   decimals) labels all of its rows. So "98.38% on average", one seed's accuracy, fails,
   "torch.compile took 2.97 ms" fails where 2.97 ms is printed on jax.jit's line, and
   "0.99 of the square-matmul peak" fails where 0.99 is printed as "step throughput /
   matmuls-alone throughput".
5. The allow-list, tests/prose_numbers_allowed.json, maps a notebook file name to
   {"<number as written, with its unit, one space: '96.7%', '16 GiB', 'a tenth'>": "<why
   it is a fact and not this run's measurement>"}; an entry also allows the same value
   and unit written otherwise ("24 hours" allows the Chinese "24 小时"). Facts only (cited
   figures, hardware specs, arithmetic on the data set); a number from another run is what
   this reports.
6. Bindings, tests/prose_bindings.json: {notebook: {"en"|"zh": {markdown cell id: [one
   entry per measured number of the cell, in order]}}}. An entry says where the number's
   value is: "at" {code cell id, output index, line index, the line's text with its numbers
   masked (#), the number's index on the line} (or, for a code literal, the masked code
   line), or "allowed" (the allow-list key), or "unbound" (why: the check fails). `--bind`
   takes the best source that rules 2-4 accept (the most label words of the number's stretch
   of sentence on the line; a number printed with that value before an allowed fact, before
   a code literal, before a number merely past a bound), and only where it is the one value
   that fits, for every number of a sentence (a count of epochs or steps, a setting, is
   exempt). Where printed values of different values tie (the same label words), the
   number is a setting if a literal of the code has it, a fact if the allow-list has it, and
   is otherwise refused: an entry "ambiguous" lists the candidates (their locators), and the
   check fails until a person names the source with a pin (the candidate's locator as "at",
   and "pin": the reason) or rewords the prose so that a label word names it. A number is
   refused as well ("unbound": "mislabelled ...") when the words beside it (nearer to it than
   to the numbers before and after it, not after "than") name other lines of the bound
   cell's output and not its own: the figure of a neighbouring row, the right figure beside
   the wrong label. A Chinese number bound through the English entry is held to the same
   test with its own words. A pin, a person's choice with its reason, is kept by every
   fresh bind for the same number written the same way in the same cell. The entry
   also records "labels", the words of the number's stretch of sentence (from the measured
   number before it to the one after it) that the bound cell prints, and "direction", the
   direction words of that stretch (faster/slower, above/below, more/fewer, beats/trails,
   not, ...; 更快/更慢, 高于/低于, 领先/落后, 不, ...). The check pairs a cell's numbers
   with its entries by order (if their counts differ, which fails by itself, by their
   units, to say which numbers are new), finds the bound
   number (the recorded line, else the same masked line nearest to it), and fails when
   - the prose no longer reads it, rounded as written (in the prose's unit, or as printed;
     a bound "more than X" is met by a number at or past X): two figures swapped, one
     replaced by another of the same output, a re-run's new value not yet rewritten;
   - a label or direction word of its stretch changed ("eager" for "jit", "faster" for
     "slower", a "not" added): the number now claims something else;
   - the binding points nowhere (the cell or its line is gone), or the number has none;
   - a comparison between two bound numbers of one sentence, next to each other and of one
     unit, says the other order than their bound values: "A ... faster/slower/more/less/
     higher/lower/above/below ... than B", "slower: A against B" (更慢：A 对 B), "falls/
     rises from A to B" (times: faster is smaller; speeds: larger);
   - the ratio next to such a pair ("1.45x the time: 2.63 ms against 1.82 ms") is not
     their ratio, either way round, within 10 % (a median of ratios is not the ratio of the
     medians); or a ratio said to be "N× faster/more/... than" is bound to a value below 1.
     These fire only where both sides are bound numbers of the sentence (conservative: no
     grammar is parsed), on every check, not only at binding.
   The Chinese twin's numbers are bound to the English cell's entry with the same value
   (a fraction 五分之一 also to a ratio 5x), so both editions read the same records; the
   Chinese prose is checked against the English notebook's code cells.

The code, beside this file in dev/ (this file is the command line, and re-exports every
name of the five, so that `prose_numbers.bind`, `prose_numbers._text` and the rest still
resolve for the tests and tools that import it):
- prose_read.py: reading a chapter: its prose, the numbers of the prose, outputs and code,
  the label and direction words (rule 1, and what rules 2-4 read);
- prose_match.py: the heuristic (rules 2-5): matching, labels, each number's verdict;
- prose_bind.py: the bindings (rule 6): choosing, recording and locating a number's source;
- prose_check.py: the check against the bindings, and the heuristic check alone;
- prose_rewrite.py: `--rewrite`.
"""

# ruff: noqa: F401, I001  (every name of the modules above, re-exported)
import sys
from pathlib import Path

from prose_bind import (
    _allowed_key, bind, bind_notebook, BINDINGS_PATH, _by_cell, _context, COUNTS, dump_bindings,
    exact, load_bindings, locate, locator, _mask, mislabelled, _nearest, own_words, rivals,
    _same_number, scale_of, SCALES, sources, vocabulary,
)
from prose_check import (
    agrees, ambiguous_why, bound_value, check, check_notebook, claims, FALLS, _family, FAST,
    _faster_is_smaller, A_TO_B, FROM_TO, GREATER, heuristic_check, order_offenders, _pairs,
    RATIO_SLACK,
    report, RISES, SLOW, SMALLER, stale, unused_allowed, VERSUS, ZH_SENSE, ABOVE, NAMED,
    NEGATED, PREPOSITION, ROW_KEY, wrong_row, ZH_BI, ZH_BI_AFTER, ZH_KEY,
)
from prose_match import (
    ALLOWED_PATH, ANY_NUMBER, BOUNDS, comparable_values, _gap, is_allowed, label_of,
    load_allowed, matches, MAX_GAP, prose_numbers, verdict,
)
from prose_read import (
    ALL_UNITS, AMBIGUOUS_UNITS, blocks, canonical, cell_numbers, _cjk, CJK_DIGITS, CJK_LABELS,
    CJK_SPELLED, CJK_UNITS, CODE_SPAN, _code_span_as_label, COMPARATIVE, context_words,
    COUNT_UNITS, _decimals, direction_words, DIRECTIONS, edition_of, EN_DIRECTION, FENCE,
    _fraction_tolerance, _half_unit, HEADING, HTML, label_words, LIBRARY_BEFORE, _line_numbers,
    LINK_TARGET, _LIST_OF_NUMBERS, _named_units,
    MATH, measured_integer, measurements, MYST_TARGET, normalize, NOT_A_RESULT_AFTER,
    NOT_A_RESULT_BEFORE, NOTEBOOK_DIR, NUM, ORDINAL, _ORDINAL,
    OTHER_UNITS, OUT_TOKEN, _output_text, prose, prose_map, RANGE_JOIN, records, region, ROOT,
    SECONDS, SECTION_LEVEL, SENTENCE_END, sentence_of, SMALL, _SMALL, SPACE, SPELLED, _spelled,
    STATISTICS, STOPWORDS, STRICT_COMPARATIVE, _sub_tracked, SUFFIX, SYNONYMS, _text,
    text_numbers, TIME_NAME, TIME_UNITS, TOKEN, twin_path, UNDERSCORED, UNIT, _unit_of_suffix,
    UNIT_WORDS,
    UNITS, URL, _value, VERSION_AFTER, VERSION_BEFORE, _with_parts, WORD, ZH_DIRECTION,
    ZH_DIRECTIONS, ZH_LABEL, ZH_LABELS, ZH_NOTEBOOK_DIR, ZH_RATE_AFTER, ZH_RATE_BEFORE,
)
from prose_rewrite import _format, LARGEST_CHANGE, rewrite, rewrite_notebook


def main(argv: list[str]) -> int:
    mode = argv[0] if argv and argv[0] in ("--bind", "--rewrite", "--heuristic") else None
    args = argv[1:] if mode else argv
    paths = [Path(arg) for arg in args] or sorted(NOTEBOOK_DIR.glob("*.ipynb"))
    if mode == "--bind":
        bind(paths)
        print(f"bound the prose numbers of {len(paths)} chapter(s) in {BINDINGS_PATH}")
        return 0
    if mode == "--rewrite":
        for note in rewrite(paths):
            print(note)
        return 0
    allowed, bindings = load_allowed(), load_bindings()
    failed = False
    for path in paths:
        offenders = (heuristic_check(path, allowed) if mode == "--heuristic"
                     else check(path, allowed, bindings))
        if offenders:
            failed = True
            print(report(f"{edition_of(path)}/{path.name}", offenders))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
