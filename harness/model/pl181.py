"""The ARM PrimeCell MultiMedia Card Interface (PL181) as QEMU models it.

Reference: the *PrimeCell MultiMedia Card Interface (PL180) TRM* (ARM DDI
0172), chapter 3; where QEMU's ``hw/sd/pl181.c`` (7.2.22, 10.0.13 and 11.1.1
alike) departs from it, this model follows QEMU and the ledger says so
(``harness/ledger/pl181.py``, ``pl181.*``).  In short, as QEMU behaves:

* A write to MCICommand with Enable runs the command at once on the card
  (no command path state machine: CmdActive never sets), unless Pending is
  set (then nothing runs); Enable then reads back 0, every other bit of the
  written value stays.  A response is taken when Response is set: no answer,
  or a 4-byte answer to a long-response command, is CmdTimeOut; else the
  response registers are filled (Response1-3 zeroed for a short one,
  Response3's bit 0 cleared) and CmdRespEnd sets; without Response, CmdSent.
  No CRC is ever checked; MCIRespCmd always reads 0.
* The data path runs after every command, after a DataCtrl write with
  Enable (DataCnt := DataLength) and after every FIFO access: with a
  non-zero DataCnt it moves bytes between card and FIFO at once (a read
  only while the card has data to send, filling the 16-word FIFO, bytes
  packed little endian; a write drains the whole FIFO to the card).  Then
  the FIFO bits of MCIStatus are recomputed from the FIFO's fill, those of
  the direction only; DataCnt 0 sets DataEnd *and* DataBlockEnd (no block
  boundaries are kept), also when no data was asked for, so every command
  leaves them set; DataCnt 0 with an empty FIFO clears DataCtrl.Enable.
* A FIFO read pops a word and defers the next refill until MCIStatus or
  MCIFifoCnt is read (QEMU's workaround for an old Linux driver); those
  reads answer the value from before the refill.  MCIFifoCnt is
  ceil(DataCnt / 4): the card side, as DataCnt.
* MCIClear clears bits 0..10; Mask0/Mask1 keep all 32 bits written;
  MCIINTR0/1 are ``status & mask0/1`` after every write and every read
  that changes state.  MCISelect is not implemented (reads 0).
* Reset (``pl181_reset``) leaves MCIClock and the FIFO's contents as they were.

The card is the shared SD card model (:class:`harness.model.sdcard.SDCard`)
on QEMU's SD bus calls: ``do_command``, ``data_ready``, ``read_data`` and
``write_data`` (``sdbus_read_byte``/``sdbus_write_byte`` in a row).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from harness.hwdefs import pl181 as P

__all__ = ["MmcBusCard", "Pl181"]

_ST = P.MCISTATUS
_CMD_INDEX = P.MCICOMMAND.field("CmdIndex").mask
_CMD_RESPONSE, _CMD_LONG, _CMD_PENDING, _CMD_ENABLE = (
    P.MCICOMMAND.mask(n) for n in ("Response", "LongRsp", "Pending", "Enable"))
_DC_ENABLE, _DC_DIRECTION = P.MCIDATACTRL.mask("Enable"), P.MCIDATACTRL.mask("Direction")
_CMDRESPEND, _CMDSENT, _CMDTIMEOUT = (_ST.mask(n) for n in ("CmdRespEnd", "CmdSent",
                                                             "CmdTimeOut"))
_DATA_DONE = _ST.mask("DataEnd", "DataBlockEnd")
_CLEAR_MASK = P.MCICLEAR.defined()
_HALF = P.FIFO_DEPTH // 2
#: Bits kept by a write (QEMU ``pl181_write``): Power and Clock 8 bits,
#: DataLength 16, DataCtrl 8; the rest the whole 32-bit value.
_WRITE_MASK = {P.MCIPOWER.offset: 0xFF, P.MCICLOCK.offset: 0xFF,
               P.MCIDATALENGTH.offset: 0xFFFF, P.MCIDATACTRL.offset: 0xFF}


class MmcBusCard(Protocol):
    """The SD bus calls QEMU's pl181 makes (``hw/sd/core.c``)."""

    @property
    def inserted(self) -> bool: ...

    @property
    def readonly(self) -> bool: ...

    def do_command(self, cmd: int, arg: int) -> bytes: ...

    def data_ready(self) -> bool: ...

    def read_data(self, length: int) -> bytes: ...

    def write_data(self, data: bytes) -> None: ...


class Pl181:
    """One PL181 with ``card`` on its bus (see the module docstring)."""

    def __init__(self, card: MmcBusCard) -> None:
        self.card = card
        self.clock = 0
        #: The FIFO, oldest word first (QEMU keeps it across a reset).
        self.fifo: deque[int] = deque()
        #: Line changes of MCIINTR0 and MCIINTR1 since last taken.
        self.irq_changes: tuple[list[bool], list[bool]] = ([], [])
        self.levels = [False, False]
        self.reset()

    def reset(self) -> None:
        """QEMU ``pl181_reset``: every register but MCIClock to 0; the FIFO
        kept (ledger ``pl181.reset-keeps-clock-and-fifo``).  The lines are
        not driven (QEMU does not update them here)."""
        self.power = self.cmdarg = self.cmd = self.datatimer = self.datalength = 0
        self.respcmd = 0
        self.response = [0, 0, 0, 0]
        self.datactrl = self.datacnt = self.status = 0
        self.mask = [0, 0]
        #: A FIFO read defers the next refill until Status or FifoCnt is read.
        self.refill_deferred = False

    # -- the interrupt outputs ----------------------------------------------------

    def update(self) -> None:
        """MCIINTR0/1 = MCIStatus & MCIMask0/1 (TRM chapter 2, "Interrupt logic")."""
        for i in (0, 1):
            level = bool(self.status & self.mask[i])
            if level != self.levels[i]:
                self.levels[i] = level
                self.irq_changes[i].append(level)

    # -- command path -----------------------------------------------------------------

    def _do_command(self) -> None:
        rsp = self.card.do_command(self.cmd & _CMD_INDEX, self.cmdarg)
        if not self.cmd & _CMD_RESPONSE:
            self.status |= _CMDSENT
            return
        if len(rsp) not in (4, 16) or (len(rsp) == 4 and self.cmd & _CMD_LONG):
            self.status |= _CMDTIMEOUT  # no answer, or a short one to a long command
            return
        words = [int.from_bytes(rsp[i:i + 4], "big") for i in range(0, len(rsp), 4)]
        if len(words) == 1:
            words += [0, 0, 0]
        words[3] &= ~1
        self.response = words
        self.status |= _CMDRESPEND

    def _write_command(self, value: int) -> None:
        self.cmd = value
        if not self.cmd & _CMD_ENABLE:
            return
        if not self.cmd & _CMD_PENDING:  # Interrupt is logged as unimplemented, not refused
            self._do_command()
            self.fifo_run()
        self.cmd &= ~_CMD_ENABLE

    # -- data path ---------------------------------------------------------------------

    @property
    def reading(self) -> bool:
        return bool(self.datactrl & _DC_DIRECTION)

    def _fill(self) -> None:
        """Card to FIFO: up to the FIFO's free words, a partial last word pushed."""
        count = min(self.datacnt, 4 * (P.FIFO_DEPTH - len(self.fifo)))
        data = self.card.read_data(count)
        self.datacnt -= count
        for i in range(0, count, 4):
            self.fifo.append(int.from_bytes(data[i:i + 4], "little"))

    def _drain(self) -> None:
        """FIFO to card: whole words, the last one cut at DataCnt."""
        out = bytearray()
        while self.datacnt > len(out) and self.fifo:
            out += self.fifo.popleft().to_bytes(4, "little")[:self.datacnt - len(out)]
        self.datacnt -= len(out)
        self.card.write_data(bytes(out))

    def fifo_run(self) -> None:
        """QEMU ``pl181_fifo_run``: move data, then recompute the FIFO bits."""
        if self.datacnt and not self.refill_deferred and (
                not self.reading or self.card.data_ready()):
            if self.reading:
                self._fill()
            else:
                self._drain()
        self.status &= ~(P.RX_FIFO_BITS | P.TX_FIFO_BITS)
        if self.datacnt == 0:
            self.status |= _DATA_DONE  # QEMU: DataBlockEnd with DataEnd only
            if not self.fifo:
                self.datactrl &= ~_DC_ENABLE
                return
        self.status |= self._fifo_bits()

    def _fifo_bits(self) -> int:
        n = len(self.fifo)
        names = ["TxActive", "RxActive"]
        names += ["TxFifoEmpty", "RxFifoEmpty"] if n == 0 else ["TxDataAvlbl", "RxDataAvlbl"]
        if n == P.FIFO_DEPTH:
            names += ["TxFifoFull", "RxFifoFull"]
        if n <= _HALF:
            names.append("TxFifoHalfEmpty")
        if n >= _HALF:
            names.append("RxFifoHalfFull")
        return _ST.mask(*names) & (P.RX_FIFO_BITS if self.reading else P.TX_FIFO_BITS)

    def _fifo_read(self) -> int:
        if not self.fifo:
            return 0  # "Unexpected FIFO read"
        value = self.fifo.popleft()
        self.refill_deferred = True
        self.fifo_run()
        self.update()
        return value

    def _fifo_write(self, value: int) -> None:
        if self.datacnt == 0:
            return  # "Unexpected FIFO write"
        if len(self.fifo) < P.FIFO_DEPTH:  # else "FIFO overflow": dropped
            self.fifo.append(value)
        self.fifo_run()

    def _resume(self, value: int) -> int:
        """A read of Status or FifoCnt: its value, then the deferred refill."""
        if self.refill_deferred:
            self.refill_deferred = False
            self.fifo_run()
            self.update()
        return value

    # -- registers ---------------------------------------------------------------------

    def read(self, offset: int) -> int:
        """A register read at ``offset`` inside the MMCI (any access size: QEMU
        hands the offset as it is, the caller masks the answer)."""
        if P.PERIPH_ID <= offset < 0x1000:
            return P.ID_BYTES[(offset - P.PERIPH_ID) >> 2]
        if P.FIFO_START <= offset < P.FIFO_END and not offset & 3:
            return self._fifo_read()
        if offset == P.MCISTATUS.offset:
            return self._resume(self.status)
        if offset == P.MCIFIFOCNT.offset:
            return self._resume((self.datacnt + 3) >> 2)
        for i, reg in enumerate(P.MCIRESPONSE):
            if offset == reg.offset:
                return self.response[i]
        regs = {P.MCIPOWER.offset: self.power, P.MCICLOCK.offset: self.clock,
                P.MCIARGUMENT.offset: self.cmdarg, P.MCICOMMAND.offset: self.cmd,
                P.MCIRESPCMD.offset: self.respcmd, P.MCIDATATIMER.offset: self.datatimer,
                P.MCIDATALENGTH.offset: self.datalength, P.MCIDATACTRL.offset: self.datactrl,
                P.MCIDATACNT.offset: self.datacnt, P.MCIMASK0.offset: self.mask[0],
                P.MCIMASK1.offset: self.mask[1]}
        return regs.get(offset, 0)

    def write(self, offset: int, value: int) -> None:
        """A register write at ``offset`` inside the MMCI; the lines follow."""
        value &= _WRITE_MASK.get(offset, 0xFFFF_FFFF)
        if offset == P.MCICOMMAND.offset:
            self._write_command(value)
        elif offset == P.MCIDATACTRL.offset:
            self.datactrl = value
            if value & _DC_ENABLE:
                self.datacnt = self.datalength
                self.fifo_run()
        elif offset == P.MCICLEAR.offset:
            self.status &= ~(value & _CLEAR_MASK)
        elif P.FIFO_START <= offset < P.FIFO_END and not offset & 3:
            self._fifo_write(value)
        else:
            self._write_plain(offset, value)
        self.update()

    def _write_plain(self, offset: int, value: int) -> None:
        names = {P.MCIPOWER.offset: "power", P.MCICLOCK.offset: "clock",
                 P.MCIARGUMENT.offset: "cmdarg", P.MCIDATATIMER.offset: "datatimer",
                 P.MCIDATALENGTH.offset: "datalength"}
        if offset in names:
            setattr(self, names[offset], value)
        elif offset in (P.MCIMASK0.offset, P.MCIMASK1.offset):
            self.mask[(offset - P.MCIMASK0.offset) >> 2] = value
