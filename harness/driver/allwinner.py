"""A host driver for the Allwinner SD/MMC host controller (SMHC), as Linux and U-Boot drive it.

Linux ``drivers/mmc/host/sunxi-mmc.c``: the controller is reset with
SD_GCTL's three reset bits and polled until they clear
(``sunxi_mmc_reset_host``), set up by ``sunxi_mmc_init_host`` (FIFO water
level 0x20070008, timeout 0xffffffff, every interrupt cleared, debug 0xdeb,
CE-ATA on, the descriptor list base, GCTL.INT_ENB); a clock change is a
command with PRG_CLK (``SDXC_UPCLK_ONLY``) polled until CMD_LOAD clears
(``sunxi_mmc_oclk_onoff``); a command sets SD_IMKR, SD_CAGR, then SD_CMDR
with CMD_LOAD and the response/data flags (``sunxi_mmc_request``); its end is
CC, DTC or ACD in SD_RISR, or an error bit (``SDXC_INTERRUPT_ERROR_BIT``);
data moves through the IDMAC from a descriptor chain (``sunxi_mmc_init_idma_des``:
CH|OWN|DIC, FD on the first, LD|ER on the last which keeps its interrupt;
DES1 0 for a buffer of the largest size) started by ``sunxi_mmc_start_dma``
and torn down by ``sunxi_mmc_finalize_request``; after a data error a CMD12
is sent by hand (``sunxi_mmc_send_manual_stop``).  U-Boot
``drivers/mmc/sunxi_mmc.c`` moves data by PIO instead (SD_GCTL FIFO_AC_MOD,
``mmc_trans_data_by_cpu``): each word waits for SD_STAR to leave FIFO_EMPTY
(read) or FIFO_FULL (write), bounded.  The driver reports what the
controller answered; it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.driver.layout import HOSTS
from harness.driver.results import DriverError
from harness.hwdefs import allwinner as A
from harness.hwdefs import sd as S
from harness.hwdefs.fields import Register
from harness.target import Target, board_of

__all__ = ["SunxiResponse", "SunxiHost", "SunxiError"]

_C, _I, _G = A.SD_CMDR.field, A.SD_RISR.field, A.SD_GCTL.field
LOAD, RESP, LONG, CRC = (_C(n).mask for n in ("CMD_LOAD", "RESP_RCV", "LONG_RESP",
                                               "CHK_RESP_CRC"))
DATA, WRITE, AUTOSTOP = (_C(n).mask for n in ("DATA_TRANS", "TRANS_DIR", "STOP_CMD_FLAG"))
WAIT_PRE, STOP_ABT, INIT_SEQ, UPCLK = (_C(n).mask for n in ("WAIT_PRE_OVER", "STOP_ABT_CMD",
                                                            "SEND_INIT_SEQ", "PRG_CLK"))
RE, CC, DTC, ACD = (_I(n).mask for n in ("RE", "CC", "DTC", "ACD"))
#: Linux ``SDXC_INTERRUPT_ERROR_BIT``.
ERRORS = sum(_I(n).mask for n in ("RE", "RCE", "DCE", "RTO", "DTO", "FU_FO", "CB_IW",
                                   "DSE", "DEE"))
RESETS = _G("SOFT_RST").mask | _G("FIFO_RST").mask | _G("DMA_RST").mask
INT_ENB, DMA_ENB, DMA_RST, FIFO_RST = (_G(n).mask for n in ("INT_ENB", "DMA_ENB", "DMA_RST",
                                                           "FIFO_RST"))
AHB = _G("FIFO_AC_MOD").mask
FIFO_EMPTY, FIFO_FULL = A.SD_STAR.field("FIFO_EMPTY").mask, A.SD_STAR.field("FIFO_FULL").mask
_D = A.DES0.field
DES_OWN, DES_CH, DES_DIC, DES_FD, DES_LD, DES_ER = (
    _D(n).mask for n in ("OWN", "CH", "DIC", "FD", "LD", "ER"))
_DMAC = A.SD_DMAC.field
IDMAC_RST, IDMAC_FIX_BURST, IDMAC_ON = (_DMAC(n).mask for n in ("IDMAC_RST", "FIX_BUST_CTRL",
                                                               "IDMAC_ENB"))
RX_INT = A.SD_IDST.field("RX_INT").mask
#: Polls of a bit before the driver gives up (QEMU answers within the access).
POLLS = 16
#: The driver's DMA area lies this far into the board's RAM (as the SDHCI driver's).
DMA_OFFSET = 16 << 20


class SunxiError(DriverError):
    """The controller did not do what the driver waited for."""


@dataclass
class SunxiResponse:
    """What a command left: SD_RISR after it, SD_RESP0..3."""

    index: int
    risr: int
    resp: tuple[int, int, int, int] = (0, 0, 0, 0)
    data: bytes = b""
    words: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """CC without an error bit."""
        return bool(self.risr & CC) and not self.risr & ERRORS

    @property
    def r1(self) -> int:
        return self.resp[0]


@HOSTS.controller("allwinner")
class SunxiHost:
    """Drives ``target``'s SMHC (see the module docstring)."""

    def __init__(self, target: Target) -> None:
        self.t = target
        board = board_of(target)
        ram = 0 if board is None else board.ram_base
        #: Descriptors at the DMA area's start, buffers 64 KiB on.
        self.desc_base = ram + DMA_OFFSET
        self.buf_base = self.desc_base + 0x1_0000
        #: The RCA the card published at CMD3 (:meth:`init_card`).
        self.rca = 0
        variant = A.VARIANTS.get(board.controller) if board is not None else None
        #: The data port: 0x100 on the A10 (U-Boot's ``struct sunxi_mmc`` before
        #: sun6i), SD_FIFO at 0x200 on the H3.
        self.fifo = A.SD_THLDC.offset if variant and variant.fifo_at_0x100 else \
            A.SD_FIFO.offset
        #: Linux's ``1 << idma_des_size_bits``: the buffer DES1 0 stands for.
        self.max_len = variant.max_desc_size if variant else 1 << 16
        #: Linux's ``cfg->can_calibrate`` (A64): SD_SAMP_DL is set at each clock change.
        self.calibrate = bool(variant and variant.can_calibrate)

    def rd(self, reg: Register) -> int:
        return self.t.read(reg.offset, 4)

    def wr(self, reg: Register, value: int) -> None:
        self.t.write(reg.offset, 4, value)

    # -- set-up ---------------------------------------------------------------------

    def reset(self, bits: int = RESETS) -> int:
        """Write the reset bits, poll SD_GCTL until they clear; the polls taken."""
        self.wr(A.SD_GCTL, (self.rd(A.SD_GCTL) & ~RESETS) | bits)
        for n in range(POLLS):
            if not self.rd(A.SD_GCTL) & bits:
                return n
        raise SunxiError(f"SD_GCTL reset bits {bits:#x} did not clear")

    def init_host(self) -> None:
        """``sunxi_mmc_init_host``: reset, set-up, interrupts cleared and enabled."""
        self.reset()
        self.wr(A.SD_FWLR, 0x2007_0008)
        self.wr(A.SD_TMOR, 0xFFFF_FFFF)
        self.wr(A.SD_IMKR, 0)
        self.wr(A.SD_RISR, 0xFFFF_FFFF)
        self.wr(A.SD_DBGC, 0xDEB)
        self.wr(A.SD_FUNS, 0xCEAA_0000)
        self.wr(A.SD_DLBA, self.desc_base)
        self.wr(A.SD_GCTL, self.rd(A.SD_GCTL) | INT_ENB)

    def clock(self, on: bool = True, div: int = 0) -> None:
        """``sunxi_mmc_oclk_onoff``: card clock on/off, a PRG_CLK command polled
        until CMD_LOAD clears, its status bits cleared."""
        ckcr = self.rd(A.SD_CKCR) & ~0x3_00FF
        if on and self.calibrate:  # sunxi_mmc_calibrate: software delay 0
            self.wr(A.SD_SAMP_DL, A.SD_SAMP_DL.field("SAMP_DL_SW_EN").mask)
        self.wr(A.SD_CKCR, ckcr | div | (A.SD_CKCR.field("CCLK_ENB").mask if on else 0))
        self.wr(A.SD_CMDR, LOAD | UPCLK | WAIT_PRE)
        for _ in range(POLLS):
            if not self.rd(A.SD_CMDR) & LOAD:
                break
        else:
            raise SunxiError("the clock change command stayed loaded")
        self.wr(A.SD_RISR, self.rd(A.SD_RISR) & ~A.SD_RISR.field("SDIOI").mask)

    def setup(self) -> None:
        """Reset and init, 1-bit bus, the card clock on."""
        self.init_host()
        self.wr(A.SD_BWDR, 0)
        self.clock(True)

    # -- commands ------------------------------------------------------------------------

    def flags(self, index: int, rsp: str, data: str = "", autostop: bool = False) -> int:
        """SD_CMDR for CMD``index`` as ``sunxi_mmc_request`` builds it: ``rsp``
        ``""`` none, ``"r1"``/``"r3"`` short (R3 without CRC), ``"r2"`` long;
        ``data`` ``"read"``/``"write"``."""
        v = LOAD | (index & 0x3F)
        if index == S.index("GO_IDLE_STATE"):
            v |= INIT_SEQ
        if rsp:
            v |= RESP | (LONG if rsp == "r2" else 0) | (0 if rsp == "r3" else CRC)
        if data:
            v |= DATA | WAIT_PRE | (WRITE if data == "write" else 0)
            v |= AUTOSTOP if autostop else 0
        return v

    def command(self, index: int, arg: int = 0, rsp: str = "r1", *, data: str = "",
                autostop: bool = False, imask: int | None = None) -> SunxiResponse:
        """Issue CMD``index``; SD_RISR and the response registers after it.
        SD_RISR is cleared (0xffff, as ``sunxi_mmc_finalize_request``) after."""
        if imask is None:
            imask = ERRORS | (ACD if autostop else DTC if data else CC)
        self.wr(A.SD_IMKR, imask)
        self.wr(A.SD_CAGR, arg)
        self.wr(A.SD_CMDR, self.flags(index, rsp, data, autostop))
        return self._finish(index, rsp)

    def _finish(self, index: int, rsp: str) -> SunxiResponse:
        risr = self.rd(A.SD_RISR)
        for _ in range(POLLS):
            if risr & (CC | ERRORS):
                break
            risr = self.rd(A.SD_RISR)
        regs = (A.SD_RESP0, A.SD_RESP1, A.SD_RESP2, A.SD_RESP3) if rsp == "r2" else (A.SD_RESP0,)
        resp = tuple(self.rd(r) for r in regs) + (0,) * (4 - len(regs))
        return SunxiResponse(index, risr, (resp[0], resp[1], resp[2], resp[3]))

    def clear(self, bits: int = 0xFFFF) -> None:
        self.wr(A.SD_RISR, bits)

    def app(self, index: int, arg: int = 0, rsp: str = "r1", rca: int = 0, **kw: object
            ) -> SunxiResponse:
        """CMD55 with ``rca``, then ACMD``index``."""
        self.command(S.index("APP_CMD"), rca << 16)
        self.clear()
        return self.command(index, arg, rsp, **kw)  # type: ignore[arg-type]

    # -- card initialisation (PLS 4.2) --------------------------------------------------

    def init_card(self, tries: int = 10) -> int:
        """CMD0, CMD8, ACMD41 until ready, CMD2, CMD3 (the RCA), CMD9, CMD7,
        ACMD6 (4-bit), CMD16 512; returns the RCA."""
        self.command(S.index("GO_IDLE_STATE"), rsp="")
        self.clear()
        self.command(S.index("SEND_IF_COND"), 0x1AA)
        self.clear()
        for _ in range(tries):
            r = self.app(41, 0x40FF_8000, rsp="r3")
            self.clear()
            if r.resp[0] & (1 << 31):
                break
        self.command(S.index("ALL_SEND_CID"), rsp="r2")
        self.clear()
        rca = self.rca = self.command(S.index("SEND_RELATIVE_ADDR")).r1 >> 16
        self.clear()
        self.command(S.index("SEND_CSD"), rca << 16, rsp="r2")
        self.clear()
        self.command(S.index("SELECT_DESELECT_CARD"), rca << 16)
        self.clear()
        self.app(6, 2, rca=rca)
        self.clear()
        self.wr(A.SD_BWDR, 1)
        self.command(S.index("SET_BLOCKLEN"), 512)
        self.clear()
        return rca

    # -- data by PIO (U-Boot) ---------------------------------------------------------------

    def pio_read(self, index: int, arg: int, nbytes: int, *, blksz: int = 512,
                 autostop: bool = False, imask: int | None = None) -> SunxiResponse:
        """A read command whose data comes through SD_FIFO, word by word as
        SD_STAR leaves FIFO_EMPTY; then the end (DTC, ACD) is awaited."""
        self.wr(A.SD_GCTL, self.rd(A.SD_GCTL) | AHB)
        self.wr(A.SD_BKSR, blksz)
        self.wr(A.SD_BYCR, nbytes)
        r = self.command(index, arg, data="read", autostop=autostop, imask=imask)
        r.data = self.pio_read_words(nbytes // 4)
        r.risr = self.wait_end(autostop)
        return r

    def pio_read_words(self, count: int) -> bytes:
        """``count`` words from SD_FIFO, each once SD_STAR leaves FIFO_EMPTY."""
        out = bytearray()
        for _ in range(count):
            if not self._wait_star(FIFO_EMPTY):
                break
            out += self.t.read(self.fifo, 4).to_bytes(4, "little")
        return bytes(out)

    def pio_write(self, index: int, arg: int, data: bytes, *, blksz: int = 512,
                  autostop: bool = False) -> SunxiResponse:
        """A write command whose data goes through SD_FIFO as SD_STAR leaves FIFO_FULL."""
        self.wr(A.SD_GCTL, self.rd(A.SD_GCTL) | AHB)
        self.wr(A.SD_BKSR, blksz)
        self.wr(A.SD_BYCR, len(data))
        r = self.command(index, arg, data="write", autostop=autostop)
        for i in range(0, len(data) - 3, 4):
            if not self._wait_star(FIFO_FULL):
                break
            self.t.write(self.fifo, 4, int.from_bytes(data[i:i + 4], "little"))
        r.risr = self.wait_end(autostop)
        return r

    def _wait_star(self, bit: int) -> bool:
        for _ in range(POLLS):
            if not self.rd(A.SD_STAR) & bit:
                return True
        return False

    def wait_end(self, autostop: bool) -> int:
        want = (ACD if autostop else 0) | DTC
        risr = self.rd(A.SD_RISR)
        for _ in range(POLLS):
            if risr & want == want or risr & ERRORS:
                break
            risr = self.rd(A.SD_RISR)
        return risr

    # -- data by the IDMAC (Linux) -----------------------------------------------------------

    def descriptors(self, sizes: list[int]) -> list[int]:
        """``sunxi_mmc_init_idma_des`` for buffers of ``sizes`` bytes laid one
        after the other from :attr:`buf_base`; the descriptors' addresses."""
        out, buf = [], self.buf_base
        for i, n in enumerate(sizes):
            addr = self.desc_base + i * A.DESC_SIZE
            last = i == len(sizes) - 1
            des0 = DES_CH | DES_OWN | (DES_FD if i == 0 else 0)
            des0 |= (DES_LD | DES_ER) if last else DES_DIC
            nxt = 0 if last else addr + A.DESC_SIZE
            words = (des0, 0 if n == self.max_len else n, buf, nxt)
            self.t.mem_write(addr, b"".join(w.to_bytes(4, "little") for w in words))
            out.append(addr)
            buf += n
        return out

    def start_dma(self, write: bool) -> None:
        """``sunxi_mmc_start_dma``: DMA_ENB, DMA_RST, the IDMAC reset and on."""
        g = self.rd(A.SD_GCTL) & ~AHB
        self.wr(A.SD_GCTL, g | DMA_ENB)
        self.wr(A.SD_GCTL, g | DMA_ENB | DMA_RST)
        self.wr(A.SD_DMAC, IDMAC_RST)
        if not write:
            self.wr(A.SD_IDIE, RX_INT)
        self.wr(A.SD_DMAC, IDMAC_FIX_BURST | IDMAC_ON)

    def finalize_dma(self) -> None:
        """``sunxi_mmc_finalize_request`` for a data command."""
        self.wr(A.SD_IMKR, 0)
        self.wr(A.SD_IDIE, 0)
        self.wr(A.SD_IDST, 0x337)
        self.wr(A.SD_DMAC, 0)
        g = self.rd(A.SD_GCTL) | DMA_RST
        self.wr(A.SD_GCTL, g)
        g &= ~DMA_ENB
        self.wr(A.SD_GCTL, g)
        self.wr(A.SD_GCTL, g | FIFO_RST)
        self.clear()

    def dma_transfer(self, index: int, arg: int, sizes: list[int], *, write: bool,
                     autostop: bool = False, blksz: int = 512) -> SunxiResponse:
        """A data command through the IDMAC over buffers of ``sizes`` bytes."""
        nbytes = sum(sizes)
        self.descriptors(sizes)
        self.wr(A.SD_BKSR, blksz)
        self.wr(A.SD_BYCR, nbytes)
        self.start_dma(write)
        r = self.command(index, arg, data="write" if write else "read", autostop=autostop)
        r.risr = self.wait_end(autostop)
        r.words = [self.rd(A.SD_IDST), self.rd(A.SD_BYCR)]
        self.finalize_dma()
        return r

    def manual_stop(self) -> SunxiResponse:
        """``sunxi_mmc_send_manual_stop``: CMD12 with STOP_ABT_CMD, polled."""
        self.wr(A.SD_CAGR, 0)
        self.wr(A.SD_CMDR, LOAD | RESP | STOP_ABT | CRC | 12)
        r = self._finish(12, "r1")
        self.clear()
        return r
