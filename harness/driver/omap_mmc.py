"""A host driver for the OMAP1 MMC/SD host, as Linux's ``drivers/mmc/host/omap.c`` drives it.

The sequence is that driver's PIO path (``use_pio``: the controller has no
DMA of its own, its requests go to the OMAP system DMA):

* ``mmc_omap_set_ios``: MMC_CON = divisor | POW (| DW for 4 bits), written
  twice; at the first power-on the 80-clock init stream (IE 0, STAT 0xFFFF,
  CMD INIT, poll EOC, STAT 1);
* ``mmc_omap_prepare_data``: no data: BLEN 0, NBLK 0, BUF 0, SDIO bit 5
  clear, CTO 0xFF; data: NBLK blocks - 1, BLEN size - 1, SDIO/DTO (the
  x1024 multiplier for long timeouts), BUF 0x1F1F;
* ``mmc_omap_start_command``: CTO 200, ARGL, ARGH, IE (AE, AF, CCRC, CTO,
  DCRC, DTO but for CMD38, EOC, CERR, BRS), CMD = index | RSP << 8 |
  TYPE << 12 (| INAB in open-drain mode, | BUSY for R1b, | DDIR for a read);
* ``mmc_omap_irq``: while MMC_STAT is not 0, write it back; with bytes
  left, AF or BRS reads up to 64 bytes from MMC_DATA, AE writes up to 64;
  EOC (read the response: RSP6/RSP7, or RSP0..RSP7 for R2), CTO, CERR end
  the command; BRS ends the data.

One departure: CMD3's R6 is sent with RSP 6, the encoding QEMU gives R6
(its ``sd_r6`` "must match the MMC_CMD Response field"), where Linux sends
1 and so has QEMU check the RCA's bits as R1 error bits (CERR then depends
on the RCA, a random draw since QEMU 9.1).

The interrupt line stands for ``mmc_omap_irq``'s trigger: the driver polls
MMC_STAT instead, bounded.  It reports what it saw, it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.driver.layout import HOSTS
from harness.driver.results import DriverError
from harness.hwdefs import omap_mmc as O
from harness.hwdefs import sd as S
from harness.hwdefs.fields import Register
from harness.target import Target

__all__ = ["OmapHost", "OmapMmcCommand", "OmapMmcError", "OmapMmcTransfer", "cmd_word"]

_ST = O.MMC_STAT
EOC, BRS, CTO, AF, AE, CERR = (_ST.mask(n) for n in ("EOC", "BRS", "CTO", "AF", "AE", "CERR"))
#: Linux's interrupt mask for a command (DTO dropped for CMD38).
IRQ_MASK = _ST.mask("AE", "AF", "CCRC", "CTO", "DCRC", "DTO", "EOC", "CERR", "BRS")
#: Response type of each command (Linux's mmc_resp_type, as the omap driver
#: encodes it); absent: R1.
RSP: dict[int, str] = {0: "none", 4: "none", 15: "none", 2: "r2", 9: "r2", 10: "r2",
                       3: "r6"}
APP_RSP: dict[int, str] = {41: "r3"}
#: Commands whose R1 has busy (R1b).
BUSY = frozenset(map(S.index, ("SELECT_DESELECT_CARD", "STOP_TRANSMISSION", "SET_WRITE_PROT",
                               "CLR_WRITE_PROT", "ERASE")))
#: Command types (Linux's mmc_cmd_type): broadcast without and with response.
_BC, _BCR, _AC = 0, 1, 2
TYPES: dict[int, int] = {0: _BC, 2: _BCR, 3: _BCR, 8: _BCR}
#: Polls of MMC_STAT a request may take; reads of 0 in a row before giving up.
ROUNDS_MAX = 4096
STALL_MAX = 3
_FIFO_BYTES = 64  # mmc_omap_xfer_data moves at most 64 bytes per event


class OmapMmcError(DriverError):
    """The OMAP MMC host did not end a command within the driver's bounds."""


def cmd_word(index: int, rsp: str = "r1", *, ctype: int | None = None, busy: bool = False,
             read: bool = False, opendrain: bool = False, init: bool = False) -> int:
    """The MMC_CMD word ``mmc_omap_start_command`` builds."""
    f = O.MMC_CMD
    t = TYPES.get(index, _AC) if ctype is None else ctype
    word = f.field("INDX").value(index) | f.field("RSP").value(O.RSP_TYPES[rsp]) \
        | f.field("TYPE").value(t)
    for on, name in ((busy, "BUSY"), (read, "DDIR"), (opendrain, "INAB"), (init, "INIT")):
        if on:
            word |= f.mask(name)
    return word


@dataclass
class OmapMmcCommand:
    """A command as sent and what came back: every MMC_STAT value seen (ORed)
    and the response as Linux's ``cmd->resp[]`` (0 when not read)."""

    index: int
    arg: int
    status: int = 0
    response: list[int] = field(default_factory=lambda: [0, 0, 0, 0])

    @property
    def ok(self) -> bool:
        return bool(self.status & EOC) and not self.status & CTO

    @property
    def timeout(self) -> bool:
        return bool(self.status & CTO)

    @property
    def r1(self) -> int:
        return self.response[0]


@dataclass
class OmapMmcTransfer:
    """A data command: its command, the bytes moved, and ``stop`` (CMD12)."""

    command: OmapMmcCommand
    data: bytes = b""
    stop: OmapMmcCommand | None = None


@dataclass
class _Data:
    read: bool
    size: int
    out: bytearray = field(default_factory=bytearray)
    payload: bytes = b""
    pos: int = 0

    @property
    def left(self) -> int:
        return self.size - (len(self.out) if self.read else self.pos)


@HOSTS.controller("omap-mmc")
class OmapHost:
    """Drives ``target``'s OMAP MMC/SD host (see the module docstring)."""

    def __init__(self, target: Target, dsor: int = 0x3C) -> None:
        self.t = target
        self.dsor = dsor
        self.rca = 0
        self.wide = False
        self.opendrain = True
        self.powered = False

    def rd(self, reg: Register | int) -> int:
        return self.t.read(reg if isinstance(reg, int) else reg.offset, O.ACCESS_SIZE)

    def wr(self, reg: Register | int, value: int) -> None:
        self.t.write(reg if isinstance(reg, int) else reg.offset, O.ACCESS_SIZE, value)

    # -- mmc_omap_set_ios ----------------------------------------------------------

    def set_ios(self, *, power: bool = True) -> None:
        """MMC_CON twice (divisor, POW, DW); the init stream at first power-on."""
        con = self.dsor | (O.MMC_CON.mask("POW") if power else 0) \
            | (O.MMC_CON.mask("DW") if self.wide else 0)
        for _ in range(2):
            self.wr(O.MMC_CON, con)
        if power and not self.powered:
            self.init_stream()
        self.powered = power

    def init_stream(self) -> int:
        """80 clocks: IE 0, STAT cleared, CMD INIT, EOC polled and cleared."""
        self.wr(O.MMC_IE, 0)
        self.wr(O.MMC_STAT, 0xFFFF)
        self.wr(O.MMC_CMD, cmd_word(0, "none", ctype=_BC, init=True))
        status = self.wait(EOC)
        self.wr(O.MMC_STAT, EOC)
        return status

    def wait(self, bits: int, polls: int = 64) -> int:
        """Poll MMC_STAT until one of ``bits`` is set; :class:`OmapMmcError` if not."""
        status = 0
        for _ in range(polls):
            status = self.rd(O.MMC_STAT)
            if status & bits:
                return status
        raise OmapMmcError(f"MMC_STAT never showed {_ST.describe(bits)} in {polls} reads")

    # -- a request -------------------------------------------------------------------

    def _prepare(self, data: _Data | None, blksz: int) -> None:
        """``mmc_omap_prepare_data`` (PIO)."""
        if data is None:
            for reg in (O.MMC_BLEN, O.MMC_NBLK, O.MMC_BUF):
                self.wr(reg, 0)
            self.wr(O.MMC_SDIO, self.rd(O.MMC_SDIO) & ~O.MMC_SDIO.mask("DTO_X1024"))
            self.wr(O.MMC_CTO, 0xFF)
            return
        self.wr(O.MMC_NBLK, data.size // blksz - 1)
        self.wr(O.MMC_BLEN, blksz - 1)
        self.wr(O.MMC_SDIO, self.rd(O.MMC_SDIO) | O.MMC_SDIO.mask("DTO_X1024"))
        self.wr(O.MMC_DTO, 0x0800)
        self.wr(O.MMC_BUF, 0x1F1F)

    def start(self, index: int, arg: int, rsp: str, data: _Data | None) -> None:
        """``mmc_omap_start_command``."""
        word = cmd_word(index, rsp, ctype=O.TYPE_ADTC if data is not None else None,
                        busy=index in BUSY, read=data is not None and data.read,
                        opendrain=self.opendrain)
        self.wr(O.MMC_CTO, 200)
        self.wr(O.MMC_ARGL, arg & 0xFFFF)
        self.wr(O.MMC_ARGH, arg >> 16)
        self.wr(O.MMC_IE, IRQ_MASK & ~(_ST.mask("DTO") if index == S.index("ERASE") else 0))
        self.wr(O.MMC_CMD, word)

    def request(self, index: int, arg: int = 0, *, rsp: str | None = None,
                data: _Data | None = None, blksz: int = 512) -> OmapMmcCommand:
        """One request: prepare, start, then the interrupt handler's loop."""
        kind = rsp if rsp is not None else RSP.get(index, "r1")
        self._prepare(data, blksz)
        self.start(index, arg, kind, data)
        cmd = OmapMmcCommand(index, arg)
        self._service(cmd, kind, data)
        return cmd

    def _service(self, cmd: OmapMmcCommand, kind: str, data: _Data | None) -> None:
        """``mmc_omap_irq``'s loop, polled: until command and data ended."""
        cmd_done, data_done, idle = False, data is None, 0
        for _ in range(ROUNDS_MAX):
            status = self.rd(O.MMC_STAT)
            if status == 0:
                idle += 1
                if (cmd_done and data_done) or idle >= STALL_MAX:
                    return
                continue
            idle = 0
            self.wr(O.MMC_STAT, status)
            cmd.status |= status
            if data is not None and data.left:
                if data.read and status & (AF | BRS):
                    self._pio_read(data)
                if not data.read and status & AE:
                    self._pio_write(data)
            if status & (EOC | CERR) and not cmd_done:
                cmd.response = self._response(kind)
            cmd_done = cmd_done or bool(status & (EOC | CTO | CERR))
            data_done = data_done or bool(status & BRS) or bool(status & CTO)
        raise OmapMmcError(f"CMD{cmd.index}: MMC_STAT never settled in {ROUNDS_MAX} reads")

    def _response(self, kind: str) -> list[int]:
        """``mmc_omap_cmd_done``: Linux's resp[] from RSP0..RSP7."""
        if kind == "none":
            return [0, 0, 0, 0]
        if kind != "r2":
            return [self.rd(O.MMC_RSP[6]) | (self.rd(O.MMC_RSP[7]) << 16), 0, 0, 0]
        words = [self.rd(r) for r in O.MMC_RSP]
        return [words[2 * i] | (words[2 * i + 1] << 16) for i in (3, 2, 1, 0)]

    def _pio_read(self, data: _Data) -> None:
        n = min(_FIFO_BYTES, data.left)
        for _ in range((n + 1) // 2):
            data.out += self.rd(O.MMC_DATA).to_bytes(2, "little")
        del data.out[data.size:]

    def _pio_write(self, data: _Data) -> None:
        n = min(_FIFO_BYTES, data.left)
        chunk = data.payload[data.pos:data.pos + n].ljust(n + (n & 1), b"\0")
        for i in range(0, len(chunk), 2):
            self.wr(O.MMC_DATA, int.from_bytes(chunk[i:i + 2], "little"))
        data.pos += n

    # -- commands and the identification of PLS 4.2 ---------------------------------------

    def command(self, index: int, arg: int = 0, rsp: str | None = None) -> OmapMmcCommand:
        return self.request(index, arg, rsp=rsp)

    def app_command(self, index: int, arg: int = 0) -> OmapMmcCommand:
        """CMD55 with the card's RCA, then ACMD``index``."""
        self.command(S.index("APP_CMD"), self.rca << 16)
        return self.request(index, arg, rsp=APP_RSP.get(index, "r1"))

    def init(self, *, tries: int = 20) -> dict[str, OmapMmcCommand]:
        """Power-on (init stream), CMD0, CMD8, ACMD41 until ready, CMD2, CMD3,
        push-pull, CMD9, CMD7, CMD16 512."""
        self.set_ios()
        out = {"cmd0": self.command(S.index("GO_IDLE_STATE")),
               "cmd8": self.command(S.index("SEND_IF_COND"),
                                    S.CMD8_VHS_27_36 | S.CMD8_CHECK_PATTERN)}
        for _ in range(tries):
            out["acmd41"] = self.app_command(S.index("SD_SEND_OP_COND", app=True),
                                             S.ACMD41_HCS | S.OCR_VDD_2V7_3V6)
            if out["acmd41"].r1 & S.OCR_BUSY:
                break
        out["cmd2"] = self.command(S.index("ALL_SEND_CID"))
        out["cmd3"] = self.command(S.index("SEND_RELATIVE_ADDR"))
        self.rca = out["cmd3"].r1 >> 16
        self.opendrain = False
        out["cmd9"] = self.command(S.index("SEND_CSD"), self.rca << 16)
        out["cmd7"] = self.command(S.index("SELECT_DESELECT_CARD"), self.rca << 16)
        out["cmd16"] = self.command(S.index("SET_BLOCKLEN"), 512)
        return out

    def bus_width(self, width: int) -> OmapMmcCommand:
        """ACMD6 and MMC_CON.DW (``mmc_omap_calc_divisor``)."""
        rsp = self.app_command(S.index("SET_BUS_WIDTH", app=True), S.ACMD6_BUS_WIDTH[width])
        self.wide = width == 4
        self.set_ios()
        return rsp

    # -- data --------------------------------------------------------------------------------

    def read(self, index: int, arg: int, blksz: int = 512, blocks: int = 1, *,
             stop: bool = False, rsp: str | None = None) -> OmapMmcTransfer:
        """A read command with its data by PIO; CMD12 after it when ``stop``."""
        data = _Data(True, blksz * blocks)
        x = OmapMmcTransfer(self.request(index, arg, rsp=rsp, data=data, blksz=blksz))
        x.data = bytes(data.out)
        if stop:
            x.stop = self.command(S.index("STOP_TRANSMISSION"))
        return x

    def write(self, index: int, arg: int, payload: bytes, blksz: int = 512, *,
              stop: bool = False) -> OmapMmcTransfer:
        """A write command, then its data by PIO as AE asks for it."""
        data = _Data(False, len(payload), payload=payload)
        x = OmapMmcTransfer(self.request(index, arg, data=data, blksz=blksz))
        x.data = payload[:data.pos]
        if stop:
            x.stop = self.command(S.index("STOP_TRANSMISSION"))
        return x
