"""examples/quickstart.py as a new user runs it: on a server, and on one that is down."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

QUICKSTART = Path(__file__).parents[2] / "examples" / "quickstart.py"


def test_the_quickstart_gives_up_on_a_server_that_is_down_within_its_timeout() -> None:
    """It sets the `timeoutMS` the README recommends: a server that does not answer fails
    the first call in 10 s, where PyMongo's default server selection waits 30 s."""
    env = {**os.environ, "MONGODB_URI": "mongodb://127.0.0.1:9/?directConnection=true"}
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, str(QUICKSTART)], env=env, capture_output=True, text=True, timeout=60
    )
    took = time.monotonic() - started
    assert run.returncode == 1
    assert "ServerSelectionTimeoutError" in run.stderr
    assert took < 25, took
