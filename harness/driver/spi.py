"""An SPI-mode SD host: the card behind a PL022 SSP selected through a PL061
pin (lm3s6965evb), or behind SiFive's SPI controller (sifive_u:
:mod:`harness.driver.sifive_spi`).

The byte protocol is PLS chapter 7: a command is six bytes (7.3.1.1); the
card answers after N_CR = 1..8 filler bytes (7.5.1.1), R1 first (bit 7 0);
R1b adds busy bytes (0x00) until the card is ready; after a read command
the card sends a start block token (0xFE, after N_AC fillers), the block
and its CRC16 (7.3.3); a write block is a token, the data, two CRC bytes,
then the card's data response token and busy (7.3.3.1); a multiple block
write ends with the stop tran token 0xFD.  The host clocks 8 more fillers
after each exchange (N_EC).  The SSP is set up for 8-bit Motorola SPI frames
(PL022 TRM 3.3.1); each frame written to SSPDR is read back from it.  The
controller is a *port* (:class:`SpiPort`: set up, select, deselect, one
byte each way), picked by the board.  The
driver reports what the card answered, it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.driver.layout import HOSTS
from harness.driver.results import DriverError
from harness.driver.sifive_spi import SifiveSpiPort, SpiPort
from harness.hwdefs import pl022 as P
from harness.hwdefs import sd as S
from harness.hwdefs import sd_spi as T
from harness.target import Target, board_of

__all__ = ["Block", "Pl022Port", "SpiError", "SpiHost", "port_for"]

#: PLS 7.5.1.1: the card answers within 8 fillers (N_CR max).
NCR_MAX = 8
#: Fillers a host waits for a start block token or a data response (bounded).
NAC_MAX = 64
#: Fillers a host waits for the end of busy (bounded: QEMU is never busy long).
BUSY_MAX = 64
_CS = 1 << P.CS_PIN
_DSS_8 = P.SSPCR0.field("DSS").value(7)
_SSE = P.SSPCR1.field("SSE").mask
_LBM = P.SSPCR1.field("LBM").mask


class SpiError(DriverError):
    """The card did not answer as the protocol says it must (no R1, no token)."""


@dataclass
class Block:
    """One data block as read: the token seen (None: none), the data, its CRC16."""

    token: int | None
    data: bytes = b""
    crc: int = 0
    fillers: int = 0

    @property
    def crc_ok(self) -> bool:
        return T.crc16(self.data) == self.crc


@dataclass
class SpiResponse:
    """A command's response bytes (R1 first; empty: no R1 within N_CR)."""

    index: int
    raw: list[int] = field(default_factory=list)

    @property
    def r1(self) -> int | None:
        return self.raw[0] if self.raw else None


class Pl022Port:
    """lm3s6965evb's SSI side: the PL022 SSP moves the frames, PL061 GPIO D
    pin 0 is the card's chip select."""

    def __init__(self, target: Target) -> None:
        self.t = target

    def setup(self, *, loopback: bool = False) -> None:
        """8-bit frames, prescaler 2, port enabled; the chip select an output, high."""
        t = self.t
        t.write(P.ssp(P.SSPCR1), 4, 0)
        t.write(P.ssp(P.SSPCR0), 4, _DSS_8)
        t.write(P.ssp(P.SSPCPSR), 4, 2)
        t.write(P.ssp(P.SSPCR1), 4, _SSE | (_LBM if loopback else 0))
        t.write(P.gpio(P.GPIODIR), 4, _CS)
        t.write(P.gpio(P.GPIODATA), 4, _CS)

    def select(self) -> None:
        """Chip select low (active); the pin's own address bit masks the write."""
        self.t.write(P.gpio(P.GPIODATA) & ~0x3FC | (_CS << 2), 4, 0)

    def deselect(self) -> None:
        self.t.write(P.gpio(P.GPIODATA) & ~0x3FC | (_CS << 2), 4, _CS)

    def xfer(self, byte: int) -> int:
        """One frame out, the frame that came back in."""
        self.t.write(P.ssp(P.SSPDR), 4, byte & 0xFF)
        return self.t.read(P.ssp(P.SSPDR), 4)


def port_for(target: Target) -> SpiPort:
    """The SSI controller of ``target``'s board: SiFive's SPI on ``sifive-spi``
    boards, the PL022 elsewhere."""
    board = board_of(target)
    if board is not None and board.variant == "sifive-spi":
        return SifiveSpiPort(target)
    return Pl022Port(target)


@HOSTS.controller("spi", "sifive-spi")
class SpiHost:
    """Drives ``target``'s SSI controller and chip select (see the module
    docstring) through ``port`` (default: :func:`port_for`)."""

    def __init__(self, target: Target, port: SpiPort | None = None) -> None:
        self.t = target
        self.port = port if port is not None else port_for(target)

    # -- the SSI controller and the chip select ----------------------------------

    def setup(self, *, loopback: bool = False) -> None:
        """The controller set up for 8-bit frames, the card deselected."""
        self.port.setup(loopback=loopback)

    def select(self) -> None:
        """Chip select active (low)."""
        self.port.select()

    def deselect(self) -> None:
        self.port.deselect()

    def xfer(self, byte: int) -> int:
        """One frame out, the frame that came back in."""
        return self.port.xfer(byte)

    def xfer_all(self, data: bytes) -> list[int]:
        return [self.xfer(b) for b in data]

    def fill(self, n: int = 1) -> list[int]:
        return [self.xfer(T.FILL) for _ in range(n)]

    # -- commands ------------------------------------------------------------------

    def command(self, index: int, arg: int = 0, *, rlen: int = 1, busy: bool = False,
                crc: int | None = None, end: bool = True) -> SpiResponse:
        """CMD``index``; ``rlen`` response bytes (R1 1, R2 2, R3/R7 5); ``busy``
        waits out an R1b; ``end`` clocks the N_EC fillers (not before data)."""
        self.xfer_all(T.command_frame(index, arg, crc))
        rsp = SpiResponse(index)
        for _ in range(NCR_MAX):
            b = self.xfer(T.FILL)
            if not b & 0x80:
                rsp.raw = [b, *self.fill(rlen - 1)]
                break
        if busy and rsp.raw:
            self.wait_busy()
        if end:
            self.fill(1)
        return rsp

    def app_command(self, index: int, arg: int = 0, **kw: object) -> SpiResponse:
        """CMD55, then ACMD``index``."""
        self.command(S.index("APP_CMD"))
        return self.command(index, arg, **kw)  # type: ignore[arg-type]

    def wait_busy(self) -> int:
        """Fillers until the card stops holding the line low; their count."""
        for n in range(BUSY_MAX):
            if self.xfer(T.FILL) != T.BUSY_BYTE:
                return n
        raise SpiError(f"the card stayed busy for {BUSY_MAX} bytes")

    # -- data blocks -----------------------------------------------------------------

    def read_block(self, length: int = 512) -> Block:
        """Wait for a start block token, then ``length`` bytes and the CRC16."""
        for n in range(NAC_MAX):
            b = self.xfer(T.FILL)
            if b == T.TOKEN_SINGLE:
                data = bytes(self.fill(length))
                hi, lo = self.fill(2)
                return Block(b, data, (hi << 8) | lo, n)
            if b != T.FILL:
                return Block(b, fillers=n)  # a data error token (PLS 7.3.3.3)
        return Block(None, fillers=NAC_MAX)

    def write_block(self, data: bytes, token: int = T.TOKEN_SINGLE) -> tuple[int, list[int]]:
        """Token, data, CRC16; returns the data response token (low 5 bits,
        0xFF: none) and the bytes the card drove during the block."""
        self.xfer(token)
        echoed = self.xfer_all(data)
        crc = T.crc16(data)
        self.xfer_all(bytes([crc >> 8, crc & 0xFF]))
        resp = 0xFF
        for _ in range(NAC_MAX):
            b = self.xfer(T.FILL)
            if b != T.FILL:
                resp = b & 0x1F
                break
        self.wait_busy()
        return resp, echoed

    def stop_tran(self) -> None:
        """The stop tran token of a multiple block write, one filler, busy."""
        self.xfer(T.TOKEN_STOP_TRAN)
        self.fill(1)
        self.wait_busy()

    # -- the initialisation of PLS 7.2.1 ------------------------------------------------

    def init(self, *, hcs: bool = True, tries: int = 20) -> dict[str, SpiResponse]:
        """Setup, select, 10 fillers, CMD0, CMD8, ACMD41 until R1 is not idle, CMD58."""
        self.setup()
        self.fill(10)  # >= 74 clocks with the card deselected (PLS 6.4.1.1)
        self.select()
        out = {"cmd0": self.command(S.index("GO_IDLE_STATE")),
               "cmd8": self.command(S.index("SEND_IF_COND"), 0x1AA, rlen=T.R7_LEN)}
        for _ in range(tries):
            out["acmd41"] = self.app_command(S.index("SD_SEND_OP_COND", app=True),
                                             (1 << 30) if hcs else 0)
            if out["acmd41"].r1 is not None and not out["acmd41"].r1 & 1:
                break
        out["cmd58"] = self.command(T.index("READ_OCR"), rlen=T.R3_LEN)
        return out

    def read_register(self, index: int) -> tuple[SpiResponse, Block | None]:
        """CMD9 (CSD) or CMD10 (CID): R1, then the 16-byte block if a start
        token comes (QEMU's R1 may carry the illegal-command flag of the
        command before: ledger spi.r1-illegal-of-previous)."""
        rsp = self.command(index, end=False)
        block = self.read_block(16) if rsp.r1 is not None else None
        self.fill(1)
        return rsp, (block if block is not None and block.token is not None else None)
