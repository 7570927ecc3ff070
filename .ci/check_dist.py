"""Build the sdist and wheel, check them, and test the wheel as a user would install it.

`python .ci/check_dist.py` (from `.ci/run`, `nox -s dist` and the CI `dist` job; needs `build`
and `twine` in the running environment, and an index to install from):
1. `python -m build` into a temporary directory, then `twine check --strict`;
2. the archives' contents: the license in both, the Project-URLs in the metadata, the files
   the sdist must carry and none it must not (the include patterns are anchored);
3. a clean virtual environment outside the repository gets the wheel with its `testing`
   extra, LangGraph and pytest, and runs `.ci/smoke/test_user_app.py` (a user's own tests of
   a graph on both savers, and on the stand-in server `testing serve` runs, with `threads
   ls`) from a temporary directory, so nothing from the clone is imported.
`--keep DIR` writes the archives to DIR instead (the release workflow uploads them).
"""

from __future__ import annotations

import argparse
import email
import itertools
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SMOKE_TEST = ROOT / ".ci" / "smoke" / "test_user_app.py"
PROJECT_URLS = {"Documentation", "Source", "Issues", "Changelog"}
SDIST_MUST_HAVE = [
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "CONTRIBUTING.md",
    "noxfile.py",
    "mkdocs.yml",
    "docs/index.md",
    "benchmarks/docs_hook.py",
    "benchmarks/results.md",
    "benchmarks/results.png",
    "docker/compose.yaml",
    "docker/compose.sharded.yaml",
    "src/langgraph/checkpoint/mongo/testing/__init__.py",
    "src/langgraph/checkpoint/mongo/testing/_wire/server.py",
    "tests/conftest.py",
    "conftest.py",
    "examples/quickstart.py",
]
SDIST_MUST_NOT_HAVE = ["benchmarks/README.md", "docker/README.md", ".github", ".ci"]
USER_PACKAGES = ["langgraph", "pytest", "pytest-asyncio"]


def run(*command: str | Path, cwd: Path | None = None) -> None:
    print("$", " ".join(str(part) for part in command), flush=True)
    subprocess.run([str(part) for part in command], check=True, cwd=cwd)


def mkdocs_hooks() -> list[str]:
    """The hook files `mkdocs.yml` names (its `hooks:` list): the docs build from the sdist."""
    after = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nhooks:\n", 1)[1]
    listed = itertools.takewhile(lambda line: line.startswith("  - "), after.splitlines())
    return [line.removeprefix("  - ").strip() for line in listed]


def check_archives(dist: Path) -> Path:
    """The wheel, after checking both archives' contents; exits naming what is wrong."""
    (wheel,) = dist.glob("*.whl")
    (sdist,) = dist.glob("*.tar.gz")
    problems: list[str] = []
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = email.message_from_bytes(archive.read(metadata_name))
    if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
        problems.append(f"{wheel.name}: no LICENSE under .dist-info/licenses/")
    urls = {value.split(",", 1)[0] for value in metadata.get_all("Project-URL") or []}
    if missing := PROJECT_URLS - urls:
        problems.append(f"{wheel.name}: Project-URL missing for {sorted(missing)}")
    if metadata.get("License-Expression") != "MIT":
        problems.append(f"{wheel.name}: License-Expression is {metadata.get('License-Expression')}")
    with tarfile.open(sdist) as archive:
        members = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    must_have = SDIST_MUST_HAVE + mkdocs_hooks()
    problems += [f"{sdist.name}: lacks {name}" for name in must_have if name not in members]
    problems += [
        f"{sdist.name}: carries {member}"
        for member in sorted(members)
        for name in SDIST_MUST_NOT_HAVE
        if member == name or member.startswith(name + "/")
    ]
    if problems:
        sys.exit("\n".join(problems))
    print(f"archives OK: {sdist.name}, {wheel.name}", flush=True)
    return wheel


def smoke_test(wheel: Path) -> None:
    """A user's tests on the wheel in a clean environment, away from the clone."""
    with tempfile.TemporaryDirectory(prefix="user-app-") as tmp:
        home = Path(tmp)
        venv.create(home / "venv", with_pip=True)
        python = home / "venv" / "bin" / "python"
        run(python, "-m", "pip", "install", "--quiet", f"{wheel}[testing]", *USER_PACKAGES)
        app = home / "app"
        app.mkdir()
        shutil.copy(SMOKE_TEST, app / SMOKE_TEST.name)
        where = "import langgraph.checkpoint.mongo as m; print('installed at', m.__file__)"
        run(python, "-c", where, cwd=app)
        run(python, "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=app)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--keep", type=Path, help="write the archives here and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dist-") as tmp:
        dist = args.keep or Path(tmp)
        run(sys.executable, "-m", "build", "--outdir", dist, ROOT)
        archives = sorted(dist.glob("*.whl")) + sorted(dist.glob("*.tar.gz"))
        run(sys.executable, "-m", "twine", "check", "--strict", *archives)
        smoke_test(check_archives(dist))


if __name__ == "__main__":
    main()
