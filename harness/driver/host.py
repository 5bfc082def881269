"""The host driver: card-level operations over :class:`Controller`.

Card initialisation follows the SD Physical Layer Simplified Specification
4.2 (card identification) and 4.3 (data transfer mode); the controller side
follows the SD Host Controller Simplified Specification 3.6-3.7.  Written
once against :class:`~harness.target.Target`: the same calls drive the model
and QEMU.  The driver reports what it saw; it does not judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from harness.driver.adma import AdmaOptions
from harness.driver.controller import CMD_LINE_ERRORS, Controller
from harness.driver.results import CommandResult, DriverError, Mode, Transfer
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.hwdefs.fields import Register
from harness.hwdefs.sd import Resp
from harness.target import Target

# Names from the card spec used by callers of the driver too.
CMD8_VHS_27_36 = S.CMD8_VHS_27_36
CMD8_CHECK_PATTERN = S.CMD8_CHECK_PATTERN
ACMD6_BUS_WIDTH = S.ACMD6_BUS_WIDTH
LOCK_SET_PWD, LOCK_CLR_PWD, LOCK_LOCK, LOCK_ERASE = (
    S.LOCK_SET_PWD, S.LOCK_CLR_PWD, S.LOCK_LOCK, S.LOCK_ERASE)
#: Data block lengths (PLS 4.3.10 CMD6 status, 4.10.2 SD status, 5.6 SCR,
#: 4.3.14 CMD30 and ACMD22).
SWITCH_STATUS_BYTES = S.SWITCH_STATUS.width
SD_STATUS_BYTES = S.SD_STATUS.width
SCR_BYTES = S.SCR.width
WRITE_PROT_BYTES = S.WRITE_PROT_BYTES
NUM_WR_BLOCKS_BYTES = S.NUM_WR_BLOCKS_BYTES

#: ACMD41 voltage window the host offers at 3.3 V: 3.2-3.4 V (PLS 5.1).
HOST_OCR_33V = S.OCR.mask("VDD_32_33", "VDD_33_34")


GO_IDLE_STATE = S.index("GO_IDLE_STATE")
ALL_SEND_CID = S.index("ALL_SEND_CID")
SEND_RELATIVE_ADDR = S.index("SEND_RELATIVE_ADDR")
SWITCH_FUNC = S.index("SWITCH_FUNC")
SELECT_DESELECT_CARD = S.index("SELECT_DESELECT_CARD")
SEND_IF_COND = S.index("SEND_IF_COND")
SEND_CSD = S.index("SEND_CSD")
SEND_CID = S.index("SEND_CID")
STOP_TRANSMISSION = S.index("STOP_TRANSMISSION")
SEND_STATUS = S.index("SEND_STATUS")
SET_BLOCKLEN = S.index("SET_BLOCKLEN")
READ_SINGLE_BLOCK = S.index("READ_SINGLE_BLOCK")
READ_MULTIPLE_BLOCK = S.index("READ_MULTIPLE_BLOCK")
SEND_TUNING_BLOCK = S.index("SEND_TUNING_BLOCK")
SET_BLOCK_COUNT = S.index("SET_BLOCK_COUNT")
WRITE_BLOCK = S.index("WRITE_BLOCK")
WRITE_MULTIPLE_BLOCK = S.index("WRITE_MULTIPLE_BLOCK")
SEND_WRITE_PROT = S.index("SEND_WRITE_PROT")
ERASE_WR_BLK_START = S.index("ERASE_WR_BLK_START")
ERASE_WR_BLK_END = S.index("ERASE_WR_BLK_END")
ERASE = S.index("ERASE")
LOCK_UNLOCK = S.index("LOCK_UNLOCK")
APP_CMD = S.index("APP_CMD")
ACMD_SET_BUS_WIDTH = S.index("SET_BUS_WIDTH", app=True)
ACMD_SD_STATUS = S.index("SD_STATUS", app=True)
ACMD_SEND_NUM_WR_BLOCKS = S.index("SEND_NUM_WR_BLOCKS", app=True)
ACMD_SD_SEND_OP_COND = S.index("SD_SEND_OP_COND", app=True)
ACMD_SEND_SCR = S.index("SEND_SCR", app=True)

Stop = Literal["auto", "auto12", "auto23", "cmd12", "cmd23", "none"]


@dataclass
class CardInfo:
    """What card initialisation found (PLS 4.2)."""

    ocr: int = 0
    #: CMD8 R7 echo (bits 11:0), None when the card did not answer CMD8.
    if_cond: int | None = None
    cid: int = 0
    csd: int = 0
    rca: int = 0
    scr: int | None = None
    block_len: int = 512
    bus_width: int = 1
    #: Every command sent during initialisation, in order.
    steps: list[CommandResult] = field(default_factory=list)

    @property
    def high_capacity(self) -> bool:
        """OCR CCS: block addressing (SDHC/SDXC) when set (PLS 5.1)."""
        return bool(self.ocr & S.OCR_CCS)

    @property
    def csd_register(self) -> Register:
        """The CSD layout for this card's CSD_STRUCTURE (PLS 5.3.1)."""
        return S.CSD_V2 if S.CSD_V1.field("CSD_STRUCTURE").get(self.csd) == 1 else S.CSD_V1

    def cid_fields(self) -> dict[str, int]:
        return S.CID.decode(self.cid)

    def csd_fields(self) -> dict[str, int]:
        return self.csd_register.decode(self.csd)

    def scr_fields(self) -> dict[str, int]:
        return S.SCR.decode(self.scr or 0)

    @property
    def capacity(self) -> int:
        """User area size in bytes from the CSD (PLS 5.3.2, 5.3.3)."""
        f = self.csd_fields()
        if self.csd_register is S.CSD_V2:
            return (f["C_SIZE"] + 1) * 512 * 1024
        mult = 1 << (f["C_SIZE_MULT"] + 2)
        return (f["C_SIZE"] + 1) * mult * (1 << f["READ_BL_LEN"])


class HostDriver(Controller):
    """Controller plus SD card operations.

    ``card`` holds what :meth:`init_card` learned (RCA, addressing mode, block
    length).  Block numbers given to :meth:`read_blocks` / :meth:`write_blocks`
    become byte addresses on standard capacity cards (PLS 4.3.14 note: SDSC
    uses byte units, SDHC/SDXC block units).
    """

    def __init__(
        self,
        target: Target,
        *,
        dma_base: int | None = None,
        timeout_steps: int = 2000,
        poll_ns: int = 10_000,
        recover: bool = True,
    ) -> None:
        super().__init__(target, dma_base=dma_base, timeout_steps=timeout_steps,
                         poll_ns=poll_ns, recover=recover)
        self.card = CardInfo()

    # -- building blocks -----------------------------------------------------

    def cmd(self, index: int, arg: int = 0, resp: Resp | None = None,
            data: Transfer | None = None, *, cmd_type: int = H.CMD_TYPE_NORMAL) -> CommandResult:
        """Send CMD``index``; the response type defaults to the spec's (PLS 4.7.4)."""
        r = resp if resp is not None else S.SD_COMMANDS[index].resp
        return self.command(index, arg, r, data, cmd_type=cmd_type)

    def acmd(self, index: int, arg: int = 0, resp: Resp | None = None,
             data: Transfer | None = None, *, rca: int | None = None) -> CommandResult:
        """CMD55 then ACMD``index`` (PLS 4.3.9).  When CMD55 fails its result
        is returned; otherwise the ACMD's, with CMD55 in ``related``."""
        r55 = self.cmd(APP_CMD, (self.card.rca if rca is None else rca) << 16)
        if r55.error:
            return r55
        r = resp if resp is not None else S.SD_APP_COMMANDS[index].resp
        res = self.command(index, arg, r, data)
        res.app = True
        res.related.insert(0, r55)
        return res

    def address(self, block: int, block_size: int | None = None) -> int:
        """Command argument for ``block``: block number or byte address."""
        if self.card.high_capacity:
            return block
        return block * (self.card.block_len if block_size is None else block_size)

    @staticmethod
    def _must(res: CommandResult, what: str) -> CommandResult:
        if res.error:
            raise DriverError(what, res)
        return res

    # -- initialisation (PLS 4.2, Figure 4-2) ---------------------------------

    def init(self) -> CardInfo:
        """Controller set-up then card initialisation, with the defaults."""
        self.setup()
        return self.init_card()

    def init_card(
        self,
        *,
        hcs: bool = True,
        voltage_window: int = HOST_OCR_33V,
        acmd41_step_ns: int = 1_000_000,
        acmd41_tries: int = 1000,
        block_len: int = 512,
        bus_width: int = 4,
        read_scr: bool = True,
        freq_hz: int = 25_000_000,
    ) -> CardInfo:
        """CMD0, CMD8, ACMD41 (enquiry, then until power-up), CMD2, CMD3,
        CMD9, CMD7, CMD16, ACMD51, ACMD6.  Raises :class:`DriverError` with
        the failing command's result when a mandatory step fails.

        The ACMD41 loop steps virtual time ``acmd41_step_ns`` between tries,
        up to ``acmd41_tries`` (the spec allows 1 s, PLS 4.2.3.1)."""
        info = CardInfo(block_len=block_len)
        self.card = info
        v2 = self._if_cond(info)
        self._power_up(info, voltage_window, hcs and v2, acmd41_step_ns, acmd41_tries)
        self._identify(info)
        self.set_clock(freq_hz)
        steps = info.steps
        steps.append(self._must(self.cmd(SELECT_DESELECT_CARD, info.rca << 16), "CMD7"))
        steps.append(self._must(self.cmd(SET_BLOCKLEN, block_len), "CMD16"))
        if read_scr:
            scr = self.read_scr()
            steps.append(scr)
            self._must(scr, "ACMD51")
            info.scr = S.register_value(scr.data or b"")
        if bus_width != 1:
            widths = S.SCR.field("SD_BUS_WIDTHS").get(info.scr or 0)
            if info.scr is None or widths & (1 << 2):
                r6 = self.acmd(ACMD_SET_BUS_WIDTH, ACMD6_BUS_WIDTH[bus_width])
                steps.append(self._must(r6, "ACMD6"))
                self.set_bus_width(bus_width)
                info.bus_width = bus_width
        return info

    def _if_cond(self, info: CardInfo) -> bool:
        """CMD0, then CMD8 (PLS 4.3.13): whether the card is a version 2.00 one."""
        info.steps.append(self.cmd(GO_IDLE_STATE, 0))
        r8 = self.cmd(SEND_IF_COND, CMD8_VHS_27_36 | CMD8_CHECK_PATTERN)
        info.steps.append(r8)
        if r8.ok:
            info.if_cond = r8.r1 & 0xFFF
            if info.if_cond != CMD8_VHS_27_36 | CMD8_CHECK_PATTERN:
                raise DriverError("CMD8 echo mismatch", r8)
        return r8.ok

    def _power_up(self, info: CardInfo, voltage_window: int, hcs: bool, step_ns: int,
                  tries: int) -> None:
        """ACMD41's enquiry, then ACMD41 with the common voltages (and HCS)
        until the card is powered up (PLS 4.2.3.1)."""
        steps = info.steps
        enq = self.acmd(ACMD_SD_SEND_OP_COND, 0, rca=0)
        steps.append(enq)
        self._must(enq, "ACMD41 enquiry")
        card_ocr = enq.r1
        window = voltage_window & card_ocr & S.OCR_VOLTAGE_WINDOW
        if not window:
            raise DriverError(f"no common voltage: card OCR {card_ocr:#010x}", enq)
        arg = window | (S.ACMD41_HCS if hcs else 0)
        for _ in range(tries):
            r41 = self.acmd(ACMD_SD_SEND_OP_COND, arg, rca=0)
            steps.append(r41)
            self._must(r41, "ACMD41")
            if r41.r1 & S.OCR_BUSY:
                info.ocr = r41.r1
                return
            self.step(step_ns)
        raise DriverError("card did not power up (ACMD41 busy never set)", steps[-1])

    def _identify(self, info: CardInfo) -> None:
        """CMD2 (CID), CMD3 (RCA), CMD9 (CSD): PLS 4.2.4 and the stand-by state."""
        r2 = self._must(self.cmd(ALL_SEND_CID, 0), "CMD2")
        info.steps.append(r2)
        info.cid = r2.r2
        r3 = self._must(self.cmd(SEND_RELATIVE_ADDR, 0), "CMD3")
        info.steps.append(r3)
        info.rca = r3.r1 >> 16
        r9 = self._must(self.cmd(SEND_CSD, info.rca << 16), "CMD9")
        info.steps.append(r9)
        info.csd = r9.r2

    # -- card status and registers ---------------------------------------------

    def send_status(self) -> CommandResult:
        """CMD13: R1 card status (PLS 4.10.1)."""
        return self.cmd(SEND_STATUS, self.card.rca << 16)

    def select(self, rca: int | None = None) -> CommandResult:
        """CMD7 with the card's RCA (or ``rca``): to transfer state."""
        return self.cmd(SELECT_DESELECT_CARD, (self.card.rca if rca is None else rca) << 16)

    def deselect(self) -> CommandResult:
        """CMD7 with RCA 0: every card to stand-by; none answers (PLS 4.7.4)."""
        return self.command(SELECT_DESELECT_CARD, 0, Resp.NONE)

    def send_csd(self) -> CommandResult:
        """CMD9 (stand-by state): the CSD in ``r2``."""
        return self.cmd(SEND_CSD, self.card.rca << 16)

    def send_cid(self) -> CommandResult:
        """CMD10 (stand-by state): the CID in ``r2``."""
        return self.cmd(SEND_CID, self.card.rca << 16)

    def set_blocklen(self, length: int) -> CommandResult:
        res = self.cmd(SET_BLOCKLEN, length)
        if res.ok:
            self.card.block_len = length
        return res

    def stop_transmission(self) -> CommandResult:
        """CMD12 as an Abort command (SD Host Controller 2.2.6)."""
        return self.cmd(STOP_TRANSMISSION, 0, cmd_type=H.CMD_TYPE_ABORT)

    def _read_data(self, index: int, arg: int, nbytes: int, *, app: bool = False,
                   mode: Mode = Mode.PIO, buffer: int | None = None) -> CommandResult:
        t = Transfer(read=True, block_size=nbytes, block_count=1, mode=mode, buffer=buffer)
        if app:
            return self.acmd(index, arg, data=t)
        return self.cmd(index, arg, data=t)

    def read_scr(self, *, mode: Mode = Mode.PIO) -> CommandResult:
        """ACMD51: the 8-byte SCR, MSB first (PLS 5.6)."""
        return self._read_data(ACMD_SEND_SCR, 0, SCR_BYTES, app=True, mode=mode)

    def read_sd_status(self, *, mode: Mode = Mode.PIO) -> CommandResult:
        """ACMD13: the 64-byte SD status (PLS 4.10.2)."""
        return self._read_data(ACMD_SD_STATUS, 0, SD_STATUS_BYTES, app=True, mode=mode)

    def send_num_wr_blocks(self) -> CommandResult:
        """ACMD22: number of well-written blocks, 4 bytes MSB first."""
        return self._read_data(ACMD_SEND_NUM_WR_BLOCKS, 0, NUM_WR_BLOCKS_BYTES, app=True)

    def switch_function(self, mode: int, groups: dict[int, int] | None = None,
                        *, data_mode: Mode = Mode.PIO) -> CommandResult:
        """CMD6 (PLS 4.3.10): ``mode`` 0 check / 1 switch; ``groups`` maps
        function group 1..6 to a function (0xF = keep current)."""
        arg = (mode & 1) << 31
        for g in range(1, 7):
            fn = (groups or {}).get(g, 0xF)
            arg |= (fn & 0xF) << (4 * (g - 1))
        return self._read_data(SWITCH_FUNC, arg, SWITCH_STATUS_BYTES, mode=data_mode)

    def send_write_prot(self, block: int) -> CommandResult:
        """CMD30: write protection bits of 32 groups from ``block`` (PLS 4.3.5)."""
        return self._read_data(SEND_WRITE_PROT, self.address(block), WRITE_PROT_BYTES)

    # -- block data (PLS 4.3.3, 4.3.4) -------------------------------------------

    def _rw(self, read: bool, block: int, count: int, data: bytes | None, *,
            mode: Mode, block_size: int | None, stop: Stop, multi: bool | None,
            buffer: int | None, pio_access: int, pio_full_tail: bool, sdma_boundary: int,
            adma: AdmaOptions | None) -> CommandResult:
        bs = self.card.block_len if block_size is None else block_size
        is_multi = count > 1 if multi is None else multi
        if not self.supports(mode) and (adma is None or adma.format != "adma1"):
            mode = Mode.PIO  # a driver selects no DMA the controller does not report
        if stop == "auto":
            stop = "auto12" if is_multi else "none"
        t = Transfer(
            read=read, block_size=bs, block_count=count, mode=mode, data=data, buffer=buffer,
            multi=is_multi, auto_cmd={"auto12": 12, "auto23": 23}.get(stop, 0),
            pio_access=pio_access, pio_full_tail=pio_full_tail, sdma_boundary=sdma_boundary,
            adma=adma if adma is not None else AdmaOptions(),
        )
        pre: CommandResult | None = None
        if stop == "cmd23":
            pre = self.cmd(SET_BLOCK_COUNT, count)
            if pre.error:
                return pre
        if read:
            index = READ_MULTIPLE_BLOCK if is_multi else READ_SINGLE_BLOCK
        else:
            index = WRITE_MULTIPLE_BLOCK if is_multi else WRITE_BLOCK
        res = self.cmd(index, self.address(block, bs), data=t)
        if pre is not None:
            res.related.append(pre)
        sent = not res.errintsts & CMD_LINE_ERRORS and res.timeout not in ("cmd", "inhibit")
        if stop == "cmd12" or (res.error and self.recover and sent):
            # Recovery (PLS 4.3.3, 4.3.4): a transfer cut short leaves the
            # card sending or receiving; CMD12 brings it back to transfer.
            res.related.append(self.stop_transmission())
        return res

    def read_blocks(
        self, block: int, count: int = 1, *, mode: Mode = Mode.PIO,
        block_size: int | None = None, stop: Stop = "auto", multi: bool | None = None,
        buffer: int | None = None, pio_access: int = 4, pio_full_tail: bool = False,
        sdma_boundary: int = 512 * 1024, adma: AdmaOptions | None = None,
    ) -> CommandResult:
        """CMD17 / CMD18 for ``count`` blocks from ``block``; data in ``.data``.

        ``stop``: "auto" (Auto CMD12 for multi-block), "auto12", "auto23",
        "cmd12" (CMD12 sent after), "cmd23" (CMD23 sent before), "none"."""
        return self._rw(True, block, count, None, mode=mode, block_size=block_size, stop=stop,
                        multi=multi, buffer=buffer, pio_access=pio_access,
                        pio_full_tail=pio_full_tail, sdma_boundary=sdma_boundary, adma=adma)

    def write_blocks(
        self, block: int, data: bytes, *, mode: Mode = Mode.PIO,
        block_size: int | None = None, stop: Stop = "auto", multi: bool | None = None,
        buffer: int | None = None, pio_access: int = 4, pio_full_tail: bool = False,
        sdma_boundary: int = 512 * 1024, adma: AdmaOptions | None = None,
    ) -> CommandResult:
        """CMD24 / CMD25 writing ``data`` (a whole number of blocks) at ``block``."""
        bs = self.card.block_len if block_size is None else block_size
        if len(data) % bs or not data:
            raise ValueError(f"{len(data)} bytes is not a whole number of {bs}-byte blocks")
        return self._rw(False, block, len(data) // bs, data, mode=mode, block_size=bs,
                        stop=stop, multi=multi, buffer=buffer, pio_access=pio_access,
                        pio_full_tail=pio_full_tail, sdma_boundary=sdma_boundary, adma=adma)

    # -- erase, lock (PLS 4.3.5, 4.3.7) -----------------------------------------

    def erase(self, first: int, last: int, *, arg: int = 0) -> CommandResult:
        """CMD32, CMD33, CMD38 over blocks ``first..last``; returns CMD38's
        result with CMD32 and CMD33 in ``related`` (stops at the first error)."""
        r32 = self.cmd(ERASE_WR_BLK_START, self.address(first))
        if r32.error:
            return r32
        r33 = self.cmd(ERASE_WR_BLK_END, self.address(last))
        if r33.error:
            r33.related.insert(0, r32)
            return r33
        r38 = self.cmd(ERASE, arg)
        r38.related[:0] = [r32, r33]
        return r38

    @staticmethod
    def lock_block(flags: int, password: bytes = b"", *, pwd_len: int | None = None) -> bytes:
        """The lock card data structure (PLS 4.3.7): flags, PWD_LEN, PWD."""
        n = len(password) if pwd_len is None else pwd_len
        return bytes([flags & 0xFF, n & 0xFF]) + password

    def lock_unlock(self, payload: bytes, *, set_blocklen: bool = True,
                    mode: Mode = Mode.PIO) -> CommandResult:
        """CMD16(len) then CMD42 writing ``payload``, then CMD16 back to the
        card's block length (PLS 4.3.7); CMD16s are in ``related``."""
        pre: CommandResult | None = None
        if set_blocklen:
            pre = self.cmd(SET_BLOCKLEN, len(payload))
            if pre.error:
                return pre
        t = Transfer(read=False, block_size=len(payload), block_count=1, mode=mode, data=payload)
        res = self.cmd(LOCK_UNLOCK, 0, data=t)
        if pre is not None:
            res.related.append(pre)
            res.related.append(self.cmd(SET_BLOCKLEN, self.card.block_len))
        return res
