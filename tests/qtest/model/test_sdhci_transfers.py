"""SDHCI model data transfers: PIO, SDMA, ADMA2 (and ADMA1), auto CMD12,
block gap, soft resets mid-transfer, card insertion and removal.

Expected data is the stub card's image (or what was written into guest
memory); expected register effects follow the SD Host Controller
Simplified Specification 3.00 and, where QEMU departs from it, the
deviation named in the test.
"""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci as H
from harness.model.target import ModelTarget
from harness.profile import BuildProfile
from tests.qtest.model.sdhci_support import (
    HAVE_SDCARD,
    StubCard,
    clear_status,
    command,
    eis,
    nis,
    pio_read,
    pio_write,
    power_up,
    prnsts,
    setup_blocks,
    stub_target,
)

OLD = BuildProfile(version=(7, 2, 0), sdhci_properties={"sd-spec-version": "2"})
BUF = 0x100000
TABLE = 0x80000
ACTIVE = H.PRNSTS_READ_ACTIVE | H.PRNSTS_WRITE_ACTIVE | H.PRNSTS_DATINHIBIT


def _pattern(n: int, seed: int = 1) -> bytes:
    return bytes((i * 31 + seed * 17 + (i >> 8)) & 0xFF for i in range(n))


# -- PIO ---------------------------------------------------------------------------


@pytest.mark.parametrize("block_size", [1, 2, 3, 7, 64, 511, 512])
@pytest.mark.parametrize("count", [1, 2, 5])
def test_pio_read_write(block_size: int, count: int) -> None:
    t, card = stub_target()
    power_up(t)
    for width in (1, 2, 4):
        clear_status(t)
        data = pio_read(t, block_size, count, 4097, width=width)
        assert data == bytes(card.image[4097:4097 + block_size * count])
        assert prnsts(t) & ACTIVE == 0
        clear_status(t)
        payload = _pattern(block_size * count, width)
        pio_write(t, payload, block_size, 9001, width=width)
        assert card.image_read(9001, len(payload)) == payload
        assert prnsts(t) & ACTIVE == 0


def test_pio_multi_auto_cmd12_and_blkcnt() -> None:
    t, card = stub_target()
    power_up(t)
    pio_read(t, 512, 3, 0)
    assert card.commands[-1] == (12, 0)
    assert t.read(0x1C, 4) == 0x900                   # Auto CMD12 response in RSPREG3
    assert t.read(0x06, 2) == 0


def test_pio_read_overrun_word_ends_block() -> None:
    """A longword read that crosses the end of a 3-byte block returns only
    the block's bytes; the next block starts at the next access."""
    t, card = stub_target()
    power_up(t)
    setup_blocks(t, 3, 2)
    command(t, 18, 0, data=True, trnmod=H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    assert t.read(0x20, 4) == int.from_bytes(card.image[0:3], "little")
    assert t.read(0x20, 4) == int.from_bytes(card.image[3:6], "little")
    assert nis(t) & H.NIS_TRNSCMPL


def test_pio_non_sequential_port_access_ignored() -> None:
    t, card = stub_target()
    power_up(t)
    setup_blocks(t, 8, 1)
    command(t, 17, 0, data=True, trnmod=H.TRNMOD_READ)
    assert t.read(0x21, 1) == 0                       # expected byte 0 first
    assert t.read(0x20, 1) == card.image[0]
    assert t.read(0x21, 1) == card.image[1]


@pytest.mark.parametrize("strict", [False, True])
def test_pio_read_without_card_data(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    setup_blocks(t, 512, 1)
    command(t, 13, 0, data=True, trnmod=H.TRNMOD_READ)  # card answers, sends nothing
    if strict:
        assert eis(t) == H.EIS_DATTOUT and not prnsts(t) & ACTIVE
    else:
        assert prnsts(t) & H.PRNSTS_WRITE_ACTIVE and nis(t) & H.NIS_WBUFRDY


def test_stop_at_block_gap_and_continue() -> None:
    t, card = stub_target()
    power_up(t)
    setup_blocks(t, 16, 4)
    command(t, 18, 0, data=True, trnmod=H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    t.write(0x2A, 1, H.BLKGAP_STOP)
    got = bytearray()
    for _ in range(4):
        got += t.read(0x20, 4).to_bytes(4, "little")
    # The next block was fetched with the stop pending: Block Gap Event.
    assert nis(t) & H.NIS_BLKGAP
    assert not prnsts(t) & H.PRNSTS_DATLINEACTIVE
    for _ in range(4):
        got += t.read(0x20, 4).to_bytes(4, "little")
    assert nis(t) & H.NIS_TRNSCMPL                    # stopped: transfer ends at the gap
    assert t.read(0x06, 2) == 2
    t.write(0x2A, 1, H.BLKGAP_CONTINUE)
    assert prnsts(t) & H.PRNSTS_BUFRDRDY
    for _ in range(8):
        got += t.read(0x20, 4).to_bytes(4, "little")
    assert bytes(got) == bytes(card.image[0:64])
    assert t.read(0x06, 2) == 0


# -- SDMA ------------------------------------------------------------------------------


def _sdma(t: ModelTarget, index: int, arg: int, addr: int, block_size: int, count: int,
          read: bool, boundary: int = 4096) -> None:
    t.write(0x00, 4, addr)
    setup_blocks(t, block_size, count, boundary)
    mode = H.TRNMOD_DMA | H.TRNMOD_BLKCNT_EN | (H.TRNMOD_READ if read else 0)
    if count > 1:
        mode |= H.TRNMOD_MULTI | H.TRNMOD_ACMD12
    command(t, index, arg, data=True, trnmod=mode)


@pytest.mark.parametrize("block_size", [1, 3, 200, 512])
@pytest.mark.parametrize("count", [1, 4])
@pytest.mark.parametrize("misalign", [0, 1, 3])
def test_sdma_read_write(block_size: int, count: int, misalign: int) -> None:
    t, card = stub_target()
    power_up(t)
    addr = BUF + 0x10 + misalign
    n = block_size * count
    _sdma(t, 18 if count > 1 else 17, 100, addr, block_size, count, True)
    assert nis(t) & H.NIS_TRNSCMPL
    assert t.mem_read(addr, n) == bytes(card.image[100:100 + n])
    assert t.read(0x00, 4) == (addr + n if count > 1 else addr)
    assert t.read(0x06, 2) == 0
    clear_status(t)
    payload = _pattern(n, block_size)
    t.mem_write(addr, payload)
    _sdma(t, 25 if count > 1 else 24, 7000, addr, block_size, count, False)
    assert nis(t) & H.NIS_TRNSCMPL
    assert card.image_read(7000, n) == payload


@pytest.mark.parametrize("strict", [False, True])
def test_sdma_boundary_stop(strict: bool) -> None:
    """8 blocks of 512 from 2 KiB below a 4 KiB boundary: SDMA stops at the
    boundary with DMA Interrupt (2.2.2).  QEMU then ignores the SDMASYSAD
    write that should resume ("sdhci.sdma-sysad-ignored-while-active")."""
    t, card = stub_target(strict=strict)
    power_up(t)
    start = BUF                                       # boundary aligned
    _sdma(t, 18, 0, start, 512, 8, True, boundary=4096)
    assert t.read(0x06, 2) == 0                       # 4 KiB = all 8 blocks exactly
    clear_status(t)
    _sdma(t, 18, 0, start, 512, 12, True, boundary=4096)
    assert nis(t) & H.NIS_DMAINT and not nis(t) & H.NIS_TRNSCMPL
    assert t.read(0x00, 4) == start + 4096 and t.read(0x06, 2) == 4
    assert prnsts(t) & H.PRNSTS_READ_ACTIVE
    t.write(0x30, 2, H.NIS_DMAINT)
    t.write(0x00, 4, start + 0x10000)
    if strict:
        assert nis(t) & H.NIS_TRNSCMPL and t.read(0x06, 2) == 0
        assert t.mem_read(start + 0x10000, 2048) == bytes(card.image[4096:6144])
    else:
        assert t.read(0x00, 4) == start + 4096        # write dropped: stuck
        assert nis(t) == H.NIS_CMDCMPL and t.read(0x06, 2) == 4
        t.write(0x2F, 1, H.SWRST_DAT)
        assert not prnsts(t) & ACTIVE


@pytest.mark.parametrize("strict", [False, True])
def test_sdma_unaligned_start_ignores_boundary(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    start = BUF + 4096 - 100                          # crosses a 4 KiB boundary
    _sdma(t, 18, 0, start, 64, 4, True, boundary=4096)
    if strict:
        assert nis(t) & H.NIS_DMAINT and t.read(0x00, 4) == BUF + 4096
        assert t.read(0x06, 2) == 3 and t.mem_read(start, 100) == bytes(card.image[0:100])
    else:
        assert nis(t) & H.NIS_TRNSCMPL and t.read(0x00, 4) == start + 256
        assert t.mem_read(start, 256) == bytes(card.image[0:256])


def test_sdma_dmaint_by_version() -> None:
    new, _ = stub_target()
    old, _ = stub_target(profile=OLD)
    for t, dmaint in ((new, True), (old, False)):
        power_up(t)
        _sdma(t, 17, 0, BUF, 512, 1, True)
        assert bool(nis(t) & H.NIS_DMAINT) is dmaint
        clear_status(t)
        _sdma(t, 18, 0, BUF, 512, 2, True)
        assert bool(nis(t) & H.NIS_DMAINT) is dmaint


def test_sdma_sysad_write_starts_transfer() -> None:
    """QEMU starts SDMA on an SDMASYSAD top-byte write with no command
    ("sdhci.sdma-sysad-starts-transfer"); one block in multi mode takes the
    multi path before 10.0 (needs Block Count Enable) and the single path
    after."""
    for profile, moved in ((None, True), (OLD, False)):
        t, card = stub_target(profile=profile)
        power_up(t)
        card.state, card.pos, card.multi = "sending", 0, True
        t.write(0x0C, 2, H.TRNMOD_DMA | H.TRNMOD_READ | H.TRNMOD_MULTI)
        setup_blocks(t, 16, 1)
        t.write(0x00, 4, BUF)
        assert (t.mem_read(BUF, 16) == bytes(card.image[0:16])) is moved
        assert bool(nis(t) & H.NIS_TRNSCMPL) is moved
    t, card = stub_target(strict=True)
    power_up(t)
    t.write(0x0C, 2, H.TRNMOD_DMA | H.TRNMOD_READ)
    setup_blocks(t, 16, 1)
    t.write(0x00, 4, BUF)
    assert nis(t) == 0


# -- ADMA2 --------------------------------------------------------------------------------


def _adma(t: ModelTarget, descs: list[bytes], *, read: bool, block_size: int, count: int,
          arg: int = 0, dma: int = H.HOSTCTL_DMA_ADMA2_32, cnt_en: bool = True) -> None:
    t.mem_write(TABLE, b"".join(descs))
    t.write(0x58, 8, TABLE)
    t.write(0x28, 1, dma)
    setup_blocks(t, block_size, count)
    mode = H.TRNMOD_DMA | (H.TRNMOD_BLKCNT_EN if cnt_en else 0)
    mode |= H.TRNMOD_READ if read else 0
    if count > 1:
        mode |= H.TRNMOD_MULTI
    index = (18 if count > 1 else 17) if read else (25 if count > 1 else 24)
    command(t, index, arg, data=True, trnmod=mode)


def _run(t: ModelTarget, limit: int = 200) -> None:
    for _ in range(limit):
        if nis(t) & (H.NIS_TRNSCMPL | H.NIS_ERRINT):
            return
        t.clock_step(None)


def _segments(total: int, sizes: list[int]) -> list[tuple[int, int]]:
    segs, addr, left, i = [], BUF, total, 0
    while left:
        n = min(sizes[i % len(sizes)], left)
        segs.append((addr, n))
        addr += (n + 0x40 + 4 * (i % 3) + 3) & ~3     # scattered; ADMA2 needs 4-byte alignment
        left -= n
        i += 1
    return segs


def _tran(addr: int, n: int, *, end: bool = False, intr: bool = False) -> bytes:
    attr = H.ADMA_VALID | H.ADMA_ACT_TRAN | (H.ADMA_END if end else 0)
    return H.adma2_desc32(addr, n, attr | (H.ADMA_INT if intr else 0))


@pytest.mark.parametrize("block_size,count,sizes", [
    (512, 1, [512]),
    (512, 4, [100, 300, 624, 1024]),
    (7, 9, [5, 11, 47]),
    (1, 3, [1]),
    (333, 3, [999]),
])
def test_adma2_scatter_read_write(block_size: int, count: int, sizes: list[int]) -> None:
    t, card = stub_target()
    power_up(t)
    total = block_size * count
    segs = _segments(total, sizes)
    descs = [_tran(a, n, end=i == len(segs) - 1) for i, (a, n) in enumerate(segs)]
    _adma(t, descs, read=True, block_size=block_size, count=count, arg=321)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL and eis(t) == 0, hex(nis(t))
    got = b"".join(t.mem_read(a, n) for a, n in segs)
    assert got == bytes(card.image[321:321 + total])
    assert t.read(0x06, 2) == 0 and t.read(0x54, 1) == 0
    clear_status(t)
    payload = _pattern(total, 5)
    pos = 0
    for a, n in segs:
        t.mem_write(a, payload[pos:pos + n])
        pos += n
    _adma(t, descs, read=False, block_size=block_size, count=count, arg=50000)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL and eis(t) == 0
    assert card.image_read(50000, total) == payload


def test_adma2_length_zero_is_64k() -> None:
    t, card = stub_target()
    power_up(t)
    _adma(t, [_tran(BUF, 0, end=True)], read=True, block_size=512, count=128)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL and eis(t) == 0
    assert t.mem_read(BUF, 65536) == bytes(card.image[0:65536])


def test_adma2_chain_with_nop_and_link_needs_time() -> None:
    """Twelve descriptors with Nop and Link: QEMU processes five per step
    and continues 100 ns later (or at the next register access)."""
    t, card = stub_target()
    power_up(t)
    nop = H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_ACT_NOP)
    second = TABLE + 0x1000
    table1 = [_tran(BUF, 64), nop, _tran(BUF + 64, 64), nop,
              H.adma2_desc32(second, 0, H.ADMA_VALID | H.ADMA_ACT_LINK)]
    table2 = [nop, _tran(BUF + 128, 64), nop, nop, _tran(BUF + 192, 64), nop,
              _tran(BUF + 256, 256, end=True)]
    t.mem_write(second, b"".join(table2))
    _adma(t, table1, read=True, block_size=64, count=8)
    assert not t.sdhci.norintsts & H.NIS_TRNSCMPL     # first step only
    assert t.sdhci.admasysaddr == second
    now = t.clock_step(None)
    assert now == 100
    assert t.sdhci.admasysaddr == second + 5 * 8
    t.read(0x30, 2)                                   # an access runs the pending step
    assert nis(t) & H.NIS_TRNSCMPL and eis(t) == 0
    assert t.mem_read(BUF, 512) == bytes(card.image[0:512])


@pytest.mark.parametrize("strict", [False, True])
def test_adma2_end_on_nop(strict: bool) -> None:
    t, _ = stub_target(strict=strict)
    power_up(t)
    descs = [_tran(BUF, 512), H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_END)]
    _adma(t, descs, read=True, block_size=512, count=1, cnt_en=False)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL
    if strict:
        assert eis(t) == 0 and t.read(0x54, 1) == 0
    else:                                             # "sdhci.adma-end-on-nop-mismatch"
        assert eis(t) == H.EIS_ADMAERR
        assert t.read(0x54, 1) == H.ADMAERR_LENMISMATCH | H.ADMAERR_ST_TFR


def test_adma2_length_mismatch() -> None:
    t, _ = stub_target()
    power_up(t)
    _adma(t, [_tran(BUF, 512, end=True)], read=True, block_size=512, count=2)
    _run(t)
    assert eis(t) == H.EIS_ADMAERR and nis(t) & H.NIS_TRNSCMPL
    assert t.read(0x54, 1) == H.ADMAERR_LENMISMATCH | H.ADMAERR_ST_TFR


def test_adma2_invalid_descriptor() -> None:
    t, _ = stub_target()
    power_up(t)
    descs = [_tran(BUF, 512), H.adma2_desc32(BUF, 512, H.ADMA_ACT_TRAN)]  # no Valid
    _adma(t, descs, read=True, block_size=512, count=2)
    _run(t)
    assert eis(t) == H.EIS_ADMAERR and nis(t) & H.NIS_ERRINT
    assert not nis(t) & H.NIS_TRNSCMPL
    assert t.read(0x54, 1) == H.ADMAERR_ST_FDS
    assert t.read(0x58, 4) == TABLE + 8                # points at the bad descriptor
    assert t.read(0x06, 2) == 1
    assert prnsts(t) & H.PRNSTS_DATINHIBIT
    assert t.irq_level()
    t.write(0x2F, 1, H.SWRST_DAT)
    assert not prnsts(t) & ACTIVE


@pytest.mark.parametrize("strict", [False, True])
def test_adma2_memory_error(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    outside = (128 << 20) - 256                       # runs off the end of RAM
    descs = [_tran(outside, 512), _tran(BUF, 512, end=True)]
    _adma(t, descs, read=True, block_size=512, count=2)
    _run(t)
    assert eis(t) & H.EIS_ADMAERR
    assert t.read(0x58, 4) == TABLE                   # still at the failing descriptor
    if strict:
        assert t.read(0x54, 1) == H.ADMAERR_ST_TFR and not nis(t) & H.NIS_TRNSCMPL
        assert t.mem_read(outside, 256) == bytes(card.image[0:256])
    else:
        # "sdhci.adma-dma-error-continues": the loop retries the same descriptor,
        # pulling a fresh block from the card each time, and never finishes.
        assert t.read(0x54, 1) & H.ADMAERR_STATE_MASK == 0
        assert t.sdhci.transfer_pending() and not nis(t) & H.NIS_TRNSCMPL
        assert t.mem_read(outside, 256) != bytes(card.image[0:256])


def test_adma2_address_low_bits_ignored() -> None:
    t, card = stub_target()
    power_up(t)
    _adma(t, [_tran(BUF + 3, 512, end=True)], read=True, block_size=512, count=1)
    _run(t)
    assert t.mem_read(BUF, 512) == bytes(card.image[0:512])


def test_adma2_interrupt_attribute_reschedules() -> None:
    t, card = stub_target()
    power_up(t)
    descs = [_tran(BUF, 512, intr=True), _tran(BUF + 512, 512, end=True)]
    _adma(t, descs, read=True, block_size=512, count=2)
    # Peek without a register access (an access would run the pending step).
    sts = t.sdhci.norintsts
    assert sts & H.NIS_DMAINT and not sts & H.NIS_TRNSCMPL
    assert t.irq_level() and t.sdhci.transfer_pending()
    assert nis(t) & H.NIS_TRNSCMPL                    # the read continued it
    assert nis(t) & H.NIS_TRNSCMPL
    assert t.mem_read(BUF, 1024) == bytes(card.image[0:1024])


def test_adma2_64bit_needs_capability() -> None:
    for capareg, works in ((0x057834B4, False), (0x157834B4, True)):
        t, card = stub_target(sdhci={"capareg": capareg})
        power_up(t)
        desc = H.adma2_desc64(BUF, 512, H.ADMA_VALID | H.ADMA_ACT_TRAN | H.ADMA_END)
        _adma(t, [desc], read=True, block_size=512, count=1, dma=H.HOSTCTL_DMA_ADMA2_64)
        _run(t, 5)
        assert bool(nis(t) & H.NIS_TRNSCMPL) is works
        assert (t.mem_read(BUF, 512) == bytes(card.image[0:512])) is works


@pytest.mark.parametrize("strict", [False, True])
def test_adma1_set_length(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    descs = [H.adma1_desc(1024, H.ADMA_VALID | H.ADMA_ACT_SET),
             H.adma1_desc(BUF, H.ADMA_VALID | H.ADMA_ACT_TRAN | H.ADMA_END)]
    _adma(t, descs, read=True, block_size=512, count=2, dma=H.HOSTCTL_DMA_ADMA1,
          cnt_en=False)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL
    moved = 1024 if strict else 4096                  # "sdhci.adma1-set-length-ignored"
    assert t.mem_read(BUF, moved) == bytes(card.image[0:moved])


def test_adma_self_link_spins_without_traceback() -> None:
    t, card = stub_target()
    power_up(t)
    link = H.adma2_desc32(TABLE, 0, H.ADMA_VALID | H.ADMA_ACT_LINK)
    _adma(t, [link], read=True, block_size=512, count=1)
    assert t.clock_step(10**9 + 50) == 10**9 + 50     # no 10^7 timer firings
    assert prnsts(t) & H.PRNSTS_DATINHIBIT == 0      # only link descriptors so far
    # That read ran a step at 1e9+50 (as QEMU's pending timer would): the
    # 100 ns grid restarts there.
    t.mem_write(TABLE, _tran(BUF, 512, end=True))     # guest fixes the table
    t.clock_step(99)
    assert not t.sdhci.norintsts & H.NIS_TRNSCMPL     # peek: no register access
    t.clock_step(1)
    assert t.sdhci.norintsts & H.NIS_TRNSCMPL
    assert nis(t) & H.NIS_TRNSCMPL
    assert t.mem_read(BUF, 512) == bytes(card.image[0:512])


# -- resets mid-transfer ------------------------------------------------------------------


def test_reset_dat_mid_pio() -> None:
    t, _ = stub_target()
    power_up(t)
    setup_blocks(t, 512, 4)
    command(t, 18, 0, data=True, trnmod=H.TRNMOD_READ | H.TRNMOD_MULTI | H.TRNMOD_BLKCNT_EN)
    t.read(0x20, 4)
    assert prnsts(t) & H.PRNSTS_BUFRDRDY
    t.write(0x2F, 1, H.SWRST_DAT)
    assert prnsts(t) & (ACTIVE | H.PRNSTS_BUFRDRDY | H.PRNSTS_DATLINEACTIVE) == 0
    assert nis(t) == H.NIS_CMDCMPL
    assert t.read(0x20, 4) == 0


@pytest.mark.parametrize("strict", [False, True])
def test_reset_dat_mid_adma(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    nop = H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_ACT_NOP)
    descs = [nop] * 5 + [_tran(BUF, 512, end=True)]
    _adma(t, descs, read=True, block_size=512, count=1)
    assert t.sdhci.transfer_pending()
    # The SWRST write first runs the pending step (which completes it) in QEMU.
    t.write(0x2F, 1, H.SWRST_DAT)
    assert not t.sdhci.transfer_pending()
    assert t.mem_read(BUF, 512) == bytes(card.image[0:512])


def test_reset_dat_keeps_pending_adma_in_qemu() -> None:
    for strict in (False, True):
        t, card = stub_target(strict=strict)
        power_up(t)
        nop = H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_ACT_NOP)
        descs = [nop] * 12 + [_tran(BUF, 512, end=True)]
        _adma(t, descs, read=True, block_size=512, count=1)
        t.write(0x2F, 1, H.SWRST_DAT)                 # runs step 2, then resets
        assert t.sdhci.transfer_pending() is not strict
        t.clock_step(1000)
        done = t.mem_read(BUF, 512) == bytes(card.image[0:512])
        assert done is not strict


def test_reset_all_mid_adma() -> None:
    t, card = stub_target()
    power_up(t)
    nop = H.adma2_desc32(0, 0, H.ADMA_VALID | H.ADMA_ACT_NOP)
    _adma(t, [nop] * 12 + [_tran(BUF, 512, end=True)], read=True, block_size=512, count=1)
    t.write(0x2F, 1, H.SWRST_ALL)
    assert not t.sdhci.transfer_pending()
    t.clock_step(1000)
    assert t.mem_read(BUF, 512) == bytes(512)
    assert t.read(0x58, 8) == 0 and t.read(0x2C, 2) == 0 and prnsts(t) == 0x01FF0000
    assert not t.irq_level()


@pytest.mark.parametrize("strict", [False, True])
def test_reset_combined_bits(strict: bool) -> None:
    t, _ = stub_target(strict=strict)
    power_up(t)
    command(t, 13)
    t.write(0x2F, 1, H.SWRST_CMD | H.SWRST_DAT)
    assert bool(nis(t) & H.NIS_CMDCMPL) is not strict  # "sdhci.swrst-single-bit"


# -- card insertion and removal ------------------------------------------------------------


def test_card_removal_and_delayed_insertion() -> None:
    t, card = stub_target()
    power_up(t)
    assert t.read(0x29, 1) & H.PWRCON_POWER_ON
    t.set_card_inserted(False)
    assert prnsts(t) == 0x01FA0000
    assert nis(t) & H.NIS_CARDREM and t.irq_level()
    assert not t.read(0x29, 1) & H.PWRCON_POWER_ON
    assert not t.read(0x2C, 2) & H.CLKCON_SDCLK_EN
    t.set_card_inserted(True)                         # removal not acknowledged yet
    assert prnsts(t) == 0x01FA0000 and not nis(t) & H.NIS_CARDINS
    assert t.clock_step(None) == 10**9                # re-checks after 1 s
    assert not nis(t) & H.NIS_CARDINS
    t.write(0x30, 2, H.NIS_CARDREM)
    t.clock_step(10**9)
    assert prnsts(t) == 0x01FF0000 and nis(t) & H.NIS_CARDINS
    assert t.irq_level()


def test_card_insertion_immediate() -> None:
    t, card = stub_target(card=StubCard(readonly=True))
    t.write(0x34, 2, H.NIS_CARDINS)                   # removal status not enabled
    t.set_card_inserted(False)
    assert nis(t) == 0
    t.set_card_inserted(True)
    assert nis(t) == H.NIS_CARDINS
    assert prnsts(t) == 0x01FF0000 & ~H.PRNSTS_WRITEPROTECT


# -- the real card ---------------------------------------------------------------------------


def _init_real_card(t: ModelTarget) -> None:
    power_up(t)
    command(t, 0, 0, H.RSP_NONE)
    command(t, 8, 0x1AA)
    command(t, 55, 0)
    command(t, 41, 0x40FF8000, H.RSP_48)
    command(t, 2, 0, H.RSP_136)
    command(t, 3, 0)
    rca = t.read(0x10, 4) >> 16
    command(t, 7, rca << 16, H.RSP_48_BUSY)
    clear_status(t)


@pytest.mark.skipif(not HAVE_SDCARD, reason="harness.model.sdcard not present")
def test_real_card_pio_sdma_adma() -> None:
    t = ModelTarget(size=1 << 20)
    _init_real_card(t)
    payload = _pattern(2048, 9)
    pio_write(t, payload, 512, 0)
    clear_status(t)
    assert t.image_read(0, 2048) == payload
    assert pio_read(t, 512, 4, 0) == payload
    clear_status(t)
    _sdma(t, 18, 512, BUF, 512, 3, True)
    assert nis(t) & H.NIS_TRNSCMPL and t.mem_read(BUF, 1536) == payload[512:]
    clear_status(t)
    _adma(t, [_tran(BUF + 0x1000, 1024, end=True)], read=True, block_size=512, count=2)
    _run(t)
    assert nis(t) & H.NIS_TRNSCMPL and eis(t) == 0
    assert t.mem_read(BUF + 0x1000, 1024) == payload[:1024]


def test_adma_parked_keeps_timer_phase() -> None:
    t, card = stub_target()
    power_up(t)
    link = H.adma2_desc32(TABLE, 0, H.ADMA_VALID | H.ADMA_ACT_LINK)
    _adma(t, [link], read=True, block_size=512, count=1)   # step at 0, next at 100
    t.clock_step(250)                                 # QEMU: steps at 100, 200; next 300
    t.mem_write(TABLE, _tran(BUF, 512, end=True))
    t.clock_step(49)
    assert not t.sdhci.norintsts & H.NIS_TRNSCMPL
    t.clock_step(1)
    assert t.sdhci.norintsts & H.NIS_TRNSCMPL
    assert t.mem_read(BUF, 512) == bytes(card.image[0:512])


def test_endless_adma_hits_step_budget() -> None:
    """A Tran+Link loop with no block count never ends (in QEMU either); the
    model stops after its step budget and says so instead of spinning."""
    t, card = stub_target()
    power_up(t)
    t.sdhci.step_budget = 50
    loop = [_tran(BUF, 512), H.adma2_desc32(TABLE, 0, H.ADMA_VALID | H.ADMA_ACT_LINK)]
    _adma(t, loop, read=True, block_size=512, count=2, cnt_en=False)
    t.clock_step(10**9)
    assert t.hung is not None and "ADMA" in t.hung
    assert not t.sdhci.transfer_pending()
