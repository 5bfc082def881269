"""The SD card behind the OMAP1 MMC/SD host: the ``omap`` group.

Run on a board with that controller (``sdqtest check --board sx1``); the
lockstep compares every register access and the interrupt line with the
model (:mod:`harness.model.omap_target`).  The driver is Linux's
``drivers/mmc/host/omap.c`` PIO path (:mod:`harness.driver.omap_mmc`).
What the SD spec or the image promises whatever QEMU does (CMD8's echo, the
data read back) is noted with :meth:`Context.expect`; where QEMU departs
from the hardware the model says how (ledger ``omap.*``).
"""

from __future__ import annotations

from harness.driver.omap_mmc import IRQ_MASK, OmapHost, OmapMmcTransfer, cmd_word
from harness.driver.ops import set_medium
from harness.hwdefs import omap_mmc as O
from harness.hwdefs import sd as S
from harness.hwdefs.fields import Register
from harness.images import BLOCK
from harness.scenarios.common import expect_identified
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "omap"
_ST = O.MMC_STAT
_W = O.ACCESS_SIZE


def _rd(t: Target, reg: Register) -> int:
    return t.read(reg.offset, _W)


def _wr(t: Target, reg: Register, value: int) -> None:
    t.write(reg.offset, _W, value)


def _ready(t: Target, ctx: Context) -> OmapHost:
    """Identification (PLS 4.2), the card selected, CMD16 512."""
    h = OmapHost(t)
    expect_identified(ctx, h.init(), h.rca)
    return h


def _pattern(seed: int, n: int = BLOCK) -> bytes:
    return bytes((seed * 29 + i * 7) & 0xFF for i in range(n))


def _expect_data(ctx: Context, t: Target, what: str, x: OmapMmcTransfer, lba: int) -> None:
    ctx.expect(x.command.ok, f"{what}: the command did not end with EOC")
    ctx.expect(x.data == t.image_read(lba * BLOCK, len(x.data)),
               f"{what}: the data differs from the card image")


@scenario("omap-registers", GROUP)
def omap_registers(t: Target, ctx: Context) -> None:
    """MMC registers: reset values, what a write keeps, access widths, SRTS.

    Every register's reset value (MMC_REV 1, MMC_BUF AFL 0x1F, MMC_SYSS
    RSTD), an all-ones write to each writable one (ledger
    omap.register-fields: CLKD 8 bits, SDIO read back moved), the
    unimplemented MMC_SPI and MMC_SYST written after MMC_SDIO without
    changing it, read-only registers written, MMC_CMD ignored while POW is clear, byte, word and
    double-word accesses (omap.version.badwidth-logged), MMC_SYSC.SRTS."""
    for off in range(0, 0x70, 2):
        t.read(off, _W)
    ctx.expect(_rd(t, O.MMC_REV) == 1, "MMC_REV: not revision 1 (QEMU's OMAP1)")
    _wr(t, O.MMC_CMD, 0x0108)  # POW clear: refused
    for reg in (O.MMC_CMD, O.MMC_STAT):
        t.read(reg.offset, _W)
    for reg in (O.MMC_ARGL, O.MMC_ARGH, O.MMC_IE, O.MMC_CTO, O.MMC_DTO, O.MMC_BLEN,
                O.MMC_NBLK, O.MMC_SDIO, O.MMC_SPI, O.MMC_SYST, O.MMC_IOSR):
        _wr(t, reg, 0xFFFF)
        t.read(reg.offset, _W)
    _wr(t, O.MMC_SDIO, O.MMC_SDIO.mask("CD_ENABLE"))
    for reg in (O.MMC_SPI, O.MMC_SYST):  # unimplemented: MMC_SDIO keeps its value
        _wr(t, reg, 0xFFFF)
    _wr(t, O.MMC_BUF, 0x0A05)
    _wr(t, O.MMC_CON, 0xF7FF)  # everything but POW
    for reg in (O.MMC_SDIO, O.MMC_BUF, O.MMC_CON, O.MMC_STAT):
        t.read(reg.offset, _W)
    for reg in (O.MMC_REV, *O.MMC_RSP, O.MMC_SYSS):
        _wr(t, reg, 0x5A5A)
        t.read(reg.offset, _W)
    for off in (0x02, 0x06, 0x0E, 0x6C, 0x70, 0x100, 0x7FE):
        t.write(off, _W, 0x1234)
        t.read(off, _W)
    for size in (1, 4, 8):
        for off in (O.MMC_ARGL.offset, O.MMC_CON.offset, O.MMC_REV.offset, 0x11):
            t.read(off, size)
        t.write(O.MMC_ARGL.offset, size, 0x7777_7777)
    t.read(O.MMC_ARGL.offset, _W)
    _wr(t, O.MMC_SYSC, O.MMC_SYSC.mask("SRTS"))
    for reg in (O.MMC_ARGL, O.MMC_ARGH, O.MMC_CON, O.MMC_IE, O.MMC_SDIO, O.MMC_BUF,
                O.MMC_BLEN, O.MMC_NBLK, O.MMC_CTO, O.MMC_DTO, O.MMC_SYSC):
        t.read(reg.offset, _W)


@scenario("omap-init", GROUP)
def omap_init(t: Target, ctx: Context) -> None:
    """Card identification, long responses, the response words, CMD13 in each state.

    The init stream (INIT: EOC without a card command), CMD0, CMD8,
    CMD55+ACMD41 (R3: OCRB while busy), CMD2 (CID), CMD3 (R6), CMD9 (CSD),
    CMD7, CMD16; RSP0..RSP7 after a short response (ledger omap.response-words,
    omap.version.short-response-stack-bytes); CMD10 refused in transfer
    state, answered in stand-by."""
    h = _ready(t, ctx)
    st = h.command(S.index("SEND_STATUS"), h.rca << 16)
    ctx.expect(st.ok and (st.r1 >> 9) & 0xF == 4, f"CMD13: state {(st.r1 >> 9) & 0xF} is not "
               "tran (PLS 4.10.1)")
    for reg in O.MMC_RSP:
        t.read(reg.offset, _W)
    h.command(S.index("SEND_CID"), h.rca << 16)  # illegal in tran (stand-by only)
    h.command(S.index("SELECT_DESELECT_CARD"), 0)  # deselect: stand-by
    cid = h.command(S.index("SEND_CID"), h.rca << 16)
    ctx.expect(cid.ok and cid.response[3] & 1 == 1,
               "CMD10: the CID's last byte has no end bit (PLS 5.2)")
    t.read(O.MMC_CMD.offset, _W)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.command(S.index("SELECT_DESELECT_CARD"), h.rca << 16)
    h.command(S.index("SEND_STATUS"), h.rca << 16)


@scenario("omap-read-single", GROUP)
def omap_read_single(t: Target, ctx: Context) -> None:
    """CMD17 on four blocks by PIO, each the image's block.

    The FIFO filled to 32 words past AFL 0x1F (AF), refilled as the host
    reads, BRS at the block's end; MMC_BLEN/MMC_NBLK counting down."""
    h = _ready(t, ctx)
    for lba in (0, 1, 7, 31):
        _expect_data(ctx, t, f"CMD17 block {lba}",
                     h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK), lba)
        for reg in (O.MMC_BLEN, O.MMC_NBLK, O.MMC_STAT):
            t.read(reg.offset, _W)


@scenario("omap-read-multi", GROUP)
def omap_read_multi(t: Target, ctx: Context) -> None:
    """CMD18 of four blocks on the 4-bit bus, then CMD12 (EOC with CB).

    NBLK 3: the controller stops reading after four blocks (BRS once), the
    card sends until CMD12; MMC_CON.DW for the 4-bit bus (ACMD6)."""
    h = _ready(t, ctx)
    h.bus_width(4)
    x = h.read(S.index("READ_MULTIPLE_BLOCK"), 2 * BLOCK, blocks=4, stop=True)
    _expect_data(ctx, t, "CMD18 blocks 2-5", x, 2)
    ctx.expect(len(x.data) == 4 * BLOCK, f"CMD18: {len(x.data)} bytes read")
    ctx.expect(x.stop is not None and x.stop.ok, "CMD12: no EOC")
    h.command(S.index("SEND_STATUS"), h.rca << 16)


@scenario("omap-write-single", GROUP)
def omap_write_single(t: Target, ctx: Context) -> None:
    """CMD24 by PIO as AE asks for data, read back by CMD17; the image compared."""
    h = _ready(t, ctx)
    for lba in (5, 0):
        data = _pattern(lba)
        w = h.write(S.index("WRITE_BLOCK"), lba * BLOCK, data)
        ctx.expect(w.command.ok, f"CMD24 block {lba}: no EOC")
        h.command(S.index("SEND_STATUS"), h.rca << 16)
        r = h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK)
        ctx.expect(r.data == data, f"block {lba}: read back differs from the write")
        ctx.expect(t.image_read(lba * BLOCK, BLOCK) == data, f"block {lba}: image differs")


@scenario("omap-write-multi", GROUP)
def omap_write_multi(t: Target, ctx: Context) -> None:
    """CMD25 of three blocks in one transfer, CMD12; read back by CMD18."""
    h = _ready(t, ctx)
    data = b"".join(_pattern(8 + i) for i in range(3))
    h.write(S.index("WRITE_MULTIPLE_BLOCK"), 8 * BLOCK, data, stop=True)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    r = h.read(S.index("READ_MULTIPLE_BLOCK"), 8 * BLOCK, blocks=3, stop=True)
    ctx.expect(r.data == data, "CMD25 blocks 8-10: read back differs from the write")


@scenario("omap-app-data", GROUP)
def omap_app_data(t: Target, ctx: Context) -> None:
    """Short data blocks: ACMD51 (SCR), ACMD13 (SD status), CMD6, an odd length.

    ACMD51 (8 bytes: BRS with 4 words in the FIFO, no AF), ACMD13 (64),
    CMD6 (64), and CMD17 with BLEN 511 (an odd block: its last FIFO word
    one byte)."""
    h = _ready(t, ctx)
    h.command(S.index("APP_CMD"), h.rca << 16)
    scr = h.read(S.index("SEND_SCR", app=True), 0, blksz=8)
    ctx.expect(len(scr.data) == 8 and scr.data[0] >> 4 == 0,
               f"ACMD51: SCR {scr.data.hex()} structure version is not 0 (PLS 5.6)")
    h.command(S.index("APP_CMD"), h.rca << 16)
    h.read(S.index("SD_STATUS", app=True), 0, blksz=64)
    sw = h.read(S.index("SWITCH_FUNC"), 0x00FF_FFF1, blksz=64)
    ctx.expect(len(sw.data) == 64, "CMD6: no 64-byte switch status")
    h.command(S.index("SET_BLOCKLEN"), 511)
    odd = h.read(S.index("READ_SINGLE_BLOCK"), 3 * BLOCK, blksz=511)
    ctx.expect(odd.data == t.image_read(3 * BLOCK, 511), "CMD17 of 511 bytes: data differs")
    for reg in (O.MMC_STAT, O.MMC_BLEN, O.MMC_NBLK):
        t.read(reg.offset, _W)
    h.command(S.index("SET_BLOCKLEN"), BLOCK)


@scenario("omap-erase", GROUP)
def omap_erase(t: Target, ctx: Context) -> None:
    """CMD24 two blocks, CMD32/CMD33/CMD38 over them (R1b, IE without DTO), read back."""
    h = _ready(t, ctx)
    for lba in (12, 13):
        h.write(S.index("WRITE_BLOCK"), lba * BLOCK, _pattern(lba))
    h.command(S.index("ERASE_WR_BLK_START"), 12 * BLOCK)
    h.command(S.index("ERASE_WR_BLK_END"), 13 * BLOCK)
    h.command(S.index("ERASE"), 0)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    for lba in (12, 13, 14):
        _expect_data(ctx, t, f"CMD17 block {lba} after erase",
                     h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK), lba)


@scenario("omap-interrupts", GROUP)
def omap_interrupts(t: Target, ctx: Context) -> None:
    """The interrupt output: STAT & IE, write-1-to-clear, the registers that update it.

    EOC through IE raises the line, a STAT write of 1 lowers it; IE and BUF
    writes update it; MMC_CON with POW clear zeroes STAT and leaves the line
    raised (ledger omap.con-pow-clear-keeps-line); AF and AE through IE
    during a read and a write."""
    h = OmapHost(t)
    h.set_ios()
    _wr(t, O.MMC_IE, _ST.mask("EOC"))
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    ctx.expect(t.irq_level(), "EOC enabled in MMC_IE: the line is not raised")
    _wr(t, O.MMC_STAT, _ST.mask("EOC"))
    ctx.expect(not t.irq_level(), "EOC cleared: the line is still raised")
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    _wr(t, O.MMC_IE, 0)
    _wr(t, O.MMC_IE, _ST.mask("EOC", "CTO"))
    _wr(t, O.MMC_CON, h.dsor)  # POW clear: STAT 0, the line as it was
    for reg in (O.MMC_STAT, O.MMC_CON):
        t.read(reg.offset, _W)
    _wr(t, O.MMC_BUF, 0x1F00)  # updates the line: lowered
    h.set_ios()
    h.init()
    _wr(t, O.MMC_IE, _ST.mask("AF", "BRS"))
    _wr(t, O.MMC_NBLK, 0)
    _wr(t, O.MMC_BLEN, BLOCK - 1)
    _wr(t, O.MMC_BUF, 0x0F00)  # AFL 15: AF past 15 words
    _wr(t, O.MMC_ARGL, 3 * BLOCK)
    _wr(t, O.MMC_ARGH, 0)
    _wr(t, O.MMC_CMD, cmd_word(17, ctype=O.TYPE_ADTC, read=True))
    for _ in range(BLOCK // 2 + 2):
        t.read(O.MMC_DATA.offset, _W)
        t.read(O.MMC_STAT.offset, _W)
    _wr(t, O.MMC_STAT, 0xFFFF)
    _wr(t, O.MMC_IE, _ST.mask("AE", "BRS"))
    _wr(t, O.MMC_BUF, 0x1F08)  # AEL 8: AE below 8 words
    _wr(t, O.MMC_ARGL, 4 * BLOCK)
    _wr(t, O.MMC_CMD, cmd_word(24, ctype=O.TYPE_ADTC))
    for i in range(BLOCK // 2):
        _wr(t, O.MMC_DATA, 0x0101 * (i & 0xFF))
        if i % 64 == 0:
            t.read(O.MMC_STAT.offset, _W)
    t.read(O.MMC_STAT.offset, _W)
    _wr(t, O.MMC_STAT, 0xFFFF)
    _wr(t, O.MMC_IE, IRQ_MASK)


@scenario("omap-fifo", GROUP)
def omap_fifo(t: Target, ctx: Context) -> None:
    """The 32-word FIFO: levels, the DMA request bits, underrun and overrun.

    A read with AFL 7 (8 words at a time), RXDE (AF gives way to the DMA
    request), MMC_DATA read when empty (the ring's old word: ledger
    omap.fifo-underrun-repeats), words written with no transfer (queued,
    then dropped by the next data command), a write past 32 words, TXDE,
    CON.BE kept and ignored."""
    h = _ready(t, ctx)
    _wr(t, O.MMC_NBLK, 0)
    _wr(t, O.MMC_BLEN, BLOCK - 1)
    _wr(t, O.MMC_BUF, 0x0700)
    _wr(t, O.MMC_ARGL, 6 * BLOCK)
    _wr(t, O.MMC_ARGH, 0)
    _wr(t, O.MMC_CMD, cmd_word(17, ctype=O.TYPE_ADTC, read=True))
    words = []
    for i in range(BLOCK // 2):
        words.append(t.read(O.MMC_DATA.offset, _W))
        if i in (0, 7, 8, 100, 255):
            for reg in (O.MMC_STAT, O.MMC_BLEN, O.MMC_NBLK):
                t.read(reg.offset, _W)
        if i == 40:
            _wr(t, O.MMC_BUF, 0x8700)  # RXDE
            t.read(O.MMC_STAT.offset, _W)
    data = b"".join(w.to_bytes(2, "little") for w in words)
    ctx.expect(data == t.image_read(6 * BLOCK, BLOCK), "CMD17 with AFL 7: data differs")
    for _ in range(3):
        t.read(O.MMC_DATA.offset, _W)  # empty
    t.read(O.MMC_STAT.offset, _W)
    _wr(t, O.MMC_STAT, 0xFFFF)
    for i in range(34):
        _wr(t, O.MMC_DATA, 0xB000 + i)  # no transfer: queued, the last two dropped
    for reg in (O.MMC_STAT, O.MMC_DATA, O.MMC_DATA, O.MMC_STAT):
        t.read(reg.offset, _W)
    _wr(t, O.MMC_BUF, 0x1F9F)  # TXDE, AEL 31
    t.read(O.MMC_STAT.offset, _W)
    _wr(t, O.MMC_CON, h.dsor | O.MMC_CON.mask("POW", "BE"))
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    _expect_data(ctx, t, "CMD17 with BE set", h.read(S.index("READ_SINGLE_BLOCK"), 9 * BLOCK), 9)
    t.read(O.MMC_CON.offset, _W)


@scenario("omap-errors", GROUP)
def omap_errors(t: Target, ctx: Context) -> None:
    """Command errors: no answer, wrong response types, card status errors.

    An illegal command (CTO), R2 asked of CMD13 (4 bytes: CTO, RSP7/6
    filled), R1 asked of CMD9 (16 bytes: RSP0..RSP5 the CSD's), R3 of CMD13,
    RSP types 4, 5 and 7 (ledger omap.response-words), CMD17 out of range
    (ADDRESS_ERROR/OUT_OF_RANGE in R1: CERR), a block length error, the
    SDIO AKE bit, CMD12 outside a transfer (refused: CTO, which the next
    answered command clears: ledger omap.command-clears-status)."""
    h = _ready(t, ctx)
    bad = h.command(60)
    ctx.expect(bad.timeout, "CMD60 (reserved): the card answered")
    h.command(S.index("SEND_STATUS"), h.rca << 16, rsp="r2")
    h.command(S.index("SELECT_DESELECT_CARD"), 0)
    h.command(S.index("SEND_CSD"), h.rca << 16, rsp="r1")
    for reg in O.MMC_RSP:
        t.read(reg.offset, _W)
    h.command(S.index("SELECT_DESELECT_CARD"), h.rca << 16)
    h.command(S.index("SEND_STATUS"), h.rca << 16, rsp="r3")
    _wr(t, O.MMC_CMD, cmd_word(60))  # CTO, left set
    _wr(t, O.MMC_CMD, cmd_word(13))  # answered: CTO goes
    t.read(O.MMC_STAT.offset, _W)
    for kind in (4, 5, 7):
        _wr(t, O.MMC_CMD, cmd_word(13, "none") | O.MMC_CMD.field("RSP").value(kind))
        for reg in (O.MMC_STAT, O.MMC_RSP[6], O.MMC_RSP[7]):
            t.read(reg.offset, _W)
    _wr(t, O.MMC_STAT, 0xFFFF)
    far = h.read(S.index("READ_SINGLE_BLOCK"), 0x7FFF_0000)
    ctx.expect(far.command.ok or bool(far.command.status & _ST.mask("CERR")),
               "CMD17 out of range: no R1 (PLS 4.3.3)")
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    _wr(t, O.MMC_SDIO, O.MMC_SDIO.mask("AKE_ERR"))
    h.command(S.index("SET_BLOCKLEN"), 4096)
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h.command(S.index("SET_BLOCKLEN"), BLOCK)
    h.command(S.index("STOP_TRANSMISSION"))
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    _expect_data(ctx, t, "CMD17 block 3", h.read(S.index("READ_SINGLE_BLOCK"), 3 * BLOCK), 3)


@scenario("omap-reset", GROUP)
def omap_reset(t: Target, ctx: Context) -> None:
    """MMC_SYSC.SRTS after a transfer: what the reset keeps and whether the card resets.

    The registers back to their reset values but SDIO and CON.BE, the
    FIFO's old word at the read position (ledger
    omap.reset-keeps-sdio-be-fifo); the card reset with the controller
    before 10.0 only (omap.version.srts-card-kept): CMD13 then times out
    there; identified again, a block read."""
    h = _ready(t, ctx)
    _wr(t, O.MMC_SDIO, O.MMC_SDIO.mask("DTO_X1024", "CD_WAKEUP"))
    _wr(t, O.MMC_CON, h.dsor | O.MMC_CON.mask("POW", "BE"))
    h.read(S.index("READ_SINGLE_BLOCK"), 2 * BLOCK, blksz=64)
    _wr(t, O.MMC_IE, _ST.mask("EOC"))
    _wr(t, O.MMC_CMD, cmd_word(0, "none", ctype=0, init=True))
    _wr(t, O.MMC_SYSC, O.MMC_SYSC.mask("SRTS"))
    for reg in (O.MMC_CON, O.MMC_SDIO, O.MMC_STAT, O.MMC_IE, O.MMC_BUF, O.MMC_DATA,
                O.MMC_BLEN, O.MMC_NBLK, O.MMC_CMD):
        t.read(reg.offset, _W)
    h.powered = False
    h.opendrain = True
    h.set_ios()
    h.command(S.index("SEND_STATUS"), h.rca << 16)
    h = _ready(t, ctx)
    _expect_data(ctx, t, "CMD17 after SRTS", h.read(S.index("READ_SINGLE_BLOCK"), BLOCK), 1)


@scenario("omap-card-absent", GROUP)
def omap_card_absent(t: Target, ctx: Context) -> None:
    """No card: the medium ejected, then inserted again.

    Every command times out (CTO, no EOC) and CD never sets (ledger
    omap.no-card-detect); a data command still starts a transfer, whose
    FIFO fills with the bus's zero bytes; inserted again, the card is
    identified anew."""
    set_medium(t, False)
    h = OmapHost(t)
    h.set_ios()
    h.command(S.index("GO_IDLE_STATE"))
    ctx.expect(h.command(S.index("SEND_IF_COND"), 0x1AA).timeout, "CMD8 with no card: no CTO")
    h.app_command(S.index("SD_SEND_OP_COND", app=True), S.ACMD41_HCS | S.OCR_VDD_2V7_3V6)
    x = h.read(S.index("READ_SINGLE_BLOCK"), 0, blksz=16)
    ctx.expect(x.command.timeout, "CMD17 with no card: no CTO")
    for reg in (O.MMC_STAT, O.MMC_BLEN, O.MMC_NBLK):
        t.read(reg.offset, _W)
    for _ in range(10):
        t.read(O.MMC_DATA.offset, _W)
    t.read(O.MMC_STAT.offset, _W)
    set_medium(t, True)
    _expect_data(ctx, t, "CMD17 after insertion",
                 _ready(t, ctx).read(S.index("READ_SINGLE_BLOCK"), BLOCK), 1)
