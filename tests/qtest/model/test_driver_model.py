"""The host driver on the golden model (ModelTarget).

Expected values come from the specifications (SD Physical Layer Simplified
Spec, "PLS"; SD Host Controller Simplified Spec 3.00, "SDHC") or from the
test's own image file, never from the model's output.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.driver import (
    Adma2Desc,
    AdmaOptions,
    CardInfo,
    DriverError,
    HostDriver,
    Mode,
    RecordingTarget,
    first_difference,
)
from harness.driver.host import LOCK_CLR_PWD, LOCK_LOCK, LOCK_SET_PWD, Stop
from harness.hwdefs import sd as S
from harness.hwdefs import sdhci as H
from harness.machine import Machine
from harness.model.target import ModelTarget
from harness.profile import BuildProfile

IMAGE_SIZE = 4 << 20  # SDSC, a power of two as QEMU requires
DMA = 0x0100_0000


def pattern(size: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(size)


@pytest.fixture
def image(tmp_path: Path) -> Path:
    p = tmp_path / "card.img"
    p.write_bytes(pattern(IMAGE_SIZE))
    return p


@pytest.fixture
def target(image: Path) -> Iterator[ModelTarget]:
    t = ModelTarget(image=image)
    yield t
    t.close()


@pytest.fixture
def drv(target: ModelTarget) -> HostDriver:
    d = HostDriver(target, dma_base=DMA)
    d.init()
    return d


def card_state(d: HostDriver) -> int:
    r = d.send_status()
    assert r.ok, r.describe()
    return S.CARD_STATUS.field("CURRENT_STATE").get(r.r1)


# -- initialisation and card registers --------------------------------------


def test_init_reaches_transfer_state(drv: HostDriver) -> None:
    info = drv.card
    assert info.ocr & S.OCR_BUSY  # power-up done (PLS 5.1)
    assert info.if_cond == 0x1AA  # CMD8 echoes VHS and check pattern (PLS 4.3.13)
    assert info.rca != 0  # CMD3 publishes a non-zero RCA (PLS 4.2.2)
    assert not info.high_capacity  # 4 MiB is standard capacity (PLS 3.3)
    assert card_state(drv) == S.CardState.TRAN
    r = drv.send_status()
    assert r.r1 & S.READY_FOR_DATA
    assert r.r1 & (S.OUT_OF_RANGE | S.ADDRESS_ERROR | S.ILLEGAL_COMMAND | S.ERROR) == 0


def test_init_steps_follow_pls_figure_4_2(drv: HostDriver) -> None:
    seq: list[tuple[bool, int]] = []
    for r in drv.card.steps:
        if not seq or seq[-1] != (r.app, r.cmd):  # ACMD41 repeats until ready
            seq.append((r.app, r.cmd))
    assert seq == [(False, 0), (False, 8), (True, 41), (False, 2), (False, 3), (False, 9),
                   (False, 7), (False, 16), (True, 51), (True, 6)]
    assert all(r.ok for r in drv.card.steps)
    # Every ACMD went out right after a CMD55 carrying the RCA (PLS 4.3.9).
    for r in drv.card.steps:
        if r.app:
            assert r.related[0].cmd == 55 and r.related[0].ok


def test_csd_gives_the_image_size(drv: HostDriver) -> None:
    info = drv.card
    assert info.csd_register is S.CSD_V1  # SDSC carries CSD 1.0 (PLS 5.3.1)
    assert info.capacity == IMAGE_SIZE


def test_cid_is_well_formed_and_stable(drv: HostDriver) -> None:
    f = drv.card.cid_fields()
    pnm = f["PNM"].to_bytes(5, "big")
    oid = f["OID"].to_bytes(2, "big")
    assert all(0x20 <= c < 0x7F for c in pnm + oid)  # ASCII (PLS 5.2)
    assert 1 <= f["MDT_MONTH"] <= 12
    # CMD10 in stand-by state returns the same CID as CMD2 (PLS 4.7.4).
    assert drv.deselect().ok
    r = drv.send_cid()
    assert r.ok and r.r2 == drv.card.cid
    assert drv.send_csd().r2 == drv.card.csd
    assert drv.select().ok
    assert card_state(drv) == S.CardState.TRAN


def test_scr(drv: HostDriver) -> None:
    f = drv.card.scr_fields()
    assert f["SCR_STRUCTURE"] == 0  # version 1.0 (PLS 5.6)
    assert f["SD_BUS_WIDTHS"] & 0b0101 == 0b0101  # 1 and 4 bit are mandatory
    assert f["SD_SPEC"] >= 2  # a card answering CMD8 is 2.00 or later


def test_sd_status_reports_4bit_bus(drv: HostDriver) -> None:
    r = drv.read_sd_status()
    assert r.ok and r.data is not None and len(r.data) == 64
    v = S.register_value(r.data)
    assert S.SD_STATUS.field("DAT_BUS_WIDTH").get(v) == 2  # after ACMD6(4 bit), PLS 4.10.2


def test_switch_function_check_and_switch(drv: HostDriver) -> None:
    # Check mode asking for function 0 (default speed, mandatory) in group 1:
    # supported, so the status selects it (PLS 4.3.10.3-4).
    r = drv.switch_function(0, {1: 0})
    assert r.ok and r.data is not None and len(r.data) == 64
    v = S.register_value(r.data)
    assert S.SWITCH_STATUS.field("FG1_SUPPORT").get(v) & 1
    assert S.SWITCH_STATUS.field("FG1_SELECT").get(v) == 0
    if S.SWITCH_STATUS.field("FG1_SUPPORT").get(v) & 2:
        r = drv.switch_function(1, {1: 1})
        assert r.ok and r.data is not None
        v = S.register_value(r.data)
        assert S.SWITCH_STATUS.field("FG1_SELECT").get(v) == 1


def test_send_write_prot_reports_no_protection(drv: HostDriver) -> None:
    r = drv.send_write_prot(0)
    assert r.ok and r.data == bytes(4)  # nothing protected (PLS 4.3.5)


# -- data round trips ---------------------------------------------------------


@pytest.mark.parametrize("mode", list(Mode))
@pytest.mark.parametrize("count", [1, 2, 7])
def test_read_matches_image(drv: HostDriver, image: Path, mode: Mode, count: int) -> None:
    r = drv.read_blocks(20, count, mode=mode)
    assert r.ok, r.describe()
    assert r.data == image.read_bytes()[20 * 512:(20 + count) * 512]


@pytest.mark.parametrize("wmode", list(Mode))
@pytest.mark.parametrize("rmode", list(Mode))
@pytest.mark.parametrize("count", [1, 3])
def test_write_read_round_trip(drv: HostDriver, target: ModelTarget, wmode: Mode,
                               rmode: Mode, count: int) -> None:
    data = pattern(512 * count, seed=count + 7)
    w = drv.write_blocks(33, data, mode=wmode)
    assert w.ok, w.describe()
    assert target.image_read(33 * 512, len(data)) == data
    r = drv.read_blocks(33, count, mode=rmode)
    assert r.ok and r.data == data
    assert card_state(drv) == S.CardState.TRAN


@pytest.mark.parametrize("access", [1, 2, 4])
@pytest.mark.parametrize("bs", [1, 3, 7, 100, 511])
def test_pio_odd_block_sizes(drv: HostDriver, target: ModelTarget, image: Path,
                             access: int, bs: int) -> None:
    # SDSC: CMD16 sets the block length; partial blocks are allowed when
    # READ_BL_PARTIAL / WRITE_BL_PARTIAL say so (PLS 5.3.2).
    csd = drv.card.csd_fields()
    assert drv.set_blocklen(bs).ok
    if csd["READ_BL_PARTIAL"]:
        r = drv.read_blocks(5, 3, pio_access=access)
        assert r.ok, r.describe()
        assert r.data == image.read_bytes()[5 * bs:8 * bs]
    if csd["WRITE_BL_PARTIAL"]:
        data = pattern(2 * bs, seed=bs)
        w = drv.write_blocks(9, data, pio_access=access)
        assert w.ok, w.describe()
        assert target.image_read(9 * bs, 2 * bs) == data


@pytest.mark.parametrize("offset", [1, 2, 3, 0x7FD])
def test_sdma_misaligned_buffers(drv: HostDriver, target: ModelTarget, image: Path,
                                 offset: int) -> None:
    # SDMA system addresses need no alignment (SDHC 2.2.1).
    buf = DMA + 0x20000 + offset
    r = drv.read_blocks(40, 2, mode=Mode.SDMA, buffer=buf)
    assert r.ok and r.data == image.read_bytes()[40 * 512:42 * 512]
    assert target.mem_read(buf, 1024) == r.data
    data = pattern(1024, seed=offset)
    w = drv.write_blocks(50, data, mode=Mode.SDMA, buffer=buf + 0x1000)
    assert w.ok and target.image_read(50 * 512, 1024) == data


@pytest.mark.parametrize("offset", [4, 0x804])
def test_adma2_word_aligned_buffers(drv: HostDriver, target: ModelTarget, image: Path,
                                    offset: int) -> None:
    # 32-bit ADMA2 addresses are 4-byte aligned (SDHC 1.13.4).
    buf = DMA + 0x20000 + offset
    r = drv.read_blocks(40, 3, mode=Mode.ADMA2, buffer=buf)
    assert r.ok and r.data == image.read_bytes()[40 * 512:43 * 512]


@pytest.mark.parametrize("opts", [
    AdmaOptions(max_segment=512),
    AdmaOptions(max_segment=200),
    AdmaOptions(max_segment=1024, segment_gap=0x100),
    AdmaOptions(max_segment=256, nop_every=1),
    AdmaOptions(max_segment=512, link_every=2),
    AdmaOptions(max_segment=300, nop_every=2, link_every=3, segment_gap=12),
], ids=["seg512", "seg200", "gap", "nops", "links", "mixed"])
def test_adma2_layouts(drv: HostDriver, target: ModelTarget, opts: AdmaOptions) -> None:
    data = pattern(4 * 512, seed=99)
    w = drv.write_blocks(60, data, mode=Mode.ADMA2, adma=opts)
    assert w.ok, w.describe()
    assert target.image_read(60 * 512, len(data)) == data
    r = drv.read_blocks(60, 4, mode=Mode.ADMA2, adma=opts)
    assert r.ok and r.data == data
    assert r.admaerr is not None and r.admaerr & H.ADMAERR_LENMISMATCH == 0


def test_adma2_interrupt_descriptor_raises_dma_interrupt(drv: HostDriver) -> None:
    # A descriptor with Int set raises DMA Interrupt when its data is done (SDHC 1.13.4).
    r = drv.read_blocks(60, 4, mode=Mode.ADMA2,
                        adma=AdmaOptions(max_segment=512, interrupt="all"))
    assert r.ok and r.norintsts & H.NIS_DMAINT
    assert r.dma_interrupts >= 1


def test_adma2_invalid_descriptor_is_an_adma_error(drv: HostDriver) -> None:
    # Valid = 0 stops the ADMA with ADMA Error in state ST_FDS (SDHC 1.13.5, 2.2.30).
    bad = [Adma2Desc(DMA + 0x20000, 512, H.ADMA_ACT_TRAN)]
    r = drv.read_blocks(60, 1, mode=Mode.ADMA2, adma=AdmaOptions(descriptors=bad))
    assert r.errintsts & H.EIS_ADMAERR
    assert r.admaerr is not None and r.admaerr & H.ADMAERR_STATE_MASK == H.ADMAERR_ST_FDS
    assert r.snapshot is not None and "dat" in r.recovered
    # The driver recovered: the card still reads.
    assert drv.read_blocks(60, 1).ok


def test_sdma_boundary_crossing_strict(image: Path) -> None:
    # At each SDMA buffer boundary the controller stops with DMA Interrupt
    # and resumes when the host writes SDMASYSAD (SDHC 1.14.1, 2.2.1).
    t = ModelTarget(image=image, strict=True)
    d = HostDriver(t, dma_base=DMA)
    d.init()
    data = pattern(16 * 512, seed=5)
    w = d.write_blocks(70, data, mode=Mode.SDMA, sdma_boundary=4096)
    assert w.ok, w.describe()
    assert t.image_read(70 * 512, len(data)) == data
    r = d.read_blocks(70, 16, mode=Mode.SDMA, sdma_boundary=4096)
    assert r.ok and r.data == data
    assert r.dma_interrupts >= 1


def test_sdma_stall_is_reported_not_hung(image: Path) -> None:
    # Whatever the device does at a boundary, the driver returns: either the
    # transfer completes or the result names the stage that ran out.
    t = ModelTarget(image=image)
    d = HostDriver(t, dma_base=DMA, timeout_steps=200)
    d.init()
    r = d.read_blocks(70, 16, mode=Mode.SDMA, sdma_boundary=4096)
    assert r.ok or (r.timeout == "sdma" and r.snapshot is not None)
    assert d.read_blocks(70, 1).ok  # and the next command works


# -- stop, erase, lock ---------------------------------------------------------


def test_auto_cmd12_response(drv: HostDriver, image: Path) -> None:
    r = drv.read_blocks(80, 3, stop="auto12")
    assert r.ok and r.data == image.read_bytes()[80 * 512:83 * 512]
    assert r.auto_cmd12_response is not None
    # CMD12's R1 reports the state the card was in: sending-data (PLS 4.10.1).
    state = S.CARD_STATUS.field("CURRENT_STATE").get(r.auto_cmd12_response)
    assert state == S.CardState.DATA
    assert card_state(drv) == S.CardState.TRAN


@pytest.mark.parametrize("stop", ["cmd12", "cmd23"])
def test_explicit_stop(drv: HostDriver, target: ModelTarget, stop: Stop) -> None:
    data = pattern(3 * 512, seed=3)
    w = drv.write_blocks(90, data, stop=stop)
    assert w.ok and all(x.ok for x in w.related)
    assert target.image_read(90 * 512, len(data)) == data
    r = drv.read_blocks(90, 3, stop=stop, mode=Mode.SDMA)
    assert r.ok and r.data == data
    assert card_state(drv) == S.CardState.TRAN


def test_erase(drv: HostDriver, target: ModelTarget, image: Path) -> None:
    data = pattern(8 * 512, seed=8)
    assert drv.write_blocks(100, data).ok
    r = drv.erase(102, 104)
    assert r.ok, r.describe()
    assert [x.cmd for x in r.related] == [32, 33]
    erased = 0xFF if drv.card.scr_fields()["DATA_STAT_AFTER_ERASE"] else 0x00  # PLS 5.6
    assert target.image_read(102 * 512, 3 * 512) == bytes([erased]) * (3 * 512)
    assert target.image_read(100 * 512, 2 * 512) == data[:1024]
    assert target.image_read(105 * 512, 3 * 512) == data[5 * 512:]
    assert card_state(drv) == S.CardState.TRAN


@pytest.mark.parametrize("strict", [
    True,
    pytest.param(False, marks=pytest.mark.xfail(
        strict=True, reason="QEMU deviation sd.cmd42-data-length: CMD42 waits for 512 bytes")),
])
def test_lock_unlock(image: Path, strict: bool) -> None:
    # PLS 4.3.7: CMD16 sets the lock data length; set a password and lock
    # in one go, then unlock, then clear the password.
    d = HostDriver(ModelTarget(image=image, strict=strict), dma_base=DMA)
    d.init()
    pwd = b"secret"
    r = d.lock_unlock(d.lock_block(LOCK_SET_PWD | LOCK_LOCK, pwd))
    assert r.ok, r.describe()
    st = d.send_status().r1
    assert st & S.CARD_IS_LOCKED and not st & S.LOCK_UNLOCK_FAILED
    r = d.lock_unlock(d.lock_block(0, pwd))  # unlock
    assert r.ok
    st = d.send_status().r1
    assert not st & S.CARD_IS_LOCKED and not st & S.LOCK_UNLOCK_FAILED
    r = d.lock_unlock(d.lock_block(LOCK_CLR_PWD, pwd))
    assert r.ok and not d.send_status().r1 & S.LOCK_UNLOCK_FAILED
    assert card_state(d) == S.CardState.TRAN


def test_switch_check_current_function_strict(image: Path) -> None:
    # Check mode with 0xF ("no influence") reports the current function of
    # each group: default (0) after power-up (PLS 4.3.10.4).
    d = HostDriver(ModelTarget(image=image, strict=True), dma_base=DMA)
    d.init()
    r = d.switch_function(0)
    assert r.ok and r.data is not None
    v = S.register_value(r.data)
    assert S.SWITCH_STATUS.field("FG1_SELECT").get(v) == 0


# -- interrupts, recording, capacity -------------------------------------------


def test_irq_follows_signal_enable(drv: HostDriver) -> None:
    # The line is the OR of status & signal enable (SDHC 2.2.21).
    drv.enable_interrupts(signal_normal=0)
    assert drv.send_status().irq is False
    drv.enable_interrupts(signal_normal=H.NIS_CMDCMPL)
    assert drv.send_status().irq is True
    drv.enable_interrupts()
    assert not drv.target.irq_level()


def test_recording_is_deterministic(image: Path) -> None:
    logs = []
    for _ in range(2):
        rec = RecordingTarget(ModelTarget(image=image))
        d = HostDriver(rec, dma_base=DMA)
        d.init()
        d.read_blocks(3, 2, mode=Mode.ADMA2)
        logs.append(rec.log)
    assert logs[0] == logs[1]
    assert first_difference(logs[0], logs[1]) is None
    assert logs[0][0].op == "write" and logs[0][0].args[0] == H.SWRST.offset


def test_high_capacity_card_uses_block_addresses() -> None:
    size = 4 << 30  # SDHC (PLS 3.3); sparse, nothing allocated
    t = ModelTarget(size=size)
    d = HostDriver(t, dma_base=DMA)
    info: CardInfo = d.init()
    assert info.high_capacity
    assert info.csd_register is S.CSD_V2
    assert info.capacity == size
    data = pattern(1024, seed=4)
    assert d.write_blocks(5, data, mode=Mode.ADMA2).ok
    assert t.image_read(5 * 512, 1024) == data
    assert d.history[-1].arg == 5  # block address (PLS 4.3.14)


def test_version_1_card_skips_cmd8(image: Path) -> None:
    # A version 1.x card does not answer CMD8; the host then leaves HCS
    # clear in ACMD41 (PLS 4.2.2, 4.2.3.1).
    old = BuildProfile(version=(10, 0, 0), sd_card_properties={"spec_version": "2"})
    d = HostDriver(ModelTarget(Machine(card={"spec_version": 1}), image=image,
                                  profile=old), dma_base=DMA)
    info = d.init()
    assert info.if_cond is None
    r8 = info.steps[1]
    assert r8.cmd == 8 and r8.errintsts & H.EIS_CMDTOUT and "cmd" in r8.recovered
    assert not info.steps[3].arg & S.ACMD41_HCS
    assert not info.high_capacity
    assert d.read_blocks(1, 2).data == image.read_bytes()[512:1536]


def test_empty_slot_reports_command_timeout() -> None:
    # No card: no response, so Command Timeout Error (SDHC 2.2.18); the
    # driver raises with what it saw instead of hanging.
    d = HostDriver(ModelTarget(), dma_base=DMA, timeout_steps=100)
    d.setup()
    assert not d.rd(H.PRNSTS) & H.PRNSTS_CARDINSERTED
    with pytest.raises(DriverError) as e:
        d.init_card()
    res = e.value.result
    assert res is not None and res.errintsts & H.EIS_CMDTOUT
    assert res.snapshot is not None
