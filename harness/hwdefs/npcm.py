"""The Nuvoton NPCM7xx SDHCI wrapper's registers and reset values, as data.

QEMU's ``npcm7xx-sdhci`` (hw/sd/npcm7xx_sdhci.c, include/hw/sd/npcm7xx_sdhci.h;
the same in 7.2, 10.0.13 and 11.1.1; Nuvoton's datasheet is not public, so
QEMU's source is the documented behaviour here) is a generic SDHCI in a
4 KiB container with a vendor window of its own laid over offsets
``0x60..0x7F``:

* PRSTVALS0..5 (``0x60 + 2 i``): read-only 16-bit preset values; an access
  of another size, or a write, is refused (reads 0, writes dropped);
* BOOTTOCTRL (``0x70``): a 32-bit read/write boot timeout control, reset to
  0 by the device reset only; other sizes are refused;
* every other offset of the window is refused too.

The wrapper's device reset overrides registers of the SDHCI inside after
resetting it: :data:`RESET_VALUES`.  A Software Reset For All resets the
SDHCI alone: Present State and Block Gap go back to the standard values,
Capabilities, Maximum Current and the version (never cleared by a software
reset, SDHC 2.2.26) keep the wrapper's.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["BOOTTOCTRL", "PRSTVALS", "PRSTVALS_RESET", "RESET_VALUES", "WINDOW"]

#: The wrapper's window over the SDHCI's registers: ``[start, end)``.
WINDOW = (0x60, 0x80)

PRSTVALS: tuple[Register, ...] = tuple(
    Register(f"PRSTVALS{i}", 0x60 + 2 * i, 2, (Field("VAL", 0, 16, Access.RO, "Preset value"),),
             f"Preset value {i} (read-only word)") for i in range(6))
BOOTTOCTRL = Register("BOOTTOCTRL", 0x70, 4, (
    Field("VAL", 0, 32, Access.RW, "Boot timeout control"),), "Boot timeout control (dword)")

#: PRSTVALS0..5 after realize (the others 0).
PRSTVALS_RESET: tuple[int, ...] = (0x0040, 0x0001, 0x0000, 0x0001, 0x0000, 0x0000)

#: What the wrapper's reset writes into the SDHCI inside, by the model's
#: register name: PRNSTS, BLKGAP, the 64-bit capabilities, MAXCURR, HCVER
#: (vendor 0x10, specification version 3.00).
RESET_VALUES: dict[str, int] = {
    "prnsts": 0x04A0_0000,
    "blkgap": 0x80,
    "capareg": 0x0100_2001_61EE_0399,
    "maxcurr": 0x0000_0005,
    "hcver": 0x1002,
}
