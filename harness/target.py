"""The Target interface: the one seam between scenarios and devices.

A Target is an SDHCI controller with an SD card behind it, seen as a guest
driver sees it: registers at offsets relative to the controller's BAR0,
guest memory for DMA, a virtual clock, the level of the controller's
interrupt line, and the card's backing image.  ``QemuTarget`` implements it
over a qtest session, ``ModelTarget`` over the golden model.  Drivers,
scenarios, benchmarks and the cross-checker use nothing else.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


class TargetError(Exception):
    """Base of the errors a Target raises for a bad request."""


class ClockUnavailable(TargetError):
    """The target cannot move virtual time (a QEMU build without qtest accel)."""


@runtime_checkable
class Target(Protocol):
    """An SDHCI controller with one SD card slot, as a guest sees it."""

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
