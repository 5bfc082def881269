"""The harness's QMP monitor against a scripted peer speaking QMP as QEMU
does (docs/interop/qmp-spec.rst: greeting, negotiation, replies carrying
the command's id, events in between), then against QEMU itself."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.qemu.builds import QemuBuild
from harness.qemu.qmp import QmpError, QmpServer
from harness.qemu.session import QemuSession

Peer = Callable[[socket.socket, Callable[[], dict[str, Any]]], None]


def _lines(sock: socket.socket) -> Callable[[], dict[str, Any]]:
    f = sock.makefile("rb")
    return lambda: json.loads(f.readline())


def _send(sock: socket.socket, *msgs: dict[str, Any]) -> None:
    sock.sendall(b"".join(json.dumps(m).encode() + b"\r\n" for m in msgs))


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[[Peer], QmpServer]]:
    threads: list[threading.Thread] = []
    servers: list[QmpServer] = []

    def start(peer: Peer) -> QmpServer:
        path = str(tmp_path / f"qmp{len(servers)}.sock")
        srv = QmpServer(path)

        def run() -> None:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(path)
            _send(c, {"QMP": {"version": {}, "capabilities": []}})
            read = _lines(c)
            got = read()
            assert got["execute"] == "qmp_capabilities"
            _send(c, {"return": {}, "id": got["id"]})
            peer(c, read)
            c.settimeout(10)
            while c.recv(1000):  # until the harness closes its end
                pass
            c.close()

        t = threading.Thread(target=run, daemon=True)
        t.start()
        threads.append(t)
        srv.accept(5)
        srv.settimeout(5)
        servers.append(srv)
        return srv

    yield start
    for s in servers:
        s.close()
    for t in threads:
        t.join(5)


def test_a_reply_is_matched_by_id_and_events_between_are_kept(
        serve: Callable[[Peer], QmpServer]) -> None:
    def peer(c: socket.socket, read: Callable[[], dict[str, Any]]) -> None:
        q = read()
        _send(c, {"event": "RESET", "data": {}}, {"return": {"status": "running"}, "id": q["id"]})
        q = read()
        _send(c, {"error": {"class": "GenericError", "desc": "no"}, "id": q["id"]})

    srv = serve(peer)
    assert srv.cmd_raw("query-status") == {"return": {"status": "running"}, "id": 2}
    assert srv.cmd_raw("bad")["error"]["desc"] == "no"
    assert srv.pull_event(0)["event"] == "RESET"  # type: ignore[index]
    assert srv.pull_event(0) is None


def test_an_event_is_waited_for_and_cleared_events_are_gone(
        serve: Callable[[Peer], QmpServer]) -> None:
    def peer(c: socket.socket, read: Callable[[], dict[str, Any]]) -> None:
        _send(c, {"event": "STALE", "data": {}})
        q = read()
        _send(c, {"return": {}, "id": q["id"]})
        _send(c, {"event": "RESET", "data": {}})
        c.recv(1000)  # the last command, never answered

    srv = serve(peer)
    srv.clear_events()  # STALE may or may not have arrived yet: either way it is gone
    srv.cmd_raw("system_reset")
    got = srv.pull_event(5)
    assert got is not None and got["event"] in ("STALE", "RESET")
    if got["event"] == "STALE":  # it came after the clear: RESET follows
        got = srv.pull_event(5)
        assert got is not None and got["event"] == "RESET"
    with pytest.raises((QmpError, OSError, EOFError)):
        srv.settimeout(0.2)
        srv.cmd_raw("query-status")  # the peer never answers


def test_a_closed_monitor_raises(serve: Callable[[Peer], QmpServer]) -> None:
    srv = serve(lambda c, read: c.shutdown(socket.SHUT_WR))  # negotiates, then hangs up
    with pytest.raises((EOFError, OSError)):
        srv.cmd_raw("query-status")


def test_no_connection_is_a_timeout(tmp_path: Path) -> None:
    srv = QmpServer(str(tmp_path / "q.sock"))
    with pytest.raises(QmpError, match="did not connect"):
        srv.accept(0.1)
    srv.close()


@pytest.mark.qemu
def test_qemu_answers_and_sends_its_reset_event(qemu_build: QemuBuild) -> None:
    with QemuSession(qemu_build.binary) as s:
        assert s.qmp_cmd("query-status")["status"] in ("running", "paused", "prelaunch")
        s.system_reset()  # waits for QEMU's RESET event
        assert "qemu" in s.qmp.greeting["QMP"]["version"]
