"""Subprocesses that never outlive the bisect: own process group, timeout, log file."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass(frozen=True)
class Ran:
    """How a command ended: ``returncode`` is None when it timed out."""

    returncode: int | None
    seconds: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's whole process group, then SIGKILL; always reap."""
    for sig, wait in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # Whatever the leader left behind in its group goes too.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def run(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    log: IO[str],
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    stdout: IO[bytes] | None = None,
) -> Ran:
    """Run ``cmd`` in its own session, output appended to ``log``.

    ``stdout``, if given, receives the standard output alone (stderr still
    goes to the log).  On a timeout the group is killed and ``returncode`` is
    None; on any exception (Ctrl-C, SIGTERM turned into SystemExit) the group
    is killed and the exception goes on.
    """
    import time

    log.write("$ " + " ".join(str(c) for c in cmd) + "\n")
    log.flush()
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [str(c) for c in cmd],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=stdout if stdout is not None else log,
        stderr=log,
        start_new_session=True,
        close_fds=True,
    )
    try:
        rc: int | None = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        rc = None
        log.write(f"\n[sdqtest: timed out after {timeout:g} s, killed]\n")
    except BaseException:
        _kill_group(proc)
        raise
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    dt = time.monotonic() - t0
    log.write(f"[sdqtest: exit status {rc}, {dt:.1f} s]\n")
    log.flush()
    return Ran(rc, dt)


def capture(
    cmd: Sequence[str | os.PathLike[str]],
    *,
    timeout: float = 60.0,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a short command and capture its output (no check on the status)."""
    return subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def read_tail(path: Path, lines: int = 5) -> list[str]:
    """The last non-empty lines of a text file."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return []
    return [ln for ln in text.splitlines() if ln.strip()][-lines:]
