"""A host driver for the ARM PL181 MMCI, as Linux's ``drivers/mmc/host/mmci.c`` drives it.

The sequence is that driver's PIO path (no DMA: QEMU's PL181 has none):

* ``mmci_set_ios``: MCIPower power-up then power-on (Rod while the bus is in
  open-drain mode), MCIClock with ClkDiv, Enable and WideBus;
* ``mmci_start_command``: if MCICommand still reads Enable, write 0 first;
  then MCIArgument, then MCICommand = index | Enable | Response (| LongRsp);
* ``mmci_irq``/``mmci_cmd_irq``: read MCIStatus, keep the bits of MCIMask0,
  write them to MCIClear; on CmdRespEnd read MCIResponse0-3;
* ``mmci_start_data``: MCIDataTimer, MCIDataLength, MCIDataCtrl (Enable,
  Direction, BlockSize = log2 of the block length), MCIMask0 without
  DataEnd, MCIMask1 = RxFifoHalfFull (| RxDataAvlbl below half a FIFO) or
  TxFifoHalfEmpty; a read starts its data before the command, a write after
  the command's response;
* ``mmci_pio_read``: words = (bytes left - 4 x MCIFifoCnt), read from MCIFIFO,
  MCIStatus again, while RxDataAvlbl; ``mmci_pio_write``: a whole FIFO when
  TxFifoEmpty, else half, while TxFifoHalfEmpty;
* ``mmci_pio_irq`` end: MCIMask1 0, DataEnd back in MCIMask0; ``mmci_data_irq``
  on DataEnd: DataCtrl 0, then CMD12 for an open-ended transfer.

The target's interrupt line (MCIINTR0) stands for ``mmci_irq``'s trigger:
the driver polls MCIStatus instead, bounded.  It reports what it saw, it
does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.driver.layout import HOSTS
from harness.driver.results import DriverError
from harness.hwdefs import pl181 as P
from harness.hwdefs import sd as S
from harness.hwdefs.fields import Register
from harness.target import Target

__all__ = ["MmciCommand", "MmciError", "MmciHost", "MmciTransfer"]

_ST = P.MCISTATUS
#: Linux ``MCI_IRQENABLE`` (mmci.h) and the start bit error of the ARM variant.
IRQENABLE = _ST.mask("CmdCrcFail", "DataCrcFail", "CmdTimeOut", "DataTimeOut", "TxUnderrun",
                     "RxOverrun", "CmdRespEnd", "CmdSent", "DataEnd", "StartBitErr")
_CMD_DONE = _ST.mask("CmdCrcFail", "CmdTimeOut", "CmdRespEnd", "CmdSent")
_DATA_ERR = _ST.mask("DataCrcFail", "DataTimeOut", "TxUnderrun", "RxOverrun", "StartBitErr")
_DATAEND = _ST.mask("DataEnd")
_FIFO_BYTES = 4 * P.FIFO_DEPTH
#: Status reads a poll may take before the driver gives up (QEMU answers at once).
POLL_MAX = 64
#: Rounds of the PIO loop for one transfer (a word each at the least).
ROUNDS_MAX = 4096
#: Rounds without data before the PIO loop (or a wait for DataEnd) gives up:
#: QEMU moves data inside the access, so a stall is the card's end.
STALL_MAX = 3


class MmciError(DriverError):
    """The MMCI did not end a command or a transfer within the driver's bounds."""


@dataclass
class MmciCommand:
    """A command as sent and what came back: the status bits it ended with,
    the four response words (as read: 0 when not read)."""

    index: int
    arg: int
    status: int = 0
    response: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    @property
    def ok(self) -> bool:
        return bool(self.status & _ST.mask("CmdRespEnd", "CmdSent"))

    @property
    def timeout(self) -> bool:
        return bool(self.status & _ST.mask("CmdTimeOut"))

    @property
    def r1(self) -> int:
        return self.response[0]


@dataclass
class MmciTransfer:
    """A data transfer: its command, the bytes moved, the status seen at its
    end, and the MCIFifoCnt/MCIDataCnt pairs read along the way."""

    command: MmciCommand
    data: bytes = b""
    status: int = 0
    counts: list[tuple[int, int]] = field(default_factory=list)
    stop: MmciCommand | None = None


@HOSTS.controller("pl181")
class MmciHost:
    """Drives ``target``'s MMCI (see the module docstring)."""

    def __init__(self, target: Target, clkdiv: int = 0x1E) -> None:
        self.t = target
        self.clkdiv = clkdiv
        self.rca = 0
        self.wide = False

    def rd(self, reg: Register | int) -> int:
        return self.t.read(P.mmci(reg), 4)

    def wr(self, reg: Register | int, value: int) -> None:
        self.t.write(P.mmci(reg), 4, value)

    # -- mmci_set_ios, probe ----------------------------------------------------

    def set_ios(self, *, power: bool = True, opendrain: bool = True) -> None:
        """Power-up, power-on (Rod in open-drain mode), clock enabled."""
        rod = P.MCIPOWER.mask("Rod") if opendrain else 0
        ctrl = P.MCIPOWER.field("Ctrl")
        if power:
            self.wr(P.MCIPOWER, ctrl.value(0b10) | rod)
            self.wr(P.MCIPOWER, ctrl.value(0b11) | rod)
        else:
            self.wr(P.MCIPOWER, 0)
        clk = self.clkdiv | P.MCICLOCK.mask("Enable")
        self.wr(P.MCICLOCK, clk | (P.MCICLOCK.mask("WideBus") if self.wide else 0))

    def probe(self) -> None:
        """``mmci_probe``: both masks 0, every flag cleared, MCIMask0 = IRQENABLE."""
        self.wr(P.MCIMASK0, 0)
        self.wr(P.MCIMASK1, 0)
        self.wr(P.MCICLEAR, 0x7FF)
        self.set_ios()
        self.wr(P.MCIMASK0, IRQENABLE)

    # -- commands ------------------------------------------------------------------

    def start_command(self, index: int, arg: int = 0, *, rsp: bool = True,
                      long: bool = False, extra: int = 0) -> None:
        if self.rd(P.MCICOMMAND) & P.MCICOMMAND.mask("Enable"):
            self.wr(P.MCICOMMAND, 0)
        c = index | P.MCICOMMAND.mask("Enable") | extra
        if rsp:
            c |= P.MCICOMMAND.mask("Response") | (P.MCICOMMAND.mask("LongRsp") if long else 0)
        self.wr(P.MCIARGUMENT, arg)
        self.wr(P.MCICOMMAND, c)

    def wait(self, bits: int, *, polls: int = POLL_MAX, must: bool = True) -> int:
        """Poll MCIStatus until one of ``bits`` is set; the status read.  Not
        seen in ``polls`` reads: :class:`MmciError`, or with ``must`` False
        the last status (QEMU never sets DataTimeOut: a transfer the card
        does not serve shows nothing)."""
        status = 0
        for _ in range(polls):
            status = self.rd(P.MCISTATUS)
            if status & bits:
                return status
        if not must:
            return status
        raise MmciError(f"MCIStatus never showed {_ST.describe(bits)} in {polls} reads")

    def ack(self, status: int) -> int:
        """``mmci_irq``: the MCIMask0 bits of ``status`` written to MCIClear."""
        handled = status & self.rd(P.MCIMASK0)
        self.wr(P.MCICLEAR, handled)
        return handled

    def command(self, index: int, arg: int = 0, *, rsp: bool = True, long: bool = False,
                extra: int = 0) -> MmciCommand:
        """A command and its end (``mmci_cmd_irq``)."""
        self.start_command(index, arg, rsp=rsp, long=long, extra=extra)
        return self.finish(MmciCommand(index, arg))

    def finish(self, cmd: MmciCommand) -> MmciCommand:
        status = self.wait(_CMD_DONE)
        self.ack(status)
        cmd.status = status
        if status & _ST.mask("CmdRespEnd"):
            cmd.response = [self.rd(r) for r in P.MCIRESPONSE]
        return cmd

    def app_command(self, index: int, arg: int = 0, **kw: bool) -> MmciCommand:
        """CMD55 with the card's RCA, then ACMD``index``."""
        self.command(S.index("APP_CMD"), self.rca << 16)
        return self.command(index, arg, **kw)

    # -- the identification of PLS 4.2 ------------------------------------------------

    def init(self, *, tries: int = 20) -> dict[str, MmciCommand]:
        """Probe, CMD0, CMD8, ACMD41 until ready, CMD2, CMD3 (the RCA), push-pull,
        CMD9, CMD7, CMD16 512."""
        self.probe()
        out = {"cmd0": self.command(S.index("GO_IDLE_STATE"), rsp=False),
               "cmd8": self.command(S.index("SEND_IF_COND"),
                                    S.CMD8_VHS_27_36 | S.CMD8_CHECK_PATTERN)}
        for _ in range(tries):
            out["acmd41"] = self.app_command(S.index("SD_SEND_OP_COND", app=True),
                                             S.ACMD41_HCS | S.OCR_VDD_2V7_3V6)
            if out["acmd41"].r1 & S.OCR_BUSY:
                break
        out["cmd2"] = self.command(S.index("ALL_SEND_CID"), long=True)
        out["cmd3"] = self.command(S.index("SEND_RELATIVE_ADDR"))
        self.rca = out["cmd3"].r1 >> 16
        self.set_ios(opendrain=False)
        out["cmd9"] = self.command(S.index("SEND_CSD"), self.rca << 16, long=True)
        out["cmd7"] = self.command(S.index("SELECT_DESELECT_CARD"), self.rca << 16)
        out["cmd16"] = self.command(S.index("SET_BLOCKLEN"), 512)
        return out

    def bus_width(self, width: int) -> MmciCommand:
        """ACMD6 and MCIClock.WideBus (``mmci_set_clkreg``)."""
        rsp = self.app_command(S.index("SET_BUS_WIDTH", app=True), S.ACMD6_BUS_WIDTH[width])
        self.wide = width == 4
        self.set_ios(opendrain=False)
        return rsp

    # -- data ----------------------------------------------------------------------------

    def start_data(self, size: int, blksz: int, read: bool) -> None:
        """``mmci_start_data`` for PIO."""
        self.wr(P.MCIDATATIMER, 0x0010_0000)
        self.wr(P.MCIDATALENGTH, size)
        dc = P.MCIDATACTRL
        ctrl = dc.mask("Enable") | dc.field("BlockSize").value(blksz.bit_length() - 1)
        self.wr(P.MCIDATACTRL, ctrl | (dc.mask("Direction") if read else 0))
        self.wr(P.MCIMASK0, self.rd(P.MCIMASK0) & ~_DATAEND)
        if read:
            mask1 = _ST.mask("RxFifoHalfFull")
            if size < _FIFO_BYTES // 2:
                mask1 |= _ST.mask("RxDataAvlbl")
        else:
            mask1 = _ST.mask("TxFifoHalfEmpty")
        self.wr(P.MCIMASK1, mask1)

    def read(self, index: int, arg: int, blksz: int = 512, blocks: int = 1, *,
             stop: bool = False) -> MmciTransfer:
        """A read command with its data by PIO; CMD12 after it when ``stop``."""
        size = blksz * blocks
        self.start_data(size, blksz, read=True)
        xfer = MmciTransfer(self.command(index, arg))
        if xfer.command.ok:
            xfer.data = self._pio_read(size, xfer)
        return self._end_data(xfer, stop)

    def _pio_read(self, size: int, xfer: MmciTransfer) -> bytes:
        out = bytearray()
        stalls = 0
        for _ in range(ROUNDS_MAX):
            status = self.rd(P.MCISTATUS)
            if len(out) >= size or not status & _ST.mask("RxDataAvlbl", "RxActive") \
                    or stalls >= STALL_MAX:
                break
            fifocnt, datacnt = self.rd(P.MCIFIFOCNT), self.rd(P.MCIDATACNT)
            xfer.counts.append((fifocnt, datacnt))
            count = size - len(out) - (fifocnt << 2)
            if count <= 0:
                stalls += 1
                continue
            for _w in range((count + 3) >> 2):
                out += self.rd(P.FIFO_START).to_bytes(4, "little")
        self._pio_end()
        return bytes(out[:size])

    def write(self, index: int, arg: int, data: bytes, blksz: int = 512, *,
              stop: bool = False) -> MmciTransfer:
        """A write command, then its data by PIO (``mmci_cmd_irq`` starts it)."""
        xfer = MmciTransfer(self.command(index, arg))
        if xfer.command.ok:
            self.start_data(len(data), blksz, read=False)
            self._pio_write(data, xfer)
        return self._end_data(xfer, stop)

    def _pio_write(self, data: bytes, xfer: MmciTransfer) -> None:
        pos = 0
        for _ in range(ROUNDS_MAX):
            status = self.rd(P.MCISTATUS)
            if pos >= len(data) or not status & _ST.mask("TxFifoHalfEmpty"):
                break
            maxcnt = _FIFO_BYTES if status & _ST.mask("TxFifoEmpty") else _FIFO_BYTES // 2
            chunk = data[pos:pos + maxcnt]
            for i in range(0, len(chunk), 4):
                self.wr(P.FIFO_START, int.from_bytes(chunk[i:i + 4].ljust(4, b"\0"), "little"))
            pos += len(chunk)
            xfer.counts.append((self.rd(P.MCIFIFOCNT), self.rd(P.MCIDATACNT)))
        self._pio_end()

    def _pio_end(self) -> None:
        """``mmci_pio_irq`` with nothing left: MCIMask1 0, DataEnd unmasked."""
        self.wr(P.MCIMASK1, 0)
        self.wr(P.MCIMASK0, self.rd(P.MCIMASK0) | _DATAEND)

    def _end_data(self, xfer: MmciTransfer, stop: bool) -> MmciTransfer:
        """``mmci_data_irq``: wait for DataEnd (or an error), clear, DataCtrl 0,
        CMD12 for an open-ended transfer."""
        if xfer.command.ok:
            xfer.status = self.wait(_DATAEND | _DATA_ERR, polls=STALL_MAX, must=False)
            self.ack(xfer.status)
        self.wr(P.MCIDATACTRL, 0)
        if stop:
            xfer.stop = self.command(S.index("STOP_TRANSMISSION"))
        return xfer
