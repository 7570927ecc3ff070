"""The suite against `MONGODB_URI`: what the deployment is, the README's sharding of each
test database, what an `explain` says the server used, and the gate CI runs the suite with.

A pytest plugin (tests/conftest.py loads it). Tests marked `integration` run only with
`MONGODB_URI` and skip cleanly without it. `--require-server=TOPOLOGY` (CI and
`nox -s integration` pass it) turns a quiet skip into a failure: the run fails unless
`MONGODB_URI` is set and is a deployment of that topology (and of `MONGODB_VERSION`, when
set: the version docker/compose*.yaml start), at least one `integration` test ran, and no
`integration` test was skipped for any reason but the server's version (a test that needs
a newer server skips with a reason starting `SERVER_VERSION_SKIP`, and a test of a behaviour
a compatible server documents as its own, with one starting `SERVER_DEVIATION_SKIP`).

Servers other than MongoDB that speak its protocol (SecantusDB in `.ci/run`) differ from it
in documented ways. A test that asserts one of those MongoDB behaviours carries the marker
that names it (`DEVIATION_MARKERS`); `DEVIATIONS` says which server lacks which, and the
test is skipped there, from what the server says it is (`buildInfo`), never from a flag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import pytest
from pymongo import MongoClient

from langgraph.checkpoint.mongo._drivers import maybe_await

MONGODB_URI = os.environ.get("MONGODB_URI")
TOPOLOGIES = ("standalone", "replica-set", "sharded")
SERVER_VERSION_SKIP = "server version:"
SERVER_DEVIATION_SKIP = "server deviation:"

# A MongoDB behaviour some compatible server does not share: marker -> what it asserts.
DEVIATION_MARKERS = {
    "mongodb_planner": "asserts the index MongoDB's query planner chooses (`explain`)",
    "mongodb_lookup": "asserts how a read streams its pending writes joined by `$lookup` "
    "(one cursor, its `getMore`s and `killCursors`)",
}
# The compatible servers tested (as `buildInfo` names them) and how they differ from
# MongoDB, as docs/operations.md documents it: server -> marker -> what it does instead.
DEVIATIONS = {
    "SecantusDB": {
        "mongodb_planner": "its planner chooses a collection scan for some queries an index "
        "of ours serves, and its explain output has other shapes",
        "mongodb_lookup": "its `$lookup` reads the whole writes collection, so reads take "
        "pending writes apart, in pages (tests/saver/test_read_plans.py tests that plan on "
        "every backend)",
    },
}


@dataclass(frozen=True)
class Deployment:
    topology: str  # one of TOPOLOGIES
    version: str  # "8.0.4", the MongoDB version the server implements
    server: str = "MongoDB"  # or a compatible server, a key of DEVIATIONS
    server_version: str = ""  # that server's own version

    @classmethod
    def of(cls, hello: dict[str, Any], build: dict[str, Any]) -> Deployment:
        """From the server's answers to `hello` and `buildInfo`, where a compatible server
        names itself beside the MongoDB version it implements."""
        if hello.get("msg") == "isdbgrid":
            topology = "sharded"
        elif "setName" in hello:
            topology = "replica-set"
        else:
            topology = "standalone"
        if "secantusVersion" in build:
            return cls(topology, str(build["version"]), "SecantusDB", str(build["secantusVersion"]))
        return cls(topology, str(build["version"]))

    @property
    def name(self) -> str:
        """The server as a report names it: "MongoDB 8.0.4", "SecantusDB 0.7.0b3"."""
        return f"{self.server} {self.server_version or self.version}"

    @property
    def refuses_unmet_write_concern(self) -> bool:
        """Whether a write concern above its nodes (`w: 50`) is refused before the write,
        with BadValue (2), as a standalone `mongod` refuses it (it has no replication to
        wait for); a replica set, `mongos`, SecantusDB in either mode and the wire stand-in
        apply the write and answer UnsatisfiableWriteConcern (100)."""
        return self.topology == "standalone" and self.server == "MongoDB"

    def deviation_skips(self) -> dict[str, str]:
        """The markers of the MongoDB behaviours this server lacks, each with its skip's
        reason."""
        return {
            marker: f"{SERVER_DEVIATION_SKIP} {self.name}: {instead}"
            for marker, instead in DEVIATIONS.get(self.server, {}).items()
        }


@cache
def deployment() -> Deployment:
    """What `MONGODB_URI` points at, asked once per run."""
    if not MONGODB_URI:
        raise RuntimeError("no MONGODB_URI: the embedded backends have no deployment")
    client: MongoClient[dict[str, Any]] = MongoClient(MONGODB_URI, serverSelectionTimeoutMS=10_000)
    try:
        return Deployment.of(client.admin.command("hello"), client.admin.command("buildInfo"))
    finally:
        client.close()


# Stages that read through an index: IXSCAN; IDHACK (an `_id` point read, before 8.0);
# MongoDB 8.0's express path for point reads and writes on `_id` or a unique index.
INDEX_STAGES = {
    "IXSCAN",
    "IDHACK",
    "EXPRESS_IXSCAN",
    "EXPRESS_CLUSTERED_IXSCAN",
    "EXPRESS_UPDATE",
    "EXPRESS_DELETE",
}
# A `$lookup` pushed down to the slot-based engine (6.0+) joins by one of these; the
# others (NestedLoopJoin, HashJoin) read the whole foreign collection.
INDEXED_JOINS = {"IndexedLoopJoin", "DynamicIndexedLoopJoin", "NonExistentForeignCollection"}


@dataclass
class Plan:
    """What an explain document says the server used, whatever the shape of the document.

    The shapes this reads (MongoDB's "Explain Results" pages for 5.0 to 8.0):
    - classic engine: `queryPlanner.winningPlan` is the tree of `stage`s (5.0, and 6.0+
      for queries the slot-based engine does not take);
    - slot-based engine (6.0/7.0 for some queries, 8.0 by default): the same tree one
      level down, in `queryPlanner.winningPlan.queryPlan` (beside `slotBasedPlan`);
    - aggregate: the above inside `stages[0].$cursor` (or at the top when the whole
      pipeline was pushed down); a classic `$lookup` stage carries `collectionScans` and
      `indexesUsed` (executionStats, 5.0+); one pushed down to the slot-based engine is an
      `EQ_LOOKUP` stage with a `strategy` and, when it uses one, an `indexName`;
    - through `mongos`: the per-shard explains under `winningPlan.shards[]` (each with its
      `shardName`) for find/update/delete, and under `shards.<name>` for aggregate.
    """

    stages: set[str] = field(default_factory=set)
    indexes: set[str] = field(default_factory=set)
    lookup_scans: list[int] = field(default_factory=list)
    join_strategies: list[str] = field(default_factory=list)
    shards: set[str] = field(default_factory=set)

    @classmethod
    def read(cls, explained: Any) -> Plan:
        plan = cls()
        plan._walk(explained)
        return plan

    def _walk(self, node: Any) -> None:
        if isinstance(node, list):
            for value in node:
                self._walk(value)
            return
        if not isinstance(node, dict):
            return
        stage = node.get("stage")
        if isinstance(stage, str):
            self.stages.add(stage)
            if stage == "EQ_LOOKUP":
                self.join_strategies.append(str(node.get("strategy")))
        if isinstance(node.get("indexName"), str):
            self.indexes.add(node["indexName"])
        if isinstance(node.get("indexesUsed"), list):
            self.indexes.update(str(name) for name in node["indexesUsed"])
        if "$lookup" in node and "collectionScans" in node:
            self.lookup_scans.append(int(node["collectionScans"]))
        if isinstance(node.get("shardName"), str):
            self.shards.add(node["shardName"])
        if isinstance(node.get("shards"), dict):
            self.shards.update(node["shards"])
        for value in node.values():
            self._walk(value)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--require-server",
        choices=TOPOLOGIES,
        default=None,
        help="fail unless MONGODB_URI is a deployment of this topology and every "
        "`integration` test ran (a skip for the server's version or a documented "
        "deviation excepted)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "integration: runs only against MONGODB_URI (a real server)")
    config.addinivalue_line(
        "markers",
        "soak: a long run of one behaviour at scale (many turns, runs or savers); the README's "
        "run has them, CI's runs on other Pythons and the dependency floors deselect them",
    )
    config.addinivalue_line(
        "markers",
        "no_server: asserts what no server answers (arguments refused before connecting, "
        "help, the package's own stand-ins, in-memory structures): the same against any "
        "MONGODB_URI; CI's SecantusDB step deselects them (the README's run has them)",
    )
    for marker, asserts in DEVIATION_MARKERS.items():
        config.addinivalue_line(
            "markers", f"{marker}: {asserts}; skipped on a server documented to differ"
        )
    required = config.getoption("--require-server")
    if required is None:
        return
    if not MONGODB_URI:
        raise pytest.UsageError(f"--require-server={required} needs MONGODB_URI")
    found = deployment()
    if found.topology != required:
        raise pytest.UsageError(
            f"--require-server={required}, but MONGODB_URI is a {found.topology} ({found.name})"
        )
    asked = os.environ.get("MONGODB_VERSION")  # what docker/compose*.yaml were told to start
    if asked and not found.version.startswith(f"{asked}."):
        raise pytest.UsageError(
            f"MONGODB_VERSION={asked}, but MONGODB_URI is MongoDB {found.version}"
        )
    config.pluginmanager.register(_Gate(), "require-server")


def pytest_report_header(config: pytest.Config) -> str:
    if not MONGODB_URI:
        return "MONGODB_URI: unset (embedded backends)"
    found = deployment()
    differs = ", ".join(found.deviation_skips())
    return f"MONGODB_URI: {found.name}, {found.topology}" + (
        f"; skipped where it differs from MongoDB: {differs}" if differs else ""
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    if not MONGODB_URI:
        skip = pytest.mark.skip(reason="needs a real server: set MONGODB_URI")
        for item in items:
            if item.get_closest_marker("integration"):
                item.add_marker(skip)
        return
    for marker, reason in deployment().deviation_skips().items():
        for item in items:
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=reason))


class _Gate:
    """`--require-server`: counts the `integration` tests that ran and those skipped for
    anything but the server's version or a documented deviation."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.failures: list[str] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if "integration" not in report.keywords:
            return
        if report.when == "call" and not report.skipped:
            self.ran.append(report.nodeid)
        elif report.skipped and isinstance(report.longrepr, tuple):
            reason = report.longrepr[2].removeprefix("Skipped: ")
            if not reason.startswith((SERVER_VERSION_SKIP, SERVER_DEVIATION_SKIP)):
                self.failures.append(f"{report.nodeid} skipped: {reason}")

    def _problems(self) -> list[str]:
        return self.failures + ([] if self.ran else ["no `integration` test ran"])

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.exitstatus == pytest.ExitCode.OK and self._problems():
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        problems = self._problems()
        if problems:
            terminalreporter.section("--require-server", red=True)
            for problem in problems:
                terminalreporter.write_line(problem, red=True)


async def shard_like_the_readme(client: Any, saver: Any) -> None:
    """Both collections sharded on `{thread_id: "hashed"}` (the README's Sharding section),
    before `setup()`, while they are empty. `enableSharding` first: MongoDB before 6.0
    needs it, later versions accept it."""
    name = saver.db.name
    await maybe_await(client.admin.command("enableSharding", name))
    for collection in (saver.checkpoint_collection_name, saver.writes_collection_name):
        await maybe_await(
            client.admin.command(
                "shardCollection", f"{name}.{collection}", key={"thread_id": "hashed"}
            )
        )
