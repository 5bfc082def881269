"""PCI discovery of sdhci-pci on both machine families."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.hwdefs import sdhci
from harness.hwdefs.pci import SDHCI_PCI
from harness.machine import CardImage, Machine
from harness.qemu import pci
from harness.qemu.builds import QemuBuild
from harness.qemu.target import QemuTarget

pytestmark = pytest.mark.qemu


def test_sdhci_pci_found_and_configured(
    qemu_build: QemuBuild, machine: str, card_image: Path
) -> None:
    with QemuTarget(qemu_build.binary, Machine(machine, image=CardImage(card_image))) as t:
        dev = t.pci_function
        # QEMU's PCI ids for "generic SDHCI" (docs/specs/pci-ids.rst) and the
        # PCI class for an SD host controller with a standard register set
        # (08h/05h, prog-if 01h): the model's identity, spelled out here.
        ident = SDHCI_PCI
        assert (dev.vendor, dev.device) == (ident.vendor_id, ident.device_id) == (0x1B36, 7)
        assert dev.class_code == ident.class_code == 0x080501
        assert dev.bus == 0
        cmd = t.pci.read(0, dev.devfn, pci.COMMAND, 2)
        assert cmd & (pci.COMMAND_MEMORY | pci.COMMAND_MASTER) == 0x6
        assert t.pci.read(0, dev.devfn, pci.INTERRUPT_PIN, 1) == ident.interrupt_pin == 1
        # BAR0 is a 32-bit memory BAR of 256 bytes: writing all-ones reads
        # back the size mask (PCI 3.0, 6.2.5.1).
        t.pci.write(0, dev.devfn, pci.BAR0, 4, 0xFFFFFFFF)
        bar = t.pci.read(0, dev.devfn, pci.BAR0, 4)
        assert bar == ident.bar0_mask  # 32-bit, non-prefetchable memory BAR
        assert (~(bar & ~0xF) & 0xFFFFFFFF) + 1 == sdhci.REGISTER_WINDOW
        t.pci.write(0, dev.devfn, pci.BAR0, 4, t.bar0)
        assert t.read(sdhci.HCVER.offset, 2) & 0xFF in (0x01, 0x02)


def test_intx_reaches_the_watched_ioapic_input(
    qemu_build: QemuBuild, machine: str, card_image: Path
) -> None:
    """Force an error event (FEERR) with status and signal enabled: the line
    the target watches rises; clearing the status (W1C) lowers it."""
    with QemuTarget(qemu_build.binary, Machine(machine, image=CardImage(card_image))) as t:
        assert not t.irq_level()
        t.write(sdhci.ERRINTSTSEN.offset, 2, 0xFFFF)
        t.write(sdhci.ERRINTSIGEN.offset, 2, 0xFFFF)
        t.write(sdhci.NORINTSIGEN.offset, 2, 0xFFFF)
        t.write(sdhci.FEERR.offset, 2, 1)  # command timeout error
        assert t.irq_level()
        t.write(sdhci.ERRINTSTS.offset, 2, 0xFFFF)
        assert not t.irq_level()
        assert t.qtest.irq_events == [(t.irq_line, True), (t.irq_line, False)]
