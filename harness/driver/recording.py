"""A Target wrapper that logs every operation with its result.

The log is what a driver did and what it saw, in order; the cross-check
engine compares two such logs (model and QEMU) entry by entry, and tests use
it to assert on the register traffic a driver produced.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from harness.hwdefs.boards import Board
from harness.target import Target, board_of

Op = Literal[
    "read", "write", "mem_read", "mem_write", "clock_step", "irq_level", "image_read", "close"
]


@dataclass(frozen=True)
class Event:
    """One Target operation: its name, its arguments and what it returned.

    ``args`` hold plain values only (ints, bytes, ``None``), so two logs can
    be compared with ``==`` and printed.  ``seq`` numbers events from 0.
    """

    seq: int
    op: Op
    args: tuple[int | bytes | None, ...]
    result: int | bool | bytes | None

    def __str__(self) -> str:
        def fmt(v: object) -> str:
            if isinstance(v, bool) or v is None:
                return str(v)
            if isinstance(v, int):
                return hex(v)
            if isinstance(v, bytes):
                return v[:16].hex() + ("..." if len(v) > 16 else "") + f"({len(v)})"
            return repr(v)

        a = ", ".join(fmt(x) for x in self.args)
        return f"#{self.seq} {self.op}({a}) -> {fmt(self.result)}"


class RecordingTarget:
    """Implements :class:`~harness.target.Target` over ``inner``, logging each call.

    ``log`` is the list of :class:`Event`; ``marks`` maps labels set with
    :meth:`mark` to the log length at that moment, so a caller can slice out
    the traffic of one step.  Set ``enabled = False`` to pass calls through
    without logging.
    """

    def __init__(self, inner: Target, *, name: str | None = None) -> None:
        self.inner = inner
        self.name = name if name is not None else inner.name
        self.log: list[Event] = []
        self.marks: list[tuple[str, int]] = []
        self.enabled = True

    @property
    def board(self) -> Board | None:
        """The inner target's board, for the driver."""
        return board_of(self.inner)

    # -- bookkeeping -------------------------------------------------------

    def _rec(
        self, op: Op, args: tuple[int | bytes | None, ...], result: int | bool | bytes | None
    ) -> None:
        if self.enabled:
            self.log.append(Event(len(self.log), op, args, result))

    def mark(self, label: str) -> None:
        """Remember the current log position under ``label``."""
        self.marks.append((label, len(self.log)))

    def since(self, label: str) -> list[Event]:
        """Events logged since the latest :meth:`mark` called ``label``."""
        for name, pos in reversed(self.marks):
            if name == label:
                return self.log[pos:]
        raise KeyError(label)

    def clear(self) -> None:
        self.log.clear()
        self.marks.clear()

    def ops(self, *names: Op) -> Iterator[Event]:
        """Events whose ``op`` is one of ``names`` (all events when none given)."""
        return (e for e in self.log if not names or e.op in names)

    def register_traffic(self) -> list[tuple[str, int, int, int]]:
        """``(op, offset, size, value)`` of every register read and write."""
        out: list[tuple[str, int, int, int]] = []
        for e in self.log:
            if e.op == "read":
                off, size = e.args
                assert isinstance(off, int) and isinstance(size, int)
                assert isinstance(e.result, int)
                out.append(("read", off, size, e.result))
            elif e.op == "write":
                off, size, val = e.args
                assert isinstance(off, int) and isinstance(size, int) and isinstance(val, int)
                out.append(("write", off, size, val))
        return out

    # -- Target ------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        v = self.inner.read(offset, size)
        self._rec("read", (offset, size), v)
        return v

    def write(self, offset: int, size: int, value: int) -> None:
        self.inner.write(offset, size, value)
        self._rec("write", (offset, size, value), None)

    def mem_read(self, addr: int, length: int) -> bytes:
        data = self.inner.mem_read(addr, length)
        self._rec("mem_read", (addr, length), data)
        return data

    def mem_write(self, addr: int, data: bytes) -> None:
        self.inner.mem_write(addr, data)
        self._rec("mem_write", (addr, bytes(data)), None)

    def clock_step(self, ns: int | None = None) -> int:
        now = self.inner.clock_step(ns)
        self._rec("clock_step", (ns,), now)
        return now

    def irq_level(self) -> bool:
        level = self.inner.irq_level()
        self._rec("irq_level", (), level)
        return level

    def image_read(self, offset: int, length: int) -> bytes:
        data = self.inner.image_read(offset, length)
        self._rec("image_read", (offset, length), data)
        return data

    def close(self) -> None:
        self.inner.close()
        self._rec("close", (), None)


def first_difference(
    a: list[Event], b: list[Event]
) -> tuple[int, Event | None, Event | None] | None:
    """Index and events where two logs first differ (``None`` beyond the
    shorter log's end), or ``None`` when they are equal.  Sequence numbers
    are ignored."""
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else None
        y = b[i] if i < len(b) else None
        if x is None or y is None or (x.op, x.args, x.result) != (y.op, y.args, y.result):
            return i, x, y
    return None
