"""README.md's python blocks run as a reader pastes them: each alone in a file, run by a
Python of its own (pytest for a block of tests), with nothing defined beforehand, against a
MongoDB server where the block connects. The server is the wire stand-in: its address
replaces the block's `mongodb://localhost:27017`, and nothing else of the block changes.
(The suite also runs every block in process, through the root `conftest.py`.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from langgraph.checkpoint.mongo.testing._wire import WireServer

README = Path(__file__).parents[2] / "README.md"
ADDRESS = "mongodb://localhost:27017"
BLOCKS = re.findall(r"^```python\n(.*?)^```$", README.read_text(encoding="utf-8"), re.M | re.S)


@pytest.fixture(scope="module")
def server() -> Iterator[WireServer]:
    with WireServer() as server:
        yield server


def test_the_readme_has_blocks_that_connect_where_a_reader_runs_mongodb() -> None:
    assert len(BLOCKS) >= 4
    assert sum(ADDRESS in block for block in BLOCKS) >= 3


@pytest.mark.parametrize("number", range(len(BLOCKS)))
def test_each_readme_block_runs_pasted_into_a_file(
    server: WireServer, tmp_path: Path, number: int
) -> None:
    block = BLOCKS[number]
    # Not this project's configuration: a reader's own, with pytest-asyncio's one setting.
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
    )
    if re.search(r"^(async )?def test_", block, re.M):
        script = tmp_path / "test_block.py"
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)]
    else:
        script = tmp_path / "block.py"
        command = [sys.executable, str(script)]
    script.write_text(block.replace(ADDRESS, server.uri), encoding="utf-8")
    environment = {name: value for name, value in os.environ.items() if name != "MONGODB_URI"}
    server.reset()
    done = subprocess.run(
        command, cwd=tmp_path, env=environment, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
    assert "Warning" not in done.stderr, done.stderr
    if ADDRESS in block:  # it ran against the server it names
        assert server.count() > 0
