"""examples/quickstart.py as a new user runs it: on a server that is down."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_server  # the package's own stand-ins or no server at all

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart.py"


def test_the_quickstart_gives_up_on_a_server_that_is_down_within_its_timeout() -> None:
    """It sets the `timeoutMS` the README recommends: a server that does not answer fails
    the first call after 10 s, where PyMongo's default server selection waits 30 s (the
    driver's error says how long it waited; the process's own time varies with the
    machine's load)."""
    env = {**os.environ, "MONGODB_URI": "mongodb://127.0.0.1:9/?directConnection=true"}
    run = subprocess.run(
        [sys.executable, str(QUICKSTART)], env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 1
    assert "ServerSelectionTimeoutError" in run.stderr
    [waited] = set(re.findall(r"Timeout: ([0-9.]+)s", run.stderr))
    assert float(waited) <= 10, waited
