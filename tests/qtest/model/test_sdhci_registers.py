"""SDHCI model registers: reset values per sd-spec-version, masks, W1C,
access splitting, out-of-window accesses, capareg validation, IRQ level.

Expected values come from the SD Host Controller Simplified Specification
3.00 and from what the QEMU builds were measured to show (CAPAB 0x057834b4,
HCVER 0x2401, PRNSTS 0x01ff0000 with a card), not from the model.
"""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci as H
from harness.hwdefs.pci import SDHCI_PCI
from harness.model.memory import GuestMemory
from harness.model.sdhci import SDHCIConfigError
from harness.model.target import ModelTarget, split_access
from harness.profile import BuildProfile
from harness.target import Target, TargetError
from tests.qtest.model.sdhci_support import (
    HAVE_SDCARD,
    StubCard,
    clear_status,
    command,
    eis,
    nis,
    power_up,
    prnsts,
    stub_target,
)

OLD = BuildProfile(version=(7, 2, 0), sdhci_properties={"sd-spec-version": "2"})


# -- spec data ----------------------------------------------------------------


def test_register_map_lookup() -> None:
    assert H.register("CMDREG").offset == 0x0E
    assert H.register_at(0x0F) is H.CMDREG
    assert H.register_at(0x44) is H.CAPAB
    assert H.register_at(0x5F) is H.ADMASYSADDR
    assert H.register_at(0x60) is None
    assert H.register_at(0xFF) is H.HCVER
    names = [r.name for r in H.REGISTERS]
    assert len(names) == len(set(names))
    seen: set[int] = set()
    for r in H.REGISTERS:
        span = set(range(r.offset, r.offset + r.width))
        assert not span & seen, r.name
        seen |= span
        for f in r.fields:
            assert f.lsb + f.width <= r.width * 8, (r.name, f.name)
    assert [r.name for r in H.registers_in(0x0C, 4)] == ["TRNMOD", "CMDREG"]


def test_spec_helpers() -> None:
    assert H.cmdreg(17, H.RSP_48, crc=True, idx=True, data=True) == 0x113A
    assert H.blksize_value(512, 512 * 1024) == 0x7200
    assert H.sdma_boundary(0x7200) == 512 * 1024
    with pytest.raises(ValueError):
        H.blksize_value(512, 3000)
    assert H.adma2_desc32(0x12345678, 0x200, 0x21) == bytes.fromhex("21000002" "78563412")
    assert len(H.adma2_desc64(1 << 40, 0, 0x23)) == 12
    assert H.adma1_desc(0x3000, H.ADMA_ACT_TRAN | 1) == (0x3021).to_bytes(4, "little")
    assert H.hcver(2) == 0x2401 and H.hcver(3) == 0x2402


def test_pci_identity() -> None:
    assert (SDHCI_PCI.vendor_id, SDHCI_PCI.device_id) == (0x1B36, 0x0007)
    assert SDHCI_PCI.class_code == 0x080501
    assert SDHCI_PCI.bar0_size == 256 and SDHCI_PCI.interrupt_pin == 1
    assert SDHCI_PCI.bar0_mask == 0xFFFFFF00


# -- reset values ----------------------------------------------------------------


@pytest.mark.parametrize("version,hcver", [(2, 0x2401), (3, 0x2402)])
def test_reset_values(version: int, hcver: int) -> None:
    t, _ = stub_target(sdhci={"sd-spec-version": version})
    expected = {r.name: 0 for r in H.REGISTERS}
    expected.update(PRNSTS=0x01FF0000, CAPAB=0x057834B4, HCVER=hcver)
    for r in H.REGISTERS:
        size = r.width
        got = t.read(r.offset, size)
        assert got == expected[r.name], f"{r.name}: {got:#x}"
    assert H.reset_values(version) == expected
    assert not t.irq_level()


def test_reset_values_custom_capareg_maxcurr() -> None:
    t, _ = stub_target(sdhci={"capareg": 0x1234_0000_05E8_0080,
                              "maxcurr": 0x00AB_0000_0012_3456, "sd-spec-version": 3})
    assert t.read(0x40, 8) == 0x1234_0000_05E8_0080
    assert t.read(0x44, 4) == 0x1234_0000
    assert t.read(0x48, 8) == 0x00AB_0000_0012_3456


def test_build_class_defaults_do_not_move_the_model() -> None:
    # A build whose device-list-properties defaults differ from the model's
    # table (a CAPAB bit dropped, another spec version, a current limit):
    # the model keeps its table, so such a build diverges.
    dropped = H.CAPAREG_DEFAULT & ~H.CAPAB.mask("ADMA2")
    prof = BuildProfile(version=(10, 0, 13), sdhci_properties={
        "sd-spec-version": "3", "capareg": str(dropped), "maxcurr": "0x10", "uhs": "2"})
    t, _ = stub_target(profile=prof)
    assert t.read(0x40, 4) == 0x057834B4 and t.read(0x48, 4) == 0
    assert t.read(0xFE, 2) == 0x2401
    # What the user sets still reaches the model.
    t2, _ = stub_target(sdhci={"maxcurr": 0x10, "sd-spec-version": 3}, profile=prof)
    assert t2.read(0x48, 4) == 0x10 and t2.read(0xFE, 2) == 0x2402


def test_prnsts_readonly_and_no_card() -> None:
    t, card = stub_target(card=StubCard(readonly=True))
    assert prnsts(t) == 0x01F70000
    assert H.reset_values(readonly=True)["PRNSTS"] == 0x01F70000
    card.inserted = False
    t2, _ = stub_target(card=card)
    assert prnsts(t2) == 0x01FA0000 & ~H.PRNSTS_WRITEPROTECT
    assert H.reset_values(card_inserted=False, readonly=True)["PRNSTS"] == 0x01F20000
    assert H.reset_values(card_inserted=False)["PRNSTS"] == 0x01FA0000


def test_real_card_reset_prnsts() -> None:
    if not HAVE_SDCARD:
        pytest.skip("harness.model.sdcard not present")
    t = ModelTarget(size=1 << 20)
    assert isinstance(t, Target)
    assert t.name == "model"
    assert prnsts(t) == 0x01FF0000
    assert t.read(0x40, 4) == 0x057834B4 and t.read(0xFE, 2) == 0x2401


# -- capareg validation ----------------------------------------------------------


@pytest.mark.parametrize("version,capareg,ok", [
    (2, 0x057834B4, True),
    (3, 0x057834B4, True),
    (1, 0x057834B4, False),          # only v2 and v3 realize
    (4, 0x057834B4, False),
    (2, 0x05783405, False),          # timeout clock 5 (v2: 0 or 10..63)
    (3, 0x05783405, True),           # v3 does not check frequencies
    (2, 0x05780534, False),          # base clock 5
    (2, 0x0578FF34, False),          # base clock 255
    (2, 0x05780034, True),           # base clock 0 allowed
    (2, 0x057B34B4, False),          # max block length code 3
    (2, 0x057A34B4, True),           # 2048-byte buffer
    (3, 0x457834B4, False),          # slot type 1
    (2, 0x457834B4, True),           # v2 does not look at slot type
])
def test_capareg_validation(version: int, capareg: int, ok: bool) -> None:
    if ok:
        stub_target(sdhci={"sd-spec-version": version, "capareg": capareg})
    else:
        with pytest.raises(SDHCIConfigError):
            stub_target(sdhci={"sd-spec-version": version, "capareg": capareg})


# -- masks and access types -------------------------------------------------------


def _rw(t: ModelTarget, offset: int, size: int, value: int) -> int:
    t.write(offset, size, value)
    return t.read(offset, size)


@pytest.mark.parametrize("strict", [False, True])
def test_register_masks(strict: bool) -> None:
    t, _ = stub_target(strict=strict)
    assert _rw(t, 0x00, 4, 0xDEADBEEF) == 0xDEADBEEF
    assert _rw(t, 0x04, 2, 0xFFFF) == 0x7200          # bit 15 reserved, size clamped to 512
    assert _rw(t, 0x06, 2, 0xFFFF) == 0xFFFF
    assert _rw(t, 0x04, 2, 0x0123) == 0x0123
    assert _rw(t, 0x08, 4, 0x12345678) == 0x12345678
    assert _rw(t, 0x0C, 2, 0xFFFF) == 0x0037          # TRNMOD: no Auto CMD23
    assert _rw(t, 0x0E, 2, 0xFFFF) == (0x3FFB if strict else 0xFFFF)  # clock off: not issued
    assert nis(t) == 0
    assert _rw(t, 0x28, 1, 0xFF) == 0xFF
    assert _rw(t, 0x29, 1, 0xFF) == (0x0F if strict else 0xFF)   # 3.3V supported: power stays
    assert _rw(t, 0x29, 1, 0x0B) == 0x0B              # 1.8V supported
    assert _rw(t, 0x29, 1, 0x0D) == 0x0C              # 3.0V not in CAPAB: power refused
    assert _rw(t, 0x29, 1, 0x03) == 0x02              # no valid voltage
    assert _rw(t, 0x2A, 1, 0xFF) == (0x0D if strict else 0x01)
    t.write(0x2A, 1, 0)
    assert _rw(t, 0x2B, 1, 0xFF) == (0x07 if strict else 0xFF)
    assert _rw(t, 0x2C, 2, 0xFFFF) == (0xFF07 if strict else 0xFFFF)
    assert _rw(t, 0x2C, 2, 0xFFFE) == (0xFF04 if strict else 0xFFFC)  # stable follows enable
    assert _rw(t, 0x2C, 2, 0x0002) == 0x0000
    assert _rw(t, 0x2E, 1, 0xFF) == (0x0F if strict else 0xFF)
    assert t.read(0x2F, 1) == 0
    # Interrupt enables, spec 2.00 (2.2.19-2.2.22): normal 15:12 and error
    # 11:10 reserved (Re-Tuning Event and Tuning Error came with 3.00).
    # QEMU keeps every bit (measured on 7.2, 10.0 and 11.1).
    assert _rw(t, 0x34, 4, 0xFFFFFFFF) == (0xF3FF0FFF if strict else 0xFFFFFFFF)
    assert _rw(t, 0x38, 4, 0xFFFFFFFF) == (0xF3FF0FFF if strict else 0xFFFFFFFF)
    assert _rw(t, 0x3C, 2, 0xFFFF) == (0 if strict else 0xFFFF)
    # sd-spec-version 2: Host Control 2 ignores writes, except that QEMU
    # 11.1.2 and later (the default profile) keep bit 12 (measured on
    # Debian's 11.1.3; 11.1.1 built from source does not).
    assert _rw(t, 0x3E, 2, 0xFFFF) == (0 if strict else 0x1000)
    t.write(0x3E, 2, 0)
    t.write(0x40, 8, 0)
    t.write(0x48, 4, 0xFFFFFFFF)
    assert t.read(0x40, 4) == 0x057834B4 and t.read(0x48, 8) == 0
    t.write(0x50, 4, 0)
    assert t.read(0x50, 4) == 0
    assert _rw(t, 0x54, 1, 0x07) == (0 if strict else 0x07)
    assert _rw(t, 0x58, 8, 0x1122334455667788) == 0x1122334455667788
    assert _rw(t, 0x5C, 4, 0xAABBCCDD) == 0xAABBCCDD
    assert t.read(0x58, 4) == 0x55667788
    for hole in (0x60, 0x80, 0xF0, 0xF8):
        assert _rw(t, hole, 4, 0xFFFFFFFF) == 0
    t.write(0xFC, 4, 0xFFFFFFFF)
    # SLOT_INT_STATUS is live: FEAER above re-raised Auto CMD error from the
    # ACMD12ERRSTS bits QEMU let the guest write.
    assert t.read(0xFC, 4) == 0x2401 << 16 | (0 if strict else 1)


def test_hostctl2_v3() -> None:
    t, _ = stub_target(sdhci={"sd-spec-version": 3})
    assert _rw(t, 0x3E, 2, 0x00FF) == 0               # QEMU: only with uhs
    t, _ = stub_target(sdhci={"sd-spec-version": 3}, strict=True)
    assert _rw(t, 0x3E, 2, 0xFFFF) == 0xC0FF
    t, _ = stub_target(sdhci={"sd-spec-version": 3, "uhs": 1})
    assert _rw(t, 0x3E, 2, 0x0008) == 0x0008


def test_clkcon_v3_strict_mask() -> None:
    t, _ = stub_target(sdhci={"sd-spec-version": 3}, strict=True)
    assert _rw(t, 0x2C, 2, 0xFFFF) == 0xFFE7


@pytest.mark.parametrize("strict", [False, True])
def test_interrupt_enables_v3(strict: bool) -> None:
    """Spec 3.00 (2.2.19-2.2.22): normal enable bits 15:13 and error enable
    bit 11 are reserved; QEMU keeps every bit."""
    t, _ = stub_target(sdhci={"sd-spec-version": 3}, strict=strict)
    assert _rw(t, 0x34, 4, 0xFFFFFFFF) == (0xF7FF1FFF if strict else 0xFFFFFFFF)
    assert _rw(t, 0x38, 4, 0xFFFFFFFF) == (0xF7FF1FFF if strict else 0xFFFFFFFF)


def test_trnmod_dma_needs_sdma_capability() -> None:
    t, _ = stub_target(sdhci={"capareg": 0x053834B4})            # SDMA bit 22 clear
    assert _rw(t, 0x0C, 2, 0x0037) == 0x0036


def test_trnmod_inhibit() -> None:
    for strict, expected in ((False, 0x0036), (True, 0x0032)):
        t, _ = stub_target(strict=strict)
        power_up(t)
        t.write(0x04, 4, 512 | 2 << 16)
        command(t, 18, 0, data=True, trnmod=H.TRNMOD_READ | H.TRNMOD_MULTI
                | H.TRNMOD_BLKCNT_EN)
        assert prnsts(t) & H.PRNSTS_DATINHIBIT
        t.write(0x0C, 2, 0x0004)                      # Auto CMD12 on, rest off
        assert t.read(0x0C, 2) == expected


# -- W1C and interrupts ------------------------------------------------------------


def test_w1c_and_errint() -> None:
    t, _ = stub_target()
    t.write(0x34, 4, 0xFFFFFFFF)
    t.write(0x52, 2, 0x03FF)                          # FEERR
    assert eis(t) == 0x03FF and nis(t) == H.NIS_ERRINT
    t.write(0x32, 2, 0x0001)
    assert eis(t) == 0x03FE and nis(t) & H.NIS_ERRINT
    t.write(0x30, 2, H.NIS_ERRINT)                    # ERRINT is not W1C
    assert nis(t) & H.NIS_ERRINT
    t.write(0x32, 1, 0xFE)
    t.write(0x33, 1, 0x03)
    assert eis(t) == 0 and nis(t) == 0


def test_force_event_auto_cmd12() -> None:
    t, _ = stub_target()
    t.write(0x50, 2, 0x009F)                          # FEAER, status enables all 0
    assert t.read(0x3C, 2) == 0x009F
    assert eis(t) == H.EIS_ACMDERR and nis(t) == H.NIS_ERRINT


def test_status_enable_masks_status() -> None:
    t, _ = stub_target()
    t.write(0x36, 2, 0x00FF)
    t.write(0x52, 2, 0xFFFF)
    assert eis(t) == 0x00FF
    t.write(0x36, 2, 0x000F)                          # disabling clears status
    assert eis(t) == 0x000F
    t.write(0x36, 2, 0)
    assert eis(t) == 0 and nis(t) == 0


@pytest.mark.parametrize("sts,sig,wak,level", [
    (0x0001, 0x0001, 0, True),
    (0x0001, 0x0002, 0, False),
    (0x0000, 0xFFFF, 0, False),
])
def test_irq_table_normal(sts: int, sig: int, wak: int, level: bool) -> None:
    t, _ = stub_target()
    power_up(t, sig=False)
    t.write(0x3A, 2, 0)
    t.write(0x38, 2, sig)
    if sts:
        command(t, 13)
    assert bool(nis(t) & sts) == bool(sts)
    assert t.irq_level() is level
    assert bool(t.read(0xFC, 2) & 1) is level


@pytest.mark.parametrize("sig,level", [(0x0000, False), (0x0001, True), (0x0002, False)])
def test_irq_table_error(sig: int, level: bool) -> None:
    t, _ = stub_target()
    t.write(0x36, 2, 0xFFFF)
    t.write(0x3A, 2, sig)
    t.write(0x52, 2, 0x0001)
    assert t.irq_level() is level
    t.write(0x32, 2, 0x0001)
    assert not t.irq_level()


@pytest.mark.parametrize("strict", [False, True])
def test_irq_wakeup_and_stale_line(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    t.write(0x34, 2, H.NIS_CARDREM | H.NIS_CARDINS)
    t.set_card_inserted(False)
    assert nis(t) & H.NIS_CARDREM and not t.irq_level()
    t.write(0x2B, 1, H.WAKCON_CARDREM)
    assert t.read(0xFC, 2) & 1                        # slot status is live
    assert t.irq_level() is strict                    # QEMU: line not re-evaluated
    t.write(0x38, 2, 0)                               # any signal-enable write updates it
    assert t.irq_level()


@pytest.mark.parametrize("strict", [False, True])
def test_cmd_reset_line(strict: bool) -> None:
    t, _ = stub_target(strict=strict)
    power_up(t)
    command(t, 13)
    assert t.irq_level()
    t.write(0x2F, 1, H.SWRST_CMD)
    assert nis(t) == 0
    assert t.irq_level() is not strict


# -- access splitting and the window edge -----------------------------------------


def test_split_access() -> None:
    assert split_access(0x40, 8) == [(0x40, 4), (0x44, 4)]
    assert split_access(0x41, 4) == [(0x41, 1), (0x42, 2), (0x44, 1)]
    assert split_access(0x42, 4) == [(0x42, 2), (0x44, 2)]
    assert split_access(0x43, 8) == [(0x43, 1), (0x44, 4), (0x48, 2), (0x4A, 1)]
    assert split_access(0, 8) == [(0, 4), (4, 4)]


def test_wide_and_misaligned_reads() -> None:
    t, _ = stub_target()
    assert t.read(0x40, 8) == 0x057834B4
    assert t.read(0x41, 4) == 0x00057834
    assert t.read(0x42, 2) == 0x0578
    assert t.read(0xFC, 8) == 0x2401 << 16
    assert t.read(0xFE, 4) == 0x2401                  # upper half beyond the BAR
    assert t.read(0x24, 8) == 0x01FF0000              # PRNSTS, HOSTCTL word


def test_out_of_window_accesses() -> None:
    t, _ = stub_target()
    for off in (0x100, 0x104, 0x1000, 1 << 40, -16):
        for size in (1, 2, 4, 8):
            assert t.read(off, size) == 0
            t.write(off, size, (1 << (8 * size)) - 1)
    t.write(-1, 1, 0xFF)
    assert t.read(-1, 1) == 0
    t.write(-2, 4, 0xAABBFFFF)                        # straddles: low half lands outside
    assert t.read(0, 4) == 0xAABB
    assert t.read(0xFE, 2) == 0x2401 and t.read(0x40, 4) == 0x057834B4
    with pytest.raises(TargetError):
        t.read(0, 3)


def test_command_issued_by_cmdreg_upper_byte() -> None:
    t, card = stub_target()
    power_up(t)
    t.write(0x08, 4, 0x77)
    t.write(0x0C, 2, 0)                               # TRNMOD alone: nothing
    t.write(0x0E, 1, 0x1A)                            # CMDREG low byte: nothing
    assert card.commands == []
    t.write(0x0F, 1, 13)                              # upper byte: issue CMD13
    assert card.commands == [(13, 0x77)]
    t.write(0x0C, 4, (13 << 8 | 0x1A) << 16)
    assert card.commands[-1] == (13, 0x77)
    t.write(0x0C, 8, (13 << 8 | 0x1A) << 16)          # quadword: two longwords
    assert len(card.commands) == 3


def test_command_needs_clocks() -> None:
    t, card = stub_target()
    t.write(0x0C, 4, H.cmdreg(13, H.RSP_48) << 16)
    assert card.commands == []
    t.write(0x2C, 2, H.CLKCON_INTCLK_EN)
    t.write(0x0C, 4, H.cmdreg(13, H.RSP_48) << 16)
    assert card.commands == []
    t.write(0x2C, 2, H.CLKCON_INTCLK_EN | H.CLKCON_SDCLK_EN)
    t.write(0x0C, 4, H.cmdreg(13, H.RSP_48) << 16)
    assert card.commands == [(13, 0)]


def test_responses() -> None:
    t, card = stub_target()
    power_up(t)
    command(t, 13)
    assert t.read(0x10, 4) == 0x900 and t.read(0x14, 4) == 0
    command(t, 2, rsp=H.RSP_136)
    # R2 payload 01..10 (bytes 0-15): RSPREG0 = bytes 11-14, RSPREG3 = bytes 0-2.
    assert t.read(0x10, 4) == 0x0C0D0E0F
    assert t.read(0x14, 4) == 0x08090A0B
    assert t.read(0x18, 4) == 0x04050607
    assert t.read(0x1C, 4) == 0x00010203
    command(t, 13, rsp=H.RSP_NONE)                     # no response: registers kept
    assert t.read(0x10, 4) == 0x0C0D0E0F


@pytest.mark.parametrize("strict", [False, True])
def test_command_timeout(strict: bool) -> None:
    t, card = stub_target(strict=strict)
    power_up(t)
    command(t, 5, rsp=H.RSP_48_BUSY)                   # stub does not answer CMD5
    assert eis(t) == H.EIS_CMDTOUT
    if strict:
        assert nis(t) == H.NIS_ERRINT
    else:
        assert nis(t) == H.NIS_ERRINT | H.NIS_CMDCMPL | H.NIS_TRNSCMPL
    clear_status(t)
    t.write(0x52, 2, H.EIS_DATCRC)
    command(t, 13)
    if strict:
        assert eis(t) == H.EIS_DATCRC
    else:
        assert eis(t) == 0 and nis(t) & H.NIS_ERRINT   # ERRINT left behind


def test_memory_layout() -> None:
    m = GuestMemory(128 << 20)
    assert m.write(0x1000, b"abc") and m.read(0x1000, 3) == (b"abc", True)
    assert m.read(0x5000, 2) == (b"\0\0", True)
    assert not m.write((128 << 20) - 2, b"wxyz")
    assert m.read((128 << 20) - 2, 4) == (b"wx\0\0", False)
    assert m.read(1 << 40, 4) == (b"\0" * 4, False)
    big = GuestMemory(3 << 30, "q35")
    assert big.is_ram(0x7FFFFFFF) and not big.is_ram(0x80000000)
    assert big.is_ram(1 << 32) and big.is_ram((1 << 32) + (1 << 30) - 1)
    pc = GuestMemory(3 << 30, "pc-i440fx-9.0")
    assert pc.is_ram(0xBFFFFFFF)


def test_old_profile_same_registers() -> None:
    t, _ = stub_target(profile=OLD)
    assert t.read(0xFE, 2) == 0x2401 and t.read(0x40, 4) == 0x057834B4


def test_properties_as_text() -> None:
    t, _ = stub_target(sdhci={"sd-spec-version": "3", "capareg": "0x057834b4",
                              "maxcurr": "16", "uhs": "0"})
    assert t.read(0xFE, 2) == 0x2402 and t.read(0x48, 4) == 16
