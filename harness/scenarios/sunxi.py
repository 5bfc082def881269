"""The Allwinner SD/MMC host controller (SMHC) and its card: the ``sunxi`` group.

Run on a board with ``allwinner-sdhost`` (``sdqtest check --board
orangepi-pc``); the lockstep compares every register access, the interrupt
line, the descriptors and buffers in RAM and the card image with the model
(:mod:`harness.model.allwinner`).  What the H3 Datasheet (5.3) or the SD
Physical Layer Simplified Specification promises whatever QEMU does (reset
values, self-clearing reset bits, CMD8's echo, the data read back, OWN
cleared in a used descriptor) is noted with :meth:`Context.expect`; where
QEMU departs from the datasheet the model follows it and the ledger says so
(``sunxi.*``).  The card is SDSC: data commands take byte addresses.
"""

from __future__ import annotations

from harness.driver.allwinner import (
    ACD,
    AUTOSTOP,
    CC,
    DES_OWN,
    DTC,
    LOAD,
    RESETS,
    SunxiHost,
)
from harness.driver.ops import set_medium
from harness.hwdefs import allwinner as A
from harness.hwdefs import sd as S
from harness.images import BLOCK
from harness.scenarios.registry import Context, scenario
from harness.target import Target

GROUP = "sunxi"
#: H3 Datasheet 5.3.7: reset values of the registers a driver relies on.
DATASHEET_RESET = {A.SD_GCTL: 0x300, A.SD_TMOR: 0xFFFF_FF40, A.SD_BKSR: 0x200,
                   A.SD_BYCR: 0x200, A.SD_FWLR: 0x000F_0000, A.SD_A12A: 0xFFFF,
                   A.SD_HWRST: 1}
_RESP = (A.SD_RESP0, A.SD_RESP1, A.SD_RESP2, A.SD_RESP3)
#: Offsets inside the window with no register on this variant (sun5i).
UNMAPPED = (0x48, 0x4C, 0x64, 0x90, 0x94, 0x104, 0x140, 0x144, 0x204, 0x300, 0xFFC)


def _pattern(seed: int, n: int = BLOCK) -> bytes:
    return bytes((seed * 37 + i * 11 + (i >> 8)) & 0xFF for i in range(n))


def _ready(t: Target) -> SunxiHost:
    h = SunxiHost(t)
    h.setup()
    h.init_card()
    return h


def _tran(ctx: Context, h: SunxiHost, rca: int, what: str) -> None:
    """CMD13: the card is back in transfer state (PLS 4.10.1, CURRENT_STATE 4)."""
    r = h.command(S.index("SEND_STATUS"), rca << 16)
    h.clear()
    ctx.expect(r.ok and (r.r1 >> 9) & 0xF == 4,
               f"{what}: CMD13 R1 {r.r1:#010x} (RISR {r.risr:#x}) is not transfer state")


@scenario("sunxi-registers", GROUP)
def sunxi_registers(t: Target, ctx: Context) -> None:
    """Every register after reset (the datasheet's reset values), the unmapped
    offsets, write and read back of the plain registers, the self-clearing
    reset bits, 8/16-bit and 64-bit accesses."""
    h = SunxiHost(t)
    for reg in A.REGISTERS:
        value = h.rd(reg)
        want = DATASHEET_RESET.get(reg)
        if want is not None:
            ctx.expect(value == want, f"{reg.name} resets to {value:#x}, not {want:#x} "
                       "(H3 Datasheet 5.3.7)")
    for off in UNMAPPED:
        t.read(off, 4)
        t.write(off, 4, 0xFFFF_FFFF)
        t.read(off, 4)
    for reg in (A.SD_CKCR, A.SD_TMOR, A.SD_BWDR, A.SD_BKSR, A.SD_CAGR, A.SD_FWLR, A.SD_FUNS,
                A.SD_DBGC, A.SD_A12A, A.SD_NTSR, A.SD_SDBG, A.SD_HWRST, A.SD_DLBA,
                A.SD_IDIE, A.SD_THLDC, A.SD_DSBD, *_RESP, A.SD_RES_CRC,
                A.SD_CRC_STA, A.SD_DATA_CRC[0]):
        for value in (0xFFFF_FFFF, 0xA5A5_5A5A, 0):
            h.wr(reg, value)
            h.rd(reg)
    h.reset()  # the driver gives up (an error) if the bits do not clear (H3 5.3.7.1)
    h.wr(A.SD_DMAC, 1)  # IDMAC soft reset: the datasheet clears it after a cycle
    h.rd(A.SD_DMAC)
    h.wr(A.SD_DMAC, 0)
    t.read(A.SD_CKCR.offset, 1)
    t.read(A.SD_CKCR.offset + 2, 2)
    t.write(A.SD_CKCR.offset, 2, 0x1234)
    t.write(A.SD_CKCR.offset + 1, 1, 0x56)
    h.rd(A.SD_CKCR)
    t.read(A.SD_RESP0.offset, 8)
    t.write(A.SD_CAGR.offset - 4, 8, 0x1122_3344_5566_7788)
    t.read(A.SD_CAGR.offset + 1, 4)


@scenario("sunxi-init", GROUP)
def sunxi_init(t: Target, ctx: Context) -> None:
    """Card initialisation (PLS 4.2): CMD0 with the init sequence, CMD8's echo,
    ACMD41 until ready, CID and CSD as long responses, CMD3, CMD7, ACMD6,
    then CMD13 and CMD10 in the states that take them."""
    h = SunxiHost(t)
    h.setup()
    r0 = h.command(S.index("GO_IDLE_STATE"), rsp="")
    ctx.expect(bool(r0.risr & CC), f"CMD0 without a response: no CC (RISR {r0.risr:#x})")
    h.clear()
    r8 = h.command(S.index("SEND_IF_COND"), 0x1AA)
    ctx.expect(r8.r1 & 0xFFF == 0x1AA, f"CMD8: R7 {r8.r1:#x} does not echo 0x1AA (PLS 4.3.13)")
    h.clear()
    rca = h.init_card()
    _tran(ctx, h, rca, "after CMD7")
    h.command(S.index("SEND_CID"), rca << 16, rsp="r2")  # illegal in transfer state
    h.clear()
    h.command(S.index("SELECT_DESELECT_CARD"), 0)  # deselect: stand-by
    h.clear()
    cid = h.command(S.index("SEND_CID"), rca << 16, rsp="r2")
    ctx.expect(cid.ok, f"CMD10 in stand-by: RISR {cid.risr:#x}")
    h.clear()
    csd = h.command(S.index("SEND_CSD"), rca << 16, rsp="r2")
    ctx.expect(csd.resp[3] >> 30 == 0, f"SDSC card: CSD_STRUCTURE {csd.resp[3] >> 30} not 0")
    h.clear()
    h.command(S.index("SELECT_DESELECT_CARD"), rca << 16)
    h.clear()
    _tran(ctx, h, rca, "after reselecting")


def _read_pio(ctx: Context, t: Target, h: SunxiHost, lba: int, count: int) -> None:
    multi = count > 1
    read = S.index("READ_MULTIPLE_BLOCK" if multi else "READ_SINGLE_BLOCK")
    r = h.pio_read(read, lba * BLOCK, count * BLOCK, autostop=multi)
    want = (DTC | ACD) if multi else DTC
    ctx.expect(r.risr & want == want, f"PIO read of {count} at {lba}: RISR {r.risr:#x}")
    ctx.expect(r.data == t.image_read(lba * BLOCK, count * BLOCK),
               f"PIO read of {count} block(s) at {lba}: data differs from the image")
    h.rd(A.SD_RESP0)
    h.clear()


@scenario("sunxi-pio-read", GROUP)
def sunxi_pio_read(t: Target, ctx: Context) -> None:
    """CMD17 and CMD18 with auto stop through SD_FIFO (U-Boot's PIO): each word
    once SD_STAR leaves FIFO_EMPTY; DTC, ACD; the blocks are the image's."""
    h = _ready(t)
    for lba, count in ((0, 1), (3, 1), (5, 4), (31, 2)):
        _read_pio(ctx, t, h, lba, count)
        h.rd(A.SD_STAR)
    _tran(ctx, h, h.rca, "after the reads")


def _write_pio(ctx: Context, t: Target, h: SunxiHost, lba: int, blocks: list[bytes]) -> None:
    multi = len(blocks) > 1
    data = b"".join(blocks)
    write = S.index("WRITE_MULTIPLE_BLOCK" if multi else "WRITE_BLOCK")
    r = h.pio_write(write, lba * BLOCK, data, autostop=multi)
    want = (DTC | ACD) if multi else DTC
    ctx.expect(r.risr & want == want, f"PIO write at {lba}: RISR {r.risr:#x}")
    h.clear()
    read = S.index("READ_MULTIPLE_BLOCK" if multi else "READ_SINGLE_BLOCK")
    back = h.pio_read(read, lba * BLOCK, len(data), autostop=multi)
    h.clear()
    ctx.expect(back.data == data, f"PIO write at {lba}: read back differs from the write")
    ctx.expect(t.image_read(lba * BLOCK, len(data)) == data,
               f"PIO write at {lba}: the image does not hold the data")


@scenario("sunxi-pio-write", GROUP)
def sunxi_pio_write(t: Target, ctx: Context) -> None:
    """CMD24 and CMD25 with auto stop through SD_FIFO, read back by PIO; the image."""
    h = _ready(t)
    _write_pio(ctx, t, h, 6, [_pattern(6)])
    _write_pio(ctx, t, h, 9, [_pattern(9 + i) for i in range(3)])
    _write_pio(ctx, t, h, 0, [_pattern(1)])


def _descs(t: Target, h: SunxiHost, addrs: list[int]) -> list[int]:
    """DES0 of each descriptor as the IDMAC left it (the lockstep compares them all)."""
    out = []
    for a in addrs:
        raw = t.mem_read(a, A.DESC_SIZE)
        out.append(int.from_bytes(raw[:4], "little"))
    return out


def _dma_read(ctx: Context, t: Target, h: SunxiHost, lba: int, sizes: list[int]) -> None:
    n = sum(sizes)
    multi = n > BLOCK
    t.mem_write(h.buf_base, bytes(n))
    read = S.index("READ_MULTIPLE_BLOCK" if multi else "READ_SINGLE_BLOCK")
    r = h.dma_transfer(read, lba * BLOCK, sizes, write=False, autostop=multi)
    ctx.expect(bool(r.risr & DTC), f"IDMAC read at {lba}: no DTC (RISR {r.risr:#x})")
    ctx.expect(t.mem_read(h.buf_base, n) == t.image_read(lba * BLOCK, n),
               f"IDMAC read of {n} bytes at {lba}: RAM differs from the image")
    des0 = _descs(t, h, [h.desc_base + i * A.DESC_SIZE for i in range(len(sizes))])
    ctx.expect(not any(d & DES_OWN for d in des0),
               f"IDMAC read: OWN still set in a used descriptor {des0} (H3 5.3.4.2)")


@scenario("sunxi-idma-read", GROUP)
def sunxi_idma_read(t: Target, ctx: Context) -> None:
    """Reads through the IDMAC as Linux sets it up: one descriptor, then a chain
    of three (512, 1024, 512) for CMD18 with auto stop; RAM, descriptors, IDST."""
    h = _ready(t)
    _dma_read(ctx, t, h, 2, [BLOCK])
    _dma_read(ctx, t, h, 4, [BLOCK, 2 * BLOCK, BLOCK])
    _dma_read(ctx, t, h, 12, [4 * BLOCK])
    h.rd(A.SD_IDST)


@scenario("sunxi-idma-write", GROUP)
def sunxi_idma_write(t: Target, ctx: Context) -> None:
    """CMD24 and CMD25 (auto stop) through the IDMAC, read back by the IDMAC; the image."""
    h = _ready(t)
    for lba, blocks in ((7, 1), (20, 3)):
        data = b"".join(_pattern(lba + i) for i in range(blocks))
        t.mem_write(h.buf_base, data)
        sizes = [BLOCK] * blocks
        write = S.index("WRITE_MULTIPLE_BLOCK" if blocks > 1 else "WRITE_BLOCK")
        r = h.dma_transfer(write, lba * BLOCK, sizes, write=True, autostop=blocks > 1)
        ctx.expect(bool(r.risr & DTC), f"IDMAC write at {lba}: no DTC (RISR {r.risr:#x})")
        ctx.expect(t.image_read(lba * BLOCK, len(data)) == data,
                   f"IDMAC write at {lba}: the image does not hold the data")
        _dma_read(ctx, t, h, lba, sizes)


def _raw_desc(t: Target, addr: int, des0: int, size: int, buf: int, nxt: int) -> None:
    t.mem_write(addr, b"".join(w.to_bytes(4, "little") for w in (des0, size, buf, nxt)))


@scenario("sunxi-idma-descriptors", GROUP)
def sunxi_idma_descriptors(t: Target, ctx: Context) -> None:
    """Descriptors Linux does not write: DES1 0 (the largest buffer) and one
    above it, a descriptor without OWN, LD before SD_BYCR's bytes are moved
    (then CMD12 by hand), a chain through DES3 out of order."""
    h = _ready(t)
    d, b = h.desc_base, h.buf_base
    own_ld = DES_OWN | (1 << 2) | (1 << 3)
    for des0, size in ((own_ld, 0), (own_ld, 0x1_FFFC), ((1 << 2), BLOCK)):
        _raw_desc(t, d, des0, size, b, 0)
        h.wr(A.SD_BKSR, BLOCK)
        h.wr(A.SD_BYCR, 2 * BLOCK)
        h.start_dma(False)
        h.command(S.index("READ_MULTIPLE_BLOCK"), 0, data="read", autostop=True)
        h.rd(A.SD_BYCR)
        h.rd(A.SD_IDST)
        t.mem_read(d, A.DESC_SIZE)
        h.finalize_dma()
    # The last chain stopped at LD with CMD18 still sending: CMD12 first (a CMD13
    # while CMD18 sends, then a data read, aborts QEMU 11.1: sdbus_read_data).
    h.manual_stop()
    _idma_not_started(t, h)
    # Two descriptors, the second (LD) before the first in RAM: 1024 of SD_BYCR's
    # 1536 bytes move and the card goes on sending.
    _raw_desc(t, d + 0x40, DES_OWN | (1 << 2), BLOCK, b + 0x2000, d)
    _raw_desc(t, d, DES_OWN, BLOCK, b + 0x1000, d + 0x40)
    h.wr(A.SD_BKSR, BLOCK)
    h.wr(A.SD_BYCR, 3 * BLOCK)
    h.start_dma(False)
    h.command(S.index("READ_MULTIPLE_BLOCK"), 8 * BLOCK, data="read")
    h.rd(A.SD_BYCR)
    h.rd(A.SD_STAR)
    t.mem_read(d, 0x50)
    t.mem_read(b + 0x1000, 0x1200)
    h.finalize_dma()
    h.manual_stop()
    _tran(ctx, h, h.rca, "after the manual stop")


def _idma_not_started(t: Target, h: SunxiHost) -> None:
    """The IDMAC set up but not run: SD_BKSR 0, then a command without data
    (the card has nothing to send); the descriptor stays as written."""
    d, b = h.desc_base, h.buf_base
    _raw_desc(t, d, DES_OWN | (1 << 2), BLOCK, b, 0)
    read = S.index("READ_SINGLE_BLOCK")
    for blksz, index, arg in ((0, read, 0), (BLOCK, S.index("SEND_STATUS"), h.rca << 16)):
        h.wr(A.SD_BKSR, blksz)
        h.wr(A.SD_BYCR, BLOCK)
        h.start_dma(False)
        h.command(index, arg, data="read" if index == read else "")
        h.rd(A.SD_IDST)
        h.rd(A.SD_STAR)
        t.mem_read(d, A.DESC_SIZE)
        h.finalize_dma()
        if index == read:
            h.pio_read_words(BLOCK // 4)
            h.rd(A.SD_RISR)
            h.clear()


@scenario("sunxi-interrupts", GROUP)
def sunxi_interrupts(t: Target, ctx: Context) -> None:
    """SD_IMKR masks SD_RISR into SD_MISR and the line, GCTL.INT_ENB gates it;
    SD_RISR and SD_MISR clear by writing 1s; SD_IDST's bits clear the same way."""
    h = _ready(t)
    h.wr(A.SD_IMKR, 0)
    h.command(S.index("SEND_STATUS"), h.rca << 16, imask=0)
    t.irq_level()
    for mask in (CC, CC | DTC, 0xFFFF_FFFF, DTC, 0):
        h.wr(A.SD_IMKR, mask)
        h.rd(A.SD_MISR)
        t.irq_level()
    h.wr(A.SD_IMKR, 0xFFFF_FFFF)
    g = h.rd(A.SD_GCTL)
    h.wr(A.SD_GCTL, g & ~(1 << 4))
    ctx.expect(not t.irq_level(), "the line stays up with GCTL.INT_ENB clear (H3 5.3.7.1)")
    h.wr(A.SD_GCTL, g)
    # CC again while it is pending
    h.command(S.index("SEND_STATUS"), h.rca << 16, imask=0xFFFF_FFFF)
    h.wait_end(False)
    h.wr(A.SD_MISR, CC)
    h.rd(A.SD_RISR)
    h.wr(A.SD_RISR, 0xFFFF_FFFF)
    ctx.expect(h.rd(A.SD_RISR) == 0, "SD_RISR not cleared by writing 1s (H3 5.3.7.15)")
    ctx.expect(not t.irq_level(), "the line is up with SD_RISR clear")
    # Every bit unmasked: CC, then DTC and ACD join it while the line is up.
    r = h.pio_read(S.index("READ_MULTIPLE_BLOCK"), 0, 2 * BLOCK, autostop=True, imask=0xFFFF_FFFF)
    ctx.expect(r.risr & (CC | DTC | ACD) == CC | DTC | ACD, f"CMD18: RISR {r.risr:#x}")
    t.irq_level()
    for bit in (CC, DTC, ACD):
        h.wr(A.SD_RISR, bit)
        t.irq_level()
    h.wr(A.SD_STAR, 0)
    h.wr(A.SD_IDST, 0xFFFF_FFFF)
    h.rd(A.SD_IDST)
    _dma_read(ctx, t, h, 1, [BLOCK])
    h.wr(A.SD_IDST, 1)
    h.rd(A.SD_IDST)


@scenario("sunxi-card-absent", GROUP)
def sunxi_card_absent(t: Target, ctx: Context) -> None:
    """The medium ejected with a command's CC pending: CARD_REMOVE added to it
    (the pending bit kept) and SD_STAR.CARD_PRESENT 0; a command finds
    no card (no response); the data port moves nothing; the medium back:
    CARD_INSERT, the card initialised again and read."""
    h = _ready(t)
    h.command(S.index("SEND_STATUS"), h.rca << 16)  # its CC left pending
    h.wr(A.SD_IMKR, (1 << 30) | (1 << 31))
    set_medium(t, False)
    risr = h.rd(A.SD_RISR)
    ctx.expect(bool(risr & (1 << 31)), f"no CARD_REMOVE after the eject (RISR {risr:#x})")
    ctx.expect(bool(risr & CC), f"the eject cleared a pending CC (RISR {risr:#x})")
    t.irq_level()
    h.rd(A.SD_STAR)
    r = h.command(S.index("SEND_STATUS"), h.rca << 16)
    ctx.expect(not r.ok, f"CMD13 with no card answered (RISR {r.risr:#x})")
    t.read(h.fifo, 4)
    h.command(S.index("GO_IDLE_STATE"), rsp="")
    h.clear(0xFFFF_FFFF)
    set_medium(t, True)
    h.rd(A.SD_RISR)
    h.rd(A.SD_STAR)
    t.irq_level()
    h.clear(0xFFFF_FFFF)
    h.init_card()
    _read_pio(ctx, t, h, 1, 1)


@scenario("sunxi-errors", GROUP)
def sunxi_errors(t: Target, ctx: Context) -> None:
    """Commands the card does not answer or answers with another length than
    SD_CMDR asks (RE), the data port with no data, auto stop with nothing to
    move, FIFO writes past the end of a write with auto stop."""
    h = SunxiHost(t)
    h.setup()
    r = h.command(S.index("READ_SINGLE_BLOCK"), 0)  # idle: an illegal command, no response
    ctx.expect(not r.ok, f"CMD17 in idle state answered (RISR {r.risr:#x})")
    h.clear()
    h.init_card()
    h.command(S.index("SEND_STATUS"), h.rca << 16, rsp="r2")  # a short response, a long one asked
    h.clear()
    h.command(S.index("SEND_CSD"), h.rca << 16, rsp="r1")  # illegal in transfer state
    h.clear()
    h.command(60, 0)  # reserved
    h.clear()
    t.read(h.fifo, 4)
    h.rd(A.SD_STAR)
    h.wr(A.SD_BYCR, 0)
    h.wr(A.SD_CAGR, h.rca << 16)
    # the counter at 0: CMD12 at once
    h.wr(A.SD_CMDR, h.flags(S.index("SEND_STATUS"), "r1") | AUTOSTOP)
    for reg in (A.SD_RISR, A.SD_RESP0, A.SD_CMDR):
        h.rd(reg)
    h.clear()
    r = h.pio_write(S.index("WRITE_MULTIPLE_BLOCK"), 2 * BLOCK, _pattern(2) * 2, autostop=True)
    for i in range(3):  # past the end: each word to the card, the auto stop again
        t.write(h.fifo, 4, 0x1111_1111 * (i + 1))
        h.rd(A.SD_RISR)
        h.clear()
    h.rd(A.SD_RESP0)
    _tran(ctx, h, h.rca, "after writes past the end")
    ctx.expect(t.image_read(2 * BLOCK, 2 * BLOCK) == _pattern(2) * 2,
               "CMD25 by PIO: the image does not hold the data")


@scenario("sunxi-manual-stop", GROUP)
def sunxi_manual_stop(t: Target, ctx: Context) -> None:
    """CMD18 without auto stop, two blocks by PIO, then CMD12 as Linux sends it
    after a data error (STOP_ABT_CMD); a soft reset in the middle of a read."""
    h = _ready(t)
    r = h.pio_read(S.index("READ_MULTIPLE_BLOCK"), 4 * BLOCK, 2 * BLOCK)
    ctx.expect(r.data == t.image_read(4 * BLOCK, 2 * BLOCK), "CMD18 data differs from the image")
    h.rd(A.SD_STAR)
    stop = h.manual_stop()
    ctx.expect(stop.ok, f"CMD12 after CMD18: RISR {stop.risr:#x}")
    _tran(ctx, h, h.rca, "after CMD12")
    h.wr(A.SD_BKSR, BLOCK)
    h.wr(A.SD_BYCR, 4 * BLOCK)
    h.command(S.index("READ_MULTIPLE_BLOCK"), 0, data="read")
    for _ in range(8):
        t.read(h.fifo, 4)
    h.reset(RESETS)
    h.rd(A.SD_STAR)
    t.read(h.fifo, 4)
    h.manual_stop()
    _tran(ctx, h, h.rca, "after a reset and CMD12")


@scenario("sunxi-erase", GROUP)
def sunxi_erase(t: Target, ctx: Context) -> None:
    """CMD32, CMD33, CMD38 (R1b) over blocks written before, then read back by DMA."""
    h = _ready(t)
    _write_pio(ctx, t, h, 40, [_pattern(40 + i) for i in range(4)])
    for index, arg in ((32, 41 * BLOCK), (33, 42 * BLOCK), (38, 0)):
        r = h.command(index, arg)
        ctx.expect(r.ok, f"CMD{index}: RISR {r.risr:#x}")
        h.clear()
    _tran(ctx, h, h.rca, "after CMD38")
    _dma_read(ctx, t, h, 40, [4 * BLOCK])


@scenario("sunxi-clock", GROUP)
def sunxi_clock(t: Target, ctx: Context) -> None:
    """A clock change (PRG_CLK) sends no command: CC, CMD_LOAD cleared, the card
    untouched; the same with a data flag and auto stop set."""
    h = _ready(t)
    for div in (0, 1, 0xFF):
        h.clock(False)
        h.clock(True, div)
        ctx.expect(not h.rd(A.SD_CMDR) & LOAD, "CMD_LOAD still set after a clock change")
    h.wr(A.SD_CMDR, LOAD | (1 << 21) | (1 << 9) | 17)
    h.rd(A.SD_RISR)
    h.rd(A.SD_STAR)
    h.clear()
    _tran(ctx, h, h.rca, "after clock changes")


@scenario("sunxi-app-data", GROUP)
def sunxi_app_data(t: Target, ctx: Context) -> None:
    """Short data blocks by PIO: ACMD51 (SCR, 8 bytes), ACMD13 (SD status, 64),
    CMD6 mode 0 (64); then ACMD51 through the IDMAC (PLS 4.3.10, 4.10.2, 5.6)."""
    h = _ready(t)
    scr = S.index("SEND_SCR", app=True)
    for app, index, arg, n in ((True, scr, 0, 8), (True, S.index("SD_STATUS", app=True), 0, 64),
                               (False, S.index("SWITCH_FUNC"), 0x00FF_FFF1, 64)):
        if app:
            h.command(S.index("APP_CMD"), h.rca << 16)
            h.clear()
        r = h.pio_read(index, arg, n, blksz=n)
        ctx.expect(bool(r.risr & DTC), f"{'A' if app else ''}CMD{index}: RISR {r.risr:#x}")
        if index == scr:
            ctx.expect(len(r.data) == 8 and r.data[0] >> 4 == 0,
                       f"SCR {r.data.hex()}: SCR_STRUCTURE not 0 (PLS 5.6)")
        h.clear()
    _tran(ctx, h, h.rca, "after the short reads")
    h.command(S.index("APP_CMD"), h.rca << 16)
    h.clear()
    t.mem_write(h.buf_base, bytes(8))
    r = h.dma_transfer(S.index("SEND_SCR", app=True), 0, [8], write=False, blksz=8)
    ctx.expect(bool(r.risr & DTC), f"ACMD51 by IDMAC: RISR {r.risr:#x}")
    t.mem_read(h.buf_base, 16)
    t.mem_read(h.desc_base, A.DESC_SIZE)
    _tran(ctx, h, h.rca, "after ACMD51 by the IDMAC")


@scenario("sunxi-status-during-read", GROUP)
def sunxi_status_during_read(t: Target, ctx: Context) -> None:
    """CMD13 between the words of a CMD18 read, after ACMD51 (the 8-byte SCR):
    the card answers its status and the read goes on (PLS 4.3.3, Table 4-41).
    QEMU 11.1 aborts there (ledger sd.generic-read-past-size, bug 0027: the
    model says where); CMD12 and CMD13 end it on the others."""
    h = _ready(t)
    h.command(55, h.rca << 16)
    h.clear()
    h.pio_read(51, 0, 8, blksz=8)
    h.clear()
    h.wr(A.SD_BKSR, BLOCK)
    h.wr(A.SD_BYCR, 2 * BLOCK)
    h.command(18, 2 * BLOCK, data="read")
    h.pio_read_words(2)  # the read stands at the SCR's 8 bytes
    r = h.command(13, h.rca << 16)
    ctx.expect(r.ok and (r.r1 >> 9) & 0xF == 5,
               f"CMD13 during CMD18: R1 {r.r1:#010x} is not the data state (PLS 4.10.1)")
    h.clear()
    h.pio_read_words(4)
    h.rd(A.SD_STAR)
    h.manual_stop()
    h.command(13, h.rca << 16)
    h.clear()
