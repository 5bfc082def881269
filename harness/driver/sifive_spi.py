"""SiFive's SPI controller as an SPI-mode SD host's port (sifive_u's SPI2).

As Linux's ``drivers/spi/spi-sifive.c`` drives it: at set-up interrupts off
(``ie`` 0), watermarks ``txmark`` 1 and ``rxmark`` 0, ``delay0`` CS-to-SCK
and SCK-to-CS 1, ``delay1`` inter-CS 1, the flash interface off (``fctrl``
0); for the card: chip select 0 (``csid``), active low (``csdef`` bit 0
set), clock mode 0, a clock divisor, frames of 8 bits, single lane, MSB
first, receiving (``fmt``).  The chip select is asserted by HOLD mode and
released by AUTO mode (``sifive_spi_set_cs``).  A byte is one write to
``txdata`` and one read of ``rxdata`` (FU540-C000 Manual, "Serial Peripheral
Interface": ``rxdata.empty`` set when no byte was received).
"""

from __future__ import annotations

from typing import Protocol

from harness.hwdefs import sifive_spi as S
from harness.target import Target

__all__ = ["SCKDIV", "SifiveSpiPort", "SpiPort"]

#: The clock divisor the driver programs (any: QEMU moves bytes at once).
SCKDIV = 3
_FMT_8 = S.FMT.field("len").value(8)
_DELAY0 = S.DELAY0.field("cssck").value(1) | S.DELAY0.field("sckcs").value(1)
_DELAY1 = S.DELAY1.field("intercs").value(1)


class SpiPort(Protocol):
    """An SSI controller with the card's chip select, as an SPI host uses it."""

    def setup(self, *, loopback: bool = False) -> None: ...

    def select(self) -> None: ...

    def deselect(self) -> None: ...

    def xfer(self, byte: int) -> int: ...


class SifiveSpiPort:
    """SPI2 of ``target`` (see the module docstring)."""

    def __init__(self, target: Target) -> None:
        self.t = target

    def setup(self, *, loopback: bool = False) -> None:
        """Linux's ``sifive_spi_init`` and a transfer's set-up; the card deselected."""
        if loopback:
            raise ValueError("SiFive's SPI controller has no loopback mode")
        t = self.t
        for reg, value in ((S.IE, 0), (S.TXMARK, 1), (S.RXMARK, 0), (S.DELAY0, _DELAY0),
                           (S.DELAY1, _DELAY1), (S.FCTRL, 0), (S.CSID, 0), (S.CSDEF, 1),
                           (S.SCKMODE, 0), (S.SCKDIV, SCKDIV), (S.FMT, _FMT_8),
                           (S.CSMODE, S.CSMODE_AUTO)):
            t.write(reg.offset, 4, value)

    def select(self) -> None:
        """HOLD: chip select 0 asserted until the mode changes."""
        self.t.write(S.CSMODE.offset, 4, S.CSMODE_HOLD)

    def deselect(self) -> None:
        """AUTO: chip select 0 back to its inactive level between frames."""
        self.t.write(S.CSMODE.offset, 4, S.CSMODE_AUTO)

    def xfer(self, byte: int) -> int:
        """One byte out, the byte that came back in (its low 8 bits: ``rxdata``
        with ``empty`` set reads 0 there)."""
        self.t.write(S.TXDATA.offset, 4, byte & 0xFF)
        return self.t.read(S.RXDATA.offset, 4) & 0xFF
