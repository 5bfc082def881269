"""``SifiveSpiModelTarget``: the golden model of sifive_u's SD card in SPI mode.

The Target window is SPI2's 4 KiB (:mod:`harness.hwdefs.sifive_spi`); the
controller (:class:`~harness.model.sifive_spi.SifiveSpi`) drives chip select 0,
``ssi-sd``'s active-low chip select (``hw/riscv/sifive_u.c``), and its SSI bus
carries ``ssi-sd`` alone: a byte sent while the card is not selected comes
back 0 (QEMU ``hw/ssi/ssi.c`` ORs the selected peripherals' answers).  QEMU's
``sifive_spi_ops`` take aligned 32-bit accesses only: a narrower or unaligned
one reads 0 and is dropped, an 8-byte one is split in two.  The card, ``ssi-sd``
and the adoption of an undefined response byte are
:class:`~harness.model.spi_target.SpiModelTarget`'s.
"""

from __future__ import annotations

from typing import Any

from harness.hwdefs import sifive_spi as S
from harness.model.board_target import TARGETS
from harness.model.sifive_spi import SifiveSpi
from harness.model.spi_target import STALE, SpiModelTarget
from harness.target import check_access

__all__ = ["SifiveSpiModelTarget"]

_WORD = 4


def _pieces(offset: int, size: int) -> list[int]:
    """The 32-bit accesses QEMU's memory core makes of one access (none: refused)."""
    if size % _WORD or offset % _WORD:
        return []
    return list(range(offset, offset + size, _WORD))


@TARGETS.controller("sifive-spi")
class SifiveSpiModelTarget(SpiModelTarget):
    """The model of SPI2, ``ssi-sd`` and the card (see the module docstring)."""

    def _controller(self) -> None:
        self.spi = SifiveSpi(self._bus, self._cs)

    def _cs(self, level: bool) -> None:
        self.cs_level = level

    def read(self, offset: int, size: int) -> int:
        check_access(offset, size)
        value = 0
        for off in _pieces(offset, size):
            if 0 <= off < S.WINDOW:
                if off == S.RXDATA.offset:
                    self._last_undefined = self.spi.head_undefined
                value |= self.spi.read(off) << (8 * (off - offset))
        return value

    def write(self, offset: int, size: int, value: int) -> None:
        check_access(offset, size)
        for off in _pieces(offset, size):
            if 0 <= off < S.WINDOW:
                self.spi.write(off, (value >> (8 * (off - offset))) & 0xFFFF_FFFF)

    def irq_level(self) -> bool:
        return self.spi.level

    def _irq_changes(self) -> list[bool]:
        return self.spi.irq_changes

    def reconcile(self, op: str, args: tuple[Any, ...], model_value: Any,
                  qemu_value: Any) -> bool:
        """Adopt QEMU's byte where the card left its one response byte
        unwritten (ledger ``spi.illegal-r1-stale``); nothing else."""
        if op != "read" or not self._last_undefined or int(args[0]) != S.RXDATA.offset:
            return False
        if int(qemu_value) > 0xFF:
            return False
        self._last_undefined = False
        self.adoptions.append((STALE.adopts, int(qemu_value)))
        return True

    def may_adopt(self, op: str, args: tuple[Any, ...]) -> bool:
        """A read of ``rxdata`` whose next byte the card left undefined."""
        return op == "read" and int(args[0]) == S.RXDATA.offset and self.spi.head_undefined
