"""Let `make test` reuse the site that `make book` built from scratch, instead of building it again.

Usage:
  python dev/site_stamp.py write SECONDS   (make book, after a full build that passed -W)
  python dev/site_stamp.py check           (prints the stamp if it matches; exit 1 if not)

The tests of the site (tests/test_site.py, tests/test_browser.py) need a build of the
current sources with warnings as errors in which every page was read (`--all`): an
incremental build does not repeat the warnings of pages that did not change. `make book`
on a clean clone is such a build, and in CI it runs just before `make test`, which used to
build the same site a second time (about two minutes of one core on the CI machine).

So `make book` writes _build/html/.built-from after a build that started with no earlier
build (no _build/.doctrees and no zh/_build/.doctrees) and passed with -W: the digest of
every file git does not ignore (their paths and bytes, untracked ones included), of the
installed jupyter-book version, and the build's seconds. The `built_site` fixture reuses
the build only if the digest is the current one; any change to any file, or a build that
was incremental, means the tests build the site themselves, as before.
"""

import hashlib
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMP = ROOT / "_build" / "html" / ".built-from"


def sources_digest() -> str:
    names = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT, capture_output=True, check=True,
    ).stdout.split(b"\0")
    digest = hashlib.sha256()
    digest.update(metadata.version("jupyter-book").encode())
    for name in sorted(n for n in names if n):
        path = ROOT / name.decode()
        if not path.is_file():  # deleted in the working tree but still in the index
            continue
        digest.update(name + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def read_matching() -> dict | None:
    """The stamp's contents if it describes a full build of the current sources, else None."""
    try:
        stamp = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None
    return stamp if stamp.get("digest") == sources_digest() else None


def main(argv: list[str]) -> int:
    if argv[:1] == ["write"] and len(argv) == 2:
        STAMP.write_text(json.dumps({"digest": sources_digest(), "seconds": float(argv[1])}))
        return 0
    if argv == ["check"]:
        stamp = read_matching()
        print(stamp if stamp else "no stamp for the current sources")
        return 0 if stamp else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
