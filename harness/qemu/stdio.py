"""QEMU's ``-qtest stdio`` over plain pipes, one command at a time.

A pty (what pexpect gives) has a line discipline: in canonical mode the
kernel cuts an input line at 4095 bytes, so a ``b64write`` of 11 KiB
reaches QEMU truncated, and answers come back with ``\\r\\n``.  Pipes carry
bytes as they are, of any length.  Reads and writes wait with ``select``
and a deadline, so a QEMU that stops reading or answering is reported as
hung, never waited on for ever; the child gets ``PR_SET_PDEATHSIG`` and is
always killed and reaped by :meth:`StdioQtest.close`.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence

from harness.errors import QemuError
from harness.qemu.session import set_pdeathsig

#: The first word of a qtest answer (``OK``, ``FAIL``, ``ERR``); other lines
#: on stdout are asynchronous (``IRQ raise 10``).
ANSWERS = (b"OK", b"FAIL", b"ERR")


class StdioTimeout(QemuError):
    """QEMU neither answered nor exited within the timeout."""


class StdioQtest:
    """QEMU started with ``argv`` (which must hold ``-qtest stdio``)."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None) -> None:
        self.argv = list(argv)
        self._err = tempfile.TemporaryFile()  # noqa: SIM115 - closed in close()
        self._buf = b""
        #: Lines QEMU wrote that are not answers (IRQ events, a monitor's prompt).
        self.other: list[str] = []
        #: Whether :meth:`close` had to stop QEMU itself (it was still running).
        self.stopped_by_us = False
        try:
            self.proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err,
                preexec_fn=set_pdeathsig, close_fds=True,
                env=dict(env) if env is not None else None)
        except OSError as e:
            self._err.close()
            raise QemuError(f"cannot run {self.argv[0]}: {e.strerror}") from e
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin.fileno()
        self._out = self.proc.stdout.fileno()
        os.set_blocking(self._in, False)

    def _write(self, data: bytes, deadline: float) -> bool:
        """Write all of ``data``; False when QEMU closed its stdin (exited)."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StdioTimeout("QEMU stopped reading its qtest input")
            _, w, _ = select.select([], [self._in], [], left)
            if not w:
                continue
            try:
                n = os.write(self._in, view)
            except BrokenPipeError:
                return False
            except BlockingIOError:
                continue
            view = view[n:]
        return True

    def _line(self, deadline: float) -> bytes | None:
        """The next line QEMU writes, without its newline; None at EOF."""
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise StdioTimeout("no answer from QEMU")
            r, _, _ = select.select([self._out], [], [], left)
            if not r:
                continue
            chunk = os.read(self._out, 1 << 16)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.rstrip(b"\r")

    def command(self, line: str, timeout: float) -> str | None:
        """Send one qtest command and return QEMU's answer line, or None
        when QEMU has gone (exited, killed).  Raises :class:`StdioTimeout`
        when it neither answers nor exits within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        if not self._write(line.encode() + b"\n", deadline):
            return None
        while True:
            got = self._line(deadline)
            if got is None:
                return None
            if got.split(b" ", 1)[0] in ANSWERS:
                return got.decode(errors="replace")
            self.other.append(got.decode(errors="replace"))

    def close(self, grace: float = 5.0) -> int | None:
        """Close QEMU's input; stop it (SIGTERM, then SIGKILL) if it is still
        running; reap it.  Returns its exit status (negative: a signal)."""
        with contextlib.suppress(OSError):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
        if self.proc.poll() is None:
            # QEMU keeps running after its qtest input ends: end it ourselves.
            try:
                self.proc.wait(0.2)
            except subprocess.TimeoutExpired:
                self.stopped_by_us = True
                with contextlib.suppress(ProcessLookupError):
                    self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(grace)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(grace)
        with contextlib.suppress(OSError):
            assert self.proc.stdout is not None
            self.proc.stdout.close()
        return self.proc.returncode

    def kill(self) -> None:
        """Kill QEMU at once (a hang) and reap it."""
        if self.proc.poll() is None:
            self.stopped_by_us = True
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(5)

    def stderr(self) -> str:
        """Everything QEMU wrote to stderr so far."""
        if self._err.closed:
            return ""
        self._err.flush()
        self._err.seek(0)
        return self._err.read().decode(errors="replace")

    def __enter__(self) -> StdioQtest:
        return self

    def __exit__(self, *exc: object) -> None:
        self.kill()
        self.close()
        self._err.close()
