"""Running `python -m langgraph.checkpoint.mongo ...` in a subprocess, as an operator does."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import termios


def run_command(
    command: list[str], *, tty: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The command; with `tty`, stderr is a terminal (and comes back in `stderr`)."""
    env = {**os.environ, "COLUMNS": "120", **(env or {})}
    if not tty:
        return subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    leader, follower = pty.openpty()
    # A terminal of 24 rows and 120 columns (a fresh pty has none).
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
    with subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
        env=env,
        text=True,
    ) as process:
        os.close(follower)
        terminal = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            terminal += chunk
        os.close(leader)
        assert process.stdout is not None
        out = process.stdout.read()
        code = process.wait(timeout=120)
    return subprocess.CompletedProcess(command, code, out, terminal.decode(errors="replace"))
