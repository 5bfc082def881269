"""The Samsung S3C/Exynos SDHCI vendor registers, as data.

Exynos 4210 User's Manual, SD/MMC host controller (SDMMC) register map: a
standard SD Host Controller 2.00 register file with three vendor control
registers in the reserved space after the standard ones.  The names and
fields are the manual's (as Linux's ``drivers/mmc/host/sdhci-s3c-regs.h``
spells them): CONTROL2 selects the base clock and the feedback clocks,
CONTROL3 the feedback clock delays, CONTROL4 the output drive strength.
QEMU's ``s3c-sdhci`` (hw/sd/sdhci.c ``sdhci_s3c_read``/``sdhci_s3c_write``)
answers 0 at the three and drops their writes: ledger entry
``s3c.control-registers-ignored``.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["CONTROL2", "CONTROL3", "CONTROL4", "VENDOR_REGISTERS"]

RW = Access.RW

CONTROL2 = Register("CONTROL2", 0x80, 4, (
    Field("HWINITFIN", 0, 1, RW, "SD host controller hardware initialisation finished"),
    Field("ENCLKOUTMSKCON", 1, 1, RW, "SDCLK output masked while the card is absent"),
    Field("PWRSYNC", 3, 1, RW, "Power-up synchronisation"),
    Field("SELBASECLK", 4, 2, RW, "Base clock source select"),
    Field("DISBUFRD", 6, 1, RW, "Disable the buffer read"),
    Field("RWAITMODE", 7, 1, RW, "Read wait release mode"),
    Field("ENCLKOUTHOLD", 8, 1, RW, "SDCLK hold enable"),
    Field("DFCNT", 9, 2, RW, "Debounce filter count"),
    Field("ENBUSYCHKTXSTART", 11, 1, RW, "Busy check before a transmission"),
    Field("SDSIGPC", 12, 1, RW, "SD signal power control"),
    Field("SDCDSEL", 13, 1, RW, "Card detect signal select"),
    Field("ENFBCLKRX", 14, 1, RW, "Feedback clock for Rx data"),
    Field("ENFBCLKTX", 15, 1, RW, "Feedback clock for Tx data"),
    Field("ENCMDCNFMSK", 30, 1, RW, "Command conflict mask enable"),
    Field("ENSTAASYNCCLR", 31, 1, RW, "Write status clear async mode enable"),
), "Control register 2 (Exynos 4210 UM, CONTROL2)")

CONTROL3 = Register("CONTROL3", 0x84, 4, (
    Field("FCSEL0", 7, 1, RW, "Feedback clock select [0]"),
    Field("FCSEL1", 15, 1, RW, "Feedback clock select [1]"),
    Field("FCSEL2", 23, 1, RW, "Feedback clock select [2]"),
    Field("FCSEL3", 31, 1, RW, "Feedback clock select [3]"),
), "Control register 3: feedback clock delays (Exynos 4210 UM, CONTROL3)")

CONTROL4 = Register("CONTROL4", 0x8C, 4, (
    Field("DRIVE", 16, 2, RW, "Output drive strength"),
), "Control register 4 (Exynos 4210 UM, CONTROL4)")

#: The vendor registers, by offset.
VENDOR_REGISTERS: dict[int, Register] = {r.offset: r for r in (CONTROL2, CONTROL3, CONTROL4)}
