"""A host driver for the BCM2835 SDHOST, as Linux's ``drivers/mmc/host/bcm2835.c`` drives it.

* The card's pins: GPIO 48-53 to ALT0 (Linux ``sdhost_gpio48``, what the
  firmware and the device tree select), by read-modify-write of GPFSEL4 and
  GPFSEL5 (BCM2835 ARM Peripherals 6.1).
* Reset (``bcm2835_reset_internal``): power off, the command, argument,
  timeout, divisor, status (0x7f8 written to clear), configuration and
  counts written, the FIFO thresholds in SDEDM set to 4, power on, the
  configuration and divisor written again.  The configuration keeps
  BUSY_IRPT_EN (Linux sets it at probe).
* A command (``bcm2835_send_command``): wait for SDCMD.NEW_FLAG to clear,
  clear SDHSTS's error bits if any, SDARG, then SDCMD with the index, the
  response kind (NO_RESPONSE, LONG_RESPONSE, BUSYWAIT for R1b), READ_CMD or
  WRITE_CMD, and NEW_FLAG; then (``bcm2835_finish_command``) SDCMD again:
  FAIL_FLAG means SDHSTS says why (the error bits are cleared), else the
  response from SDRSP0 (SDRSP0..3 for R2).  An R1b command completes on the
  busy interrupt, which the interrupt handler clears.
* Data by PIO through SDDATA (``bcm2835_transfer_block_pio``): SDHBCT and
  SDHBLC before the command; a read takes each block on the data interrupt
  (SDHCFG.DATA_IRPT_EN; the handler writes BUSY, BLOCK, SDIO and DATA_FLAG to
  SDHSTS first), in bursts of up to 8 words as SDEDM's FIFO level allows; a
  write sends its first block on the data interrupt, swapping DATA_IRPT_EN
  for BLOCK_IRPT_EN, and each next one on a block interrupt.  The end
  (``bcm2835_finish_data``) clears both enables; a multiple block transfer
  ends with CMD12 (R1b), a single one waits for SDEDM's FSM to be back in
  IDENTMODE or DATAMODE (``bcm2835_wait_transfer_complete``).
The driver reports what it saw; it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.driver.layout import HOSTS
from harness.driver.results import DriverError
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import sd as S
from harness.hwdefs.fields import Register
from harness.target import Target

__all__ = ["SdhostResult", "SdhostError", "SdhostHost"]

_NEW, _FAIL = B.SDCMD.mask("NEW_FLAG"), B.SDCMD.mask("FAIL_FLAG")
_READ, _WRITE = B.SDCMD.mask("READ_CMD"), B.SDCMD.mask("WRITE_CMD")
_RSP_FLAGS = {"none": B.SDCMD.mask("NO_RESPONSE"), "r1": 0, "r2": B.SDCMD.mask("LONG_RESPONSE"),
              "r1b": B.SDCMD.mask("BUSYWAIT")}
_DATA_EN, _BLOCK_EN, _BUSY_EN = (B.SDHCFG.mask(n) for n in ("DATA_IRPT_EN", "BLOCK_IRPT_EN",
                                                            "BUSY_IRPT_EN"))
_IRQ_CLEAR = B.SDHSTS.mask("BUSY_IRPT", "BLOCK_IRPT", "SDIO_IRPT", "DATA_FLAG")
_DATA_FLAG, _BLOCK, _BUSY = (B.SDHSTS.mask(n) for n in ("DATA_FLAG", "BLOCK_IRPT", "BUSY_IRPT"))
_FSM, _LEVEL = B.SDEDM.field("FSM"), B.SDEDM.field("FIFO_LEVEL")
_RTH, _WTH = B.SDEDM.field("READ_THRESHOLD"), B.SDEDM.field("WRITE_THRESHOLD")
_FORCE = B.SDEDM.mask("FORCE_DATA_MODE")
#: Linux: FIFO_READ_THRESHOLD, FIFO_WRITE_THRESHOLD, SDDATA_FIFO_PIO_BURST.
FIFO_THRESHOLD, PIO_BURST = 4, 8
#: Linux's SDCDIV for 400 kHz from its 250 MHz core clock (623), then 25 MHz (8).
CDIV_IDENT, CDIV_DATA = 623, 8
#: Bounded polls (QEMU completes everything at once: more is a hang).
POLLS = 16
_SLOW_CARD = B.SDHCFG.mask("SLOW_CARD", "WIDE_INT_BUS")
_WIDE = B.SDHCFG.mask("WIDE_EXT_BUS")
_CMD12 = 12


class SdhostError(DriverError):
    """The controller did not do what the driver waits for within the bounded polls."""


@dataclass
class SdhostResult:
    """One command: SDCMD and SDHSTS as the driver read them, the response words."""

    index: int
    sdcmd: int = 0
    hsts: int = 0
    rsp: list[int] = field(default_factory=list)
    data: bytes = b""

    @property
    def failed(self) -> bool:
        return bool(self.sdcmd & _FAIL)

    @property
    def r1(self) -> int:
        return self.rsp[0] if self.rsp else 0


@HOSTS.controller("sdhost")
class SdhostHost:
    """Drives ``target``'s GPIO function select and SDHOST (module docstring)."""

    def __init__(self, target: Target) -> None:
        self.t = target
        self.hcfg = _BUSY_EN
        self.cdiv = CDIV_IDENT
        self.rca = 0
        #: Interrupts the handler saw (SDHSTS at each), for scenarios to look at.
        self.irqs: list[int] = []

    def rd(self, reg: Register) -> int:
        return self.t.read(B.host(reg), 4)

    def wr(self, reg: Register, value: int) -> None:
        self.t.write(B.host(reg), 4, value)

    # -- the pins and the controller ---------------------------------------------

    def route(self, function: int = B.ALT0) -> None:
        """Pins 48-53 to ``function`` (ALT0: the SDHOST) in GPFSEL4 and GPFSEL5."""
        for reg in (B.GPFSEL[4], B.GPFSEL[5]):
            value = self.t.read(B.gpio(reg), 4)
            for pin in B.SD_PINS:
                if reg.name == B.fsel_field(pin)[0].name:
                    value = B.fsel_field(pin)[1].put(value, function)
            self.t.write(B.gpio(reg), 4, value)

    def reset(self) -> None:
        """Linux ``bcm2835_reset_internal``."""
        self.wr(B.SDVDD, 0)
        for reg, value in ((B.SDCMD, 0), (B.SDARG, 0), (B.SDTOUT, 0xF00000), (B.SDCDIV, 0),
                           (B.SDHSTS, 0x7F8), (B.SDHCFG, 0), (B.SDHBCT, 0), (B.SDHBLC, 0)):
            self.wr(reg, value)
        edm = _WTH.put(_RTH.put(self.rd(B.SDEDM), FIFO_THRESHOLD), FIFO_THRESHOLD)
        self.wr(B.SDEDM, edm)
        self.wr(B.SDVDD, 1)
        self.wr(B.SDHCFG, self.hcfg)
        self.wr(B.SDCDIV, self.cdiv)

    def set_ios(self, cdiv: int, wide: bool = False) -> None:
        """Linux ``bcm2835_set_ios``: the divisor, a timeout, the bus width, SLOW_CARD."""
        self.cdiv = cdiv
        self.wr(B.SDCDIV, cdiv)
        self.wr(B.SDTOUT, 250_000_000 // (cdiv + 2) // 2)
        self.hcfg = (self.hcfg & ~_WIDE) | (_WIDE if wide else 0) | _SLOW_CARD
        self.wr(B.SDHCFG, self.hcfg)

    # -- the interrupt handler ------------------------------------------------------

    def irq(self) -> int:
        """Linux ``bcm2835_irq``'s first steps when the line is high: SDHSTS read,
        then BUSY, BLOCK, SDIO and DATA_FLAG written to clear; 0 with the line low."""
        if not self.t.irq_level():
            return 0
        hsts = self.rd(B.SDHSTS)
        self.wr(B.SDHSTS, _IRQ_CLEAR)
        self.irqs.append(hsts)
        return hsts

    # -- commands ----------------------------------------------------------------------

    def _wait_cmd(self) -> int:
        for _ in range(POLLS):
            sdcmd = self.rd(B.SDCMD)
            if not sdcmd & _NEW:
                return sdcmd
        raise SdhostError(f"SDCMD.NEW_FLAG still set after {POLLS} reads")

    def send(self, index: int, arg: int = 0, rsp: str = "r1", flags: int = 0,
             data: tuple[int, int] | None = None) -> None:
        """``bcm2835_send_command``: SDCMD idle, SDHSTS's errors cleared, the data
        (``(blksz, blocks)``: ``bcm2835_prepare_data``), SDARG, SDCMD with NEW_FLAG."""
        self._wait_cmd()
        hsts = self.rd(B.SDHSTS)
        if hsts & B.SDHSTS_ERROR_MASK:
            self.wr(B.SDHSTS, hsts)
        if data is not None:
            self._prepare(*data)
        self.wr(B.SDARG, arg)
        self.wr(B.SDCMD, (index & 0x3F) | _RSP_FLAGS[rsp] | flags | _NEW)

    def finish(self, index: int, rsp: str = "r1") -> SdhostResult:
        """``bcm2835_finish_command``: SDCMD, the errors or the response."""
        res = SdhostResult(index, self._wait_cmd())
        if res.failed:
            res.hsts = self.rd(B.SDHSTS)
            self.wr(B.SDHSTS, B.SDHSTS_ERROR_MASK)
            edm = self.rd(B.SDEDM)
            if _FSM.get(edm) in (B.FSM_READWAIT, B.FSM_WRITESTART1):
                self.wr(B.SDEDM, edm | _FORCE)
            return res
        if rsp == "r2":  # SDRSP0 first, the response's words from the top
            res.rsp = [self.rd(reg) for reg in B.SDRSP][::-1]
        elif rsp != "none":
            res.rsp = [self.rd(B.SDRSP[0])]
        return res

    def command(self, index: int, arg: int = 0, rsp: str = "r1") -> SdhostResult:
        """A command without data; an R1b one waits for the busy interrupt."""
        self.send(index, arg, rsp)
        if rsp == "r1b" and not self.rd(B.SDCMD) & _FAIL:
            self.irq()
        return self.finish(index, rsp)

    def app_command(self, index: int, arg: int = 0, rsp: str = "r1") -> SdhostResult:
        """CMD55 with the card's RCA, then ACMD``index``."""
        self.command(S.index("APP_CMD"), self.rca << 16)
        return self.command(index, arg, rsp)

    # -- data ---------------------------------------------------------------------------

    def _prepare(self, blksz: int, blocks: int) -> None:
        """``bcm2835_set_transfer_irqs`` (PIO: DATA and BUSY), SDHBCT, SDHBLC."""
        self.hcfg = (self.hcfg & ~(_DATA_EN | _BLOCK_EN | _BUSY_EN)) | _DATA_EN | _BUSY_EN
        self.wr(B.SDHCFG, self.hcfg)
        self.wr(B.SDHBCT, blksz)
        self.wr(B.SDHBLC, blocks)

    def _finish_data(self) -> None:
        self.hcfg &= ~(_DATA_EN | _BLOCK_EN)
        self.wr(B.SDHCFG, self.hcfg)

    def pio_block(self, nbytes: int, data: bytes | None = None) -> bytes:
        """``bcm2835_transfer_block_pio``: one block through SDDATA, in bursts."""
        words, out, pos, stalls = (nbytes + 3) // 4, bytearray(), 0, 0
        while words and stalls <= POLLS:
            level = _LEVEL.get(self.rd(B.SDEDM))
            room = level if data is None else B.FIFO_WORDS - level
            if room < min(PIO_BURST, words):  # Linux waits (bounded) for the FIFO
                stalls += 1
                continue
            n = min(room, words)
            for _ in range(n):
                if data is None:
                    out += self.rd(B.SDDATA).to_bytes(4, "little")
                else:
                    self.wr(B.SDDATA, int.from_bytes(data[pos:pos + 4], "little"))
                    pos += 4
            words -= n
        self.rd(B.SDHSTS)  # bcm2835_transfer_pio: the errors after the block
        return bytes(out[:nbytes])

    def read(self, index: int, arg: int, blksz: int = 512, blocks: int = 1,
             rsp: str = "r1") -> SdhostResult:
        """A read command and its data by PIO (each block on a data interrupt)."""
        self.send(index, arg, rsp, _READ, (blksz, blocks))
        res = self.finish(index, rsp)
        if not res.failed:
            data = bytearray()
            for _ in range(blocks):
                hsts = self.irq()
                if not hsts & _DATA_FLAG:
                    break
                data += self.pio_block(blksz)
            res.data = bytes(data)
        self._finish_data()
        self._end(blocks)
        return res

    def write(self, index: int, arg: int, data: bytes, blksz: int = 512) -> SdhostResult:
        """A write command and its blocks by PIO (the first on the data
        interrupt, the next ones on block interrupts)."""
        blocks = max(1, len(data) // blksz)
        self.send(index, arg, "r1", _WRITE, (blksz, blocks))
        res = self.finish(index)
        sent = 0
        if not res.failed and self.irq() & _DATA_FLAG:
            self.hcfg = (self.hcfg & ~_DATA_EN) | _BLOCK_EN
            self.wr(B.SDHCFG, self.hcfg)
            self.pio_block(blksz, data[:blksz])
            sent = 1
            while sent < blocks and self.irq() & _BLOCK:
                self.pio_block(blksz, data[sent * blksz:(sent + 1) * blksz])
                sent += 1
            self.irq()  # the last block's interrupt
        self._finish_data()
        self._end(blocks)
        return res

    def _end(self, blocks: int) -> None:
        """CMD12 after a multiple block transfer, else the FSM back to idle."""
        if blocks > 1:
            self.command(_CMD12, 0, "r1b")
            return
        for _ in range(POLLS):
            edm = self.rd(B.SDEDM)
            fsm = _FSM.get(edm)
            if fsm in (B.FSM_IDENTMODE, B.FSM_DATAMODE):
                return
            if fsm in (B.FSM_READWAIT, B.FSM_WRITESTART1):
                self.wr(B.SDEDM, edm | _FORCE)
                return

    # -- the card ------------------------------------------------------------------------

    def init(self, *, wide: bool = True) -> dict[str, SdhostResult]:
        """Route, reset, then PLS 4.2: CMD0, CMD8, ACMD41 until ready, CMD2, CMD3,
        CMD9, CMD7 (R1b), ACMD6 (4-bit if ``wide``), the data clock."""
        self.route()
        self.reset()
        self.rca = 0  # CMD55 before CMD3 addresses RCA 0 (PLS 4.2.2)
        self.set_ios(CDIV_IDENT)
        out = {"cmd0": self.command(S.index("GO_IDLE_STATE"), 0, "none"),
               "cmd8": self.command(S.index("SEND_IF_COND"), 0x1AA)}
        for _ in range(POLLS):
            out["acmd41"] = self.app_command(S.index("SD_SEND_OP_COND", app=True),
                                             S.ACMD41_HCS | 0x00FF8000)
            if out["acmd41"].failed or out["acmd41"].r1 & S.OCR_BUSY:
                break
        out["cmd2"] = self.command(S.index("ALL_SEND_CID"), 0, "r2")
        out["cmd3"] = self.command(S.index("SEND_RELATIVE_ADDR"))
        self.rca = out["cmd3"].r1 >> 16
        out["cmd9"] = self.command(S.index("SEND_CSD"), self.rca << 16, "r2")
        out["cmd7"] = self.command(S.index("SELECT_DESELECT_CARD"), self.rca << 16, "r1b")
        if wide:
            out["acmd6"] = self.app_command(S.index("SET_BUS_WIDTH", app=True),
                                            S.ACMD6_BUS_WIDTH[4])
        self.set_ios(CDIV_DATA, wide)
        return out

    def status(self) -> SdhostResult:
        """CMD13 (SEND_STATUS) with the card's RCA."""
        return self.command(S.index("SEND_STATUS"), self.rca << 16)
