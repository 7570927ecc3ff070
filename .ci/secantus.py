"""Run a command against SecantusDB, a MongoDB-compatible server no one here wrote.

`python .ci/secantus.py -- COMMAND...` (from `.ci/run` and `nox -s secantus`):
1. a virtual environment of its own in a temporary directory gets SecantusDB (`SECANTUSDB`,
   pinned: a new version is a change to review, as its deviations may change);
2. the server starts on a free loopback port with its data in that directory, as its daemon
   `secantusd-py` starts it by default (a single-node replica set, as the `integration`
   sessions' MongoDB; its `--standalone` mode answers a write concern of `w: 2` or more as a
   replica set does, with UnsatisfiableWriteConcern (100) after the write, where a standalone
   `mongod` refuses it with BadValue (2); test commands off), but for one setting: its TTL
   pass runs every second, as `docker/`'s `mongod`s run with `ttlMonitorSleepSecs=1` (the
   default is 60 s; the daemon 0.7.0b3 reads no setting for it, so the server is built from
   the package's `SecantusDBServer`, the class its daemon runs);
3. COMMAND runs with `MONGODB_URI` naming it; its exit code is this script's;
4. the server is stopped and the directory removed however COMMAND ends (an error, Ctrl-C,
   SIGTERM from CI). A server that does not start fails the run with its log.
`--venv DIR` installs SecantusDB there once and reuses it (a maintainer's faster reruns).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path
from types import FrameType

SECANTUSDB = "secantusdb==0.7.0b3"
START_TIMEOUT = 60.0  # seconds until the server must accept connections
TTL_PASS_SECONDS = 1.0

# Run by the SecantusDB venv's Python: argv host, port, data directory, TTL pass interval.
SERVE = """
import logging, signal, sys
from secantus import SecantusDBServer
host, port, data, ttl_pass = sys.argv[1], int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
logging.basicConfig(level="INFO", format="%(asctime)s %(levelname)s %(name)s: %(message)s")
server = SecantusDBServer(
    host, port, data, enable_test_commands=False, ttl_sweep_seconds=ttl_pass
)
def stop(signum, frame):
    server.stop()
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
signal.signal(signal.SIGINT, stop)
server.start()
server.wait()
"""


def _stop_on_signal(signum: int, _frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the `finally` that stops the server


def _server_python(env_dir: Path) -> Path:
    """The environment's Python, with SecantusDB installed there first unless it already is."""
    scripts = env_dir / ("Scripts" if os.name == "nt" else "bin")
    if not (scripts / "secantusd-py").exists():
        venv.create(env_dir, with_pip=True, clear=True)
        pip = [str(scripts / "python"), "-m", "pip", "install", "--quiet"]
        subprocess.run([*pip, SECANTUSDB], check=True)
    return scripts / "python"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_listening(server: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.poll() is not None:
            break
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            time.sleep(0.2)
        else:
            return
    sys.stderr.write(log.read_text(errors="replace"))
    raise SystemExit(f"SecantusDB did not start on 127.0.0.1:{port} (its log is above)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, help="install SecantusDB here once and reuse it")
    parser.add_argument("command", nargs="+", help="what to run with MONGODB_URI set")
    args = parser.parse_args()
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop_on_signal)
    with tempfile.TemporaryDirectory(prefix="secantus-") as tmp:
        work = Path(tmp)
        python = _server_python(args.venv.resolve() if args.venv else work / "venv")
        log, port = work / "secantusd.log", _free_port()
        command = [str(python), "-c", SERVE, "127.0.0.1", str(port), str(work / "data")]
        command.append(str(TTL_PASS_SECONDS))
        with log.open("wb") as out:
            server = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_until_listening(server, port, log)
            uri = f"mongodb://127.0.0.1:{port}/?directConnection=true"
            print(f"SecantusDB ({SECANTUSDB}) on {uri}, data in {work}", flush=True)
            env = {**os.environ, "MONGODB_URI": uri}
            return subprocess.run(args.command, env=env, check=False).returncode
        finally:
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()


if __name__ == "__main__":
    sys.exit(main())
