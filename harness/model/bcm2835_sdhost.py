"""The BCM2835 SDHOST as QEMU models it (``hw/sd/bcm2835_sdhost.c``, 7.2 to 11.1 alike).

Registers as Linux's ``drivers/mmc/host/bcm2835.c`` names them
(:mod:`harness.hwdefs.bcm2835_sdhost`); what each does is QEMU's device,
described here in our words, each departure from what the Linux driver
expects of the hardware a ledger entry (``harness.ledger.sdhost``):

* A write of SDCMD stores the value; with NEW_FLAG the command runs at once
  on the card of the SDHOST's bus, the data path runs, and NEW_FLAG reads 0
  again (no command is ever in flight).  Without a response (NO_RESPONSE)
  nothing is checked; otherwise a card that answers nothing, or 4 bytes
  where LONG_RESPONSE asks for 16, fails the command: FAIL_FLAG in SDCMD and
  CMD_TIME_OUT in SDHSTS (no card on the bus is the same).  A 4-byte answer
  fills SDRSP0 and zeroes SDRSP1-3; 16 bytes fill SDRSP3..0 from the first
  byte.  A BUSYWAIT command that did not fail sets BUSY_IRPT if
  SDHCFG.BUSY_IRPT_EN (``sdhost.busy-irpt-at-once``).
* SDHBLC's write sets the remaining byte count to SDHBLC x SDHBCT (SDHBCT's
  own write does not).  The data path (QEMU's "FIFO run", after SDCMD,
  SDHCFG, SDHBLC and every SDDATA access): while bytes remain and the
  command is a write, or the card has data to send, a read fills the
  16-word FIFO from the card a byte at a time (little-endian words, a last
  partial word pushed as it is), a write drains the FIFO to the card; each
  word moved sets DATA_FLAG, and SDIO_IRPT if SDHCFG.DATA_IRPT_EN
  (``sdhost.data-irpt-is-sdio-irpt``).  A write run then sets BLOCK_IRPT
  (with BLOCK_IRPT_EN) when the remaining count is a multiple of SDHBCT,
  whether or not a byte moved (``sdhost.block-irpt-before-data``), and
  DATA_FLAG again.  When a run brings the count to 0, SDEDM's FSM becomes
  DATAMODE; every run writes the FIFO level into SDEDM bits 8:4.
* The FIFO drops a word pushed while full and reads 0 while empty.
* The interrupt line is SDHSTS & (BUSY_IRPT | BLOCK_IRPT | SDIO_IRPT),
  updated at the end of each data-path run and on a write of SDHSTS (write
  1 to clear); the enables are looked at only when a bit is set.
* Reads of SDARG, SDTOUT, SDCDIV and SDHCFG answer 0
  (``sdhost.config-reads-0``), as does any offset that is not a register's
  own (a byte at SDHSTS+1 too); writes there are dropped.  SDEDM stores
  what is written, FSM 0xf (power down) written as 0.
* Device reset: SDCMD, SDARG, SDHCFG, SDHBCT, SDHBLC, the count and the
  FIFO 0, SDEDM 0xc60f; SDHSTS, SDRSP0-3 and SDVDD are kept
  (``sdhost.reset-keeps-status``).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from harness.hwdefs import bcm2835_sdhost as B

__all__ = ["Bcm2835Sdhost", "SdhostCard"]

_NEW, _FAIL = B.SDCMD.mask("NEW_FLAG"), B.SDCMD.mask("FAIL_FLAG")
_READ, _WRITE = B.SDCMD.mask("READ_CMD"), B.SDCMD.mask("WRITE_CMD")
_LONG, _NONE, _BUSY = (B.SDCMD.mask(n) for n in ("LONG_RESPONSE", "NO_RESPONSE", "BUSYWAIT"))
_CMD = B.SDCMD.field("CMD").mask
_DATA_FLAG, _CMD_TIME_OUT = B.SDHSTS.mask("DATA_FLAG"), B.SDHSTS.mask("CMD_TIME_OUT")
_SDIO, _BLOCK, _BUSY_IRPT = (B.SDHSTS.mask(n) for n in ("SDIO_IRPT", "BLOCK_IRPT", "BUSY_IRPT"))
_IRQ_BITS = _SDIO | _BLOCK | _BUSY_IRPT
_DATA_EN, _BLOCK_EN, _BUSY_EN = (B.SDHCFG.mask(n) for n in ("DATA_IRPT_EN", "BLOCK_IRPT_EN",
                                                            "BUSY_IRPT_EN"))
_FSM, _LEVEL = B.SDEDM.field("FSM"), B.SDEDM.field("FIFO_LEVEL")
_M32 = 0xFFFF_FFFF


class SdhostCard(Protocol):
    """What the SDHOST asks of the card on its bus (QEMU ``hw/sd/core.c``)."""

    def do_command(self, cmd: int, arg: int) -> bytes: ...

    def data_ready(self) -> bool: ...

    def read_byte(self) -> int: ...

    def write_byte(self, value: int) -> None: ...


class Bcm2835Sdhost:
    """The SDHOST's registers, FIFO and line; :attr:`card` is the card on its
    bus (None: routed to the SDHCI, or none); see the module docstring."""

    def __init__(self, card: SdhostCard | None = None) -> None:
        self.card = card
        self.status = 0
        self.rsp = [0, 0, 0, 0]
        self.vdd = 0
        self.level = False
        self.irq_changes: list[bool] = []
        self.fifo: deque[int] = deque()
        self.reset()

    def reset(self) -> None:
        """QEMU ``bcm2835_sdhost_reset`` (SDHSTS, SDRSP and SDVDD kept)."""
        self.cmd = self.cmdarg = self.config = self.hbct = self.hblc = self.datacnt = 0
        self.edm = B.SDEDM_RESET
        self.fifo.clear()

    # -- the line -------------------------------------------------------------

    def _update_irq(self) -> None:
        level = bool(self.status & _IRQ_BITS)
        if level != self.level:
            self.level = level
            self.irq_changes.append(level)

    # -- commands -------------------------------------------------------------

    def _send_command(self) -> None:
        card = self.card
        payload = card.do_command(self.cmd & _CMD, self.cmdarg) if card is not None else b""
        if not self.cmd & _NONE:
            if len(payload) not in (4, 16) or (len(payload) == 4 and self.cmd & _LONG):
                self.cmd |= _FAIL
                self.status |= _CMD_TIME_OUT
                return
            if len(payload) == 4:
                self.rsp = [int.from_bytes(payload, "big"), 0, 0, 0]
            else:
                self.rsp = [int.from_bytes(payload[i:i + 4], "big") for i in (12, 8, 4, 0)]
        if self.cmd & _BUSY and self.config & _BUSY_EN:
            self.status |= _BUSY_IRPT

    # -- the FIFO and the data path ---------------------------------------------

    def _push(self, value: int) -> None:
        if len(self.fifo) < B.FIFO_WORDS:
            self.fifo.append(value & _M32)

    def _pop(self) -> int:
        return self.fifo.popleft() if self.fifo else 0

    def _word_moved(self) -> None:
        self.status |= _DATA_FLAG
        if self.config & _DATA_EN:
            self.status |= _SDIO

    def _fill(self, card: SdhostCard) -> None:
        """A read: bytes from the card into FIFO words until full or done."""
        value = n = 0
        while self.datacnt and len(self.fifo) < B.FIFO_WORDS:
            value |= (card.read_byte() & 0xFF) << (8 * n)
            self.datacnt -= 1
            n += 1
            if n == 4:
                self._push(value)
                self._word_moved()
                value = n = 0
        if n:
            self._push(value)
            self._word_moved()

    def _drain(self, card: SdhostCard | None) -> None:
        """A write: FIFO words to the card, low byte first, until empty or done."""
        value = n = 0
        while self.datacnt > 0 and (self.fifo or n > 0):
            if n == 0:
                value = self._pop()
                self._word_moved()
                n = 4
            n -= 1
            self.datacnt -= 1
            if card is not None:
                card.write_byte(value & 0xFF)
            value >>= 8

    def fifo_run(self) -> None:
        """QEMU ``bcm2835_sdhost_fifo_run`` (see the module docstring)."""
        is_read, is_write = bool(self.cmd & _READ), bool(self.cmd & _WRITE)
        card = self.card
        ready = card is not None and card.data_ready()
        if self.datacnt and (is_write or ready):
            if is_read:
                if card is not None:
                    self._fill(card)
            elif is_write:
                self._drain(card)
            if self.datacnt == 0:
                self.edm = _FSM.put(self.edm, B.FSM_DATAMODE)
            if is_write:
                if self.hbct and self.datacnt % self.hbct == 0 and self.config & _BLOCK_EN:
                    self.status |= _BLOCK
                self._word_moved()
        self._update_irq()
        self.edm = _LEVEL.put(self.edm, len(self.fifo) & 0x1F)

    # -- registers ----------------------------------------------------------------

    def read(self, offset: int) -> int:
        """A register read at ``offset`` (the whole 32-bit value; the caller masks)."""
        if offset == B.SDDATA.offset:
            value = self._pop()
            self.fifo_run()
            return value
        if B.SDRSP[0].offset <= offset <= B.SDRSP[3].offset and not offset & 3:
            return self.rsp[(offset - B.SDRSP[0].offset) >> 2]
        regs = {B.SDCMD.offset: self.cmd, B.SDHSTS.offset: self.status,
                B.SDEDM.offset: self.edm, B.SDVDD.offset: self.vdd,
                B.SDHBCT.offset: self.hbct, B.SDHBLC.offset: self.hblc}
        return regs.get(offset, 0)

    def write(self, offset: int, value: int) -> None:
        """A register write at ``offset`` (``value`` already the access's size)."""
        value &= _M32
        if offset == B.SDCMD.offset:
            self.cmd = value
            if value & _NEW:
                self._send_command()
                self.fifo_run()
                self.cmd &= ~_NEW
        elif offset == B.SDHSTS.offset:
            self.status &= ~value
            self._update_irq()
        elif offset == B.SDARG.offset:
            self.cmdarg = value
        elif offset == B.SDEDM.offset:
            self.edm = value & ~0xF if value & 0xF == B.FSM_STARTPOWDOWN else value
        elif offset == B.SDHCFG.offset:
            self.config = value
            self.fifo_run()
        elif offset == B.SDVDD.offset:
            self.vdd = value
        elif offset == B.SDDATA.offset:
            self._push(value)
            self.fifo_run()
        elif offset == B.SDHBCT.offset:
            self.hbct = value
        elif offset == B.SDHBLC.offset:
            self.hblc = value
            self.datacnt = (self.hblc * self.hbct) & _M32
            self.fifo_run()
