"""A synchronous QMP monitor on a unix socket the harness listens on.

QMP (QEMU's docs/interop/qmp-spec.rst) is one JSON object a line each
way: QEMU greets (``{"QMP": ...}``), the client sends
``qmp_capabilities`` to leave capabilities negotiation, then each
``{"execute": NAME, "arguments": ..., "id": ...}`` gets one
``{"return": ...}`` or ``{"error": {"class", "desc"}}`` carrying the same
``id``, and asynchronous ``{"event": ...}`` objects may come between them
at any time.  The harness asks one question at a time, so a blocking
socket and a line buffer are all it takes: a command costs 0.03 ms of the
harness's CPU here against 0.33 ms through ``qemu.qmp``'s asyncio shim
(``QEMUMonitorProtocol``, an event loop run per call), measured
2026-12-02 on 200 ``query-status``; a check makes several a run.
"""

from __future__ import annotations

import json
import select
import socket
import time
from collections import deque
from typing import Any

from harness.errors import QemuError


class QmpError(QemuError):
    """The monitor closed, timed out, or answered what QMP does not."""


class QmpServer:
    """Listens on ``path`` at once; :meth:`accept` takes QEMU's connection
    (its ``-chardev socket,path=...``) and negotiates capabilities."""

    def __init__(self, path: str) -> None:
        self._listener: socket.socket | None = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(path)
        self._listener.listen(1)
        self._sock: socket.socket | None = None
        self._buf = b""
        self._events: deque[dict[str, Any]] = deque()
        self._timeout: float | None = None
        self._id = 0
        self.greeting: dict[str, Any] = {}

    def accept(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        assert self._listener is not None
        self._listener.settimeout(timeout)
        try:
            self._sock, _ = self._listener.accept()
        except TimeoutError:
            raise QmpError(f"QEMU did not connect to QMP within {timeout:g} s") from None
        finally:
            self._listener.close()
            self._listener = None
        greeting = self._message(deadline)
        if greeting is None or "QMP" not in greeting:
            raise QmpError(f"no QMP greeting within {timeout:g} s (got {greeting!r})")
        self.greeting = greeting
        reply = self._ask("qmp_capabilities", None, deadline)
        if "return" not in reply:
            raise QmpError(f"qmp_capabilities refused: {reply}")

    def settimeout(self, timeout: float | None) -> None:
        self._timeout = timeout

    def cmd_raw(self, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        """QEMU's whole reply (``return`` or ``error``) to one command."""
        deadline = None if self._timeout is None else time.monotonic() + self._timeout
        return self._ask(name, args, deadline)

    def cmd(self, name: str, **args: Any) -> dict[str, Any]:
        return self.cmd_raw(name, args or None)

    def clear_events(self) -> None:
        """Forget every event QEMU sent so far (those still unread too)."""
        while self._message(time.monotonic(), poll=True) is not None:
            pass
        self._events.clear()

    def pull_event(self, wait: float = 0.0) -> dict[str, Any] | None:
        """The oldest event not yet pulled, waiting up to ``wait`` seconds
        for one; None when none came."""
        deadline = time.monotonic() + wait
        while not self._events:
            if self._message(deadline, poll=True) is None and time.monotonic() >= deadline:
                return None
        return self._events.popleft()

    def close(self) -> None:
        for s in (self._sock, self._listener):
            if s is not None:
                s.close()
        self._sock = self._listener = None

    # -- the wire ---------------------------------------------------------------

    def _ask(self, name: str, args: dict[str, Any] | None,
             deadline: float | None) -> dict[str, Any]:
        if self._sock is None:
            raise QmpError("the QMP monitor is not connected")
        self._id += 1
        msg: dict[str, Any] = {"execute": name, "id": self._id}
        if args:
            msg["arguments"] = args
        self._sock.sendall(json.dumps(msg).encode() + b"\n")
        while True:
            got = self._message(deadline)
            if got is None:
                raise QmpError(f"no answer to QMP {name} in time")
            if got.get("id") == self._id and ("return" in got or "error" in got):
                return got

    def _message(self, deadline: float | None, poll: bool = False) -> dict[str, Any] | None:
        """The next reply read (events are queued, and the next message
        looked at), or None at ``deadline``; ``poll``: any one message,
        event or not, without waiting past what has arrived by ``deadline``."""
        while True:
            line, sep, rest = self._buf.partition(b"\n")
            if sep:
                self._buf = rest
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except ValueError:
                    raise QmpError(f"QMP sent what is not JSON: {line[:200]!r}") from None
                if "event" in msg:
                    self._events.append(msg)
                    if poll:
                        return dict(msg)
                    continue
                return dict(msg)
            if not self._fill(deadline):
                return None

    def _fill(self, deadline: float | None) -> bool:
        """Read what QEMU sent, waiting until ``deadline``; False if nothing came."""
        assert self._sock is not None
        left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
        if not select.select([self._sock], [], [], left)[0]:
            return False
        data = self._sock.recv(65536)
        if not data:
            raise EOFError("QEMU closed the QMP monitor")
        self._buf += data
        return True
