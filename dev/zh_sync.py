"""Keep the Chinese edition's notebooks (zh/notebooks) in step with the English ones.

The Chinese notebook of a chapter is the English notebook with its markdown cells
translated. Code cells are the English code (full-line and trailing comments may be
translated) and carry the English stored outputs, so nbval on the English notebook
verifies both editions. Cells are paired by their nbformat cell id.

    python dev/zh_sync.py            rewrite every zh notebook from its English twin
    python dev/zh_sync.py NB ...     rewrite only these (file names or paths)
    python dev/zh_sync.py --check    only report drift; exit 1 if there is any
    python dev/zh_sync.py --init NB  create zh/notebooks/NB from the English one
                                     (markdown still English, to be translated)

What a sync does, cell by cell, in the English order:
- code cell: the English cell (source, outputs, execution count, metadata). The Chinese
  source is kept only if it is the same code once comments are removed and its
  `# NBVAL_...` markers are the same. A multi-line string literal that holds a Python
  script (chapter 17 writes its training script from one) counts as code too, with the
  script's own comments as comments: the two literals must be alike (prefix and quotes),
  and their scripts the same line for line once each line's comment is cut off (a `#`
  inside one of the script's strings is no comment). A string whose text does not parse
  as Python is compared exactly.
- markdown cell: the Chinese cell with the same id, if there is one. Its metadata
  `zh.translated_from` records a hash of the English text it translates, so a changed
  English paragraph shows up as a stale translation.

--check (used by tests/test_zh.py) reports: a code cell whose code or outputs differ from
the English cell, a missing or extra cell, a markdown cell with no Chinese text, and a
translation whose English source has changed since it was written.
"""

import argparse
import ast
import copy
import hashlib
import io
import json
import re
import sys
import tokenize
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EN_DIR = ROOT / "notebooks"
ZH_DIR = ROOT / "zh" / "notebooks"
CJK = re.compile(r"[\u4e00-\u9fff]")
MARKER = re.compile(r"#\s*(NBVAL_\w+|noqa\b.*)")


def source_text(cell):
    src = cell.get("source", "")
    return "".join(src) if isinstance(src, list) else src


def english_hash(cell):
    return hashlib.sha1(source_text(cell).encode()).hexdigest()[:12]


def script_comments(script):
    """The comments of a Python script, as (line number from 0, column, text); None if the
    script does not parse (then it is no script, and its `#` lines are plain text)."""
    try:
        with warnings.catch_warnings():  # an invalid escape in the script: no concern here
            warnings.simplefilter("ignore")
            ast.parse(script)
        tokens = list(tokenize.generate_tokens(io.StringIO(script).readline))
    except (tokenize.TokenError, SyntaxError, ValueError, RecursionError):
        return None
    return [(tok.start[0] - 1, tok.start[1], tok.string)
            for tok in tokens if tok.type == tokenize.COMMENT]


def script_of(token):
    """The script a multi-line string literal holds (its value), or None if it is no str."""
    if "\n" not in token:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            value = ast.literal_eval(token)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, str) else None


def without_comments(script):
    """A script's lines with each comment cut off (and the blanks before it); None if the
    script does not parse."""
    found = script_comments(script)
    if found is None:
        return None
    lines = script.split("\n")
    for row, column, _ in found:
        lines[row] = lines[row][:column].rstrip()
    return lines


def string_key(token):
    """A string token for comparison: a script held in a multi-line literal compares by its
    lines without comments (and the literal's prefix and quotes); any other string exactly."""
    script = script_of(token)
    code = None if script is None else without_comments(script)
    if code is None:
        return token
    prefix = re.match(r"[A-Za-z]*(\"\"\"|'''|\"|')", token).group(0)
    return ("script", prefix, tuple(code))


def code_tokens(code):
    """The code's tokens without comments and layout-only tokens, for comparison."""
    # IPython magics and shell escapes are not Python; compare those lines verbatim.
    lines = []
    for line in code.splitlines():
        stripped = line.lstrip()
        lines.append(f"__magic__({stripped!r})" if stripped[:1] in ("%", "!") else line)
    try:
        tokens = tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline)
        return [
            (tok.type, string_key(tok.string) if tok.type == tokenize.STRING else tok.string)
            for tok in tokens
            if tok.type not in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING)
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return [(None, line.split("#")[0].rstrip()) for line in lines]


def markers(code):
    return [m.group(0).strip() for m in MARKER.finditer(code)]


def same_code(en_code, zh_code):
    return code_tokens(en_code) == code_tokens(zh_code) and markers(en_code) == markers(zh_code)


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def dump(notebook):
    return json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"


def synced(en_nb, zh_nb):
    """The Chinese notebook rebuilt on the English one, and a list of problems found."""
    problems = []
    zh_cells = {cell.get("id"): cell for cell in zh_nb["cells"]}
    en_ids = [cell.get("id") for cell in en_nb["cells"]]
    for extra in [i for i in zh_cells if i not in en_ids]:
        problems.append(f"cell {extra}: in the Chinese notebook only")
    out = copy.deepcopy(en_nb)
    out["cells"] = []
    for en_cell in en_nb["cells"]:
        cell_id = en_cell.get("id")
        zh_cell = zh_cells.get(cell_id)
        new = copy.deepcopy(en_cell)
        if zh_cell is None or zh_cell.get("cell_type") != en_cell["cell_type"]:
            problems.append(f"cell {cell_id}: no Chinese twin of this {en_cell['cell_type']} cell")
        elif en_cell["cell_type"] == "code":
            if same_code(source_text(en_cell), source_text(zh_cell)):
                new["source"] = zh_cell["source"]
            else:
                problems.append(f"cell {cell_id}: the code differs from the English cell")
            for key in ("outputs", "execution_count", "metadata"):
                if zh_cell.get(key) != en_cell.get(key):
                    problems.append(f"cell {cell_id}: its {key} differ from the English cell")
        else:
            new["source"] = zh_cell["source"]
            new["metadata"] = copy.deepcopy(zh_cell.get("metadata", {}))
            if not CJK.search(source_text(zh_cell)):
                problems.append(f"cell {cell_id}: markdown not translated")
            elif new["metadata"].get("zh", {}).get("translated_from") != english_hash(en_cell):
                problems.append(f"cell {cell_id}: the English text changed since translation")
        out["cells"].append(new)
    if zh_nb.get("metadata") != en_nb.get("metadata"):
        problems.append("notebook metadata differ from the English notebook")
    return out, problems


def stamp(zh_nb, en_nb):
    """Mark every translated markdown cell as translating the current English text."""
    en_cells = {cell.get("id"): cell for cell in en_nb["cells"]}
    for cell in zh_nb["cells"]:
        en_cell = en_cells.get(cell.get("id"))
        if cell["cell_type"] == "markdown" and en_cell and CJK.search(source_text(cell)):
            cell.setdefault("metadata", {}).setdefault("zh", {})
            cell["metadata"]["zh"]["translated_from"] = english_hash(en_cell)


def check_all():
    problems = {}
    for en_path in sorted(EN_DIR.glob("*.ipynb")):
        zh_path = ZH_DIR / en_path.name
        if not zh_path.exists():
            problems[en_path.name] = ["no Chinese notebook"]
            continue
        _, found = synced(load(en_path), load(zh_path))
        if found:
            problems[en_path.name] = found
    for zh_path in sorted(ZH_DIR.glob("*.ipynb")):
        if not (EN_DIR / zh_path.name).exists():
            problems[zh_path.name] = ["no English notebook of this name"]
    return problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--init", metavar="NOTEBOOK")
    parser.add_argument(
        "--stamp", metavar="NOTEBOOK",
        help="record that the Chinese markdown of NOTEBOOK translates the current English",
    )
    parser.add_argument("notebooks", nargs="*", help="only these chapters (plain sync)")
    args = parser.parse_args()
    if args.init:
        name = Path(args.init).name
        target = ZH_DIR / name
        if target.exists():
            sys.exit(f"{target.relative_to(ROOT)} exists already")
        ZH_DIR.mkdir(parents=True, exist_ok=True)
        target.write_text(dump(load(EN_DIR / name)), encoding="utf-8")
        print(f"created {target.relative_to(ROOT)}")
        return
    if args.stamp:
        name = Path(args.stamp).name
        en_nb, zh_path = load(EN_DIR / name), ZH_DIR / name
        zh_nb = load(zh_path)
        stamp(zh_nb, en_nb)
        zh_path.write_text(dump(zh_nb), encoding="utf-8")
        return
    if args.check:
        problems = check_all()
        for name, found in problems.items():
            print(f"{name}:")
            for line in found:
                print(f"  {line}")
        sys.exit(1 if problems else 0)
    only = {Path(name).name for name in args.notebooks}
    for en_path in sorted(EN_DIR.glob("*.ipynb")):
        zh_path = ZH_DIR / en_path.name
        if not zh_path.exists() or (only and en_path.name not in only):
            continue
        new, found = synced(load(en_path), load(zh_path))
        zh_path.write_text(dump(new), encoding="utf-8")
        for line in found:
            print(f"{en_path.name}: {line}")


if __name__ == "__main__":
    main()
