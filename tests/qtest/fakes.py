"""The one fake :class:`~harness.target.Target` of the tests.

Registers are bytes (little-endian, as the SD Host Controller's are): a
write of any size sets its bytes, a read of any size reads them back;
Normal and Error Interrupt Status are write-1-to-clear (SDHC 2.2.17,
2.2.18).  Accesses are recorded, ``hooks[offset]`` runs after a write that
touches that byte and ``read_hooks[base]`` answers reads of the four bytes
at ``base``.  Guest memory is a byte dict; the card image is ``image`` (a
file, in ``image_format``) or zeros.  A test that needs a device of its
own subclasses it and overrides the one access it is about.
:func:`fake_qemu` makes the class a test puts in place of ``QemuTarget``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.hwdefs import sdhci as H
from harness.qemu.target import read_container

Hook = Callable[[int, int, int], None]
#: The write-1-to-clear status registers.
W1C = (H.NORINTSTS.offset, H.ERRINTSTS.offset)


class FakeTarget:
    """A Target from a dict of register values (``{offset: value}``, each
    stored as four little-endian bytes).  ``irq``: the interrupt line; None
    makes it follow Command Complete (NORINTSTS bit 0)."""

    def __init__(self, name: str = "fake", regs: dict[int, int] | None = None, *,
                 irq: bool | None = False, image: Path | None = None,
                 image_format: str = "raw") -> None:
        self.name = name
        self.regs: dict[int, int] = {}
        for off, value in (regs or {}).items():
            self.set(off, 4, value)
        self.irq = irq
        self.image = image
        self.image_format = image_format
        self.trace: list[str] = []
        self.hooks: dict[int, Hook] = {}
        self.read_hooks: dict[int, Callable[[int, int], int]] = {}
        self.reads: list[tuple[int, int]] = []
        self.writes: list[tuple[int, int, int]] = []
        self.steps = 0
        self.mem: dict[int, int] = {}
        self.reconciled: list[Any] = []

    # -- the register bytes, without recording -------------------------------

    def set(self, offset: int, size: int, value: int) -> None:
        for i in range(size):
            self.regs[offset + i] = (value >> (8 * i)) & 0xFF

    def get(self, offset: int, size: int) -> int:
        return sum(self.regs.get(offset + i, 0) << (8 * i) for i in range(size))

    # -- Target ----------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        self.reads.append((offset, size))
        for base, fn in self.read_hooks.items():
            if base <= offset < base + 4:
                return fn(offset, size)
        return self.get(offset, size)

    def write(self, offset: int, size: int, value: int) -> None:
        self.writes.append((offset, size, value))
        if offset in W1C:
            self.set(offset, size, self.get(offset, size) & ~value)
        else:
            self.set(offset, size, value)
        for i in range(size):
            hook = self.hooks.get(offset + i)
            if hook is not None:
                hook(offset, size, value)

    def mem_read(self, addr: int, length: int) -> bytes:
        return bytes(self.mem.get(addr + i, 0) for i in range(length))

    def mem_write(self, addr: int, data: bytes) -> None:
        for i, b in enumerate(data):
            self.mem[addr + i] = b

    def clock_step(self, ns: int | None = None) -> int:
        self.steps += 1
        return self.steps

    def irq_level(self) -> bool:
        if self.irq is None:
            return bool(self.get(H.NORINTSTS.offset, 1) & H.NIS_CMDCMPL)
        return self.irq

    def image_read(self, offset: int, length: int) -> bytes:
        if self.image is None:
            return bytes(length)
        if self.image_format != "raw":
            return read_container(self.image, self.image_format, offset, length)
        with open(self.image, "rb") as f:
            f.seek(offset)
            return f.read(length)

    def close(self) -> None:
        pass

    # -- helpers for driver tests ----------------------------------------------

    def self_clearing_reset(self) -> None:
        """Software Reset bits clear themselves after the write (SDHC 2.2.16)."""
        self.hooks[H.SWRST.offset] = lambda o, s, v: self.set(H.SWRST.offset, 1, 0)

    def status(self) -> int:
        return self.get(H.NORINTSTS.offset, 4)

    def raise_status(self, normal: int, error: int = 0) -> None:
        """Set Normal (and Error) Interrupt Status bits, Error Interrupt with an error."""
        cur = self.status()
        nor = (cur & 0xFFFF) | normal | (H.NIS_ERRINT if error else 0)
        self.set(H.NORINTSTS.offset, 4, nor | (((cur >> 16) | error) << 16))


def fake_qemu(read_error: BaseException | None = None) -> type[FakeTarget]:
    """A class to put in place of ``QemuTarget`` (it takes the launch's
    arguments and ignores them); ``read_error``: raised by its first
    register read, as a QEMU that died or hung would."""

    class FakeQemuTarget(FakeTarget):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__("fake-qemu")

        def read(self, offset: int, size: int) -> int:
            if read_error is not None:
                raise read_error
            return super().read(offset, size)

    return FakeQemuTarget
