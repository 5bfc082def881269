"""SDHCI facts that follow from the SD Host Controller Simplified
Specification and QEMU's documented device defaults, on every build."""

from __future__ import annotations

import pytest

from harness.hwdefs import sdhci
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget

pytestmark = pytest.mark.qemu


def test_hcver_reports_spec_version(qemu_build: QemuBuild, qemu_target: QemuTarget) -> None:
    """HCVER[7:0] is the specification version: 0x01 for 2.00, 0x02 for 3.00
    (SDHC spec 2.2.32), from sdhci-pci's ``sd-spec-version`` property."""
    spec = int(qemu_build.profile.sdhci_properties.get("sd-spec-version") or 2)
    hcver = qemu_target.read(sdhci.HCVER.offset, 2)
    assert hcver & 0xFF == spec - 1


def test_capab_is_the_capareg_property_and_read_only(
    qemu_build: QemuBuild, qemu_target: QemuTarget
) -> None:
    """CAPAB (2.2.26) reads back the ``capareg`` property's default as QMP
    reports it, and ignores writes."""
    capareg = int(qemu_build.profile.sdhci_properties["capareg"] or 0)
    assert qemu_target.read(sdhci.CAPAB.offset, 4) == capareg & 0xFFFFFFFF
    qemu_target.write(sdhci.CAPAB.offset, 4, ~capareg & 0xFFFFFFFF)
    assert qemu_target.read(sdhci.CAPAB.offset, 4) == capareg & 0xFFFFFFFF


def test_reset_values_with_card_inserted(qemu_target: QemuTarget) -> None:
    """After reset every operational register is 0 (2.2); PRNSTS shows a
    card inserted, stable and detected, not write protected, DAT[3:0] and
    CMD lines high (2.2.9)."""
    t = qemu_target
    t.write(sdhci.SWRST.offset, 1, 0x01)
    expected_prnsts = (
        sdhci.PRNSTS_CARDINSERTED | sdhci.PRNSTS_CARDSTABLE | sdhci.PRNSTS_CARDDETECT
        | sdhci.PRNSTS_WRITEPROTECT | (0xF << 20) | (1 << 24)
    )
    assert t.read(sdhci.PRNSTS.offset, 4) == expected_prnsts
    for reg in (sdhci.SDMASYSAD, sdhci.BLKSIZE, sdhci.BLKCNT, sdhci.ARGUMENT, sdhci.TRNMOD,
                sdhci.HOSTCTL, sdhci.PWRCON, sdhci.CLKCON, sdhci.NORINTSTSEN,
                sdhci.ERRINTSTSEN, sdhci.NORINTSIGEN, sdhci.ERRINTSIGEN, sdhci.ERRINTSTS):
        assert t.read(reg.offset, min(reg.width, 4)) == 0, reg.name


def test_clkcon_internal_clock_stable_handshake(qemu_target: QemuTarget) -> None:
    """Setting Internal Clock Enable makes Internal Clock Stable read 1
    (2.2.14); clearing it drops the stable bit."""
    t = qemu_target
    t.write(sdhci.CLKCON.offset, 2, sdhci.CLKCON_INTCLK_EN)
    assert t.read(sdhci.CLKCON.offset, 2) & sdhci.CLKCON_INTCLK_STABLE
    t.write(sdhci.CLKCON.offset, 2, 0)
    assert not t.read(sdhci.CLKCON.offset, 2) & sdhci.CLKCON_INTCLK_STABLE


def test_norintsts_is_write_one_to_clear(qemu_target: QemuTarget) -> None:
    """A command with no response completes with CMDCMPL; writing 0 leaves
    it, writing 1 clears it (2.2.17, RW1C)."""
    t = qemu_target
    t.write(sdhci.NORINTSTSEN.offset, 2, 0xFFFF)
    t.write(sdhci.CLKCON.offset, 2, sdhci.CLKCON_INTCLK_EN | 0x4)  # SD clock on
    t.write(sdhci.PWRCON.offset, 1, 0x0F)  # 3.3 V, bus power on
    t.write(sdhci.ARGUMENT.offset, 4, 0)
    t.write(sdhci.CMDREG.offset, 2, sdhci.cmdreg(0))  # CMD0 GO_IDLE_STATE
    cmdcmpl = sdhci.NORINTSTS.mask("CMDCMPL")
    assert t.read(sdhci.NORINTSTS.offset, 2) & cmdcmpl
    t.write(sdhci.NORINTSTS.offset, 2, 0)
    assert t.read(sdhci.NORINTSTS.offset, 2) & cmdcmpl
    t.write(sdhci.NORINTSTS.offset, 2, cmdcmpl)
    assert not t.read(sdhci.NORINTSTS.offset, 2) & cmdcmpl
