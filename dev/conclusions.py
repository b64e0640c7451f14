"""The asserted comparisons of the chapters and their margins on each platform (issue 39).

Every assert of a chapter whose test is an ordered comparison (`a < b`, `a >= b`, alone or
joined by `and`; dev/margins.py says exactly which) is a claim with a margin: how far the
measured side is from the threshold, relative to the larger of the two. dev/tpu_run.py
records those margins while it runs a chapter, on a TPU or, with JAX_PLATFORMS=cpu, on a
CPU under any XLA_FLAGS, JAX_NUM_CPU_DEVICES or Python environment. This tool gathers them:

  python3 dev/conclusions.py collect --platform NAME BUNDLE.json [...]
      put the margins of each chapter in the bundles (runs with no error cell, of the
      chapter's current code) into tests/conclusions.json under the platform NAME
  python3 dev/conclusions.py matrix --platform NAME [--python PY] [--env K=V ...] CHAPTERS
      run the chapters with dev/tpu_run.py on this CPU (JAX_PLATFORMS=cpu plus the given
      environment) and collect them under NAME
  python3 dev/conclusions.py report [--thin 0.05]
      the table for CONTRIBUTING.md: per chapter, its platforms, and the comparisons whose
      smallest margin is below --thin

The platforms the book names (see CONTRIBUTING.md): `cpu` (the pinned JAX, this CPU's
instruction set), `cpu-avx` (XLA_FLAGS=--xla_cpu_max_isa=AVX), `cpu-sse4.2`, `colab` (JAX
0.7.2 in .venv-colab), `colab-avx`, `tpu-v5e` (the lent chip; its bundles come from the
device runs), and `cpu-devN` for JAX_NUM_CPU_DEVICES=N.

tests/test_conclusions.py holds the table to the chapters: for a chapter in the table, every
recorded comparison of its current code must have a row, each row must hold on every
platform that reached it (a strict comparison by a positive margin, `<=` and `>=` by at
least zero), and a platform whose run is of older code is reported as stale.
"""

import argparse
import fcntl
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

DEV = Path(__file__).resolve().parent
ROOT = DEV.parent
TABLE = ROOT / "tests" / "conclusions.json"
sys.path.insert(0, str(DEV))
import margins  # noqa: E402
import tpu_record  # noqa: E402

ABOUT = ("Asserted comparisons and their relative margins per platform: dev/conclusions.py, "
         "dev/margins.py, tests/test_conclusions.py (CONTRIBUTING.md, 'Conclusions across "
         "platforms')")


def load(path: Path = TABLE) -> dict:
    if path.exists():
        return json.loads(path.read_text())
    return {"about": ABOUT, "chapters": {}}


def save(table: dict, path: Path = TABLE) -> None:
    path.write_text(json.dumps(table, indent=1, ensure_ascii=False, sort_keys=True) + "\n")


def comparisons(notebook: dict) -> dict:
    """'cell id:number' -> the comparison's text, for every recorded comparison."""
    found = {}
    for cell in notebook["cells"]:
        if cell.get("cell_type") == "code":
            for number, text in enumerate(
                    margins.asserted_comparisons(tpu_record.cell_source(cell))):
                found[f"{cell.get('id')}:{number}"] = text
    return found


def collect(table: dict, platform: str, bundle: dict) -> list[str]:
    """Put the bundle's chapters into the table under `platform`; what was done, per line."""
    said = []
    for name, entry in bundle.get("chapters", {}).items():
        path = ROOT / "notebooks" / name
        notebook = json.loads(path.read_text())
        if entry.get("code_sha256") != tpu_record.code_hash(notebook):
            said.append(f"{name}: skipped, the run is of other code than the chapter's")
            continue
        if entry.get("error_cells") or not entry.get("finished"):
            said.append(f"{name}: skipped, {entry.get('error_cells')} error cell(s)")
            continue
        texts = comparisons(notebook)
        chapter = table["chapters"].setdefault(name, {"platforms": {}, "rows": {}})
        chapter["platforms"][platform] = {
            key: entry.get(key) for key in ("code_sha256", "date", "jax", "jaxlib", "python",
                                            "backend", "device_kind", "device_count")}
        chapter["platforms"][platform]["environment"] = bundle.get("environment", {})
        for row in chapter["rows"].values():  # this platform's old margins go
            row["margins"].pop(platform, None)
        reached = 0
        for cell in entry["cells"]:
            for found in cell.get("margins", []):
                key = f"{cell['id']}:{found['number']}"
                if key not in texts:
                    continue
                row = chapter["rows"].setdefault(key, {"test": texts[key], "margins": {}})
                row["test"] = texts[key]
                row["op"] = found["op"]
                row["margins"][platform] = {k: found[k] for k in ("margin", "left", "right",
                                                                    "runs") if k in found}
                reached += 1
        for key, text in texts.items():  # comparisons no platform has reached yet
            chapter["rows"].setdefault(key, {"test": text, "margins": {}})
        for key in [k for k in chapter["rows"] if k not in texts]:
            del chapter["rows"][key]  # comparisons the chapter no longer has
        said.append(f"{name}: {reached} comparison(s) reached of {len(texts)}, as {platform}")
    return said


def holds(op: str, margin: float) -> bool:
    return margin > 0 if op in ("<", ">") else margin >= 0


def thinnest_platform(row: dict) -> str:
    return min(row["margins"], key=lambda platform: row["margins"][platform]["margin"])


def report(table: dict, thin: float) -> str:
    lines = ["| chapter | platforms | comparisons (reached) | thinnest margins |",
             "|---|---|---|---|"]
    for name, chapter in sorted(table["chapters"].items()):
        rows = chapter["rows"]
        reached = [r for r in rows.values() if r["margins"]]
        worst = sorted(((min(m["margin"] for m in r["margins"].values()), key, r)
                        for key, r in rows.items() if r["margins"]), key=lambda t: t[0])
        thin_ones = [f"`{r['test'][:60]}` {margin:+.4f} ({thinnest_platform(r)})"
                     for margin, key, r in worst if margin < thin]
        lines.append(f"| {name.split('_')[0]} | {', '.join(sorted(chapter['platforms']))} | "
                     f"{len(rows)} ({len(reached)}) | "
                     f"{'; '.join(thin_ones) if thin_ones else f'none below {thin}'} |")
    return "\n".join(lines)


def environment(pairs: list[str]) -> dict:
    """K=V pairs as a dict."""
    return dict(pair.partition("=")[::2] for pair in pairs)


def matrix(platform: str, python: str, extra_env: list[str], chapters: list[str],
           data: str | None) -> dict:
    out = Path(tempfile.mkdtemp(prefix=f"jaxbook-matrix-{platform}-"))
    env = dict(os.environ, JAX_PLATFORMS="cpu", **environment(extra_env))
    command = [python, str(DEV / "tpu_run.py"), "--out", str(out)]
    if data:
        command += ["--data", data]
    subprocess.run(command + chapters, env=env, check=True)
    bundle = json.loads((out / "tpu_bundle.json").read_text())
    bundle["environment"] = environment(extra_env)
    return bundle


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect")
    c.add_argument("--platform", required=True)
    c.add_argument("--env", nargs="*", default=[], help="K=V the run was made under")
    c.add_argument("bundles", nargs="+", type=Path)
    m = sub.add_parser("matrix")
    m.add_argument("--platform", required=True)
    m.add_argument("--python", default=sys.executable)
    m.add_argument("--env", nargs="*", default=[])
    m.add_argument("--data", default=None)
    m.add_argument("chapters", nargs="+")
    r = sub.add_parser("report")
    r.add_argument("--thin", type=float, default=0.05)
    args = parser.parse_args(argv)
    if args.command == "report":
        print(report(load(), args.thin))
        return 0
    loose = [item for item in args.env if "=" not in item]
    if loose:  # --env takes every word after it: "--env K=V 08 10" swallows the chapters
        parser.error(f"--env takes K=V pairs, not {loose}: put the chapters before --env, "
                     "or another option (--data) between them")
    if args.command == "collect":
        bundles = []
        for path in args.bundles:
            bundle = json.loads(path.read_text())
            bundle.setdefault("environment", environment(args.env))
            bundles.append(bundle)
    else:
        bundles = [matrix(args.platform, args.python, args.env, args.chapters, args.data)]
    # Read, change and write the table under a lock, after the runs: runs of other platforms
    # may have finished meanwhile, and a table read before a run of minutes would undo them.
    with open(TABLE.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        table = load()
        for bundle in bundles:
            for line in collect(table, args.platform, bundle):
                print(line)
        save(table)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
