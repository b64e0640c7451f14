"""Execute chapters on a TPU (or any JAX backend) and write a record bundle.

Usage:
  python3 dev/tpu_run.py --out DIR [--budget SECONDS] [--data DIR] [CHAPTERS...]

CHAPTERS are numbers (`02`, `7`), file names or paths; all of notebooks/ by default. Then
`python3 dev/tpu_record.py merge DIR/tpu_bundle.json` puts the runs into
tests/tpu_record.json, which `tests/test_tpu_record.py` checks (README, "Testing on a TPU").

Each chapter runs in a process of its own, one after the other, since one process at a
time can hold a TPU. That process copies the notebook into an empty temporary folder (as a
Colab reader has it), sets JAXBOOK_DATA and MPLBACKEND=Agg, and executes the code cells in
order in-process with IPython's InteractiveShell (magics and display work; no kernel and no
socket, which the lent TPU machine refuses), or with plain `exec` where IPython is missing.
A cell's error does not stop the chapter. Per cell it records the status, the seconds, the
printed text (stdout, stderr and displayed text/plain, trimmed to its head and tail) and,
for an error, its name, value and the last lines of its traceback; per chapter the JAX,
jaxlib and libtpu versions, the backend, device kind and count, the date, the Python, the
seconds, the hash of the code cells (dev/tpu_record.py's `code_hash`) and the stand-ins
used. The bundle DIR/tpu_bundle.json is rewritten after every chapter, so a run that is cut
short still returns what ran.

--budget: no chapter is started whose expected time (its last recorded run plus a start,
else --guess seconds) no longer fits; those are listed under `not_run`. A chapter still
running when the budget ends is stopped and recorded with `timed_out` and the cells it
finished.

torchvision: where it does not import (the lent TPU machine: its wheel does not load beside
the CPU build of torch there), the chapter processes get dev/tpu_standins/ on sys.path, a
stand-in that reads the same MNIST files (see its docstring); a chapter that imported it
lists it under `stand_ins`. `--stand-in always|never` overrides the check.
"""

import argparse
import ast
import datetime as dt
import importlib.metadata
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

DEV = Path(__file__).resolve().parent
ROOT = DEV.parent
STANDINS = DEV / "tpu_standins"
BUNDLE_NAME = "tpu_bundle.json"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
KEEP = 4000  # characters of printed text kept per cell: the head and the tail
sys.path.insert(0, str(DEV))
import margins  # noqa: E402
import tpu_record  # noqa: E402


def trim(text: str, keep: int = KEEP) -> str:
    text = ANSI.sub("", text)
    if len(text) <= keep:
        return text
    half = keep // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def utc_now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def write_json(path: Path, data: dict) -> None:
    partial = path.with_name(path.name + ".tmp")
    partial.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    partial.replace(path)


# --- the chapter process ------------------------------------------------------------------


class Sink:
    """A text stream that appends to a shared list (stdout and stderr of a cell, in order)."""

    encoding = "utf-8"
    errors = "replace"

    def __init__(self, parts: list, original):
        self.parts = parts
        self.original = original

    def write(self, text) -> int:
        self.parts.append(str(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def close(self) -> None:  # a logging handler may hold this stream until the exit
        pass

    closed = False

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:  # for code that hands sys.stdout to a subprocess
        return self.original.fileno()


def ipython_runner(parts: list, errors: list):
    """run(source) -> bool with IPython's InteractiveShell, or None without IPython."""
    try:
        from IPython.core.displayhook import DisplayHook
        from IPython.core.displaypub import DisplayPublisher
        from IPython.core.interactiveshell import InteractiveShell
        from traitlets import Type
        from traitlets.config import Config
    except ImportError:
        return None

    def text_of(data: dict) -> str:
        text = data.get("text/plain", "")
        others = sorted(key for key in data if key != "text/plain")
        return text + (f" [{', '.join(others)}]" if others else "")

    class Hook(DisplayHook):  # a cell's last value: its text/plain, no Out[n] prompt
        def write_output_prompt(self):
            pass

        def write_format_data(self, format_dict, md_dict=None):
            parts.append(text_of(format_dict) + "\n")

    class Publisher(DisplayPublisher):  # display(), figures
        def publish(self, data, metadata=None, source=None, *, transient=None, update=False,
                    **kwargs):
            parts.append(text_of(data) + "\n")

        def clear_output(self, wait=False):
            pass

    class Shell(InteractiveShell):
        displayhook_class = Type(Hook)
        display_pub_class = Type(Publisher)

        def enable_gui(self, gui=None):  # `%matplotlib inline` needs no event loop
            pass

        def _showtraceback(self, etype, evalue, stb):
            errors.append((etype, evalue, stb))

    config = Config()
    config.HistoryManager.enabled = False
    shell = Shell.instance(config=config)
    for colors in ("nocolor", "NoColor"):  # IPython 9 spells it in lower case
        try:
            shell.colors = colors
            break
        except Exception:  # noqa: BLE001, S112 - ANSI codes are stripped anyway
            continue

    def run(source: str) -> bool:
        result = shell.run_cell(source, store_history=True)
        return result.success

    # Each asserted comparison's margin (dev/margins.py), unless JAXBOOK_NO_MARGINS is set.
    run.recorder = None
    if not os.environ.get("JAXBOOK_NO_MARGINS"):
        try:
            run.recorder = margins.install(shell)
        except Exception as error:  # noqa: BLE001 - the chapter runs without them
            print(f"margins not recorded: {type(error).__name__}: {error}", file=sys.__stderr__)
    return run


def exec_runner(parts: list, errors: list):
    """The fallback without IPython: `%%writefile` handled, other magics and `!` skipped, the
    value of a last bare expression printed."""
    namespace = {"__name__": "__main__"}

    def run(source: str) -> bool:
        lines = source.splitlines()
        if lines and lines[0].startswith("%%writefile"):
            Path(lines[0].split()[-1]).write_text("\n".join(lines[1:]) + "\n")
            parts.append(f"Writing {lines[0].split()[-1]}\n")
            return True
        lines = [f"pass  # skipped: {line}" if line.lstrip().startswith(("%", "!")) else line
                 for line in lines]
        try:
            tree = ast.parse("\n".join(lines))
            last = tree.body[-1] if tree.body and isinstance(tree.body[-1], ast.Expr) else None
            if last is not None:
                tree.body.pop()
            exec(compile(tree, "<cell>", "exec"), namespace)
            if last is not None:
                value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
                if value is not None:
                    parts.append(repr(value) + "\n")
            return True
        except BaseException as error:  # a cell's error is recorded, the chapter goes on
            if isinstance(error, KeyboardInterrupt):
                raise
            errors.append((type(error), error, traceback.format_exc().splitlines()))
            return False

    return run


def run_chapter(notebook_path: Path, out_path: Path, standin: str) -> None:
    """The chapter process: execute one notebook's code cells in-process, writing the
    record to out_path after every cell."""
    notebook = json.loads(notebook_path.read_text())
    folder = Path(tempfile.mkdtemp(prefix="jaxbook-tpu-"))
    shutil.copy(notebook_path, folder / notebook_path.name)
    os.chdir(folder)
    os.environ.setdefault("IPYTHONDIR", str(folder / ".ipython"))
    os.environ.setdefault("MPLCONFIGDIR", str(folder / ".matplotlib"))
    sys.argv = [notebook_path.name]
    # As in a Jupyter kernel: the working folder first (a chapter imports the files it
    # writes), and not this script's folder.
    sys.path[:] = [""] + [p for p in sys.path if p and Path(p).resolve() != DEV]
    if standin:
        sys.path.insert(0, str(STANDINS))
    entry = {
        "notebook": notebook_path.name,
        "code_sha256": tpu_record.code_hash(notebook),
        "date": utc_now(),
        "python": platform.python_version(),
        "jax": version("jax"),
        "jaxlib": version("jaxlib"),
        "libtpu": version("libtpu") or version("libtpu-nightly"),
        "executor": "IPython InteractiveShell, in-process",
        "jax_platforms_env": os.environ.get("JAX_PLATFORMS", ""),
        "cells": [],
    }
    parts: list = []
    errors: list = []
    run = ipython_runner(parts, errors)
    if run is None:
        entry["executor"] = "plain exec, in-process (IPython not importable)"
        run = exec_runner(parts, errors)
    recorder = getattr(run, "recorder", None)
    start = time.perf_counter()
    log = sys.__stdout__
    code = [cell for cell in notebook["cells"] if cell.get("cell_type") == "code"]
    for number, cell in enumerate(code, 1):
        parts.clear()
        errors.clear()
        cell_start = time.perf_counter()
        if recorder is not None:
            recorder.cell = cell.get("id")
        sys.stdout, sys.stderr = Sink(parts, sys.__stdout__), Sink(parts, sys.__stderr__)
        try:
            ok = run(tpu_record.cell_source(cell))
        except BaseException as error:  # SystemExit from a cell, say
            ok = False
            errors.append((type(error), error, traceback.format_exc().splitlines()))
        finally:
            sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        record = {"index": number, "id": cell.get("id"), "status": "ok" if ok else "error",
                  "seconds": round(time.perf_counter() - cell_start, 3),
                  "output": trim("".join(parts))}
        if recorder is not None:
            found = recorder.take(cell.get("id"))
            if found:
                record["margins"] = found
        if not ok:
            etype, evalue, stb = errors[-1] if errors else (None, None, [])
            lines = ANSI.sub("", "\n".join(stb)).splitlines()
            record["error"] = {
                "ename": getattr(etype, "__name__", str(etype)),
                "evalue": trim(str(evalue), 500),
                "traceback": trim("\n".join(lines[-12:]), 1500),
            }
        entry["cells"].append(record)
        entry["seconds"] = round(time.perf_counter() - start, 2)
        entry["error_cells"] = sum(c["status"] != "ok" for c in entry["cells"])
        write_json(out_path, entry)
        print(f"  cell {number}/{len(code)} {record['status']} {record['seconds']:.1f} s"
              + (f" {record['error']['ename']}: {record['error']['evalue'][:150]}"
                 if not ok else ""), file=log, flush=True)
    # The device, read after the cells: a chapter may set XLA_FLAGS or JAX_PLATFORMS before
    # its first `import jax`, so nothing here touches JAX earlier.
    try:
        import jax

        devices = jax.devices()
        entry.update(backend=jax.default_backend(), device_kind=devices[0].device_kind,
                     device_count=len(devices), platform=devices[0].platform)
    except Exception as error:  # noqa: BLE001 - recorded, not raised
        entry["device_error"] = f"{type(error).__name__}: {error}"[:500]
    module = sys.modules.get("torchvision")
    entry["stand_ins"] = []
    if module is not None and str(STANDINS) in str(getattr(module, "__file__", "")):
        entry["stand_ins"].append(f"torchvision ({standin})")
    entry["seconds"] = round(time.perf_counter() - start, 2)
    entry["finished"] = True
    write_json(out_path, entry)


# --- the parent process -------------------------------------------------------------------

REFUSE_SOCKETS = """# dev/tpu_run.py --refuse-sockets: internet sockets fail, as on the lent TPU
# machine, in this process and in those it starts (PYTHONPATH).
import errno
import socket

_init = socket.socket.__init__


def _refuse(self, family=-1, type=-1, proto=-1, fileno=None):
    if fileno is None and family in (-1, socket.AF_INET, socket.AF_INET6):
        raise OSError(errno.EAFNOSUPPORT, "Address family not supported by protocol "
                      "(dev/tpu_run.py --refuse-sockets)")
    _init(self, family, type, proto, fileno)


socket.socket.__init__ = _refuse
"""


def torchvision_check(env: dict) -> str:
    """'' if torchvision imports in a fresh process here, else why not (its last line)."""
    try:
        done = subprocess.run([sys.executable, "-c", "import torchvision"], env=env,
                              capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "import torchvision took over 300 s"
    if done.returncode == 0:
        return ""
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else f"exit status {done.returncode}"


def recorded_seconds(name: str) -> float | None:
    try:
        return float(tpu_record.load()["chapters"][name]["seconds"])
    except (KeyError, TypeError, ValueError, json.JSONDecodeError):
        return None


# Errors that mean another process still held the chip when this one started.
REFUSED = ("multi-process lockfile", "Unable to initialize backend 'tpu'",
           "TPU initialization failed")


def chip_refused(entry: dict) -> str:
    for cell in entry.get("cells", []):
        value = (cell.get("error") or {}).get("evalue", "")
        if any(text in value for text in REFUSED):
            return value.splitlines()[0][:200] if value else ""
    return ""


def run_process(path: Path, out_folder: Path, env: dict, standin: str, begin: float,
                budget: float | None) -> tuple[dict, bool]:
    """One chapter in a process of its own; its record, and whether the budget stopped it."""
    name = path.name
    out = out_folder / f".{path.stem}.json"
    out.unlink(missing_ok=True)
    started = time.monotonic()
    command = [sys.executable, str(Path(__file__).resolve()), "--out", str(out_folder),
               "--child", str(path), "--child-out", str(out), "--child-standin", standin]
    process = subprocess.Popen(command, env=env, start_new_session=True)
    timeout = max(budget - (started - begin), 1.0) if budget else None
    timed_out = False
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    entry = json.loads(out.read_text()) if out.exists() else {
        "notebook": name, "date": utc_now(), "cells": [], "error_cells": 0}
    out.unlink(missing_ok=True)
    entry["process_seconds"] = round(time.monotonic() - started, 2)
    if timed_out:
        entry["timed_out"] = True
    if process.returncode and not timed_out:
        entry["exit_status"] = process.returncode
    if not entry.get("finished"):
        entry["unfinished"] = ("stopped at the budget" if timed_out else
                               f"the chapter process ended with status {process.returncode}")
        notebook = json.loads(path.read_text())
        code = [cell for cell in notebook["cells"] if cell.get("cell_type") == "code"]
        if len(entry["cells"]) < len(code):  # the cell that was running then
            cell = code[len(entry["cells"])]
            entry["cells"].append({"index": len(entry["cells"]) + 1, "id": cell.get("id"),
                                   "status": "timed out" if timed_out else "process died",
                                   "seconds": None, "output": ""})
            entry["error_cells"] = sum(c["status"] != "ok" for c in entry["cells"])
    return entry, timed_out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("chapters", nargs="*", help="numbers, names or paths; all by default")
    parser.add_argument("--out", type=Path, required=True, help=f"folder for {BUNDLE_NAME}")
    parser.add_argument("--budget", type=float, default=None, help="seconds for the whole run")
    parser.add_argument("--data", type=Path, default=None,
                        help="JAXBOOK_DATA (MNIST/raw, tinyshakespeare); by default the "
                        "environment's, else ./data")
    parser.add_argument("--stand-in", choices=("auto", "always", "never"), default="auto")
    parser.add_argument("--guess", type=float, default=60.0,
                        help="expected seconds of a chapter with no recorded run")
    parser.add_argument("--start-cost", type=float, default=20.0,
                        help="seconds a chapter process needs before its first cell")
    parser.add_argument("--pause", type=float, default=None,
                        help="seconds between chapters (the chip can refuse a program "
                        "started just after another ended; a chapter whose start it refused "
                        "runs once more after 5 s); 2 unless JAX_PLATFORMS=cpu")
    parser.add_argument("--refuse-sockets", action="store_true",
                        help="make Python's internet sockets fail in the chapter processes "
                        "and theirs (errno 97, as on the lent TPU machine): to find the cells "
                        "that need the tag needs-sockets on a machine that has sockets")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-standin", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        run_chapter(args.child, args.child_out, args.child_standin)
        sys.stdout.flush()
        # A normal exit (JAX releases the chip), but threads a chapter left running
        # (checkpointers, loaders) must not hang it: after 30 s it ends regardless.
        watchdog = threading.Timer(30, os._exit, [0])
        watchdog.daemon = True
        watchdog.start()
        return 0

    begin = time.monotonic()
    paths = ([ROOT / "notebooks" / tpu_record.chapter_name(c) if not Path(c).is_file()
              else Path(c).resolve() for c in args.chapters]
             or sorted((ROOT / "notebooks").glob("*.ipynb")))
    data = (args.data or Path(os.environ.get("JAXBOOK_DATA", ROOT / "data"))).resolve()
    env = dict(os.environ, JAXBOOK_DATA=str(data), MPLBACKEND="Agg", PYTHONHASHSEED="0",
               PYTHONUNBUFFERED="1")
    if args.refuse_sockets:
        folder = Path(tempfile.mkdtemp(prefix="jaxbook-nosockets-"))
        (folder / "sitecustomize.py").write_text(REFUSE_SOCKETS)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), env.get("PYTHONPATH")]))
    on_cpu = env.get("JAX_PLATFORMS", "").strip().lower() == "cpu"
    pause = args.pause if args.pause is not None else (0.0 if on_cpu else 2.0)
    args.out.mkdir(parents=True, exist_ok=True)
    bundle_path = args.out / BUNDLE_NAME
    standin = ""
    if args.stand_in == "always":
        standin = "stand-in forced (--stand-in always)"
    elif args.stand_in == "auto":
        why = torchvision_check(env)
        if why:
            standin = f"stand-in: the real torchvision did not import: {why}"
    bundle = {"created": utc_now(), "runner": "dev/tpu_run.py", "budget_s": args.budget,
              "jaxbook_data": str(data), "torchvision": standin or "the real one",
              "chapters": {}, "not_run": {}}
    print(f"Python {platform.python_version()}, jax {version('jax')}, jaxlib "
          f"{version('jaxlib')}, libtpu {version('libtpu')}; JAXBOOK_DATA={data}; "
          f"torchvision: {bundle['torchvision']}", flush=True)
    write_json(bundle_path, bundle)
    stop = False
    for position, path in enumerate(paths):
        name = path.name
        left = (args.budget - (time.monotonic() - begin)) if args.budget else None
        expected = (recorded_seconds(name) or args.guess) + args.start_cost
        if stop or (left is not None and expected > left):
            bundle["not_run"][name] = (f"budget: about {expected:.0f} s expected, "
                                       f"{max(left or 0, 0):.0f} s left")
            print(f"{name}: not run ({bundle['not_run'][name]})", flush=True)
            write_json(bundle_path, bundle)
            continue
        if position and pause:
            time.sleep(pause)
        print(f"{name}: running", flush=True)
        entry, timed_out = run_process(path, args.out, env, standin, begin, args.budget)
        refused = chip_refused(entry)
        left = (args.budget - (time.monotonic() - begin)) if args.budget else None
        if refused and not timed_out and (left is None or left > expected + 5):
            print(f"{name}: the chip refused the start ({refused}); again in 5 s", flush=True)
            time.sleep(5)
            entry, timed_out = run_process(path, args.out, env, standin, begin, args.budget)
            entry["retried"] = f"the first start failed: {refused}"
        stop = stop or timed_out
        bundle["chapters"][name] = entry
        write_json(bundle_path, bundle)
        print(f"{name}: {entry.get('error_cells', '?')} error cells of {len(entry['cells'])}, "
              f"{entry.get('device_kind', '?')}, {entry['process_seconds']:.0f} s"
              + (" (TIMED OUT)" if timed_out else ""), flush=True)
    total = time.monotonic() - begin
    ran = bundle["chapters"]
    print(f"ran {len(ran)} chapter(s) in {total:.0f} s; "
          f"{sum(e.get('error_cells', 0) for e in ran.values())} error cells; "
          f"not run: {', '.join(bundle['not_run']) or 'none'}; bundle: {bundle_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
