"""A stand-in TPU VM walk: the reader's path of chapter 11, run for real on a machine without
a TPU. `make test-tpu-vm` (and `.ci/run`) runs it.

1. Copy the repository's tracked files into a new folder under .tpu-vm-walks/ (the
   reader's clone), on the checkout's disk.
2. Run `tools/tpu_vm_install.sh` there, not as a dry run, with a PATH on which the only
   Python is a 3.10, as on the `tpu-ubuntu2204-base` image. The one step that cannot run
   here is uv downloading an interpreter (only package registries are reachable), so a
   small `uv` shim stands in: `uv python install 3.12` records the request and
   `uv python find` then hands over a local Python 3.12, as uv would. Everything else is
   real: the venv, `pip install -r requirements.txt "jax[tpu]==<pin>"` with libtpu from
   the package registry (torch from PyTorch's CPU index where it can be reached, else from
   PyPI), and JAX, which falls back to the CPU when there is no TPU.
3. Start `jupyter server` from that .venv on a free local port, execute a chapter's code
   cells through the server's kernel API (REST to start a kernel, its websocket channel to
   run each cell), and fail on any error. Then shut the server down and remove the folder.

    python dev/tpu_vm_walk.py [--python310 PATH] [--python312 PATH] [--chapter NB] [--keep]
"""

import argparse
import asyncio
import glob
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
WALKS = ".tpu-vm-walks"  # ignored; each walk makes a folder in it and removes it at the end

UV_SHIM = """#!/bin/sh
# Stand-in for uv: 'python install' records the request, 'python find' then answers with a
# local interpreter, as uv answers with the one it downloaded.
marker="$HOME/.uv-shim-python-installed"
case "$1 $2" in
  "python find")
    if [ -f "$marker" ]; then echo "{python312}"; exit 0; fi
    echo "error: No interpreter found for Python $3 in managed installations" >&2; exit 2;;
  "python install")
    echo "uv shim: 'installing' Python $3 (a local one stands in for the download)"
    : > "$marker"; exit 0;;
esac
echo "uv shim: not supported: $*" >&2
exit 3
"""


# What the install needs on disk: 8.0 GB measured on x86_64 with PyPI's torch (2026-12-07), the
# .venv's 6.9 GB and what pip holds until it ends; a little more, for room.
NEEDED_GB = 9


def free_gb(path: Path) -> float:
    return shutil.disk_usage(path).free / 1e9


def find_python(version: str, given: str | None) -> str:
    if given:
        return given
    found = sorted(glob.glob(f"{Path.home()}/.pyenv/versions/{version}.*/bin/python{version}"))
    if not found:
        flag = "--python" + version.replace(".", "")
        sys.exit(f"no Python {version} found under ~/.pyenv/versions; pass {flag} PATH")
    return found[-1]


def copy_clone(target: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split("\0")
    for name in filter(None, files):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def install(clone: Path, python310: str, python312: str, home: Path) -> None:
    bin_dir = home / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python3").symlink_to(python310)
    (bin_dir / "python3.10").symlink_to(python310)
    shim = bin_dir / "uv"
    shim.write_text(UV_SHIM.format(python312=python312))
    shim.chmod(0o755)
    for tool in ("sed", "dirname", "rm", "sh", "env"):
        if shutil.which(tool):
            (bin_dir / tool).symlink_to(shutil.which(tool))
    env = {key: value for key, value in os.environ.items() if key.startswith(("PIP_", "SSL_"))}
    # pip's temporary files (every wheel it downloads, until the install ends) go beside the
    # clone, on the checkout's disk, not into a /tmp that may be small.
    tmp = home.parent / "tmp"
    tmp.mkdir()
    env |= {"PATH": str(bin_dir), "HOME": str(home), "LANG": "C.UTF-8", "TMPDIR": str(tmp)}
    # The new HOME hides this machine's own pip configuration (its package index, as
    # `make install` uses it), so pass it on: without it pip downloads every wheel again,
    # CUDA's libraries included where torch comes from PyPI, into a second cache.
    user_config = Path.home() / ".config" / "pip" / "pip.conf"
    if "PIP_CONFIG_FILE" not in env and user_config.is_file():
        env["PIP_CONFIG_FILE"] = str(user_config)
        print(f"pip configuration: {user_config}")
    env.setdefault("PIP_NO_CACHE_DIR", "1")  # the walk's venv is thrown away: keep no cache
    # The script takes torch from PyTorch's CPU index by default. Where that index cannot be
    # reached (the book's CI machine), pip would retry it for every package: PyPI's torch instead.
    try:
        socket.create_connection(("download.pytorch.org", 443), timeout=5).close()
    except OSError:
        env["JAXBOOK_TORCH_INDEX"] = ""
        print("download.pytorch.org cannot be reached: torch from PyPI (JAXBOOK_TORCH_INDEX=)")
    free_before = free_gb(clone)
    print(f"disk: {free_before:.1f} GB free beside the clone before the install")
    if free_before < NEEDED_GB:
        sys.exit(f"the walk's .venv needs about {NEEDED_GB} GB (torch's CUDA build from PyPI "
                 f"alone is 5.5 GB); {free_before:.1f} GB are free on the disk of {clone}")
    start = time.perf_counter()
    result = subprocess.run([shutil.which("bash") or "/bin/bash", "tools/tpu_vm_install.sh"],
                            cwd=clone, env=env,
                            capture_output=True, text=True, timeout=1800)
    print(result.stdout[-3000:])
    if result.returncode != 0:
        print(result.stderr[-5000:], file=sys.stderr)
        sys.exit(f"tools/tpu_vm_install.sh failed (exit {result.returncode})")
    assert "uv shim: 'installing' Python 3.12" in result.stdout, "uv was not asked for a Python"
    print(f"install: {time.perf_counter() - start:.0f} s; "
          f"{free_before - free_gb(clone):.1f} GB of disk used, {free_gb(clone):.1f} GB left")


def check_venv(clone: Path) -> None:
    python = clone / ".venv" / "bin" / "python"
    probe = ("import sys, importlib.metadata as m, jax; "
             "print(sys.version.split()[0], jax.__version__, m.version('libtpu'), "
             "jax.default_backend())")
    result = subprocess.run([str(python), "-c", probe], capture_output=True, text=True,
                            timeout=300, env=os.environ | {"TPU_SKIP_MDS_QUERY": "1"})
    if result.returncode != 0:
        sys.exit("the new .venv does not import jax:\n" + result.stderr[-3000:])
    version, jax_version, libtpu, backend = result.stdout.split()
    print(f".venv: Python {version}, jax {jax_version}, libtpu {libtpu}, backend {backend}")
    assert version.startswith("3.12") and backend == "cpu", result.stdout


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def run_cells(url: str, token: str, cells: list[str]) -> None:
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    request = urllib.request.Request(f"{url}/api/kernels", data=b"{}", method="POST",
                                     headers={"Authorization": f"token {token}"})
    kernel = json.load(urllib.request.urlopen(request, timeout=60))
    ws_url = url.replace("http", "ws", 1) + f"/api/kernels/{kernel['id']}/channels"
    connection = await websocket_connect(
        HTTPRequest(ws_url, headers={"Authorization": f"token {token}"}))
    session = uuid.uuid4().hex
    for number, code in enumerate(cells, start=1):
        msg_id = uuid.uuid4().hex
        await connection.write_message(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "session": session,
                       "username": "walk", "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": True,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
        }))
        while True:
            message = json.loads(await asyncio.wait_for(connection.read_message(), 600))
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if message["msg_type"] == "error":
                content = message["content"]
                raise SystemExit(f"cell {number} failed through the server: "
                                 f"{content['ename']}: {content['evalue']}")
            if message["msg_type"] == "execute_reply" and message["channel"] == "shell":
                assert message["content"]["status"] == "ok", message["content"]
                break
    print(f"{len(cells)} code cells executed through the Jupyter server, no error")
    connection.close()


def walk_jupyter(clone: Path, chapter: str) -> None:
    port, token = free_port(), secrets.token_hex(16)
    url = f"http://127.0.0.1:{port}"
    env = os.environ | {"TPU_SKIP_MDS_QUERY": "1", "JAXBOOK_DATA": os.environ.get(
        "JAXBOOK_DATA", str(ROOT / "data"))}
    server = subprocess.Popen(
        [str(clone / ".venv" / "bin" / "jupyter-server"), "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={clone / 'notebooks'}",
         *(["--allow-root"] if os.geteuid() == 0 else [])],  # CI runs as root
        cwd=clone, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True)
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if server.poll() is not None:
                    sys.exit("jupyter server exited:\n" + server.stderr.read()[-3000:])
                time.sleep(0.5)
        else:
            sys.exit("jupyter server did not answer within 60 s")
        print(f"jupyter server up on {url}")
        notebook = json.loads((clone / "notebooks" / chapter).read_text())
        cells = ["".join(cell["source"]) for cell in notebook["cells"]
                 if cell["cell_type"] == "code"]
        # and a last cell: the kernel is the new .venv's, and JAX fell back to the CPU
        cells.append(f"import sys\nassert sys.prefix == {str(clone / '.venv')!r}, sys.prefix\n"
                     "assert jax.default_backend() == 'cpu', jax.devices()")
        asyncio.run(run_cells(url, token, cells))
    finally:
        if server.poll() is None:
            os.killpg(server.pid, 15)
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, 9)
                server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python310")
    parser.add_argument("--python312")
    parser.add_argument("--chapter", default="01_jax_numpy.ipynb")
    parser.add_argument("--keep", action="store_true", help="keep the temporary clone")
    parser.add_argument("--reuse", type=Path, help="a kept folder: skip the install")
    arguments = parser.parse_args()
    python310 = find_python("3.10", arguments.python310)
    python312 = find_python("3.12", arguments.python312)
    # Beside the checkout (an ignored folder), where its .venv already fits, not in /tmp.
    (ROOT / WALKS).mkdir(exist_ok=True)
    folder = arguments.reuse or Path(tempfile.mkdtemp(prefix="walk-", dir=ROOT / WALKS))
    try:
        clone, home = folder / "hands-on-jax", folder / "home"
        if not arguments.reuse:
            clone.mkdir()
            copy_clone(clone)
            install(clone, python310, python312, home)
        check_venv(clone)
        walk_jupyter(clone, arguments.chapter)
    finally:
        if arguments.keep or arguments.reuse:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
