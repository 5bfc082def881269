"""The Cadence SD4HC's Host Register Set (HRS), as data.

QEMU's ``cadence-sdhci`` (hw/sd/cadence_sdhci.c, include/hw/sd/cadence_sdhci.h;
the same behaviour in 7.2.22, 10.0.13 and 11.1.1) is the PolarFire SoC's SD/eMMC
controller (hw/riscv/microchip_pfsoc.c).  It is a 4 KiB window: the Cadence Host
Register Set in its first :data:`HRS_SIZE` bytes, a generic sysbus SDHCI (the
Slot Register Set, SRS) at :data:`SRS_BASE`, nothing in between.  Cadence's
manual is not public; the names are those of Linux's
drivers/mmc/host/sdhci-cadence.c (``SDHCI_CDNS_HRS*``) and QEMU's.

The HRS, as QEMU models it:

* 64 registers of 32 bits, 32-bit accesses only (another size, or an unaligned
  access, is refused: reads 0, writes dropped);
* HRS00: general information, reset value :data:`HRS00_RESET` (QEMU's
  ``CADENCE_SDHCI_HRS00_POR_VAL``); only SWR is writable, and a write with it
  set resets the controller: the HRS and the SDHCI inside with its card bus
  (a device cold reset); SWR reads back 0;
* HRS04: the PHY access port; a write with WR or RD set reads back with ACK
  set, any other write with ACK clear (no PHY behind it: RDATA is what was
  written);
* HRS06: eMMC control; TUNE_UP reads back 0 (tuning is done at once);
* every other offset: a plain read/write register, reset to 0.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["HRS00", "HRS00_RESET", "HRS04", "HRS06", "HRS_REGISTERS", "HRS_SIZE",
           "SRS_BASE"]

#: Offset of the Slot Register Set (the standard SDHCI) in the window
#: (Linux ``SDHCI_CDNS_SRS_BASE``).
SRS_BASE = 0x200
#: Bytes of the Host Register Set (QEMU ``CADENCE_SDHCI_REG_SIZE``).
HRS_SIZE = 0x100

HRS00 = Register("HRS00", 0x00, 4, (
    Field("SWR", 0, 1, Access.RW, "Software reset of the whole controller: reads back 0"),
    Field("INFO", 1, 31, Access.RO, "General information (reset value)"),
), "General information and software reset")
HRS04 = Register("HRS04", 0x10, 4, (
    Field("ADDR", 0, 6, Access.RW, "PHY register address"),
    Field("WDATA", 8, 8, Access.RW, "PHY write data"),
    Field("RDATA", 16, 8, Access.RW, "PHY read data (what was written: no PHY)"),
    Field("WR", 24, 1, Access.RW, "PHY write request"),
    Field("RD", 25, 1, Access.RW, "PHY read request"),
    Field("ACK", 26, 1, Access.RW, "PHY acknowledge: set by a write with WR or RD"),
), "PHY access port")
HRS06 = Register("HRS06", 0x18, 4, (
    Field("MODE", 0, 3, Access.RW, "eMMC mode (0 SD, 2 SDR, 3 DDR, 4 HS200, 5 HS400, 6 HS400ES)"),
    Field("TUNE", 8, 6, Access.RW, "Tuning value"),
    Field("TUNE_UP", 15, 1, Access.RW, "Tuning update request: reads back 0"),
), "eMMC control")

#: The named HRS registers (the others are plain storage).
HRS_REGISTERS: tuple[Register, ...] = (HRS00, HRS04, HRS06)
#: HRS00 after the controller's reset.
HRS00_RESET = 0x0001_0000
