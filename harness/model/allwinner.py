"""The Allwinner SD/MMC host controller (SMHC), as QEMU's ``allwinner-sdhost`` models it.

Registers and bits are the H3 Datasheet's (section 5.3.7,
:mod:`harness.hwdefs.allwinner`); what QEMU does (``hw/sd/allwinner-sdhost.c``,
7.2.22 to 11.1.1) is described here in our words, each place it departs from
the datasheet a ledger entry (:mod:`harness.ledger.allwinner`):

* a write of SD_CMDR with CMD_LOAD sends the command at once (CMD_LOAD reads
  0 afterwards) unless PRG_CLK asks for a clock change only; with RESP_RCV
  the card's answer must be 4 bytes (LONG_RESP clear) or 16 (set) and lands
  in SD_RESP0..3 (a long one with SD_RESP0 its last word), otherwise RE
  (bit 1) is raised without CC (``sunxi.no-response-re-only``); then the
  IDMAC runs if GCTL.DMA_ENB is set, then the auto stop;
* there is no FIFO: SD_FIFO (and 0x100 on sun4i) moves a word to or from the
  card, SD_STAR shows FIFO_LEVEL 1 while the card has data to send and
  FIFO_EMPTY otherwise (``sunxi.no-fifo``);
* a transfer counter loaded with SD_BYCR counts down the bytes moved; at 0
  DTC is raised and, with STOP_CMD_FLAG in the command, CMD12 goes to the
  card with its answer in SD_RESP0..3 and ACD is raised: at once when the
  counter is already 0, and again at every FIFO access after the end
  (``sunxi.autostop-at-zero``);
* the IDMAC walks descriptors from SD_DLBA, each moving min(DES1, bytes
  left) (DES1 0: the variant's largest buffer), writes each back whole with
  OWN cleared and DES1 the size it used, follows DES3 until LD, then raises
  DTC and SDIOI in SD_RISR and NOR_INT_SUM with RX_INT or TX_INT in SD_IDST;
  SD_BYCR then reads the bytes left (``sunxi.idmac-*``);
* the interrupt line is SD_RISR & SD_IMKR while GCTL.INT_ENB, recomputed at
  the writes that can change it and at FIFO accesses; QEMU 7.2 drives it
  with that value rather than 0/1, so qtest reports every change of a
  non-zero value as a raise (``sunxi.version.irq-level-value``);
* card insertion and removal set CARD_INSERT or CARD_REMOVE (clearing the
  other) and SD_STAR.CARD_PRESENT.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from harness.hwdefs import allwinner as A
from harness.model.memory import GuestMemory
from harness.model.sdhci_state import SDBusCard

__all__ = ["AwSdHost", "Descriptor"]

U32 = 0xFFFF_FFFF
_CMD = A.SD_CMDR.field
LOAD, CLKCHANGE = _CMD("CMD_LOAD").mask, _CMD("PRG_CLK").mask
AUTOSTOP, WRITE = _CMD("STOP_CMD_FLAG").mask, _CMD("TRANS_DIR").mask
RESPONSE, LONG = _CMD("RESP_RCV").mask, _CMD("LONG_RESP").mask
CMD_IDX = _CMD("CMD_IDX").mask
_INT = A.SD_RISR.field
RE, CC, DTC = _INT("RE").mask, _INT("CC").mask, _INT("DTC").mask
ACD, SDIOI = _INT("ACD").mask, _INT("SDIOI").mask
CARD_INSERT, CARD_REMOVE = _INT("CARD_INSERT").mask, _INT("CARD_REMOVE").mask
_GCTL = A.SD_GCTL.field
INT_ENB, DMA_ENB = _GCTL("INT_ENB").mask, _GCTL("DMA_ENB").mask
GCTL_RESETS = _GCTL("SOFT_RST").mask | _GCTL("FIFO_RST").mask | _GCTL("DMA_RST").mask
_STAR = A.SD_STAR.field
FIFO_EMPTY, CARD_PRESENT = _STAR("FIFO_EMPTY").mask, _STAR("CARD_PRESENT").mask
FIFO_LEVEL_1 = _STAR("FIFO_LEVEL").value(1)
_IDST = A.SD_IDST.field
NOR_INT_SUM, RX_INT, TX_INT = (_IDST(n).mask for n in ("NOR_INT_SUM", "RX_INT", "TX_INT"))
#: SD_IDST bits a write of 1 clears (QEMU: bits 9:0).
IDST_W1C = 0x3FF
_OWN, _LD = A.DES0.field("OWN").mask, A.DES0.field("LD").mask
#: QEMU moves a descriptor's data through a 1 KiB bounce buffer.
_CHUNK = 1024

#: QEMU's reset values (``allwinner_sdhost_reset``); the rest reset to 0.
RESET_VALUES: dict[int, int] = {
    A.SD_GCTL.offset: 0x0000_0300, A.SD_TMOR.offset: 0xFFFF_FF40,
    A.SD_BKSR.offset: 0x200, A.SD_BYCR.offset: 0x200, A.SD_STAR.offset: CARD_PRESENT,
    A.SD_FWLR.offset: 0x000F_0000, A.SD_A12A.offset: 0xFFFF, A.SD_NTSR.offset: 1,
    A.SD_HWRST.offset: 1, A.SD_SAMP_DL.offset: 0x2000,
}
#: Registers that hold what was written (all 32 bits) and read it back.
_PLAIN = frozenset(r.offset for r in (
    A.SD_CKCR, A.SD_TMOR, A.SD_BWDR, A.SD_BKSR, A.SD_CAGR, A.SD_RESP0, A.SD_RESP1,
    A.SD_RESP2, A.SD_RESP3, A.SD_FWLR, A.SD_FUNS, A.SD_DBGC, A.SD_A12A, A.SD_NTSR,
    A.SD_SDBG, A.SD_HWRST, A.SD_DLBA, A.SD_DSBD))
#: Read-only state QEMU keeps (never changed but by reset): reads 0, writes dropped.
_CRC = frozenset(r.offset for r in (A.SD_RES_CRC, *A.SD_DATA_CRC, A.SD_CRC_STA))
#: Registers whose write recomputes the interrupt line.
_IRQ_WRITES = frozenset(r.offset for r in (A.SD_GCTL, A.SD_IMKR, A.SD_MISR, A.SD_RISR,
                                           A.SD_STAR, A.SD_DMAC, A.SD_IDST, A.SD_IDIE))
_RESP = (A.SD_RESP0.offset, A.SD_RESP1.offset, A.SD_RESP2.offset, A.SD_RESP3.offset)


@dataclass
class Descriptor:
    """One IDMAC descriptor as read: DES0 status, DES1 size, DES2 buffer, DES3 next."""

    status: int
    size: int
    addr: int
    next: int

    @classmethod
    def unpack(cls, raw: bytes) -> Descriptor:
        w = [int.from_bytes(raw[i:i + 4], "little") for i in range(0, A.DESC_SIZE, 4)]
        return cls(w[0], w[1], w[2], w[3])

    def pack(self) -> bytes:
        return b"".join(v.to_bytes(4, "little") for v in (self.status, self.size, self.addr,
                                                          self.next))


class AwSdHost:
    """The controller of one variant (:data:`harness.hwdefs.allwinner.VARIANTS`)
    over ``card`` (None: an empty bus) and the board's ``memory``;
    ``level_is_value``: drive the line with the masked status (QEMU < 10.0)."""

    def __init__(self, card: SDBusCard | None, memory: GuestMemory, variant: A.Variant, *,
                 level_is_value: bool = False) -> None:
        self.card, self.memory, self.variant = card, memory, variant
        self.level_is_value = level_is_value
        self.regs: dict[int, int] = {}
        #: The level (7.2: the value) the line was last driven to, and its changes.
        self.line = 0
        self.irq_changes: list[bool] = []
        self.reset()
        self._read_map = self._readers()

    def reset(self) -> None:
        """QEMU ``allwinner_sdhost_reset``: the reset values, the transfer
        counter 0; the line is not driven."""
        self.regs = {off: RESET_VALUES.get(off, 0) for off in _PLAIN}
        self.gctl, self.bycr = RESET_VALUES[A.SD_GCTL.offset], RESET_VALUES[A.SD_BYCR.offset]
        self.transfer_cnt = 0
        self.command = self.irq_mask = self.irq_status = 0
        self.status = RESET_VALUES[A.SD_STAR.offset]
        self.dmac = self.dmac_status = self.dmac_irq = self.threshold = 0
        self.sample_delay = RESET_VALUES[A.SD_SAMP_DL.offset]

    # -- the interrupt line ------------------------------------------------------

    def update_irq(self) -> None:
        """Drive the line with SD_RISR & SD_IMKR while GCTL.INT_ENB (else 0)."""
        value = self.irq_status & self.irq_mask if self.gctl & INT_ENB else 0
        level = value if self.level_is_value else int(value != 0)
        if level != self.line:
            self.line = level
            self.irq_changes.append(level != 0)

    @property
    def level(self) -> bool:
        return self.line != 0

    # -- the card --------------------------------------------------------------------

    def _data_ready(self) -> bool:
        return self.card is not None and bool(self.card.data_ready())

    def _card_read(self, n: int) -> bytes:
        if self.card is None:
            return bytes(n)
        # one chunk, as QEMU's sdbus_read_data (ledger sd.generic-read-past-size)
        read = getattr(self.card, "read_chunk", None) or self.card.read_data
        data = bytes(read(n))
        return (data + bytes(n))[:n]

    def _card_write(self, data: bytes) -> None:
        if self.card is not None:
            self.card.write_data(data)

    def set_inserted(self, inserted: bool) -> None:
        """The card's medium came or went (QEMU ``allwinner_sdhost_set_inserted``)."""
        if inserted:
            self.irq_status = (self.irq_status | CARD_INSERT) & ~CARD_REMOVE
            self.status |= CARD_PRESENT
        else:
            self.irq_status = (self.irq_status | CARD_REMOVE) & ~CARD_INSERT
            self.status &= ~CARD_PRESENT
        self.update_irq()

    # -- commands ----------------------------------------------------------------------

    def send_command(self) -> None:
        """Send SD_CMDR's command with SD_CAGR; the response into SD_RESP0..3."""
        self.command &= ~LOAD
        if not self.command & CLKCHANGE:
            resp = b"" if self.card is None else bytes(
                self.card.do_command(self.command & CMD_IDX, self.regs[A.SD_CAGR.offset]))
            if self.command & RESPONSE:
                words = self._response_words(resp)
                if words is None:
                    self.irq_status |= RE
                    return
                for off, w in zip(_RESP, words, strict=True):
                    self.regs[off] = w
        self.irq_status |= CC

    def _response_words(self, resp: bytes) -> tuple[int, ...] | None:
        """SD_RESP0..3 from the card's answer, or None where the length is not
        the one SD_CMDR.LONG_RESP asks for."""
        if len(resp) == 4 and not self.command & LONG:
            return int.from_bytes(resp, "big"), 0, 0, 0
        if len(resp) == 16 and self.command & LONG:
            return tuple(int.from_bytes(resp[i:i + 4], "big") for i in (12, 8, 4, 0))
        return None

    def auto_stop(self) -> None:
        """CMD12 (argument 0) once the transfer counter is 0, if the command asked."""
        if not (self.command & AUTOSTOP and self.transfer_cnt == 0):
            return
        saved, arg = self.command, self.regs[A.SD_CAGR.offset]
        self.command = (self.command & ~CMD_IDX) | 12
        self.regs[A.SD_CAGR.offset] = 0
        self.send_command()
        self.command, self.regs[A.SD_CAGR.offset] = saved, arg
        self.irq_status |= ACD

    def count(self, n: int) -> None:
        """``n`` bytes moved: the counter down, DTC at 0."""
        self.transfer_cnt = self.transfer_cnt - n if self.transfer_cnt > n else 0
        if not self.transfer_cnt:
            self.irq_status |= DTC

    # -- the data port -------------------------------------------------------------------

    def fifo_read(self) -> int:
        """A word from the card, if it has data to send (else 0, nothing moves)."""
        if not self._data_ready():
            return 0
        value = int.from_bytes(self._card_read(4), "little")
        self.count(4)
        self.auto_stop()
        self.update_irq()
        return value

    def fifo_write(self, value: int) -> None:
        """A word to the card, whatever its state."""
        self._card_write((value & U32).to_bytes(4, "little"))
        self.count(4)
        self.auto_stop()
        self.update_irq()

    # -- the IDMAC --------------------------------------------------------------------------

    def dma(self) -> None:
        """Run the descriptor chain for the command just sent (QEMU
        ``allwinner_sdhost_dma``): only with GCTL.DMA_ENB, SD_BYCR and SD_BKSR
        not 0, and for a read only if the card has data at once."""
        if not self.bycr or not self.regs[A.SD_BKSR.offset] or not self.gctl & DMA_ENB:
            return
        is_write = bool(self.command & WRITE)
        if not is_write and not self._data_ready():
            return
        addr = self.regs[A.SD_DLBA.offset]
        while self.bycr > 0:
            done, desc = self._descriptor(addr, is_write, self.bycr)
            self.count(done)
            self.bycr = self.bycr - done if done <= self.bycr else 0
            if desc.status & _LD:
                break
            addr = desc.next
        self.irq_status |= DTC | SDIOI
        self.dmac_status |= NOR_INT_SUM | (TX_INT if is_write else RX_INT)

    def _descriptor(self, addr: int, is_write: bool, left: int) -> tuple[int, Descriptor]:
        """Move one descriptor's data, write it back; the bytes moved."""
        raw, _ok = self.memory.read(addr, A.DESC_SIZE)
        desc = Descriptor.unpack(raw)
        if desc.size == 0 or desc.size > self.variant.max_desc_size:
            desc.size = self.variant.max_desc_size
        n = min(desc.size, left)
        base = desc.addr & ~3 & U32
        for done in range(0, n, _CHUNK):
            chunk = min(_CHUNK, n - done)
            where = (base + done) & U32
            if is_write:
                self._card_write(self.memory.read(where, chunk)[0])
            else:
                self.memory.write(where, self._card_read(chunk))
        desc.status &= ~_OWN
        self.memory.write(addr, desc.pack())
        return n, desc

    # -- registers -------------------------------------------------------------------------------

    def read(self, offset: int) -> int:
        """A 32-bit read at ``offset`` (aligned, inside the window)."""
        if offset in _PLAIN:
            return self.regs[offset]
        special = self._read_map.get(offset)
        return special() if special is not None else 0

    def _readers(self) -> dict[int, Callable[[], int]]:
        v = self.variant
        out: dict[int, Callable[[], int]] = {
            A.SD_GCTL.offset: lambda: self.gctl, A.SD_BYCR.offset: lambda: self.bycr,
            A.SD_CMDR.offset: lambda: self.command, A.SD_IMKR.offset: lambda: self.irq_mask,
            A.SD_MISR.offset: lambda: self.irq_status & self.irq_mask,
            A.SD_RISR.offset: lambda: self.irq_status, A.SD_STAR.offset: self._star,
            A.SD_DMAC.offset: lambda: self.dmac, A.SD_IDST.offset: lambda: self.dmac_status,
            A.SD_IDIE.offset: lambda: self.dmac_irq, A.SD_FIFO.offset: self.fifo_read,
            A.SD_THLDC.offset: self.fifo_read if v.fifo_at_0x100 else lambda: self.threshold,
        }
        if v.can_calibrate:
            out[A.SD_SAMP_DL.offset] = lambda: self.sample_delay
        return out

    def _star(self) -> int:
        return self.status | (FIFO_LEVEL_1 if self._data_ready() else FIFO_EMPTY)

    def write(self, offset: int, value: int) -> None:
        """A 32-bit write at ``offset`` (aligned, inside the window)."""
        value &= U32
        if offset in _PLAIN:
            self.regs[offset] = value
        elif offset == A.SD_BYCR.offset:
            self.bycr = self.transfer_cnt = value
        elif offset == A.SD_CMDR.offset:
            self.command = value
            if value & LOAD:
                self.send_command()
                self.dma()
                self.auto_stop()
        elif offset in (A.SD_FIFO.offset, A.SD_THLDC.offset):
            if offset == A.SD_FIFO.offset or self.variant.fifo_at_0x100:
                self.fifo_write(value)
            else:
                self.threshold = value
        elif offset == A.SD_SAMP_DL.offset and self.variant.can_calibrate:
            self.sample_delay = value
        elif offset not in _CRC:
            self._write_irq_register(offset, value)
        if offset in _IRQ_WRITES or offset == A.SD_CMDR.offset:
            self.update_irq()

    def _write_irq_register(self, offset: int, value: int) -> None:
        if offset == A.SD_GCTL.offset:
            self.gctl = value & ~GCTL_RESETS
        elif offset == A.SD_IMKR.offset:
            self.irq_mask = value
        elif offset in (A.SD_MISR.offset, A.SD_RISR.offset):
            self.irq_status &= ~value
        elif offset == A.SD_STAR.offset:
            self.status &= ~value
        elif offset == A.SD_DMAC.offset:
            self.dmac = value
        elif offset == A.SD_IDST.offset:
            self.dmac_status &= ~(value & IDST_W1C)
        elif offset == A.SD_IDIE.offset:
            self.dmac_irq = value
