"""The SD card in SPI mode (PLS chapter 7) behind an SSP: the ``spi`` group.

Run on a board whose card is in SPI mode (``sdqtest check --board
lm3s6965evb,sifive_u``); the lockstep compares every controller access with
the model (:mod:`harness.model.spi_target`, :mod:`harness.model.sifive_spi_target`);
the host reaches the board's controller through its port
(:func:`harness.driver.spi.port_for`).  ``spi-ssp-fifo`` is the PL022's own
(``params`` ``variant``), :mod:`harness.scenarios.spi_sifive` SiFive's.
What the spec promises whatever the QEMU release (R1 0x01 after CMD0, the
CRC16 of each block, the accepted data response, what a block read back
holds) is noted with
:meth:`Context.expect`; where releases differ the model says how
(:mod:`harness.model.sdcard_spi`, ledger ``spi.*``).
"""

from __future__ import annotations

from harness.driver.spi import Block, SpiHost
from harness.hwdefs import pl022 as P
from harness.hwdefs import sd as S
from harness.hwdefs import sd_spi as T
from harness.images import BLOCK
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "spi"
_ILLEGAL = 0x04
_SSE = P.SSPCR1.field("SSE").mask


def _ready(t: Target, ctx: Context) -> SpiHost:
    """PLS 7.2.1 initialisation, then CMD9 (which QEMU >= 10.1 needs to reach
    transfer state: ledger spi.version.acmd41-ready) and CMD16 512."""
    h = SpiHost(t)
    r = h.init()
    ctx.expect(r["cmd0"].r1 == 0x01, f"CMD0: R1 {r['cmd0'].r1} is not 0x01 (in idle state)")
    h.read_register(S.index("SEND_CSD"))
    h.command(S.index("SET_BLOCKLEN"), BLOCK)
    return h


def _pattern(seed: int, n: int = BLOCK) -> bytes:
    return bytes((seed * 29 + i * 7) & 0xFF for i in range(n))


def _expect_block(ctx: Context, what: str, b: Block) -> None:
    ctx.expect(b.token == T.TOKEN_SINGLE, f"{what}: no start block token")
    if b.token == T.TOKEN_SINGLE:
        ctx.expect(b.crc_ok, f"{what}: CRC16 {b.crc:#06x} does not match the data (PLS 4.5)")


@scenario("spi-init", GROUP)
def spi_init(t: Target, ctx: Context) -> None:
    """CMD0, CMD8 (R7 echo), CMD55+ACMD41 until not idle, CMD58 (R3: OCR)."""
    h = SpiHost(t)
    r = h.init()
    ctx.expect(r["cmd0"].r1 == 0x01, "CMD0: R1 is not 0x01 (PLS 7.2.1)")
    r7 = r["cmd8"].raw
    ctx.expect(r7[3:5] == [0x01, 0xAA], f"CMD8: R7 {r7} does not echo 0x1AA (PLS 7.3.2.6)")
    ocr = r["cmd58"].raw
    ctx.expect(len(ocr) == 5 and bool(ocr[1] & 0x80),
               f"CMD58: OCR {ocr} without power-up status after ACMD41 (PLS 7.3.2.4)")
    # A read straight after initialisation: refused from 10.1, whose ACMD41 leaves
    # the card in ready (ledger spi.version.acmd41-ready); a block before.
    if h.command(S.index("READ_SINGLE_BLOCK"), 0, end=False).r1 is not None:
        h.read_block()
    h.fill(1)
    # a second ACMD41: illegal from 10.1
    h.app_command(S.index("SD_SEND_OP_COND", app=True), 1 << 30)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-csd-cid", GROUP)
def spi_csd_cid(t: Target, ctx: Context) -> None:
    """CMD9 and CMD10: CSD and CID as 16-byte data blocks (PLS 7.2.6)."""
    h = SpiHost(t)
    h.init()
    csd, cid = S.index("SEND_CSD"), S.index("SEND_CID")
    for index in (csd, cid, csd):
        rsp, block = h.read_register(index)
        if block is not None:
            _expect_block(ctx, f"CMD{index}", block)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-status", GROUP)
def spi_status(t: Target, ctx: Context) -> None:
    """CMD13 (R2) before and after leaving idle, and after a bad block length."""
    h = SpiHost(t)
    h.setup()
    h.select()
    h.command(S.index("GO_IDLE_STATE"))
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    h.init()
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    h.read_register(S.index("SEND_CSD"))
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    h.command(S.index("SET_BLOCKLEN"), 4096)  # beyond 512: BLOCK_LEN_ERROR (PLS 4.3.2)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-read-single", GROUP)
def spi_read_single(t: Target, ctx: Context) -> None:
    """CMD17 on four blocks; each is the image's block (lockstep) with its CRC16."""
    h = _ready(t, ctx)
    for lba in (0, 1, 7, 31):
        rsp = h.command(S.index("READ_SINGLE_BLOCK"), lba * BLOCK, end=False)
        if rsp.r1 == 0:
            b = h.read_block()
            _expect_block(ctx, f"CMD17 block {lba}", b)
            ctx.expect(b.data == t.image_read(lba * BLOCK, BLOCK),
                       f"CMD17 block {lba}: data differs from the image")
        h.fill(1)


@scenario("spi-read-multi", GROUP)
def spi_read_multi(t: Target, ctx: Context) -> None:
    """CMD18 from block 2, four blocks, CMD12 (R1b) ends it (PLS 7.5.2.2)."""
    h = _ready(t, ctx)
    rsp = h.command(S.index("READ_MULTIPLE_BLOCK"), 2 * BLOCK, end=False)
    if rsp.r1 == 0:
        for i in range(4):
            b = h.read_block()
            _expect_block(ctx, f"CMD18 block {2 + i}", b)
    h.command(S.index("STOP_TRANSMISSION"), busy=True)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


def _write(h: SpiHost, ctx: Context, t: Target, lba: int, blocks: list[bytes]) -> None:
    multi = len(blocks) > 1
    rsp = h.command(S.index("WRITE_MULTIPLE_BLOCK" if multi else "WRITE_BLOCK"), lba * BLOCK)
    if rsp.r1 != 0:
        return
    for i, data in enumerate(blocks):
        token, _echo = h.write_block(data, T.TOKEN_MULTI_WRITE if multi else T.TOKEN_SINGLE)
        ctx.expect(token == T.DATA_ACCEPTED, f"block {lba + i}: data response {token:#x}")
    if multi:
        h.stop_tran()
    h.fill(1)
    for i, data in enumerate(blocks):
        if h.command(S.index("READ_SINGLE_BLOCK"), (lba + i) * BLOCK, end=False).r1 == 0:
            b = h.read_block()
            ctx.expect(b.data == data, f"block {lba + i}: read back differs from the write")
        h.fill(1)


@scenario("spi-write-single", GROUP)
def spi_write_single(t: Target, ctx: Context) -> None:
    """CMD24 with the 0xFE token, data response, read back; the image compared."""
    h = _ready(t, ctx)
    _write(h, ctx, t, 5, [_pattern(5)])
    _write(h, ctx, t, 0, [_pattern(0)])
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-write-multi", GROUP)
def spi_write_multi(t: Target, ctx: Context) -> None:
    """CMD25 with 0xFC tokens, the 0xFD stop token, read back (PLS 7.3.3.2)."""
    h = _ready(t, ctx)
    _write(h, ctx, t, 8, [_pattern(8 + i) for i in range(3)])
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-app-data", GROUP)
def spi_app_data(t: Target, ctx: Context) -> None:
    """CMD6 (switch status), ACMD13 (SD status after R2), ACMD51 (SCR), ACMD22 as
    data blocks (PLS 7.3.1.3 Table 7-3, 7.3.3); ACMD22 after a one-block write,
    whose count it reports (PLS 4.3.9: before any write QEMU would report a
    count from before a system reset, ledger sd.acmd22-count-survives-reset)."""
    h = _ready(t, ctx)
    _write(h, ctx, t, 3, [_pattern(3)])
    for index, app, arg, rlen, length in ((6, False, 0x00FF_FFF1, 1, 64),
                                          (13, True, 0, T.R2_LEN, 64), (51, True, 0, 1, 8),
                                          (22, True, 0, 1, 4)):
        if app:
            h.command(S.index("APP_CMD"))
        rsp = h.command(index, arg, rlen=rlen, end=False)
        if rsp.r1 is not None and not rsp.r1 & 0x7A:
            b = h.read_block(length)
            if b.token is not None:
                _expect_block(ctx, f"{'A' if app else ''}CMD{index}", b)
        h.fill(1)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-crc", GROUP)
def spi_crc(t: Target, ctx: Context) -> None:
    """CMD59 turns CRC checking on; a command with a bad CRC7 (PLS 7.2.2)."""
    h = _ready(t, ctx)
    h.command(T.index("CRC_ON_OFF"), 1)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN, crc=0x00)
    h.command(S.index("READ_SINGLE_BLOCK"), 0, crc=0x01, end=False)
    h.read_block()
    h.fill(1)
    h.command(T.index("CRC_ON_OFF"), 0)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-illegal", GROUP)
def spi_illegal(t: Target, ctx: Context) -> None:
    """Reserved and SD-only commands (CMD60, CMD3, CMD2), each followed by
    CMD13; ACMD41 once the card left idle (from 10.1 illegal there); CMD9
    and CMD10 in the idle state after a CMD0 (7.2 refuses them outside
    the transfer state)."""
    h = _ready(t, ctx)
    for index in (60, 3, 2, 41):
        h.command(index)
        r2 = h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
        ctx.expect(r2.r1 is not None, f"CMD13 after CMD{index}: no R1")
    h.app_command(S.index("SD_SEND_OP_COND", app=True), 1 << 30)
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    h.command(S.index("GO_IDLE_STATE"))
    for index in (S.index("SEND_CSD"), S.index("SEND_CID")):
        h.read_register(index)
        h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)


@scenario("spi-deselected", GROUP)
def spi_deselected(t: Target, ctx: Context) -> None:
    """A command while the chip select is high reaches no card; then selected again."""
    h = _ready(t, ctx)
    h.deselect()
    h.xfer_all(T.command_frame(17, 0))
    h.fill(12)
    h.select()
    h.command(S.index("SEND_STATUS"), rlen=T.R2_LEN)
    if h.command(S.index("READ_SINGLE_BLOCK"), BLOCK, end=False).r1 == 0:
        _expect_block(ctx, "CMD17 after reselect", h.read_block())
    h.fill(1)


@scenario("spi-ssp-fifo", GROUP, params={"variant": "spi"})
def spi_ssp_fifo(t: Target, ctx: Context) -> None:
    """PL022 FIFOs with the port disabled, then enabled; loopback; the TX/RX interrupts."""
    h = SpiHost(t)
    t.write(P.ssp(P.SSPCR0), 4, P.SSPCR0.field("DSS").value(7))
    t.write(P.ssp(P.SSPIMSC), 4, P.SSPIMSC.mask("RXIM"))
    for i in range(9):  # the ninth is dropped: the TX FIFO holds 8 (TRM 2.3)
        t.write(P.ssp(P.SSPDR), 4, 0x30 + i)
        t.read(P.ssp(P.SSPSR), 4)
        t.read(P.ssp(P.SSPRIS), 4)
    t.write(P.ssp(P.SSPCR1), 4, _SSE | P.SSPCR1.field("LBM").mask)
    got = [t.read(P.ssp(P.SSPDR), 4) for _ in range(9)]
    ctx.expect(got[:8] == [0x30 + i for i in range(8)],
               f"loopback: {got[:8]} is not what was queued (TRM 3.3.2 LBM)")
    for i in range(10):  # 8 fill the RX FIFO, 2 wait in TX: no overrun (pl022.no-overrun-timeout)
        t.write(P.ssp(P.SSPDR), 4, 0x50 + i)
    for reg in (P.SSPSR, P.SSPRIS, P.SSPMIS, P.SSPCR0, P.SSPCR1, P.SSPCPSR, P.SSPDMACR):
        t.read(P.ssp(reg), 4)
    got = [t.read(P.ssp(P.SSPDR), 4) for _ in range(11)]
    ctx.expect(got[:10] == [0x50 + i for i in range(10)], f"loopback after a full RX: {got}")
    t.write(P.ssp(P.SSPIMSC), 4, P.SSPIMSC.mask("TXIM"))
    t.write(P.ssp(P.SSPICR), 4, 3)
    t.write(P.ssp(P.SSPIMSC), 4, 0)
    for off in range(P.SSP_PERIPH_ID, 0x1000, 4):
        t.read(P.SSP_WINDOW.start + off, 4)
    h.setup()
    h.fill(3)
    t.read(P.gpio(P.GPIODIR), 4)
    t.read(P.gpio(P.GPIODATA), 4)
