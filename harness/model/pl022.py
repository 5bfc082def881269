"""The PrimeCell SSP (PL022) and the PL061 GPIO pin that selects the card, as QEMU models them.

PL022 (ARM DDI 0194; QEMU ``hw/ssi/pl022.c``): a write to SSPDR queues a
frame in the 8-entry transmit FIFO; while the port is enabled (SSPCR1.SSE)
QEMU moves every queued frame at once, through the SSI bus or, with
SSPCR1.LBM, straight back, into the receive FIFO, masked to the frame size
SSPCR0.DSS set, and stops while the receive FIFO is full (no overrun).
SSPSR follows the FIFOs (BSY: the transmit FIFO holds frames); the raw
interrupts are recomputed from them, RX at 4 or more received frames, TX at
4 or fewer queued ones; RORRIS and RTRIS never set (ledger
``pl022.no-overrun-timeout``); the line is SSPRIS & SSPIMSC.  Until SSPCR0 is
first written the frame mask is 0 and frames arrive as 0 (the TRM leaves
DSS 0 undefined).  QEMU's reset leaves SSPCR0, SSPCR1 and SSPCPSR as
they were, so only a fresh machine starts them at 0.  Reads of SSPDR with an
empty receive FIFO answer 0; SSPDMACR reads 0 and drops writes (no DMA).

PL061 (ARM DDI 0190; QEMU ``hw/gpio/pl061.c``, Luminary variant): GPIODATA
accesses are masked by address bits [9:2]; writes change output pins only
(GPIODIR 1); an output that changes drives its line.  The board wires port D
pin 0 to ``ssi-sd``'s active-low chip select, raised at start.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from harness.hwdefs import pl022 as P

__all__ = ["Pl022", "Pl061"]

_SR_TFE, _SR_TNF, _SR_RNE, _SR_RFF, _SR_BSY = (P.SSPSR.field(n).mask for n in
                                                ("TFE", "TNF", "RNE", "RFF", "BSY"))
_INT_ROR, _INT_RT, _INT_RX, _INT_TX = (P.SSPRIS.field(n).mask for n in
                                       ("RORRIS", "RTRIS", "RXRIS", "TXRIS"))
_LBM, _SSE = P.SSPCR1.field("LBM").mask, P.SSPCR1.field("SSE").mask
_HALF = P.SSP_FIFO_DEPTH // 2


class Pl022:
    """The SSP: ``bus`` moves one frame (``bus(value) -> value``, negative for
    a byte the peripheral leaves undefined)."""

    def __init__(self, bus: Callable[[int], int]) -> None:
        self.bus = bus
        self.cr0 = self.cr1 = self.cpsr = 0
        self.bitmask = 0
        self.tx: deque[int] = deque()
        #: Received frames: (value, undefined).
        self.rx: deque[tuple[int, bool]] = deque()
        self.im = 0
        self.irq_changes: list[bool] = []
        self._level = False
        self.reset()

    def reset(self) -> None:
        """QEMU ``pl022_reset``: FIFOs empty, interrupts masked, TX raised."""
        self.tx.clear()
        self.rx.clear()
        self.im = 0
        self.ris = _INT_TX
        self.sr = _SR_TFE | _SR_TNF

    @property
    def level(self) -> bool:
        return self._level

    def _update(self) -> None:
        tx, rx = len(self.tx), len(self.rx)
        self.sr = ((_SR_TFE if tx == 0 else 0) | (_SR_TNF if tx != P.SSP_FIFO_DEPTH else 0)
                   | (_SR_RNE if rx else 0) | (_SR_RFF if rx == P.SSP_FIFO_DEPTH else 0)
                   | (_SR_BSY if tx else 0))
        self.ris = (_INT_RX if rx >= _HALF else 0) | (_INT_TX if tx <= _HALF else 0)
        level = bool(self.ris & self.im)
        if level != self._level:
            self._level = level
            self.irq_changes.append(level)

    def _xfer(self) -> None:
        if self.cr1 & _SSE:
            while self.tx and len(self.rx) < P.SSP_FIFO_DEPTH:
                val = self.tx.popleft()
                out = val if self.cr1 & _LBM else self.bus(val)
                self.rx.append((0, True) if out < 0 else (out & self.bitmask, False))
        self._update()

    @property
    def head_undefined(self) -> bool:
        """The frame SSPDR would return next is one the card left undefined."""
        return bool(self.rx) and self.rx[0][1]

    def read(self, offset: int) -> int:
        """A register read at ``offset`` inside the SSP."""
        if P.SSP_PERIPH_ID <= offset < 0x1000:
            return P.SSP_ID_BYTES[(offset - P.SSP_PERIPH_ID) >> 2]
        if offset == P.SSPDR.offset:
            if not self.rx:
                return 0
            val, _undefined = self.rx.popleft()
            self._xfer()
            return val
        regs = {P.SSPCR0.offset: self.cr0, P.SSPCR1.offset: self.cr1,
                P.SSPSR.offset: self.sr, P.SSPCPSR.offset: self.cpsr,
                P.SSPIMSC.offset: self.im, P.SSPRIS.offset: self.ris,
                P.SSPMIS.offset: self.im & self.ris}
        return regs.get(offset, 0)

    def write(self, offset: int, value: int) -> None:
        """A register write at ``offset`` inside the SSP."""
        if offset == P.SSPCR0.offset:
            self.cr0 = value
            self.bitmask = (1 << ((value & 0xF) + 1)) - 1
        elif offset == P.SSPCR1.offset:
            self.cr1 = value
            self._xfer()
        elif offset == P.SSPDR.offset:
            if len(self.tx) < P.SSP_FIFO_DEPTH:
                self.tx.append(value & self.bitmask)
                self._xfer()
        elif offset == P.SSPCPSR.offset:
            self.cpsr = value & 0xFF
        elif offset == P.SSPIMSC.offset:
            self.im = value
            self._update()
        elif offset == P.SSPICR.offset:
            self.ris &= ~(value & (_INT_ROR | _INT_RT))


class Pl061:
    """GPIODATA and GPIODIR of a PL061; ``on_change(pin, level)`` for an output change."""

    def __init__(self, on_change: Callable[[int, bool], None]) -> None:
        self.on_change = on_change
        self.data = self.dir = 0
        self.old_out = 0

    def _update(self) -> None:
        # No pull-ups or pull-downs at reset: inputs float and keep their level.
        out = (self.data & self.dir) | (self.old_out & ~self.dir & 0xFF)
        changed = out ^ self.old_out
        self.old_out = out
        for pin in range(8):
            if changed >> pin & 1:
                self.on_change(pin, bool(out >> pin & 1))

    def read(self, offset: int) -> int:
        if offset < P.GPIODIR.offset:
            return self.data & (offset >> 2)
        return self.dir if offset == P.GPIODIR.offset else 0

    def write(self, offset: int, value: int) -> None:
        if offset < P.GPIODIR.offset:
            mask = (offset >> 2) & self.dir
            self.data = (self.data & ~mask) | (value & mask)
        elif offset == P.GPIODIR.offset:
            self.dir = value & 0xFF
        else:
            return
        self._update()
