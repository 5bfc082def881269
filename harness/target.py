"""The Target interface: the one seam between scenarios and devices.

A Target is an SDHCI controller with an SD card behind it, seen as a guest
driver sees it: registers at offsets relative to the controller's BAR0,
guest memory for DMA, a virtual clock, the level of the controller's
interrupt line, and the card's backing image.  ``QemuTarget`` implements it
over a qtest session, ``ModelTarget`` over the golden model.  Drivers,
scenarios, benchmarks and the cross-checker use nothing else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from harness.errors import AccessSizeError as AccessSizeError
from harness.errors import AddressError as AddressError
from harness.errors import ClockStepError as ClockStepError
from harness.errors import ClockUnavailable as ClockUnavailable
from harness.errors import OffsetError as OffsetError
from harness.errors import TargetError as TargetError
from harness.hwdefs.boards import Board

#: Register access sizes, in bytes.
ACCESS_SIZES = (1, 2, 4, 8)
#: Register offsets a Target takes.  The controller's window is 256 bytes;
#: outside it both targets see unassigned memory (reads 0, writes dropped),
#: from 2 GiB below the BAR (which sits above 2 GiB in the PCI hole) up to
#: the 48-bit physical address width of x86 guests.  Beyond that: OffsetError.
OFFSETS = range(-(1 << 31), 1 << 48)
_ADDRESS_SPACE = 1 << 64


def check_access(offset: int, size: int) -> None:
    """Raise the Target error for a register access no Target takes."""
    if size not in ACCESS_SIZES or isinstance(size, bool):
        raise AccessSizeError(f"access size must be 1, 2, 4 or 8, not {size!r}")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset not in OFFSETS:
        raise OffsetError(f"register offset {offset!r} is outside what the bus reaches "
                          f"({OFFSETS.start:#x}..{OFFSETS.stop - 1:#x})")


def check_memory(addr: int, length: int) -> None:
    """Raise the Target error for a guest memory range no Target takes."""
    if not isinstance(addr, int) or isinstance(addr, bool) or not isinstance(length, int):
        raise AddressError(f"guest memory range {addr!r}+{length!r} is not two ints")
    if length < 0 or addr < 0 or addr + length > _ADDRESS_SPACE:
        raise AddressError(f"guest memory range {addr:#x}+{length:#x} is outside the "
                           "64-bit physical address space")


def check_clock_step(ns: int | None) -> None:
    """Raise the Target error for a step that would move time backwards."""
    if ns is not None and ns < 0:
        raise ClockStepError(f"clock_step takes a non-negative step, not {ns}")


@runtime_checkable
class Target(Protocol):
    """An SDHCI controller with one SD card slot, as a guest sees it.

    Every implementation refuses the same misuse with the same error
    (:func:`check_access`, :func:`check_memory`, :func:`check_clock_step`):
    a size not in :data:`ACCESS_SIZES`, an offset outside :data:`OFFSETS`, a
    guest memory range outside the 64-bit space, a negative clock step.  A
    register value wider than the access is truncated to it.
    """

    #: Short, stable name used in reports ("model", "qemu-11.1", ...).
    name: str

    def read(self, offset: int, size: int) -> int:
        """Read ``size`` (1, 2, 4 or 8) bytes at controller ``offset``."""
        ...

    def write(self, offset: int, size: int, value: int) -> None:
        """Write ``size`` (1, 2, 4 or 8) bytes at controller ``offset``."""
        ...

    def mem_read(self, addr: int, length: int) -> bytes:
        """Read guest physical memory."""
        ...

    def mem_write(self, addr: int, data: bytes) -> None:
        """Write guest physical memory."""
        ...

    def clock_step(self, ns: int | None = None) -> int:
        """Advance virtual time by ``ns`` > 0 (or to the next timer deadline
        when ``None``) and return the new virtual time in nanoseconds.

        QEMU 10.0 and 11.1 (not 7.2) refuse a step that does not advance time
        ("could not advance time"), so a step of 0 is not portable."""
        ...

    def irq_level(self) -> bool:
        """Current level of the controller's interrupt line (INTx)."""
        ...

    def image_read(self, offset: int, length: int) -> bytes:
        """Read the card's backing image as the device has left it."""
        ...

    def close(self) -> None:
        """Release every resource (processes, sockets, temporary files)."""
        ...


@runtime_checkable
class IrqEvents(Protocol):
    """Optional beyond :class:`Target`: the interrupt line's changes as events.

    A Target that implements it reports every change of the INTx level in
    the order it happened, including a raise and lower within one operation
    that leaves the level where it was.  Only changes count: a device that
    drives the line to the level it already has makes no event (QEMU's qtest
    reports an intercepted input only when its level changes).
    """

    def irq_events(self) -> list[bool]:
        """The levels the line changed to since the last call (True: raised,
        False: lowered), oldest first; the call forgets them."""
        ...


@runtime_checkable
class MemoryCompare(Protocol):
    """Optional beyond :class:`Target`: a target that drives two devices
    (the lockstep) compares a range of guest memory between them.

    ``zone_of`` names the part of the range an address lies in (a buffer,
    a descriptor table, a guard zone), for the report.  A target that
    implements it remembers each range (a later range that covers an
    earlier one replaces it) so that its caller can compare them all again
    at the end of a run.
    """

    def compare_memory(self, addr: int, length: int, zone_of: Callable[[int], str]) -> None:
        """Read ``length`` bytes at ``addr`` on both sides; differing
        contents are a divergence naming the first differing address."""
        ...


def board_of(target: object) -> Board | None:
    """The ARM board whose controller ``target`` drives (its optional
    ``board`` attribute), or None: sdhci-pci on a PC.  Model and QEMU
    targets set it from their machine; a wrapping target passes its inner
    target's on."""
    board = getattr(target, "board", None)
    return board if isinstance(board, Board) else None
