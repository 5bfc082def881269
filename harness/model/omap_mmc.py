"""The OMAP1 MMC/SD host controller as QEMU models it (``hw/sd/omap_mmc.c``).

Register names and the driver's view are Linux's ``drivers/mmc/host/omap.c``
(:mod:`harness.hwdefs.omap_mmc`); TI's reference guide (SPRU765) is what
QEMU cites.  Where QEMU departs from what the hardware documents, this model
follows QEMU and the ledger says so (``harness/ledger/omap.py``, ``omap.*``).
In short, as QEMU 7.2.22, 10.0.13 and 11.1.1 behave:

* Registers take 16-bit accesses only; any other width reads 0 and drops
  the write (before 11.0 the access reaches guest memory at the register's
  *offset* instead: ``omap.version.badwidth-to-memory``).
* MMC_CMD is refused while MMC_CON.POW is clear.  A write clears RSP0..7,
  and with INIT and index 0 only sets EOC; otherwise the command runs on
  the card at once.  TYPE adtc empties the FIFO and starts a transfer in
  direction DDIR.  By RSP: R1 and R6 check the card status bits Linux calls
  errors (CERR), R3 sets OCRB while the OCR's power-up bit is clear and
  otherwise clears every status bit below bit 13, R2 needs 16 bytes; a
  short answer is CTO.  Every command without CERR clears the status bits
  below 12 and bit 14 before setting EOC (CMD12: EOC and CB), or CTO.
  The response's 16 bytes fill RSP7 (first two) down to RSP0; a 4-byte
  answer leaves bytes 4..15 as QEMU's stack held them: zero from 10.0 on,
  unknown before (``omap.version.short-response-stack-bytes``).
* The data path moves bytes between card and a 32-word ring of 16-bit
  words at once: after the command, after each MMC_DATA access.  A read
  fills while the FIFO holds no more than BUF.AFL words; a write drains
  every word.  BLEN/NBLK count down; at the last block's end the transfer
  stops and BRS sets.  AF/AE follow the fill level (or, with RXDE/TXDE,
  the DMA request lines do).  A read of an empty FIFO answers the word at
  the ring's read position again; a write to a full one is dropped.
* MMC_STAT is write-1-to-clear; the interrupt is ``STAT & IE`` after a
  command, a data access, and writes of STAT, IE and BUF only.  MMC_CON
  with POW clear zeroes STAT and empties the FIFO without updating the line.
* The reset keeps MMC_SDIO, MMC_CON.BE, the ring's words and read position
  (``omap.reset-keeps-sdio-be-fifo``); MMC_SYSC.SRTS resets the module, and
  before 10.0 the card too (``omap.version.srts-resets-card``).

The card is the shared SD card model on QEMU's SD bus calls
(``do_command``, ``read_byte``, ``write_byte``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from harness.hwdefs import omap_mmc as O
from harness.hwdefs import sd as S

__all__ = ["OmapBusCard", "OmapMmc", "R1_ERRORS"]

_ST = O.MMC_STAT
_GO_IDLE, _STOP = S.index("GO_IDLE_STATE"), S.index("STOP_TRANSMISSION")
EOC, CB, BRS, CTO, AF, AE, OCRB, CERR = (_ST.mask(n) for n in (
    "EOC", "CB", "BRS", "CTO", "AF", "AE", "OCRB", "CERR"))
#: The card status bits QEMU's R1 check counts as errors (CERR).
R1_ERRORS = (S.OUT_OF_RANGE | S.ADDRESS_ERROR | S.BLOCK_LEN_ERROR | S.ERASE_SEQ_ERROR
             | S.ERASE_PARAM | S.WP_VIOLATION | S.LOCK_UNLOCK_FAILED | S.COM_CRC_ERROR
             | S.ILLEGAL_COMMAND | S.CARD_ECC_FAILED | S.CC_ERROR | S.ERROR
             | S.CSD_OVERWRITE)
#: R6's 16-bit status: COM_CRC_ERROR, ILLEGAL_COMMAND, ERROR (bits 15:13), AKE_SEQ_ERROR.
R6_ERRORS = 0xE000 | S.AKE_SEQ_ERROR
_KEEP_ON_OK = 0xB000    # a command without CERR keeps OCRB, CIRQ and bit 15 only
_KEEP_ON_READY = 0xE000  # an R3 with the power-up bit keeps CIRQ, CERR and bit 15
_SDIO_KEEP = O.MMC_SDIO.mask("DTO_X1024", "AKE_ERR")  # revision 1
_WORD = 0xFFFF


class OmapBusCard(Protocol):
    """The SD bus calls QEMU's omap_mmc makes (``hw/sd/core.c``)."""

    def do_command(self, cmd: int, arg: int) -> bytes: ...

    def read_byte(self) -> int: ...

    def write_byte(self, value: int) -> None: ...

    def reset(self) -> None: ...


class OmapMmc:
    """One OMAP1 MMC/SD host with ``card`` on its bus (see the module docstring).

    ``stack_zero``: bytes of the response buffer the card did not write read
    0 (QEMU >= 10.0); else they are unknown (:attr:`rsp_unknown`).
    ``srts_resets_card``: MMC_SYSC.SRTS resets the card too (QEMU < 10.0).
    ``bad_width``: what an access of another width than 16 bits reads (QEMU
    < 11.0: guest memory at the offset), else 0."""

    def __init__(self, card: OmapBusCard, *, stack_zero: bool = True,
                 srts_resets_card: bool = False,
                 bad_width: Callable[[int], int] | None = None) -> None:
        self.card = card
        self.stack_zero, self.srts_resets_card, self.bad_width = (
            stack_zero, srts_resets_card, bad_width)
        #: Interrupt line changes since last taken, and its level.
        self.irq_changes: list[bool] = []
        self.level = False
        #: The DMA request lines (to the OMAP system DMA): ``rx``, ``tx``.
        self.dma = {"rx": False, "tx": False}
        # What QEMU's reset leaves as it was (zero at power-on).
        self.sdio = self.be = self.ddir = 0
        self.fifo = [0] * O.FIFO_WORDS
        self.fifo_start = 0
        self.reset()

    def reset(self) -> None:
        """QEMU ``omap_mmc_reset``: every register but SDIO and CON.BE; the
        FIFO emptied, its words and read position kept; the line not driven."""
        self.last_cmd = self.arg = self.dw = self.mode = self.enable = self.mask = 0
        self.rsp = [0] * 8
        #: RSP indices whose value QEMU took from uninitialised stack (< 10.0).
        self.rsp_unknown: set[int] = set()
        self.cto = self.dto = self.blen = self.blen_counter = 0
        self.nblk = self.nblk_counter = 0
        self.tx_dma = self.rx_dma = self.ae_level = 0
        self.af_level = 0x1F
        self.transfer = False
        self.cdet_wakeup = self.cdet_enable = self.clkdiv = 0
        self.status = 0
        self.fifo_len = 0

    # -- the interrupt and DMA request lines ---------------------------------------

    def update_irq(self) -> None:
        """The interrupt output: ``STAT & IE`` non-zero."""
        level = bool(self.status & self.mask)
        if level != self.level:
            self.level = level
            self.irq_changes.append(level)

    def fifolevel(self) -> None:
        """QEMU ``omap_mmc_fifolevel_update``: AF while a read's FIFO holds more
        than AFL words, AE while a write's holds fewer than AEL; with RXDE/TXDE
        the DMA request line instead of the bit.  Idle and empty: both bits clear,
        the request lines left as they were (ledger ``omap.dma-request-left-raised``)."""
        if not self.transfer and not self.fifo_len:
            self.status &= ~(AF | AE)
            return
        full = self.fifo_len > self.af_level and bool(self.ddir)
        self.dma["rx"] = full and bool(self.rx_dma)
        self.status = (self.status | AF) if full and not self.rx_dma else self.status & ~AF
        empty = self.fifo_len < self.ae_level and not self.ddir
        self.dma["tx"] = empty and bool(self.tx_dma)
        self.status = (self.status | AE) if empty and not self.tx_dma else self.status & ~AE

    # -- commands ---------------------------------------------------------------------

    def _response_status(self, rsptype: int, rsp: bytes) -> tuple[int, bool, int, int]:
        """``(length kept, timeout, error mask, status)`` of the card's answer
        as QEMU reads it for response type ``rsptype``."""
        n = len(rsp)
        if rsptype == 0:
            return 0, False, 0, 0
        need = 16 if rsptype == 2 else 4
        if rsptype not in (1, 2, 3, 6):
            return n, False, 0, 0  # 4, 5, 7: no case, the answer kept as it came
        if n < need:
            return n, True, 0, 0
        if rsptype == 1:
            mask = R1_ERRORS | (S.AKE_SEQ_ERROR if self.sdio & O.MMC_SDIO.mask("AKE_ERR") else 0)
            return 4, False, mask, int.from_bytes(rsp[:4], "big")
        if rsptype == 6:
            return 4, False, R6_ERRORS, (rsp[2] << 8) | rsp[3]
        if rsptype == 3:
            ocr = int.from_bytes(rsp[:4], "big")
            self.status = self.status & _KEEP_ON_READY if ocr & S.OCR_BUSY else \
                self.status | OCRB
            return 4, False, 0, ocr
        return 16, False, 0, 0

    def _command(self, value: int) -> None:
        """QEMU ``omap_mmc_command`` for an MMC_CMD write (see the module docstring)."""
        f = O.MMC_CMD
        cmd, ddir, ctype = f.field("INDX").get(value), f.field("DDIR").get(value), \
            f.field("TYPE").get(value)
        if f.field("INIT").get(value) and cmd == _GO_IDLE:
            self.status |= EOC
            return
        self.transfer = ctype == O.TYPE_ADTC
        if self.transfer:
            self.fifo_start = self.fifo_len = 0
            self.ddir = ddir
        rsp = self.card.do_command(cmd, self.arg)
        kept, timeout, mask, rspstatus = self._response_status(f.field("RSP").get(value), rsp)
        self.status = (self.status | CERR) if rspstatus & mask else self.status & _KEEP_ON_OK
        if kept:
            self._fill_rsp(rsp)
        self.status |= CTO if timeout else (EOC | CB) if cmd == _STOP else EOC

    def _fill_rsp(self, rsp: bytes) -> None:
        """RSP7 gets bytes 0-1 (big endian) ... RSP0 bytes 14-15 of the response
        buffer; bytes past the card's answer are the stack's."""
        buf = rsp[:16].ljust(16, b"\0")
        for i in range(8):
            self.rsp[7 - i] = (buf[2 * i] << 8) | buf[2 * i + 1]
            if 2 * i >= len(rsp) and not self.stack_zero:
                self.rsp_unknown.add(7 - i)

    # -- the data path -----------------------------------------------------------------

    def run_transfer(self) -> None:
        """QEMU ``omap_mmc_transfer``: move words until the FIFO is past AFL
        (read) or empty (write), or the last block ends (BRS)."""
        while self.transfer:
            if self.ddir:
                if self.fifo_len > self.af_level:
                    return
                self._fill_word()
            else:
                if not self.fifo_len:
                    return
                self._drain_word()
            if self.blen_counter == 0:
                self.nblk_counter = (self.nblk_counter - 1) & _WORD
                self.blen_counter = self.blen
                if self.nblk_counter == 0:
                    self.nblk_counter = self.nblk
                    self.transfer = False
                    self.status |= BRS

    def _count(self) -> bool:
        """One byte of the block moved: whether bytes are left in it."""
        self.blen_counter = (self.blen_counter - 1) & _WORD
        return self.blen_counter != 0

    def _fill_word(self) -> None:
        word = self.card.read_byte()
        if self._count():
            word |= self.card.read_byte() << 8
            self.blen_counter = (self.blen_counter - 1) & _WORD
        self.fifo[(self.fifo_start + self.fifo_len) % O.FIFO_WORDS] = word
        self.fifo_len += 1

    def _drain_word(self) -> None:
        word = self.fifo[self.fifo_start]
        self.card.write_byte(word & 0xFF)
        if self._count():
            self.card.write_byte(word >> 8)
            self.blen_counter = (self.blen_counter - 1) & _WORD
        self.fifo_start = (self.fifo_start + 1) % O.FIFO_WORDS
        self.fifo_len -= 1

    def update(self) -> None:
        """Transfer, FIFO levels, interrupt line: after a command or a data access."""
        self.run_transfer()
        self.fifolevel()
        self.update_irq()

    def _data_read(self) -> int:
        word = self.fifo[self.fifo_start]
        if self.fifo_len == 0:
            return word  # underrun: the read position's old word, nothing moves
        self.fifo_start = (self.fifo_start + 1) % O.FIFO_WORDS
        self.fifo_len -= 1
        self.update()
        return word

    def _data_write(self, value: int) -> None:
        if self.fifo_len == O.FIFO_WORDS:
            return  # full: dropped
        self.fifo[(self.fifo_start + self.fifo_len) % O.FIFO_WORDS] = value
        self.fifo_len += 1
        self.update()

    # -- registers ---------------------------------------------------------------------

    def read(self, offset: int, size: int) -> int:
        """A register read of ``size`` bytes at ``offset`` in the window."""
        if size != O.ACCESS_SIZE:
            return self.bad_width(offset) if self.bad_width is not None else 0
        if offset == O.MMC_DATA.offset:
            return self._data_read()
        for i, reg in enumerate(O.MMC_RSP):
            if offset == reg.offset:
                return self.rsp[i]
        return self._plain(offset)

    def _plain(self, offset: int) -> int:
        con = (self.dw << 15) | (self.mode << 12) | (self.enable << 11) | (self.be << 10) \
            | self.clkdiv
        buf = (self.rx_dma << 15) | (self.af_level << 8) | (self.tx_dma << 7) | self.ae_level
        values = {
            O.MMC_CMD.offset: self.last_cmd, O.MMC_ARGL.offset: self.arg & _WORD,
            O.MMC_ARGH.offset: self.arg >> 16, O.MMC_CON.offset: con,
            O.MMC_STAT.offset: self.status, O.MMC_IE.offset: self.mask,
            O.MMC_CTO.offset: self.cto, O.MMC_DTO.offset: self.dto,
            O.MMC_BLEN.offset: self.blen_counter, O.MMC_NBLK.offset: self.nblk_counter,
            O.MMC_BUF.offset: buf,
            O.MMC_SDIO.offset: (self.cdet_wakeup << 2) | self.cdet_enable | self.sdio,
            O.MMC_REV.offset: 1, O.MMC_SYSS.offset: O.MMC_SYSS.mask("RSTD")}
        return values.get(offset, 0)

    def write(self, offset: int, size: int, value: int) -> None:
        """A register write of ``size`` bytes at ``offset`` in the window."""
        if size != O.ACCESS_SIZE:
            return  # dropped (before 11.0: to read-only memory at the offset)
        value &= _WORD
        if offset == O.MMC_CMD.offset:
            if self.enable:
                self.last_cmd = value
                self.rsp = [0] * 8
                self.rsp_unknown = set()
                self._command(value)
                self.update()
        elif offset == O.MMC_DATA.offset:
            self._data_write(value)
        elif offset in (O.MMC_STAT.offset, O.MMC_IE.offset, O.MMC_BUF.offset):
            self._write_irq_register(offset, value)
        else:
            self._write_plain(offset, value)

    def _write_irq_register(self, offset: int, value: int) -> None:
        if offset == O.MMC_STAT.offset:
            self.status &= ~value
        elif offset == O.MMC_IE.offset:
            self.mask = value & 0x7FFF
        else:
            b = O.MMC_BUF
            self.rx_dma, self.af_level, self.tx_dma, self.ae_level = (
                b.field(n).get(value) for n in ("RXDE", "AFL", "TXDE", "AEL"))
            if self.rx_dma:
                self.status &= ~AF
            if self.tx_dma:
                self.status &= ~AE
            self.fifolevel()
        self.update_irq()

    def _write_plain(self, offset: int, value: int) -> None:
        if offset == O.MMC_ARGL.offset:
            self.arg = (self.arg & 0xFFFF_0000) | value
        elif offset == O.MMC_ARGH.offset:
            self.arg = (self.arg & _WORD) | (value << 16)
        elif offset == O.MMC_CON.offset:
            self._write_con(value)
        elif offset == O.MMC_CTO.offset:
            self.cto = value & 0xFF
        elif offset == O.MMC_DTO.offset:
            self.dto = value
        elif offset == O.MMC_BLEN.offset:
            self.blen = self.blen_counter = (value & 0x7FF) + 1
        elif offset == O.MMC_NBLK.offset:
            self.nblk = self.nblk_counter = (value & 0x7FF) + 1
            self.blen_counter = self.blen
        elif offset == O.MMC_SDIO.offset:
            self.sdio = value & _SDIO_KEEP
            self.cdet_wakeup = O.MMC_SDIO.field("CD_WAKEUP").get(value)
            self.cdet_enable = O.MMC_SDIO.field("CD_ENABLE").get(value)
        elif offset == O.MMC_SYSC.offset and value & O.MMC_SYSC.mask("SRTS"):
            self.reset()
            if self.srts_resets_card:
                self.card.reset()

    def _write_con(self, value: int) -> None:
        """MMC_CON: CLKD keeps 8 bits (revision 1); POW clear zeroes STAT and
        empties the FIFO, the interrupt line left as it was."""
        c = O.MMC_CON
        self.dw, self.mode, self.enable, self.be = (
            c.field(n).get(value) for n in ("DW", "MODE", "POW", "BE"))
        self.clkdiv = value & 0xFF
        if not self.enable:
            self.status = 0
            self.fifo_len = 0
