"""The qtest client against a scripted peer: no QEMU needed.

The peer answers as QEMU's system/qtest.c does, and injects asynchronous
``IRQ raise/lower`` lines between (and before) answers.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from harness.qemu import qtest
from harness.qemu.qtest import QtestClient, QtestClosed, QtestError, QtestTimeout


class Peer:
    """A fake QEMU end: ``script(line) -> reply text`` for each command line."""

    def __init__(self, script: Callable[[str], str | None]) -> None:
        self.a, self.b = socket.socketpair()
        self.script = script
        self.received: list[str] = []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        f = self.b.makefile("rb")
        for raw in f:
            line = raw.decode().rstrip("\n")
            self.received.append(line)
            reply = self.script(line)
            if reply is None:
                continue  # simulate a hang
            if reply == "<close>":
                self.b.close()
                return
            self.b.sendall(reply.encode())


@pytest.fixture
def peer_factory() -> Iterator[Callable[[Callable[[str], str | None]], Peer]]:
    peers: list[Peer] = []

    def make(script: Callable[[str], str | None]) -> Peer:
        p = Peer(script)
        peers.append(p)
        return p

    yield make
    for p in peers:
        p.a.close()
        p.b.close()


def test_irq_lines_between_answers_are_consumed_and_tracked(peer_factory) -> None:  # type: ignore[no-untyped-def]
    def script(line: str) -> str:
        if line.startswith("writel"):
            return "IRQ raise 21\nOK\n"
        if line.startswith("readl"):
            return "IRQ lower 21\nIRQ raise 11\nOK 0x0000000000000005\n"
        return "FAIL Unknown command\n"

    peer = peer_factory(script)
    c = QtestClient(peer.a, timeout=2)
    c.mmio_write(4, 0x1000, 1)
    assert c.irq_levels == {21: True}
    assert c.mmio_read(4, 0x1000) == 5
    assert c.irq_levels == {21: False, 11: True}
    assert c.irq_events == [(21, True), (21, False), (11, True)]


def test_pipeline_answers_come_back_in_order(peer_factory) -> None:  # type: ignore[no-untyped-def]
    def script(line: str) -> str:
        addr = int(line.split()[1], 16)
        irq = "IRQ raise 3\n" if addr % 3 == 0 else ""
        return f"{irq}OK 0x{addr * 2:016x}\n"

    peer = peer_factory(script)
    c = QtestClient(peer.a, timeout=2)
    cmds = [qtest.fmt_mmio_read(4, a) for a in range(1, 200)]
    answers = c.pipeline(cmds)
    assert [qtest.parse_int(a) for a in answers] == [a * 2 for a in range(1, 200)]
    assert peer.received == cmds
    assert c.irq_levels == {3: True}


@pytest.mark.parametrize("irq_every", [0, 3])
def test_read_answers_marks_each_answer_with_the_events_before_it(  # type: ignore[no-untyped-def]
        peer_factory, irq_every: int) -> None:
    """Each answer's mark counts the IRQ lines QEMU sent before it (the
    events of the command it answers); no IRQ line at all: no marks."""
    def script(line: str) -> str:
        if not line.startswith("readl"):
            return "OK little\n" if line == "endianness" else "FAIL Unknown command\n"
        addr = int(line.split()[1], 16)
        irq = "IRQ raise 3\nIRQ lower 3\n" if irq_every and addr % irq_every == 0 else ""
        return f"{irq}OK 0x{addr:016x}\n"

    peer = peer_factory(script)
    c = QtestClient(peer.a, timeout=2)
    c.send_lines([qtest.fmt_mmio_read(4, a) for a in range(1, 100)])
    texts, marks = c.read_answers(99)
    assert texts == [f"OK 0x{a:016x}" for a in range(1, 100)]
    if not irq_every:
        assert marks is None and c.irq_events == []
    else:
        assert marks == [2 * (a // 3) for a in range(1, 100)]
        assert len(c.irq_events) == 2 * 33
    c.send_lines(["endianness", "bogus", "endianness"])
    with pytest.raises(QtestError, match="command 2 of 3"):
        c.read_answers(3)


def test_fail_answer_raises_and_stream_stays_in_step(peer_factory) -> None:  # type: ignore[no-untyped-def]
    def script(line: str) -> str:
        return "FAIL Unknown command 'bogus'\n" if line == "bogus" else "OK little\n"

    peer = peer_factory(script)
    c = QtestClient(peer.a, timeout=2)
    with pytest.raises(QtestError):
        c.command("bogus")
    assert c.endianness() == "little"
    with pytest.raises(QtestError):
        c.pipeline(["endianness", "bogus", "endianness"])
    assert c.endianness() == "little"


def test_trace_records_every_command(peer_factory) -> None:  # type: ignore[no-untyped-def]
    peer = peer_factory(lambda line: "OK 0x0000000000000000\n")
    c = QtestClient(peer.a, timeout=2)
    c.mmio_read(2, 0xE00000FE)
    c.pipeline([qtest.fmt_mmio_write(1, 0xE000002F, 1)])
    assert c.trace == ["readw 0xe00000fe", "writeb 0xe000002f 0x1"]


def test_timeout_is_reported_and_hook_called(peer_factory) -> None:  # type: ignore[no-untyped-def]
    peer = peer_factory(lambda line: None)
    called = []
    c = QtestClient(peer.a, timeout=0.3, on_timeout=lambda: called.append(1))
    with pytest.raises(QtestTimeout):
        c.endianness()
    assert called == [1]


def test_peer_closing_is_reported(peer_factory) -> None:  # type: ignore[no-untyped-def]
    peer = peer_factory(lambda line: "<close>")
    seen = []
    c = QtestClient(peer.a, timeout=2, on_eof=lambda: seen.append("eof"))
    with pytest.raises(QtestClosed):
        c.endianness()
    assert seen == ["eof"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: qtest.fmt_mmio_write(3, 0, 0),            # no 3-byte access
        lambda: qtest.fmt_mmio_write(1, 0, 0x100),        # value too wide
        lambda: qtest.fmt_mmio_read(4, -1),               # negative address
        lambda: qtest.fmt_mmio_read(4, 1 << 64),          # address too wide
        lambda: qtest.fmt_out(8, 0xCF8, 0),               # no 8-byte port I/O
        lambda: qtest.fmt_in(1, 0x10000),                 # port too wide
        lambda: qtest.fmt_write(0, b""),                  # QEMU rejects empty data
        lambda: qtest.fmt_clock_step(-5),
    ],
)
def test_malformed_commands_are_refused_before_sending(make) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError)):
        make()


def test_zero_length_read_refused(peer_factory) -> None:  # type: ignore[no-untyped-def]
    peer = peer_factory(lambda line: "OK\n")
    c = QtestClient(peer.a, timeout=2)
    with pytest.raises(ValueError):
        c.memread(0, 0)  # QEMU's "read" asserts on a zero length
    with pytest.raises(ValueError):
        c.irq_intercept_in("ioapic; quit")
    assert peer.received == []
