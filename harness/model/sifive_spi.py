"""The SiFive SPI controller as QEMU models it (``hw/ssi/sifive_spi.c``, one chip select).

Registers from the *SiFive FU540-C000 Manual*, chapter "Serial Peripheral
Interface" (:mod:`harness.hwdefs.sifive_spi`); QEMU's behaviour, read from its
source (the same in 7.2.22, 10.0.13 and 11.1.1) and held to the builds by the
``spi`` group:

* a write to ``txdata`` queues the byte and QEMU moves every queued byte
  through the SSI bus at once, so the transmit FIFO is always empty
  (``txdata`` reads 0); each byte that comes back goes into the 8-entry
  receive FIFO unless ``fmt.dir`` is set (transmit only) or the FIFO is full
  (the byte is lost, no error);
* ``rxdata`` pops a byte, or reads ``empty`` (bit 31) alone;
* ``ip.txwm`` is set while the transmit FIFO holds fewer than ``txmark``
  entries (so whenever ``txmark`` is not 0), ``ip.rxwm`` while the receive
  FIFO holds more than ``rxmark``; the line is ``ip & ie``;
* the chip select: while ``csdef`` bit 0 is set, a write to ``csmode`` or
  ``csid`` drives the line high in AUTO mode (0) and low in any other; with
  bit 0 clear the line keeps its level (ledger ``sifive-spi.cs-mode-level``);
* refused writes (logged by QEMU, ignored): ``csid`` >= 1, ``csdef`` >= 2,
  ``csmode`` > 3, ``txmark``/``rxmark`` >= 8, ``rxdata``, ``ip``, the
  reserved offsets and those past ``ip``; ``fctrl``/``ffmt`` (no flash
  interface on SPI2) read 0;
* the frame format (``fmt`` proto, endian, len) is stored but every frame is
  8 bits, MSB first (ledger ``sifive-spi.frame-format-ignored``);
* reset: every register 0 but ``sckdiv`` 3, ``csdef`` 1, ``delay0`` 0x1001,
  ``delay1`` 1 (ledger ``sifive-spi.reset-values``), FIFOs empty, the chip
  select high.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from harness.hwdefs import sifive_spi as S

__all__ = ["QEMU_RESET", "SifiveSpi"]

#: QEMU's reset values (``sifive_spi_reset``), by register.
QEMU_RESET: dict[str, int] = {"sckdiv": 0x3, "csdef": 0x1, "delay0": 0x1001, "delay1": 0x1}
#: The registers QEMU stores as written (``sifive_spi_write``'s default case).
_PLAIN = frozenset(r.offset for r in (S.SCKDIV, S.SCKMODE, S.DELAY0, S.DELAY1, S.FMT, S.IE))
_REFUSED = frozenset((S.RXDATA.offset, S.IP.offset, S.FCTRL.offset, S.FFMT.offset))
_REG_END = S.IP.offset + 4
_DIR = S.FMT.field("dir").mask
_EMPTY = S.RXDATA.field("empty").mask
_TXWM, _RXWM = S.IP.field("txwm").mask, S.IP.field("rxwm").mask
_NUM_CS = 1


class SifiveSpi:
    """The controller: ``bus`` moves one byte (``bus(value) -> value``, negative
    for a byte the peripheral leaves undefined); ``on_cs(level)`` follows
    chip select 0's line."""

    def __init__(self, bus: Callable[[int], int], on_cs: Callable[[bool], None]) -> None:
        self.bus = bus
        self.on_cs = on_cs
        self.regs: dict[int, int] = {}
        #: Received bytes: (value, undefined).
        self.rx: deque[tuple[int, bool]] = deque()
        self.irq_changes: list[bool] = []
        self._level = False
        self.reset()

    def reset(self) -> None:
        """QEMU ``sifive_spi_reset`` (see the module docstring)."""
        self.regs = {r.offset: QEMU_RESET.get(r.name, 0) for r in S.REGISTERS}
        self.rx.clear()
        self._update_cs()
        self._update_irq()

    @property
    def level(self) -> bool:
        return self._level

    @property
    def ip(self) -> int:
        """``ip`` as QEMU computes it (the transmit FIFO is always empty)."""
        return ((_TXWM if self.regs[S.TXMARK.offset] > 0 else 0)
                | (_RXWM if len(self.rx) > self.regs[S.RXMARK.offset] else 0))

    def _update_irq(self) -> None:
        level = bool(self.ip & self.regs[S.IE.offset])
        if level != self._level:
            self._level = level
            self.irq_changes.append(level)

    def _update_cs(self) -> None:
        if self.regs[S.CSDEF.offset] & 1:
            self.on_cs(self.regs[S.CSMODE.offset] == S.CSMODE_AUTO)

    @property
    def head_undefined(self) -> bool:
        """The byte ``rxdata`` would return next is one the card left undefined."""
        return bool(self.rx) and self.rx[0][1]

    def read(self, offset: int) -> int:
        """A 32-bit register read at ``offset`` inside the window."""
        if offset >= _REG_END:
            return 0
        if offset == S.TXDATA.offset:
            value = 0
        elif offset == S.RXDATA.offset:
            value = self.rx.popleft()[0] if self.rx else _EMPTY
        elif offset == S.IP.offset:
            value = self.ip
        else:
            value = self.regs.get(offset, 0)
        self._update_irq()
        return value

    def write(self, offset: int, value: int) -> None:
        """A 32-bit register write at ``offset`` inside the window."""
        if offset >= _REG_END or offset in S.RESERVED or offset in _REFUSED:
            return
        if offset in _PLAIN:
            self.regs[offset] = value
        elif offset == S.CSID.offset and value < _NUM_CS:
            self.regs[offset] = value
            self._update_cs()
        elif offset == S.CSDEF.offset and value < 1 << _NUM_CS:
            self.regs[offset] = value
        elif offset == S.CSMODE.offset and value <= 3:
            self.regs[offset] = value
            self._update_cs()
        elif offset in (S.TXMARK.offset, S.RXMARK.offset) and value < S.FIFO_DEPTH:
            self.regs[offset] = value
        elif offset == S.TXDATA.offset:
            self._transmit(value & 0xFF)
        self._update_irq()

    def _transmit(self, byte: int) -> None:
        out = self.bus(byte)
        if len(self.rx) < S.FIFO_DEPTH and not self.regs[S.FMT.offset] & _DIR:
            self.rx.append((0, True) if out < 0 else (out & 0xFF, False))
