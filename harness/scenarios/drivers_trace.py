"""A recording boot's QEMU trace, read into the events the drivers group is made from.

The trace is QEMU's *log* trace backend's file (``-D``) with the events of
:mod:`harness.guest.record`: ``memory_region_ops_read``/``_write`` (the memory
core's view of every CPU access to an MMIO or I/O region: offset in the region,
value, size, region name), ``sdhci_adma_loop`` (each ADMA descriptor the controller
fetched), ``sdhci_send_command`` and ``allwinner_sdhost_process_desc`` (each
descriptor the Allwinner's internal DMA processed).  Kept: the accesses to the controller's region
(``sdhci``), the phase marks (writes to ``ioport80``, or to a board's mark address
in a block QEMU leaves unimplemented or whose writes it drops: i.MX 7's ``csu``,
Exynos 4210's ``exynos4210.chipid``), the ADMA descriptors and the commands.  The
format of these events is the same in QEMU 7.2 to 11.1; a line of any other event or
region is skipped.
"""

from __future__ import annotations

import datetime
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.errors import SdqtestError

#: The controller's MMIO region name (QEMU's sdhci-pci BAR 0).
REGION = "sdhci"
#: The regions whose writes mark the recording's phases: port 0x80 on a PC, a block
#: the board leaves unimplemented on an ARM board (i.MX 7's CSU).
MARK_REGIONS = ("ioport80", "csu")
#: The mark that ends the last phase.
END_MARK = 255

_OPS = re.compile(r"memory_region_ops_(read|write) cpu -?\d+ mr (?:0x)?[0-9a-f]+ "
                  r"addr 0x([0-9a-f]+) value 0x([0-9a-f]+) size (\d+) name '([^']*)'")
_ADMA = re.compile(r"sdhci_adma_loop addr=0x([0-9a-f]+), len=(\d+), attr=0x([0-9a-f]+)")
_CMD = re.compile(r"sdhci_send_command CMD(\d+) ARG\[0x([0-9a-f]+)\]")
_IDMA = re.compile(r"allwinner_sdhost_process_desc desc_addr 0x([0-9a-f]+) desc_size (\d+) ")
#: The time ``-msg timestamp=on`` puts first: ``PID@SEC.USEC:`` (QEMU 7.2's log
#: backend) or an ISO 8601 UTC time (later QEMUs' log context).
_TIME_72 = re.compile(r"^\d+@(\d+)\.(\d{6}):")
_TIME_ISO = re.compile(r"^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?Z? ")


class TraceError(SdqtestError):
    """A trace the drivers group cannot be made from (one line saying why)."""


@dataclass(frozen=True)
class TraceAccess:
    """A CPU access to the controller: ``r`` or ``w``, offset, size in bytes, value,
    and when (µs of host time, 0 when the trace has no times)."""

    kind: str
    offset: int
    size: int
    value: int
    us: int = 0
    region: str = REGION


def line_time(line: str) -> int:
    """The time a trace line starts with, in µs (0: none)."""
    m = _TIME_72.match(line)
    if m is not None:
        return int(m.group(1)) * 1_000_000 + int(m.group(2))
    m = _TIME_ISO.match(line)
    if m is None:
        return 0
    y, mo, d, h, mi, sec = (int(x) for x in m.groups()[:6])
    frac = int((m.group(7) or "0").ljust(6, "0"))
    days = _days(y, mo, d)
    return ((days * 24 + h) * 60 + mi) * 60_000_000 + sec * 1_000_000 + frac


def _days(y: int, m: int, d: int) -> int:
    """Days from 1970-01-01 (proleptic Gregorian)."""
    return (datetime.date(y, m, d) - datetime.date(1970, 1, 1)).days


@dataclass(frozen=True)
class TraceDescriptor:
    """An ADMA descriptor the controller fetched: buffer address, length (0 is
    65536 for a transfer), attribute (SDHC 1.13.4)."""

    addr: int
    length: int
    attr: int


@dataclass(frozen=True)
class TraceCommand:
    """A command the controller sent to the card (``sdhci_send_command``)."""

    index: int
    arg: int


@dataclass(frozen=True)
class Mark:
    """The guest wrote ``value`` to port 0x80: phase ``value`` begins (255: the end;
    0: not a mark, Linux's ``io_delay`` writes it)."""

    value: int


@dataclass(frozen=True)
class IdmaDescriptor:
    """A descriptor the Allwinner's internal DMA controller processed: its address
    and its buffer size as QEMU took it (``allwinner_sdhost_process_desc``: a size
    of 0 is the variant's largest)."""

    addr: int
    size: int


Event = TraceAccess | TraceDescriptor | TraceCommand | Mark | IdmaDescriptor


def parse_line(line: str, regions: tuple[str, ...] = (REGION,),
               mark_at: int | None = None) -> Event | None:
    """The event on one trace line, None for any other line: accesses to
    ``regions``, the phase marks (writes to :data:`MARK_REGIONS`, or to the
    address ``mark_at``), the controller's DMA events."""
    m = _OPS.search(line)
    if m is not None:
        kind, addr, value, size, name = m.groups()
        at = int(addr, 16)
        if kind == "write" and (at == mark_at if mark_at is not None else
                                name in MARK_REGIONS):
            return Mark(int(value, 16) & 0xFF)
        if name in regions:
            return TraceAccess(kind[0], at, int(size), int(value, 16), line_time(line),
                               sys.intern(name))
        return None
    m = _ADMA.search(line)
    if m is not None:
        return TraceDescriptor(int(m.group(1), 16), int(m.group(2)), int(m.group(3), 16))
    m = _CMD.search(line)
    if m is not None:
        return TraceCommand(int(m.group(1)), int(m.group(2), 16))
    m = _IDMA.search(line)
    if m is not None:
        return IdmaDescriptor(int(m.group(1), 16), int(m.group(2)))
    return None


def parse(lines: Iterable[str], regions: tuple[str, ...] = (REGION,),
          mark_at: int | None = None) -> Iterator[Event]:
    """Every kept event of a trace, in order."""
    for line in lines:
        ev = parse_line(line, regions, mark_at)
        if ev is not None:
            yield ev


def phases(events: Iterable[Event], names: list[str]) -> dict[str, list[Event]]:
    """The events between mark ``i + 1`` and the next mark, under ``names[i]``;
    events before the first mark are dropped (the firmware's and the kernel's
    PCI probing touch no controller register, but a BAR sizing might)."""
    out: dict[str, list[Event]] = {}
    current: list[Event] | None = None
    for ev in events:
        if isinstance(ev, Mark):
            if ev.value == 0:  # the kernel's own I/O delay writes 0 to port 0x80
                continue
            if ev.value == END_MARK:
                current = None
            elif 1 <= ev.value <= len(names):
                current = out.setdefault(names[ev.value - 1], [])
            else:
                raise TraceError(f"phase mark {ev.value} outside 1..{len(names)}")
            continue
        if current is not None:
            current.append(ev)
    missing = [n for n in names if n not in out]
    if len(missing) == len(names):
        raise TraceError("no phase mark in the trace (did the guest's /init run, and does "
                         "the build have the trace events?)")
    return out


def read_trace(path: Path, names: list[str], regions: tuple[str, ...] = (REGION,),
               mark_at: int | None = None) -> dict[str, list[Event]]:
    """:func:`phases` of the trace file ``path``."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return phases(parse(f, regions, mark_at), names)
    except OSError as e:
        raise TraceError(f"cannot read the trace {path}: {e.strerror}") from None
