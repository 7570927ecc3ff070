"""The real-server harness, checked without a server: `Plan` on the explain shapes MongoDB
documents for 5.0 to 8.0 (abridged to the fields `Plan` reads), and `--require-server`
failing a run, against the wire server standing in for `MONGODB_URI`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support.real_server import DEVIATION_MARKERS, DEVIATIONS, Deployment, Plan

TESTS = Path(__file__).resolve().parents[1]

IXSCAN = {"stage": "FETCH", "inputStage": {"stage": "IXSCAN", "indexName": "thread_ns_checkpoint"}}


def test_plan_reads_the_classic_tree() -> None:  # 5.0, and classic plans on 6.0+
    plan = Plan.read({"queryPlanner": {"winningPlan": IXSCAN}, "executionStats": {}})
    assert plan.stages == {"FETCH", "IXSCAN"}
    assert plan.indexes == {"thread_ns_checkpoint"}
    assert plan.shards == set()


def test_plan_reads_the_slot_based_tree() -> None:  # 7.0+: one level down, in queryPlan
    explained = {
        "queryPlanner": {
            "winningPlan": {"queryPlan": IXSCAN, "slotBasedPlan": {"stages": "[1] ixseek"}}
        }
    }
    assert Plan.read(explained).stages == {"FETCH", "IXSCAN"}


def test_plan_reads_lookups_of_both_engines() -> None:
    classic = {  # aggregate, executionStats: the $cursor stage, then $lookup's statistics
        "stages": [
            {"$cursor": {"queryPlanner": {"winningPlan": IXSCAN}}},
            {
                "$lookup": {"from": "checkpoint_writes"},
                "collectionScans": 0,
                "indexesUsed": ["thread_checkpoint"],
            },
        ]
    }
    plan = Plan.read(classic)
    assert plan.lookup_scans == [0]
    assert plan.indexes == {"thread_ns_checkpoint", "thread_checkpoint"}
    pushed_down = {  # a $lookup the slot-based engine runs: an EQ_LOOKUP stage
        "queryPlanner": {
            "winningPlan": {
                "queryPlan": {
                    "stage": "EQ_LOOKUP",
                    "strategy": "NestedLoopJoin",
                    "inputStage": IXSCAN,
                }
            }
        }
    }
    plan = Plan.read(pushed_down)
    assert plan.join_strategies == ["NestedLoopJoin"]
    assert "EQ_LOOKUP" in plan.stages


def test_plan_reads_the_shards_of_a_mongos_explain() -> None:
    find = {  # find/update/delete: a list of per-shard explains
        "queryPlanner": {
            "winningPlan": {
                "stage": "SHARD_MERGE",
                "shards": [
                    {"shardName": "shard1", "winningPlan": IXSCAN},
                    {"shardName": "shard2", "winningPlan": {"queryPlan": {"stage": "COLLSCAN"}}},
                ],
            }
        }
    }
    plan = Plan.read(find)
    assert plan.shards == {"shard1", "shard2"}
    assert "COLLSCAN" in plan.stages
    aggregate = {"mergeType": "mongos", "shards": {"shard2": {"stages": [{"$cursor": {}}]}}}
    assert Plan.read(aggregate).shards == {"shard2"}


# SecantusDB 0.7.0b3's answers, abridged: a single-node replica set (its default) that
# implements MongoDB 8.2 and names itself.
SECANTUS_HELLO = {"isWritablePrimary": True, "setName": "secantus", "hosts": ["127.0.0.1:1"]}
SECANTUS_BUILD = {"version": "8.2.11", "secantusVersion": "0.7.0b3", "versionArray": [8, 2, 11, 0]}


def test_a_compatible_server_is_known_by_its_own_answer() -> None:
    found = Deployment.of(SECANTUS_HELLO, SECANTUS_BUILD)
    assert (found.topology, found.version, found.name) == (
        "replica-set",
        "8.2.11",
        "SecantusDB 0.7.0b3",
    )
    skips = found.deviation_skips()
    assert set(skips) == {"mongodb_planner", "mongodb_lookup"}
    assert skips["mongodb_planner"].startswith("server deviation: SecantusDB 0.7.0b3: its planner")
    mongod = Deployment.of({"isWritablePrimary": True}, {"version": "8.0.4"})
    assert (mongod.topology, mongod.name, mongod.deviation_skips()) == (
        "standalone",
        "MongoDB 8.0.4",
        {},
    )
    # Every deviation a server is skipped for is a marker the plugin registers.
    assert {marker for server in DEVIATIONS.values() for marker in server} <= set(DEVIATION_MARKERS)


GATED = """
import pytest

pytestmark = pytest.mark.integration

def test_runs():
    pass

def test_needs_a_newer_server():
    pytest.skip("server version: needs MongoDB 99.0")
"""


def run_gated(
    tmp_path: Path, body: str, *args: str, uri: str | None, version: str | None = None
) -> Any:
    (tmp_path / "test_gated.py").write_text(body)
    # Only this plugin: the installed ones (hypothesis, asyncio, ...) would triple the time.
    env = {**os.environ, "PYTHONPATH": str(TESTS), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    for name, value in {"MONGODB_URI": uri, "MONGODB_VERSION": version}.items():
        env.pop(name, None)
        if value is not None:
            env[name] = value
    plugins = ["-p", "support.real_server", "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugins, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def wire_uri(wire_server: Any) -> str:
    uri: str = wire_server.uri
    return uri


def test_the_gate_passes_a_run_where_only_the_version_skipped(
    tmp_path: Path, wire_uri: str
) -> None:
    done = run_gated(tmp_path, GATED, "--require-server=standalone", uri=wire_uri, version="7.0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed, 1 skipped" in done.stdout
    assert "MONGODB_URI: MongoDB 7.0.0, standalone" in done.stdout  # the wire server's


def test_the_gate_passes_a_documented_deviation_and_runs_its_test_on_mongodb(
    tmp_path: Path, wire_uri: str
) -> None:
    body = GATED + (
        "\n@pytest.mark.mongodb_planner\ndef test_plans():\n    pass\n"
        '\ndef test_elsewhere():\n    pytest.skip("server deviation: SecantusDB 0.7.0b3: x")\n'
    )
    done = run_gated(tmp_path, body, "--require-server=standalone", "-W", "error", uri=wire_uri)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed, 2 skipped" in done.stdout  # the marked test ran: MongoDB plans


def test_the_gate_fails_a_run_with_another_skip(tmp_path: Path, wire_uri: str) -> None:
    body = GATED + '\ndef test_flaky():\n    pytest.skip("the TTL monitor was slow")\n'
    done = run_gated(tmp_path, body, "--require-server=standalone", uri=wire_uri)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "test_gated.py::test_flaky skipped: the TTL monitor was slow" in done.stdout
    assert "test_needs_a_newer_server skipped" not in done.stdout
    # Without the gate the same run passes: the skip alone is what fails it.
    assert run_gated(tmp_path, body, uri=wire_uri).returncode == 0


def test_the_gate_fails_a_run_where_no_integration_test_ran(tmp_path: Path, wire_uri: str) -> None:
    body = GATED.replace("pytestmark = pytest.mark.integration", "")
    done = run_gated(tmp_path, body, "--require-server=standalone", uri=wire_uri)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "no `integration` test ran" in done.stdout


def test_the_gate_refuses_a_missing_or_different_server(tmp_path: Path, wire_uri: str) -> None:
    done = run_gated(tmp_path, GATED, "--require-server=replica-set", uri=None)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--require-server=replica-set needs MONGODB_URI" in done.stderr
    done = run_gated(tmp_path, GATED, "--require-server=sharded", uri=wire_uri)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "--require-server=sharded, but MONGODB_URI is a standalone" in done.stderr
    done = run_gated(tmp_path, GATED, "--require-server=standalone", uri=wire_uri, version="8.0")
    assert done.returncode == pytest.ExitCode.USAGE_ERROR
    assert "MONGODB_VERSION=8.0, but MONGODB_URI is MongoDB 7.0.0" in done.stderr


def test_integration_tests_skip_without_a_server(tmp_path: Path) -> None:
    done = run_gated(tmp_path, GATED, "-rs", uri=None)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in done.stdout
    assert "needs a real server: set MONGODB_URI" in done.stdout
