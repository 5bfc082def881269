"""PCI configuration space facts, and sdhci-pci's, as data.

What a driver sees of the function before touching BAR0: IDs, class code
(PCI Code and ID Assignment: 08h base system peripheral, 05h SD host
controller, programming interface 01h "standard host with DMA"), one 256-byte
memory BAR, interrupt pin A, and the command register bits the harness sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness.hwdefs.sdhci import REGISTER_WINDOW

# Configuration header offsets (PCI Local Bus Specification 3.0, 6.1).
VENDOR_ID = 0x00
DEVICE_ID = 0x02
COMMAND = 0x04
STATUS = 0x06
REVISION_ID = 0x08
PROG_IF = 0x09
SUBCLASS = 0x0A
BASE_CLASS = 0x0B
HEADER_TYPE = 0x0E
BAR0 = 0x10
INTERRUPT_LINE = 0x3C
INTERRUPT_PIN = 0x3D

# The chipset's Reset Control Register, I/O port 0CF9h (Intel ICH9 datasheet
# 13.7.5; the PIIX3 has it too): RST_CPU set resets the system, SYS_RST with
# it makes that a hard reset.
RESET_CONTROL_PORT = 0xCF9
RESET_CONTROL_SYS_RST = 1 << 1
RESET_CONTROL_RST_CPU = 1 << 2

# Command register bits (PCI 3.0, 6.2.2).
COMMAND_IO = 1 << 0
COMMAND_MEMORY = 1 << 1
COMMAND_MASTER = 1 << 2
COMMAND_INTX_DISABLE = 1 << 10


@dataclass(frozen=True)
class PciIdentity:
    """The configuration-space facts of one PCI function."""

    vendor_id: int
    device_id: int
    revision: int
    base_class: int
    subclass: int
    prog_if: int
    header_type: int
    bar0_size: int
    bar0_is_memory: bool
    bar0_64bit: bool
    bar0_prefetchable: bool
    interrupt_pin: int  #: 1 = INTA#

    @property
    def class_code(self) -> int:
        """24-bit class code: base class, subclass, programming interface."""
        return (self.base_class << 16) | (self.subclass << 8) | self.prog_if

    @property
    def bar0_mask(self) -> int:
        """What BAR0 reads back after writing all-ones (size probe)."""
        return (~(self.bar0_size - 1)) & 0xFFFFFFF0


#: sdhci-pci: Red Hat vendor 1b36, device 0007 ("generic SDHCI"), class
#: 0805, prog-if 01 set at realize, 32-bit non-prefetchable memory BAR0 of
#: the controller's 256-byte register window, INTA.
SDHCI_PCI = PciIdentity(
    vendor_id=0x1B36,
    device_id=0x0007,
    revision=0x00,
    base_class=0x08,
    subclass=0x05,
    prog_if=0x01,
    header_type=0x00,
    bar0_size=REGISTER_WINDOW,
    bar0_is_memory=True,
    bar0_64bit=False,
    bar0_prefetchable=False,
    interrupt_pin=1,
)

#: Command register value the harness programs before using the device:
#: memory decoding and bus mastering (DMA) on, INTx enabled.
COMMAND_ENABLED = COMMAND_MEMORY | COMMAND_MASTER
