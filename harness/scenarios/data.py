"""Block reads and writes by PIO, SDMA and ADMA2 (SD Host Controller 3.7.2).

Counts, block sizes (odd ones too), misaligned guest buffers, SDMA buffer
boundaries, ADMA2 chains with link, nop and int descriptors, Auto CMD12,
CMD23, stop at block gap, and transfer-size invariance: the same data moved
with 1-, 2- and 4-byte data port accesses.  Data read is checked against the
image's pattern, data written against what was written.
"""

from __future__ import annotations

from harness.driver import ops
from harness.driver.adma import Adma2Desc, AdmaOptions
from harness.driver.host import SET_BLOCK_COUNT, Stop
from harness.driver.results import Mode
from harness.hwdefs import sdhci as H
from harness.scenarios.common import expect_bytes, expect_pattern, ready, test_data
from harness.scenarios.registry import Context, scenario
from harness.target import Target

MODES = (Mode.PIO, Mode.SDMA, Mode.ADMA2)


#: How each transfer mode moves the data, as the descriptions say it.
_MODE_NAMES = {Mode.PIO: "PIO (the Buffer Data Port, SDHC 2.2.8)",
               Mode.SDMA: "SDMA (SDHC 1.13.1)", Mode.ADMA2: "ADMA2 (SDHC 1.13.4)"}


def _rw_scenario(mode: Mode, count: int) -> None:
    cmd = ("CMD17", "CMD24") if count == 1 else ("CMD18", "CMD25")
    blocks = "one block" if count == 1 else f"{count} blocks"

    @scenario(f"{mode.value}-read-{count}", "data", needs_clock=True,
              doc=f"A read of {blocks} from block 5 by {_MODE_NAMES[mode]} ({cmd[0]}), "
              "compared with the image's known pattern.")
    def _read(t: Target, ctx: Context) -> None:
        d = ready(t)
        r = d.read_blocks(5, count, mode=mode)
        expect_pattern(ctx, r.data, 5, f"{mode.value} read of {count} blocks")

    @scenario(f"{mode.value}-write-{count}", "data", needs_clock=True,
              doc=f"A write of {blocks} at block 9 by {_MODE_NAMES[mode]} ({cmd[1]}), "
              "read back by PIO and compared, and the card image compared.")
    def _write(t: Target, ctx: Context) -> None:
        d = ready(t)
        data = test_data(512 * count, count)
        d.write_blocks(9, data, mode=mode)
        back = d.read_blocks(9, count, mode=Mode.PIO)
        ctx.expect(back.data == data, "data read back differs from data written")
        t.image_read(9 * 512, 512 * count)


for _mode in MODES:
    for _count in (1, 2, 7, 32):
        _rw_scenario(_mode, _count)


@scenario("pio-odd-block-sizes", "data", needs_clock=True)
def _odd_sizes(t: Target, ctx: Context) -> None:
    """CMD16 block lengths 1..512, odd ones too, on an SDSC card (PLS 4.3.2:
    an SDSC card may allow partial-block reads; byte addressing)."""
    d = ready(t)
    for bs in (1, 2, 3, 7, 64, 100, 257, 511, 512):
        d.set_blocklen(bs)
        r = d.read_blocks(3, 1, block_size=bs)
        if r.ok:
            expect_bytes(ctx, r.data, 3 * bs, f"{bs}-byte block read")
    d.set_blocklen(512)


@scenario("dma-misaligned-buffers", "data", needs_clock=True)
def _misaligned(t: Target, ctx: Context) -> None:
    """SDMA to guest buffers at odd addresses; ADMA2 to addresses that are
    aligned to 4 bytes but not to a page, and to odd ones, which the
    specification does not allow (ADMA2 data addresses are 32-bit aligned,
    SD Host Controller 1.13.4): what the device does then is compared too."""
    d = ready(t)
    for mode, skews, valid in ((Mode.SDMA, (1, 3, 0x7FF), True),
                               (Mode.ADMA2, (4, 0x7FC), True),
                               (Mode.ADMA2, (1, 3), False)):
        for skew in skews:
            buf = d.dma_base + 0x10000 + skew
            r = d.read_blocks(2, 3, mode=mode, buffer=buf)
            if valid:
                expect_pattern(ctx, r.data, 2, f"{mode.value} read to {buf:#x}")
            t.mem_read(buf - 16, 3 * 512 + 32)


#: Where ``sdma-boundaries`` writes its three blocks.
WRITTEN_AT = 40


@scenario("sdma-boundaries", "data", needs_clock=True)
def _sdma_boundaries(t: Target, ctx: Context) -> None:
    """SDMA with every buffer boundary from 4 KiB, crossed by the transfer:
    the DMA interrupt stops it and a new SDMASYSAD resumes (2.2.1, 2.2.2)."""
    d = ready(t)
    written = b""  # what this scenario last wrote at block WRITTEN_AT
    for shift in range(0, 4):
        boundary = 4096 << shift
        buf = d.dma_base + boundary - 512  # first boundary after one block
        count = (boundary // 512) + 2
        r = d.read_blocks(0, count, mode=Mode.SDMA, buffer=buf, sdma_boundary=boundary)
        what = f"SDMA across a {boundary}-byte boundary"
        if count <= WRITTEN_AT or not written:
            expect_pattern(ctx, r.data, 0, what)
        else:
            # The 32 KiB read (66 blocks) covers the blocks the earlier rounds
            # wrote: the card holds those, not the image's pattern (PLS 4.3.4).
            expect_pattern(ctx, (r.data or b"")[:WRITTEN_AT * 512], 0, what)
            end = WRITTEN_AT * 512 + len(written)
            ctx.expect((r.data or b"")[WRITTEN_AT * 512:end] == written,
                       f"{what}: blocks written earlier read back differently")
            expect_pattern(ctx, (r.data or b"")[end:], end // 512, what)
        written = test_data(3 * 512, shift)
        d.write_blocks(WRITTEN_AT, written, mode=Mode.SDMA, buffer=buf,
                       sdma_boundary=boundary)


@scenario("adma2-chains", "data", needs_clock=True)
def _adma_chains(t: Target, ctx: Context) -> None:
    """ADMA2 descriptor tables with short segments, gaps, link and nop
    descriptors and an interrupt descriptor (SD Host Controller 1.13)."""
    d = ready(t)
    variants = [
        AdmaOptions(max_segment=512),
        AdmaOptions(max_segment=100, segment_gap=12),
        AdmaOptions(max_segment=1024, link_every=2),
        AdmaOptions(max_segment=512, nop_every=1),
        AdmaOptions(max_segment=4096, interrupt="last"),
        AdmaOptions(max_segment=700, interrupt="all", end="nop"),
        AdmaOptions(max_segment=65536, end="none"),
    ]
    for i, opts in enumerate(variants):
        r = d.read_blocks(16 + i, 8, mode=Mode.ADMA2, adma=opts)
        expect_pattern(ctx, r.data, 16 + i, f"ADMA2 read with {opts}")
        data = test_data(4 * 512, 100 + i)
        d.write_blocks(64 + 4 * i, data, mode=Mode.ADMA2, adma=opts)


@scenario("adma1-transfers", "data", needs_clock=True)
def _adma1(t: Target, ctx: Context) -> None:
    """ADMA1 (DMA Select 1, SDHC 2.00 1.13.3; reserved since 3.00): 4-byte
    descriptors, each 4 KiB aligned transfer led by a Set Length
    descriptor; one and two whole 4 KiB segments, then a 1536-byte segment
    whose Set length matches the block count."""
    d = ready(t)
    # A controller without ADMA1 Support (Capabilities bit 20, e.g. the Zynq's
    # 0x69ec0080) does not move data for DMA Select 1; the runs are still compared.
    supported = bool(t.read(H.CAPAB.offset, 4) & H.CAPAB.mask("ADMA1"))
    if not supported:
        ctx.note("ADMA1: the controller does not report ADMA1 Support (Capabilities "
                 "bit 20): its transfers are compared with the model, not with the image")
    for i, (count, seg) in enumerate(((8, 4096), (16, 4096))):
        opts = AdmaOptions(max_segment=seg, format="adma1")
        r = d.read_blocks(20 + i, count, mode=Mode.ADMA2, adma=opts)
        if supported:
            expect_pattern(ctx, r.data, 20 + i, f"ADMA1 read of {count} blocks")
        d.write_blocks(90 + 16 * i, test_data(count * 512, 40 + i), mode=Mode.ADMA2, adma=opts)
        d.read_blocks(90 + 16 * i, count)
    short = AdmaOptions(max_segment=4096, format="adma1")
    r = d.read_blocks(22, 3, mode=Mode.ADMA2, adma=short)
    if not supported:
        d.write_blocks(130, test_data(3 * 512, 45), mode=Mode.ADMA2, adma=short)
        return
    ctx.expect(not r.error, "ADMA1 read of 3 blocks, Set length 1536: the transfer failed "
               f"(ADMA Error Status {r.admaerr})", deviation="sdhci.adma1-set-length-ignored")
    w = d.write_blocks(130, test_data(3 * 512, 45), mode=Mode.ADMA2, adma=short)
    ctx.expect(not w.error, "ADMA1 write of 3 blocks, Set length 1536: the transfer failed "
               f"(ADMA Error Status {w.admaerr})", deviation="sdhci.adma1-set-length-ignored")


@scenario("adma2-64bit-transfers", "data", needs_clock=True,
          sdhci={"capareg": H.CAPAREG_DEFAULT | H.CAPAB.mask("BUS64BIT")})
def _adma2_64(t: Target, ctx: Context) -> None:
    """ADMA2 with 96-bit descriptors (DMA Select 3, 1.13.4) on a controller
    that reports the 64-bit system bus: plain, short segments with link
    and nop descriptors, and a read back of what was written."""
    d = ready(t)
    variants = [AdmaOptions(format="adma2-64"),
                AdmaOptions(max_segment=700, link_every=2, nop_every=1, format="adma2-64")]
    for i, opts in enumerate(variants):
        r = d.read_blocks(30 + i, 8, mode=Mode.ADMA2, adma=opts)
        expect_pattern(ctx, r.data, 30 + i, f"ADMA2 64-bit read with {opts}")
        d.write_blocks(120 + 8 * i, test_data(4 * 512, 60 + i), mode=Mode.ADMA2, adma=opts)
        d.read_blocks(120 + 8 * i, 4)


@scenario("adma2-malformed", "data", needs_clock=True)
def _adma_bad(t: Target, ctx: Context) -> None:
    """A descriptor without the valid bit, and a chain that ends before the
    transfer does: ADMA error, ADMAERR state, and recovery by reset (1.13.5)."""
    d = ready(t)
    buf = d.dma_base + 0x20000
    bad = [Adma2Desc.tran(buf, 1024), Adma2Desc.nop(valid=False)]
    d.read_blocks(0, 4, mode=Mode.ADMA2, buffer=buf,
                  adma=AdmaOptions(descriptors=bad, segments=[(buf, 1024)]))
    t.read(H.ADMAERR.offset, 1)
    t.read(H.ADMASYSADDR.offset, 4)
    d.reset(H.SWRST_CMD | H.SWRST_DAT)
    short = [Adma2Desc.tran(buf, 1024, end=True)]
    d.read_blocks(0, 4, mode=Mode.ADMA2, buffer=buf,
                  adma=AdmaOptions(descriptors=short, segments=[(buf, 1024)]))
    t.read(H.ADMAERR.offset, 1)
    d.reset(H.SWRST_CMD | H.SWRST_DAT)
    r = d.read_blocks(1, 1, mode=Mode.ADMA2)
    expect_pattern(ctx, r.data, 1, "ADMA2 read after recovery")


@scenario("adma2-length-mismatch-admaerr", "data", needs_clock=True)
def _adma_mismatch(t: Target, ctx: Context) -> None:
    """A chain that ends before the transfer does (an ADMA Length Mismatch
    Error, 1.13.5, 2.2.30) after the guest wrote ADMAERR itself: what the
    controller adds to the register, and what it keeps of the guest's
    bits; then the same with ADMAERR written 0."""
    d = ready(t)
    buf = d.dma_base + 0x20000
    short = [Adma2Desc.tran(buf, 1024, end=True)]
    for before in (0xF8, 0x04, 0x00):
        t.write(H.ADMAERR.offset, 1, before)
        t.read(H.ADMAERR.offset, 1)
        d.read_blocks(0, 4, mode=Mode.ADMA2, buffer=buf,
                      adma=AdmaOptions(descriptors=short, segments=[(buf, 1024)]))
        t.read(H.ADMAERR.offset, 4)
        d.reset(H.SWRST_CMD | H.SWRST_DAT)
        t.read(H.ADMAERR.offset, 1)


@scenario("adma2-link-parked", "data", needs_clock=True)
def _adma_parked(t: Target, ctx: Context) -> None:
    """A read whose ADMA2 table is one Link descriptor to itself (1.13.4): it
    moves nothing while the controller steps it (QEMU: every 100 ns); guest
    memory written before a tick and after several, then a Tran-End
    descriptor written over the table: the read completes (Transfer
    Complete), the block as the image has it."""
    d = ready(t)
    base, buf = d.dma_base, d.dma_base + 0x10000
    # issued through the registers, the driver's layout, and left running
    t.mem_write(base, H.adma2_desc32(base, 0, H.ADMA_VALID | H.ADMA_ACT_LINK))
    d.select_dma(H.HOSTCTL_DMA_ADMA2_32)
    d.wr(H.ADMASYSADDR, base, 4)
    d.wr(H.BLKSIZE, 512)
    d.wr(H.BLKCNT, 1)
    d.wr(H.ARGUMENT, d.address(3, 512))
    d.layout.issue(d, H.TRNMOD_READ | H.TRNMOD_BLKCNT_EN | H.TRNMOD_DMA,
                   H.cmdreg(17, H.RSP_48, crc=True, idx=True, data=True))
    t.read(H.PRNSTS.offset, 4)
    t.clock_step(50)
    t.mem_write(base + 0x200, bytes(8))  # before the next tick
    t.read(H.ADMASYSADDR.offset, 4)
    t.clock_step(1000)
    t.mem_write(base + 0x200, bytes(8))  # ticks later, no register access between
    t.clock_step(1000)
    t.read(H.NORINTSTS.offset, 2)
    t.mem_write(base, H.adma2_desc32(buf, 512, H.ADMA_VALID | H.ADMA_END | H.ADMA_ACT_TRAN))
    t.clock_step(1000)
    done = t.read(H.NORINTSTS.offset, 2)
    ctx.expect(bool(done & H.NIS_TRNSCMPL), "no Transfer Complete after the Tran-End "
               "descriptor replaced the Link")
    expect_pattern(ctx, t.mem_read(buf, 512), 3, "ADMA2 read after the Link was replaced")
    d.reset(H.SWRST_CMD | H.SWRST_DAT)


@scenario("stop-commands", "data", needs_clock=True)
def _stops(t: Target, ctx: Context) -> None:
    """Multi-block with Auto CMD12, with CMD12 sent by the host, with CMD23
    (pre-defined count) and open-ended with CMD12 (PLS 4.3.3, 4.3.4)."""
    d = ready(t)
    stops: tuple[Stop, ...] = ("auto12", "cmd12", "cmd23")
    for stop in stops:
        for mode in MODES:
            r = d.read_blocks(30, 5, mode=mode, stop=stop)
            if r.cmd == SET_BLOCK_COUNT and r.error:
                # CMD23 is optional (SCR CMD_SUPPORT, PLS 5.6) and absent
                # before PLS 3.00: a card without it (QEMU 7.2's default
                # spec_version 2) does not answer an illegal command (PLS
                # 4.10.1, ILLEGAL_COMMAND), so the read is never sent.
                ctx.note(f"{mode.value} read, stop by {stop}: CMD23 refused, no read")
            else:
                expect_pattern(ctx, r.data, 30, f"{mode.value} read, stop by {stop}")
            d.write_blocks(50, test_data(3 * 512, 7), mode=mode, stop=stop)
    d.send_num_wr_blocks()


@scenario("pio-access-sizes", "data", needs_clock=True)
def _split(t: Target, ctx: Context) -> None:
    """Transfer-size invariance: the same blocks read and written through
    the data port in 1-, 2- and 4-byte accesses give identical data."""
    d = ready(t)
    seen = []
    for access in (1, 2, 4):
        r = d.read_blocks(11, 3, pio_access=access)
        seen.append(r.data)
        data = test_data(2 * 512, access)
        d.write_blocks(20 + 2 * access, data, pio_access=access)
        back = d.read_blocks(20 + 2 * access, 2, pio_access=4 if access != 4 else 1)
        ctx.expect(back.data == data, f"{access}-byte writes read back differently")
    ctx.expect(seen[0] == seen[1] == seen[2], "reads differ by access size")
    expect_pattern(ctx, seen[0], 11, "PIO read")


@scenario("continue-after-block-gap", "data", needs_clock=True)
def _continue_gap(t: Target, ctx: Context) -> None:
    """A three-block PIO read (CMD18) asked to stop at the block gap while
    its first block is in the buffer, then Continue Request (2.2.12: the
    transfer resumes, PRNSTS Read Transfer Active and DAT Line Active set
    again, 2.2.9), the second block read, Continue again for the third;
    PRNSTS and both statuses after each step, every data port read
    compared."""
    ready(t)
    ops.start(t, {"index": 18, "bs": 512, "count": 3, "offset": 0, "block": 4, "mode": "pio",
                  "auto12": False, "blkcnt_en": True, "boundary": 0})
    t.clock_step(1_000_000)
    t.write(H.BLKGAP.offset, 1, H.BLKGAP_STOP)
    for _block in range(3):
        t.read(H.PRNSTS.offset, 4)
        for _ in range(512 // 4):
            t.read(H.BDATA.offset, 4)
        t.read(H.PRNSTS.offset, 4)
        t.read(H.NORINTSTS.offset, 4)
        t.write(H.NORINTSTS.offset, 2, H.NIS_BLKGAP | H.NIS_RBUFRDY)
        t.write(H.BLKGAP.offset, 1, H.BLKGAP_CONTINUE)
        t.clock_step(1_000_000)
        t.read(H.PRNSTS.offset, 4)
        t.write(H.BLKGAP.offset, 1, H.BLKGAP_STOP)
    t.read(H.NORINTSTS.offset, 4)
    t.irq_level()


@scenario("stop-at-block-gap", "data", needs_clock=True)
def _block_gap(t: Target, ctx: Context) -> None:
    """Stop At Block Gap Request set before a multi-block PIO read, then
    Continue Request (2.2.12); status and PRNSTS at each step."""
    d = ready(t)
    t.write(H.BLKGAP.offset, 1, H.BLKGAP_STOP)
    d.read_blocks(0, 4)
    t.read(H.NORINTSTS.offset, 2)
    t.read(H.PRNSTS.offset, 4)
    t.write(H.BLKGAP.offset, 1, H.BLKGAP_CONTINUE)
    t.read(H.PRNSTS.offset, 4)
    t.read(H.NORINTSTS.offset, 2)
