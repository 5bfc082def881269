"""Systematic boundaries: each numeric limit at limit-1, limit and limit+1.

CMD16 block length around 512 (PLS 4.3.2), the Block Size and Block Count
registers at their ends (SD Host Controller 2.2.2, 2.2.3), transfers of 1,
511 and 512 bytes, the last blocks of the card and one past them (PLS
4.3.3, 4.10.1 OUT_OF_RANGE), and SDMA transfers ending one block before, at
and one block after a 4 KiB buffer boundary (2.2.2, 2.2.17).  What the
recipe or the specification fixes is expected here; the rest is compared
in lockstep.  ADMA2 descriptors of length 1, 65535 and 0 (65536) too (1.13.4),
and cards either side of the 2 GiB SDSC limit (PLS 5.3).
"""

from __future__ import annotations

from harness import images
from harness.driver import host as D
from harness.driver.adma import AdmaOptions
from harness.driver.host import HostDriver
from harness.driver.results import RESPONSE_ENCODING, CommandResult, Mode
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.scenarios.common import expect_bytes, expect_pattern, ready, test_data
from harness.scenarios.registry import Context, card_size_accepted, scenario
from harness.target import Target

#: The SDSC data block limit (PLS 4.3.2: CMD16 at most 512 bytes).
MAX_BLOCK = 512
#: Block Count is a 16-bit register (SD Host Controller 2.2.3).
MAX_BLKCNT = 0xFFFF
#: The SDMA buffer boundary used here (BLKSIZE 14:12 = 0, 2.2.2).
SDMA_4K = 4096
OUT_OF_RANGE_KEY = "sd.out-of-range-as-address-error"


def _statuses(res: CommandResult) -> int:
    """Card status bits in a command's R1, its related commands' R1 and its
    Auto CMD12 response (errors typed X show up in a later response)."""
    bits = res.r1 | (res.auto_cmd12_response or 0)
    for r in res.related:
        bits |= r.r1
    return bits


@scenario("boundary-cmd16-blocklen", "boundaries", needs_clock=True)
def _cmd16(t: Target, ctx: Context) -> None:
    """CMD16 at 511, 512 and 513 on an SDSC card: 513 is BLOCK_LEN_ERROR
    (PLS 4.3.2, 4.10.1), the others are accepted and used by CMD17."""
    d = ready(t)
    current = MAX_BLOCK
    for length in (MAX_BLOCK - 1, MAX_BLOCK, MAX_BLOCK + 1):
        r = d.cmd(D.SET_BLOCKLEN, length)
        s = d.send_status()
        bad = bool((r.r1 | s.r1) & S.BLOCK_LEN_ERROR)
        if length > MAX_BLOCK:
            ctx.expect(bad, f"CMD16({length}): no BLOCK_LEN_ERROR")
        else:
            ctx.expect(not bad, f"CMD16({length}): BLOCK_LEN_ERROR on a valid length")
            current = length
        # A refused length leaves the previous one in force (PLS 4.3.2).
        d.card.block_len = current
        rd = d.read_blocks(0, 1)
        ctx.expect(rd.ok, f"read of {current} bytes after CMD16({length}) failed")
        expect_bytes(ctx, rd.data, 0, f"{current}-byte read after CMD16({length})")
    d.set_blocklen(MAX_BLOCK)


@scenario("boundary-blksize-register", "boundaries")
def _blksize(t: Target, ctx: Context) -> None:
    """Block Size register at 0, 1, 2047, 2048 and 2049, and with every bit
    written (2.2.2: 12-bit size, 3-bit SDMA boundary, bit 15 reserved)."""
    d = HostDriver(t)
    d.setup()
    for value in (0, 1, 2047, 2048, 2049, 0x0FFF, 0x7FFF, 0xFFFF):
        d.wr(H.BLKSIZE, value)
        d.rd(H.BLKSIZE)
    d.wr(H.BLKSIZE, 0)


@scenario("boundary-block-size-transfers", "boundaries", needs_clock=True)
def _sizes(t: Target, ctx: Context) -> None:
    """Single-block reads of 1, 511 and 512 bytes (SDSC partial blocks,
    byte addressing: PLS 4.3.3), each inside one 512-byte block, and a
    511-byte block that crosses one (READ_BL_MISALIGN, compared only)."""
    d = ready(t)
    for bs, block, inside in ((1, 7, True), (511, 0, True), (511, 1, False),
                              (512, 3, True)):
        d.set_blocklen(bs)
        r = d.read_blocks(block, 1, block_size=bs)
        if inside:
            ctx.expect(r.ok, f"{bs}-byte read of block {block} failed")
            expect_bytes(ctx, r.data, block * bs, f"{bs}-byte read of block {block}")
        d.send_status()
    d.set_blocklen(MAX_BLOCK)


@scenario("boundary-blkcnt", "boundaries", needs_clock=True)
def _blkcnt(t: Target, ctx: Context) -> None:
    """Block Count 0, 1, 2 and 65535 with Block Count Enable: a CMD18 is
    started, one block is read when the buffer is ready, Block Count is
    read, and the transfer is stopped by CMD12 and a DAT reset (2.2.3)."""
    d = ready(t)
    for count in (0, 1, 2, MAX_BLKCNT):
        d.wr(H.BLKCNT, count)
        d.rd(H.BLKCNT)
    d.wr(H.BLKCNT, 0)
    trnmod = H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN
    rsp, crc, idx = RESPONSE_ENCODING[S.Resp.R1]
    for count in (0, 1, 2, MAX_BLKCNT):
        d.wr(H.BLKSIZE, H.blksize_value(MAX_BLOCK))
        d.wr(H.BLKCNT, count)
        # Issued by hand: Data Present set, the data phase left to the loop.
        d.wr(H.ARGUMENT, d.address(4))
        d.wr(H.TRNMOD, trnmod)
        d.wr(H.CMDREG, H.cmdreg(D.READ_MULTIPLE_BLOCK, rsp, crc=crc, idx=idx, data=True))
        d.wait_status("cmd", H.NIS_CMDCMPL)
        d.clear_status(H.NIS_CMDCMPL)
        d.step(d.poll_ns * 10)
        ready_ = bool(d.rd(H.PRNSTS) & H.PRNSTS_BUFRDRDY)
        if ready_:
            data = b"".join(t.read(H.BDATA.offset, 4).to_bytes(4, "little")
                            for _ in range(MAX_BLOCK // 4))
            expect_pattern(ctx, data, 4, f"first block with Block Count {count}")
            d.step(d.poll_ns * 10)
        left = d.rd(H.BLKCNT)
        nis = t.read(H.NORINTSTS.offset, 2)
        ctx.note(f"Block Count {count}: buffer ready {ready_}, Block Count then {left}, "
                 f"NORINTSTS {nis:#06x}")
        if count == 0:
            # 2.2.3: with Block Count Enable, 0 is "stop count": no block moves.
            ctx.expect(not ready_, "Block Count 0: a block was transferred")
        else:
            ctx.expect(ready_, f"Block Count {count}: no block in the buffer")
        if count == 1:
            ctx.expect(bool(nis & H.NIS_TRNSCMPL),
                       "Block Count 1: no Transfer Complete after the block (2.2.17)")
        d.stop_transmission()
        d.reset(H.SWRST_DAT)
        d.wr(H.BLKCNT, 0)
        d.clear_status(0xFFFF & ~H.NIS_CARDINT, 0xFFFF)
        d.send_status()


@scenario("boundary-last-blocks", "boundaries", needs_clock=True)
def _last(t: Target, ctx: Context) -> None:
    """The last block, two blocks ending exactly at the end of the card,
    one block past the end and two starting at the last (PLS 4.3.3: an
    address past the capacity is OUT_OF_RANGE, 4.10.1); a write of the
    last block and of the one past it (4.3.4)."""
    d = ready(t)
    n = d.card.capacity // 512
    r = d.read_blocks(n - 1, 1)
    expect_pattern(ctx, r.data, n - 1, "last block")
    r = d.read_blocks(n - 2, 2)
    expect_pattern(ctx, r.data, n - 2, "two blocks ending at the end")
    for first, count in ((n, 1), (n - 1, 2)):
        r = d.read_blocks(first, count)
        s = d.send_status()
        ctx.expect(bool((_statuses(r) | s.r1) & S.OUT_OF_RANGE),
                   f"read of {count} block(s) from {first} (card has {n}): no OUT_OF_RANGE",
                   deviation=OUT_OF_RANGE_KEY)
        if count > 1:
            expect_pattern(ctx, (r.data or b"")[:512], first, "last block before the end")
    r = d.read_blocks(n - 1, 1)
    expect_pattern(ctx, r.data, n - 1, "last block after the errors")
    # Writes either side of the end (PLS 4.3.4): the last block takes the
    # data, a block past the end is refused and the card is unchanged.
    data = test_data(512, n)
    d.write_blocks(n - 1, data)
    ctx.expect(d.read_blocks(n - 1, 1).data == data, "last block: data written not read back")
    w = d.write_blocks(n, test_data(512, n + 1))
    s = d.send_status()
    ctx.expect(bool((_statuses(w) | s.r1) & S.OUT_OF_RANGE),
               f"write of block {n} (card has {n}): no OUT_OF_RANGE",
               deviation=OUT_OF_RANGE_KEY)
    t.image_read((n - 1) * 512, 512)


@scenario("boundary-sdma-4k", "boundaries", needs_clock=True)
def _sdma(t: Target, ctx: Context) -> None:
    """SDMA reads from a 4 KiB-aligned buffer ending one block before, at
    and one block after the 4 KiB boundary: one DMA Interrupt only when
    the boundary is crossed (2.2.17), data in place (3.7.2.3)."""
    d = ready(t)
    per = SDMA_4K // MAX_BLOCK
    for count in (per - 1, per, per + 1):
        r = d.read_blocks(6, count, mode=Mode.SDMA, sdma_boundary=SDMA_4K)
        want_data = images.recipe(ctx.image).expected(6 * 512, count * 512)
        ctx.expect(r.data == want_data,
                   f"SDMA read of {count} blocks: data differs from the image's pattern",
                   deviation="sdhci.sdma-sysad-ignored-while-active" if count > per else None)
        d.rd(H.SDMASYSAD)
        d.rd(H.BLKCNT)
        if count != per:
            # Ending exactly at the boundary is left to lockstep: whether
            # the boundary is "reached" then is not spelled out.
            want = 1 if count > per else 0
            ctx.expect(r.dma_interrupts == want,
                       f"SDMA read of {count} blocks: {r.dma_interrupts} DMA "
                       f"Interrupts, {want} expected",
                       deviation="sdhci.sdma-dmaint-at-end")


#: The largest ADMA2 descriptor length, written as 0 (SD Host Controller 1.13.4).
ADMA2_MAX_LEN = 0x10000


@scenario("boundary-adma2-lengths", "boundaries", needs_clock=True)
def _adma2(t: Target, ctx: Context) -> None:
    """ADMA2 transfer descriptors of length 1, 65535 and 0 (meaning 65536,
    1.13.4), each followed by what completes the transfer: data lands in
    the segments in order (3.7.2.4)."""
    d = ready(t)
    buf = d.dma_base + 0x100000
    far = buf + 2 * ADMA2_MAX_LEN
    cases: tuple[tuple[int, list[tuple[int, int]]], ...] = (
        (1, [(buf, 1), (far, MAX_BLOCK - 1)]),
        (ADMA2_MAX_LEN // MAX_BLOCK, [(buf, ADMA2_MAX_LEN - 1), (far, 1)]),
        (ADMA2_MAX_LEN // MAX_BLOCK, [(buf, ADMA2_MAX_LEN)]),
    )
    for count, segs in cases:
        r = d.read_blocks(8, count, mode=Mode.ADMA2, buffer=buf,
                          adma=AdmaOptions(segments=segs))
        lens = "+".join(str(n) for _, n in segs)
        expect_pattern(ctx, r.data, 8, f"ADMA2 read through segments of {lens} bytes")
        t.read(H.ADMAERR.offset, 1)
        d.rd(H.ADMASYSADDR, 4)


for _image, _sdhc in (("sdsc-2g", False), ("sdhc-2g512k", True)):

    @scenario(f"boundary-capacity-{_image}", "boundaries", image=_image, needs_clock=True,
              requires=(card_size_accepted(_image),), variant=f"on the {_image} card")
    def _capacity(t: Target, ctx: Context, _sdhc: bool = _sdhc) -> None:
        """Either side of the SDSC limit, 2 GiB (PLS 5.3): OCR CCS and the
        CSD version give the class, the CSD gives the image's size, and the
        last block reads back while one past it does not."""
        d = ready(t)
        size = images.recipe(ctx.image).size
        cls = "SDHC" if _sdhc else "SDSC"
        ctx.expect(S.capacity_class(size) == cls, f"{size} bytes is not {cls}")
        ctx.expect(d.card.high_capacity == _sdhc, f"{cls} card: OCR CCS {d.card.high_capacity}")
        ctx.expect((d.card.csd_register is S.CSD_V2) == _sdhc,
                   f"{cls} card: CSD_STRUCTURE {d.card.csd_fields()['CSD_STRUCTURE']}")
        ctx.expect(d.card.capacity == size,
                   f"CSD capacity {d.card.capacity} bytes, image {size} bytes")
        f = d.card.csd_fields()
        ctx.note(f"{ctx.image}: CSD " + ", ".join(
            f"{k} {f[k]}" for k in ("CSD_STRUCTURE", "READ_BL_LEN", "C_SIZE", "C_SIZE_MULT")
            if k in f))
        n = size // 512
        expect_pattern(ctx, d.read_blocks(n - 1, 1).data, n - 1, "last block")
        r = d.read_blocks(n, 1)
        ctx.expect(r.error or bool((r.r1 | d.send_status().r1)
                                   & (S.OUT_OF_RANGE | S.ADDRESS_ERROR)),
                   "read one block past the end: no error")
