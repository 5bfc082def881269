"""The BCM2835 SDHOST on a raspi board: the ``sdhost`` group.

Run on the board whose card is routed to the SDHOST (``sdqtest check
--board raspi2b``); the lockstep compares every GPIO and SDHOST access and
the interrupt line with the model (:mod:`harness.model.sdhost_target`).
What the SD specification promises whatever the controller (CMD8's echo,
the OCR's busy bit, data read back as written, the image) is noted with
:meth:`Context.expect`; the controller's own behaviour is QEMU's, held to
the model, its departures from what Linux's driver expects in the ledger
(``sdhost.*``).  The driver is :class:`harness.driver.sdhost.SdhostHost`.
"""

from __future__ import annotations

from harness.driver.ops import set_medium
from harness.driver.sdhost import SdhostHost, SdhostResult
from harness.hwdefs import bcm2835_sdhost as B
from harness.hwdefs import sd as S
from harness.images import BLOCK
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "sdhost"
_NEW, _READ, _WRITE = (B.SDCMD.mask(n) for n in ("NEW_FLAG", "READ_CMD", "WRITE_CMD"))
_BUSYWAIT, _LONG = B.SDCMD.mask("BUSYWAIT"), B.SDCMD.mask("LONG_RESPONSE")
_EN = {n: B.SDHCFG.mask(n) for n in ("DATA_IRPT_EN", "BLOCK_IRPT_EN", "BUSY_IRPT_EN")}
_TIMEOUT = B.SDHSTS.mask("CMD_TIME_OUT")
_ALL_STATUS = 0x7FF


def _ready(t: Target, ctx: Context) -> SdhostHost:
    """Route the card, reset, initialise it (PLS 4.2) and select it at 4 bits."""
    h = SdhostHost(t)
    r = h.init()
    ctx.expect(not r["cmd8"].failed and r["cmd8"].r1 & 0xFFF == 0x1AA,
               f"CMD8: R7 {r['cmd8'].rsp} does not echo 0x1AA (PLS 4.3.13)")
    return h


def _pattern(seed: int, n: int = BLOCK) -> bytes:
    return bytes((seed * 31 + i * 11) & 0xFF for i in range(n))


def _all_registers(t: Target) -> None:
    for off in range(0, 0x60, 4):
        t.read(B.SDHOST_WINDOW.start + off, 4)


@scenario("sdhost-reset-values", GROUP)
def reset_values(t: Target, ctx: Context) -> None:
    """Every SDHOST register and GPFSEL0..5, GPLEV0/1 after power-on; SDDATA
    with an empty FIFO (QEMU: 0); then the driver's reset and the same reads;
    GPSETn/GPCLRn and the levels GPLEVn reads (no pin wired)."""
    _all_registers(t)
    for reg in B.GPIO_REGISTERS:
        t.read(B.gpio(reg), 4)
    ctx.expect(not t.read(B.host(B.SDCMD), 4) & _NEW, "SDCMD: NEW_FLAG set at power-on")
    h = SdhostHost(t)
    h.reset()
    _all_registers(t)
    h.route()
    for reg in B.GPFSEL:
        t.read(B.gpio(reg), 4)
    for set_, clr, lev in ((B.GPSET0, B.GPCLR0, B.GPLEV0), (B.GPSET1, B.GPCLR1, B.GPLEV1)):
        t.write(B.gpio(set_), 4, 0x00FF_00FF)
        t.read(B.gpio(lev), 4)
        t.write(B.gpio(clr), 4, 0x0000_F00F)
        t.read(B.gpio(lev), 4)
        t.read(B.gpio(set_), 4)


@scenario("sdhost-routing", GROUP)
def routing(t: Target, ctx: Context) -> None:
    """The card is on the SDHCI until pins 48-53 are ALT0 (QEMU: CMD8 fails
    with CMD_TIME_OUT before); five of six pins are not enough; ALT3 keeps it
    where it is (bcm2835-gpio.routing-input-and-alt0); input takes it away,
    and back on ALT0 the card kept its state (its RCA answers CMD13)."""
    h = SdhostHost(t)
    h.reset()
    h.command(S.index("GO_IDLE_STATE"), 0, "none")
    h.command(S.index("SEND_IF_COND"), 0x1AA)
    t.write(B.gpio(B.GPFSEL[5]), 4, 0x924)  # pins 50-53 ALT0, 48-49 still input
    h.command(S.index("SEND_IF_COND"), 0x1AA)
    h.route()
    r = h.command(S.index("SEND_IF_COND"), 0x1AA)
    ctx.expect(not r.failed, "CMD8 fails with pins 48-53 all ALT0 (Linux sdhost_gpio48)")
    h.route(B.ALT3)
    h.command(S.index("SEND_IF_COND"), 0x1AA)
    h.route(B.FSEL_INPUT)
    h.command(S.index("SEND_IF_COND"), 0x1AA)
    for reg in (B.GPFSEL[4], B.GPFSEL[5]):
        t.read(B.gpio(reg), 4)
    h.init()
    h.status()
    h.route(B.FSEL_INPUT)
    h.status()
    h.route()
    r = h.status()
    ctx.expect(not r.failed and (r.r1 >> 9) & 0xF == S.CardState.TRAN,
               f"CMD13 after routing away and back: {r} (the card keeps its state)")


@scenario("sdhost-init", GROUP)
def init(t: Target, ctx: Context) -> None:
    """CMD0, CMD8, ACMD41 until ready, CMD2 (R2: SDRSP3..0), CMD3, CMD9 (R2),
    CMD10 in stand-by, CMD7 (R1b, the busy interrupt), ACMD6, CMD13."""
    h = SdhostHost(t)
    r = h.init(wide=False)
    ctx.expect(bool(r["acmd41"].r1 & S.OCR_BUSY), f"ACMD41: OCR {r['acmd41'].rsp} never ready")
    ctx.expect(any(r["cmd2"].rsp), "CMD2: the CID reads 0")
    h.command(S.index("SELECT_DESELECT_CARD"), 0, "r1b")  # deselect: stand-by
    h.command(S.index("SEND_CID"), h.rca << 16, "r2")
    h.command(S.index("SEND_CSD"), h.rca << 16, "r2")
    h.command(S.index("SELECT_DESELECT_CARD"), h.rca << 16, "r1b")
    h.app_command(S.index("SET_BUS_WIDTH", app=True), S.ACMD6_BUS_WIDTH[4])
    r13 = h.status()
    ctx.expect((r13.r1 >> 9) & 0xF == S.CardState.TRAN, f"CMD13: {r13} not in transfer state")


@scenario("sdhost-read-single", GROUP)
def read_single(t: Target, ctx: Context) -> None:
    """CMD17 by PIO on four blocks (data interrupt, SDEDM's FIFO level, bursts
    of 8 words); each is the image's block."""
    h = _ready(t, ctx)
    for lba in (0, 1, 7, 31):
        r = h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK)
        ctx.expect(r.data == t.image_read(lba * BLOCK, BLOCK),
                   f"CMD17 block {lba}: data differs from the image")
    h.status()


@scenario("sdhost-read-multi", GROUP)
def read_multi(t: Target, ctx: Context) -> None:
    """CMD18 of four blocks from block 2, each on a data interrupt; CMD12 (R1b)."""
    h = _ready(t, ctx)
    r = h.read(S.index("READ_MULTIPLE_BLOCK"), 2 * BLOCK, blocks=4)
    ctx.expect(r.data == t.image_read(2 * BLOCK, 4 * BLOCK), "CMD18: data differs from the image")
    h.status()


@scenario("sdhost-write-single", GROUP)
def write_single(t: Target, ctx: Context) -> None:
    """CMD24 by PIO (the first block on the data interrupt, BLOCK_IRPT after
    it), read back with CMD17; the image compared."""
    h = _ready(t, ctx)
    for lba in (5, 0):
        h.write(S.index("WRITE_BLOCK"), lba * BLOCK, _pattern(lba))
        h.status()
        r = h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK)
        ctx.expect(r.data == _pattern(lba), f"block {lba}: read back differs from the write")
    ctx.expect(t.image_read(5 * BLOCK, BLOCK) == _pattern(5), "block 5: the image differs")


@scenario("sdhost-write-multi", GROUP)
def write_multi(t: Target, ctx: Context) -> None:
    """CMD25 of three blocks (each after a block interrupt), CMD12 (R1b), read back."""
    h = _ready(t, ctx)
    data = b"".join(_pattern(8 + i) for i in range(3))
    h.write(S.index("WRITE_MULTIPLE_BLOCK"), 8 * BLOCK, data)
    h.status()
    r = h.read(S.index("READ_MULTIPLE_BLOCK"), 8 * BLOCK, blocks=3)
    ctx.expect(r.data == data, "CMD25: read back differs from the write")
    ctx.expect(t.image_read(8 * BLOCK, 3 * BLOCK) == data, "CMD25: the image differs")


@scenario("sdhost-app-data", GROUP)
def app_data(t: Target, ctx: Context) -> None:
    """Short data blocks: ACMD51 (SCR, 8 bytes: two words), ACMD13 (64),
    CMD6 (64), ACMD22 (4: one word) (PLS 4.3.11, 4.10.2, 4.3.10, 4.3.14)."""
    h = _ready(t, ctx)
    for index, app, arg, size in ((51, True, 0, 8), (13, True, 0, 64), (6, False, 0x00FFFFF1, 64),
                                  (22, True, 0, 4)):
        if app:
            h.command(S.index("APP_CMD"), h.rca << 16)
        r = h.read(index, arg, blksz=size)
        ctx.expect(len(r.data) == size or r.failed, f"CMD{index}: {len(r.data)} bytes of {size}")
    h.status()


@scenario("sdhost-erase", GROUP)
def erase(t: Target, ctx: Context) -> None:
    """CMD24 on blocks 12-13, CMD32/CMD33/CMD38 (R1b: the busy interrupt), read back."""
    h = _ready(t, ctx)
    h.write(S.index("WRITE_BLOCK"), 12 * BLOCK, _pattern(12))
    h.write(S.index("WRITE_BLOCK"), 13 * BLOCK, _pattern(13))
    h.command(S.index("ERASE_WR_BLK_START"), 12 * BLOCK)
    h.command(S.index("ERASE_WR_BLK_END"), 13 * BLOCK)
    h.command(S.index("ERASE"), 0, "r1b")
    h.status()
    for lba in (12, 13):
        r = h.read(S.index("READ_SINGLE_BLOCK"), lba * BLOCK)
        ctx.expect(r.data == t.image_read(lba * BLOCK, BLOCK), f"block {lba}: not the image")


def _level(t: Target) -> int:
    return B.SDEDM.field("FIFO_LEVEL").get(t.read(B.host(B.SDEDM), 4))


@scenario("sdhost-fifo", GROUP)
def fifo(t: Target, ctx: Context) -> None:
    """The 16-word FIFO (Linux SDDATA_FIFO_WORDS): 17 words written with no
    transfer (the 17th dropped) read back in order, then 0; a CMD17 whose
    FIFO refills as SDDATA is read, SDEDM's level and FSM along the way."""
    h = _ready(t, ctx)
    for i in range(17):
        t.write(B.host(B.SDDATA), 4, 0x1000 + i)
        _level(t)
    got = [t.read(B.host(B.SDDATA), 4) for _ in range(17)]
    ctx.expect(got[:16] == [0x1000 + i for i in range(16)],
               f"FIFO: {got[:16]} is not the 16 words written")
    t.write(B.host(B.SDHBCT), 4, BLOCK)
    t.write(B.host(B.SDHBLC), 4, 1)
    t.write(B.host(B.SDARG), 4, 3 * BLOCK)
    t.write(B.host(B.SDCMD), 4, 17 | _READ | _NEW)
    t.read(B.host(B.SDCMD), 4)
    words = []
    for i in range(BLOCK // 4 + 2):
        if i % 8 == 0:
            t.read(B.host(B.SDEDM), 4)
            t.read(B.host(B.SDHSTS), 4)
        words.append(t.read(B.host(B.SDDATA), 4))
    data = b"".join(w.to_bytes(4, "little") for w in words[:BLOCK // 4])
    ctx.expect(data == t.image_read(3 * BLOCK, BLOCK), "CMD17 through SDDATA: not the image")
    t.read(B.host(B.SDEDM), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    h.status()


@scenario("sdhost-partial-word", GROUP)
def partial_word(t: Target, ctx: Context) -> None:
    """A byte count that is not a whole number of words: ACMD51's SCR read
    with SDHBCT 5 (one word and one byte, the last word pushed as it is),
    the card left sending until CMD12; then the whole SCR with SDHBCT 8 and
    a CMD17 of 510 bytes (PLS 4.3.11: ACMD51 sends 8 bytes)."""
    h = _ready(t, ctx)
    scr = S.index("SEND_SCR", app=True)
    whole = (h.read(scr, 0, blksz=8) if not h.command(S.index("APP_CMD"), h.rca << 16).failed
             else None)
    h.command(S.index("APP_CMD"), h.rca << 16)
    part = h.read(scr, 0, blksz=5)
    t.read(B.host(B.SDEDM), 4)
    h.command(S.index("STOP_TRANSMISSION"), 0, "r1b")
    h.status()
    if whole is not None and not part.failed:
        ctx.expect(part.data == whole.data[:5], f"SCR's first 5 bytes {part.data.hex()} are "
                   f"not those of the whole SCR {whole.data.hex()}")
    h.read(S.index("READ_SINGLE_BLOCK"), 0, blksz=510)
    h.command(S.index("STOP_TRANSMISSION"), 0, "r1b")
    h.status()


@scenario("sdhost-interrupts", GROUP)
def interrupts(t: Target, ctx: Context) -> None:
    """The line is SDHSTS's BUSY, BLOCK and SDIO bits: a BUSYWAIT command with
    and without BUSY_IRPT_EN, a failed one (no busy interrupt:
    sdhost.busy-irpt-at-once), the data interrupt of a read (SDIO_IRPT:
    sdhost.data-irpt-is-sdio-irpt) with its enable cleared before and after,
    BLOCK_IRPT_EN before a write's first word (sdhost.block-irpt-before-data);
    each cleared by writing 1s to SDHSTS."""
    h = _ready(t, ctx)
    cfg = B.host(B.SDHCFG)
    for en in (_EN["BUSY_IRPT_EN"], 0):
        t.write(cfg, 4, en)
        h.send(S.index("SEND_STATUS"), h.rca << 16, "r1b")
        t.read(B.host(B.SDHSTS), 4)
        t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    t.write(cfg, 4, _EN["BUSY_IRPT_EN"])
    h.send(60, 0, "r1b")  # illegal: fails, no busy interrupt
    t.read(B.host(B.SDCMD), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    t.write(cfg, 4, _EN["DATA_IRPT_EN"])
    t.write(B.host(B.SDHBCT), 4, BLOCK)
    t.write(B.host(B.SDHBLC), 4, 1)
    h.send(S.index("READ_SINGLE_BLOCK"), 0, "r1", _READ)
    t.write(cfg, 4, 0)  # the enable cleared: the line stays
    t.read(B.host(B.SDHSTS), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    for i in range(BLOCK // 4):
        if i == 64:
            t.write(cfg, 4, _EN["DATA_IRPT_EN"])
        t.read(B.host(B.SDDATA), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    t.write(cfg, 4, _EN["BLOCK_IRPT_EN"] | _EN["BUSY_IRPT_EN"])
    h.send(S.index("WRITE_BLOCK"), 4 * BLOCK, "r1", _WRITE)
    t.read(B.host(B.SDHSTS), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    for i in range(BLOCK // 4):
        t.write(B.host(B.SDDATA), 4, i * 0x01010101)
    t.read(B.host(B.SDHSTS), 4)
    t.write(B.host(B.SDHSTS), 4, _ALL_STATUS)
    ctx.expect(not t.irq_level(), "the line stays high once SDHSTS is cleared")
    h.status()


@scenario("sdhost-errors", GROUP)
def errors(t: Target, ctx: Context) -> None:
    """Failed commands set SDCMD.FAIL_FLAG and SDHSTS.CMD_TIME_OUT: an illegal
    CMD60, CMD13 asking for a long response, CMD9 outside stand-by; a short
    response for a long one accepted (CMD9 without LONG_RESPONSE); a read the
    card refuses (beyond its capacity) moves no data; the errors cleared."""
    h = _ready(t, ctx)
    res: list[SdhostResult] = [h.command(60), h.command(S.index("SEND_STATUS"), h.rca << 16, "r2"),
                               h.command(S.index("SEND_CSD"), h.rca << 16, "r2")]
    for r in res:
        ctx.expect(r.failed and bool(r.hsts & _TIMEOUT), f"CMD{r.index}: {r} did not fail")
    h.command(S.index("SELECT_DESELECT_CARD"), 0, "r1b")
    h.command(S.index("SEND_CSD"), h.rca << 16)  # an R2 read as R1: SDRSP0..3 all filled
    for reg in B.SDRSP:
        t.read(B.host(reg), 4)
    h.command(S.index("SELECT_DESELECT_CARD"), h.rca << 16, "r1b")
    r = h.read(S.index("READ_SINGLE_BLOCK"), 64 << 20)
    h.status()
    t.read(B.host(B.SDEDM), 4)
    t.read(B.host(B.SDDATA), 4)
    t.write(B.host(B.SDCMD), 4, 13)  # stored, not issued: no NEW_FLAG
    t.read(B.host(B.SDCMD), 4)
    h.status()


@scenario("sdhost-no-card", GROUP)
def no_card(t: Target, ctx: Context) -> None:
    """The medium ejected (QMP ``eject``): every command that expects a
    response fails with CMD_TIME_OUT, one without succeeds; inserted again
    the card starts over (PLS 4.2: CMD0 ... ACMD41) and reads."""
    h = _ready(t, ctx)
    set_medium(t, False)
    r = h.status()
    ctx.expect(r.failed, f"CMD13 with no medium: {r}")
    h.command(S.index("GO_IDLE_STATE"), 0, "none")
    h.read(S.index("READ_SINGLE_BLOCK"), 0)
    set_medium(t, True)
    h.status()
    h.init()
    r = h.read(S.index("READ_SINGLE_BLOCK"), BLOCK)
    ctx.expect(r.data == t.image_read(BLOCK, BLOCK), "after re-insertion: block 1 differs")


@scenario("sdhost-edm", GROUP)
def edm(t: Target, ctx: Context) -> None:
    """SDEDM: FSM 0xf (power down) written reads 0, other FSM values and the
    FIFO level read back as written until the data path runs
    (sdhost.edm-fsm-written); the thresholds and FORCE_DATA_MODE kept;
    DATAMODE once a transfer's count reaches 0."""
    h = _ready(t, ctx)
    reg = B.host(B.SDEDM)
    for value in (0xF, 0x5, 0x1F3, B.SDEDM.mask("FORCE_DATA_MODE") | 0x2, 0xFFFF_FFFF):
        t.write(reg, 4, value)
        t.read(reg, 4)
        t.write(B.host(B.SDHCFG), 4, 0)
        t.read(reg, 4)
    h.reset()
    t.read(reg, 4)
    h.read(S.index("READ_SINGLE_BLOCK"), 0)
    t.read(reg, 4)


@scenario("sdhost-registers", GROUP)
def registers(t: Target, ctx: Context) -> None:
    """Writes and reads of every register (SDARG, SDTOUT, SDCDIV and SDHCFG
    read 0: sdhost.config-reads-0; SDVDD, SDHBCT, SDHBLC read back), SDHSTS
    cleared by 1s, and access sizes: a byte and a halfword at each register,
    a quadword, a byte beyond SDHSTS's first."""
    h = _ready(t, ctx)
    for reg in (B.SDARG, B.SDTOUT, B.SDCDIV, B.SDHCFG, B.SDVDD, B.SDHBCT, B.SDHBLC):
        t.write(B.host(reg), 4, 0xFFFF_FFFF)
        t.read(B.host(reg), 4)
    t.write(B.host(B.SDHBLC), 4, 0)
    t.write(B.host(B.SDVDD), 4, 1)
    t.write(B.host(B.SDHCFG), 4, _EN["BUSY_IRPT_EN"])
    h.send(S.index("SEND_STATUS"), h.rca << 16, "r1b")
    for off in (0x20, 0x21, 0x22):
        t.read(B.host(B.SDHSTS) - 0x20 + off, 1)
    t.read(B.host(B.SDHSTS), 2)
    t.write(B.host(B.SDHSTS) + 1, 1, 0x04)  # BUSY_IRPT's byte: not the register's offset
    t.read(B.host(B.SDHSTS), 4)
    t.write(B.host(B.SDHSTS), 2, 0x0400)
    t.read(B.host(B.SDHSTS), 4)
    for reg in B.REGISTERS:
        if reg is not B.SDDATA:
            t.read(B.host(reg), 1)
            t.read(B.host(reg), 2)
    t.read(B.host(B.SDVDD), 8)
    t.write(B.host(B.SDCMD), 2, 13 | _NEW)  # a halfword write issues it too
    t.read(B.host(B.SDRSP[0]), 4)
    t.write(B.host(B.SDCMD), 1, 0x8D)  # a byte: NEW_FLAG is not in it
    t.read(B.host(B.SDCMD), 4)
    h.status()


@scenario("sdhost-reset-mid-transfer", GROUP)
def reset_mid_transfer(t: Target, ctx: Context) -> None:
    """The driver's reset (Linux bcm2835_reset_internal) in the middle of a
    CMD18: the byte count goes to 0 with SDHBLC, the FIFO keeps its words;
    CMD12 stops the card, then a read works again."""
    h = _ready(t, ctx)
    t.write(B.host(B.SDHBCT), 4, BLOCK)
    t.write(B.host(B.SDHBLC), 4, 4)
    h.send(S.index("READ_MULTIPLE_BLOCK"), 0, "r1", _READ)
    for _ in range(20):
        t.read(B.host(B.SDDATA), 4)
    h.reset()
    t.read(B.host(B.SDEDM), 4)
    for _ in range(3):
        t.read(B.host(B.SDDATA), 4)
    h.command(S.index("STOP_TRANSMISSION"), 0, "r1b")
    h.status()
    r = h.read(S.index("READ_SINGLE_BLOCK"), 2 * BLOCK)
    ctx.expect(not r.failed, f"CMD17 after the reset and CMD12: {r}")
