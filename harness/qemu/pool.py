"""Reused QEMU processes: one per machine description, reset between uses.

Launching QEMU costs 0.15-0.3 s; resetting a running one to the state of a
fresh launch (:meth:`QemuTarget.reuse`: new card medium, ``system_reset``,
RAM scrubbed, PCI programmed again, virtual time counted from the reset)
costs about a third of that.  A :class:`QemuPool` keeps idle targets keyed
by :func:`reuse_key`, the machine description without the card image's
file, so a scenario that needs other device properties, another machine
type or another kind of image gets a process of its own.

A target is handed back with :meth:`QemuPool.release`; one whose QEMU
crashed, hung or failed a request is closed, never reused.  Where a reset
fails (a QMP command a build refuses, an interrupt line left raised) the
pool closes that process and launches afresh, and counts it in
:attr:`QemuPool.fallbacks` with the reason, so it is never silently wrong.
Not thread safe: one pool per worker process.
"""

from __future__ import annotations

import contextlib
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import QemuError
from harness.machine import CardImage, Machine
from harness.qemu.target import REUSE_RAM_LIMIT, QemuTarget

#: Most idle processes a pool keeps (least recently used closed first).
DEFAULT_IDLE = 4

PoolKey = tuple[str, str, float, Machine]

#: Cards whose state a reset does not clear, always launched afresh: an
#: eMMC's RPMB authentication key and write counter stand for the device's
#: non-volatile storage and survive ``system_reset`` (a reused process
#: would start with the key of the previous scenario programmed).
NOT_RESET = frozenset({"emmc"})
#: ``Board.reset_keeps`` entries whose reset restores every register but
#: leaves the interrupt output as it was: a process whose line is low when
#: it is handed back is what a fresh launch is, one whose line is raised is
#: closed (:meth:`QemuPool.release`), not reset and refused later.
LINE_ONLY = frozenset({"sunxi.reset-keeps-irq"})


def reuse_key(binary: str | Path, machine: Machine, accel: str = "auto",
              timeout: float = 10.0) -> PoolKey | None:
    """What a process must share with ``machine`` to be reused for it: the
    binary, accelerator, timeout and machine description with the image
    file left out (its format, read-only flag, cache mode and null size
    stay).  ``None``: this machine is always launched afresh."""
    m = machine.resolved()
    if m.ram > REUSE_RAM_LIMIT or m.sdhci is None or m.card_kind in NOT_RESET:
        return None
    board = m.board_def
    if board is not None and ((board.reset_keeps and board.reset_keeps not in LINE_ONLY)
                              or board.ram_own):
        return None  # state system_reset keeps, or RAM outside the backend file: afresh
    image = m.image
    if image is not None and image.path is not None:
        image = CardImage(Path("<file>"), format=image.format, readonly=image.readonly,
                          cache=image.cache)
    return (str(binary), accel, timeout, m.replace(image=image))


def _line_kept(target: QemuTarget) -> bool:
    """``target``'s interrupt line is raised on a board whose reset leaves it
    so (:data:`LINE_ONLY`): ``system_reset`` would not lower it."""
    board = target.machine.board_def
    return board is not None and board.reset_keeps in LINE_ONLY and target.irq_level()


@dataclass
class PoolStats:
    """What a pool did: processes launched, scenarios served by a reset,
    and each fall back to a fresh launch with its reason."""

    launched: int = 0
    reused: int = 0
    fallbacks: list[str] = field(default_factory=list)
    #: Seconds spent launching, resetting (:meth:`QemuTarget.reuse`) and
    #: closing processes: ``check --profile`` (:mod:`harness.check.wall`).
    launch_seconds: float = 0.0
    reset_seconds: float = 0.0
    close_seconds: float = 0.0

    def since(self, before: PoolStats) -> PoolStats:
        """What the pool did after ``before`` (a copy taken earlier)."""
        return PoolStats(self.launched - before.launched, self.reused - before.reused,
                         self.fallbacks[len(before.fallbacks):],
                         self.launch_seconds - before.launch_seconds,
                         self.reset_seconds - before.reset_seconds,
                         self.close_seconds - before.close_seconds)

    def add(self, other: PoolStats) -> None:
        """Count ``other``'s figures in these."""
        self.launched += other.launched
        self.reused += other.reused
        self.fallbacks += other.fallbacks
        self.launch_seconds += other.launch_seconds
        self.reset_seconds += other.reset_seconds
        self.close_seconds += other.close_seconds

    def copy(self) -> PoolStats:
        return PoolStats(self.launched, self.reused, list(self.fallbacks),
                         self.launch_seconds, self.reset_seconds, self.close_seconds)


class QemuPool:
    """Idle :class:`QemuTarget` processes by :func:`reuse_key`.

    ``enabled=False`` makes every :meth:`acquire` a fresh launch and every
    :meth:`release` a close: the same code path without reuse (benchmarks,
    the equivalence test).
    """

    def __init__(self, *, enabled: bool = True, idle: int = DEFAULT_IDLE) -> None:
        self.enabled = enabled
        self.idle = idle
        self.stats = PoolStats()
        self._idle: OrderedDict[PoolKey, QemuTarget] = OrderedDict()

    def acquire(self, binary: str | Path, machine: Machine, *, accel: str = "auto",
                timeout: float = 10.0, name: str | None = None) -> QemuTarget:
        """A target for ``machine``, as a fresh launch would give it."""
        key = reuse_key(binary, machine, accel, timeout) if self.enabled else None
        t = self._idle.pop(key, None) if key is not None else None
        t0 = time.monotonic()
        if t is not None:
            try:
                t.reuse(machine)
                t.name = name or t.name
                self.stats.reused += 1
                return t
            except QemuError as e:
                self.stats.fallbacks.append(f"{Path(binary).name} {machine.type}: {e}")
                t.close()
            finally:
                self.stats.reset_seconds += time.monotonic() - t0
        t0 = time.monotonic()
        try:
            t = QemuTarget(binary, machine, accel=accel, timeout=timeout, name=name,
                           reusable=key is not None)
        finally:
            self.stats.launch_seconds += time.monotonic() - t0
        self.stats.launched += 1
        return t

    def _close(self, target: QemuTarget) -> None:
        t0 = time.monotonic()
        try:
            target.close()
        finally:
            self.stats.close_seconds += time.monotonic() - t0

    def release(self, target: QemuTarget, *, healthy: bool = True) -> None:
        """Hand ``target`` back: kept for reuse if ``healthy`` and its QEMU
        still runs, closed otherwise."""
        key = reuse_key(target.binary, target.machine, target.session.accel_request,
                        target.session.timeout) if self.enabled else None
        alive = target.session.proc is not None and target.session.proc.poll() is None
        if key is None or not healthy or not alive or target.qtest.closed \
                or not target.session.can_scrub or _line_kept(target):
            self._close(target)
            return
        old = self._idle.pop(key, None)
        if old is not None:
            self._close(old)
        self._idle[key] = target
        while len(self._idle) > self.idle:
            _, lru = self._idle.popitem(last=False)
            self._close(lru)

    def close(self) -> None:
        """Close every idle process."""
        while self._idle:
            _, t = self._idle.popitem()
            with contextlib.suppress(Exception):
                t.close()

    def __enter__(self) -> QemuPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
