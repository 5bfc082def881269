"""The cases of Linux's mmc_test (drivers/mmc/core/mmc_test.c) that apply to
an SD card behind an SDHCI controller, as lockstep scenarios.

Numbers are mmc_test's test numbers; the performance cases (23-44) are
benchmarks here (``sdqtest bench``), their data paths are covered by the
512 KiB sequential cases below.  Written from mmc_test's documented case
list, not its code.
"""

from __future__ import annotations

from harness.driver import host as D
from harness.driver.adma import AdmaOptions
from harness.driver.results import Mode, Transfer
from harness.hwdefs import sdhci as H
from harness.hwdefs.sd import Resp
from harness.scenarios.common import expect_bytes, expect_pattern, ready, test_data
from harness.scenarios.registry import Context, scenario
from harness.target import Target

MODES = (Mode.PIO, Mode.SDMA, Mode.ADMA2)
#: The last 64 KiB of the target's 128 MiB of RAM, from where its RAM starts.
HIGH_BUFFER = (128 << 20) - (64 << 10)


@scenario("mmc_test-01-04-basic", "mmc_test", needs_clock=True)
def _basic(t: Target, ctx: Context) -> None:
    """1-4: one 512-byte block written and read, with and without checking."""
    d = ready(t)
    for i, mode in enumerate(MODES):
        data = test_data(512, i)
        d.write_blocks(300 + i, data, mode=mode)
        back = d.read_blocks(300 + i, 1, mode=mode)
        ctx.expect(back.data == data, f"basic {mode.value} write read back")
        expect_pattern(ctx, d.read_blocks(7, 1, mode=mode).data, 7, f"basic {mode.value} read")


@scenario("mmc_test-05-06-multi-block", "mmc_test", needs_clock=True)
def _multi(t: Target, ctx: Context) -> None:
    """5-6: eight blocks in one multi-block write and read."""
    d = ready(t)
    for i, mode in enumerate(MODES):
        data = test_data(8 * 512, 10 + i)
        d.write_blocks(320 + 8 * i, data, mode=mode)
        ctx.expect(d.read_blocks(320 + 8 * i, 8, mode=mode).data == data,
                   f"multi-block {mode.value} read back")


def _sized(t: Target, ctx: Context, sizes: list[int]) -> None:
    """Reads of every size first (the image is still as the recipe made it),
    then writes of every size."""
    d = ready(t)
    for size in sizes:
        d.set_blocklen(size)
        r = d.read_blocks(2, 1, block_size=size)
        if r.ok:
            expect_bytes(ctx, r.data, 2 * size, f"{size}-byte block read")
    for size in sizes:
        d.set_blocklen(size)
        d.write_blocks(2, test_data(size, size), block_size=size)
        d.send_status()
    d.set_blocklen(512)


@scenario("mmc_test-07-08-power-of-two-blocks", "mmc_test", needs_clock=True)
def _pow2(t: Target, ctx: Context) -> None:
    """7-8: block lengths 1, 2, 4 ... 256 (CMD16), written and read."""
    _sized(t, ctx, [1 << k for k in range(9)])


@scenario("mmc_test-09-10-weird-sized-blocks", "mmc_test", needs_clock=True)
def _weird(t: Target, ctx: Context) -> None:
    """9-10: block lengths 3, 10, 17 ... 507 (step 7), written and read."""
    _sized(t, ctx, list(range(3, 512, 7)))


@scenario("mmc_test-11-14-badly-aligned", "mmc_test", needs_clock=True)
def _aligned(t: Target, ctx: Context) -> None:
    """11-14: single and multi-block transfers from buffers 0..7 bytes off
    alignment, by SDMA (ADMA2 data must be 4-byte aligned: only the
    aligned offsets are tried there)."""
    d = ready(t)
    for mode, offsets in ((Mode.SDMA, range(8)), (Mode.ADMA2, (0, 4))):
        for off in offsets:
            buf = d.dma_base + 0x30000 + off
            for count in (1, 4):
                data = test_data(512 * count, off * 10 + count)
                d.write_blocks(400, data, mode=mode, buffer=buf)
                r = d.read_blocks(400, count, mode=mode, buffer=buf + 0x8000)
                ctx.expect(r.data == data, f"{mode.value} +{off}: {count} blocks read back")


def _xfer_size(t: Target, ctx: Context, read: bool, midway: bool) -> None:
    """The controller and the card disagree on the transfer's length."""
    d = ready(t)
    for mode in MODES:
        if midway:
            # CMD18/CMD25 with Block Count 2 but no stop: the card would go on.
            tr = Transfer(read=read, block_count=2, mode=mode, multi=True,
                          data=None if read else test_data(1024, 3))
            index = D.READ_MULTIPLE_BLOCK if read else D.WRITE_MULTIPLE_BLOCK
        else:
            # CMD17/CMD24 (one block) while the controller expects two.
            tr = Transfer(read=read, block_count=2, mode=mode, multi=True,
                          data=None if read else test_data(1024, 4))
            index = D.READ_SINGLE_BLOCK if read else D.WRITE_BLOCK
        d.command(index, d.address(500), Resp.R1, tr)
        d.send_status()
        d.stop_transmission()
        d.reset(H.SWRST_CMD | H.SWRST_DAT)
        d.send_status()


def _make_xfer(n: int, read: bool, midway: bool) -> None:
    def run(t: Target, ctx: Context) -> None:
        _xfer_size(t, ctx, read, midway)

    run.__doc__ = (f"{n}: proper transfer size at {'read' if read else 'write'} "
                   f"({'midway' if midway else 'start'} failure).")
    scenario(f"mmc_test-{n}-xfer-size-{'read' if read else 'write'}-"
             f"{'midway' if midway else 'start'}", "mmc_test", needs_clock=True)(run)


for _n, _read, _midway in ((15, False, False), (16, True, False), (17, False, True),
                           (18, True, True)):
    _make_xfer(_n, _read, _midway)


@scenario("mmc_test-19-22-high-memory", "mmc_test", needs_clock=True)
def _high(t: Target, ctx: Context) -> None:
    """19-22: DMA to and from the top of guest RAM, single and multi-block."""
    d = ready(t)
    high = d.ram_base + HIGH_BUFFER
    for mode in (Mode.SDMA, Mode.ADMA2):
        for count in (1, 8):
            data = test_data(512 * count, count)
            d.write_blocks(600, data, mode=mode, buffer=high)
            r = d.read_blocks(600, count, mode=mode, buffer=high + 0x8000 - 512 * count)
            ctx.expect(r.data == data, f"{mode.value} high memory, {count} blocks")


@scenario("mmc_test-23-26-sequential", "mmc_test", needs_clock=True)
def _seq(t: Target, ctx: Context) -> None:
    """23-26 (as correctness, not speed): sequential reads and writes of
    256 KiB contiguous and 64 KiB into scattered 4 KiB pages (ADMA2 segments
    with gaps); mmc_test moves 512 KiB, the data path is the same."""
    d = ready(t)
    scattered = AdmaOptions(max_segment=4096, segment_gap=4096)
    for opts, blocks in ((None, 512), (scattered, 128)):
        r = d.read_blocks(1024, blocks, mode=Mode.ADMA2, adma=opts)
        expect_pattern(ctx, r.data, 1024, f"{blocks * 512 >> 10} KiB sequential read")
        d.write_blocks(4096, test_data(blocks * 512, 5), mode=Mode.ADMA2, adma=opts)
    d.read_blocks(4096, 512, mode=Mode.SDMA)


@scenario("mmc_test-45-reset", "mmc_test", needs_clock=True)
def _reset(t: Target, ctx: Context) -> None:
    """45: reset the card (CMD0) in transfer state and bring it up again."""
    d = ready(t)
    d.read_blocks(0, 2)
    d.cmd(D.GO_IDLE_STATE, 0)
    d.send_status()
    d.init_card()
    expect_pattern(ctx, d.read_blocks(0, 2).data, 0, "read after re-initialisation")


for _cmd23 in (False, True):

    @scenario(f"mmc_test-{48 if _cmd23 else 46}-{49 if _cmd23 else 47}-commands-during-"
              f"transfers{'-cmd23' if _cmd23 else ''}", "mmc_test", needs_clock=True,
              params={"cmd23": _cmd23},
              variant=f"here {48 if _cmd23 else 46}-{49 if _cmd23 else 47}, "
              f"{'with' if _cmd23 else 'without'} CMD23")
    def _during(t: Target, ctx: Context) -> None:
        """46-49: CMD13 while a multi-block read and write are in progress,
        with and without CMD23 (PLS 4.3.3: CMD13 is allowed in sending and
        receiving data states)."""
        d = ready(t)
        cmd23 = bool(ctx.params["cmd23"])
        for read in (True, False):
            if cmd23:
                d.cmd(D.SET_BLOCK_COUNT, 4)
            t.write(H.BLKSIZE.offset, 2, 512)
            t.write(H.BLKCNT.offset, 2, 4)
            t.write(H.ARGUMENT.offset, 4, d.address(700))
            mode = (H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN
                    | (H.TRNMOD_READ if read else 0))
            t.write(H.TRNMOD.offset, 2, mode)
            index = D.READ_MULTIPLE_BLOCK if read else D.WRITE_MULTIPLE_BLOCK
            t.write(H.CMDREG.offset, 2, H.cmdreg(index, H.RSP_48, crc=True, idx=True,
                                                 data=True))
            for _ in range(128):  # half a block through the data port
                if read:
                    t.read(H.BDATA.offset, 4)
                else:
                    t.write(H.BDATA.offset, 4, 0x5A5A5A5A)
            d.send_status()
            t.read(H.PRNSTS.offset, 4)
            d.stop_transmission()
            d.reset(H.SWRST_CMD | H.SWRST_DAT)
            d.send_status()
