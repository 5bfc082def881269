"""Aspeed's SD controller wrapper (``aspeed.sdhci-*``, hw/sd/aspeed_sdhci.c),
as data: where its slots lie and the capabilities it gives them.

The wrapper is a 4 KiB window: its own registers in the first 0x100 bytes,
slot *n*'s standard SDHCI registers at ``SLOT_STRIDE * (n + 1)``.  It
realizes each slot with ``sd-spec-version`` 2 and one capabilities value:
per SoC since QEMU 10.0 (boundary ``aspeed.capareg-per-soc``), before that
one value for every SoC.
"""

from __future__ import annotations

from harness.hwdefs.fields import Access, Field, Register

__all__ = ["CAPAREG_AST2600", "CAPAREG_BEFORE_10_0", "DEBOUNCE_RESET", "SDC_DEBOUNCE",
           "SDC_INFO", "SDC_IRQ_STAT", "SDC_PHASE", "SDC_S0_CAP1", "SDC_S0_CAP2",
           "SDC_S0_MAXCURR", "SDC_S1_CAP1", "SDC_S1_CAP2", "SDC_S1_MAXCURR", "SLOT_STRIDE",
           "WRAPPER_REGISTERS", "WRAPPER_SLOTS", "slot_offset"]

#: Distance between the slots' register windows (and from the wrapper's own).
SLOT_STRIDE = 0x100
#: The AST2600's slots since 10.0: 64-bit capabilities, 1.8 V, SDR50/SDR104/DDR50
#: in the upper half, ADMA1 in the lower one.
CAPAREG_AST2600 = 0x0000_0007_01F8_0080
#: Every Aspeed SoC's slots before 10.0 (7.2.22's ASPEED_SDHCI_CAPABILITIES).
CAPAREG_BEFORE_10_0 = 0x01E8_0080


def slot_offset(slot: int) -> int:
    """Offset of slot ``slot``'s SDHCI registers in the wrapper's window."""
    return SLOT_STRIDE * (slot + 1)


# -- the wrapper's own registers ---------------------------------------------
#
# The first 0x100 bytes of the wrapper's window, 32-bit accesses only
# (hw/sd/aspeed_sdhci.c ``valid`` sizes 4..4).  Aspeed's datasheet is not
# public; the names are those of Linux's sdhci-of-aspeed.c where it has one
# (``ASPEED_SDC_INFO``, ``ASPEED_SDC_PHASE``, the slots' capability mirrors it
# writes to set a slot's capabilities, "SDIO{10,20}" and "SDIO{14,24}") and
# QEMU's otherwise.  Every other offset below 0x100 is a plain 32-bit
# read/write register.

SDC_INFO = Register("SDC_INFO", 0x00, 4, (
    Field("RESET", 0, 1, Access.RW, "Software reset: reads back 0 (QEMU resets nothing)"),
    Field("S0_PRESENT", 16, 1, Access.RW, "Slot 0 exists (reset value)"),
    Field("S1_PRESENT", 17, 1, Access.RW, "Slot 1 exists (reset value, two-slot wrappers)"),
    Field("S0_MMC8", 24, 1, Access.RW, "Slot 0 8-bit bus (Linux aspeed_sdc_configure_8bit_mode)"),
    Field("S1_MMC8", 25, 1, Access.RW, "Slot 1 8-bit bus"),
), "Controller information and software reset")
SDC_DEBOUNCE = Register("SDC_DEBOUNCE", 0x04, 4, (
    Field("VAL", 0, 32, Access.RW, "Card detect debounce"),), "Debounce setting")
#: The capability mirrors: slot 0's Capabilities low/high and Maximum
#: Current at 0x10/0x14/0x18, slot 1's at 0x20/0x24/0x28; a write changes
#: the slot's own register (the SDHCI's ``capareg``/``maxcurr``).
SDC_S0_CAP1 = Register("SDC_S0_CAP1", 0x10, 4, (Field("VAL", 0, 32, Access.RW, "CAPAB[31:0]"),),
                       "Slot 0 capabilities mirror, low")
SDC_S0_CAP2 = Register("SDC_S0_CAP2", 0x14, 4, (Field("VAL", 0, 32, Access.RW, "CAPAB[63:32]"),),
                       "Slot 0 capabilities mirror, high (10.0 and later)")
SDC_S0_MAXCURR = Register("SDC_S0_MAXCURR", 0x18, 4,
                          (Field("VAL", 0, 32, Access.RW, "MAXCURR[31:0]"),),
                          "Slot 0 maximum current mirror")
SDC_S1_CAP1 = Register("SDC_S1_CAP1", 0x20, 4, (Field("VAL", 0, 32, Access.RW, "CAPAB[31:0]"),),
                       "Slot 1 capabilities mirror, low")
SDC_S1_CAP2 = Register("SDC_S1_CAP2", 0x24, 4, (Field("VAL", 0, 32, Access.RW, "CAPAB[63:32]"),),
                       "Slot 1 capabilities mirror, high (10.0 and later)")
SDC_S1_MAXCURR = Register("SDC_S1_MAXCURR", 0x28, 4,
                          (Field("VAL", 0, 32, Access.RW, "MAXCURR[31:0]"),),
                          "Slot 1 maximum current mirror")
SDC_PHASE = Register("SDC_PHASE", 0xF4, 4, (Field("VAL", 0, 32, Access.RW, "Tap delays"),),
                     "Clock phase (plain storage in QEMU)")
SDC_IRQ_STAT = Register("SDC_IRQ_STAT", 0xFC, 4, (
    Field("S0", 0, 1, Access.RW, "Slot 0's interrupt line, as last driven"),
    Field("S1", 1, 1, Access.RW, "Slot 1's interrupt line, as last driven"),
), "The slots' interrupt status")
#: Every named wrapper register.
WRAPPER_REGISTERS: tuple[Register, ...] = (
    SDC_INFO, SDC_DEBOUNCE, SDC_S0_CAP1, SDC_S0_CAP2, SDC_S0_MAXCURR, SDC_S1_CAP1,
    SDC_S1_CAP2, SDC_S1_MAXCURR, SDC_PHASE, SDC_IRQ_STAT)
#: SDC_DEBOUNCE after the wrapper's reset.
DEBOUNCE_RESET = 0x0000_0005
#: Slots of each board's wrapper, by machine type (hw/arm/aspeed_ast2600.c:
#: the SD controller ``num-slots`` 2, the eMMC controller 1; fuji-bmc boots
#: its eMMC controller's one slot).
WRAPPER_SLOTS: dict[str, int] = {"ast2600-evb": 2, "fuji-bmc": 1}
