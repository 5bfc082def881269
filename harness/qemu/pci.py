"""PCI configuration mechanism #1 (ports 0xCF8/0xCFC) over qtest.

Enough of a PCI bus driver to find sdhci-pci on bus 0, give its BAR0 an
address, turn on memory decoding and bus mastering, and route its INTx pin
to an interrupt controller input the harness can watch.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hwdefs.pci import (
    BAR0,
    COMMAND,
    COMMAND_ENABLED,
    COMMAND_MASTER,
    COMMAND_MEMORY,
    HEADER_TYPE,
    INTERRUPT_PIN,
    REVISION_ID,
    SDHCI_PCI,
    VENDOR_ID,
)
from harness.qemu.qtest import QtestClient

__all__ = ["BAR0", "COMMAND", "COMMAND_ENABLED", "COMMAND_MASTER", "COMMAND_MEMORY",
           "INTERRUPT_PIN", "PciConfig", "PciFunction", "SDHCI_PCI_IDS", "enable_sdhci", "find",
           "intx_route"]

CONFIG_ADDRESS = 0xCF8
CONFIG_DATA = 0xCFC
CLASS_REVISION = REVISION_ID  # the dword holding revision and class code

SDHCI_PCI_IDS = (SDHCI_PCI.vendor_id, SDHCI_PCI.device_id)

# PIIX3 (pc machine types): PIRQ[A-D] route control registers, function 0.
PIIX_PIRQRC = 0x60
PIIX_IDS = ((0x8086, 0x7000), (0x8086, 0x7110))  # PIIX3, PIIX4 ISA bridges
ICH9_LPC_IDS = (0x8086, 0x2918)


@dataclass(frozen=True)
class PciFunction:
    bus: int
    slot: int
    function: int
    vendor: int
    device: int
    class_code: int  # base class, subclass, programming interface (24 bits)
    revision: int

    @property
    def devfn(self) -> int:
        return (self.slot << 3) | self.function

    def __str__(self) -> str:
        return (
            f"{self.bus:02x}:{self.slot:02x}.{self.function} "
            f"{self.vendor:04x}:{self.device:04x} class {self.class_code:06x}"
        )


class PciConfig:
    """Configuration space accesses through the legacy I/O ports."""

    def __init__(self, qtest: QtestClient) -> None:
        self.qtest = qtest

    @staticmethod
    def _address(bus: int, devfn: int, offset: int) -> int:
        if not (0 <= bus < 256 and 0 <= devfn < 256 and 0 <= offset < 256):
            raise ValueError("PCI address out of range")
        return 0x8000_0000 | (bus << 16) | (devfn << 8) | (offset & 0xFC)

    def read(self, bus: int, devfn: int, offset: int, size: int) -> int:
        self.qtest.out(4, CONFIG_ADDRESS, self._address(bus, devfn, offset))
        return self.qtest.in_(size, CONFIG_DATA + (offset & 3))

    def write(self, bus: int, devfn: int, offset: int, size: int, value: int) -> None:
        self.qtest.out(4, CONFIG_ADDRESS, self._address(bus, devfn, offset))
        self.qtest.out(size, CONFIG_DATA + (offset & 3), value)

    def scan_bus0(self) -> list[PciFunction]:
        found = []
        for slot in range(32):
            for fn in range(8):
                devfn = (slot << 3) | fn
                ids = self.read(0, devfn, VENDOR_ID, 4)
                if ids in (0xFFFFFFFF, 0):
                    if fn == 0:
                        break
                    continue
                cr = self.read(0, devfn, CLASS_REVISION, 4)
                found.append(
                    PciFunction(0, slot, fn, ids & 0xFFFF, ids >> 16, cr >> 8, cr & 0xFF)
                )
                if fn == 0 and not (self.read(0, devfn, HEADER_TYPE, 1) & 0x80):
                    break
        return found


def find(functions: list[PciFunction], ids: tuple[int, int]) -> PciFunction | None:
    for f in functions:
        if (f.vendor, f.device) == ids:
            return f
    return None


def intx_route(
    cfg: PciConfig, functions: list[PciFunction], dev: PciFunction, pin: int
) -> int:
    """Route ``dev``'s INTx ``pin`` (1 = INTA) and return the IOAPIC input it drives.

    * ICH9 (q35): in APIC mode PIRQ[A-H] drive GSI 16-23 directly.  The
      chipset's default routing of a bus-0 device (slot S, pin P) is
      PIRQ[E + (S + P - 1) mod 4] (QEMU's ``ich9_cc_init``), so GSI
      ``20 + (S + P - 1) % 4``.
    * PIIX3 (pc): PCI PIRQ[A-D] reach the ISA interrupt lines only through
      the PIRQRC registers, which reset disabled.  Route all four to IRQ 11,
      then the device's line is ISA IRQ 11, which the IOAPIC also sees as 11.
    """
    if find(functions, ICH9_LPC_IDS) is not None:
        return 16 + 4 + (dev.slot + pin - 1) % 4
    piix = next((f for f in functions if (f.vendor, f.device) in PIIX_IDS), None)
    if piix is not None:
        for i in range(4):
            cfg.write(0, piix.devfn, PIIX_PIRQRC + i, 1, 11)
        return 11
    raise LookupError("no known PCI-to-ISA bridge (PIIX3 or ICH9) on bus 0")


def enable_sdhci(cfg: PciConfig, functions: list[PciFunction],
                 bar0: int) -> tuple[PciFunction, int] | None:
    """Bring sdhci-pci up as a guest's driver would: BAR0 at ``bar0``, memory
    decoding and bus mastering on, its INTx routed.  The function and the
    IOAPIC input its INTx drives; None when bus 0 has no sdhci-pci."""
    dev = find(functions, SDHCI_PCI_IDS)
    if dev is None:
        return None
    cfg.write(0, dev.devfn, BAR0, 4, bar0)
    command = cfg.read(0, dev.devfn, COMMAND, 2)
    cfg.write(0, dev.devfn, COMMAND, 2, command | COMMAND_ENABLED)
    pin = cfg.read(0, dev.devfn, INTERRUPT_PIN, 1)
    return dev, intx_route(cfg, functions, dev, pin or 1)
